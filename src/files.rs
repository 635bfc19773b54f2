//! Opening a file whose name was chosen by someone else, or that someone else could replace: a
//! skill folder's files, a cache file, a transcript. One definition, so every reader refuses the
//! same things.
//!
//! Only a regular file is opened. On Unix the open neither blocks (a FIFO with no writer would
//! wait forever) nor follows a symlink at the last component (`O_NONBLOCK | O_NOFOLLOW`), and
//! the type is then checked on the open handle, so what is read is what was checked: a FIFO, a
//! device (`/dev/zero`), a socket or a folder is refused instead of hanging or streaming.

use std::fs::File;
use std::io;
use std::path::Path;

/// Why [`open_regular`] gave no file.
#[derive(Debug)]
pub enum OpenError {
    /// The open failed: no such file, no permission, or (Unix) a symlink at the last
    /// component.
    Io(io::Error),
    /// A FIFO, a device, a socket or a folder.
    NotRegular,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Io(e) => e.fmt(f),
            OpenError::NotRegular => {
                f.write_str("not a regular file (a pipe, a device, a socket or a folder)")
            }
        }
    }
}

impl std::error::Error for OpenError {}

/// Open `path` for reading if it is a regular file, without blocking and without following a
/// symlink at its last component (Unix).
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = options.open(path).map_err(OpenError::Io)?;
    if file.metadata().map_err(OpenError::Io)?.is_file() {
        Ok(file)
    } else {
        Err(OpenError::NotRegular)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn only_regular_files_open_and_a_fifo_never_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular(&file).is_ok());
        // The crate forbids `unsafe`, so the FIFO comes from the `mkfifo` program.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(matches!(open_regular(&fifo), Err(OpenError::NotRegular)));
        }
        assert!(matches!(open_regular(dir.path()), Err(OpenError::NotRegular)));
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        assert!(matches!(
            open_regular(&dir.path().join("link")),
            Err(OpenError::Io(_))
        ));
        assert!(matches!(
            open_regular(Path::new("/dev/null")),
            Err(OpenError::NotRegular)
        ));
    }
}
