//! The in-memory search index of a project: an inverted index of content terms (with term
//! frequencies) and keyword terms, and each memory's TF-IDF norm, built from the database and
//! valid for one `(generation, docs)` version of the project.
//!
//! With it a search is exact and never touches rows it will not return: it accumulates cosine
//! dot products and keyword overlaps over the postings of the query's terms only, orders the
//! memories by the part of the score the index knows (`0.40 · similarity + 0.25 · overlap`),
//! and reads rows best-first until even a perfect importance and recency (`+ 0.35`) could not
//! beat the k-th score found.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{params, Transaction};

use crate::clock::days_between;
use crate::error::Result;
use crate::retrieval::{
    compute_relevance_score, Vocabulary, W_IMPORTANCE, W_KEYWORDS, W_RECENCY, W_SIMILARITY,
};
use crate::text::{keyword_terms, terms};
use crate::types::{MemoryCategory, MemorySearchResult};

use super::index::Version;
use super::rows::{row_to_entry, COLS};

struct Doc {
    num: i64,
    norm: f32,
    keyword_terms: u32,
}

/// One project's index; see the [module docs](self).
pub(crate) struct ProjectIndex {
    pub(crate) version: Version,
    pub(crate) vocab: Vocabulary,
    term_ids: HashMap<String, u32>,
    /// Term id → (doc, term frequency in the content).
    postings: Vec<Vec<(u32, f32)>>,
    /// Term id → docs whose keywords have the term.
    keyword_postings: Vec<Vec<u32>>,
    docs: Vec<Doc>,
}

/// How many ranked candidates are read from the database per round.
const CHUNK: usize = 32;

impl ProjectIndex {
    /// Read every memory of `project` as of `tx`.
    pub(crate) fn build(tx: &Transaction, project: &str, version: Version) -> Result<Self> {
        let mut term_ids: HashMap<String, u32> = HashMap::new();
        let mut postings: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut keyword_postings: Vec<Vec<u32>> = Vec::new();
        let mut docs: Vec<Doc> = Vec::new();
        let mut doc_terms: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut id_of = |term: String, postings: &mut Vec<Vec<(u32, f32)>>, kp: &mut Vec<Vec<u32>>| -> u32 {
            let next = term_ids.len() as u32;
            *term_ids.entry(term).or_insert_with(|| {
                postings.push(Vec::new());
                kp.push(Vec::new());
                next
            })
        };
        let mut stmt = tx.prepare_cached(
            "SELECT num, content, keywords FROM project_memories WHERE project_path = ?1 ORDER BY num",
        )?;
        let mut rows = stmt.query(params![project])?;
        while let Some(row) = rows.next()? {
            let slot = docs.len() as u32;
            let num: i64 = row.get(0)?;
            let content: String = row.get(1)?;
            let keywords: String = row.get(2)?;
            let keywords: Vec<String> = serde_json::from_str(&keywords).unwrap_or_default();
            let mut counted: Vec<(u32, f32)> = Vec::new();
            for term in terms(&content) {
                let id = id_of(term, &mut postings, &mut keyword_postings);
                match counted.iter_mut().find(|(t, _)| *t == id) {
                    Some((_, n)) => *n += 1.0,
                    None => counted.push((id, 1.0)),
                }
            }
            for &(id, tf) in &counted {
                postings[id as usize].push((slot, tf));
            }
            let kw = keyword_terms(&keywords);
            for term in &kw {
                let id = id_of(term.clone(), &mut postings, &mut keyword_postings);
                keyword_postings[id as usize].push(slot);
            }
            docs.push(Doc {
                num,
                norm: 0.0,
                keyword_terms: kw.len() as u32,
            });
            doc_terms.push(counted);
        }
        let mut df: HashMap<String, u32> = HashMap::with_capacity(term_ids.len());
        for (term, &id) in &term_ids {
            let n = postings[id as usize].len() as u32;
            if n > 0 {
                df.insert(term.clone(), n);
            }
        }
        let vocab = Vocabulary::new(docs.len() as u64, df);
        let mut idf = vec![0.0f32; term_ids.len()];
        for (term, &id) in &term_ids {
            idf[id as usize] = vocab.idf(term);
        }
        for (doc, counted) in docs.iter_mut().zip(&doc_terms) {
            doc.norm = counted
                .iter()
                .map(|&(id, tf)| (tf * idf[id as usize]).powi(2))
                .sum::<f32>()
                .sqrt();
        }
        Ok(ProjectIndex {
            version,
            vocab,
            term_ids,
            postings,
            keyword_postings,
            docs,
        })
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.postings.iter().map(|p| p.len() * 8).sum::<usize>()
            + self.keyword_postings.iter().map(|p| p.len() * 4).sum::<usize>()
            + self.docs.len() * 16
            + self.term_ids.keys().map(|k| k.len() + 32).sum::<usize>()
    }

