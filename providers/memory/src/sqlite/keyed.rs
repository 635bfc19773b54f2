//! The values kept by project and key ([`Key`]): `project:` state and learned skills.

use rusqlite::{params, OptionalExtension, Transaction};

use crate::error::Result;
use crate::write::Key;

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
