//! The writes of the SQLite store: each is an [`Op`] (checked when made) run in one
//! `BEGIN IMMEDIATE` transaction.

use rusqlite::params;

use super::{json_array, rows, MemoryDb};
use crate::error::{MemoryError, Result};
use crate::rules::{check_project, MAX_ACCESS_COUNT};
use crate::sketches::Touched;
use crate::types::*;
use crate::vectors::no_model;
use crate::write::{Done, Op};

/// The writes one call each, for the tests and the evaluation of the blocking core (the
/// store runs [`Op`]s through [`MemoryDb::write_op`]).
impl MemoryDb {
    /// Run a checked write in one transaction, its vectors computed first.
    pub(crate) fn run<T: TryFrom<Done, Error = MemoryError>>(&self, op: Op) -> Result<T> {
        self.write_op(&op)?.try_into()
    }

    /// [`run`](Self::run), answering with the op's own kind.
    pub(crate) fn write_op(&self, op: &Op) -> Result<Done> {
        let vectors = self.vectors(op.contents());
        self.write_rows(vectors, async |rows, now| op.run(rows, now).await)
    }

    /// Add a memory, marking the older memories it contradicts as superseded.
    pub(crate) fn add(&self, new: NewMemoryEntry) -> Result<MemoryEntry> {
        self.run(Op::add(new)?)
    }

    /// Add several memories in one transaction: all are stored or none.
    #[cfg(test)]
    pub(crate) fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        self.run(Op::add_many(entries)?)
    }

    /// Change fields of a memory.
    #[cfg(test)]
    pub(crate) fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        self.run(Op::update(id, update)?)
    }

    /// Insert, merge into a memory more than 0.85 similar, or skip an identical one.
    #[cfg(test)]
    pub(crate) fn upsert(&self, new: NewMemoryEntry) -> Result<UpsertResult> {
        self.run(Op::upsert(new)?)
    }

    /// Delete a memory, returning it.
    #[cfg(test)]
    pub(crate) fn delete(&self, id: &str) -> Result<MemoryEntry> {
        self.run(Op::delete(id))
    }

    /// Delete the memories of a project that best match `query`, returning them.
    #[cfg(test)]
    pub(crate) fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        self.run(Op::forget(project, query)?)
    }

    /// Delete every memory of a project, returning how many there were.
    #[cfg(test)]
    pub(crate) fn clear(&self, project: &str) -> Result<usize> {
        self.run(Op::clear(project)?)
    }

    /// Put a memory of `project` back as it was before history entry `history_id`.
    #[cfg(test)]
    pub(crate) fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>> {
        self.run(Op::undo(project, history_id))
    }

    /// Lower the importance of memories not accessed lately; returns how many changed.
    #[cfg(test)]
    pub(crate) fn decay(&self, project: &str) -> Result<usize> {
        self.run(Op::decay(project)?)
    }

    /// Delete the memories of a project whose importance is below `min_importance` (which
    /// must lie in 0.0-1.0, like every importance); returns how many.
    #[cfg(test)]
    pub(crate) fn prune(&self, project: &str, min_importance: f32) -> Result<usize> {
        self.run(Op::prune(project, min_importance)?)
    }

    /// Merge memories of a project more than 0.90 similar; returns how many were merged away.
    #[cfg(test)]
    pub(crate) fn compact(&self, project: &str) -> Result<usize> {
        self.run(Op::compact(project)?)
    }

    /// Import records in one transaction (all or nothing).
    #[cfg(test)]
    pub(crate) fn import(
        &self,
        records: &[crate::transfer::ExportRecord],
        project: Option<&str>,
    ) -> Result<crate::transfer::ImportReport> {
        self.run(Op::import(records.to_vec(), project)?)
    }

    /// Give up to `limit` memories of a project that lack a vector of the configured model
    /// their vector; returns how many it gave one (0 once every memory has one).
    pub(crate) fn embed_missing(&self, project: &str, limit: usize) -> Result<usize> {
        let project = check_project(project)?;
        let semantic = self.inner.options.semantic().ok_or_else(no_model)?;
        let missing = self.read(|tx| rows::missing_vectors(tx, &project, semantic.model_id(), limit))?;
        if missing.is_empty() {
            return Ok(0);
        }
        let mut vectors = semantic.prepare(missing.iter().map(|(_, c)| c.as_str()));
        self.write(|tx, _| {
            let mut touched = Touched::default();
            for (num, content) in &missing {
                rows::set_vector(tx, *num, content, Some(vectors.of(content)))?;
                touched.note(&project, *num);
            }
            super::sketches::sync(tx, &touched)?;
            Ok(missing.len())
        })
    }

    /// Store the terms of up to `limit` memories of a project written before terms were
    /// stored; how many, 0 once all have theirs.
    pub(crate) fn fill_terms(&self, project: &str, limit: usize) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, _| rows::fill_terms(tx, &project, limit))
    }

    /// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and last-access times: what a
    /// search does to what it returns.
    pub(crate) fn touch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.write_statement(|conn, now| {
            // One statement for all of them, as on PostgreSQL (a memory listed twice counts once).
            conn.prepare_cached(
                "UPDATE project_memories SET access_count = MIN(CAST(access_count AS INTEGER), ?3 - 1) + 1,
                     last_accessed_at = ?1 WHERE id IN (SELECT value FROM json_each(?2))",
            )?
            .execute(params![now, json_array(ids), MAX_ACCESS_COUNT])?;
            Ok(())
        })
    }
}
