//! The values kept by project and key ([`Keyed`]) on PostgreSQL: `project:` state and learned
//! skills.

use deadpool_postgres::Transaction;

use crate::error::Result;
use crate::write::{Key, Keyed};

/// Every value of a project, by key; none in a database older than the table (a read-only
/// store does not migrate).
pub(super) async fn all(tx: &Transaction<'_>, of: Keyed, project: &str) -> Result<Vec<(String, String)>> {
    let (table, key, value) = of.columns();
    let exists: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await?
        .try_get(0)?;
    if !exists {
        return Ok(Vec::new());
    }
    let sql =
        format!("SELECT {key}, {value} FROM {table} WHERE project_path = $1 ORDER BY {key} COLLATE \"C\"");
    let mut out = Vec::new();
    for row in tx.query(&sql, &[&project]).await? {
        out.push((row.try_get(0)?, row.try_get(1)?));
    }
    Ok(out)
}

/// One value.
pub(super) async fn one(tx: &Transaction<'_>, at: Key<'_>) -> Result<Option<String>> {
    let (table, key, value) = at.of.columns();
    let sql = format!("SELECT {value} FROM {table} WHERE project_path = $1 AND {key} = $2");
    let row = tx.query_opt(&sql, &[&at.project, &at.key]).await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// Store a value at `now`, or (`None`) delete it; whether a row changed.
pub(super) async fn set(tx: &Transaction<'_>, at: Key<'_>, new: Option<&str>, now: i64) -> Result<bool> {
    let (table, key, value) = at.of.columns();
    let changed = match new {
        Some(new) => {
            let sql = format!(
                "INSERT INTO {table} (project_path, {key}, {value}, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (project_path, {key}) DO UPDATE SET {value} = excluded.{value}, updated_at = excluded.updated_at
                 WHERE {table}.{value} <> excluded.{value}"
            );
            tx.execute(&sql, &[&at.project, &at.key, &new, &now]).await?
        }
        None => {
            let sql = format!("DELETE FROM {table} WHERE project_path = $1 AND {key} = $2");
            tx.execute(&sql, &[&at.project, &at.key]).await?
        }
    };
    Ok(changed > 0)
}
