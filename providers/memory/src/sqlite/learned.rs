//! Learned skills: one row per project and name, changed by [`crate::learned::apply`].

use rusqlite::{params, OptionalExtension, Transaction};

use super::MemoryDb;
use crate::backend::LearnedRule;
use crate::error::Result;
use crate::learned::{from_record, to_record, LearnedSkill};

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

    /// Apply `rule` to one learned skill in one write transaction.
    pub(crate) fn change_learned_skill(
        &self,
        project: &str,
        name: &str,
        rule: &LearnedRule,
    ) -> Result<Option<LearnedSkill>> {
        self.write(|tx, now| {
            let current = tx
                .prepare_cached("SELECT record FROM skill_library WHERE project_path = ?1 AND name = ?2")?
                .query_row(params![project, name], |r| r.get::<_, String>(0))
                .optional()?
                .map(|record| from_record(&record))
                .transpose()?;
            let after = rule(current, now)?;
            match &after {
                Some(skill) => {
                    tx.prepare_cached(
                        "INSERT INTO skill_library(project_path, name, record, updated_at) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT(project_path, name) DO UPDATE SET record = excluded.record, updated_at = excluded.updated_at",
                    )?
                    .execute(params![project, name, to_record(skill)?, now])?;
                }
                None => {
                    tx.prepare_cached("DELETE FROM skill_library WHERE project_path = ?1 AND name = ?2")?
                        .execute(params![project, name])?;
                }
            }
            Ok(after)
        })
    }
}

fn has_table(tx: &Transaction) -> Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'skill_library'")?
        .exists([])?)
}
