//! Export on PostgreSQL: the records of [`crate::transfer`], read in one transaction (the same
//! records, in the same order, as SQLite's export).

use super::history::{select_history, HISTORY_COLS};
use super::rows::{row_to_episode, select_entries, COLS, EPISODE_COLS};
use super::{read_tx, PostgresStore};
use crate::error::Result;
use crate::transfer::ExportRecord;

/// Every memory (oldest first), episodic record and history entry (oldest first) of a
/// project, or of all projects.
pub(super) async fn export(store: &PostgresStore, project: Option<&str>) -> Result<Vec<ExportRecord>> {
    read_tx!(store, |tx| {
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        let mut out: Vec<ExportRecord> = select_entries(&tx, &sql, &[&project])
            .await?
            .into_iter()
            .map(|(_, e)| ExportRecord::Memory(e))
            .collect();
        let sql = format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        for row in tx.query(&sql, &[&project]).await? {
            out.push(ExportRecord::Episode(row_to_episode(&row)?));
        }
        let sql = format!("SELECT {HISTORY_COLS} FROM memory_history WHERE $1::text IS NULL OR project_path = $1 ORDER BY id");
        for h in select_history(&tx, &sql, &[&project]).await? {
            out.push(ExportRecord::History(Box::new(h)));
        }
        out
    })
}
