//! What a session was already sent, so a skill goes into the conversation once, not with every
//! prompt. One small JSON file per session in `<cache>/sessions/`; it is a cache: a missing,
//! unreadable or corrupt file only means skills are sent again.
//!
//! The session id comes from the event and is hostile input: it becomes a file name only
//! through [`file_name`] (safe characters, bounded length, a hash when anything was changed),
//! so `../../x` or `/etc/passwd` names a file inside the sessions folder like any other id.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most session files kept; the least recently written go first.
const MAX_SESSIONS: usize = 256;
/// The most bytes read from one state file.
const MAX_STATE_BYTES: u64 = 256 << 10;
/// The most skills remembered per session; past it the session starts over (re-sending is
/// harmless, an unbounded file is not).
const MAX_SKILLS: usize = 1024;
/// The longest session id kept as it is in a file name.
const MAX_ID_CHARS: usize = 64;

#[derive(Default, Serialize, Deserialize)]
struct Stored {
    /// Skill name → content hash of the version sent.
    skills: BTreeMap<String, String>,
}

/// One session's record of what was sent.
pub(super) struct SessionState {
    /// `None` when there is no session id or no cache folder: nothing is remembered.
    path: Option<PathBuf>,
    stored: Stored,
}

impl SessionState {
    /// The state of `session_id` under `cache` (`<cache>/sessions/`), empty when new or unreadable.
    pub(super) fn load(cache: Option<&Path>, session_id: Option<&str>) -> SessionState {
        let path = cache
            .zip(session_id)
            .map(|(cache, id)| cache.join("sessions").join(file_name(id)));
        let stored = path.as_deref().and_then(read).unwrap_or_default();
        SessionState { path, stored }
    }

    /// Forget everything sent: the model's context was emptied.
    pub(super) fn clear(&mut self) {
        self.stored.skills.clear();
    }

    /// Whether this version of the skill was already sent in this session.
    pub(super) fn was_sent(&self, name: &str, hash: &str) -> bool {
        self.stored.skills.get(name).is_some_and(|h| h == hash)
    }

    /// Record that this version of the skill was sent.
    pub(super) fn mark_sent(&mut self, name: &str, hash: &str) {
        if self.stored.skills.len() >= MAX_SKILLS && !self.stored.skills.contains_key(name) {
            self.stored.skills.clear();
        }
        self.stored.skills.insert(name.to_string(), hash.to_string());
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
        tmp.write_all(&serde_json::to_vec(&self.stored)?)?;
        tmp.persist(path).map_err(|e| e.error)?;
        prune(dir, path);
        Ok(())
    }
}

fn read(path: &Path) -> Option<Stored> {
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

    #[test]
    fn state_round_trips_and_a_corrupt_file_is_an_empty_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = SessionState::load(Some(dir.path()), Some("s1"));
        assert!(!state.was_sent("greet", "h1"));
        state.mark_sent("greet", "h1");
        state.save().unwrap();
        let again = SessionState::load(Some(dir.path()), Some("s1"));
        assert!(again.was_sent("greet", "h1"));
        assert!(!again.was_sent("greet", "h2"));
        std::fs::write(dir.path().join("sessions/s1.json"), "{garbage").unwrap();
        assert!(!SessionState::load(Some(dir.path()), Some("s1")).was_sent("greet", "h1"));
    }

    #[test]
    fn old_sessions_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_SESSIONS + 5 {
            let mut s = SessionState::load(Some(dir.path()), Some(&format!("s{i}")));
            s.mark_sent("k", "h");
            s.save().unwrap();
        }
        let count = std::fs::read_dir(dir.path().join("sessions")).unwrap().count();
        assert!(count <= MAX_SESSIONS, "{count}");
    }
}
