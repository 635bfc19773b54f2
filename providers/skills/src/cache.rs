//! The on-disk index cache: a [`Scan`] saved in a cache folder and reused while nothing it was
//! built from has changed, so a process started per prompt does not re-parse every skill;
//! beside it, the words [`Ranker`] built from exactly those skills, so such a process does not
//! read every body either.
//!
//! A cache file is checked against a stamp (size, modification and change times) of every
//! root, every folder walked and every file read. A folder's times change when an entry is
//! added, removed or renamed in it, so a new, deleted or moved skill is seen without walking.
//! Anything unexpected — no file, a truncated or foreign one, another version's, a stamp that
//! differs — means a fresh scan, and the cache is rewritten. Nothing here is ever an error.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::body::Body;
use crate::confined::MAX_FILE_BYTES;
use crate::discover::SkillRoot;
use crate::parse::{MAX_PATTERNS, MAX_TRIGGERS};
use crate::rank::{self, Ranker};
use crate::scan::{Scan, Scanned};
use crate::skill::Skill;

/// Bumped whenever what a cache file holds changes shape.
const FORMAT: u32 = 8;
/// The largest cache file read (10,000 skills take about 20 MB).
const MAX_CACHE_BYTES: u64 = 256 << 20;
/// The most cache files kept in the folder (one per distinct list of roots); the least
/// recently written go first.
const MAX_CACHE_FILES: usize = 64;
/// A file whose times lie this close to a scan (before its start, during it, or after its
/// end) may change again within the same timestamp tick, unseen: such a scan is used but not
/// saved (the next process saves it). A time further in the future (tar and zip restore an
/// archive's) is as settled as one further in the past: a later change sets the change time to
/// the clock, which no one can set, and the modification time moves with it unless set back.
const RACY: Duration = Duration::from_secs(2);

/// The two kinds of cache file, by name: `skills-<key of the roots>.idx` and
/// `ranker-<key of the skills>.bin`.
const INDEX: (&str, &str) = ("skills-", ".idx");
const RANKER: (&str, &str) = ("ranker-", ".bin");

/// A cache file: [`MAGIC`], the lengths of the [`Head`] and of the [`Meta`], both
/// (MessagePack), and then every skill's body, back to back. Bodies are read from the file
/// only when used.
const MAGIC: &[u8; 8] = b"ctxkidx\0";

/// What tells whether a cache file can be used: decoded before the rest, so the paths are
/// checked while the scan is decoded.
#[derive(Serialize, Deserialize)]
struct Head {
    format: u32,
    version: String,
    stamps: Vec<Stamp>,
}

/// The scan a cache file holds.
#[derive(Serialize, Deserialize)]
struct Meta {
    /// The scan, its skills' bodies left empty.
    scan: Scan,
    /// Where each skill's body is, after the metadata: offset and length.
    bodies: Vec<(u64, usize)>,
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
        Stamp {
            path: path.to_path_buf(),
            state: State::of(path),
        }
    }

    fn is_current(&self) -> bool {
        State::of(&self.path) == self.state
    }

    /// Changed within [`RACY`] of the scan that ran from `start` to `end`.
    fn is_racy(&self, start: SystemTime, end: SystemTime) -> bool {
        let near = nanos(start - RACY)..=nanos(end + RACY);
        self.state
            .as_ref()
            .is_some_and(|s| near.contains(&s.modified) || near.contains(&s.changed))
    }
}

