//! Retrieval quality, measured: a labelled evaluation set and its scores for the store's
//! ranking and for a plain full-text baseline, side by side (`ctxkit bench memory`).
//!
//! An [`EvalSet`] is memories of several projects, loaded in order into a fresh store (a
//! memory may name older ones it supersedes), and queries, each with the project it is asked
//! in and the ids of the memories that answer it. A superseded memory is never an answer, and
//! another project's memory must never be returned at all. The embedded set
//! ([`EvalSet::embedded`], `providers/memory/eval/`) was written before any run was scored:
//! engineering-team conventions, preferences, facts and corrections of four projects, asked
//! about in other words than the memories use ("handle a payment webhook" for a memory about
//! Stripe webhooks), with distractors that share words with the question but answer something
//! else.
//!
//! Both systems are scored on the top 10 they return: recall@5 is the share of a query's
//! answers found in the first five (averaged over queries), MRR the mean reciprocal rank of
//! the first answer (0 when none is in the top 10).

mod baseline;
mod meaning;

pub use meaning::{MeaningReport, Systems, TunePoint};

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{MemoryError, Result};
use crate::options::{OpenOptions, SearchIndex};
use crate::sqlite::MemoryDb;
use crate::types::{MemoryCategory, MemorySearchRequest, NewMemoryEntry};

/// How many results of each system are scored.
const RANKED: usize = 10;
/// The cut-off of recall.
const RECALL_AT: usize = 5;

/// One memory of an evaluation set (a line of `memories.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalMemory {
    /// The set's own id for it, which queries name.
    pub id: String,
    /// The project it belongs to.
    pub project: String,
    /// Its category.
    pub category: MemoryCategory,
    /// What it says.
    pub content: String,
    /// Its importance (default 0.5, as a memory added without one).
    #[serde(default = "half")]
    pub importance: f32,
    /// Ids (of this set) of earlier memories it replaces.
    #[serde(default)]
    pub supersedes: Vec<String>,
}

fn half() -> f32 {
    0.5
}

/// One query of an evaluation set (a line of `queries.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalQuery {
    /// The project it is asked in.
    pub project: String,
    /// The question, as a user would ask it.
    pub text: String,
    /// Ids of the memories that answer it (current ones of the same project).
    pub relevant: Vec<String>,
}

/// Memories and the queries asked of them.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalSet {
    /// Loaded in this order.
    pub memories: Vec<EvalMemory>,
    /// Scored one by one.
    pub queries: Vec<EvalQuery>,
}

/// The scores of one system over a set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Scores {
    /// Mean share of each query's answers in its first five results.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first answer within the first ten results.
    pub mrr: f64,
    /// Queries with no result at all.
    pub empty: usize,
    /// Superseded memories among the first five results, over all queries.
    pub superseded_in_top_5: usize,
    /// Other projects' memories among all results, over all queries (must be 0).
    pub other_project: usize,
}

/// Where each system ranked a query's first answer (1-based; `None`: not in the top 10).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryOutcome {
    /// The query's project.
    pub project: String,
    /// The query.
    pub text: String,
    /// Rank of the first answer in the store's results.
    pub ctxkit_rank: Option<usize>,
    /// Rank of the first answer in the baseline's results.
    pub baseline_rank: Option<usize>,
}

/// The result of [`EvalSet::run`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalReport {
    /// Memories loaded.
    pub memories: usize,
    /// Of which superseded once all were loaded.
    pub superseded: usize,
    /// Ids the store marked superseded on its own (by similarity or an "instead of"), which
    /// the set does not: a wrong one can hide an answer.
    pub superseded_unlabelled: Vec<String>,
    /// Distinct projects.
    pub projects: usize,
    /// Queries scored.
    pub queries: usize,
    /// The store's ranking ([`SqliteMemoryStore::search`](crate::sqlite::SqliteMemoryStore)).
    pub ctxkit: Scores,
    /// Plain FTS5: every row in a `fts5(content)` table with the default tokenizer, the query's
    /// words OR-ed, best `bm25` first, the same project filter.
    pub baseline: Scores,
    /// Per query, in the set's order.
    pub outcomes: Vec<QueryOutcome>,
}

