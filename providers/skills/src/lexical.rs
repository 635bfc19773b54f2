//! The opt-in lexical fallback for skills that declare no triggers: each query word found in
//! the name scores 4.0, in the description 2.5, in the tags 2.0, in the body 1.0; the sum is
//! normalized by the square root of the body's word count. A skill needs a raw score of at
//! least 1.0 (one body hit) to be considered.

use std::collections::HashSet;

use crate::skill::Skill;

/// The lexical documents of an index's skills that declare no triggers (the only ones the
/// fallback scores), built once with the index.
#[derive(Debug)]
pub(crate) struct Lexical {
    /// Position of the skill in the index, and its words.
    docs: Vec<(usize, LexicalDoc)>,
}

/// Words of a skill's fields, lowercased, computed once at indexing.
#[derive(Debug)]
struct LexicalDoc {
    name: HashSet<String>,
    description: HashSet<String>,
    tags: HashSet<String>,
    body: HashSet<String>,
    body_words: usize,
}

/// Lowercased words of at least three characters (shorter ones are mostly stop words).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
}

impl LexicalDoc {
    fn new(skill: &Skill) -> Self {
        LexicalDoc {
            name: words(&skill.name).collect(),
            description: words(&skill.description).collect(),
            tags: skill
                .tags
                .iter()
                .flat_map(|t| words(t).collect::<Vec<_>>())
                .collect(),
            body: words(&skill.body).collect(),
            body_words: skill.body.split_whitespace().count().max(1),
        }
    }

    fn score(&self, query: &HashSet<String>) -> f64 {
        query
            .iter()
            .map(|w| {
                4.0 * f64::from(u8::from(self.name.contains(w)))
                    + 2.5 * f64::from(u8::from(self.description.contains(w)))
                    + 2.0 * f64::from(u8::from(self.tags.contains(w)))
                    + f64::from(u8::from(self.body.contains(w)))
            })
            .sum()
    }
}

impl Lexical {
    /// The documents of `skills` that can be selected and declare no triggers.
    pub(crate) fn new(skills: &[Skill]) -> Self {
        let docs = skills
            .iter()
            .enumerate()
            .filter(|(_, s)| s.triggers.is_empty() && !s.disable_model_invocation)
            .map(|(i, s)| (i, LexicalDoc::new(s)))
            .collect();
        Lexical { docs }
    }

    /// Skills the lexical scorer finds relevant to `query` (lowercased), best first by
    /// normalized score, ties by `rank` (each skill's position in the catalog order), each
    /// with its raw score.
    pub(crate) fn scores(&self, query: &str, rank: &[u32]) -> Vec<(usize, f64)> {
        let query: HashSet<String> = words(query).collect();
        let mut scored: Vec<(usize, f64, f64)> = self
            .docs
            .iter()
            .filter_map(|(i, doc)| {
                let raw = doc.score(&query);
                (raw >= 1.0).then(|| (*i, raw, raw / (doc.body_words as f64).sqrt()))
            })
            .collect();
        scored.sort_by(|a, b| b.2.total_cmp(&a.2).then(rank[a.0].cmp(&rank[b.0])));
        scored.into_iter().map(|(i, raw, _)| (i, raw)).collect()
    }
}
