//! The values kept by project and key ([`Keyed`]): `project:` state and learned skills.

use rusqlite::{params, OptionalExtension, Transaction};

use crate::error::Result;
use crate::write::{Key, Keyed};

/// Every value of a project, by key; none in a database older than the table (a read-only
/// open does not migrate).
pub(super) fn all(tx: &Transaction, of: Keyed, project: &str) -> Result<Vec<(String, String)>> {
    let (table, key, value) = of.columns();
    let exists = tx
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .exists(params![table])?;
    if !exists {
        return Ok(Vec::new());
    }
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {key}, {value} FROM {table} WHERE project_path = ?1 ORDER BY {key}"
    ))?;
    let rows = stmt.query_map(params![project], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One value.
pub(super) fn one(tx: &Transaction, at: Key<'_>) -> Result<Option<String>> {
    let (table, key, value) = at.of.columns();
    Ok(tx
        .prepare_cached(&format!(
            "SELECT {value} FROM {table} WHERE project_path = ?1 AND {key} = ?2"
        ))?
        .query_row(params![at.project, at.key], |r| r.get(0))
        .optional()?)
}

/// Store a value at `now`, or (`None`) delete it; whether a row changed.
pub(super) fn set(tx: &Transaction, at: Key<'_>, new: Option<&str>, now: i64) -> Result<bool> {
    let (table, key, value) = at.of.columns();
    let changed = match new {
        Some(new) => tx
            .prepare_cached(&format!(
                "INSERT INTO {table}(project_path, {key}, {value}, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project_path, {key}) DO UPDATE SET {value} = excluded.{value}, updated_at = excluded.updated_at
                 WHERE {value} != excluded.{value}"
            ))?
            .execute(params![at.project, at.key, new, now])?,
        None => tx
            .prepare_cached(&format!("DELETE FROM {table} WHERE project_path = ?1 AND {key} = ?2"))?
            .execute(params![at.project, at.key])?,
    };
    Ok(changed > 0)
}
