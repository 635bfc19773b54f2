//! The public BFCL v4 function-calling set (PyPI `bfcl-eval`, Apache-2.0, files under
//! `bfcl_eval/data/`) as a routing set: its functions pooled into one library of skills, its
//! requests with a known answer as requests expecting the right function, and its irrelevance
//! requests as requests expecting nothing.
//!
//! **The pool rule**, which the figures depend on: every function of the two sets with answers
//! (`multiple`, then `live_multiple`, in line order) becomes one skill per name, with the
//! **first** description seen for that name (183 names come with several paraphrased
//! descriptions; 894 skills in `bfcl-eval` 2026.3.23). The irrelevance entries' own functions
//! are not pooled. The request is the last user message of the entry's single turn; its
//! expected skill is the one function its `possible_answer` line calls.

use std::collections::HashSet;

use serde::Deserialize;

use super::{json_lines, EvalError, Query};
use crate::index::SkillIndex;
use crate::skill::{Skill, Source};

/// The files read, relative to the data folder: each kind's entries, and for the kinds with
/// an answer, the answer file (`possible_answer/` + the same name).
pub const BFCL_FILES: [(&str, &str, bool); 4] = [
    ("multiple", "BFCL_v4_multiple.json", true),
    ("live_multiple", "BFCL_v4_live_multiple.json", true),
    ("irrelevance", "BFCL_v4_irrelevance.json", false),
    ("live_irrelevance", "BFCL_v4_live_irrelevance.json", false),
];

/// One function of the pool.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Function {
    /// Its name, the skill's name (`triangle_properties.get`).
    pub name: String,
    /// What it does, the skill's description.
    pub description: String,
}

/// One test entry (its `parameters` are not read).
#[derive(Deserialize)]
struct Entry {
    id: String,
    question: Vec<Vec<Turn>>,
    #[serde(default)]
    function: Vec<Function>,
}

#[derive(Deserialize)]
struct Turn {
    role: String,
    content: String,
}

/// One line of a `possible_answer` file: the calls that answer the entry of the same id.
#[derive(Deserialize)]
struct Answer {
    id: String,
    ground_truth: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// BFCL as a routing set.
#[derive(Clone, Debug, PartialEq)]
pub struct Bfcl {
    /// The pooled functions, one per name, in the order first seen.
    pub pool: Vec<Function>,
    /// Requests of every kind, in [`BFCL_FILES`] order.
    pub queries: Vec<Query>,
}

impl Bfcl {
    /// Parse the files of [`BFCL_FILES`], each read by `read` from its path relative to the
    /// data folder (`possible_answer/BFCL_v4_multiple.json`).
    pub fn parse<E: From<EvalError>>(mut read: impl FnMut(&str) -> Result<String, E>) -> Result<Bfcl, E> {
        let mut pool: Vec<Function> = Vec::new();
        let mut pooled: HashSet<String> = HashSet::new();
        let mut queries = Vec::new();
        for (kind, file, answered) in BFCL_FILES {
            let entries: Vec<Entry> = json_lines(&read(file)?, file)?;
            let answers: Vec<Option<String>> = if answered {
                let answer_file = format!("possible_answer/{file}");
                let answers: Vec<Answer> = json_lines(&read(&answer_file)?, &answer_file)?;
                expected_names(&entries, &answers, &answer_file)?
                    .into_iter()
                    .map(Some)
                    .collect()
            } else {
                vec![None; entries.len()]
            };
            for (entry, expect) in entries.into_iter().zip(answers) {
                let query = request(&entry)
                    .ok_or_else(|| EvalError(format!("{file}: entry `{}` has no user message", entry.id)))?;
                if expect.is_some() {
                    for f in entry.function {
                        if pooled.insert(f.name.clone()) {
                            pool.push(f);
                        }
                    }
                }
                queries.push(Query {
                    query,
                    expect: expect.into_iter().collect(),
                    kind: kind.to_string(),
                });
            }
        }
        Ok(Bfcl { pool, queries })
    }

    /// The pool as an index of skills, each parsed from a SKILL.md of its name and description
    /// (so selection reads them as it reads any skill's).
    pub fn index(&self) -> SkillIndex {
        let skills = self
            .pool
            .iter()
            .filter_map(|f| {
                // JSON strings are YAML double-quoted scalars: any name or description is kept
                // as written.
                let text = format!(
                    "---\nname: {}\ndescription: {}\n---\n",
                    serde_json::Value::from(f.name.as_str()),
                    serde_json::Value::from(f.description.as_str())
                );
                let path = format!("bfcl/{}/SKILL.md", f.name);
                Skill::parse(path.as_ref(), &text, None).0
            })
            .map(|s| s.with_root(Source::External, Source::External.default_priority()))
            .collect();
        SkillIndex::build(skills, Vec::new())
    }
}

/// The request of an entry: the last user message of its first (and only) turn.
fn request(entry: &Entry) -> Option<String> {
    let turn = entry.question.first()?;
    turn.iter()
        .rev()
        .find(|m| m.role == "user")
        .map(|m| m.content.clone())
}

/// Each entry's expected function: the name its answer (the line of the same position, which
/// must carry the same id) calls first, which must be one of the entry's functions.
fn expected_names(entries: &[Entry], answers: &[Answer], file: &str) -> Result<Vec<String>, EvalError> {
    if entries.len() != answers.len() {
        return Err(EvalError(format!(
            "{file} has {} answers for {} entries",
            answers.len(),
            entries.len()
        )));
    }
    entries
        .iter()
        .zip(answers)
        .map(|(entry, answer)| {
            if answer.id != entry.id {
                return Err(EvalError(format!(
                    "{file}: answer `{}` stands where entry `{}` is expected",
                    answer.id, entry.id
                )));
            }
            let name = answer
                .ground_truth
                .first()
                .and_then(|call| call.keys().next())
                .ok_or_else(|| EvalError(format!("{file}: answer `{}` calls nothing", answer.id)))?;
            if !entry.function.iter().any(|f| &f.name == name) {
                return Err(EvalError(format!(
                    "{file}: answer `{}` calls `{name}`, which its entry does not offer",
                    answer.id
                )));
            }
            Ok(name.clone())
        })
        .collect()
}
