//! The history table: every change to a memory with the memory before and after it, and undo.

use rusqlite::{params, OptionalExtension, Row, Transaction};

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

pub(super) fn row_to_history(r: &Row) -> rusqlite::Result<HistoryEntry> {
    HistoryEntry::from_columns(r.try_into()?).map_err(|(col, message)| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, message.into())
    })
}
