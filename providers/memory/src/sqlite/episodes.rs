//! Episodic records and persisted `project:` state.

use rusqlite::params;

use super::rows::{insert_episode, new_unique_id, row_to_episode};
use super::write::check_project;
use super::MemoryDb;
use crate::error::{MemoryError, Result};
use crate::secrets;
use crate::text;
use crate::types::*;

impl MemoryDb {
    // ----- episodic records -------------------------------------------------------------

    /// Record what happened in a run. Secrets are refused like in memories; redact first
    /// ([`secrets::redact`]) when the text comes from a conversation.
    pub fn add_episode(&self, new: NewEpisodicRecord) -> Result<EpisodicRecord> {
        secrets::check("episodic record", &new.project_path)?;
        let project_path = check_project(&new.project_path)?;
        for text in [
            &new.task_summary,
            &new.approach_summary,
            &new.outcome_summary,
            &new.session_id,
        ]
        .into_iter()
        .chain(&new.tools_used)
        .chain(&new.keywords)
        {
            secrets::check("episodic record", text)?;
        }
        self.write(|tx, now| {
            let record = EpisodicRecord {
                id: new_unique_id(tx, "episodic_records")?,
                project_path,
                session_id: new.session_id,
                record_type: new.record_type,
                task_summary: new.task_summary,
                approach_summary: new.approach_summary,
                outcome_summary: new.outcome_summary,
                tools_used: new.tools_used,
                keywords: text::normalize_keywords(&new.keywords),
                created_at: now,
            };
            insert_episode(tx, &record)?;
            Ok(record)
        })
    }

    /// The latest episodic records of a project, newest first.
    pub fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
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

    /// Persist one `project:` state value; secrets are refused.
    pub fn set_state(&self, project: &str, key: &str, value: &serde_json::Value) -> Result<()> {
        secrets::check_all("state value", [project, key])?;
        check_json_strings(value)?;
        let project = check_project(project)?;
        if key.trim().is_empty() {
            return Err(MemoryError::Invalid("a state key must not be empty".into()));
        }
        let json = value.to_string();
        secrets::check("state value", &format!("{key}={json}"))?;
        secrets::check("state value", &format!("{key} {json}"))?;
        self.write(|tx, now| {
            tx.prepare_cached(
                "INSERT INTO project_state(project_path, key, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project_path, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                 WHERE value != excluded.value",
            )?
            .execute(params![project, key, json, now])?;
            Ok(())
        })
    }

    /// Every persisted state value of a project, by key.
    pub fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
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
                let value = serde_json::from_str(&value).unwrap_or(serde_json::Value::String(value));
                out.push((key, value));
            }
            Ok(out)
        })
    }

    /// Remove a persisted state value; true when it existed.
    pub fn remove_state(&self, project: &str, key: &str) -> Result<bool> {
        self.write(|tx, _| {
            Ok(tx
                .prepare_cached("DELETE FROM project_state WHERE project_path = ?1 AND key = ?2")?
                .execute(params![project, key])?
                > 0)
        })
    }
}

/// Every string (and object key) inside a state value, as given: JSON escaping must not hide a
/// secret from the check of the serialised value.
fn check_json_strings(value: &serde_json::Value) -> Result<()> {
    match value {
        serde_json::Value::String(s) => secrets::check("state value", s),
        serde_json::Value::Array(items) => items.iter().try_for_each(check_json_strings),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            secrets::check("state value", k)?;
            check_json_strings(v)
        }),
        _ => Ok(()),
    }
}