    /// The top `top_k` memories for the query terms, reading rows from `tx`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search(
        &self,
        tx: &Transaction,
        q_terms: &[String],
        min_importance: f32,
        categories: Option<&[MemoryCategory]>,
        now: i64,
        top_k: usize,
    ) -> Result<Vec<MemorySearchResult>> {
        let mut candidates = self.candidates(q_terms);

        let by_bound =
            |a: &(f32, f32, f32, u32), b: &(f32, f32, f32, u32)| b.0.total_cmp(&a.0).then(a.3.cmp(&b.3));
        let mut stmt = tx.prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE num = ?1"))?;
        let mut best: Vec<MemorySearchResult> = Vec::new();
        let mut rest: &mut [(f32, f32, f32, u32)] = &mut candidates;
        'rounds: while !rest.is_empty() {
            let take = CHUNK.min(rest.len());
            if take < rest.len() {
                rest.select_nth_unstable_by(take - 1, by_bound);
            }
            let (chunk, tail) = rest.split_at_mut(take);
            chunk.sort_unstable_by(by_bound);
            for &(known, similarity, keyword_overlap, slot) in chunk.iter() {
                if best.len() >= top_k {
                    let kth = best[top_k - 1].relevance_score;
                    if known + W_IMPORTANCE + W_RECENCY < kth {
                        break 'rounds;
                    }
                }
                let (_, entry) = stmt.query_row(params![self.docs[slot as usize].num], row_to_entry)?;
                if entry.importance < min_importance
                    || categories.is_some_and(|c| !c.contains(&entry.category))
                {
                    continue;
                }
                let days = days_between(entry.last_accessed_at, now);
                let relevance_score =
                    compute_relevance_score(similarity, keyword_overlap, entry.importance, days);
                let hit = MemorySearchResult {
                    entry,
                    relevance_score,
                    similarity,
                    keyword_overlap,
                };
                let at = best.partition_point(|b| rank_before(b, &hit));
                best.insert(at, hit);
                best.truncate(top_k);
            }
            rest = tail;
        }
        Ok(best)
    }

    /// Every memory sharing a term or keyword with the query, as (the part of its score known
    /// without reading its row, similarity, keyword overlap, slot).
    fn candidates(&self, q_terms: &[String]) -> Vec<(f32, f32, f32, u32)> {
        let qv = self.vocab.vector(q_terms);
        let q_norm = qv.norm();
        let q_set: BTreeSet<&str> = q_terms.iter().map(String::as_str).collect();
        let n = self.docs.len();
        let mut dot = vec![0.0f32; n];
        let mut common = vec![0u16; n];
        let mut touched: Vec<u32> = Vec::new();
        for (term, w) in qv.weights() {
            let Some(&id) = self.term_ids.get(term) else {
                continue;
            };
            let idf = self.vocab.idf(term);
            for &(slot, tf) in &self.postings[id as usize] {
                let s = slot as usize;
                if dot[s] == 0.0 && common[s] == 0 {
                    touched.push(slot);
                }
                dot[s] += w * tf * idf;
            }
        }
        for term in &q_set {
            let Some(&id) = self.term_ids.get(*term) else {
                continue;
            };
            for &slot in &self.keyword_postings[id as usize] {
                let s = slot as usize;
                if dot[s] == 0.0 && common[s] == 0 {
                    touched.push(slot);
                }
                common[s] += 1;
            }
        }
        touched
            .into_iter()
            .filter_map(|slot| {
                let s = slot as usize;
                let doc = &self.docs[s];
                let similarity = if q_norm > 0.0 && doc.norm > 0.0 {
                    (dot[s] / (q_norm * doc.norm)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let c = f32::from(common[s]);
                let union = q_set.len() as f32 + doc.keyword_terms as f32 - c;
                let overlap = if union > 0.0 { c / union } else { 0.0 };
                (similarity > 0.0 || overlap > 0.0).then_some((
                    W_SIMILARITY * similarity + W_KEYWORDS * overlap,
                    similarity,
                    overlap,
                    slot,
                ))
            })
            .collect()
    }
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
