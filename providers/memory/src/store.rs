//! The async [`MemoryStore`] trait (seed 004 §4.3.1) and its SQLite implementation, which runs
//! every call of the blocking [`MemoryDb`] on tokio's blocking pool so the async runtime never
//! waits on disk.

use std::path::Path;

use async_trait::async_trait;

use crate::error::{MemoryError, Result};
use crate::sqlite::{ExportRecord, ImportReport, MemoryDb, OpenOptions};
use crate::types::*;

/// Where memories live. Implement it to put them elsewhere (a shared server database); the
/// provider, the extractor and the hook only see this trait.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Add a memory; identical content in the same project is an error.
    async fn add(&self, entry: NewMemoryEntry) -> Result<MemoryEntry>;
    /// Add several memories atomically.
    async fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>>;
    /// Change fields of a memory.
    async fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry>;
    /// Merge into a memory more than 0.85 similar, else insert, else skip with a reason.
    async fn upsert(&self, entry: NewMemoryEntry) -> Result<UpsertResult>;
    /// Relevant memories of a project, best first.
    async fn search(&self, request: MemorySearchRequest) -> Result<Vec<MemorySearchResult>>;
    /// Memories of a project, filtered and paged.
    async fn list(&self, project: &str, options: ListOptions) -> Result<Vec<MemoryEntry>>;
    /// A memory by id.
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>>;
    /// How many memories a project has.
    async fn count(&self, project: &str) -> Result<usize>;
    /// Delete a memory, returning it.
    async fn delete(&self, id: &str) -> Result<MemoryEntry>;
    /// Delete the memories that best match a query, returning them.
    async fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>>;
    /// Delete every memory of a project.
    async fn clear(&self, project: &str) -> Result<usize>;
    /// Decay importance by time without access.
    async fn decay(&self, project: &str) -> Result<usize>;
    /// Delete memories below an importance (which must lie in 0.0-1.0).
    async fn prune(&self, project: &str, min_importance: f32) -> Result<usize>;
    /// Merge memories more than 0.90 similar.
    async fn compact(&self, project: &str) -> Result<usize>;
    /// Counts for a project.
    async fn stats(&self, project: &str) -> Result<MemoryStats>;
    /// Count an access to these memories.
    async fn touch(&self, ids: &[String]) -> Result<()>;
    /// Every change to a memory of `project`, oldest first.
    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>>;
    /// One history entry of `project` by its id.
    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>>;
    /// The latest changes in a project, newest first.
    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>>;
    /// Put a memory of `project` back as it was before one of the project's history entries.
    async fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>>;
    /// Record what happened in a run.
    async fn add_episode(&self, record: NewEpisodicRecord) -> Result<EpisodicRecord>;
    /// The latest episodic records of a project.
    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>>;
    /// Persist a `project:` state value.
    async fn set_state(&self, project: &str, key: &str, value: serde_json::Value) -> Result<()>;
    /// Every persisted `project:` state value of a project.
    async fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>>;
    /// Everything of a project (or of all projects) as records.
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>>;
    /// Import records, optionally moving them into one project.
    async fn import(&self, records: Vec<ExportRecord>, project: Option<&str>) -> Result<ImportReport>;
}

/// The SQLite store behind the async trait. Clones share one [`MemoryDb`].
///
/// ```
/// use ctxkit_memory::{MemoryCategory, MemoryStore, NewMemoryEntry, SqliteMemoryStore};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = SqliteMemoryStore::open(dir.path().join("memory.db"))?;
/// let entry = store.add(NewMemoryEntry::new("/repo", MemoryCategory::Fact, "The app is Tauri 2 + React 18")).await?;
/// assert_eq!(store.get(&entry.id).await?.unwrap().content, entry.content);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SqliteMemoryStore {
    db: MemoryDb,
}

impl SqliteMemoryStore {
    /// Open (creating and migrating when needed) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(SqliteMemoryStore {
            db: MemoryDb::open(path)?,
        })
    }

    /// Open with options (clock, busy timeout, candidate limit).
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self> {
        Ok(SqliteMemoryStore {
            db: MemoryDb::open_with(path, options)?,
        })
    }

    /// The blocking core, for synchronous callers.
    pub fn db(&self) -> &MemoryDb {
        &self.db
    }

    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&MemoryDb) -> Result<T> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| MemoryError::Task(e.to_string()))?
    }
}

