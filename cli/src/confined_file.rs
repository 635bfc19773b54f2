//! The files ctxkit reads and rewrites for the user — a project's `.ctxkit/config.toml`, the
//! user's config, a host's `settings.json` — reached from a trusted folder without following a
//! link at any step below it.
//!
//! A cloned repository can make `.claude` or `.ctxkit` a link to another folder, or
//! `settings.json` a link to a file elsewhere; following either would read a stranger's file
//! into the repository or write outside it. So the folder is opened once, and each component
//! below it is opened relative to the previous one's handle with `O_NOFOLLOW` (Unix): a link
//! anywhere is refused in one sentence, and a link swapped in after a check is refused by the
//! open itself. A write goes to a new file in the same folder handle, renamed over the old one,
//! keeping its permissions; a read-modify-write holds the file's lock ([`ConfinedFile::lock`]).

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use crate::error::CliError;

/// A file named by a path relative to a folder the user chose (the folder itself may be a
/// link; nothing below it may be).
#[derive(Clone, Debug)]
pub(crate) struct ConfinedFile {
    root: PathBuf,
    relative: PathBuf,
}

impl ConfinedFile {
    /// The file `relative` (plain components only) below `root`.
    pub(crate) fn new(root: impl Into<PathBuf>, relative: impl Into<PathBuf>) -> Self {
        let relative = relative.into();
        debug_assert!(relative.components().all(|c| matches!(c, Component::Normal(_))));
        ConfinedFile {
            root: root.into(),
            relative,
        }
    }

    /// `path` as its folder (the root: the user's own files, whose folder the user chose) and
    /// its file name.
    pub(crate) fn in_folder_of(path: &Path) -> Self {
        let root = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        ConfinedFile::new(root, path.file_name().unwrap_or(OsStr::new("")))
    }

    /// The whole path, for messages.
    pub(crate) fn path(&self) -> PathBuf {
        self.root.join(&self.relative)
    }

    /// The file's bytes, at most `cap` (more is an error); `None` when it does not exist.
    pub(crate) fn read(&self, cap: u64) -> Result<Option<Vec<u8>>, CliError> {
        let (folders, name) = self.split();
        let dir = match imp::open_folders(&self.root, &folders, false) {
            Ok(dir) => dir,
            Err(Problem::Missing) => return Ok(None),
            Err(p) => return Err(self.refusal(p, "read")),
        };
        let file = match imp::open_file(&dir, name) {
            Ok(file) => file,
            Err(Problem::Missing) => return Ok(None),
            Err(p) => return Err(self.refusal(p, "read")),
        };
        let mut bytes = Vec::new();
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.refusal(Problem::Io(e), "read"))?;
        if bytes.len() as u64 > cap {
            return Err(CliError::new(format!(
                "`{}` is larger than {} KiB; nothing was read or written",
                self.path().display(),
                cap >> 10
            )));
        }
        Ok(Some(bytes))
    }

    /// Replace the file's content with `bytes` (creating it and its folders when missing),
    /// atomically: a reader sees the old file or the new one, never a part.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), CliError> {
        let (folders, name) = self.split();
        let dir = imp::open_folders(&self.root, &folders, true).map_err(|p| self.refusal(p, "write"))?;
        imp::replace(&dir, name, bytes).map_err(|p| self.refusal(p, "write"))
    }

    /// Hold this file's lock until the guard is dropped: `NAME.lock` beside it, reached like
    /// the file itself (created with its folders, never through a link). Every
    /// read-modify-write of the file holds it across the read and the write, so concurrent
    /// updates (two `skills disable`, the manager page and the CLI) apply one after the other
    /// and none is lost. The lock file stays: removing it would let a process waiting on the
    /// old one and a newcomer on a new one both go ahead.
    pub(crate) fn lock(&self) -> Result<Lock, CliError> {
        let (folders, name) = self.split();
        let mut lock_name = name.to_os_string();
        lock_name.push(".lock");
        let dir = imp::open_folders(&self.root, &folders, true).map_err(|p| self.refusal(p, "lock"))?;
        let file = imp::open_lock(&dir, &lock_name).map_err(|p| self.refusal(p, "lock"))?;
        file.lock().map_err(|e| self.refusal(Problem::Io(e), "lock"))?;
        Ok(Lock { _file: file })
    }

    fn split(&self) -> (Vec<&OsStr>, &OsStr) {
        let mut parts: Vec<&OsStr> = self.relative.iter().collect();
        let name = parts.pop().unwrap_or(OsStr::new(""));
        (parts, name)
    }

    fn refusal(&self, problem: Problem, doing: &str) -> CliError {
        let path = self.path();
        match problem {
            Problem::Link(at) => CliError::new(format!(
                "`{}` is a link, and ctxkit never reads or writes its files through a link \
                 (it could lead out of `{}`); nothing was written",
                self.root.join(at).display(),
                self.root.display()
            )),
            Problem::NotRegular(at) => CliError::new(format!(
                "`{}` is not a {}; nothing was written",
                self.root.join(&at).display(),
                // The file, or its lock file beside it.
                if at.parent() == self.relative.parent() {
                    "regular file"
                } else {
                    "folder"
                }
            )),
            Problem::Missing => CliError::new(format!("`{}` does not exist", self.root.display())),
            Problem::Io(e) => CliError::caused_by(format!("cannot {doing} `{}`: {e}", path.display()), e),
        }
    }
}

