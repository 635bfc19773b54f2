//! Upkeep of a project, each one transaction: decay (importance fades without access), prune
//! (delete what fell below a threshold), compact (merge near-duplicates) and clear.

use std::collections::BTreeSet;

use super::rows::{deletion, remove, replace, Change, Rows, Which};
use crate::decide::{self, absorbed_survivor, plan_compaction};
use crate::error::Result;
use crate::text::term_set;
use crate::types::HistoryAction;

/// Lower the importance of memories not accessed lately: `importance × 0.95^(days / 7)`,
/// where `days` counts from the later of the last access and the last decay, so decaying
/// daily or once a month ends at the same importance. Returns how many memories changed.
pub(crate) async fn decay(rows: &mut impl Rows, project: &str, now: i64) -> Result<usize> {
    let mut changed = 0;
    for (num, old) in rows.select(project, Which::All).await? {
        let Some((new, reason)) = decide::decay_step(&old, now) else {
            continue;
        };
        let change = Change {
            action: HistoryAction::Decay,
            before: Some(&old),
            after: Some(&new),
            related_id: None,
            reason: &reason,
            at: now,
        };
        replace(rows, num, change).await?;
        changed += 1;
    }
    Ok(changed)
}

/// Delete the memories of a project whose importance is below `min_importance` (checked by
/// the caller); returns how many.
pub(crate) async fn prune(
    rows: &mut impl Rows,
    project: &str,
    min_importance: f32,
    now: i64,
) -> Result<usize> {
    let low = rows
        .select(project, Which::ImportanceBelow(min_importance))
        .await?;
    for (num, e) in &low {
        let reason = decide::prune_reason(e, min_importance);
        remove(rows, *num, deletion(e, &reason, now)).await?;
    }
    Ok(low.len())
}

/// Merge memories of a project whose contents are more than 0.90 similar. The survivor is the
/// more important one (then the more used, then the older); it keeps its content and gains
/// the others' keywords, the highest importance and the summed access counts. Returns how many
/// memories were merged away.
pub(crate) async fn compact(rows: &mut impl Rows, project: &str, now: i64) -> Result<usize> {
    let mut all = rows.select(project, Which::All).await?;
    let needed: BTreeSet<String> = all.iter().flat_map(|(_, e)| term_set(&e.content)).collect();
    let vocab = rows.vocabulary(project, &needed).await?;
    let mut merged_away = 0;
    for step in plan_compaction(&mut all, &vocab) {
        merged_away += step.absorbed.len();
        let (num, old) = &all[step.survivor];
        let survivor = absorbed_survivor(old, step.absorbed.iter().map(|&(j, _)| &all[j].1), now);
        for &(j, sim) in &step.absorbed {
            let (jnum, other) = &all[j];
            let reason = decide::compact_reason(&survivor.id, sim);
            let change = Change {
                action: HistoryAction::Merge,
                related_id: Some(&survivor.id),
                ..deletion(other, &reason, now)
            };
            remove(rows, *jnum, change).await?;
        }
        let related: Vec<&str> = step.absorbed.iter().map(|&(j, _)| all[j].1.id.as_str()).collect();
        let (related, reason) = (related.join(","), decide::absorb_reason(step.absorbed.len()));
        let change = Change {
            action: HistoryAction::Merge,
            before: Some(old),
            after: Some(&survivor),
            related_id: Some(&related),
            reason: &reason,
            at: now,
        };
        replace(rows, *num, change).await?;
    }
    Ok(merged_away)
}

/// Delete every memory of a project (each recorded in the history), returning how many there
/// were.
pub(crate) async fn clear(rows: &mut impl Rows, project: &str, now: i64) -> Result<usize> {
    let all = rows.select(project, Which::All).await?;
    for (_, e) in &all {
        rows.record(deletion(e, "cleared", now)).await?;
    }
    rows.delete_project(project).await?;
    Ok(all.len())
}
