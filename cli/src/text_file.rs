//! Text files the user names on the command line (instructions, queries, transcripts): read
//! whole, as UTF-8, with errors that name the file.

use std::io::Read;
use std::path::Path;

use crate::error::CliError;

/// Read a UTF-8 text file of the user's own (instructions, a query), with an error naming it.
/// A pipe works too (`--instructions <(…)`).
pub(crate) fn read_text(path: &Path) -> Result<String, CliError> {
    let file = std::fs::File::open(path).map_err(|e| cannot_read(path, e))?;
    read_all(file, path, u64::MAX)
}

/// Read a UTF-8 text file made elsewhere (a transcript), of at most `cap` bytes: only a regular
/// file is opened (a FIFO is refused, never waited for), and a longer file is an error, read
/// no further.
pub(crate) fn read_regular_text(path: &Path, cap: u64) -> Result<String, CliError> {
    let file = ctxkit::files::open_regular(path).map_err(|e| cannot_read(path, e))?;
    read_all(file, path, cap)
}

fn cannot_read<E: std::error::Error + Send + Sync + 'static>(path: &Path, e: E) -> CliError {
    CliError::caused_by(format!("cannot read `{}`: {e}", path.display()), e)
}

/// The text of `file`, at most `cap` bytes.
fn read_all(file: std::fs::File, path: &Path, cap: u64) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(CliError::new(format!(
            "`{}` is larger than {} MiB; nothing was read",
            path.display(),
            cap >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        CliError::new(format!(
            "`{}` is not valid UTF-8 (bad byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}
