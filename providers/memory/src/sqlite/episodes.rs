//! Episodic records and persisted `project:` state.

use rusqlite::{params, Transaction};

use super::rows::row_to_episode;
use super::MemoryDb;
use crate::error::Result;
use crate::rules::state_value;
use crate::types::*;

impl MemoryDb {
    // ----- episodic records -------------------------------------------------------------

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

    // ----- project: state (a thread's `project:` keys, kept across sessions) ------------

    /// Every persisted state value of a project, by key.
    pub(crate) fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT key, value FROM project_state WHERE project_path = ?1 ORDER BY key",
            )?;
            let rows = stmt.query_map(params![project], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (key, value) = row?;
                let value = state_value(value);
                out.push((key, value));
            }
            Ok(out)
        })
    }
}

/// Store a `project:` state value's JSON at `now`, or (`None`) delete it; whether a row changed.
pub(super) fn set_state(
    tx: &Transaction,
    project: &str,
    key: &str,
    json: Option<&str>,
    now: i64,
) -> Result<bool> {
    let changed = match json {
        Some(json) => tx
            .prepare_cached(
                "INSERT INTO project_state(project_path, key, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project_path, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                 WHERE value != excluded.value",
            )?
            .execute(params![project, key, json, now])?,
        None => tx
            .prepare_cached("DELETE FROM project_state WHERE project_path = ?1 AND key = ?2")?
            .execute(params![project, key])?,
    };
    Ok(changed > 0)
}
