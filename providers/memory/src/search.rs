//! A search, written once over [`Snapshot`]: a backend's read transaction seen as its search
//! index (document frequencies and impact-ordered postings, [`crate::postings`]), its rows, and
//! its stored vectors and sketches. Which candidates a query reads, how the memories nearest it
//! by meaning join them and how they rank are the same on every backend; a backend answers
//! these reads with its SQL.

use std::collections::{BTreeSet, HashMap};

use crate::error::Result;
use crate::options::OpenOptions;
use crate::postings::{self, CandidateRow, Filter, Kept};
use crate::retrieval::{rank, rarest_terms, Candidate, Meaning, Vocabulary};
use crate::types::{MemoryCategory, MemorySearchResult};
use crate::vectors::{self, QueryVector, Stored, SEMANTIC_CANDIDATES};

/// A search, checked: what a backend ranks in one snapshot.
pub(crate) struct Query {
    /// The project, checked.
    pub(crate) project: String,
    /// The query's terms ([`crate::text::terms`]).
    pub(crate) terms: Vec<String>,
    pub(crate) min_importance: f32,
    pub(crate) categories: Option<Vec<MemoryCategory>>,
    pub(crate) top_k: usize,
    /// With a model, the query's vector, computed on a thread of its own while the backend
    /// reads its candidates.
    pub(crate) vector: Option<QueryVector>,
    pub(crate) now: i64,
}

impl Query {
    /// What the search's candidates are confined to.
    pub(crate) fn filter(&self) -> Filter<'_> {
        Filter {
            project: &self.project,
            min_importance: self.min_importance,
            categories: self.categories.as_deref(),
        }
    }
}

/// The stored vectors a search by meaning compares with the query: one model's, in one
/// project, of which a first pass picks at most `limit` ([`OpenOptions::max_vector_candidates`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ByMeaning<'a> {
    pub(crate) project: &'a str,
    pub(crate) model: &'a str,
    pub(crate) limit: usize,
}

/// What a search reads in a backend's snapshot.
///
/// A backend that can wait (PostgreSQL) awaits in these; one that blocks (SQLite) answers at
/// once, and drives the search with a poll that never waits.
#[allow(async_fn_in_trait)]
pub(crate) trait Snapshot {
    /// How many memories a project has.
    async fn docs(&self, project: &str) -> Result<i64>;
    /// The document frequencies of those of `terms` that a project's memories hold.
    async fn frequencies(&self, project: &str, terms: &[&str]) -> Result<HashMap<String, u32>>;
    /// The best `per_term` postings (row, impact) of each of `terms` in a project
    /// ([`postings::project_key`]), best first: one list per term, in order.
    async fn postings(&self, project: i64, terms: &[&str], per_term: i64) -> Result<Vec<Vec<(i64, i64)>>>;
    /// Rows `nums`, with their stored terms.
    async fn candidate_rows(&self, nums: &[i64]) -> Result<Vec<CandidateRow>>;
    /// Add the current vectors among rows `nums` to `stored`.
    async fn vectors(&self, of: ByMeaning<'_>, nums: &[i64], stored: &mut Stored) -> Result<()>;
    /// The rows whose vectors to compare with the query exactly, leaving out `except`: the
    /// first pass over their sketches ([`crate::sketches::first_pass`]).
    async fn first_pass(
        &self,
        of: ByMeaning<'_>,
        query: &mut QueryVector,
        except: &[i64],
    ) -> Result<Vec<i64>>;
    /// The query's vector, once computed.
    async fn query_vector<'q>(&self, query: &'q mut QueryVector) -> Result<&'q [f32]>;
}

/// A project's vocabulary restricted to the `needed` terms: its memory count and those terms'
/// document frequencies.
pub(crate) async fn vocabulary(
    s: &impl Snapshot,
    project: &str,
    needed: &BTreeSet<String>,
) -> Result<Vocabulary> {
    let docs = s.docs(project).await?;
    let needed: Vec<&str> = needed.iter().map(String::as_str).collect();
    Ok(Vocabulary::new(
        docs.max(0) as u64,
        s.frequencies(project, &needed).await?,
    ))
}

