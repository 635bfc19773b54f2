//! What a session was already sent, so a skill or a memory goes into the conversation once,
//! not with every prompt. One small JSON file per session in `<cache>/sessions/` holding the
//! session's [`Sent`] record; it is a cache: a missing, unreadable or corrupt file only means
//! things are sent again.
//!
//! The session id comes from the event and is hostile input: it becomes a file name only
//! through [`file_name`] (safe characters, bounded length, a hash when anything was changed),
//! so `../../x` or `/etc/passwd` names a file inside the sessions folder like any other id.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ctxkit::Sent;

/// The most session files kept; the least recently written go first.
const MAX_SESSIONS: usize = 256;
/// The most bytes read from one state file.
const MAX_STATE_BYTES: u64 = 256 << 10;
/// The longest session id kept as it is in a file name.
const MAX_ID_CHARS: usize = 64;

/// One session's record of what was sent.
pub(super) struct SessionState {
    /// `None` when there is no session id or no cache folder: nothing is remembered.
    path: Option<PathBuf>,
    /// What was sent, item by item with its version (bounded by [`Sent`] itself).
    pub(super) sent: Sent,
}

impl SessionState {
    /// The state of `session_id` under `cache` (`<cache>/sessions/`), empty when new or unreadable.
    pub(super) fn load(cache: Option<&Path>, session_id: Option<&str>) -> SessionState {
        let path = cache
            .zip(session_id)
            .map(|(cache, id)| cache.join("sessions").join(file_name(id)));
        let sent = path.as_deref().and_then(read).unwrap_or_default();
        SessionState { path, sent }
    }

    /// Write the state atomically (a temporary file renamed over the old one), then drop the
    /// oldest sessions past [`MAX_SESSIONS`]. Without a session nothing is written.
    pub(super) fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&serde_json::to_vec(&self.sent)?)?;
        tmp.persist(path).map_err(|e| e.error)?;
        prune(dir, path);
        Ok(())
    }
}

fn read(path: &Path) -> Option<Sent> {
    // Only a regular file: a FIFO planted in the cache must not hang the hook.
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// A file name for a session id: ASCII letters, digits, `-` and `_` kept, at most
/// [`MAX_ID_CHARS`] of them; when anything was dropped or replaced, a hash of the whole id is
/// appended so two ids that clean to the same text stay apart.
pub(super) fn file_name(session_id: &str) -> String {
    let clean: String = session_id
        .chars()
        .take(MAX_ID_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean == session_id {
        return format!("{clean}.json");
    }
    let mut hasher = DefaultHasher::new();
    session_id.hash(&mut hasher);
    format!("{clean}-{:016x}.json", hasher.finish())
}

/// Remove the least recently written session files past [`MAX_SESSIONS`], never `keep`.
fn prune(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then_some(())?;
            Some((meta.modified().ok()?, e.path()))
        })
        .take(MAX_SESSIONS * 4)
        .collect();
    if files.len() <= MAX_SESSIONS {
        return;
    }
    files.sort();
    let excess = files.len() - MAX_SESSIONS;
    for (_, path) in files.into_iter().filter(|(_, p)| p != keep).take(excess) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_session_ids_become_plain_file_names() {
        assert_eq!(file_name("abc-123_X"), "abc-123_X.json");
        for id in ["../../x", "/etc/passwd", "a\0b", "..", "é", &"x".repeat(500)] {
            let name = file_name(id);
            assert!(
                !name.contains('/') && !name.contains('\\') && !name.contains('\0'),
                "{name}"
            );
            assert!(!name.starts_with(".."), "{name}");
            assert!(name.len() <= MAX_ID_CHARS + 22, "{name}");
        }
        assert_ne!(file_name("a/b"), file_name("a_b"));
    }

    /// What a session was sent: a skill `name` in version `hash`.
    fn sent(name: &str, hash: &str) -> Sent {
        let mut sent = Sent::default();
        let section = ctxkit::Section::per_message(ctxkit::SectionKind::SKILLS, "text")
            .with_versioned_items([(name.to_string(), hash.to_string())]);
        sent.record(&ctxkit::Context::new().with_section(section));
        sent
    }

    #[test]
    fn state_round_trips_and_a_corrupt_file_is_an_empty_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = SessionState::load(Some(dir.path()), Some("s1"));
        assert!(state.sent.is_empty());
        state.sent = sent("greet", "h1");
        state.save().unwrap();
        let again = SessionState::load(Some(dir.path()), Some("s1"));
        assert_eq!(again.sent, sent("greet", "h1"));
        std::fs::write(dir.path().join("sessions/s1.json"), "{garbage").unwrap();
        assert!(SessionState::load(Some(dir.path()), Some("s1")).sent.is_empty());
    }

    /// A record written before memories were recorded (skill name to hash) still reads.
    #[test]
    fn a_record_of_skills_alone_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        std::fs::write(
            dir.path().join("sessions/s1.json"),
            r#"{"skills":{"greet":"h1"}}"#,
        )
        .unwrap();
        assert_eq!(
            SessionState::load(Some(dir.path()), Some("s1")).sent,
            sent("greet", "h1")
        );
    }

    #[test]
    fn old_sessions_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_SESSIONS + 5 {
            let mut s = SessionState::load(Some(dir.path()), Some(&format!("s{i}")));
            s.sent = sent("k", "h");
            s.save().unwrap();
        }
        let count = std::fs::read_dir(dir.path().join("sessions")).unwrap().count();
        assert!(count <= MAX_SESSIONS, "{count}");
    }
}
