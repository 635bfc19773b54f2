//! Maintenance on PostgreSQL — decay, prune, compact and clear — each one transaction holding
//! the project's lock, with the decisions of [`crate::decide`] (so both backends change the
//! same memories the same way).

use std::collections::BTreeSet;

use super::rows::{delete_row, select_entries, store_row, COLS};
use super::search::vocabulary;
use super::{history, write_tx, PostgresStore};
use crate::decide::{self, absorbed_survivor, plan_compaction};
use crate::error::Result;
use crate::rules::{check_importance, check_project};
use crate::text::term_set;
use crate::types::HistoryAction;

pub(super) async fn decay(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let sql = format!("SELECT {COLS} FROM project_memories WHERE project_path = $1 ORDER BY num");
        let mut changed = 0;
        for (num, old) in select_entries(&tx, &sql, &[&project]).await? {
            let Some((new, reason)) = decide::decay_step(&old, now) else {
                continue;
            };
            store_row(&tx, num, &old, &new).await?;
            history::record(
                &tx,
                HistoryAction::Decay,
                &new,
                Some(&old),
                Some(&new),
                None,
                Some(&reason),
                now,
            )
            .await?;
            changed += 1;
        }
        changed
    })
}

pub(super) async fn prune(store: &PostgresStore, project: &str, min_importance: f32) -> Result<usize> {
    let project = check_project(project)?;
    let min_importance = check_importance(min_importance)?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE project_path = $1 AND importance < $2 ORDER BY num"
        );
        let rows = select_entries(&tx, &sql, &[&project, &min_importance]).await?;
        for (num, e) in &rows {
            delete_row(&tx, *num, e, &decide::prune_reason(e, min_importance), now).await?;
        }
        rows.len()
    })
}

pub(super) async fn compact(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let sql = format!("SELECT {COLS} FROM project_memories WHERE project_path = $1");
        let mut rows = select_entries(&tx, &sql, &[&project]).await?;
        let needed: BTreeSet<String> = rows.iter().flat_map(|(_, e)| term_set(&e.content)).collect();
        let vocab = vocabulary(&tx, &project, &needed).await?;
        let mut merged_away = 0;
        for step in plan_compaction(&mut rows, &vocab) {
            merged_away += step.absorbed.len();
            let (num, old) = &rows[step.survivor];
            let survivor = absorbed_survivor(old, step.absorbed.iter().map(|&(j, _)| &rows[j].1), now);
            for &(j, sim) in &step.absorbed {
                let (jnum, other) = &rows[j];
                delete_row(&tx, *jnum, other, &decide::compact_reason(&survivor.id, sim), now).await?;
                // The removal is a merge, not a plain delete: re-label its history entry.
                tx.execute(
                    "UPDATE memory_history SET action = 'merge', related_id = $2
                     WHERE id = (SELECT max(id) FROM memory_history WHERE memory_id = $1)",
                    &[&other.id, &survivor.id],
                )
                .await?;
            }
            store_row(&tx, *num, old, &survivor).await?;
            let related: Vec<&str> = step
                .absorbed
                .iter()
                .map(|&(j, _)| rows[j].1.id.as_str())
                .collect();
            let reason = format!("absorbed {} similar memories by compact", step.absorbed.len());
            history::record(
                &tx,
                HistoryAction::Merge,
                &survivor,
                Some(old),
                Some(&survivor),
                Some(&related.join(",")),
                Some(&reason),
                now,
            )
            .await?;
        }
        merged_away
    })
}

pub(super) async fn clear(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let sql = format!("SELECT {COLS} FROM project_memories WHERE project_path = $1");
        let rows = select_entries(&tx, &sql, &[&project]).await?;
        for (_, e) in &rows {
            history::record(
                &tx,
                HistoryAction::Delete,
                e,
                Some(e),
                None,
                None,
                Some("cleared"),
                now,
            )
            .await?;
        }
        tx.execute(
            "DELETE FROM project_memories WHERE project_path = $1",
            &[&project],
        )
        .await?;
        tx.execute("DELETE FROM memory_terms WHERE project_path = $1", &[&project])
            .await?;
        tx.execute(
            "UPDATE memory_projects SET docs = 0 WHERE project_path = $1",
            &[&project],
        )
        .await?;
        rows.len()
    })
}
