//! Search and ranking: TF-IDF cosine similarity, keyword Jaccard, importance and recency,
//! blended with fixed weights that favour what the text says over how important or recent it is.
//!
//! ```text
//! score = 0.40 · similarity + 0.25 · keyword_overlap + 0.20 · importance + 0.15 · recency
//! recency = 1 / (1 + days_since_last_access · 0.1)
//! keyword_overlap = |query terms ∩ memory keyword terms| / |query terms ∪ memory keyword terms|
//! ```
//!
//! Only memories that share something with the query (a cosine above zero or a keyword in
//! common) are scored at all, so an important but unrelated memory never surfaces.
//!
//! The TF-IDF weights use the project's own vocabulary: `tf` is the raw count of a term in the
//! text and `idf = ln((1 + N) / (1 + df)) + 1`, where `N` is the number of memories of the
//! project and `df` the number of them whose content has the term.

use std::collections::{BTreeSet, HashMap};

use crate::clock::days_between;
use crate::text::MemoryTerms;
use crate::types::{MemoryEntry, MemorySearchRequest, MemorySearchResult};
use crate::vectors::{Blend, Nearest};

/// At most this many query terms are looked up in a backend's postings (the rarest ones).
pub(crate) const MAX_QUERY_TERMS: usize = 24;

/// Weight of TF-IDF cosine similarity.
pub(crate) const W_SIMILARITY: f32 = 0.40;
/// Weight of keyword overlap (Jaccard).
pub(crate) const W_KEYWORDS: f32 = 0.25;
/// Weight of importance.
pub(crate) const W_IMPORTANCE: f32 = 0.20;
/// Weight of recency.
pub(crate) const W_RECENCY: f32 = 0.15;

/// The relevance formula, its weights summing to 1: identical text, the same keywords,
/// importance 1 and an access just now score 1.0, the maximum.
pub(crate) fn compute_relevance_score(
    embedding_similarity: f32,
    keyword_overlap: f32,
    importance: f32,
    days_since_last_access: f64,
) -> f32 {
    let recency = recency_score(days_since_last_access);
    W_SIMILARITY * embedding_similarity
        + W_KEYWORDS * keyword_overlap
        + W_IMPORTANCE * importance
        + W_RECENCY * recency
}

/// What the words say of a memory, in `[0, 1]`: the text part of the relevance formula,
/// `(0.40 · similarity + 0.25 · keyword_overlap) / 0.65`. The hybrid ranking blends this with
/// the cosine of the sentence vectors; importance and recency, which the lexical formula needs
/// to break near ties, only blurred the meaning there (measured: `ctxkit bench memory --tune`).
pub(crate) fn words_score(similarity: f32, keyword_overlap: f32) -> f32 {
    (W_SIMILARITY * similarity + W_KEYWORDS * keyword_overlap) / (W_SIMILARITY + W_KEYWORDS)
}

/// `1 / (1 + days · 0.1)`; negative ages (clock skew) count as zero.
pub(crate) fn recency_score(days_since_last_access: f64) -> f32 {
    1.0 / (1.0 + days_since_last_access.max(0.0) as f32 * 0.1)
}

/// Jaccard coefficient of a term set and distinct terms `b`; zero when both are empty.
pub(crate) fn jaccard<'a>(a: &BTreeSet<String>, b: impl Iterator<Item = &'a str>) -> f32 {
    let (mut size, mut common) = (0, 0);
    for term in b {
        size += 1;
        common += usize::from(a.contains(term));
    }
    if a.is_empty() && size == 0 {
        return 0.0;
    }
    let union = a.len() + size - common;
    common as f32 / union as f32
}

/// The distinct query terms a backend's postings are read for: the rarest first (they say the
/// most; common ones mostly cost time), at most [`MAX_QUERY_TERMS`].
pub(crate) fn rarest_terms<'a>(q_terms: &'a [String], vocab: &Vocabulary) -> Vec<&'a str> {
    let mut distinct: Vec<&str> = q_terms
        .iter()
        .map(String::as_str)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    distinct.sort_by_key(|t| (vocab.df(t), *t));
    distinct.truncate(MAX_QUERY_TERMS);
    distinct
}

