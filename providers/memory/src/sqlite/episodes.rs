//! Episodic records.

use rusqlite::params;

use super::rows::row_to_episode;
use super::MemoryDb;
use crate::error::Result;
use crate::types::*;

impl MemoryDb {
    /// The latest episodic records of a project, newest first.
    pub(crate) fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, project_path, session_id, record_type, task_summary, approach_summary,
                        outcome_summary, tools_used, keywords, created_at
                 FROM episodic_records WHERE project_path = ?1 ORDER BY created_at DESC, id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![project, limit], row_to_episode)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}
