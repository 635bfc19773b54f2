//! Routing quality, measured (`ctxkit bench select`): labelled requests run through a
//! [`SkillContextProvider`]'s selection, scored per kind of request.
//!
//! A [`Query`] is a request and the names of every skill that rightly serves it (none: nothing
//! should be selected). Two sets exist: the labelled set over the public skills corpus
//! ([`RoutingSet::embedded`], `providers/skills/eval/`, written before any run was scored), and
//! the public BFCL function-calling set turned into a routing set ([`Bfcl`]).
//!
//! Scores, per kind and over every request with an answer (a request that selects nothing is a
//! miss):
//! - Hit@1: the first selected skill is expected (names compare without case, as the index
//!   holds one skill per name so compared);
//! - R@3: an expected skill is among the first three selected;
//! - precision: selected skills that are expected over all selected, summed over the requests
//!   with an answer (every skill sent counts: three bodies where one fits cost tokens);
//! - no match: the share of requests selecting nothing (silence is right for a request
//!   without an answer);
//! - µs per message: the mean time of `select` alone, warm.

mod bfcl;

pub use bfcl::{Bfcl, Function, BFCL_FILES};

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use ctxkit::Message;
use serde::{Deserialize, Serialize};

use crate::index::SkillIndex;
use crate::provider::SkillContextProvider;

/// A set that cannot be read or parsed, in one sentence naming the file and line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(String);

/// One labelled request (a line of the corpus set).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// The request, as a user would type it.
    pub query: String,
    /// The names of every skill that rightly serves it; empty: nothing should be selected.
    pub expect: Vec<String>,
    /// Its kind, which scores are grouped by (`positive`, `chitchat`, `live_multiple`, …).
    pub kind: String,
}

/// The labelled requests over a library of skills loaded elsewhere (the skills corpus).
#[derive(Clone, Debug, PartialEq)]
pub struct RoutingSet {
    /// In the set's order.
    pub queries: Vec<Query>,
}

impl RoutingSet {
    /// The set shipped with the crate (`providers/skills/eval/corpus_set.jsonl`), over the
    /// 650 public skills kept beside the repository (`../shared/corpora`).
    pub fn embedded() -> Self {
        Self::parse(include_str!("../../eval/corpus_set.jsonl"), "corpus_set.jsonl")
            .expect("the embedded routing set is valid (a test checks)")
    }

    /// Parse JSON Lines of `{"query", "expect", "kind"}` (`file` names the text in errors).
    pub fn parse(text: &str, file: &str) -> Result<Self, EvalError> {
        let queries: Vec<Query> = json_lines(text, file)?;
        if let Some(q) = queries.iter().find(|q| q.query.trim().is_empty()) {
            return Err(EvalError(format!(
                "{file}: a request of kind `{}` is empty",
                q.kind
            )));
        }
        Ok(RoutingSet { queries })
    }

    /// The names the set expects that `index` does not hold (a set written for another corpus).
    pub fn unknown_names(&self, index: &SkillIndex) -> Vec<String> {
        let mut unknown: Vec<String> = self
            .queries
            .iter()
            .flat_map(|q| &q.expect)
            .filter(|name| index.get(name).is_none())
            .cloned()
            .collect();
        unknown.sort();
        unknown.dedup();
        unknown
    }
}

/// What was selected for one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The request's kind.
    pub kind: String,
    /// The request.
    pub query: String,
    /// The skills that serve it.
    pub expect: Vec<String>,
    /// The names selected, in the order selection gives them (first: the best).
    pub selected: Vec<String>,
    /// Microseconds `select` took.
    pub micros: f64,
}

/// The scores of a group of requests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The kind, or `all with an answer` / `all without` for the totals.
    pub kind: String,
    /// Requests in the group.
    pub queries: usize,
    /// Of which with an answer (the rest should select nothing).
    pub answered: usize,
    /// Share of the requests with an answer whose first selected skill is expected.
    pub hit_at_1: Option<f64>,
    /// Share of the requests with an answer with an expected skill in the first three selected.
    pub recall_at_3: Option<f64>,
    /// Expected skills among all skills selected for the requests with an answer (`None`:
    /// nothing was selected).
    pub precision: Option<f64>,
    /// Share of the requests selecting nothing.
    pub no_match: f64,
    /// Mean number of skills selected per request.
    pub selected_per_query: f64,
}