/// An exclusive lock on a [`ConfinedFile`], released when dropped (its lock file is closed).
#[derive(Debug)]
#[must_use = "the lock is released when this is dropped"]
pub(crate) struct Lock {
    _file: std::fs::File,
}

/// Why a step failed.
#[derive(Debug)]
enum Problem {
    /// This path (relative to the root) is a symbolic link.
    Link(PathBuf),
    /// This path is not a folder (an intermediate step) or not a regular file (the file).
    NotRegular(PathBuf),
    /// A step does not exist (and is not to be created).
    Missing,
    Io(io::Error),
}

#[cfg(unix)]
mod imp {
    //! Handles all the way down: `openat` with `O_NOFOLLOW` at every step.
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{self as fs, AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;

    use super::Problem;

    /// A folder reached without a link: its handle, and its path below the root for messages.
    pub(super) struct Folder {
        fd: OwnedFd,
        below: PathBuf,
    }

    /// Open `root` (followed: the user chose it), then each of `folders` below it, creating
    /// missing ones (the root included) when `create`.
    pub(super) fn open_folders(root: &Path, folders: &[&OsStr], create: bool) -> Result<Folder, Problem> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match fs::open(root, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                std::fs::create_dir_all(root).map_err(Problem::Io)?;
                fs::open(root, flags, Mode::empty())
            }
            other => other,
        }
        .map_err(|e| match e {
            Errno::NOENT => Problem::Missing,
            e => Problem::Io(e.into()),
        })?;
        let mut folder = Folder {
            fd,
            below: PathBuf::new(),
        };
        for name in folders {
            let below = folder.below.join(name);
            let open = || fs::openat(&folder.fd, *name, flags | OFlags::NOFOLLOW, Mode::empty());
            let fd = match open() {
                Err(Errno::NOENT) if create => {
                    match fs::mkdirat(&folder.fd, *name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(Problem::Io(e.into())),
                    }
                    open()
                }
                other => other,
            }
            .map_err(|e| classify(&folder.fd, name, below.clone(), e))?;
            folder = Folder { fd, below };
        }
        Ok(folder)
    }

    /// Open the regular file `name` of `dir` for reading, never through a link and never
    /// blocking on a FIFO.
    pub(super) fn open_file(dir: &Folder, name: &OsStr) -> Result<File, Problem> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = fs::openat(&dir.fd, name, flags, Mode::empty())
            .map_err(|e| classify(&dir.fd, name, dir.below.join(name), e))?;
        let stat = fs::fstat(&fd).map_err(|e| Problem::Io(e.into()))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Problem::NotRegular(dir.below.join(name)));
        }
        Ok(File::from(fd))
    }

    /// Open the lock file `name` of `dir`, creating it: a regular file, never through a link.
    pub(super) fn open_lock(dir: &Folder, name: &OsStr) -> Result<File, Problem> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = fs::openat(&dir.fd, name, flags, Mode::from_raw_mode(0o666))
            .map_err(|e| classify(&dir.fd, name, dir.below.join(name), e))?;
        let stat = fs::fstat(&fd).map_err(|e| Problem::Io(e.into()))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Problem::NotRegular(dir.below.join(name)));
        }
        Ok(File::from(fd))
    }

    /// Write `bytes` to a new file in `dir` and rename it over `name`, with the old file's
    /// permissions when there was one (a user may have made it private).
    pub(super) fn replace(dir: &Folder, name: &OsStr, bytes: &[u8]) -> Result<(), Problem> {
        let mode = match fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => Mode::from_raw_mode(stat.st_mode & 0o7777),
                FileType::Symlink => return Err(Problem::Link(dir.below.join(name))),
                _ => return Err(Problem::NotRegular(dir.below.join(name))),
            },
            Err(Errno::NOENT) => Mode::from_raw_mode(0o666),
            Err(e) => return Err(Problem::Io(e.into())),
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut temp = std::ffi::OsString::from(".");
        temp.push(name);
        temp.push(format!(
            ".{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = fs::openat(&dir.fd, &temp, flags, mode).map_err(|e| Problem::Io(e.into()))?;
        let written = (|| {
            // The creation mode was masked by the umask; the old file's mode is kept exactly.
            fs::fchmod(&fd, mode)?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::renameat(&dir.fd, &temp, &dir.fd, name)?;
            Ok::<(), std::io::Error>(())
        })();
        if let Err(e) = written {
            let _ = fs::unlinkat(&dir.fd, &temp, AtFlags::empty());
            return Err(Problem::Io(e));
        }
        Ok(())
    }

    /// Word an `openat` failure: a link, something that is not what was expected, or I/O.
    fn classify(parent: &impl AsFd, name: &OsStr, below: PathBuf, e: Errno) -> Problem {
        match fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => Problem::Link(below),
            Ok(_) if matches!(e, Errno::NOTDIR | Errno::ISDIR) => Problem::NotRegular(below),
            _ if e == Errno::NOENT => Problem::Missing,
            _ => Problem::Io(e.into()),
        }
    }
}

