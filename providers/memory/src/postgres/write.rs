//! The writes of the PostgreSQL store: each checks its input, then runs the shared write
//! ([`crate::write`]) in one transaction holding the advisory locks of the projects it
//! touches, so concurrent writers of a project take turns.

use super::writer::write_rows;
use super::{write_tx, PostgresStore};
use crate::error::{MemoryError, Result};
use crate::rules::{check_batch, check_importance, check_new, check_project, check_update, MAX_ACCESS_COUNT};
use crate::transfer::{ExportRecord, ImportPlan, ImportReport};
use crate::types::*;
use crate::write;

/// The project a memory id belongs to, read before its project's lock is taken (a memory
/// never changes project, so it is still right once the lock is held).
async fn project_of(store: &PostgresStore, id: &str) -> Result<String> {
    let client = store.client().await?;
    let row = client
        .query_opt("SELECT project_path FROM project_memories WHERE id = $1", &[&id])
        .await?;
    row.map(|r| r.get(0))
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))
}

pub(super) async fn add(store: &PostgresStore, new: NewMemoryEntry) -> Result<MemoryEntry> {
    let checked = check_new(&new)?;
    let project = checked.project_path.clone();
    let vectors = store.vectors([checked.content.as_str()]).await?;
    write_rows!(store, [project.as_str()], vectors, |rows, now| {
        write::add(&mut rows, checked.clone(), &new.supersedes, now).await?
    })
}

pub(super) async fn add_many(
    store: &PostgresStore,
    entries: Vec<NewMemoryEntry>,
) -> Result<Vec<MemoryEntry>> {
    let checked = check_batch(entries)?;
    let projects: Vec<&str> = checked.iter().map(|(c, _)| c.project_path.as_str()).collect();
    let vectors = store
        .vectors(checked.iter().map(|(c, _)| c.content.as_str()))
        .await?;
    write_rows!(store, projects.iter().copied(), vectors, |rows, now| {
        write::add_many(&mut rows, checked.clone(), now).await?
    })
}

pub(super) async fn update(store: &PostgresStore, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
    let vectors = store.vectors(update.content.as_deref()).await?;
    let update = check_update(update)?;
    let project = project_of(store, id).await?;
    write_rows!(store, [project.as_str()], vectors, |rows, now| {
        write::update(&mut rows, id, update.clone(), now).await?
    })
}

pub(super) async fn upsert(store: &PostgresStore, new: NewMemoryEntry) -> Result<UpsertResult> {
    let checked = check_new(&new)?;
    let project = checked.project_path.clone();
    let vectors = store.vectors([checked.content.as_str()]).await?;
    write_rows!(store, [project.as_str()], vectors, |rows, now| {
        write::upsert(&mut rows, checked.clone(), &new.supersedes, now).await?
    })
}

pub(super) async fn delete(store: &PostgresStore, id: &str) -> Result<MemoryEntry> {
    let project = project_of(store, id).await?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::delete(&mut rows, id, now).await? }
    )
}

pub(super) async fn forget(store: &PostgresStore, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
    let project = check_project(project)?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::forget(&mut rows, &project, query, now).await? }
    )
}

pub(super) async fn undo(
    store: &PostgresStore,
    project: &str,
    history_id: i64,
) -> Result<Option<MemoryEntry>> {
    write_rows!(store, [project], store.vectors([]).await?, |rows, now| {
        write::undo(&mut rows, project, history_id, now).await?
    })
}

pub(super) async fn clear(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::clear(&mut rows, &project, now).await? }
    )
}

pub(super) async fn decay(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::decay(&mut rows, &project, now).await? }
    )
}

pub(super) async fn prune(store: &PostgresStore, project: &str, min_importance: f32) -> Result<usize> {
    let project = check_project(project)?;
    let min_importance = check_importance(min_importance)?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::prune(&mut rows, &project, min_importance, now).await? }
    )
}

