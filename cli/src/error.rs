//! The CLI's one error type: a sentence for the user, and the error it came from.
//!
//! The sentence is what is printed (`error: …`, one line on standard error); the cause is kept,
//! not flattened into the text and dropped, so `CTXKIT_LOG=debug` shows the whole chain and
//! code can still ask what went wrong underneath (`std::error::Error::source`).

use std::error::Error as StdError;
use std::fmt;

use ctxkit_secrets::{redact, redact_url};

/// What each exit code means, shown under every command's help and chat's `/help`.
pub(crate) const EXIT_CODES: &str = "Exit codes: 0 success (also when standard output is closed early, as by `| head`); 1 an error (one sentence on stderr) or, for `skills validate`, a skipped skill; 2 bad command-line usage.\nSet CTXKIT_LOG=info (or debug) to see provider and model spans on stderr.";

/// An error for the user: one sentence, printed to stderr (unless already reported).
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    /// What it came from, when it came from another error.
    cause: Option<Box<dyn StdError + Send + Sync>>,
    /// Already reported on stdout (e.g. `skills validate`); print nothing more.
    quiet: bool,
    /// Standard output was closed by its reader: stop quietly and exit 0.
    broken_pipe: bool,
}

impl CliError {
    /// An error whose sentence may quote input (a file name, a serde message, a server's
    /// reply): every secret in it is redacted here, before anyone can cut or print it.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        CliError {
            message: redact_url(&redact(&message.into())),
            cause: None,
            quiet: false,
            broken_pipe: false,
        }
    }

    /// `message`, caused by `cause` (kept as the error's source).
    pub(crate) fn caused_by(
        message: impl Into<String>,
        cause: impl StdError + Send + Sync + 'static,
    ) -> Self {
        CliError {
            cause: Some(Box::new(cause)),
            ..CliError::new(message)
        }
    }

    /// An error already reported to the user (exit 1, nothing more printed).
    pub(crate) fn quiet(message: impl Into<String>) -> Self {
        CliError {
            quiet: true,
            ..CliError::new(message)
        }
    }

    /// The sentence shown to the user.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// Standard output was closed by its reader (`ctxkit … | head`).
    pub(crate) fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }

    /// Print the sentence on standard error (unless already reported); the chain of causes
    /// goes to the debug log.
    pub(crate) fn report(&self) {
        if !self.quiet {
            eprintln!("error: {}", self.message);
        }
        let mut cause = self.source();
        while let Some(e) = cause {
            tracing::debug!("caused by: {}", redact_url(&redact(&e.to_string())));
            cause = e.source();
        }
    }

    fn broken_pipe() -> Self {
        CliError {
            quiet: true,
            broken_pipe: true,
            ..CliError::new("standard output was closed")
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for CliError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.cause.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

impl From<ctxkit::Error> for CliError {
    fn from(e: ctxkit::Error) -> Self {
        CliError::caused_by(e.to_string(), e)
    }
}

impl From<ctxkit_memory::MemoryError> for CliError {
    /// Redacted like every CLI error: a mistyped URL opened as a file must not show its
    /// password either.
    fn from(e: ctxkit_memory::MemoryError) -> Self {
        CliError::caused_by(e.to_string(), e)
    }
}

impl From<ctxkit_skills::eval::EvalError> for CliError {
    fn from(e: ctxkit_skills::eval::EvalError) -> Self {
        CliError::caused_by(e.to_string(), e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            // The reader went away (`ctxkit … | head`): nothing left to say to anyone.
            return CliError::broken_pipe();
        }
        CliError::caused_by(format!("I/O error: {e}"), e)
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        CliError::caused_by(format!("JSON error: {e}"), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_is_redacted_and_the_cause_kept() {
        let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
        let io = std::io::Error::other(format!("server said {token}"));
        let e = CliError::caused_by(format!("cannot sync: {io}"), io);
        assert!(!e.message().contains(token), "{}", e.message());
        let cause = e.source().expect("the cause is kept");
        assert!(cause.to_string().starts_with("server said"));
        assert!(CliError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).is_broken_pipe());
    }
}