/// A memory a backend's index found, with its terms: read as stored, or tokenized once, for
/// the vocabulary read and for the score.
pub(crate) struct Candidate {
    /// Its row number.
    pub(crate) num: i64,
    pub(crate) entry: MemoryEntry,
    pub(crate) terms: MemoryTerms,
}

impl Candidate {
    /// The memory of row `num` with its `stored` terms, or, for a row without them, its terms
    /// tokenized now.
    pub(crate) fn new(num: i64, entry: MemoryEntry, stored: Option<MemoryTerms>) -> Self {
        let terms = stored.unwrap_or_else(|| MemoryTerms::of(&entry.content, &entry.keywords));
        Candidate { num, entry, terms }
    }
}

/// Whether a search can find nothing, so it need not read (or embed its query): no word to
/// match and no model, nothing asked for, a blank query, or an empty category list.
pub(crate) fn finds_nothing(req: &MemorySearchRequest, q_terms: &[String], semantic: bool) -> bool {
    (q_terms.is_empty() && !semantic)
        || req.top_k == 0
        || req.query.trim().is_empty()
        || req.categories.as_ref().is_some_and(Vec::is_empty)
}

/// The query's cosine with each candidate's sentence vector (by row), and how to blend it:
/// given when a model is configured.
pub(crate) struct Meaning<'a> {
    pub(crate) near: &'a Nearest,
    pub(crate) blend: Blend,
}