impl EvalSet {
    /// The set shipped with the crate (`providers/memory/eval/`).
    pub fn embedded() -> Self {
        Self::parse(
            include_str!("../../eval/memories.jsonl"),
            include_str!("../../eval/queries.jsonl"),
        )
        .expect("the embedded evaluation set is valid (a test checks)")
    }

    /// Read `memories.jsonl` and `queries.jsonl` from a folder.
    pub fn load(dir: &Path) -> Result<Self> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|e| {
                MemoryError::Invalid(format!("cannot read the evaluation file {}: {e}", path.display()))
            })
        };
        Self::parse(&read("memories.jsonl")?, &read("queries.jsonl")?)
    }

    /// Parse the two JSON Lines texts and check that every id a memory or query names is a
    /// memory of the set, of the same project, defined before it is superseded.
    pub fn parse(memories: &str, queries: &str) -> Result<Self> {
        let memories: Vec<EvalMemory> = json_lines(memories, "memories.jsonl")?;
        let queries: Vec<EvalQuery> = json_lines(queries, "queries.jsonl")?;
        let mut project_of: HashMap<&str, &str> = HashMap::new();
        for m in &memories {
            for old in &m.supersedes {
                if project_of.get(old.as_str()) != Some(&m.project.as_str()) {
                    return Err(invalid(format!(
                        "memory `{}` supersedes `{old}`, which is not an earlier memory of its project",
                        m.id
                    )));
                }
            }
            if project_of.insert(&m.id, &m.project).is_some() {
                return Err(invalid(format!("memory id `{}` is used twice", m.id)));
            }
        }
        for q in &queries {
            if q.relevant.is_empty() {
                return Err(invalid(format!("query `{}` names no relevant memory", q.text)));
            }
            for id in &q.relevant {
                if project_of.get(id.as_str()) != Some(&q.project.as_str()) {
                    return Err(invalid(format!(
                        "query `{}` names `{id}`, which is not a memory of its project",
                        q.text
                    )));
                }
            }
        }
        Ok(EvalSet { memories, queries })
    }

    /// Load the set into a new store at `db_path` (which must not exist yet) and into a plain
    /// FTS5 table, ask every query of both and score them.
    pub fn run(&self, db_path: &Path) -> Result<EvalReport> {
        let loaded = self.load_into(db_path, OpenOptions::default().search_index(SearchIndex::Eager))?;
        let superseded = &loaded.superseded;
        let plain = baseline::PlainFts::new(&self.memories)?;
        let project_of = self.project_of();

        let mut ctxkit = Tally::default();
        let mut base = Tally::default();
        let mut outcomes = Vec::with_capacity(self.queries.len());
        for q in &self.queries {
            let request = MemorySearchRequest::new(&q.project, &q.text)
                .top_k(RANKED)
                .min_importance(0.0)
                .without_touch();
            let found = loaded.search(&request)?;
            let ranked_plain = plain.search(&q.project, &q.text, RANKED)?;
            let judge = Judge {
                query: q,
                superseded,
                project_of: &project_of,
            };
            outcomes.push(QueryOutcome {
                project: q.project.clone(),
                text: q.text.clone(),
                ctxkit_rank: ctxkit.add(&judge, &found),
                baseline_rank: base.add(&judge, &ranked_plain),
            });
        }
        let projects: HashSet<&str> = self.memories.iter().map(|m| m.project.as_str()).collect();
        let labelled: HashSet<&str> = self
            .memories
            .iter()
            .flat_map(|m| m.supersedes.iter().map(String::as_str))
            .collect();
        let mut superseded_unlabelled: Vec<String> = superseded
            .iter()
            .filter(|id| !labelled.contains(*id))
            .map(|id| id.to_string())
            .collect();
        superseded_unlabelled.sort();
        let superseded = superseded.len();
        Ok(EvalReport {
            superseded_unlabelled,
            memories: self.memories.len(),
            superseded,
            projects: projects.len(),
            queries: self.queries.len(),
            ctxkit: ctxkit.scores(self.queries.len()),
            baseline: base.scores(self.queries.len()),
            outcomes,
        })
    }
}

/// An evaluation set loaded into a store.
struct Loaded<'a> {
    db: MemoryDb,
    /// The set's id of each stored memory, by the store's id.
    set_id: HashMap<String, &'a str>,
    /// The set's ids of the memories superseded once all were loaded.
    superseded: HashSet<&'a str>,
}