impl State {
    /// What `path` looks like now; `None` when it does not exist.
    fn of(path: &Path) -> Option<State> {
        fs::symlink_metadata(path).ok().map(|m| State {
            len: m.len(),
            modified: m.modified().map_or(0, nanos),
            changed: changed(&m),
        })
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

/// `build` applied to the scan of `roots`: the one cached in `dir` when it is current, else
/// a fresh one (then saved). Whether the cache is current takes a stat per path (20,000 for
/// 10,000 skills): the other cores start on them at once, this thread decodes and builds and
/// then takes its share of what is left, and a result built from a stale cache is dropped.
pub(crate) fn load<T>(dir: &Path, roots: &[SkillRoot], build: impl Fn(Scan) -> T) -> T {
    let file = dir.join(format!("{}{}{}", INDEX.0, key(roots), INDEX.1));
    let _span = tracing::debug_span!("index_cache", file = %file.display()).entered();
    if let Some(cached) = Cached::open(&file) {
        let stamps = &cached.head.stamps;
        let next = AtomicUsize::new(0);
        let helpers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(2, 4) - 1);
        let built = std::thread::scope(|scope| {
            let checks: Vec<_> = (0..helpers)
                .map(|_| scope.spawn(|| first_changed(stamps, &next)))
                .collect();
            let built = cached.scan(roots.len()).map(&build);
            // A checker that panicked counts as a stale cache.
            let stale = first_changed(stamps, &next).or_else(|| {
                checks
                    .into_iter()
                    .find_map(|check| check.join().unwrap_or(stamps.first()))
            });
            match stale {
                Some(stamp) => {
                    tracing::debug!(changed = %stamp.path.display(), "index cache stale");
                    None
                }
                None => built,
            }
        });
        if let Some(built) = built {
            tracing::debug!("index cache hit");
            return built;
        }
    }
    build(fresh(dir, &file, roots))
}

/// The first changed stamp among the blocks of `stamps` this caller takes from `next`, the
/// cursor every checker shares (so a checker that starts late takes what is left).
fn first_changed<'a>(stamps: &'a [Stamp], next: &AtomicUsize) -> Option<&'a Stamp> {
    const BLOCK: usize = 64;
    loop {
        let start = next.fetch_add(BLOCK, Ordering::Relaxed);
        let block = stamps.get(start..stamps.len().min(start + BLOCK))?;
        if let Some(stale) = block.iter().find(|s| !s.is_current()) {
            next.store(stamps.len(), Ordering::Relaxed); // the others stop at their next block
            return Some(stale);
        }
    }
}

/// Scan `roots` now and save the scan in `file`, unless a file changed too recently to tell.
fn fresh(dir: &Path, file: &Path, roots: &[SkillRoot]) -> Scan {
    let start = SystemTime::now();
    let mut scan = Scan::run(roots);
    let stamps: Vec<Stamp> = roots
        .iter()
        .map(|r| r.path.as_path())
        .chain(scan.watched.iter().map(PathBuf::as_path))
        .map(Stamp::now)
        .collect();
    let end = SystemTime::now();
    if stamps.iter().any(|s| s.is_racy(start, end)) {
        tracing::debug!("index cache not saved: a file changed in the last seconds");
        return scan;
    }
    if let Err(e) = write(dir, file, stamps, &mut scan) {
        tracing::debug!("index cache not saved: {e}");
    }
    scan
}

/// One cache file per list of roots (with their tiers and priorities), and per format.
fn key(roots: &[SkillRoot]) -> String {
    hex_key(format!("{FORMAT} {} {roots:?}", env!("CARGO_PKG_VERSION")).as_bytes())
}

