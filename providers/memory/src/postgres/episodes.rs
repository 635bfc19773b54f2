//! Episodic records and persisted `project:` state on PostgreSQL.

use super::rows::{row_to_episode, EPISODE_COLS};
use deadpool_postgres::Transaction;

use super::{read_tx, PostgresStore};
use crate::error::Result;
use crate::rules::state_value;
use crate::types::*;

pub(super) async fn episodes(
    store: &PostgresStore,
    project: &str,
    limit: usize,
) -> Result<Vec<EpisodicRecord>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    read_tx!(store, |tx| {
        let sql = format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE project_path = $1
             ORDER BY created_at DESC, id LIMIT $2"
        );
        let stmt = tx.prepare_cached(&sql).await?;
        tx.query(&stmt, &[&project, &limit])
            .await?
            .iter()
            .map(row_to_episode)
            .collect::<Result<Vec<_>>>()?
    })
}

pub(super) async fn state_entries(
    store: &PostgresStore,
    project: &str,
) -> Result<Vec<(String, serde_json::Value)>> {
    read_tx!(store, |tx| {
        let rows = tx
            .query(
                "SELECT key, value FROM project_state WHERE project_path = $1 ORDER BY key COLLATE \"C\"",
                &[&project],
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push((row.try_get(0)?, state_value(row.try_get(1)?)));
        }
        out
    })
}

/// Store a `project:` state value's JSON at `now`, or (`None`) delete it; whether a row changed.
pub(super) async fn set_state(
    tx: &Transaction<'_>,
    project: &str,
    key: &str,
    json: Option<&str>,
    now: i64,
) -> Result<bool> {
    let changed = match json {
        Some(json) => tx
            .execute(
                "INSERT INTO project_state (project_path, key, value, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (project_path, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                 WHERE project_state.value <> excluded.value",
                &[&project, &key, &json, &now],
            )
            .await?,
        None => tx
            .execute(
                "DELETE FROM project_state WHERE project_path = $1 AND key = $2",
                &[&project, &key],
            )
            .await?,
    };
    Ok(changed > 0)
}
