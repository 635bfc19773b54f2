//! Search on PostgreSQL: what a search reads ([`Snapshot`]), in one snapshot.

use std::collections::HashMap;

use deadpool_postgres::Transaction;

use super::rows::select_candidates;
use crate::error::Result;
use crate::postings::CandidateRow;
use crate::search::{ByMeaning, Snapshot};
use crate::sketches;
use crate::vectors::{QueryVector, Stored};

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
