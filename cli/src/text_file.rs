//! Text files the user names on the command line (instructions, queries, transcripts): read
//! whole, as UTF-8, with errors that name the file.

use std::path::Path;

use crate::error::CliError;

/// Read a UTF-8 text file, with an error naming it.
pub(crate) fn read_text(path: &Path) -> Result<String, CliError> {
    read_text_capped(path, u64::MAX)
}

/// [`read_text`] of at most `cap` bytes: a longer file is an error, read no further.
pub(crate) fn read_text_capped(path: &Path, cap: u64) -> Result<String, CliError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(cap.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|e| CliError::caused_by(format!("cannot read `{}`: {e}", path.display()), e))?;
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