fn hex_key(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The words ranker of `skills` (an index's, in its order): the one saved in `dir` for exactly
/// these skills when it reads back whole, else a new one (then saved). The file is named by
/// the skills' file hashes, so it can only be stale by being damaged, and a damaged or foreign
/// one is rebuilt. Reading it back is a copy and a bounds check; building it reads every body
/// (`skills match` over 650 real skills: 70-100 ms as a whole process, 10 ms with the file).
pub(crate) fn ranker(dir: &Path, skills: &[Skill]) -> Ranker {
    let mut key = format!("{} {}", rank::recipe(), env!("CARGO_PKG_VERSION"));
    for skill in skills {
        key.push_str(if skill.disable_model_invocation { " -" } else { " " });
        key.push_str(&skill.hash);
    }
    let file = dir.join(format!("{}{}{}", RANKER.0, hex_key(key.as_bytes()), RANKER.1));
    let _span = tracing::debug_span!("ranker_cache", file = %file.display()).entered();
    let saved = ctxkit::files::open_regular(&file).ok().and_then(|f| {
        let mut bytes = Vec::new();
        f.take(MAX_CACHE_BYTES).read_to_end(&mut bytes).ok()?;
        Ranker::read(&bytes, skills.len()).or_else(|| {
            tracing::debug!("ranker cache unreadable; rebuilding");
            None
        })
    });
    if let Some(ranker) = saved {
        tracing::debug!("ranker cache hit");
        return ranker;
    }
    let ranker = Ranker::new(skills);
    let saved = persist(dir, &file, RANKER, |out| out.write_all(&ranker.write()));
    if let Err(e) = saved {
        tracing::debug!("ranker cache not saved: {e}");
    }
    ranker
}

/// A cache file of this format and version, its head decoded and the rest still bytes.
struct Cached {
    file: Arc<fs::File>,
    /// The file's length.
    len: u64,
    head: Head,
    meta: Vec<u8>,
    /// Where the bodies start.
    base: u64,
}

impl Cached {
    /// The file, when it is readable, whole and of this format and version.
    fn open(path: &Path) -> Option<Cached> {
        let mut file = fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let mut lengths = [0u8; 24];
        file.read_exact(&mut lengths).ok()?;
        let head_len = u64::from_le_bytes(lengths[8..16].try_into().ok()?);
        let meta_len = u64::from_le_bytes(lengths[16..].try_into().ok()?);
        let both = head_len.checked_add(meta_len)?;
        if &lengths[..8] != MAGIC || both > MAX_CACHE_BYTES.min(len.saturating_sub(24)) {
            return None;
        }
        let mut head = vec![0; head_len as usize];
        file.read_exact(&mut head).ok()?;
        let head: Head = decode(&head)?;
        if head.format != FORMAT || head.version != env!("CARGO_PKG_VERSION") {
            return None;
        }
        let mut meta = vec![0; meta_len as usize];
        file.read_exact(&mut meta).ok()?;
        Some(Cached {
            file: Arc::new(file),
            len,
            head,
            meta,
            base: 24 + both,
        })
    }

    /// The scan of `roots` roots, its bodies left in the file until used. A scan a parse could
    /// not have produced (a root out of range, a body over the file cap, more triggers than a
    /// skill may have) is refused like any damaged file.
    fn scan(&self, roots: usize) -> Option<Scan> {
        let Meta { mut scan, bodies } = decode(&self.meta)?;
        let fits = |&(offset, n): &(u64, usize)| {
            n as u64 <= MAX_FILE_BYTES
                && offset
                    .checked_add(n as u64)
                    .and_then(|end| end.checked_add(self.base))
                    .is_some_and(|end| end <= self.len)
        };
        let parsable = |s: &Scanned| {
            let t = &s.skill.triggers;
            s.root < roots
                && t.keywords.len() + t.verbs.len() <= MAX_TRIGGERS
                && t.patterns.len() <= MAX_PATTERNS
        };
        if bodies.len() != scan.skills.len() || !bodies.iter().all(fits) || !scan.skills.iter().all(parsable)
        {
            return None;
        }
        for (scanned, (offset, n)) in scan.skills.iter_mut().zip(bodies) {
            scanned.skill.body = Body::deferred(self.file.clone(), self.base + offset, n);
        }
        Some(scan)
    }
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
    rmp_serde::from_slice(bytes)
        .map_err(|e| tracing::debug!("index cache unreadable ({e}); rebuilding"))
        .ok()
}

/// Write the cache atomically: a reader sees the old file or the new one, never a part, and
/// two processes writing at once leave one whole file. The scan's bodies are lent to the
/// file's body section and given back.
fn write(dir: &Path, path: &Path, stamps: Vec<Stamp>, scan: &mut Scan) -> std::io::Result<()> {
    let texts: Vec<Body> = scan
        .skills
        .iter_mut()
        .map(|s| std::mem::take(&mut s.skill.body))
        .collect();
    let mut bodies = Vec::with_capacity(texts.len());
    let mut offset = 0u64;
    for text in &texts {
        bodies.push((offset, text.len()));
        offset += text.len() as u64;
    }
    let head = Head {
        format: FORMAT,
        version: env!("CARGO_PKG_VERSION").to_string(),
        stamps,
    };
    let meta = Meta {
        scan: std::mem::take(scan),
        bodies,
    };
    // Positional (struct fields as arrays): a third smaller and faster to read than named.
    // A scan's skills have no tools yet, so `Skill::tools` (skipped when empty, never read
    // back) is absent on both sides.
    let encoded = rmp_serde::to_vec(&head).and_then(|head| Ok((head, rmp_serde::to_vec(&meta)?)));
    *scan = meta.scan;
    let written = encoded
        .map_err(std::io::Error::other)
        .and_then(|(head, meta)| save(dir, path, &head, &meta, &texts));
    for (scanned, text) in scan.skills.iter_mut().zip(texts) {
        scanned.skill.body = text;
    }
    written
}

fn save(dir: &Path, path: &Path, head: &[u8], meta: &[u8], bodies: &[Body]) -> std::io::Result<()> {
    persist(dir, path, INDEX, |out| {
        out.write_all(MAGIC)?;
        out.write_all(&(head.len() as u64).to_le_bytes())?;
        out.write_all(&(meta.len() as u64).to_le_bytes())?;
        out.write_all(head)?;
        out.write_all(meta)?;
        for body in bodies {
            out.write_all(body.as_bytes())?;
        }
        Ok(())
    })
}

/// Write a cache file of `kind` whole by renaming a temporary file over `path`, then prune
/// that kind.
fn persist(
    dir: &Path,
    path: &Path,
    kind: (&str, &str),
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    let mut out = std::io::BufWriter::new(temp.as_file_mut());
    write(&mut out)?;
    out.flush()?;
    drop(out);
    temp.persist(path).map_err(|e| e.error)?;
    prune(dir, kind);
    Ok(())
}

/// Keep at most [`MAX_CACHE_FILES`] cache files of `kind` (name prefix and suffix), dropping
/// the least recently written.
fn prune(dir: &Path, (prefix, suffix): (&str, &str)) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache file whose body ranges run past the end (or past `u64::MAX`) is refused, not
    /// read and never a panic.
    #[test]
    fn body_ranges_past_the_file_are_refused() {
        let file = tempfile::tempfile().unwrap();
        for bodies in [vec![(0, 10)], vec![(u64::MAX - 4, 2)], vec![(u64::MAX, 0)]] {
            let scan = Scan {
                skills: vec![Scanned {
                    root: 0,
                    skill: Default::default(),
                    tools_file: false,
                }],
                ..Scan::default()
            };
            let cached = Cached {
                file: Arc::new(file.try_clone().unwrap()),
                len: 40,
                head: Head {
                    format: FORMAT,
                    version: String::new(),
                    stamps: Vec::new(),
                },
                meta: rmp_serde::to_vec(&Meta {
                    scan,
                    bodies: bodies.clone(),
                })
                .unwrap(),
                base: 32,
            };
            assert!(cached.scan(1).is_none(), "{bodies:?}");
        }
    }

    /// A scan no parse could produce is refused: a skill of a root that is not there, or with
    /// more triggers than a skill may have (whose numbers would not fit the matcher's).
    #[test]
    fn scans_no_parse_could_produce_are_refused() {
        let file = tempfile::tempfile().unwrap();
        let cached = |skill: crate::skill::Skill, root: usize| Cached {
            file: Arc::new(file.try_clone().unwrap()),
            len: 32,
            head: Head {
                format: FORMAT,
                version: String::new(),
                stamps: Vec::new(),
            },
            meta: rmp_serde::to_vec(&Meta {
                scan: Scan {
                    skills: vec![Scanned {
                        root,
                        skill,
                        tools_file: false,
                    }],
                    ..Scan::default()
                },
                bodies: vec![(0, 0)],
            })
            .unwrap(),
            base: 32,
        };
        assert!(
            cached(Default::default(), 0).scan(1).is_some(),
            "a sound scan is used"
        );
        assert!(
            cached(Default::default(), 1).scan(1).is_none(),
            "root out of range"
        );
        let mut many = crate::skill::Skill::default();
        many.triggers.keywords = (0..70_000).map(|n| format!("k{n}")).collect();
        assert!(cached(many, 0).scan(1).is_none(), "70,000 triggers");
    }
}
