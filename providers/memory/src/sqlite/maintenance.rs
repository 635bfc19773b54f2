//! Maintenance: decay (importance fades without access), prune (delete what fell below a
//! threshold) and compact (merge near-duplicates), each one transaction.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Transaction};

use super::rows::{delete_row, select_entries, store_row, COLS};
use super::write::{check_importance, check_project};
use super::{history, MemoryDb, COMPACT_SIMILARITY};
use crate::clock::DAY_MS;
use crate::error::Result;
use crate::text::{self, terms};
use crate::types::{HistoryAction, MemoryEntry};

/// `importance × 0.95^(days / 7)` for `days` without access: importance halves in about three
/// months.
pub fn decayed_importance(importance: f32, days: f64) -> f32 {
    (f64::from(importance) * 0.95f64.powf(days.max(0.0) / 7.0)) as f32
}

impl MemoryDb {
    /// Lower the importance of memories not accessed lately: `importance × 0.95^(days / 7)`,
    /// where `days` counts from the later of the last access and the last decay, so decaying
    /// daily or once a month ends at the same importance. Returns how many memories changed.
    pub fn decay(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1 ORDER BY num"),
                params![project],
            )?;
            let mut changed = 0;
            for (num, old) in rows {
                let since = old
                    .decayed_at
                    .map_or(old.last_accessed_at, |d| d.max(old.last_accessed_at));
                let days = (now - since) as f64 / DAY_MS as f64;
                if days <= 0.0 {
                    continue;
                }
                let importance = decayed_importance(old.importance, days);
                if importance == old.importance {
                    continue;
                }
                let mut new = old.clone();
                new.importance = importance;
                new.decayed_at = Some(now);
                store_row(tx, num, &old, &new)?;
                let reason = format!("decayed after {days:.1} days without access");
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
    pub fn prune(&self, project: &str, min_importance: f32) -> Result<usize> {
        let project = check_project(project)?;
        let min_importance = check_importance(min_importance)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1 AND importance < ?2 ORDER BY num"),
                params![project, f64::from(min_importance)],
            )?;
            for (num, e) in &rows {
                let reason = format!("pruned: importance {:.3} below {min_importance:.3}", e.importance);
                delete_row(tx, *num, e, &reason, now)?;
            }
            Ok(rows.len())
        })
    }

    /// Merge memories of a project whose contents are more than 0.90 similar. The survivor is
    /// the more important one (then the more used, then the older); it keeps its content and
    /// gains the others' keywords, the highest importance and the summed access counts.
    /// Returns how many memories were merged away.
    pub fn compact(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let vocab = self.inner.vocab.get(tx, &project)?;
            let mut rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1"),
                params![project],
            )?;
            rows.sort_by(|(_, a), (_, b)| {
                b.importance
                    .total_cmp(&a.importance)
                    .then(b.access_count.cmp(&a.access_count))
                    .then(a.created_at.cmp(&b.created_at))
                    .then(a.id.cmp(&b.id))
            });
            let vectors: Vec<_> = rows
                .iter()
                .map(|(_, e)| vocab.vector(&terms(&e.content)))
                .collect();
            let mut postings: HashMap<&str, Vec<usize>> = HashMap::new();
            for (i, v) in vectors.iter().enumerate() {
                for (term, _) in v.weights() {
                    postings.entry(term.as_str()).or_default().push(i);
                }
            }
            let mut gone: HashSet<usize> = HashSet::new();
            let mut merged_away = 0;
            for i in 0..rows.len() {
                if gone.contains(&i) {
                    continue;
                }
                // Any memory at least COMPACT_SIMILARITY similar shares one of these terms.
                let mut candidates: Vec<usize> = vectors[i]
                    .prefix_terms(COMPACT_SIMILARITY)
                    .into_iter()
                    .flat_map(|t| postings.get(t).into_iter().flatten().copied())
                    .filter(|&j| j > i && !gone.contains(&j))
                    .collect();
                candidates.sort_unstable();
                candidates.dedup();
                let mut absorbed: Vec<(usize, f32)> = Vec::new();
                for j in candidates {
                    let sim = vectors[i].cosine(&vectors[j]);
                    if sim > COMPACT_SIMILARITY {
                        absorbed.push((j, sim));
                    }
                }
                if absorbed.is_empty() {
                    continue;
                }
                for &(j, _) in &absorbed {
                    gone.insert(j);
                }
                merged_away += absorbed.len();
                absorb(tx, &rows, i, &absorbed, now)?;
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
    let mut survivor: MemoryEntry = old.clone();
    let mut keywords = survivor.keywords.clone();
    for &(j, sim) in absorbed {
        let (jnum, other) = &rows[j];
        keywords.extend(other.keywords.iter().cloned());
        survivor.importance = survivor.importance.max(other.importance);
        survivor.access_count = survivor
            .access_count
            .saturating_add(other.access_count)
            .min(super::MAX_ACCESS_COUNT);
        survivor.last_accessed_at = survivor.last_accessed_at.max(other.last_accessed_at);
        let reason = format!("merged into `{}` by compact (similarity {sim:.2})", survivor.id);
        delete_row(tx, *jnum, other, &reason, now)?;
        // The removal is a merge, not a plain delete: re-label its history entry.
        tx.prepare_cached(
            "UPDATE memory_history SET action = 'merge', related_id = ?2
             WHERE id = (SELECT max(id) FROM memory_history WHERE memory_id = ?1)",
        )?
        .execute(params![other.id, survivor.id])?;
    }
    survivor.keywords = text::normalize_keywords(&keywords);
    survivor.updated_at = now;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_formula_by_hand() {
        assert_eq!(decayed_importance(0.8, 0.0), 0.8);
        assert!((decayed_importance(0.8, 7.0) - 0.76).abs() < 1e-6);
        assert!((decayed_importance(1.0, 14.0) - 0.9025).abs() < 1e-6);
        assert!((decayed_importance(0.5, 3.5) - 0.5 * 0.95f32.sqrt()).abs() < 1e-6);
    }
}
