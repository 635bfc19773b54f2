//! The backends the store suite runs against, behind one face: the [`MemoryStore`] trait and
//! the maintenance both stores have.
#![allow(dead_code)]

pub(crate) mod pg;

use std::sync::Arc;

use ctxkit_memory::records::MemoryStats;
#[cfg(feature = "postgres")]
use ctxkit_memory::PostgresStore;
use ctxkit_memory::{Maintenance, ManualClock, MemoryStore, OpenOptions, Result, SqliteMemoryStore};

/// Noon on 14 November 2023 (UTC): where every test's clock starts.
pub(crate) const START: i64 = 1_700_000_000_000;

/// A store under test, with its clock.
pub(crate) struct Backend {
    pub store: Arc<dyn MemoryStore>,
    pub clock: ManualClock,
    kind: Kind,
    /// The SQLite file or the PostgreSQL URL.
    location: String,
    /// Keeps a SQLite file's folder alive.
    _dir: Option<std::sync::Arc<tempfile::TempDir>>,
}

enum Kind {
    Sqlite(SqliteMemoryStore),
    #[cfg(feature = "postgres")]
    Postgres(PostgresStore),
}

impl Backend {
    /// A fresh SQLite store.
    pub(crate) fn sqlite() -> Backend {
        Self::sqlite_with(OpenOptions::default())
    }

    /// A fresh SQLite store opened with `options` (and the test clock).
    pub(crate) fn sqlite_with(options: OpenOptions) -> Backend {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let location = dir.path().join("memory.db").to_string_lossy().into_owned();
        let clock = ManualClock::new(START);
        let store = SqliteMemoryStore::open_with(&location, options.clock(clock.clone())).unwrap();
        Backend {
            store: Arc::new(store.clone()),
            clock,
            kind: Kind::Sqlite(store),
            location,
            _dir: Some(dir),
        }
    }

    /// A store on a fresh database of the test cluster; `None` when PostgreSQL is missing.
    #[cfg(feature = "postgres")]
    pub(crate) async fn postgres() -> Option<Backend> {
        Self::postgres_with(OpenOptions::default()).await
    }

    /// A store on a fresh database of the test cluster opened with `options`.
    #[cfg(feature = "postgres")]
    pub(crate) async fn postgres_with(options: OpenOptions) -> Option<Backend> {
        let url = pg::cluster()?.database();
        let clock = ManualClock::new(START);
        let store = PostgresStore::connect_with(&url, options.clock(clock.clone()))
            .await
            .unwrap();
        Some(Backend {
            store: Arc::new(store.clone()),
            clock,
            kind: Kind::Postgres(store),
            location: url,
            _dir: None,
        })
    }

    /// Another store on the same database, opened with `options` (as another process
    /// configured otherwise would), on the same clock.
    pub(crate) async fn reopen_with(&self, options: OpenOptions) -> Backend {
        let options = options.clock(self.clock.clone());
        let kind = match &self.kind {
            Kind::Sqlite(_) => Kind::Sqlite(SqliteMemoryStore::open_with(&self.location, options).unwrap()),
            #[cfg(feature = "postgres")]
            Kind::Postgres(_) => Kind::Postgres(
                PostgresStore::connect_with(&self.location, options)
                    .await
                    .unwrap(),
            ),
        };
        let store: Arc<dyn MemoryStore> = match &kind {
            Kind::Sqlite(s) => Arc::new(s.clone()),
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => Arc::new(s.clone()),
        };
        Backend {
            store,
            clock: self.clock.clone(),
            kind,
            location: self.location.clone(),
            _dir: self._dir.clone(),
        }
    }

    /// The same store, as the agent's session store.
    pub(crate) fn sessions(&self) -> Arc<dyn ctxkit::SessionStore> {
        match &self.kind {
            Kind::Sqlite(s) => Arc::new(s.clone()),
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => Arc::new(s.clone()),
        }
    }

    pub(crate) async fn embed_missing(&self, project: &str, limit: usize) -> Result<usize> {
        match &self.kind {
            Kind::Sqlite(s) => s.embed_missing(project, limit).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.embed_missing(project, limit).await,
        }
    }

    /// Another store on the same database (another process would see the same).
    pub(crate) async fn reopen(&self) -> Arc<dyn MemoryStore> {
        match &self.kind {
            Kind::Sqlite(s) => Arc::new(s.clone()),
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => Arc::new(s.clone()),
        }
    }

    pub(crate) async fn decay(&self, project: &str) -> Result<usize> {
        match &self.kind {
            Kind::Sqlite(s) => s.decay(project).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.decay(project).await,
        }
    }

    pub(crate) async fn prune(&self, project: &str, min: f32) -> Result<usize> {
        match &self.kind {
            Kind::Sqlite(s) => s.prune(project, min).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.prune(project, min).await,
        }
    }

    pub(crate) async fn compact(&self, project: &str) -> Result<usize> {
        match &self.kind {
            Kind::Sqlite(s) => s.compact(project).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.compact(project).await,
        }
    }

    pub(crate) async fn clear(&self, project: &str) -> Result<usize> {
        match &self.kind {
            Kind::Sqlite(s) => s.clear(project).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.clear(project).await,
        }
    }

    pub(crate) async fn stats(&self, project: &str) -> Result<MemoryStats> {
        match &self.kind {
            Kind::Sqlite(s) => s.stats(project).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(s) => s.stats(project).await,
        }
    }
}
