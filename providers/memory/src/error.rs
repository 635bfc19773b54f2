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
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer version of this crate.
    #[error("memory database {} has schema version {found}, newer than version {supported} that this build understands; upgrade ctxkit-memory", path.display())]
    SchemaTooNew {
        /// The database file (or a server's URL, password redacted).
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest version this build reads.
        supported: i64,
    },
    /// A query failed.
    #[error("memory database {} failed: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// No memory has this id.
    #[error("no memory with id `{0}`")]
    NotFound(String),
    /// The memory belongs to another project than the one asked for.
    #[error("memory `{id}` does not belong to project `{project}`")]
    WrongProject {
        /// The memory asked for.
        id: String,
        /// The project it was asked for in.
        project: String,
    },
    /// The same content is already stored for the project.
    #[error("an identical memory already exists in project `{project}` (id `{existing}`)")]
    Duplicate {
        /// The project.
        project: String,
        /// The memory that already holds the content.
        existing: String,
    },
    /// The text holds something that looks like a secret; nothing was stored.
    #[error("refused to store this {what}: it contains what looks like {description} (rule `{rule}`); secrets are never stored")]
    Secret {
        /// What was being stored ("memory", "state value", …).
        what: &'static str,
        /// The rule that matched, e.g. `github-token` (the secret itself is never echoed).
        rule: &'static str,
        /// What the rule finds, e.g. "a GitHub token".
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
    HistoryNotFound {
        /// The history entry asked for.
        id: i64,
        /// The project it was asked for in.
        project: String,
    },
    /// The database can only be read (the file or its folder is not writable); reads work,
    /// writes fail with this.
    #[error("memory database {} is read-only (the file or its folder cannot be written), so nothing was changed", path.display())]
    ReadOnly {
        /// The database file (or a server's URL, password redacted).
        path: PathBuf,
    },
    /// The extraction model's reply could not be read as memories.
    #[error("cannot read the memory extraction reply: {0}")]
    ExtractionParse(String),
    /// The extraction model call failed.
    #[error("memory extraction failed because the model call failed: {0}")]
    ExtractionModel(#[source] ctxkit::Error),
    /// A line of an import is not a record.
    #[error("line {line} of the import is not a valid memory record: {message}")]
    Import {
        /// The line, counting from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A PostgreSQL server could not be reached or refused the connection (wrong password,
    /// unknown database, TLS refused). The URL is shown with its password redacted.
    #[error("cannot connect to memory database {url}: {reason}")]
    Connect {
        /// The server's URL, password redacted ([`ctxkit_secrets::redact_url`]).
        url: String,
        /// What the client or the server said, in one sentence.
        reason: String,
    },
    /// A query on a PostgreSQL server failed.
    #[error("memory database {url} failed: {reason}")]
    Server {
        /// The server's URL, password redacted.
        url: String,
        /// What the server said.
        reason: String,
        /// The SQLSTATE the server answered with, when it did (`40001`: a serialization
        /// failure, `23505`: a unique violation, …).
        sqlstate: Option<String>,
    },
    /// The blocking task running a database call failed (panicked or was cancelled).
    #[error("the memory database task failed: {0}")]
    Task(String),
}