pub(super) async fn compact(store: &PostgresStore, project: &str) -> Result<usize> {
    let project = check_project(project)?;
    write_rows!(
        store,
        [project.as_str()],
        store.vectors([]).await?,
        |rows, now| { write::compact(&mut rows, &project, now).await? }
    )
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
    let vectors = store
        .vectors(plan.memories.iter().map(|m| m.content.as_str()))
        .await?;
    let report = write_rows!(store, projects.iter().copied(), vectors, |rows, now| {
        write::import(&mut rows, &plan, now).await?
    })?;
    if report.memories_added >= ANALYZE_AFTER {
        analyze(store).await;
    }
    Ok(report)
}

/// From how many memories an import brings the planner's statistics up to date itself.
const ANALYZE_AFTER: usize = 1_000;

/// Bring the planner's statistics of the memory tables up to date. Until autovacuum does, a
/// search right after a large import is planned with none: 122 ms instead of 9 ms at 10,000
/// memories. The import has committed, so a failure (a user who does not own the tables) is
/// only a warning.
async fn analyze(store: &PostgresStore) {
    let done = async {
        let client = store.client().await?;
        client
            .batch_execute("ANALYZE project_memories, memory_postings, memory_terms, memory_sketches")
            .await?;
        Ok::<_, MemoryError>(())
    };
    if let Err(e) = done.await {
        tracing::warn!(error = %e, "cannot update the planner's statistics after an import");
    }
}

pub(super) async fn add_episode(store: &PostgresStore, new: NewEpisodicRecord) -> Result<EpisodicRecord> {
    let project = crate::rules::check_episode(&new)?;
    write_rows!(store, [project.as_str()], None, |rows, now| {
        write::add_episode(&mut rows, new.clone(), project.clone(), now).await?
    })
}

/// Vectors for up to `limit` memories of a project that lack one of the configured model.
/// Store the terms of up to `limit` memories of a project written without them; how many.
pub(super) async fn fill_terms(store: &PostgresStore, project: &str, limit: usize) -> Result<usize> {
    let project = check_project(project)?;
    write_tx!(store, [project.as_str()], |tx, _now| {
        super::rows::fill_terms(&tx, &project, limit).await?
    })
}

pub(super) async fn embed_missing(store: &PostgresStore, project: &str, limit: usize) -> Result<usize> {
    let project = check_project(project)?;
    let semantic = store
        .inner
        .options
        .semantic()
        .ok_or_else(crate::vectors::no_model)?;
    let model = semantic.model_id().to_owned();
    let missing = super::read_tx!(store, |tx| {
        super::rows::missing_vectors(&tx, &project, &model, limit).await?
    })?;
    if missing.is_empty() {
        return Ok(0);
    }
    let Some(vectors) = store.vectors(missing.iter().map(|(_, c)| c.as_str())).await? else {
        return Ok(0);
    };
    write_tx!(store, [project.as_str()], |tx, _now| {
        let mut vectors = vectors.clone();
        let mut touched = crate::sketches::Touched::default();
        for (num, content) in &missing {
            super::rows::set_vector(&tx, *num, content, Some(vectors.of(content))).await?;
            touched.note(&project, *num);
        }
        super::sketches::sync(&tx, &touched).await?;
        missing.len()
    })
}

/// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and last-access times. Takes the
/// locks of the memories' projects, so a merge never writes back a count read before it.
pub(super) async fn touch(store: &PostgresStore, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let projects: Vec<String> = {
        let client = store.client().await?;
        client
            .query(
                "SELECT DISTINCT project_path FROM project_memories WHERE id = ANY($1)",
                &[&ids],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    write_tx!(store, projects.iter().map(String::as_str), |tx, now| {
        tx.execute(
            "UPDATE project_memories SET access_count = LEAST(access_count, $3::bigint - 1) + 1, last_accessed_at = $1
             WHERE id = ANY($2)",
            &[&now, &ids, &MAX_ACCESS_COUNT],
        )
        .await?;
    })
}
