//! What the provider, the extractor, the learner and the hook see of a store, whichever
//! backend keeps the memories, one trait per concern: [`MemoryStore`] (memories, with
//! [`RunStore`] and [`LearnedSkillStore`] as supertraits, so an `Arc<dyn MemoryStore>` still
//! reaches every method) and [`Maintenance`] (upkeep).

use async_trait::async_trait;

use crate::error::{MemoryError, Result};
use crate::learned::{LearnedChange, LearnedSkill};
use crate::transfer::{ExportRecord, ImportReport};
use crate::types::*;

/// What happened in runs: episodic records and the persisted `project:` state of a thread.
/// Every write refuses text that looks like a secret ([`MemoryError::Secret`]).
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Record what happened in a run.
    async fn add_episode(&self, record: NewEpisodicRecord) -> Result<EpisodicRecord>;
    /// The latest episodic records of a project, newest first.
    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>>;
    /// Persist a `project:` state value, so the next session of the project starts with it.
    async fn set_state(&self, project: &str, key: &str, value: serde_json::Value) -> Result<()>;
    /// Remove a persisted state value; true when it existed.
    async fn remove_state(&self, project: &str, key: &str) -> Result<bool>;
    /// Every persisted `project:` state value of a project.
    async fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>>;
}

/// The project's learned skills (the library `ctxkit-learn` keeps), each changed by one rule ([`LearnedChange`]) in one transaction. The defaults keep none, so a store that
/// does not keep them implements it with an empty `impl`.
#[async_trait]
pub trait LearnedSkillStore: Send + Sync {
    /// The project's learned skills (every status), by name. The default keeps none.
    async fn learned_skills(&self, project: &str) -> Result<Vec<LearnedSkill>> {
        let _ = project;
        Ok(Vec::new())
    }

    /// Change one learned skill of `project` atomically (read, [`LearnedChange`] applied,
    /// written in one transaction); returns it as stored, `None` once removed. The default
    /// refuses: a store that keeps learned skills overrides both methods.
    async fn change_learned_skill(
        &self,
        project: &str,
        name: &str,
        change: LearnedChange,
    ) -> Result<Option<LearnedSkill>> {
        let _ = (project, name, change);
        Err(MemoryError::Invalid(
            "this memory store does not keep learned skills".into(),
        ))
    }
}

/// Where memories live. Implement it (and its supertraits [`RunStore`] and
/// [`LearnedSkillStore`]) to put them elsewhere (a shared server database); the provider, the
/// extractor and the hook only see this trait.
///
/// The required methods are what a backend has to own: each is one atomic change or one read
/// of its rows, and the ones that compare texts (`upsert`, `search`, `forget`) rank with the
/// document frequencies it keeps beside its index. The provided methods are conveniences
/// built on them, which a backend may override with a faster equivalent.
///
/// Every write refuses text that looks like a secret ([`MemoryError::Secret`]), checking each
/// field as given; history and undo only ever see the entries of the project they are given.
#[async_trait]
pub trait MemoryStore: RunStore + LearnedSkillStore {
    /// Add several memories atomically: all are stored or none. Identical content in the same
    /// project is [`MemoryError::Duplicate`].
    async fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>>;
    /// Merge into a memory more than 0.85 similar, else insert, else skip with a reason, so
    /// repeated extraction does not pile up near-duplicates.
    async fn upsert(&self, entry: NewMemoryEntry) -> Result<UpsertResult>;
    /// Change fields of a memory.
    async fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry>;
    /// A memory by id.
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>>;
    /// Memories of a project, filtered and paged.
    async fn list(&self, project: &str, options: ListOptions) -> Result<Vec<MemoryEntry>>;
    /// Relevant memories of a project, best first; counts an access to each unless the
    /// request says [`without_touch`](MemorySearchRequest::without_touch).
    async fn search(&self, request: MemorySearchRequest) -> Result<Vec<MemorySearchResult>>;
    /// Count an access to these memories (what a search does to what it returns).
    async fn touch(&self, ids: &[String]) -> Result<()>;
    /// Delete a memory, returning it.
    async fn delete(&self, id: &str) -> Result<MemoryEntry>;
    /// Delete the memories that best match a query ("forget that …"), returning them.
    async fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>>;
    /// Every change to a memory of `project`, oldest first.
    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>>;
    /// The latest changes in a project, newest first.
    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>>;
    /// Put a memory of `project` back as it was before one of the project's history entries;
    /// `None` when the undo deleted it (an undone insert).
    async fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>>;
    /// Everything of a project (or of all projects) as records, to move memories elsewhere.
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>>;
    /// Import records, optionally moving them into one project. Records are checked like any
    /// write; ones already present are skipped, and an id another project holds is re-minted.
    async fn import(&self, records: Vec<ExportRecord>, project: Option<&str>) -> Result<ImportReport>;