/// Candidate rows for `q_terms` from the impact-ordered postings of the query's rarest terms,
/// confined to `filter`, at most `limit` ([`OpenOptions::max_candidates`]), with the
/// vocabulary that ranks them: the document frequencies of the query's terms and of every
/// candidate's terms.
pub(crate) async fn candidates(
    s: &impl Snapshot,
    filter: &Filter<'_>,
    q_terms: &[String],
    limit: usize,
) -> Result<(Vocabulary, Vec<Candidate>)> {
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let mut vocab = vocabulary(s, filter.project, &q_set).await?;
    let distinct = rarest_terms(q_terms, &vocab);
    if distinct.is_empty() || filter.is_empty() {
        return Ok((vocab, Vec::new()));
    }
    let per_term = i64::try_from(postings::per_term(limit)).unwrap_or(i64::MAX);
    let project = postings::project_key(filter.project);
    let lists = s.postings(project, &distinct, per_term).await?;
    let lists: Vec<(f32, Vec<(i64, i64)>)> = distinct.iter().map(|t| vocab.idf(t)).zip(lists).collect();
    let merged = postings::merge(&lists);
    let mut kept = Kept::new(filter, &q_set, limit);
    // Read in rounds of as many rows as are wanted, best first, until enough pass the filter.
    for round in merged.chunks(limit.max(1)) {
        kept.offer_round(round, s.candidate_rows(round).await?);
        if kept.is_full() {
            break;
        }
    }
    vocab.extend(s.frequencies(filter.project, &kept.new_terms()).await?);
    Ok((vocab, kept.candidates))
}

/// The current memories relevant to a query, best first: the lexical candidates, joined, with a
/// model, by the memories whose vectors are nearest the query's (read while it is embedded),
/// ranked by [`crate::retrieval`].
pub(crate) async fn search(
    s: &impl Snapshot,
    options: &OpenOptions,
    mut query: Query,
) -> Result<Vec<MemorySearchResult>> {
    let vector = query.vector.take();
    let (filter, terms) = (query.filter(), &query.terms);
    let (mut vocab, mut found) = if terms.is_empty() {
        (Vocabulary::default(), Vec::new())
    } else {
        candidates(s, &filter, terms, options.max_candidates()).await?
    };
    let (Some(semantic), Some(mut vector)) = (options.semantic(), vector) else {
        return Ok(rank(terms, &vocab, found, None, query.now, query.top_k));
    };
    let of = ByMeaning {
        project: filter.project,
        model: semantic.model_id(),
        limit: options.max_vector_candidates(),
    };
    let mut lexical: Vec<i64> = found.iter().map(|c| c.num).collect();
    lexical.sort_unstable();
    let mut stored = Stored::default();
    s.vectors(of, &lexical, &mut stored).await?;
    let picks = s.first_pass(of, &mut vector, &lexical).await?;
    s.vectors(of, &picks, &mut stored).await?;
    let near = vectors::nearest(s.query_vector(&mut vector).await?, &stored, SEMANTIC_CANDIDATES);
    let extra = near.not_in(found.iter().map(|c| c.num));
    if !extra.is_empty() && !filter.is_empty() {
        let q_set: BTreeSet<String> = terms.iter().cloned().collect();
        let mut kept = Kept::new(&filter, &q_set, extra.len());
        kept.offer_round(&extra, s.candidate_rows(&extra).await?);
        vocab.extend(s.frequencies(filter.project, &kept.new_terms()).await?);
        found.extend(kept.candidates);
    }
    let meaning = Meaning {
        near: &near,
        blend: semantic.blend,
    };
    Ok(rank(terms, &vocab, found, Some(&meaning), query.now, query.top_k))
}
