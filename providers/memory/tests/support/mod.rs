//! The backends the store suite runs against, behind one face: the [`MemoryStore`] trait and
//! the maintenance both stores have.
#![allow(dead_code)]

pub(crate) mod pg;

use std::sync::Arc;

use ctxkit_memory::records::MemoryStats;
#[cfg(feature = "postgres")]
use ctxkit_memory::PostgresStore;
use ctxkit_memory::{ManualClock, MemoryStore, OpenOptions, Result, SqliteMemoryStore};

/// Noon on 14 November 2023 (UTC): where every test's clock starts.
pub(crate) const START: i64 = 1_700_000_000_000;

/// A store under test, with its clock.
pub(crate) struct Backend {
    pub store: Arc<dyn MemoryStore>,
    pub clock: ManualClock,
    kind: Kind,
    /// Keeps a SQLite file's folder alive.
    _dir: Option<tempfile::TempDir>,
}

enum Kind {
    Sqlite(SqliteMemoryStore),
    #[cfg(feature = "postgres")]
    Postgres(PostgresStore),
}

impl Backend {
    /// A fresh SQLite store.
    pub(crate) fn sqlite() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(START);
        let store = SqliteMemoryStore::open_with(
            dir.path().join("memory.db"),
            OpenOptions::default().clock(clock.clone()),
        )
        .unwrap();
        Backend {
            store: Arc::new(store.clone()),
            clock,
            kind: Kind::Sqlite(store),
            _dir: Some(dir),
        }
    }

    /// A store on a fresh database of the test cluster; `None` when PostgreSQL is missing.
    #[cfg(feature = "postgres")]
    pub(crate) async fn postgres() -> Option<Backend> {
        let url = pg::cluster()?.database();
        let clock = ManualClock::new(START);
        let store = PostgresStore::connect_with(&url, OpenOptions::default().clock(clock.clone()))
            .await
            .unwrap();
        Some(Backend {
            store: Arc::new(store.clone()),
            clock,
            kind: Kind::Postgres(store),
            _dir: None,
        })
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
