//! Export on SQLite: the records of [`crate::transfer`], read in one transaction.

use rusqlite::params;

use super::history::{row_to_history, HISTORY_COLS};
use super::rows::{row_to_episode, select_entries, COLS};
use super::{equal_if_given, MemoryDb};
use crate::error::Result;
use crate::transfer::ExportRecord;

impl MemoryDb {
    /// Every memory (oldest first), episodic record and history entry (oldest first) of a
    /// project, or of all projects.
    pub(crate) fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        // The project's rows through each table's index on its path ([`equal_if_given`]).
        let scope = equal_if_given("project_path", "?1", project.is_some());
        self.read(|tx| {
            let mut out: Vec<ExportRecord> = select_entries(
                tx,
                &format!(
                    "SELECT {COLS} FROM project_memories WHERE {scope}
                     ORDER BY project_path, created_at, id"
                ),
                params![project],
            )?
            .into_iter()
            .map(|(_, e)| ExportRecord::Memory(e))
            .collect();
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT id, project_path, session_id, record_type, task_summary, approach_summary,
                        outcome_summary, tools_used, keywords, created_at
                 FROM episodic_records WHERE {scope}
                 ORDER BY project_path, created_at, id"
            ))?;
            for e in stmt.query_map(params![project], row_to_episode)? {
                out.push(ExportRecord::Episode(e?));
            }
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE {scope} ORDER BY id"
            ))?;
            for h in stmt.query_map(params![project], row_to_history)? {
                out.push(ExportRecord::History(Box::new(h?)));
            }
            Ok(out)
        })
    }
}
