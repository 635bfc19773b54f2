//! Export and import on SQLite: the records of [`crate::transfer`], read and written in one
//! transaction each.

use rusqlite::{params, OptionalExtension, Transaction};

use super::history::{self, insert_history, row_to_history, HISTORY_COLS};
use super::rows::{
    find_by_content, id_is_free, insert_entry, insert_episode, new_unique_id, row_to_episode, select_entries,
    COLS,
};
use super::MemoryDb;
use crate::error::Result;
use crate::transfer::{same_history, well_formed_id, ExportRecord, IdMap, ImportPlan, ImportReport};
use crate::types::{HistoryAction, HistoryEntry};

impl MemoryDb {
    /// Every memory (oldest first), episodic record and history entry (oldest first) of a
    /// project, or of all projects.
    pub(crate) fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        self.read(|tx| {
            let mut out: Vec<ExportRecord> = select_entries(
                tx,
                &format!(
                    "SELECT {COLS} FROM project_memories WHERE ?1 IS NULL OR project_path = ?1
                     ORDER BY project_path, created_at, id"
                ),
                params![project],
            )?
            .into_iter()
            .map(|(_, mut e)| {
                self.redact_read(&mut e);
                ExportRecord::Memory(e)
            })
            .collect();
            let mut stmt = tx.prepare_cached(
                "SELECT id, project_path, session_id, record_type, task_summary, approach_summary,
                        outcome_summary, tools_used, keywords, created_at
                 FROM episodic_records WHERE ?1 IS NULL OR project_path = ?1
                 ORDER BY project_path, created_at, id",
            )?;
            for e in stmt.query_map(params![project], row_to_episode)? {
                out.push(ExportRecord::Episode(e?));
            }
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE ?1 IS NULL OR project_path = ?1 ORDER BY id"
            ))?;
            for h in stmt.query_map(params![project], row_to_history)? {
                let mut h = h?;
                for m in h.before.iter_mut().chain(h.after.iter_mut()) {
                    self.redact_read(m);
                }
                out.push(ExportRecord::History(Box::new(h)));
            }
            Ok(out)
        })
    }

    /// Import records in one transaction (all or nothing); see
    /// [`MemoryStore::import`](crate::MemoryStore::import) for the rules.
    pub(crate) fn import(&self, records: &[ExportRecord], project: Option<&str>) -> Result<ImportReport> {
        let plan = ImportPlan::new(records.to_vec(), project)?;
        self.write(|tx, now| {
            let mut report = ImportReport::default();
            let mut ids = IdMap::default();
            for mut m in plan.memories.iter().cloned() {
                let original = m.id.clone();
                if find_by_content(tx, &m.project_path, &m.content)?.is_some() {
                    ids.skip(&original);
                    report.memories_skipped += 1;
                    continue;
                }
                if m.id.is_empty() {
                    // A minimal record: a new memory, with the import's time when it gave none.
                    m.id = new_unique_id(tx, "project_memories")?;
                    if m.created_at == 0 {
                        (m.created_at, m.updated_at, m.last_accessed_at) = (now, now, now);
                    }
                } else if !well_formed_id(&m.id) || !id_is_free(tx, &m.id, Some(&m.project_path))? {
                    m.id = new_unique_id(tx, "project_memories")?;
                    report.memories_renamed += 1;
                }
                ids.rename(&original, &m.id);
                if m.superseded_by.as_deref().is_some_and(|s| !well_formed_id(s)) {
                    m.superseded_by = None;
                    m.superseded_at = None;
                }
                insert_entry(tx, &m)?;
                if plan.records_insert(&original) {
                    history::record(
                        tx,
                        HistoryAction::Insert,
                        &m.id,
                        &m.project_path,
                        None,
                        Some(&m),
                        None,
                        Some("imported"),
                        now,
                    )?;
                }
                report.memories_added += 1;
            }
            for mut e in plan.episodes.iter().cloned() {
                let owner: Option<String> = tx
                    .prepare_cached("SELECT project_path FROM episodic_records WHERE id = ?1")?
                    .query_row(params![e.id], |r| r.get(0))
                    .optional()?;
                match owner {
                    Some(p) if p == e.project_path => {
                        report.episodes_skipped += 1;
                        continue;
                    }
                    Some(_) => e.id = new_unique_id(tx, "episodic_records")?,
                    None if !well_formed_id(&e.id) => e.id = new_unique_id(tx, "episodic_records")?,
                    None => {}
                }
                insert_episode(tx, &e)?;
                report.episodes_added += 1;
            }
            for h in plan.history.iter().cloned() {
                if ids.skipped(&h.memory_id) {
                    report.history_skipped += 1;
                    continue;
                }
                if ids.get(&h.memory_id).is_none() && !id_is_free(tx, &h.memory_id, Some(&h.project_path))? {
                    // A removed memory whose id another project uses: its history moves under
                    // a new id, so no undo can reach across projects.
                    let fresh = new_unique_id(tx, "project_memories")?;
                    ids.rename(&h.memory_id.clone(), &fresh);
                }
                let h = ids.apply(h);
                if existing(tx, h.id)?.is_some_and(|e| same_history(&e, &h)) {
                    report.history_skipped += 1;
                    continue;
                }
                insert_history(tx, &h)?;
                report.history_added += 1;
            }
            Ok(report)
        })
    }
}

/// The history entry stored under `id`, if any.
fn existing(tx: &Transaction, id: i64) -> Result<Option<HistoryEntry>> {
    Ok(tx
        .prepare_cached(&format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE id = ?1"
        ))?
        .query_row(params![id], row_to_history)
        .optional()?)
}
