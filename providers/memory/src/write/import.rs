//! Import: checked records written in one transaction, keeping what is already there and
//! never letting an id reach across projects.

use std::collections::{HashMap, HashSet};

use super::rows::{Change, Rows};
use crate::error::Result;
use crate::transfer::{well_formed_id, ImportPlan, ImportReport};
use crate::types::{HistoryAction, HistoryEntry};

/// Write the records of a checked import (all or nothing, in the caller's transaction); see
/// [`MemoryStore::import`](crate::store::MemoryStore::import) for the rules.
pub(crate) async fn import(rows: &mut impl Rows, plan: &ImportPlan, now: i64) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut ids = IdMap::default();
    let pairs: Vec<(String, String)> = plan
        .memories
        .iter()
        .map(|m| (m.project_path.clone(), m.content.clone()))
        .collect();
    let mut present = rows.stored_contents(&pairs).await?;
    for mut m in plan.memories.iter().cloned() {
        let original = m.id.clone();
        if !present.insert((m.project_path.clone(), m.content.clone())) {
            ids.skip(&original);
            report.memories_skipped += 1;
            continue;
        }
        if m.id.is_empty() {
            // A minimal record: a new memory, with the import's time when it gave none.
            m.id = rows.new_memory_id().await?;
            if m.created_at == 0 {
                (m.created_at, m.updated_at, m.last_accessed_at) = (now, now, now);
            }
        } else if !well_formed_id(&m.id) || !rows.id_is_free(&m.id, Some(&m.project_path)).await? {
            m.id = rows.new_memory_id().await?;
            report.memories_renamed += 1;
        }
        ids.rename(&original, &m.id);
        if m.superseded_by.as_deref().is_some_and(|s| !well_formed_id(s)) {
            m.superseded_by = None;
            m.superseded_at = None;
        }
        rows.insert(&m).await?;
        if plan.records_insert(&original) {
            let change = Change {
                action: HistoryAction::Insert,
                before: None,
                after: Some(&m),
                related_id: None,
                reason: "imported",
                at: now,
            };
            rows.record(change).await?;
        }
        report.memories_added += 1;
    }
    for mut e in plan.episodes.iter().cloned() {
        match rows.episode_project(&e.id).await? {
            Some(p) if p == e.project_path => {
                report.episodes_skipped += 1;
                continue;
            }
            Some(_) => e.id = rows.new_episode_id().await?,
            None if !well_formed_id(&e.id) => e.id = rows.new_episode_id().await?,
            None => {}
        }
        rows.insert_episode(&e).await?;
        report.episodes_added += 1;
    }
    for h in plan.history.iter().cloned() {
        if ids.skipped(&h.memory_id) {
            report.history_skipped += 1;
            continue;
        }
        if ids.get(&h.memory_id).is_none() && !rows.id_is_free(&h.memory_id, Some(&h.project_path)).await? {
            // A removed memory whose id another project uses: its history moves under a new
            // id, so no undo can reach across projects.
            let fresh = rows.new_memory_id().await?;
            ids.rename(&h.memory_id.clone(), &fresh);
        }
        let h = ids.apply(h);
        if rows
            .history_entry(h.id)
            .await?
            .is_some_and(|e| same_history(&e, &h))
        {
            report.history_skipped += 1;
            continue;
        }
        rows.insert_history(&h).await?;
        report.history_added += 1;
    }
    Ok(report)
}

/// What happened to the memory ids of an import: kept, renamed, or skipped (the memory was
/// already there), so the history that follows refers to the memories as stored.
#[derive(Default)]
struct IdMap {
    /// Every stored memory of the file: its id in the file → its id as stored.
    renamed: HashMap<String, String>,
    skipped: HashSet<String>,
}

impl IdMap {
    /// Memory `from` of the file is stored as `to` (the same id when it was kept).
    fn rename(&mut self, from: &str, to: &str) {
        if !from.is_empty() {
            self.renamed.insert(from.to_string(), to.to_string());
        }
    }

    /// Memory `id` of the file was skipped: its history is not imported.
    fn skip(&mut self, id: &str) {
        self.skipped.insert(id.to_string());
    }

    /// Whether the history of memory `id` of the file is dropped.
    fn skipped(&self, id: &str) -> bool {
        self.skipped.contains(id)
    }

    /// The stored id of memory `id` of the file, once known.
    fn get(&self, id: &str) -> Option<&str> {
        self.renamed.get(id).map(String::as_str)
    }

    /// `h` with its memory ids as stored.
    fn apply(&self, mut h: HistoryEntry) -> HistoryEntry {
        let map = |id: &mut String| {
            if let Some(new) = self.renamed.get(id.as_str()) {
                *id = new.clone();
            }
        };
        map(&mut h.memory_id);
        for m in h.before.iter_mut().chain(h.after.iter_mut()) {
            map(&mut m.id);
            if let Some(s) = &mut m.superseded_by {
                map(s);
            }
        }
        if let Some(r) = &mut h.related_id {
            map(r);
        }
        h
    }
}

/// Whether an imported history entry equals one already stored under its id (the same file
/// imported again).
fn same_history(a: &HistoryEntry, b: &HistoryEntry) -> bool {
    a.memory_id == b.memory_id && a.project_path == b.project_path && a.action == b.action && a.at == b.at
}
