//! Learned skills: one row per project and name, changed by [`crate::learned::apply`] under
//! the project's advisory lock.

use super::{read_tx, write_tx, PostgresStore};
use crate::backend::LearnedRule;
use crate::error::Result;
use crate::learned::{from_record, to_record, LearnedSkill};

pub(super) async fn learned_skills(store: &PostgresStore, project: &str) -> Result<Vec<LearnedSkill>> {
    read_tx!(store, |tx| {
        // A read-only store does not migrate: an older database has no learned skills.
        let exists: bool = tx
            .query_one("SELECT to_regclass('skill_library') IS NOT NULL", &[])
            .await?
            .try_get(0)?;
        let mut out = Vec::new();
        if exists {
            let rows = tx
                .query(
                    "SELECT record FROM skill_library WHERE project_path = $1 ORDER BY name COLLATE \"C\"",
                    &[&project],
                )
                .await?;
            for row in rows {
                out.push(from_record(row.try_get(0)?)?);
            }
        }
        out
    })
}

pub(super) async fn change_learned_skill(
    store: &PostgresStore,
    project: &str,
    name: &str,
    rule: LearnedRule,
) -> Result<Option<LearnedSkill>> {
    write_tx!(store, [project], |tx, now| {
        let current = tx
            .query_opt(
                "SELECT record FROM skill_library WHERE project_path = $1 AND name = $2",
                &[&project, &name],
            )
            .await?
            .map(|row| row.try_get::<_, String>(0))
            .transpose()?
            .map(|record| from_record(&record))
            .transpose()?;
        let after = rule(current, now)?;
        match &after {
            Some(skill) => {
                tx.execute(
                    "INSERT INTO skill_library (project_path, name, record, updated_at) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (project_path, name) DO UPDATE SET record = excluded.record, updated_at = excluded.updated_at",
                    &[&project, &name, &to_record(skill)?, &now],
                )
                .await?;
            }
            None => {
                tx.execute(
                    "DELETE FROM skill_library WHERE project_path = $1 AND name = $2",
                    &[&project, &name],
                )
                .await?;
            }
        }
        after
    })
}
