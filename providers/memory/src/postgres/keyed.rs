//! The values kept by project and key ([`Key`]) on PostgreSQL: `project:` state and learned
//! skills.

use deadpool_postgres::Transaction;

use crate::error::Result;
use crate::write::Key;

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
