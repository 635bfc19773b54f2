//! [`PgRows`]: a PostgreSQL write transaction as the rows the shared writes
//! ([`crate::write`]) work on.
//!
//! Document frequencies and memory counts are gathered as rows change and written in one
//! statement each ([`TermCounts`]) before anything reads them and before the commit: written
//! row by row, a large import or prune turns quadratic, as every update of a counter row the
//! transaction has already updated walks the versions it left behind. New rows' postings are
//! gathered the same way ([`Postings`]), written before a search reads them or a row they
//! belong to changes: one statement per import batch instead of one per memory.

use std::collections::BTreeSet;
use std::sync::Arc;

use deadpool_postgres::Transaction;

use super::rows::{
    self, json_list, keywords_json, select_entries, select_history, Postings, TermCounts, COLS, EPISODE_COLS,
    HISTORY_COLS,
};
use super::PostgresStore;
use crate::error::Result;
use crate::postings;
use crate::retrieval::Vocabulary;
use crate::search;
use crate::sessions::SavedSession;
use crate::sketches::Touched;
use crate::text::MemoryTerms;
use crate::types::*;
use crate::vectors::Vectors;
use crate::write::{Change, Key, Row, Rows, Similar, Which};

/// One PostgreSQL write transaction, holding its projects' locks.
pub(super) struct PgRows<'a> {
    store: &'a PostgresStore,
    tx: &'a Transaction<'a>,
    counts: TermCounts,
    postings: Postings,
    /// The sentence vectors of what it writes, when a model is configured.
    vectors: Option<Vectors>,
    /// The rows whose sketches to bring up to date before the commit.
    touched: Touched,
}

impl<'a> PgRows<'a> {
    pub(super) fn new(store: &'a PostgresStore, tx: &'a Transaction<'a>, vectors: Option<Vectors>) -> Self {
        PgRows {
            store,
            tx,
            counts: TermCounts::default(),
            postings: Postings::default(),
            vectors,
            touched: Touched::default(),
        }
    }

    /// Write the gathered counts, postings and sketches: before reading them, and before the
    /// commit.
    pub(super) async fn flush(&mut self) -> Result<()> {
        self.flush_postings().await?;
        std::mem::take(&mut self.counts).write(self.tx).await?;
        let touched = std::mem::take(&mut self.touched);
        crate::sketches::sync(&super::sketches::PgPacks(self.tx), &touched).await
    }

    /// Write the gathered postings: before a row they may belong to changes or goes.
    async fn flush_postings(&mut self) -> Result<()> {
        std::mem::take(&mut self.postings).write(self.tx).await
    }
}

/// Run `$body` with `$rows` a [`PgRows`] over a write transaction holding the locks of
/// `$projects` (see [`write_tx`](super::write_tx)), flushing its counts before the commit.
/// `$vectors` are the sentence vectors of the contents it writes ([`PostgresStore::vectors`]).
macro_rules! write_rows {
    ($store:expr, $projects:expr, $vectors:expr, |$rows:ident, $now:ident| $body:block) => {{
        let store: &$crate::postgres::PostgresStore = $store;
        let vectors: Option<$crate::vectors::Vectors> = $vectors;
        $crate::postgres::write_tx!(store, $projects, |tx, $now| {
            let mut $rows = $crate::postgres::writer::PgRows::new(store, &tx, vectors.clone());
            let out = $body;
            $rows.flush().await?;
            out
        })
    }};
}
pub(crate) use write_rows;

