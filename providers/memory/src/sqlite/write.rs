//! The writes of the SQLite store: each is an [`Op`] (checked when made) run in one
//! `BEGIN IMMEDIATE` transaction.

use rusqlite::params;

use super::{json_array, MemoryDb};
use crate::error::{MemoryError, Result};
use crate::rules::MAX_ACCESS_COUNT;
use crate::types::*;
use crate::write::{Done, Op};

/// The writes of the blocking core, for the tests and the evaluation (the store runs [`Op`]s
/// through [`MemoryDb::write_op`]).
impl MemoryDb {
    /// Run a checked write in one transaction, its vectors computed first.
    pub(crate) fn run<T: TryFrom<Done, Error = MemoryError>>(&self, op: Result<Op>) -> Result<T> {
        self.write_op(&op?)?.try_into()
    }

    /// [`run`](Self::run), answering with the op's own kind.
    pub(crate) fn write_op(&self, op: &Op) -> Result<Done> {
        let vectors = self.vectors(op.contents());
        self.write_rows(vectors, async |rows, now| op.run(rows, now).await)
    }

    /// Add a memory, marking the older memories it contradicts as superseded.
    pub(crate) fn add(&self, new: NewMemoryEntry) -> Result<MemoryEntry> {
        self.run(Op::add(new))
    }

    /// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and last-access times: what a
    /// search does to what it returns.
    pub(crate) fn touch(&self, ids: &[String]) -> Result<()> {
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