impl From<MemoryDb> for SqliteMemoryStore {
    fn from(db: MemoryDb) -> Self {
        SqliteMemoryStore { db }
    }
}

#[async_trait]
impl MemoryStore for SqliteMemoryStore {
    async fn add(&self, entry: NewMemoryEntry) -> Result<MemoryEntry> {
        self.blocking(move |db| db.add(entry)).await
    }
    async fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        self.blocking(move |db| db.add_many(entries)).await
    }
    async fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        let id = id.to_string();
        self.blocking(move |db| db.update(&id, update)).await
    }
    async fn upsert(&self, entry: NewMemoryEntry) -> Result<UpsertResult> {
        self.blocking(move |db| db.upsert(entry)).await
    }
    async fn search(&self, request: MemorySearchRequest) -> Result<Vec<MemorySearchResult>> {
        self.blocking(move |db| db.search(&request)).await
    }
    async fn list(&self, project: &str, options: ListOptions) -> Result<Vec<MemoryEntry>> {
        let project = project.to_string();
        self.blocking(move |db| db.list(&project, &options)).await
    }
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        let id = id.to_string();
        self.blocking(move |db| db.get(&id)).await
    }
    async fn count(&self, project: &str) -> Result<usize> {
        let project = project.to_string();
        self.blocking(move |db| db.count(&project)).await
    }
    async fn delete(&self, id: &str) -> Result<MemoryEntry> {
        let id = id.to_string();
        self.blocking(move |db| db.delete(&id)).await
    }
    async fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let (project, query) = (project.to_string(), query.to_string());
        self.blocking(move |db| db.forget(&project, &query)).await
    }
    async fn clear(&self, project: &str) -> Result<usize> {
        let project = project.to_string();
        self.blocking(move |db| db.clear(&project)).await
    }
    async fn decay(&self, project: &str) -> Result<usize> {
        let project = project.to_string();
        self.blocking(move |db| db.decay(&project)).await
    }
    async fn prune(&self, project: &str, min_importance: f32) -> Result<usize> {
        let project = project.to_string();
        self.blocking(move |db| db.prune(&project, min_importance)).await
    }
    async fn compact(&self, project: &str) -> Result<usize> {
        let project = project.to_string();
        self.blocking(move |db| db.compact(&project)).await
    }
    async fn stats(&self, project: &str) -> Result<MemoryStats> {
        let project = project.to_string();
        self.blocking(move |db| db.stats(&project)).await
    }
    async fn touch(&self, ids: &[String]) -> Result<()> {
        let ids = ids.to_vec();
        self.blocking(move |db| db.touch(&ids)).await
    }
    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
        let (project, id) = (project.to_string(), memory_id.to_string());
        self.blocking(move |db| db.history(&project, &id)).await
    }
    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        let project = project.to_string();
        self.blocking(move |db| db.history_entry(&project, history_id))
            .await
    }
    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
        let project = project.to_string();
        self.blocking(move |db| db.project_history(&project, limit)).await
    }
    async fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>> {
        let project = project.to_string();
        self.blocking(move |db| db.undo(&project, history_id)).await
    }
    async fn add_episode(&self, record: NewEpisodicRecord) -> Result<EpisodicRecord> {
        self.blocking(move |db| db.add_episode(record)).await
    }
    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        let project = project.to_string();
        self.blocking(move |db| db.episodes(&project, limit)).await
    }
    async fn set_state(&self, project: &str, key: &str, value: serde_json::Value) -> Result<()> {
        let (project, key) = (project.to_string(), key.to_string());
        self.blocking(move |db| db.set_state(&project, &key, &value))
            .await
    }
    async fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
        let project = project.to_string();
        self.blocking(move |db| db.state_entries(&project)).await
    }
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        let project = project.map(str::to_string);
        self.blocking(move |db| db.export(project.as_deref())).await
    }
    async fn import(&self, records: Vec<ExportRecord>, project: Option<&str>) -> Result<ImportReport> {
        let project = project.map(str::to_string);
        self.blocking(move |db| db.import(&records, project.as_deref()))
            .await
    }
}
