//! The history on PostgreSQL: every change to a memory with the memory before and after it.

use deadpool_postgres::Transaction;
use tokio_postgres::Row;

use crate::error::{MemoryError, Result};
use crate::types::{snapshot, HistoryEntry};
use crate::write::Change;

pub(super) const HISTORY_COLS: &str =
    "id, memory_id, project_path, action, before, after, related_id, reason, at";

/// Append one history entry.
pub(super) async fn record(tx: &Transaction<'_>, change: Change<'_>) -> Result<()> {
    let memory = change.memory();
    let stmt = tx
        .prepare_cached(
            "INSERT INTO memory_history (memory_id, project_path, action, before, after, related_id, reason, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .await?;
    tx.execute(
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
pub(super) async fn insert_history(tx: &Transaction<'_>, h: &HistoryEntry) -> Result<()> {
    let taken: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM memory_history WHERE id = $1)",
            &[&h.id],
        )
        .await?
        .try_get(0)?;
    let id = (!taken).then_some(h.id);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO memory_history (id, memory_id, project_path, action, before, after, related_id, reason, at)
             VALUES (COALESCE($1, nextval(pg_get_serial_sequence('memory_history', 'id'))), $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .await?;
    tx.execute(
        &stmt,
        &[
            &id,
            &h.memory_id,
            &h.project_path,
            &h.action.as_str(),
            &snapshot(h.before.as_ref()),
            &snapshot(h.after.as_ref()),
            &h.related_id,
            &h.reason,
            &h.at,
        ],
    )
    .await?;
    if id.is_some() {
        tx.execute(
            "SELECT setval(pg_get_serial_sequence('memory_history', 'id'), GREATEST($1, last_value))
             FROM memory_history_id_seq",
            &[&h.id],
        )
        .await?;
    }
    Ok(())
}

pub(super) fn row_to_history(r: &Row) -> Result<HistoryEntry> {
    let columns = (
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
    );
    HistoryEntry::from_columns(columns).map_err(|(_, reason)| MemoryError::Server {
        url: String::new(),
        reason,
        sqlstate: None,
    })
}

/// History entries of a query selecting [`HISTORY_COLS`].
pub(super) async fn select_history(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<HistoryEntry>> {
    let stmt = tx.prepare_cached(sql).await?;
    tx.query(&stmt, params)
        .await?
        .iter()
        .map(row_to_history)
        .collect()
}
