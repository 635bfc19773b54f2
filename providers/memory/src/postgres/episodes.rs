//! Episodic records on PostgreSQL.

use super::rows::{row_to_episode, EPISODE_COLS};
use super::{read_tx, PostgresStore};
use crate::error::Result;
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