impl Rows for PgRows<'_> {
    async fn load(&mut self, id: &str) -> Result<Option<Row>> {
        rows::load(self.tx, id).await
    }

    async fn find_by_content(&mut self, project: &str, content: &str) -> Result<Option<String>> {
        let stmt = self.tx
            .prepare_cached(
                "SELECT id FROM project_memories WHERE project_path = $1 AND md5(content) = md5($2) AND content = $2",
            )
            .await?;
        Ok(self
            .tx
            .query_opt(&stmt, &[&project, &content])
            .await?
            .map(|r| r.get(0)))
    }

    /// One query per 10,000 pairs, not one per pair (planned while an import grows the table,
    /// a per-row lookup may scan it).
    async fn stored_contents(&mut self, pairs: &[(String, String)]) -> Result<BTreeSet<(String, String)>> {
        let mut present = BTreeSet::new();
        for chunk in pairs.chunks(10_000) {
            let (projects, contents): (Vec<&str>, Vec<&str>) =
                chunk.iter().map(|(p, c)| (p.as_str(), c.as_str())).unzip();
            let found = self
                .tx
                .query(
                    "SELECT m.project_path, m.content FROM project_memories m
                     JOIN unnest($1::text[], $2::text[]) AS u(project_path, content)
                       ON m.project_path = u.project_path AND md5(m.content) = md5(u.content) AND m.content = u.content",
                    &[&projects, &contents],
                )
                .await?;
            for row in found {
                present.insert((row.try_get(0)?, row.try_get(1)?));
            }
        }
        Ok(present)
    }

    async fn select(&mut self, project: &str, which: Which<'_>) -> Result<Vec<Row>> {
        let sql = |condition: &str| {
            format!("SELECT {COLS} FROM project_memories WHERE project_path = $1{condition} ORDER BY num")
        };
        match which {
            Which::All => select_entries(self.tx, &sql(""), &[&project]).await,
            Which::ImportanceBelow(min) => {
                select_entries(self.tx, &sql(" AND importance < $2"), &[&project, &min]).await
            }
            Which::SupersededBy(id) => {
                select_entries(self.tx, &sql(" AND superseded_by = $2"), &[&project, &id]).await
            }
        }
    }

    async fn similar(&mut self, project: &str, q: Similar<'_>) -> Result<Vec<(f32, Row)>> {
        if q.is_empty() {
            return Ok(Vec::new());
        }
        self.flush().await?;
        q.search(self.tx, project, self.store.inner.options.max_candidates())
            .await
    }

    async fn vocabulary(&mut self, project: &str, needed: &BTreeSet<String>) -> Result<Arc<Vocabulary>> {
        self.flush().await?;
        Ok(Arc::new(search::vocabulary(self.tx, project, needed).await?))
    }

    /// Whether a memory may take `id`: no memory has it, and no history entry has it except
    /// (when `project` is given) history of that same project — as on SQLite.
    async fn id_is_free(&mut self, id: &str, project: Option<&str>) -> Result<bool> {
        let stmt = self
            .tx
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM project_memories WHERE id = $1)
                     OR EXISTS (SELECT 1 FROM memory_history WHERE memory_id = $1
                                AND ($2::text IS NULL OR project_path <> $2))",
            )
            .await?;
        let taken: bool = self.tx.query_one(&stmt, &[&id, &project]).await?.try_get(0)?;
        Ok(!taken)
    }

    async fn episode_project(&mut self, id: &str) -> Result<Option<String>> {
        let row = self
            .tx
            .query_opt("SELECT project_path FROM episodic_records WHERE id = $1", &[&id])
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    async fn history_entry(&mut self, id: i64) -> Result<Option<HistoryEntry>> {
        let sql = format!("SELECT {HISTORY_COLS} FROM memory_history WHERE id = $1");
        Ok(select_history(self.tx, &sql, &[&id]).await?.pop())
    }

    async fn insert(&mut self, entry: &MemoryEntry) -> Result<()> {
        let num = rows::insert_row(self.tx, entry).await?;
        if let Some(vectors) = &mut self.vectors {
            rows::set_vector(self.tx, num, &entry.content, Some(vectors.of(&entry.content))).await?;
            self.touched.note(&entry.project_path, num);
        }
        self.postings.add(num, entry);
        self.counts.count(entry, 1);
        Ok(())
    }

    async fn store(&mut self, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
        rows::store_row(self.tx, num, old, new).await?;
        if crate::sketches::changes(old, new) {
            self.touched.note(&old.project_path, num);
            self.touched.note(&new.project_path, num);
        }
        if old.content != new.content {
            // A vector of the old text would be wrong: the new one, or none without a model.
            let vector = self.vectors.as_mut().map(|v| v.of(&new.content));
            rows::set_vector(self.tx, num, &new.content, vector).await?;
        }
        if postings::moved(old, new) {
            self.flush_postings().await?;
            rows::repost(self.tx, num, new).await?;
        }
        if old.content != new.content || old.project_path != new.project_path {
            self.counts.count(old, -1);
            self.counts.count(new, 1);
        }
        Ok(())
    }

    async fn delete(&mut self, num: i64, old: &MemoryEntry) -> Result<()> {
        // Its postings go with it (`ON DELETE CASCADE`), pending ones too.
        self.flush_postings().await?;
        let stmt = self
            .tx
            .prepare_cached("DELETE FROM project_memories WHERE num = $1")
            .await?;
        self.tx.execute(&stmt, &[&num]).await?;
        self.touched.note(&old.project_path, num);
        self.counts.count(old, -1);
        Ok(())
    }

    async fn delete_project(&mut self, project: &str) -> Result<()> {
        self.flush().await?;
        let tx = self.tx;
        tx.execute(
            "DELETE FROM project_memories WHERE project_path = $1",
            &[&project],
        )
        .await?;
        tx.execute("DELETE FROM memory_terms WHERE project_path = $1", &[&project])
            .await?;
        tx.execute("DELETE FROM memory_sketches WHERE project_path = $1", &[&project])
            .await?;
        tx.execute(
            "UPDATE memory_projects SET docs = 0 WHERE project_path = $1",
            &[&project],
        )
        .await?;
        Ok(())
    }

    /// Append one history entry.
    async fn record(&mut self, change: Change<'_>) -> Result<()> {
        let memory = change.memory();
        let stmt = self.tx
            .prepare_cached(
                "INSERT INTO memory_history (memory_id, project_path, action, before, after, related_id, reason, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .await?;
        self.tx
            .execute(
                &stmt,
                &[
                    &memory.id,
                    &memory.project_path,
                    &change.action.as_str(),
                    &snapshot(change.before),
                    &snapshot(change.after),
                    &change.related_id,
                    &change.reason,
                    &change.at,
                ],
            )
            .await?;
        Ok(())
    }

    /// Store an imported history entry under its own id when that id is free, else under a new
    /// one; the id sequence is moved past it so later entries never collide.
    async fn insert_history(&mut self, entry: &HistoryEntry) -> Result<()> {
        let taken: bool = self
            .tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM memory_history WHERE id = $1)",
                &[&entry.id],
            )
            .await?
            .try_get(0)?;
        let id = (!taken).then_some(entry.id);
        let stmt = self.tx
            .prepare_cached(
                "INSERT INTO memory_history (id, memory_id, project_path, action, before, after, related_id, reason, at)
                 VALUES (COALESCE($1, nextval(pg_get_serial_sequence('memory_history', 'id'))), $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .await?;
        self.tx
            .execute(
                &stmt,
                &[
                    &id,
                    &entry.memory_id,
                    &entry.project_path,
                    &entry.action.as_str(),
                    &snapshot(entry.before.as_ref()),
                    &snapshot(entry.after.as_ref()),
                    &entry.related_id,
                    &entry.reason,
                    &entry.at,
                ],
            )
            .await?;
        if id.is_some() {
            self.tx
                .execute(
                    "SELECT setval(pg_get_serial_sequence('memory_history', 'id'), GREATEST($1, last_value))
                 FROM memory_history_id_seq",
                    &[&entry.id],
                )
                .await?;
        }
        Ok(())
    }

    async fn insert_episode(&mut self, record: &EpisodicRecord) -> Result<()> {
        let stmt = self.tx
            .prepare_cached(&format!(
                "INSERT INTO episodic_records ({EPISODE_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ))
            .await?;
        self.tx
            .execute(
                &stmt,
                &[
                    &record.id,
                    &record.project_path,
                    &record.session_id,
                    &record.record_type.as_str(),
                    &record.task_summary,
                    &record.approach_summary,
                    &record.outcome_summary,
                    &keywords_json(&record.tools_used),
                    &keywords_json(&record.keywords),
                    &record.created_at,
                ],
            )
            .await?;
        Ok(())
    }

    /// One value.
    async fn keyed(&mut self, at: Key<'_>) -> Result<Option<String>> {
        let (table, key, value) = at.of.columns();
        let sql = format!("SELECT {value} FROM {table} WHERE project_path = $1 AND {key} = $2");
        let row = self.tx.query_opt(&sql, &[&at.project, &at.key]).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    /// Store a value at `now`, or (`None`) delete it; whether a row changed.
    async fn set_keyed(&mut self, at: Key<'_>, new: Option<&str>, now: i64) -> Result<bool> {
        let (table, key, value) = at.of.columns();
        let changed = match new {
            Some(new) => {
                let sql = format!(
                    "INSERT INTO {table} (project_path, {key}, {value}, updated_at) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (project_path, {key}) DO UPDATE SET {value} = excluded.{value}, updated_at = excluded.updated_at
                     WHERE {table}.{value} <> excluded.{value}"
                );
                self.tx.execute(&sql, &[&at.project, &at.key, &new, &now]).await?
            }
            None => {
                let sql = format!("DELETE FROM {table} WHERE project_path = $1 AND {key} = $2");
                self.tx.execute(&sql, &[&at.project, &at.key]).await?
            }
        };
        Ok(changed > 0)
    }

    /// Store the terms of up to `limit` memories of a project written before terms were stored
    /// (see [`MemoryTerms`]), in row order; how many it stored.
    async fn fill_terms(&mut self, project: &str, limit: usize) -> Result<usize> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let missing = self
            .tx
            .query(
                "SELECT num, content, keywords FROM project_memories
                 WHERE project_path = $1 AND content_terms IS NULL ORDER BY num LIMIT $2",
                &[&project, &limit],
            )
            .await?;
        let store = self
            .tx
            .prepare_cached(
                "UPDATE project_memories SET content_terms = $2, keyword_terms = $3 WHERE num = $1",
            )
            .await?;
        for row in &missing {
            let (num, content, keywords): (i64, String, String) =
                (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            let terms = MemoryTerms::of(&content, &json_list(&keywords, "keywords")?);
            let (content_terms, keyword_terms) = terms.stored();
            self.tx
                .execute(&store, &[&num, &content_terms, &keyword_terms])
                .await?;
        }
        Ok(missing.len())
    }

    async fn set_vector(&mut self, project: &str, num: i64, content: &str) -> Result<()> {
        if let Some(vectors) = &mut self.vectors {
            rows::set_vector(self.tx, num, content, Some(vectors.of(content))).await?;
            self.touched.note(project, num);
        }
        Ok(())
    }

    async fn set_session(&mut self, id: &str, saved: Option<&SavedSession>, now: i64) -> Result<bool> {
        let changed = match saved {
            Some(s) => {
                self.tx
                    .execute(
                        "INSERT INTO sessions (id, thread, turns, messages, updated_at) VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, turns = excluded.turns,
                             messages = excluded.messages, updated_at = excluded.updated_at",
                        &[&id, &s.json, &s.turns, &s.messages, &now],
                    )
                    .await?
            }
            None => {
                self.tx
                    .execute("DELETE FROM sessions WHERE id = $1", &[&id])
                    .await?
            }
        };
        Ok(changed > 0)
    }
}
