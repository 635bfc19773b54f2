//! The history table: every change to a memory with the memory before and after it, and undo.

use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::MemoryDb;
use crate::error::Result;
use crate::types::{snapshot, HistoryEntry};
use crate::write::Change;

/// Append one history entry.
pub(super) fn record(tx: &Transaction, change: Change<'_>) -> Result<()> {
    let memory = change.memory();
    tx.prepare_cached(
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
pub(super) fn insert_history(tx: &Transaction, h: &HistoryEntry) -> Result<()> {
    let taken = tx
        .prepare_cached("SELECT 1 FROM memory_history WHERE id = ?1")?
        .query_row(params![h.id], |_| Ok(()))
        .optional()?
        .is_some();
    tx.prepare_cached(
        "INSERT INTO memory_history (id, memory_id, project_path, action, before, after, related_id, reason, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        (!taken).then_some(h.id),
        h.memory_id,
        h.project_path,
        h.action.as_str(),
        snapshot(h.before.as_ref()),
        snapshot(h.after.as_ref()),
        h.related_id,
        h.reason,
        h.at
    ])?;
    Ok(())
}

pub(super) const HISTORY_COLS: &str =
    "id, memory_id, project_path, action, before, after, related_id, reason, at";

/// History entry `history_id` if it belongs to `project`.
fn entry_in(tx: &Transaction, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
    Ok(tx
        .prepare_cached(&format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE id = ?1 AND project_path = ?2"
        ))?
        .query_row(params![history_id, project], row_to_history)
        .optional()?)
}

pub(super) fn row_to_history(r: &Row) -> rusqlite::Result<HistoryEntry> {
    HistoryEntry::from_columns(r.try_into()?).map_err(|(col, message)| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, message.into())
    })
}

impl MemoryDb {
    /// Every change to one memory of `project`, oldest first (nothing of another project).
    pub(crate) fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE memory_id = ?1 AND project_path = ?2 ORDER BY id"
            ))?;
            let rows = stmt.query_map(params![memory_id, project], row_to_history)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// One history entry of `project` by its id; `None` when it does not exist or belongs to
    /// another project.
    pub(crate) fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        self.read(|tx| entry_in(tx, project, history_id))
    }

    /// The latest changes in a project, newest first.
    pub(crate) fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE project_path = ?1 ORDER BY id DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![project, limit], row_to_history)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}
