//! Candidates for a search on PostgreSQL: the rows sharing the query's rarest terms, from the
//! `tsvector` column under its GIN index, and the document frequencies that rank them, read in
//! the transaction's snapshot (so never stale).

use std::collections::BTreeSet;

use deadpool_postgres::Transaction;

use super::rows::{select_entries, COLS};
use super::PostgresStore;
use crate::error::Result;
use crate::ids::project_token;
use crate::retrieval::{rarest_terms, Vocabulary};
use crate::text::term_set;
use crate::types::*;

/// What candidate retrieval is confined to.
pub(super) struct Filter<'a> {
    pub(super) project: &'a str,
    pub(super) min_importance: f32,
    pub(super) categories: Option<&'a [MemoryCategory]>,
}

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
    let stmt = tx
        .prepare_cached("SELECT term, df FROM memory_terms WHERE project_path = $1 AND term = ANY($2)")
        .await?;
    let mut df = std::collections::HashMap::new();
    for row in tx.query(&stmt, &[&project, &needed]).await? {
        let (term, n): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
        df.insert(term, u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    }
    Ok(Vocabulary::new(docs.max(0) as u64, df))
}

/// A lexeme quoted for `tsquery` input.
fn ts_quote(term: &str) -> String {
    format!("'{}'", term.replace('\\', "\\\\").replace('\'', "''"))
}

/// Candidate rows for `q_terms` (the rarest ones, OR'ed, inside the project's lexeme, best
/// `ts_rank` first, at most the candidate limit), with the vocabulary that ranks them: the
/// document frequencies of the query's terms and of every candidate's terms.
pub(super) async fn candidates(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    filter: &Filter<'_>,
    q_terms: &[String],
) -> Result<(Vocabulary, Vec<(i64, MemoryEntry)>)> {
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let q_vocab = vocabulary(tx, filter.project, &q_set).await?;
    let distinct = rarest_terms(q_terms, &q_vocab);
    let categories: Option<Vec<&str>> = filter.categories.map(|c| c.iter().map(|c| c.as_str()).collect());
    if distinct.is_empty() || categories.as_ref().is_some_and(Vec::is_empty) {
        return Ok((q_vocab, Vec::new()));
    }
    let query = format!(
        "{} & ({})",
        ts_quote(&project_token(filter.project)),
        distinct
            .iter()
            .map(|t| ts_quote(t))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let sql = format!(
        "SELECT {COLS} FROM project_memories
         WHERE terms @@ $1::text::tsquery AND project_path = $2 AND importance >= $3 AND superseded_by IS NULL
           AND ($5::text[] IS NULL OR category = ANY($5))
         ORDER BY ts_rank(terms, $1::text::tsquery) DESC, num LIMIT $4"
    );
    let found = select_entries(
        tx,
        &sql,
        &[
            &query,
            &filter.project,
            &filter.min_importance,
            &store.candidate_limit(),
            &categories,
        ],
    )
    .await?;
    let mut needed = q_set;
    for (_, e) in &found {
        needed.extend(term_set(&e.content));
    }
    Ok((vocabulary(tx, filter.project, &needed).await?, found))
}
