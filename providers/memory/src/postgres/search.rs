//! Reads and search on PostgreSQL: get, list, count, what a search reads ([`Snapshot`]), and
//! stats.

use std::collections::HashMap;

use deadpool_postgres::Transaction;

use super::rows::{load, select_candidates, select_entries, COLS};
use super::{read_tx, PostgresStore};
use crate::error::Result;
use crate::postings::CandidateRow;
use crate::search::{ByMeaning, Query, Snapshot};
use crate::sketches;
use crate::types::*;
use crate::vectors::{QueryVector, Stored};

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
/// SQLite ([`crate::search`]), in one snapshot (so document frequencies are never stale).
pub(super) async fn search(store: &PostgresStore, query: Query) -> Result<Vec<MemorySearchResult>> {
    read_tx!(store, |tx| {
        crate::search::search(&tx, &store.inner.options, query).await?
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

/// A transaction as a search sees it.
impl Snapshot for Transaction<'_> {
    async fn docs(&self, project: &str) -> Result<i64> {
        let row = self
            .query_opt(
                "SELECT docs FROM memory_projects WHERE project_path = $1",
                &[&project],
            )
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?.unwrap_or(0))
    }

    async fn frequencies(&self, project: &str, terms: &[&str]) -> Result<HashMap<String, u32>> {
        let stmt = self
            .prepare_cached("SELECT term, df FROM memory_terms WHERE project_path = $1 AND term = ANY($2)")
            .await?;
        let mut df = HashMap::new();
        for row in self.query(&stmt, &[&project, &terms]).await? {
            let (term, n): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
            df.insert(term, u32::try_from(n.max(0)).unwrap_or(u32::MAX));
        }
        Ok(df)
    }

    /// One statement for every term.
    async fn postings(&self, project: i64, terms: &[&str], per_term: i64) -> Result<Vec<Vec<(i64, i64)>>> {
        let stmt = self
            .prepare_cached(
                "SELECT t.ord, p.num, p.impact FROM unnest($2::text[]) WITH ORDINALITY AS t(term, ord)
                 CROSS JOIN LATERAL (SELECT num, impact FROM memory_postings
                                     WHERE project = $1 AND term = t.term
                                     ORDER BY impact DESC, num LIMIT $3) AS p",
            )
            .await?;
        let mut lists = vec![Vec::new(); terms.len()];
        for row in self.query(&stmt, &[&project, &terms, &per_term]).await? {
            let ord: i64 = row.try_get(0)?;
            if let Some(list) = usize::try_from(ord - 1).ok().and_then(|i| lists.get_mut(i)) {
                list.push((row.try_get(1)?, row.try_get(2)?));
            }
        }
        Ok(lists)
    }

    async fn candidate_rows(&self, nums: &[i64]) -> Result<Vec<CandidateRow>> {
        select_candidates(self, nums).await
    }

    async fn vectors(&self, of: ByMeaning<'_>, nums: &[i64], stored: &mut Stored) -> Result<()> {
        for row in self.query(
                "SELECT num, embedding FROM project_memories
                 WHERE project_path = $1 AND embedding_model = $2 AND superseded_by IS NULL AND embedding IS NOT NULL
                   AND num = ANY($3)",
                &[&of.project, &of.model, &nums],
            )
            .await?
        {
            stored.push(row.try_get(0)?, row.try_get::<_, &[u8]>(1)?);
        }
        Ok(())
    }

    /// The sketches are read first, and the query awaited, so no thread of the runtime blocks
    /// on it.
    async fn first_pass(
        &self,
        of: ByMeaning<'_>,
        query: &mut QueryVector,
        except: &[i64],
    ) -> Result<Vec<i64>> {
        let rows = self.query(
                "SELECT pack, slots, sketches FROM memory_sketches WHERE project_path = $1 AND embedding_model = $2",
                &[&of.project, &of.model],
            )
            .await?;
        query.get().await?;
        sketches::first_pass(of.limit, except, query, |offer| {
            for row in &rows {
                offer(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            }
            Ok(())
        })
    }

    async fn query_vector<'q>(&self, query: &'q mut QueryVector) -> Result<&'q [f32]> {
        query.get().await
    }
}
