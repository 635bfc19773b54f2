//! Learned skills: one row per project and name, changed by [`crate::learned::apply`].

use rusqlite::{params, OptionalExtension, Transaction};

use super::MemoryDb;
use crate::error::Result;
use crate::learned::{from_record, LearnedSkill};

impl MemoryDb {
    /// The project's learned skills, by name; none in a database older than the table (a
    /// read-only open does not migrate).
    pub(crate) fn learned_skills(&self, project: &str) -> Result<Vec<LearnedSkill>> {
        self.read(|tx| {
            if !has_table(tx)? {
                return Ok(Vec::new());
            }
            let mut stmt =
                tx.prepare_cached("SELECT record FROM skill_library WHERE project_path = ?1 ORDER BY name")?;
            let rows = stmt.query_map(params![project], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(from_record(&row?)?);
            }
            Ok(out)
        })
    }
}

/// The stored form of one learned skill.
pub(super) fn record(tx: &Transaction, project: &str, name: &str) -> Result<Option<String>> {
    Ok(tx
        .prepare_cached("SELECT record FROM skill_library WHERE project_path = ?1 AND name = ?2")?
        .query_row(params![project, name], |r| r.get(0))
        .optional()?)
}

/// Store one learned skill's stored form at `now`, or (`None`) delete it.
pub(super) fn set_record(
    tx: &Transaction,
    project: &str,
    name: &str,
    record: Option<&str>,
    now: i64,
) -> Result<()> {
    match record {
        Some(record) => tx
            .prepare_cached(
                "INSERT INTO skill_library(project_path, name, record, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project_path, name) DO UPDATE SET record = excluded.record, updated_at = excluded.updated_at",
            )?
            .execute(params![project, name, record, now])?,
        None => tx
            .prepare_cached("DELETE FROM skill_library WHERE project_path = ?1 AND name = ?2")?
            .execute(params![project, name])?,
    };
    Ok(())
}

fn has_table(tx: &Transaction) -> Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'skill_library'")?
        .exists([])?)
}
