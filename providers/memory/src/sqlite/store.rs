//! [`SqliteMemoryStore`]: the async face of the blocking SQLite core, running every call on
//! tokio's blocking pool so the async runtime never waits on disk (unless
//! [`OpenOptions::blocking_pool`] says otherwise).

use std::path::Path;

use async_trait::async_trait;

use super::writer::run_now;
use super::MemoryDb;
use crate::backend::Backend;
use crate::decide::ReadRedactor;
use crate::error::{MemoryError, Result};
use crate::options::OpenOptions;
use crate::reads::Read;
use crate::search::Query;
use crate::types::*;
use crate::write::{Done, Op};

/// The SQLite store: one database file, shared by threads and processes. Clones share one
/// connection pool and its caches. Every call runs on tokio's blocking pool, so the async
/// runtime never waits on disk ([`OpenOptions::blocking_pool`] can run them on the caller's
/// thread instead).
///
/// Besides [`MemoryStore`](crate::MemoryStore), it has the upkeep of [`Maintenance`](crate::Maintenance)
/// (decay, prune, compact, clear, reindexing, stats).
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
    /// Every call runs on the caller's thread, whatever the options say.
    inline: bool,
}

impl SqliteMemoryStore {
    /// Open (creating and migrating when needed) the database at `path`. A database that
    /// exists but cannot be written is opened read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, OpenOptions::default())
    }

    /// Open with options (clock, busy timeout, candidate limit, search index, read-only).
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self> {
        Ok(SqliteMemoryStore {
            db: MemoryDb::open_with(path, options)?,
            inline: false,
        })
    }

    /// Whether the database was opened read-only (asked for, or because it can't be written):
    /// reads work, searches do not count accesses, writes fail with [`MemoryError::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        self.db.is_read_only()
    }

    /// Build the in-memory search index of a project now, whatever
    /// [`SearchIndex`](crate::options::SearchIndex) says, so the next search is fast.
    pub async fn warm_up(&self, project: &str) -> Result<()> {
        let project = project.to_string();
        self.blocking("warm_up", move |db| db.warm_up(&project)).await
    }

    /// Run one store call on tokio's blocking pool (or, when the options say so, right here),
    /// in a span naming it.
    async fn blocking<T, F>(&self, call: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&MemoryDb) -> Result<T> + Send + 'static,
    {
        let span = tracing::debug_span!("memory.sqlite", call);
        if self.inline || !self.db.on_blocking_pool() {
            return span.in_scope(|| f(&self.db));
        }
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || span.in_scope(|| f(&db)))
            .await
            .map_err(|e| MemoryError::Task(e.to_string()))?
    }
}

#[async_trait]
impl Backend for SqliteMemoryStore {
    fn is_read_only(&self) -> bool {
        self.db.is_read_only()
    }
    fn redactor(&self) -> &ReadRedactor {
        &self.db.inner.redacted
    }
    fn options(&self) -> &OpenOptions {
        &self.db.inner.options
    }
    async fn write(&self, call: &'static str, op: Op) -> Result<Done> {
        self.blocking(call, move |db| db.write_op(&op)).await
    }
    async fn read(&self, call: &'static str, read: Read) -> Result<Done> {
        self.blocking(call, move |db| db.read(|tx| run_now(read.run(tx))))
            .await
    }
    async fn rank(&self, query: Query) -> Result<Vec<MemorySearchResult>> {
        self.blocking("search", move |db| db.rank(query)).await
    }
    async fn touch(&self, ids: &[String]) -> Result<()> {
        let ids = ids.to_vec();
        self.blocking("touch", move |db| db.touch(&ids)).await
    }
}

crate::backend::session_store!(SqliteMemoryStore);

impl MemoryDb {
    /// The store over this database, running every call on the caller's thread (driven by
    /// [`run_now`]): for the tests and the evaluation of the core.
    pub(crate) fn inline(&self) -> SqliteMemoryStore {
        SqliteMemoryStore {
            db: self.clone(),
            inline: true,
        }
    }

    /// The store's `get`, on this thread.
    pub(crate) fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        run_now(crate::MemoryStore::get(&self.inline(), id))
    }

    /// The store's search, on this thread.
    pub(crate) fn search(&self, request: &MemorySearchRequest) -> Result<Vec<MemorySearchResult>> {
        run_now(crate::MemoryStore::search(&self.inline(), request.clone()))
    }
}
