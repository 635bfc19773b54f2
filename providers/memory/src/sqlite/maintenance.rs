//! Maintenance: decay (importance fades without access), prune (delete what fell below a
//! threshold) and compact (merge near-duplicates), each one transaction.

use rusqlite::{params, Transaction};

use super::rows::{delete_row, select_entries, store_row, COLS};
use super::{history, MemoryDb};
use crate::decide::{self, absorbed_survivor, plan_compaction};
use crate::error::Result;
use crate::rules::{check_importance, check_project};
use crate::types::{HistoryAction, MemoryEntry};

impl MemoryDb {
    /// Lower the importance of memories not accessed lately: `importance × 0.95^(days / 7)`,
    /// where `days` counts from the later of the last access and the last decay, so decaying
    /// daily or once a month ends at the same importance. Returns how many memories changed.
    pub(crate) fn decay(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1 ORDER BY num"),
                params![project],
            )?;
            let mut changed = 0;
            for (num, old) in rows {
                let Some((new, reason)) = decide::decay_step(&old, now) else {
                    continue;
                };
                store_row(tx, num, &old, &new)?;
                history::record(
                    tx,
                    HistoryAction::Decay,
                    &new.id,
                    &project,
                    Some(&old),
                    Some(&new),
                    None,
                    Some(&reason),
                    now,
                )?;
                changed += 1;
            }
            Ok(changed)
        })
    }

    /// Delete the memories of a project whose importance is below `min_importance`; returns
    /// how many. `min_importance` must lie in [`IMPORTANCE_RANGE`](super::IMPORTANCE_RANGE),
    /// like every importance (a threshold above 1 would delete everything).
    pub(crate) fn prune(&self, project: &str, min_importance: f32) -> Result<usize> {
        let project = check_project(project)?;
        let min_importance = check_importance(min_importance)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1 AND importance < ?2 ORDER BY num"),
                params![project, f64::from(min_importance)],
            )?;
            for (num, e) in &rows {
                let reason = decide::prune_reason(e, min_importance);
                delete_row(tx, *num, e, &reason, now)?;
            }
            Ok(rows.len())
        })
    }

    /// Merge memories of a project whose contents are more than 0.90 similar. The survivor is
    /// the more important one (then the more used, then the older); it keeps its content and
    /// gains the others' keywords, the highest importance and the summed access counts.
    /// Returns how many memories were merged away.
    pub(crate) fn compact(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let vocab = self.inner.vocab.get(tx, &project)?;
            let mut rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1"),
                params![project],
            )?;
            let mut merged_away = 0;
            for step in plan_compaction(&mut rows, &vocab) {
                merged_away += step.absorbed.len();
                absorb(tx, &rows, step.survivor, &step.absorbed, now)?;
            }
            Ok(merged_away)
        })
    }
}

/// Merge the memories `absorbed` (index and similarity in `rows`) into `rows[i]`: they are
/// deleted (their history says merged, into whom), and the survivor keeps its content and gains
/// their keywords, the highest importance and the summed access counts.
fn absorb(
    tx: &Transaction,
    rows: &[(i64, MemoryEntry)],
    i: usize,
    absorbed: &[(usize, f32)],
    now: i64,
) -> Result<()> {
    let (num, old) = &rows[i];
    let survivor = absorbed_survivor(old, absorbed.iter().map(|&(j, _)| &rows[j].1), now);
    for &(j, sim) in absorbed {
        let (jnum, other) = &rows[j];
        delete_row(tx, *jnum, other, &decide::compact_reason(&survivor.id, sim), now)?;
        // The removal is a merge, not a plain delete: re-label its history entry.
        tx.prepare_cached(
            "UPDATE memory_history SET action = 'merge', related_id = ?2
             WHERE id = (SELECT max(id) FROM memory_history WHERE memory_id = ?1)",
        )?
        .execute(params![other.id, survivor.id])?;
    }
    store_row(tx, *num, old, &survivor)?;
    let related: Vec<&str> = absorbed.iter().map(|&(j, _)| rows[j].1.id.as_str()).collect();
    let reason = format!("absorbed {} similar memories by compact", absorbed.len());
    history::record(
        tx,
        HistoryAction::Merge,
        &survivor.id,
        &survivor.project_path,
        Some(old),
        Some(&survivor),
        Some(&related.join(",")),
        Some(&reason),
        now,
    )?;
    Ok(())
}
