//! The crate's error type: one sentence naming the model file at fault.

use std::path::PathBuf;

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file of the model folder cannot be read.
    #[error("cannot read the embedding model's {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than a model of this kind ever needs.
    #[error("the embedding model's {} is {size} bytes, over the {limit}-byte limit", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The most this crate reads or maps.
        limit: u64,
    },
    /// A file is there but does not describe a model this crate runs.
    #[error("the embedding model's {file} {problem}")]
    Malformed {
        /// The file, relative to the model folder.
        file: String,
        /// What is wrong, as the end of a sentence.
        problem: String,
    },
}

impl EmbedError {
    pub(crate) fn malformed(file: &str, problem: impl Into<String>) -> Self {
        EmbedError::Malformed {
            file: file.to_owned(),
            problem: problem.into(),
        }
    }
}
