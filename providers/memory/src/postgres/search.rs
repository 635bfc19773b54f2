//! Reads and search on PostgreSQL: get, list, count, search (candidates from the postings,
//! then the crate's ranking), and stats.

use super::candidates::{candidates, rows_as_candidates};
use super::rows::{load, select_entries, COLS};
use super::{read_tx, sketches, PostgresStore};
use crate::backend::Query;
use crate::error::Result;
use crate::retrieval::{rank, Meaning, Vocabulary};
use crate::types::*;
use crate::vectors::{self, Stored, SEMANTIC_CANDIDATES};

pub(super) async fn get(store: &PostgresStore, id: &str) -> Result<Option<MemoryEntry>> {
    read_tx!(store, |tx| { load(&tx, id).await?.map(|(_, e)| e) })
}

pub(super) async fn list(
    store: &PostgresStore,
    project: &str,
    options: &ListOptions,
) -> Result<Vec<MemoryEntry>> {
    let order = match options.order {
        ListOrder::Newest => "created_at DESC, id",
        ListOrder::Importance => "importance DESC, created_at DESC, id",
    };
    let category = options.category.map(|c| c.as_str());
    // A category is compared as such, as on SQLite (where the `IS NULL OR` form kept the plan
    // off the category index); a plan made before the values are known can use the index.
    let in_category = match category {
        Some(_) => "category = $2",
        None => "$2::text IS NULL",
    };
    let sql = format!(
        "SELECT {COLS} FROM project_memories WHERE project_path = $1 AND {in_category}
         AND ($5 OR superseded_by IS NULL)
         ORDER BY {order} LIMIT $3 OFFSET $4"
    );
    let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
    let offset = i64::try_from(options.offset).unwrap_or(i64::MAX);
    let rows = read_tx!(store, |tx| {
        select_entries(
            &tx,
            &sql,
            &[&project, &category, &limit, &offset, &options.include_superseded],
        )
        .await?
    })?;
    Ok(rows.into_iter().map(|(_, e)| e).collect())
}

pub(super) async fn count(store: &PostgresStore, project: &str) -> Result<usize> {
    let n: i64 = read_tx!(store, |tx| {
        tx.query_one(
            "SELECT COUNT(*) FROM project_memories WHERE project_path = $1 AND superseded_by IS NULL",
            &[&project],
        )
        .await?
        .try_get(0)?
    })?;
    Ok(n as usize)
}

/// The current memories of a project relevant to a query, best first, ranked exactly as on
/// SQLite.
pub(super) async fn search(store: &PostgresStore, mut query: Query) -> Result<Vec<MemorySearchResult>> {
    let semantic = store.inner.options.semantic();
    let vector = query.vector.take();
    let (q_terms, now, top_k) = (&query.terms, query.now, query.top_k);
    read_tx!(store, |tx| {
        let filter = query.filter();
        let (mut vocab, mut found) = if q_terms.is_empty() {
            (Vocabulary::default(), Vec::new())
        } else {
            candidates(store, &tx, &filter, q_terms).await?
        };
        match (semantic, vector) {
            (Some(semantic), Some(mut vector)) => {
                // The lexical candidates, joined by the memories nearest the query by meaning.
                let (project, model) = (filter.project, semantic.model_id());
                let mut lexical: Vec<i64> = found.iter().map(|c| c.num).collect();
                lexical.sort_unstable();
                let mut stored = Stored::default();
                sketches::vectors_of(&tx, project, model, &lexical, &mut stored).await?;
                let limit = store.inner.options.max_vector_candidates();
                let picks = sketches::first_pass(&tx, project, model, &mut vector, limit, &lexical).await?;
                sketches::vectors_of(&tx, project, model, &picks, &mut stored).await?;
                let near = vectors::nearest(vector.get().await?, &stored, SEMANTIC_CANDIDATES);
                let extra = near.not_in(found.iter().map(|c| c.num));
                found.extend(rows_as_candidates(&tx, &filter, q_terms, &extra, &mut vocab).await?);
                let meaning = Meaning {
                    near: &near,
                    blend: semantic.blend,
                };
                rank(q_terms, &vocab, found, Some(&meaning), now, top_k)
            }
            _ => rank(q_terms, &vocab, found, None, now, top_k),
        }
    })
}

/// Counts for a project.
pub(super) async fn stats(store: &PostgresStore, project: &str) -> Result<MemoryStats> {
    read_tx!(store, |tx| {
        let mut stats = crate::decide::StatsBuilder::new(project);
        let rows = tx
            .query(
                "SELECT category, COUNT(*), SUM(importance::float8), SUM(access_count::float8), MIN(created_at), MAX(updated_at)
                 FROM project_memories WHERE project_path = $1 AND superseded_by IS NULL GROUP BY category",
                &[&project],
            )
            .await?;
        for row in rows {
            stats.category(
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
                row.try_get(4)?,
                row.try_get(5)?,
            );
        }
        let counts = tx
            .query_one(
                "SELECT (SELECT COUNT(*) FROM episodic_records WHERE project_path = $1),
                        (SELECT COUNT(*) FROM memory_history WHERE project_path = $1),
                        (SELECT COUNT(*) FROM project_memories WHERE project_path = $1 AND superseded_by IS NOT NULL)",
                &[&project],
            )
            .await?;
        let count = |i: usize| -> Result<usize> { Ok(counts.try_get::<_, i64>(i)? as usize) };
        stats.finish(count(0)?, count(1)?, count(2)?)
    })
}
