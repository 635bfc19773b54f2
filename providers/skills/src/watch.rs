//! Hot reload for long-lived processes: a thread that looks at the skill roots every few
//! seconds (through the index cache, an unchanged tree costs a few `stat` calls) and swaps in
//! a changed index once the files have settled, so a half-saved edit is not what loads.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::index::{SkillIndex, SkillLibrary};

/// How long a change must hold before it is swapped in: editors save in several writes.
const SETTLE: Duration = Duration::from_millis(300);

impl SkillLibrary {
    /// Check the roots every `every` on a thread of its own and swap in an index that changed
    /// (a skill added, removed, edited or broken — a broken edit keeps the last good version,
    /// see [`reload`](Self::reload)), then call `on_change` with it. The thread ends when the
    /// library is dropped.
    ///
    /// A thread rather than a task: hosts read their input with blocking calls, and the
    /// reload itself is blocking file-system work.
    pub fn watch(self: &Arc<Self>, every: Duration, on_change: impl Fn(&SkillIndex) + Send + 'static) {
        let library: Weak<SkillLibrary> = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("ctxkit-skills-watch".into())
            .spawn(move || loop {
                std::thread::sleep(every);
                let Some(library) = library.upgrade() else { return };
                if library.load_if_changed().is_none() {
                    continue;
                }
                std::thread::sleep(SETTLE);
                if let Some(index) = library.reload_if_changed() {
                    tracing::info!(skills = index.len(), "skills changed; the new index is in use");
                    on_change(&index);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("skills will not be reloaded: the watcher thread did not start ({e})");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::discover::SkillRoot;
    use crate::skill::Source;

    #[test]
    fn a_watched_library_swaps_in_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("a/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(&skill, "---\nname: a\ndescription: A\n---\nONE\n").unwrap();
        let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
            dir.path(),
            Source::Project,
        )]));
        let (tx, rx) = mpsc::channel();
        library.watch(Duration::from_millis(50), move |index| {
            let _ = tx.send(index.get("a").map(|s| s.body.as_str().trim().to_string()));
        });
        std::fs::write(&skill, "---\nname: a\ndescription: A\n---\nTWO\n").unwrap();
        let seen = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(seen.as_deref(), Some("TWO"));
        assert_eq!(library.snapshot().get("a").unwrap().body.as_str().trim(), "TWO");
    }
}