impl EvalSet {
    /// The project of each memory, by its id in the set.
    fn project_of(&self) -> HashMap<&str, &str> {
        self.memories
            .iter()
            .map(|m| (m.id.as_str(), m.project.as_str()))
            .collect()
    }

    /// Load the memories in order into a new store at `db_path` (which must not exist yet).
    fn load_into(&self, db_path: &Path, options: OpenOptions) -> Result<Loaded<'_>> {
        if db_path.exists() {
            return Err(invalid(format!(
                "{} exists; the evaluation needs a new database",
                db_path.display()
            )));
        }
        let db = MemoryDb::open_with(db_path, options)?;
        let mut store_id: HashMap<&str, String> = HashMap::new();
        for m in &self.memories {
            let supersedes = m
                .supersedes
                .iter()
                .filter_map(|s| store_id.get(s.as_str()).cloned());
            let new = NewMemoryEntry::new(&m.project, m.category, &m.content)
                .importance(m.importance)
                .supersedes(supersedes);
            let added = db.add(new)?;
            store_id.insert(&m.id, added.id);
        }
        let superseded = self
            .memories
            .iter()
            .filter_map(|m| {
                let current = db.get(&store_id[m.id.as_str()]).ok().flatten()?;
                current.superseded_by.is_some().then_some(m.id.as_str())
            })
            .collect();
        let set_id = store_id.into_iter().map(|(set, stored)| (stored, set)).collect();
        Ok(Loaded {
            db,
            set_id,
            superseded,
        })
    }
}

impl Loaded<'_> {
    /// The set's ids of what the store returns for `request`, best first.
    fn search(&self, request: &MemorySearchRequest) -> Result<Vec<&str>> {
        Ok(self
            .db
            .search(request)?
            .iter()
            .map(|r| self.set_id.get(r.entry.id.as_str()).copied().unwrap_or("?"))
            .collect())
    }
}

/// What counts as an answer to one query.
struct Judge<'a> {
    query: &'a EvalQuery,
    superseded: &'a HashSet<&'a str>,
    project_of: &'a HashMap<&'a str, &'a str>,
}

impl Judge<'_> {
    fn answers(&self, id: &str) -> bool {
        !self.superseded.contains(id) && self.query.relevant.iter().any(|r| r == id)
    }
}

/// Running sums of one system's scores.
#[derive(Default)]
struct Tally {
    recall: f64,
    reciprocal_rank: f64,
    empty: usize,
    superseded: usize,
    other_project: usize,
}

impl Tally {
    /// Score one ranked list of set ids; the rank of its first answer.
    fn add(&mut self, judge: &Judge, ranked: &[&str]) -> Option<usize> {
        let ranked = &ranked[..ranked.len().min(RANKED)];
        if ranked.is_empty() {
            self.empty += 1;
        }
        let answers = judge.query.relevant.iter().filter(|r| judge.answers(r)).count();
        let found = ranked[..ranked.len().min(RECALL_AT)]
            .iter()
            .filter(|id| judge.answers(id))
            .count();
        if answers > 0 {
            self.recall += found as f64 / answers as f64;
        }
        self.superseded += ranked[..ranked.len().min(RECALL_AT)]
            .iter()
            .filter(|id| judge.superseded.contains(*id))
            .count();
        self.other_project += ranked
            .iter()
            .filter(|id| judge.project_of.get(*id) != Some(&judge.query.project.as_str()))
            .count();
        let rank = ranked.iter().position(|id| judge.answers(id)).map(|i| i + 1);
        if let Some(r) = rank {
            self.reciprocal_rank += 1.0 / r as f64;
        }
        rank
    }

    fn scores(&self, queries: usize) -> Scores {
        let n = queries.max(1) as f64;
        Scores {
            recall_at_5: self.recall / n,
            mrr: self.reciprocal_rank / n,
            empty: self.empty,
            superseded_in_top_5: self.superseded,
            other_project: self.other_project,
        }
    }
}

fn json_lines<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| invalid(format!("{file} line {}: {e}", i + 1))))
        .collect()
}

fn invalid(message: String) -> MemoryError {
    MemoryError::Invalid(message)
}

#[cfg(test)]
mod tests;
