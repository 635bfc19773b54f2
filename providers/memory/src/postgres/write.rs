//! The writes of the PostgreSQL store: each is an [`Op`] (checked when made) run in one
//! transaction holding the advisory locks of the projects it touches, so concurrent writers
//! of a project take turns.

use super::writer::write_rows;
use super::{write_tx, PostgresStore};
use crate::error::{MemoryError, Result};
use crate::rules::MAX_ACCESS_COUNT;
use crate::write::{Done, Locks, Op};

/// Run a checked write in one transaction, its vectors computed first; a large import then
/// brings the planner's statistics up to date.
pub(super) async fn run(store: &PostgresStore, op: Op) -> Result<Done> {
    let vectors = store.vectors(op.contents()).await?;
    let projects = match op.locks() {
        Locks::Projects(projects) => projects.into_iter().map(str::to_owned).collect(),
        Locks::OfMemory(id) => vec![project_of(store, id).await?],
        // Saves of one session are serialized by a lock on its id.
        Locks::Session(id) => vec![format!("session:{id}")],
    };
    let done = write_rows!(
        store,
        projects.iter().map(String::as_str),
        vectors,
        |rows, now| { op.run(&mut rows, now).await? }
    )?;
    if let Done::Imported(report) = &done {
        if report.memories_added >= ANALYZE_AFTER {
            analyze(store).await;
        }
    }
    Ok(done)
}

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

/// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and last-access times. Takes the
/// locks of the memories' projects, so a merge never writes back a count read before it.
pub(super) async fn touch(store: &PostgresStore, ids: &[String]) -> Result<()> {
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