#[cfg(not(unix))]
mod imp {
    //! Without `openat`: every step is checked with `symlink_metadata` before it is used.
    use std::ffi::OsStr;
    use std::fs::File;
    use std::path::{Path, PathBuf};

    use super::Problem;

    pub struct Folder {
        path: PathBuf,
        below: PathBuf,
    }

    pub fn open_folders(root: &Path, folders: &[&OsStr], create: bool) -> Result<Folder, Problem> {
        if create {
            std::fs::create_dir_all(root).map_err(Problem::Io)?;
        }
        if !root.is_dir() {
            return Err(Problem::Missing);
        }
        let mut folder = Folder {
            path: root.to_path_buf(),
            below: PathBuf::new(),
        };
        for name in folders {
            let path = folder.path.join(name);
            let below = folder.below.join(name);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => return Err(Problem::Link(below)),
                Ok(m) if !m.is_dir() => return Err(Problem::NotRegular(below)),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&path).map_err(Problem::Io)?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Problem::Missing),
                Err(e) => return Err(Problem::Io(e)),
            }
            folder = Folder { path, below };
        }
        Ok(folder)
    }

    pub fn open_file(dir: &Folder, name: &OsStr) -> Result<File, Problem> {
        let path = dir.path.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => Err(Problem::Link(dir.below.join(name))),
            Ok(m) if !m.is_file() => Err(Problem::NotRegular(dir.below.join(name))),
            Ok(_) => File::open(&path).map_err(Problem::Io),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Problem::Missing),
            Err(e) => Err(Problem::Io(e)),
        }
    }

    pub fn open_lock(dir: &Folder, name: &OsStr) -> Result<File, Problem> {
        let path = dir.path.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => return Err(Problem::Link(dir.below.join(name))),
            Ok(m) if !m.is_file() => return Err(Problem::NotRegular(dir.below.join(name))),
            _ => {}
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(Problem::Io)
    }

    pub fn replace(dir: &Folder, name: &OsStr, bytes: &[u8]) -> Result<(), Problem> {
        use std::io::Write;
        let path = dir.path.join(name);
        let old = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => return Err(Problem::Link(dir.below.join(name))),
            Ok(m) => Some(m.permissions()),
            Err(_) => None,
        };
        let mut tmp = tempfile::NamedTempFile::new_in(&dir.path).map_err(Problem::Io)?;
        tmp.write_all(bytes).map_err(Problem::Io)?;
        if let Some(permissions) = old {
            std::fs::set_permissions(tmp.path(), permissions).map_err(Problem::Io)?;
        }
        tmp.persist(&path).map_err(|e| Problem::Io(e.error))?;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn writes_and_reads_below_the_root_creating_folders() {
        let root = tempfile::tempdir().unwrap();
        let file = ConfinedFile::new(root.path(), ".ctxkit/config.toml");
        assert_eq!(file.read(1024).unwrap(), None);
        file.write(b"a = 1\n").unwrap();
        assert_eq!(file.read(1024).unwrap().unwrap(), b"a = 1\n");
        assert!(file.read(2).is_err(), "past the cap is an error");
    }

    #[test]
    fn a_linked_folder_or_file_is_refused_and_nothing_outside_changes() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("settings.json"), "{\"env\":{\"K\":\"v\"}}").unwrap();
        symlink(outside.path(), root.path().join(".claude")).unwrap();
        let file = ConfinedFile::new(root.path(), ".claude/settings.json");
        let e = file.read(1 << 20).unwrap_err();
        assert!(e.message().contains("is a link"), "{}", e.message());
        assert!(file.write(b"{}").unwrap_err().message().contains("is a link"));
        assert_eq!(
            std::fs::read_to_string(outside.path().join("settings.json")).unwrap(),
            "{\"env\":{\"K\":\"v\"}}"
        );

        std::fs::remove_file(root.path().join(".claude")).unwrap();
        std::fs::create_dir(root.path().join(".claude")).unwrap();
        symlink(
            outside.path().join("settings.json"),
            root.path().join(".claude/settings.json"),
        )
        .unwrap();
        assert!(file.read(1 << 20).unwrap_err().message().contains("is a link"));
        assert!(file.write(b"{}").unwrap_err().message().contains("is a link"));
        assert!(
            root.path().join(".claude/settings.json").is_symlink(),
            "the link stays a link"
        );
    }

    #[test]
    fn the_lock_file_is_confined_like_the_file() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let file = ConfinedFile::new(root.path(), ".ctxkit/config.toml");
        drop(file.lock().unwrap());
        assert!(root.path().join(".ctxkit/config.toml.lock").is_file());

        std::fs::remove_file(root.path().join(".ctxkit/config.toml.lock")).unwrap();
        symlink(
            outside.path().join("planted"),
            root.path().join(".ctxkit/config.toml.lock"),
        )
        .unwrap();
        let e = file.lock().unwrap_err();
        assert!(e.message().contains("is a link"), "{}", e.message());
        assert!(
            !outside.path().join("planted").exists(),
            "nothing created through the link"
        );

        std::fs::remove_file(root.path().join(".ctxkit/config.toml.lock")).unwrap();
        std::fs::create_dir(root.path().join(".ctxkit/config.toml.lock")).unwrap();
        let e = file.lock().unwrap_err();
        assert!(e.message().contains("is not a regular file"), "{}", e.message());
    }

    #[test]
    fn a_rewrite_keeps_the_files_permissions() {
        let root = tempfile::tempdir().unwrap();
        let file = ConfinedFile::new(root.path(), "settings.json");
        file.write(b"{}").unwrap();
        let path = root.path().join("settings.json");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        file.write(b"{\"a\":1}").unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let leftovers = std::fs::read_dir(root.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }

    #[test]
    fn a_fifo_is_not_read() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("settings.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = ConfinedFile::new(root.path(), "settings.json")
            .read(1024)
            .unwrap_err();
        assert!(e.message().contains("not a regular file"), "{}", e.message());
    }
}