    /// Session-end upkeep of a project (seed 004 §3.2): decay importance, then delete what fell
    /// below `prune_below`. The default does nothing: a server database schedules its own.
    async fn maintain(&self, project: &str, prune_below: f32) -> Result<MaintenanceReport> {
        let _ = (project, prune_below);
        Ok(MaintenanceReport::default())
    }

    /// Add one memory: [`add_many`](Self::add_many) of one.
    async fn add(&self, entry: NewMemoryEntry) -> Result<MemoryEntry> {
        let mut added = self.add_many(vec![entry]).await?;
        added
            .pop()
            .ok_or_else(|| MemoryError::Invalid("the store added nothing".into()))
    }

    /// How many memories a project has: the length of an unbounded [`list`](Self::list).
    async fn count(&self, project: &str) -> Result<usize> {
        let all = ListOptions {
            limit: usize::MAX,
            ..ListOptions::default()
        };
        Ok(self.list(project, all).await?.len())
    }

    /// One history entry of `project` by its id, found in the project's whole
    /// [`project_history`](Self::project_history); `None` for another project's entry.
    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        Ok(self
            .project_history(project, usize::MAX)
            .await?
            .into_iter()
            .find(|h| h.id == history_id))
    }
}

/// The upkeep a memory database needs from time to time, beside [`MemoryStore`]: what
/// `ctxkit memory compact|reindex|stats|clear` run. Both stores have it; a command holds an
/// `Arc<dyn Maintenance>` whichever backend it opened.
#[async_trait]
pub trait Maintenance: MemoryStore {
    /// Whether writes are refused: reads work, searches do not count accesses, and every
    /// write fails with [`MemoryError::ReadOnly`].
    fn is_read_only(&self) -> bool;
    /// Delete every memory of a project (each recorded in the history), returning how many.
    async fn clear(&self, project: &str) -> Result<usize>;
    /// Lower the importance of memories not accessed lately, `importance × 0.95^(days / 7)`,
    /// so stale memories sink below fresh ones; returns how many changed.
    async fn decay(&self, project: &str) -> Result<usize>;
    /// Delete memories below an importance (which must lie in 0.0-1.0); returns how many.
    async fn prune(&self, project: &str, min_importance: f32) -> Result<usize>;
    /// Merge memories more than 0.90 similar into the most important of them; returns how
    /// many were merged away.
    async fn compact(&self, project: &str) -> Result<usize>;
    /// Give up to `limit` memories of a project that have no vector of the model given to
    /// [`OpenOptions::embeddings`](crate::OpenOptions::embeddings) (written before it was
    /// configured, or by another model) their vector; returns how many it gave one, 0 once
    /// every memory has one. Call it until it returns 0 to reindex a project.
    async fn embed_missing(&self, project: &str, limit: usize) -> Result<usize>;
    /// Store the terms of up to `limit` memories of a project that were written before this
    /// version stored each memory's terms with it; returns how many, 0 once every memory has
    /// them. Until then a search tokenizes those memories when it reads them, as before (the
    /// same results, a little slower). Call it until it returns 0 after an upgrade.
    async fn fill_terms(&self, project: &str, limit: usize) -> Result<usize>;
    /// Counts for a project: memories by category, accesses, episodes, history entries.
    async fn stats(&self, project: &str) -> Result<MemoryStats>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::SqliteMemoryStore;

