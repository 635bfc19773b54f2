//! Reading files that a stranger chose: a skill folder cloned from somewhere, a project's files.
//!
//! Every read goes through a [`Confined`] folder, which guarantees by construction what a
//! hostile folder cannot change:
//! - the file's real path (every symlink resolved) lies inside the folder's real path, so a
//!   `SKILL.md` that links to `/proc/self/environ` or `~/.aws/credentials` is never opened;
//! - only a regular file is read; it is opened without following a last-moment symlink and
//!   without blocking, so a FIFO or a device (`/dev/zero`) is refused instead of hanging;
//! - at most [`MAX_FILE_BYTES`] are read, counted as they arrive (a file under `/proc` reports
//!   size 0 and then streams), never trusted from the reported size.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The most bytes read from one skill file, `tools.json` or project file.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;

/// Why a file was not read; callers word it for their file kind with [`ReadProblem::reason`].
#[derive(Debug)]
pub(crate) enum ReadProblem {
    Io(io::Error),
    /// Its real path leaves the folder it was found in.
    Outside,
    /// A FIFO, a device, a socket or a folder.
    NotRegular,
    /// More than [`MAX_FILE_BYTES`] arrived.
    TooLarge,
    /// Byte offset and 1-based line of the first invalid byte.
    NotUtf8 {
        offset: usize,
        line: usize,
    },
}

impl ReadProblem {
    /// The 1-based line at fault, when there is one.
    pub(crate) fn line(&self) -> Option<usize> {
        match self {
            ReadProblem::NotUtf8 { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// What went wrong, as the start of a sentence about the file.
    pub(crate) fn reason(&self, root: &Path) -> String {
        match self {
            ReadProblem::Io(e) => format!("cannot read the file ({e})"),
            ReadProblem::Outside => format!(
                "this leads (through a symlink) outside {}, and nothing outside the folder is read",
                root.display()
            ),
            ReadProblem::NotRegular => {
                "this is not a regular file (a pipe, a device or a folder), and only regular files are read"
                    .into()
            }
            ReadProblem::TooLarge => format!("the file is over the {} MiB limit", MAX_FILE_BYTES >> 20),
            ReadProblem::NotUtf8 { offset, .. } => {
                format!("the file is not valid UTF-8 (bad byte at offset {offset})")
            }
        }
    }
}

/// A folder whose files are read only from inside it.
#[derive(Clone, Debug)]
pub(crate) struct Confined {
    /// The folder's real path: symlinks resolved, absolute.
    real: PathBuf,
}

impl Confined {
    /// Confine reads to `folder` (resolved once; the folder itself may be a symlink the user
    /// chose).
    pub(crate) fn new(folder: &Path) -> io::Result<Self> {
        Ok(Confined {
            real: fs::canonicalize(folder)?,
        })
    }

    /// The folder's real path.
    pub(crate) fn real(&self) -> &Path {
        &self.real
    }

    /// The real path of `path` when it exists and lies inside the folder.
    pub(crate) fn resolve(&self, path: &Path) -> Result<PathBuf, ReadProblem> {
        let real = fs::canonicalize(path).map_err(ReadProblem::Io)?;
        if real.starts_with(&self.real) {
            Ok(real)
        } else {
            Err(ReadProblem::Outside)
        }
    }

    /// Read `path`'s bytes, within every guarantee of this module.
    pub(crate) fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, ReadProblem> {
        let real = self.resolve(path)?;
        let file = open_regular(&real)?;
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(ReadProblem::Io)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ReadProblem::TooLarge);
        }
        Ok(bytes)
    }

    /// Read `path` as UTF-8 text, within every guarantee of this module.
    pub(crate) fn read_text(&self, path: &Path) -> Result<String, ReadProblem> {
        String::from_utf8(self.read_bytes(path)?).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let line = 1 + e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count();
            ReadProblem::NotUtf8 { offset, line }
        })
    }
}

/// Open a file for reading only if it is a regular file ([`ctxkit::files::open_regular`]: no
/// blocking on a FIFO, no last-moment symlink followed, the type checked on the handle).
fn open_regular(real: &Path) -> Result<File, ReadProblem> {
    ctxkit::files::open_regular(real).map_err(|e| match e {
        // A symlink at the last component: it appeared after the path was resolved.
        ctxkit::files::OpenError::Io(_) if real.is_symlink() => ReadProblem::Outside,
        ctxkit::files::OpenError::Io(e) => ReadProblem::Io(e),
        ctxkit::files::OpenError::NotRegular => ReadProblem::NotRegular,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_and_refuses_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "hello").unwrap();
        fs::write(outside.path().join("secret"), "KEY=1").unwrap();
        let root = Confined::new(dir.path()).unwrap();
        assert_eq!(root.read_text(&dir.path().join("a.md")).unwrap(), "hello");

        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("b.md")).unwrap();
            std::os::unix::fs::symlink(dir.path().join("a.md"), dir.path().join("c.md")).unwrap();
            assert!(matches!(
                root.read_text(&dir.path().join("b.md")),
                Err(ReadProblem::Outside)
            ));
            assert_eq!(
                root.read_text(&dir.path().join("c.md")).unwrap(),
                "hello",
                "a link inside is fine"
            );
        }
        assert!(matches!(
            root.read_text(&dir.path().join("../x")),
            Err(ReadProblem::Io(_) | ReadProblem::Outside)
        ));
    }

    #[test]
    fn counts_bytes_read_not_reported_size() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.md");
        fs::write(&big, vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let exact = dir.path().join("exact.md");
        fs::write(&exact, vec![b'a'; MAX_FILE_BYTES as usize]).unwrap();
        let root = Confined::new(dir.path()).unwrap();
        assert!(matches!(root.read_text(&big), Err(ReadProblem::TooLarge)));
        assert_eq!(root.read_text(&exact).unwrap().len(), MAX_FILE_BYTES as usize);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn refuses_devices_and_caps_proc_files() {
        let dev = Confined::new(Path::new("/dev")).unwrap();
        assert!(matches!(
            dev.read_text(Path::new("/dev/zero")),
            Err(ReadProblem::NotRegular)
        ));
        // Reported size 0, real content streamed: read, but never past the cap.
        let proc = Confined::new(Path::new("/proc/self")).unwrap();
        assert!(proc.read_text(Path::new("/proc/self/status")).is_ok());
    }
}
