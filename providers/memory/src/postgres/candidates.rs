//! Candidates for a search on PostgreSQL: the best rows of the query's rarest terms, from the
//! impact-ordered postings, and the document frequencies that rank them, read in the
//! transaction's snapshot (so never stale).

use std::collections::{BTreeSet, HashMap};

use deadpool_postgres::Transaction;

use super::rows::select_candidates;
use super::PostgresStore;
use crate::error::Result;
use crate::postings::{self, project_key, Filter, Kept};
use crate::retrieval::{rarest_terms, Candidate, Vocabulary};

/// The project's vocabulary restricted to `needed` terms: its memory count and those terms'
/// document frequencies, read in the transaction's snapshot (so never stale).
pub(super) async fn vocabulary(
    tx: &Transaction<'_>,
    project: &str,
    needed: &BTreeSet<String>,
) -> Result<Vocabulary> {
    let docs: i64 = tx
        .query_opt(
            "SELECT docs FROM memory_projects WHERE project_path = $1",
            &[&project],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?
        .unwrap_or(0);
    let needed: Vec<&str> = needed.iter().map(String::as_str).collect();
    Ok(Vocabulary::new(
        docs.max(0) as u64,
        frequencies(tx, project, &needed).await?,
    ))
}

/// The document frequencies of the `needed` terms that the project's memories hold.
async fn frequencies(tx: &Transaction<'_>, project: &str, needed: &[&str]) -> Result<HashMap<String, u32>> {
    let stmt = tx
        .prepare_cached("SELECT term, df FROM memory_terms WHERE project_path = $1 AND term = ANY($2)")
        .await?;
    let mut df = HashMap::new();
    for row in tx.query(&stmt, &[&project, &needed]).await? {
        let (term, n): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
        df.insert(term, u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    }
    Ok(df)
}

/// The rows `nums` (nearest the query by meaning, not yet candidates) that `filter` keeps, as
/// candidates, and `vocab` extended with their terms.
pub(super) async fn rows_as_candidates(
    tx: &Transaction<'_>,
    filter: &Filter<'_>,
    q_terms: &[String],
    nums: &[i64],
    vocab: &mut Vocabulary,
) -> Result<Vec<Candidate>> {
    if nums.is_empty() || filter.is_empty() {
        return Ok(Vec::new());
    }
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let mut kept = Kept::new(filter, &q_set, nums.len());
    kept.offer_round(nums, select_candidates(tx, nums).await?);
    vocab.extend(frequencies(tx, filter.project, &kept.new_terms()).await?);
    Ok(kept.candidates)
}

/// Candidate rows for `q_terms` from the impact-ordered postings (see [`crate::postings`]),
/// confined to `filter`, with the vocabulary that ranks them: the document frequencies of the
/// query's terms and of every candidate's terms, each read once.
pub(super) async fn candidates(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    filter: &Filter<'_>,
    q_terms: &[String],
) -> Result<(Vocabulary, Vec<Candidate>)> {
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let mut vocab = vocabulary(tx, filter.project, &q_set).await?;
    let distinct = rarest_terms(q_terms, &vocab);
    if distinct.is_empty() || filter.is_empty() {
        return Ok((vocab, Vec::new()));
    }
    let limit = store.candidate_limit();
    let per_term = i64::try_from(postings::per_term(limit)).unwrap_or(i64::MAX);
    let stmt = tx
        .prepare_cached(
            "SELECT t.ord, p.num, p.impact FROM unnest($2::text[]) WITH ORDINALITY AS t(term, ord)
             CROSS JOIN LATERAL (SELECT num, impact FROM memory_postings
                                 WHERE project = $1 AND term = t.term
                                 ORDER BY impact DESC, num LIMIT $3) AS p",
        )
        .await?;
    let mut lists: Vec<(f32, Vec<(i64, i64)>)> =
        distinct.iter().map(|t| (vocab.idf(t), Vec::new())).collect();
    for row in tx
        .query(&stmt, &[&project_key(filter.project), &distinct, &per_term])
        .await?
    {
        let ord: i64 = row.try_get(0)?;
        if let Some((_, list)) = usize::try_from(ord - 1).ok().and_then(|i| lists.get_mut(i)) {
            list.push((row.try_get(1)?, row.try_get(2)?));
        }
    }
    let merged = postings::merge(&lists);
    let mut kept = Kept::new(filter, &q_set, limit);
    // Read in rounds of as many rows as are wanted, best first, until enough pass the filter.
    for round in merged.chunks(limit.max(1)) {
        kept.offer_round(round, select_candidates(tx, round).await?);
        if kept.is_full() {
            break;
        }
    }
    vocab.extend(frequencies(tx, filter.project, &kept.new_terms()).await?);
    Ok((vocab, kept.candidates))
}