/// The result of [`run`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Skills in the library selected from.
    pub skills: usize,
    /// One group per kind, in the order the kinds first appear, then the totals of the kinds
    /// with an answer and of those without, each when there are two kinds or more of it.
    pub groups: Vec<Group>,
    /// Mean microseconds of `select` per request, warm.
    pub micros_per_message: f64,
    /// Per request, in the set's order.
    pub outcomes: Vec<Outcome>,
}

/// Run every request through `provider`'s selection over `index` (a request alone in its
/// thread, no project, every phase, the config's cap), timing `select` alone after one warm-up
/// call (which builds what selection builds lazily: word tables, description vectors), and
/// score the outcomes.
pub fn run(provider: &SkillContextProvider, index: &Arc<SkillIndex>, queries: &[Query]) -> Report {
    let select = |text: &str| provider.select(index, &[Message::user(text)], None, None, None);
    if let Some(first) = queries.first() {
        select(&first.query);
    }
    let outcomes: Vec<Outcome> = queries
        .iter()
        .map(|q| {
            let started = Instant::now();
            let selected = select(&q.query);
            let micros = started.elapsed().as_secs_f64() * 1e6;
            Outcome {
                kind: q.kind.clone(),
                query: q.query.clone(),
                expect: q.expect.clone(),
                selected: selected.into_iter().map(|s| s.name).collect(),
                micros,
            }
        })
        .collect();
    Report {
        skills: index.len(),
        groups: groups(&outcomes),
        micros_per_message: mean(outcomes.iter().map(|o| o.micros)),
        outcomes,
    }
}

/// The scores of each kind, in the order kinds first appear, then the totals (see
/// [`Report::groups`]).
pub fn groups(outcomes: &[Outcome]) -> Vec<Group> {
    let mut kinds: Vec<&str> = Vec::new();
    for o in outcomes {
        if !kinds.contains(&o.kind.as_str()) {
            kinds.push(&o.kind);
        }
    }
    let mut out: Vec<Group> = kinds
        .iter()
        .map(|&k| score(k, outcomes.iter().filter(|o| o.kind == k)))
        .collect();
    let answered = |o: &&Outcome| !o.expect.is_empty();
    for (label, with_answer) in [("all with an answer", true), ("all without", false)] {
        let of_kind = out.iter().filter(|g| (g.answered > 0) == with_answer).count();
        if of_kind > 1 {
            let total = score(label, outcomes.iter().filter(|o| answered(o) == with_answer));
            out.push(total);
        }
    }
    out
}

/// The scores of `outcomes` as one group named `kind`.
pub fn score<'a>(kind: &str, outcomes: impl Iterator<Item = &'a Outcome>) -> Group {
    let (mut queries, mut answered, mut hits, mut in_three, mut silent) = (0, 0, 0, 0, 0);
    let (mut sent, mut sent_answered, mut right) = (0, 0, 0);
    for o in outcomes {
        queries += 1;
        sent += o.selected.len();
        silent += usize::from(o.selected.is_empty());
        if o.expect.is_empty() {
            continue;
        }
        answered += 1;
        // Names compare as the index compares them: without case (one skill per name).
        let expected: HashSet<String> = o.expect.iter().map(|n| n.to_lowercase()).collect();
        let is_expected = |name: &String| expected.contains(&name.to_lowercase());
        hits += usize::from(o.selected.first().is_some_and(is_expected));
        in_three += usize::from(o.selected.iter().take(3).any(is_expected));
        sent_answered += o.selected.len();
        right += o.selected.iter().filter(|n| is_expected(n)).count();
    }
    let share = |n: usize, of: usize| (of > 0).then(|| n as f64 / of as f64);
    Group {
        kind: kind.to_string(),
        queries,
        answered,
        hit_at_1: share(hits, answered),
        recall_at_3: share(in_three, answered),
        precision: share(right, sent_answered),
        no_match: share(silent, queries).unwrap_or(0.0),
        selected_per_query: share(sent, queries).unwrap_or(0.0),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Parse each non-blank line of `text` as a `T`, with errors naming `file` and the line.
fn json_lines<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<Vec<T>, EvalError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| EvalError(format!("{file} line {}: {e}", i + 1)))
        })
        .collect()
}

#[cfg(test)]
mod tests;