/// Score candidates against the query, keep those that share something with it (or, with
/// [`Meaning`], are near it in meaning), best first: the ranking every backend applies to the
/// candidates its indexes found.
pub(crate) fn rank(
    q_terms: &[String],
    vocab: &Vocabulary,
    candidates: Vec<Candidate>,
    meaning: Option<&Meaning<'_>>,
    now: i64,
    top_k: usize,
) -> Vec<MemorySearchResult> {
    let qv = vocab.vector(q_terms);
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let mut out: Vec<MemorySearchResult> = candidates
        .into_iter()
        .filter_map(|Candidate { num, entry, terms }| {
            let similarity = qv.cosine(&vocab.vector(terms.content()));
            let keyword_overlap = jaccard(&q_set, terms.keywords());
            // The similarity gate: importance and recency alone never surface a memory.
            let shares_words = similarity > 0.0 || keyword_overlap > 0.0;
            let (relevance_score, semantic_similarity) = match meaning {
                None if shares_words => {
                    let days = days_between(entry.last_accessed_at, now);
                    let score = compute_relevance_score(similarity, keyword_overlap, entry.importance, days);
                    (score, None)
                }
                None => return None,
                Some(m) => {
                    let cosine = m.near.cosine(num);
                    let words = shares_words.then(|| words_score(similarity, keyword_overlap));
                    (m.blend.score(words, cosine.unwrap_or(0.0))?, cosine)
                }
            };
            Some(MemorySearchResult {
                entry,
                relevance_score,
                similarity,
                keyword_overlap,
                semantic_similarity,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        if rank_before(a, b) {
            std::cmp::Ordering::Less
        } else if rank_before(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    out.truncate(top_k);
    out
}

/// The order of results: score, then importance, then id.
pub(crate) fn rank_before(a: &MemorySearchResult, b: &MemorySearchResult) -> bool {
    a.relevance_score
        .total_cmp(&b.relevance_score)
        .reverse()
        .then_with(|| b.entry.importance.total_cmp(&a.entry.importance))
        .then_with(|| a.entry.id.cmp(&b.entry.id))
        .is_lt()
}

/// Document frequencies of one project's memories: what IDF is computed from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Vocabulary {
    docs: u64,
    df: HashMap<String, u32>,
}

impl Vocabulary {
    /// A vocabulary of `docs` documents with these document frequencies.
    pub(crate) fn new(docs: u64, df: HashMap<String, u32>) -> Self {
        Vocabulary { docs, df }
    }

    /// Add the document frequencies of more terms (read from the same project and snapshot).
    pub(crate) fn extend(&mut self, df: HashMap<String, u32>) {
        self.df.extend(df);
    }

    /// Build from texts, to check scores by hand.
    #[cfg(test)]
    pub(crate) fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut v = Vocabulary::default();
        for t in texts {
            v.docs += 1;
            for term in crate::text::term_set(t) {
                *v.df.entry(term).or_default() += 1;
            }
        }
        v
    }

    /// Number of documents.
    #[cfg(test)]
    pub(crate) fn docs(&self) -> u64 {
        self.docs
    }

    /// Document frequency of `term` (zero when unknown).
    pub(crate) fn df(&self, term: &str) -> u32 {
        self.df.get(term).copied().unwrap_or(0)
    }

    /// Smoothed inverse document frequency: `ln((1 + N) / (1 + df)) + 1`.
    pub(crate) fn idf(&self, term: &str) -> f32 {
        idf(self.docs, self.df(term))
    }

    /// The TF-IDF vector of a list of terms.
    pub(crate) fn vector<'a, S: AsRef<str> + ?Sized + 'a>(
        &self,
        terms: impl IntoIterator<Item = &'a S>,
    ) -> TfIdf<'a> {
        TfIdf::build(terms, |t| self.idf(t))
    }
}

/// Smoothed inverse document frequency of a term found in `df` of `docs` documents:
/// `ln((1 + N) / (1 + df)) + 1`. The one formula every index computes IDF with.
pub(crate) fn idf(docs: u64, df: u32) -> f32 {
    (((1 + docs) as f64 / (1 + u64::from(df)) as f64).ln() + 1.0) as f32
}

/// A sparse TF-IDF vector, terms sorted, borrowing its terms from the list it was built from.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TfIdf<'a> {
    weights: Vec<(&'a str, f32)>,
    norm: f32,
}

impl<'a> TfIdf<'a> {
    /// The vector of `terms` with each term's IDF from `idf`: a repeated term adds its IDF
    /// once per occurrence.
    pub(crate) fn build<S: AsRef<str> + ?Sized + 'a>(
        terms: impl IntoIterator<Item = &'a S>,
        idf: impl Fn(&str) -> f32,
    ) -> TfIdf<'a> {
        let mut sorted: Vec<&'a str> = terms.into_iter().map(AsRef::as_ref).collect();
        sorted.sort_unstable();
        let mut weights: Vec<(&'a str, f32)> = Vec::with_capacity(sorted.len());
        for term in sorted {
            match weights.last_mut() {
                Some((t, w)) if *t == term => *w += idf(term),
                _ => weights.push((term, idf(term))),
            }
        }
        let norm = weights.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
        TfIdf { weights, norm }
    }

    /// The terms with their weights, sorted by term.
    pub(crate) fn weights(&self) -> &[(&'a str, f32)] {
        &self.weights
    }

    /// Euclidean norm.
    pub(crate) fn norm(&self) -> f32 {
        self.norm
    }

    /// Cosine similarity in `[0, 1]`; zero when either vector is empty.
    pub(crate) fn cosine(&self, other: &TfIdf<'_>) -> f32 {
        if self.norm == 0.0 || other.norm == 0.0 {
            return 0.0;
        }
        let (mut i, mut j, mut dot) = (0, 0, 0.0f32);
        while i < self.weights.len() && j < other.weights.len() {
            match self.weights[i].0.cmp(other.weights[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    dot += self.weights[i].1 * other.weights[j].1;
                    i += 1;
                    j += 1;
                }
            }
        }
        (dot / (self.norm * other.norm)).clamp(0.0, 1.0)
    }

    /// The heaviest terms whose weight must be shared by any vector with cosine of at least
    /// `threshold` to this one: a vector sharing none of them has a cosine below `threshold`.
    pub(crate) fn prefix_terms(&self, threshold: f32) -> Vec<&'a str> {
        if self.norm == 0.0 {
            return Vec::new();
        }
        let mut by_weight: Vec<&(&'a str, f32)> = self.weights.iter().collect();
        by_weight.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        // Without the prefix, the rest of the vector has squared norm 1 - covered; a vector
        // sharing none of the prefix reaches at most sqrt(1 - covered) < threshold.
        let needed = 1.0 - threshold * threshold;
        let mut covered = 0.0;
        let mut out = Vec::new();
        for &(term, w) in by_weight {
            out.push(term);
            covered += (w / self.norm).powi(2);
            if covered > needed + 1e-6 {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn formula_matches_hand_computed_cases() {
        // 0.40·0.5 + 0.25·0.25 + 0.20·0.8 + 0.15·(1 / (1 + 10·0.1)) = 0.2 + 0.0625 + 0.16 + 0.075
        let s = compute_relevance_score(0.5, 0.25, 0.8, 10.0);
        assert!((s - 0.4975).abs() < 1e-6, "{s}");
        // Only recency: 0.15 · 1/(1 + 0) = 0.15
        assert!((compute_relevance_score(0.0, 0.0, 0.0, 0.0) - 0.15).abs() < 1e-6);
        // 0.40 + 0 + 0.20·0.5 + 0.15 / (1 + 3) = 0.4 + 0.1 + 0.0375
        assert!((compute_relevance_score(1.0, 0.0, 0.5, 30.0) - 0.5375).abs() < 1e-6);
        assert_eq!(recency_score(-5.0), 1.0);
    }

    #[test]
    fn jaccard_of_sets() {
        assert_eq!(jaccard(&set(&["a", "b"]), ["b", "c"].into_iter()), 1.0 / 3.0);
        assert_eq!(jaccard(&set(&[]), [].into_iter()), 0.0);
        assert_eq!(jaccard(&set(&["a"]), ["a"].into_iter()), 1.0);
        assert_eq!(jaccard(&set(&["a"]), [].into_iter()), 0.0);
    }

    #[test]
    fn idf_and_cosine_by_hand() {
        let v = Vocabulary::from_texts(["pnpm yarn", "pnpm lockfile", "cargo build"]);
        assert_eq!(v.docs(), 3);
        assert_eq!(v.df("pnpm"), 2);
        // idf(pnpm) = ln(4/3) + 1, idf(workspaces) = ln(4/2) + 1
        let (i_p, i_w) = ((4.0f32 / 3.0).ln() + 1.0, 2.0f32.ln() + 1.0);
        assert!((v.idf("pnpm") - i_p).abs() < 1e-6);
        assert!((v.idf("unknown") - (4.0f32.ln() + 1.0)).abs() < 1e-6);
        let q = v.vector(["pnpm"]);
        let d = v.vector(["pnpm", "yarn"]);
        let expected = i_p / (i_p * i_p + i_w * i_w).sqrt();
        assert!((q.cosine(&d) - expected).abs() < 1e-6);
        assert_eq!(q.cosine(&v.vector(["cargo"])), 0.0);
        assert_eq!(q.cosine(&TfIdf::default()), 0.0);
        // Repeated terms add up.
        let twice = v.vector(["pnpm", "pnpm"]);
        assert!((twice.weights()[0].1 - 2.0 * i_p).abs() < 1e-6);
        assert!((twice.cosine(&q) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn prefix_terms_bound_the_cosine() {
        let v = Vocabulary::from_texts(["a1 b1 c1 d1", "a1 b1", "a1"]);
        let terms: Vec<String> = ["a1", "b1", "c1", "d1"].iter().map(|s| s.to_string()).collect();
        let x = v.vector(&terms);
        let prefix = x.prefix_terms(0.9);
        assert!(!prefix.is_empty() && prefix.len() < 4);
        // Every vector without a prefix term stays below the threshold.
        let rest: Vec<String> = terms
            .iter()
            .filter(|t| !prefix.contains(&t.as_str()))
            .cloned()
            .collect();
        assert!(x.cosine(&v.vector(&rest)) < 0.9);
    }
}
