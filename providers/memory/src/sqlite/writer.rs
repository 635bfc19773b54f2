//! [`SqliteRows`]: a SQLite write transaction as the rows the shared writes
//! ([`crate::write`]) work on, and the poll that runs those writes on a blocking thread.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rusqlite::{params, OptionalExtension, Transaction};

use super::index;
use super::rows::{self, keywords_at, row_to_history, select_entries, COLS, HISTORY_COLS};
use super::{json_array, MemoryDb};
use crate::error::{MemoryError, Result};
use crate::retrieval::Vocabulary;
use crate::search;
use crate::sessions::SavedSession;
use crate::sketches::Touched;
use crate::text::MemoryTerms;
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
        run_now(crate::sketches::sync(self.tx, &self.touched))
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
        Ok(self
            .tx
            .prepare_cached("SELECT id FROM project_memories WHERE project_path = ?1 AND content = ?2")?
            .query_row(params![project, content], |r| r.get(0))
            .optional()?)
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

    /// Whether a memory may take `id`: no memory has it, and no history entry has it except
    /// (when `project` is given) history of that same project. A memory id names one memory of one
    /// project for the life of the database, so an undo in one project can never reach another's.
    async fn id_is_free(&mut self, id: &str, project: Option<&str>) -> Result<bool> {
        let in_rows = self
            .tx
            .prepare_cached("SELECT 1 FROM project_memories WHERE id = ?1")?
            .query_row(params![id], |_| Ok(()))
            .optional()?
            .is_some();
        if in_rows {
            return Ok(false);
        }
        let in_history = self.tx
            .prepare_cached(
                "SELECT 1 FROM memory_history WHERE memory_id = ?1 AND (?2 IS NULL OR project_path != ?2) LIMIT 1",
            )?
            .query_row(params![id, project], |_| Ok(()))
            .optional()?
            .is_some();
        Ok(!in_history)
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

    /// Append one history entry.
    async fn record(&mut self, change: Change<'_>) -> Result<()> {
        let memory = change.memory();
        self.tx.prepare_cached(
            "INSERT INTO memory_history (memory_id, project_path, action, before, after, related_id, reason, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            memory.id,
            memory.project_path,
            change.action.as_str(),
            snapshot(change.before),
            snapshot(change.after),
            change.related_id,
            change.reason,
            change.at
        ])?;
        Ok(())
    }

    /// Store an imported history entry under its own id when that id is free, else under a new one.
    async fn insert_history(&mut self, entry: &HistoryEntry) -> Result<()> {
        let taken = self
            .tx
            .prepare_cached("SELECT 1 FROM memory_history WHERE id = ?1")?
            .query_row(params![entry.id], |_| Ok(()))
            .optional()?
            .is_some();
        self.tx.prepare_cached(
            "INSERT INTO memory_history (id, memory_id, project_path, action, before, after, related_id, reason, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            (!taken).then_some(entry.id),
            entry.memory_id,
            entry.project_path,
            entry.action.as_str(),
            snapshot(entry.before.as_ref()),
            snapshot(entry.after.as_ref()),
            entry.related_id,
            entry.reason,
            entry.at
        ])?;
        Ok(())
    }

    async fn insert_episode(&mut self, record: &EpisodicRecord) -> Result<()> {
        self.tx.prepare_cached(
            "INSERT INTO episodic_records (id, project_path, session_id, record_type, task_summary, approach_summary,
                 outcome_summary, tools_used, keywords, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            record.id,
            record.project_path,
            record.session_id,
            record.record_type.as_str(),
            record.task_summary,
            record.approach_summary,
            record.outcome_summary,
            json_array(&record.tools_used),
            json_array(&record.keywords),
            record.created_at,
        ])?;
        Ok(())
    }

    /// One value.
    async fn keyed(&mut self, at: Key<'_>) -> Result<Option<String>> {
        let (table, key, value) = at.of.columns();
        Ok(self
            .tx
            .prepare_cached(&format!(
                "SELECT {value} FROM {table} WHERE project_path = ?1 AND {key} = ?2"
            ))?
            .query_row(params![at.project, at.key], |r| r.get(0))
            .optional()?)
    }

    /// Store a value at `now`, or (`None`) delete it; whether a row changed.
    async fn set_keyed(&mut self, at: Key<'_>, new: Option<&str>, now: i64) -> Result<bool> {
        let (table, key, value) = at.of.columns();
        let changed = match new {
            Some(new) => self.tx
                .prepare_cached(&format!(
                    "INSERT INTO {table}(project_path, {key}, {value}, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT(project_path, {key}) DO UPDATE SET {value} = excluded.{value}, updated_at = excluded.updated_at
                     WHERE {value} != excluded.{value}"
                ))?
                .execute(params![at.project, at.key, new, now])?,
            None => self.tx
                .prepare_cached(&format!("DELETE FROM {table} WHERE project_path = ?1 AND {key} = ?2"))?
                .execute(params![at.project, at.key])?,
        };
        Ok(changed > 0)
    }

    /// Store the terms of up to `limit` memories of a project written before terms were stored
    /// (see [`MemoryTerms`]), in row order; how many it stored. The table is walked by row number
    /// (`+project_path` keeps SQLite off the project's indexes, which would sort the project).
    async fn fill_terms(&mut self, project: &str, limit: usize) -> Result<usize> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let missing: Vec<(i64, String, Vec<String>)> = self
            .tx
            .prepare_cached(
                "SELECT num, content, keywords FROM project_memories
                 WHERE +project_path = ?1 AND content_terms IS NULL ORDER BY num LIMIT ?2",
            )?
            .query_map(params![project, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, keywords_at(r, 2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut store = self.tx.prepare_cached(
            "UPDATE project_memories SET content_terms = ?2, keyword_terms = ?3 WHERE num = ?1",
        )?;
        for (num, content, keywords) in &missing {
            let terms = MemoryTerms::of(content, keywords);
            let (content_terms, keyword_terms) = terms.stored();
            store.execute(params![num, content_terms, keyword_terms])?;
        }
        Ok(missing.len())
    }

    async fn set_vector(&mut self, project: &str, num: i64, content: &str) -> Result<()> {
        if let Some(vectors) = &mut self.vectors {
            rows::set_vector(self.tx, num, content, Some(vectors.of(content)))?;
            self.touched.note(project, num);
        }
        Ok(())
    }

    async fn set_session(&mut self, id: &str, saved: Option<&SavedSession>, now: i64) -> Result<bool> {
        let changed = match saved {
            Some(s) => self
                .tx
                .prepare_cached(
                    "INSERT INTO sessions (id, thread, turns, messages, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, turns = excluded.turns,
                         messages = excluded.messages, updated_at = excluded.updated_at",
                )?
                .execute(params![id, s.json, s.turns, s.messages, now])?,
            None => self
                .tx
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute(params![id])?,
        };
        Ok(changed > 0)
    }
}
