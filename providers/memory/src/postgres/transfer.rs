//! Export and import on PostgreSQL: the records of [`crate::transfer`], each call one
//! transaction, with the same rules as on SQLite (so a SQLite export imports here exactly:
//! the same ids, counts and history).

use std::collections::HashSet;

use deadpool_postgres::Transaction;

use super::history::{insert_history, select_history, HISTORY_COLS};
use super::rows::{
    id_is_free, insert_episode, insert_row, new_unique_id, row_to_episode, select_entries, TermCounts, COLS,
    EPISODE_COLS,
};
use super::{history, read_tx, write_tx, PostgresStore};
use crate::error::Result;
use crate::transfer::{same_history, well_formed_id, ExportRecord, IdMap, ImportPlan, ImportReport};
use crate::types::{HistoryAction, HistoryEntry, MemoryEntry};

/// Every memory (oldest first), episodic record and history entry (oldest first) of a
/// project, or of all projects.
pub(super) async fn export(store: &PostgresStore, project: Option<&str>) -> Result<Vec<ExportRecord>> {
    read_tx!(store, |tx| {
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        let mut out: Vec<ExportRecord> = select_entries(&tx, &sql, &[&project])
            .await?
            .into_iter()
            .map(|(_, mut e)| {
                store.redact_read(&mut e);
                ExportRecord::Memory(e)
            })
            .collect();
        let sql = format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        for row in tx.query(&sql, &[&project]).await? {
            out.push(ExportRecord::Episode(row_to_episode(&row)?));
        }
        let sql = format!("SELECT {HISTORY_COLS} FROM memory_history WHERE $1::text IS NULL OR project_path = $1 ORDER BY id");
        for mut h in select_history(&tx, &sql, &[&project]).await? {
            for m in h.before.iter_mut().chain(h.after.iter_mut()) {
                store.redact_read(m);
            }
            out.push(ExportRecord::History(Box::new(h)));
        }
        out
    })
}

/// Which of `memories`' contents their projects already hold: one query per 10,000, not one
/// per memory (planned while the import grows the table, a per-row lookup may scan it).
async fn stored_contents(
    tx: &Transaction<'_>,
    memories: &[MemoryEntry],
) -> Result<HashSet<(String, String)>> {
    let mut present = HashSet::new();
    for chunk in memories.chunks(10_000) {
        let projects: Vec<&str> = chunk.iter().map(|m| m.project_path.as_str()).collect();
        let contents: Vec<&str> = chunk.iter().map(|m| m.content.as_str()).collect();
        let rows = tx
            .query(
                "SELECT m.project_path, m.content FROM project_memories m
                 JOIN unnest($1::text[], $2::text[]) AS u(project_path, content)
                   ON m.project_path = u.project_path AND md5(m.content) = md5(u.content) AND m.content = u.content",
                &[&projects, &contents],
            )
            .await?;
        for row in rows {
            present.insert((row.try_get(0)?, row.try_get(1)?));
        }
    }
    Ok(present)
}

/// Import records in one transaction (all or nothing), holding the lock of every project
/// they touch.
pub(super) async fn import(
    store: &PostgresStore,
    records: Vec<ExportRecord>,
    project: Option<&str>,
) -> Result<ImportReport> {
    let plan = ImportPlan::new(records, project)?;
    let projects: Vec<&str> = plan
        .memories
        .iter()
        .map(|m| m.project_path.as_str())
        .chain(plan.episodes.iter().map(|e| e.project_path.as_str()))
        .chain(plan.history.iter().map(|h| h.project_path.as_str()))
        .collect();
    write_tx!(store, projects.iter().copied(), |tx, now| {
        import_locked(&tx, &plan, now).await?
    })
}

async fn import_locked(tx: &Transaction<'_>, plan: &ImportPlan, now: i64) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut ids = IdMap::default();
    let mut counts = TermCounts::default();
    let mut present = stored_contents(tx, &plan.memories).await?;
    for mut m in plan.memories.iter().cloned() {
        let original = m.id.clone();
        if !present.insert((m.project_path.clone(), m.content.clone())) {
            ids.skip(&original);
            report.memories_skipped += 1;
            continue;
        }
        if m.id.is_empty() {
            m.id = new_unique_id(tx, true).await?;
            if m.created_at == 0 {
                (m.created_at, m.updated_at, m.last_accessed_at) = (now, now, now);
            }
        } else if !well_formed_id(&m.id) || !id_is_free(tx, &m.id, Some(&m.project_path)).await? {
            m.id = new_unique_id(tx, true).await?;
            report.memories_renamed += 1;
        }
        ids.rename(&original, &m.id);
        if m.superseded_by.as_deref().is_some_and(|s| !well_formed_id(s)) {
            m.superseded_by = None;
            m.superseded_at = None;
        }
        insert_row(tx, &m).await?;
        counts.count(&m, 1);
        if plan.records_insert(&original) {
            history::record(
                tx,
                HistoryAction::Insert,
                &m,
                None,
                Some(&m),
                None,
                Some("imported"),
                now,
            )
            .await?;
        }
        report.memories_added += 1;
    }
    counts.write(tx).await?;
    for mut e in plan.episodes.iter().cloned() {
        let owner: Option<String> = tx
            .query_opt(
                "SELECT project_path FROM episodic_records WHERE id = $1",
                &[&e.id],
            )
            .await?
            .map(|r| r.try_get(0))
            .transpose()?;
        match owner {
            Some(p) if p == e.project_path => {
                report.episodes_skipped += 1;
                continue;
            }
            Some(_) => e.id = new_unique_id(tx, false).await?,
            None if !well_formed_id(&e.id) => e.id = new_unique_id(tx, false).await?,
            None => {}
        }
        insert_episode(tx, &e).await?;
        report.episodes_added += 1;
    }
    for h in plan.history.iter().cloned() {
        if ids.skipped(&h.memory_id) {
            report.history_skipped += 1;
            continue;
        }
        if ids.get(&h.memory_id).is_none() && !id_is_free(tx, &h.memory_id, Some(&h.project_path)).await? {
            // A removed memory whose id another project uses: its history moves under a new
            // id, so no undo can reach across projects.
            let fresh = new_unique_id(tx, true).await?;
            ids.rename(&h.memory_id.clone(), &fresh);
        }
        let h = ids.apply(h);
        if existing(tx, h.id).await?.is_some_and(|e| same_history(&e, &h)) {
            report.history_skipped += 1;
            continue;
        }
        insert_history(tx, &h).await?;
        report.history_added += 1;
    }
    Ok(report)
}

async fn existing(tx: &Transaction<'_>, id: i64) -> Result<Option<HistoryEntry>> {
    let sql = format!("SELECT {HISTORY_COLS} FROM memory_history WHERE id = $1");
    Ok(select_history(tx, &sql, &[&id]).await?.pop())
}
