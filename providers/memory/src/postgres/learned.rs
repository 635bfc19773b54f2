//! Learned skills: one row per project and name, changed by [`crate::learned::apply`] under
//! the project's advisory lock.

use deadpool_postgres::Transaction;

use super::{read_tx, PostgresStore};
use crate::error::Result;
use crate::learned::{from_record, LearnedSkill};

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

/// The stored form of one learned skill.
pub(super) async fn record(tx: &Transaction<'_>, project: &str, name: &str) -> Result<Option<String>> {
    let row = tx
        .query_opt(
            "SELECT record FROM skill_library WHERE project_path = $1 AND name = $2",
            &[&project, &name],
        )
        .await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// Store one learned skill's stored form at `now`, or (`None`) delete it.
pub(super) async fn set_record(
    tx: &Transaction<'_>,
    project: &str,
    name: &str,
    record: Option<&str>,
    now: i64,
) -> Result<()> {
    match record {
        Some(record) => tx
            .execute(
                "INSERT INTO skill_library (project_path, name, record, updated_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (project_path, name) DO UPDATE SET record = excluded.record, updated_at = excluded.updated_at",
                &[&project, &name, &record, &now],
            )
            .await?,
        None => tx
            .execute(
                "DELETE FROM skill_library WHERE project_path = $1 AND name = $2",
                &[&project, &name],
            )
            .await?,
    };
    Ok(())
}