    /// A backend with only the required methods, so the provided ones run their defaults.
    struct RequiredOnly(SqliteMemoryStore);

    #[async_trait]
    impl RunStore for RequiredOnly {
        async fn add_episode(&self, record: NewEpisodicRecord) -> Result<EpisodicRecord> {
            self.0.add_episode(record).await
        }
        async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
            self.0.episodes(project, limit).await
        }
        async fn set_state(&self, project: &str, key: &str, value: serde_json::Value) -> Result<()> {
            self.0.set_state(project, key, value).await
        }
        async fn remove_state(&self, project: &str, key: &str) -> Result<bool> {
            self.0.remove_state(project, key).await
        }
        async fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
            self.0.state_entries(project).await
        }
    }

    impl LearnedSkillStore for RequiredOnly {}

    #[async_trait]
    impl MemoryStore for RequiredOnly {
        async fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
            self.0.add_many(entries).await
        }
        async fn upsert(&self, entry: NewMemoryEntry) -> Result<UpsertResult> {
            self.0.upsert(entry).await
        }
        async fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
            self.0.update(id, update).await
        }
        async fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
            self.0.get(id).await
        }
        async fn list(&self, project: &str, options: ListOptions) -> Result<Vec<MemoryEntry>> {
            self.0.list(project, options).await
        }
        async fn search(&self, request: MemorySearchRequest) -> Result<Vec<MemorySearchResult>> {
            self.0.search(request).await
        }
        async fn touch(&self, ids: &[String]) -> Result<()> {
            self.0.touch(ids).await
        }
        async fn delete(&self, id: &str) -> Result<MemoryEntry> {
            self.0.delete(id).await
        }
        async fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
            self.0.forget(project, query).await
        }
        async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
            self.0.history(project, memory_id).await
        }
        async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
            self.0.project_history(project, limit).await
        }
        async fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>> {
            self.0.undo(project, history_id).await
        }
        async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
            self.0.export(project).await
        }
        async fn import(&self, records: Vec<ExportRecord>, project: Option<&str>) -> Result<ImportReport> {
            self.0.import(records, project).await
        }
    }

    #[tokio::test]
    async fn the_provided_methods_answer_like_the_sqlite_ones() {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap();
        let plain = RequiredOnly(sqlite.clone());
        let fact = |content: &str| NewMemoryEntry::new("/p", MemoryCategory::Fact, content);

        let a = plain.add(fact("Deploys happen on Fridays")).await.unwrap();
        assert_eq!(sqlite.get(&a.id).await.unwrap(), Some(a.clone()));
        let dup = plain.add(fact("Deploys happen on Fridays")).await.unwrap_err();
        assert!(matches!(dup, MemoryError::Duplicate { .. }), "{dup:?}");
        let secret = plain.add(fact(&format!("password={}", "hunter22"))).await;
        assert!(matches!(secret, Err(MemoryError::Secret { .. })), "{secret:?}");
        sqlite.add(fact("The API lives in src/api")).await.unwrap();
        sqlite
            .add(NewMemoryEntry::new("/q", MemoryCategory::Fact, "Another project"))
            .await
            .unwrap();

        assert_eq!(plain.count("/p").await.unwrap(), 2);
        assert_eq!(
            plain.count("/p").await.unwrap(),
            sqlite.count("/p").await.unwrap()
        );
        assert_eq!(plain.count("/nowhere").await.unwrap(), 0);

        let latest = sqlite.project_history("/p", 1).await.unwrap().remove(0);
        for project in ["/p", "/q"] {
            assert_eq!(
                plain.history_entry(project, latest.id).await.unwrap(),
                sqlite.history_entry(project, latest.id).await.unwrap(),
            );
        }
        assert_eq!(
            plain.history_entry("/p", latest.id).await.unwrap(),
            Some(latest.clone())
        );
        assert_eq!(plain.history_entry("/q", latest.id).await.unwrap(), None);
    }
}
