//! The crate's error type: one sentence per failure, naming the file, id or rule at fault.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// Everything that can go wrong storing, finding or extracting memories.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The database file cannot be opened or is not a usable SQLite database.
    #[error("cannot open memory database {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer version of this crate.
    #[error("memory database {} has schema version {found}, newer than version {supported} that this build understands; upgrade ctxkit-memory", path.display())]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// A query failed.
    #[error("memory database {} failed: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// No memory has this id.
    #[error("no memory with id `{0}`")]
    NotFound(String),
    /// The memory belongs to another project than the one asked for.
    #[error("memory `{id}` does not belong to project `{project}`")]
    WrongProject { id: String, project: String },
    /// The same content is already stored for the project.
    #[error("an identical memory already exists in project `{project}` (id `{existing}`)")]
    Duplicate { project: String, existing: String },
    /// The text holds something that looks like a secret; nothing was stored.
    #[error("refused to store this {what}: it contains what looks like {description} (rule `{rule}`); secrets are never stored")]
    Secret {
        what: &'static str,
        rule: &'static str,
        description: &'static str,
    },
    /// A field has a value the store cannot accept.
    #[error("invalid memory: {0}")]
    Invalid(String),
    /// A category name that is not one of the five.
    #[error("unknown memory category `{0}`; use preference, convention, pattern, correction or fact")]
    UnknownCategory(String),
    /// No history entry of this project has this id (entries of other projects are never
    /// shown or undone).
    #[error("no memory history entry {id} in project `{project}`")]
    HistoryNotFound { id: i64, project: String },
    /// The database can only be read (the file or its folder is not writable); reads work,
    /// writes fail with this.
    #[error("memory database {} is read-only (the file or its folder cannot be written), so nothing was changed", path.display())]
    ReadOnly { path: PathBuf },
    /// The extraction model's reply could not be read as memories.
    #[error("cannot read the memory extraction reply: {0}")]
    ExtractionParse(String),
    /// The extraction model call failed.
    #[error("memory extraction failed because the model call failed: {0}")]
    ExtractionModel(#[source] ctxkit::Error),
    /// A line of an import is not a record.
    #[error("line {line} of the import is not a valid memory record: {message}")]
    Import { line: usize, message: String },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The blocking task running a database call failed (panicked or was cancelled).
    #[error("the memory database task failed: {0}")]
    Task(String),
}
