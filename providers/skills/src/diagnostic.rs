//! Problems found while loading skills, in a form a skill author can act on.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How bad a problem is: a warning keeps the skill, an error skips it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something to fix; the skill (or its tools) still loads as described.
    Warning,
    /// The file was skipped.
    Error,
}

/// One problem with one file: where it is and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The file at fault (`<index>` for a problem of the index as a whole).
    pub path: PathBuf,
    /// 1-based line in the file, when the problem has one.
    pub line: Option<usize>,
    /// Whether the file was skipped.
    pub severity: Severity,
    /// What is wrong and what to do about it, in one sentence.
    pub message: String,
}

impl Diagnostic {
    /// A problem that keeps the file.
    pub fn warning(path: impl Into<PathBuf>, line: Option<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.into(),
            line,
            severity: Severity::Warning,
            message: message.into(),
        }
    }

    /// A problem that skips the file.
    pub fn error(path: impl Into<PathBuf>, line: Option<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            ..Self::warning(path, line, message)
        }
    }

    /// Whether the file was skipped because of this problem.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// `path:line: warning: message`, the shape editors and CI logs understand.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        match self.line {
            Some(line) => write!(f, "{}:{line}: {severity}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {severity}: {}", self.path.display(), self.message),
        }
    }
}
