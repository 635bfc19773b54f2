//! The on-disk index cache: a [`Scan`] saved in a cache folder and reused while nothing it was
//! built from has changed, so a process started per prompt does not re-parse every skill.
//!
//! A cache file is checked against a stamp (size, modification and change times) of every
//! root, every folder walked and every file read. A folder's times change when an entry is
//! added, removed or renamed in it, so a new, deleted or moved skill is seen without walking.
//! Anything unexpected — no file, a truncated or foreign one, another version's, a stamp that
//! differs — means a fresh scan, and the cache is rewritten. Nothing here is ever an error.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::discover::SkillRoot;
use crate::scan::Scan;

/// Bumped whenever what a cache file holds changes shape.
const FORMAT: u32 = 1;
/// The largest cache file read (10,000 skills take about 20 MB).
const MAX_CACHE_BYTES: u64 = 256 << 20;
/// The most cache files kept in the folder (one per distinct list of roots); the least
/// recently written go first.
const MAX_CACHE_FILES: usize = 64;
/// A file changed this recently before a scan may change again within the same timestamp
/// tick, unseen: such a scan is used but not saved (the next process saves it).
const RACY: Duration = Duration::from_secs(2);

/// What a cache file holds.
#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    version: String,
    stamps: Vec<Stamp>,
    scan: Scan,
}

/// A path and what it looked like when the scan was made.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: PathBuf,
    /// `None`: the path did not exist.
    state: Option<State>,
}

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    len: u64,
    /// Nanoseconds since the epoch.
    modified: i128,
    /// The inode change time (Unix), which also moves when a file is replaced by a rename or
    /// has its modification time set back.
    changed: i128,
}

impl Stamp {
    /// The path as it is now; a symlink is stamped itself, not followed.
    fn now(path: &Path) -> Stamp {
        let state = fs::symlink_metadata(path).ok().map(|m| State {
            len: m.len(),
            modified: m.modified().map_or(0, nanos),
            changed: changed(&m),
        });
        Stamp {
            path: path.to_path_buf(),
            state,
        }
    }

    fn is_current(&self) -> bool {
        Stamp::now(&self.path) == *self
    }

    /// Changed within [`RACY`] of `start`, or after it.
    fn is_racy(&self, start: SystemTime) -> bool {
        let horizon = nanos(start - RACY);
        self.state
            .as_ref()
            .is_some_and(|s| s.modified >= horizon || s.changed >= horizon)
    }
}

fn nanos(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

#[cfg(unix)]
fn changed(m: &fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128
}

#[cfg(not(unix))]
fn changed(_: &fs::Metadata) -> i128 {
    0
}

/// The scan of `roots`: from the cache in `dir` when it is current, else fresh (and saved).
pub(crate) fn scan(dir: &Path, roots: &[SkillRoot]) -> Scan {
    let file = dir.join(format!("skills-{}.idx", key(roots)));
    let _span = tracing::debug_span!("index_cache", file = %file.display()).entered();
    if let Some(scan) = read(&file) {
        tracing::debug!(skills = scan.skills.len(), "index cache hit");
        return scan;
    }
    let start = SystemTime::now();
    let scan = Scan::run(roots);
    let stamps: Vec<Stamp> = roots
        .iter()
        .map(|r| r.path.as_path())
        .chain(scan.watched.iter().map(PathBuf::as_path))
        .map(Stamp::now)
        .collect();
    if stamps.iter().any(|s| s.is_racy(start)) {
        tracing::debug!("index cache not saved: a file changed in the last seconds");
        return scan;
    }
    let cache = CacheFile {
        format: FORMAT,
        version: env!("CARGO_PKG_VERSION").to_string(),
        stamps,
        scan,
    };
    if let Err(e) = write(dir, &file, &cache) {
        tracing::debug!("index cache not saved: {e}");
    }
    cache.scan
}

/// One cache file per list of roots (with their tiers and priorities), and per format.
fn key(roots: &[SkillRoot]) -> String {
    let mut hash = Sha256::new();
    hash.update(format!("{FORMAT} {} {roots:?}", env!("CARGO_PKG_VERSION")));
    hash.finalize()[..12].iter().map(|b| format!("{b:02x}")).collect()
}

/// The cached scan, when the file is readable, of this version and current.
fn read(file: &Path) -> Option<Scan> {
    let mut bytes = Vec::new();
    fs::File::open(file)
        .ok()?
        .take(MAX_CACHE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    let cache: CacheFile = match rmp_serde::from_slice(&bytes) {
        Ok(cache) => cache,
        Err(e) => {
            tracing::debug!("index cache unreadable ({e}); rebuilding");
            return None;
        }
    };
    if cache.format != FORMAT || cache.version != env!("CARGO_PKG_VERSION") {
        return None;
    }
    if let Some(stale) = cache.stamps.iter().find(|s| !s.is_current()) {
        tracing::debug!(changed = %stale.path.display(), "index cache stale");
        return None;
    }
    Some(cache.scan)
}

/// Write the cache atomically: a reader sees the old file or the new one, never a part, and
/// two processes writing at once leave one whole file.
fn write(dir: &Path, file: &Path, cache: &CacheFile) -> std::io::Result<()> {
    let bytes = rmp_serde::to_vec_named(cache).map_err(std::io::Error::other)?;
    fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(&bytes)?;
    temp.persist(file).map_err(|e| e.error)?;
    prune(dir);
    Ok(())
}

/// Keep at most [`MAX_CACHE_FILES`] cache files, dropping the least recently written.
fn prune(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("skills-") && name.ends_with(".idx")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= MAX_CACHE_FILES {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - MAX_CACHE_FILES] {
        let _ = fs::remove_file(path);
    }
}
