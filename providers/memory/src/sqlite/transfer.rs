//! Export on SQLite: the records of [`crate::transfer`], read in one transaction.

use rusqlite::params;

use super::history::{row_to_history, HISTORY_COLS};
use super::rows::{row_to_episode, select_entries, COLS};
use super::MemoryDb;
use crate::error::Result;
use crate::transfer::ExportRecord;

impl MemoryDb {
    /// Every memory (oldest first), episodic record and history entry (oldest first) of a
    /// project, or of all projects.
    pub(crate) fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        let scope = export_scope(project);
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
            .map(|(_, mut e)| {
                self.redact_read(&mut e);
                ExportRecord::Memory(e)
            })
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
                let mut h = h?;
                for m in h.before.iter_mut().chain(h.after.iter_mut()) {
                    self.redact_read(m);
                }
                out.push(ExportRecord::History(Box::new(h)));
            }
            Ok(out)
        })
    }
}

/// Which rows an export of `project` (or of every project, for `None`) reads, with `?1` the
/// project: the path compared as such when there is one, so that each table's index on it
/// serves a one-project export (`?1 IS NULL OR project_path = ?1` is planned before the value
/// is known, and read every project's rows).
pub(super) fn export_scope(project: Option<&str>) -> &'static str {
    match project {
        Some(_) => "project_path = ?1",
        None => "?1 IS NULL",
    }
}
