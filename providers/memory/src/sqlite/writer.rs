//! [`SqliteRows`]: a SQLite write transaction as the rows the shared writes
//! ([`crate::write`]) work on, and the poll that runs those writes on a blocking thread.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rusqlite::{params, OptionalExtension, Transaction};

use super::history::{self, row_to_history, HISTORY_COLS};
use super::index;
use super::rows::{self, select_entries, COLS};
use super::MemoryDb;
use crate::error::{MemoryError, Result};
use crate::retrieval::Vocabulary;
use crate::search;
use crate::sketches::Touched;
use crate::types::*;
use crate::vectors::Vectors;
use crate::write::{Change, Key, Row, Rows, Similar, Which};

/// One SQLite write transaction, with the store's caches.
pub(super) struct SqliteRows<'a> {
    db: &'a MemoryDb,
    tx: &'a Transaction<'a>,
    /// Whether this transaction changed anything yet: from then on, the in-memory index no
    /// longer matches what it sees, and reads bypass it.
    wrote: bool,
    /// The sentence vectors of what it writes, when a model is configured.
    vectors: Option<Vectors>,
    /// The rows whose sketches to bring up to date before the commit.
    touched: Touched,
}

impl<'a> SqliteRows<'a> {
    pub(super) fn new(db: &'a MemoryDb, tx: &'a Transaction<'a>, vectors: Option<Vectors>) -> Self {
        SqliteRows {
            db,
            tx,
            wrote: false,
            vectors,
            touched: Touched::default(),
        }
    }

    /// Bring the sketches of the rows written up to date: before the commit.
    pub(super) fn finish(self) -> Result<()> {
        super::sketches::sync(self.tx, &self.touched)
    }
}

/// Run a call whose every await is answered at once (SQLite's [`Rows`] never waits, nor does
/// a store that runs its calls inline), on the calling thread.
pub(super) fn run_now<T>(write: impl Future<Output = Result<T>>) -> Result<T> {
    match pin!(write).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => Err(MemoryError::Task(
            "a SQLite call waited for something; a write was rolled back".into(),
        )),
    }
}

impl Rows for SqliteRows<'_> {
    async fn load(&mut self, id: &str) -> Result<Option<Row>> {
        rows::load(self.tx, id)
    }

    async fn find_by_content(&mut self, project: &str, content: &str) -> Result<Option<String>> {
        rows::find_by_content(self.tx, project, content)
    }

    async fn select(&mut self, project: &str, which: Which<'_>) -> Result<Vec<Row>> {
        let sql = |condition: &str| {
            format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1{condition} ORDER BY num")
        };
        match which {
            Which::All => select_entries(self.tx, &sql(""), params![project]),
            Which::ImportanceBelow(min) => select_entries(
                self.tx,
                &sql(" AND importance < ?2"),
                params![project, f64::from(min)],
            ),
            Which::SupersededBy(id) => {
                select_entries(self.tx, &sql(" AND superseded_by = ?2"), params![project, id])
            }
        }
    }

    async fn similar(&mut self, project: &str, q: Similar<'_>) -> Result<Vec<(f32, Row)>> {
        if !self.wrote && !q.is_empty() {
            let tx = self.tx;
            let indexed = self.db.with_index(tx, project, |ix| {
                ix.most_similar(tx, q.terms, q.limit, q.floor, q.category)
            })?;
            if let Some(hits) = indexed {
                return Ok(hits.into_iter().map(|(sim, num, e)| (sim, (num, e))).collect());
            }
        }
        q.search(self.tx, project, self.db.inner.options.max_candidates())
            .await
    }

    async fn vocabulary(&mut self, project: &str, needed: &BTreeSet<String>) -> Result<Arc<Vocabulary>> {
        Ok(Arc::new(search::vocabulary(self.tx, project, needed).await?))
    }

    async fn id_is_free(&mut self, id: &str, project: Option<&str>) -> Result<bool> {
        rows::id_is_free(self.tx, id, project)
    }

    async fn episode_project(&mut self, id: &str) -> Result<Option<String>> {
        Ok(self
            .tx
            .prepare_cached("SELECT project_path FROM episodic_records WHERE id = ?1")?
            .query_row(params![id], |r| r.get(0))
            .optional()?)
    }

    async fn history_entry(&mut self, id: i64) -> Result<Option<HistoryEntry>> {
        Ok(self
            .tx
            .prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE id = ?1"
            ))?
            .query_row(params![id], row_to_history)
            .optional()?)
    }

    async fn insert(&mut self, entry: &MemoryEntry) -> Result<()> {
        self.wrote = true;
        let num = rows::insert_entry(self.tx, entry)?;
        if let Some(vectors) = &mut self.vectors {
            rows::set_vector(self.tx, num, &entry.content, Some(vectors.of(&entry.content)))?;
            self.touched.note(&entry.project_path, num);
        }
        Ok(())
    }

    async fn store(&mut self, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
        self.wrote = true;
        rows::store_row(self.tx, num, old, new)?;
        if crate::sketches::changes(old, new) {
            self.touched.note(&old.project_path, num);
            self.touched.note(&new.project_path, num);
        }
        if old.content != new.content {
            // A vector of the old text would be wrong: the new one, or none without a model.
            let vector = self.vectors.as_mut().map(|v| v.of(&new.content));
            rows::set_vector(self.tx, num, &new.content, vector)?;
        }
        Ok(())
    }

    async fn delete(&mut self, num: i64, old: &MemoryEntry) -> Result<()> {
        self.wrote = true;
        self.touched.note(&old.project_path, num);
        rows::delete_row(self.tx, num, old)
    }

    async fn delete_project(&mut self, project: &str) -> Result<()> {
        self.wrote = true;
        index::clear_project(self.tx, project)?;
        self.tx
            .prepare_cached("DELETE FROM project_memories WHERE project_path = ?1")?
            .execute(params![project])?;
        self.tx
            .prepare_cached("DELETE FROM memory_sketches WHERE project_path = ?1")?
            .execute(params![project])?;
        Ok(())
    }

    async fn record(&mut self, change: Change<'_>) -> Result<()> {
        history::record(self.tx, change)
    }

    async fn insert_history(&mut self, entry: &HistoryEntry) -> Result<()> {
        history::insert_history(self.tx, entry)
    }

    async fn insert_episode(&mut self, record: &EpisodicRecord) -> Result<()> {
        rows::insert_episode(self.tx, record)
    }

    async fn keyed(&mut self, at: Key<'_>) -> Result<Option<String>> {
        super::keyed::one(self.tx, at)
    }

    async fn set_keyed(&mut self, at: Key<'_>, value: Option<&str>, now: i64) -> Result<bool> {
        super::keyed::set(self.tx, at, value, now)
    }

    async fn fill_terms(&mut self, project: &str, limit: usize) -> Result<usize> {
        rows::fill_terms(self.tx, project, limit)
    }

    async fn set_vector(&mut self, project: &str, num: i64, content: &str) -> Result<()> {
        if let Some(vectors) = &mut self.vectors {
            rows::set_vector(self.tx, num, content, Some(vectors.of(content)))?;
            self.touched.note(project, num);
        }
        Ok(())
    }
}
