//! The in-memory search index of a project: an inverted index of content terms (with term
//! frequencies) and keyword terms, valid for one `(generation, docs)` version of the project,
//! and kept current by applying the project's change log (`memory_index_log`) in place.
//!
//! With it a search is exact and never touches rows it will not return: it accumulates cosine
//! dot products and keyword overlaps over the postings of the query's terms only, orders the
//! memories by the part of the score the index knows (`0.40 · similarity + 0.25 · overlap`),
//! and reads rows best-first until even a perfect importance and recency (`+ 0.35`) could not
//! beat the k-th score found.
//!
//! A memory's TF-IDF norm depends on every term's IDF; how it is kept exact under writes, at a
//! cost that does not grow with the project, is [`norms`](super::norms).

use std::collections::{BTreeSet, HashMap};

use rusqlite::{params, OptionalExtension, Transaction};

use crate::clock::days_between;
use crate::error::Result;
use crate::retrieval::{
    compute_relevance_score, idf as idf_formula, rank_before, TfIdf, W_IMPORTANCE, W_KEYWORDS, W_RECENCY,
    W_SIMILARITY,
};
use crate::text::{keyword_terms, terms};
use crate::types::{MemoryCategory, MemoryEntry, MemorySearchResult};

use super::index::{changes_between, Op, Version};
use super::norms::Norms;
use super::rows::{category_at, row_to_entry, COLS};

struct Doc {
    num: i64,
    /// Content term ids with their frequency in the content.
    terms: Vec<(u32, f32)>,
    /// Keyword term ids (distinct).
    keywords: Vec<u32>,
}

/// One project's index; see the [module docs](self).
#[derive(Default)]
pub(crate) struct ProjectIndex {
    pub(crate) version: Version,
    term_ids: HashMap<String, u32>,
    /// Term id → (slot, term frequency in the content), slots ascending.
    postings: Vec<Vec<(u32, f32)>>,
    /// Term id → slots whose keywords have the term, ascending.
    keyword_postings: Vec<Vec<u32>>,
    /// Slot → memory; `None` once removed (slots are never reused, so postings stay sorted).
    docs: Vec<Option<Doc>>,
    /// Slot → the memory's category, apart from `docs` so that passing over the memories of
    /// other categories reads one dense array.
    categories: Vec<MemoryCategory>,
    /// Slot → what its norm is computed from.
    norms: Norms,
    slot_of: HashMap<i64, u32>,
    live: usize,
}

/// How many ranked candidates are read from the database per round.
const CHUNK: usize = 32;

impl ProjectIndex {
    /// Read every memory of `project` as of `tx`.
    pub(crate) fn build(tx: &Transaction, project: &str, version: Version) -> Result<Self> {
        let mut ix = ProjectIndex {
            version,
            ..ProjectIndex::default()
        };
        let mut stmt = tx.prepare_cached(
            "SELECT num, content, keywords, category FROM project_memories WHERE project_path = ?1 ORDER BY num",
        )?;
        let mut rows = stmt.query(params![project])?;
        while let Some(row) = rows.next()? {
            let keywords: String = row.get(2)?;
            ix.add_doc(
                row.get(0)?,
                &row.get::<_, String>(1)?,
                &keywords,
                category_at(row, 3)?,
            );
        }
        // Norms once from the final counts, rather than moved on every insert.
        let docs = ix
            .docs
            .iter()
            .enumerate()
            .filter_map(|(slot, doc)| Some((slot as u32, doc.as_ref()?.terms.as_slice())));
        ix.norms.compute_all(&ix.postings, docs);
        Ok(ix)
    }

    /// Apply the change log from this index's generation up to `target` as of `tx`. False when
    /// the log no longer covers the gap (the caller rebuilds).
    pub(crate) fn catch_up(&mut self, tx: &Transaction, project: &str, target: Version) -> Result<bool> {
        if target == self.version {
            return Ok(true);
        }
        let Some(changes) = changes_between(tx, project, self.version.0, target.0)? else {
            return Ok(false);
        };
        let mut read =
            tx.prepare_cached("SELECT content, keywords, category FROM project_memories WHERE num = ?1")?;
        for (num, op) in changes {
            match op {
                Op::Add => {
                    // The row as it is now: a later change in the same catch-up removes or
                    // replaces it again, so the end state is the current one.
                    let row: Option<(String, String, MemoryCategory)> = read
                        .query_row(params![num], |r| Ok((r.get(0)?, r.get(1)?, category_at(r, 2)?)))
                        .optional()?;
                    self.remove(num);
                    if let Some((content, keywords, category)) = row {
                        self.insert(num, &content, &keywords, category);
                    }
                }
                Op::Remove => self.remove(num),
                Op::Clear => {
                    *self = ProjectIndex {
                        norms: self.norms.cleared(),
                        ..ProjectIndex::default()
                    }
                }
            }
        }
        self.version = target;
        Ok(self.live as i64 == target.1)
    }

    fn term_id(&mut self, term: String) -> u32 {
        let next = self.term_ids.len() as u32;
        *self.term_ids.entry(term).or_insert_with(|| {
            self.postings.push(Vec::new());
            self.keyword_postings.push(Vec::new());
            next
        })
    }

    /// Index the memory of row `num`, keeping every memory's norm sums current.
    fn insert(&mut self, num: i64, content: &str, keywords_json: &str, category: MemoryCategory) {
        let slot = self.add_doc(num, content, keywords_json, category);
        if let Some(doc) = &self.docs[slot as usize] {
            self.norms.insert(&self.postings, slot, &doc.terms);
        }
    }

    /// Add the memory of row `num` to the postings, its norm sums left at zero; its slot.
    fn add_doc(&mut self, num: i64, content: &str, keywords_json: &str, category: MemoryCategory) -> u32 {
        let slot = self.docs.len() as u32;
        let mut counted: Vec<(u32, f32)> = Vec::new();
        for term in terms(content) {
            let id = self.term_id(term);
            match counted.iter_mut().find(|(t, _)| *t == id) {
                Some((_, n)) => *n += 1.0,
                None => counted.push((id, 1.0)),
            }
        }
        for &(id, tf) in &counted {
            self.postings[id as usize].push((slot, tf));
        }
        let keywords: Vec<String> = serde_json::from_str(keywords_json).unwrap_or_default();
        let kw: Vec<u32> = keyword_terms(&keywords)
            .into_iter()
            .map(|t| self.term_id(t))
            .collect();
        for &id in &kw {
            self.keyword_postings[id as usize].push(slot);
        }
        self.categories.push(category);
        self.docs.push(Some(Doc {
            num,
            terms: counted,
            keywords: kw,
        }));
        self.norms.grow(self.term_ids.len());
        self.slot_of.insert(num, slot);
        self.live += 1;
        slot
    }

    /// Drop the memory of row `num`, if indexed.
    fn remove(&mut self, num: i64) {
        let Some(slot) = self.slot_of.remove(&num) else {
            return;
        };
        let Some(doc) = self.docs[slot as usize].take() else {
            return;
        };
        self.norms.remove(slot, &doc.terms);
        for (id, _) in doc.terms {
            let list = &mut self.postings[id as usize];
            if let Ok(at) = list.binary_search_by_key(&slot, |p| p.0) {
                list.remove(at);
                let df = list.len();
                self.norms.df_changed(&self.postings, id, slot, df + 1, df);
            }
        }
        for id in doc.keywords {
            let list = &mut self.keyword_postings[id as usize];
            if let Ok(at) = list.binary_search(&slot) {
                list.remove(at);
            }
        }
        self.live -= 1;
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.postings.iter().map(|p| p.len() * 8).sum::<usize>()
            + self.keyword_postings.iter().map(|p| p.len() * 4).sum::<usize>()
            + self
                .docs
                .iter()
                .flatten()
                .map(|d| 40 + d.terms.len() * 8 + d.keywords.len() * 4)
                .sum::<usize>()
            + self.categories.len()
            + self.norms.weight()
            + self.term_ids.keys().map(|k| k.len() + 32).sum::<usize>()
    }

    /// IDF of a term id under the index's current counts (the same formula as
    /// [`Vocabulary`](crate::retrieval::Vocabulary): df is the number of memories whose content
    /// has the term).
    fn idf_of(&self, id: u32) -> f32 {
        idf_formula(self.live as u64, self.postings[id as usize].len() as u32)
    }

    /// The top `top_k` current (not superseded) memories for the query terms, reading rows
    /// from `tx`.
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
                if categories.is_some_and(|c| !c.contains(&self.categories[slot as usize])) {
                    continue;
                }
                let Some(doc) = &self.docs[slot as usize] else {
                    continue;
                };
                let (_, entry) = stmt.query_row(params![doc.num], row_to_entry)?;
                if entry.importance < min_importance || entry.superseded_by.is_some() {
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

    /// The current memories (of `category`, when given) at least `floor` similar to the query
    /// terms by TF-IDF cosine alone (what a new memory may supersede or merge into), at most
    /// `n`, most similar first (then oldest first), with their row numbers. Only the rows
    /// returned, and superseded ones passed over, are read.
    pub(crate) fn most_similar(
        &self,
        tx: &Transaction,
        q_terms: &[String],
        n: usize,
        floor: f32,
        category: Option<MemoryCategory>,
    ) -> Result<Vec<(f32, i64, MemoryEntry)>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut stmt = tx.prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE num = ?1"))?;
        let mut out = Vec::new();
        for (similarity, slot) in self.similar_slots(q_terms, floor, category) {
            if out.len() == n {
                break;
            }
            let Some(doc) = &self.docs[slot as usize] else {
                continue;
            };
            let (num, entry) = stmt.query_row(params![doc.num], row_to_entry)?;
            if entry.superseded_by.is_none() {
                out.push((similarity, num, entry));
            }
        }
        Ok(out)
    }

    /// Every indexed memory (of `category`, when given) at least `floor` similar to the query
    /// terms, with its cosine, most similar first (then by slot).
    ///
    /// Only memories sharing one of the query's heaviest terms can reach `floor`
    /// ([`TfIdf::prefix_terms`]), so only those terms' postings are walked: the common words of
    /// a new memory, whose postings are the longest, cost nothing, and the similarity of each
    /// memory found is computed from its own few terms.
    fn similar_slots(
        &self,
        q_terms: &[String],
        floor: f32,
        category: Option<MemoryCategory>,
    ) -> Vec<(f32, u32)> {
        let qv = self.query_vector(q_terms);
        let q_norm = qv.norm();
        if q_norm == 0.0 {
            return Vec::new();
        }
        // (term id, query weight, IDF) in the vector's order: the order `candidates` sums in,
        // so a similarity here equals the one a search computes, to the bit.
        let query: Vec<(u32, f32, f32)> = qv
            .weights()
            .iter()
            .filter_map(|(t, w)| self.term_ids.get(t).map(|&id| (id, *w, self.idf_of(id))))
            .collect();
        let mut slots: Vec<u32> = qv
            .prefix_terms(floor)
            .into_iter()
            .filter_map(|t| self.term_ids.get(t))
            .flat_map(|&id| self.postings[id as usize].iter().map(|p| p.0))
            .filter(|&slot| category.is_none_or(|c| self.categories[slot as usize] == c))
            .collect();
        slots.sort_unstable();
        slots.dedup();
        let mut by_similarity: Vec<(f32, u32)> = slots
            .into_iter()
            .filter_map(|slot| {
                let doc = self.docs[slot as usize].as_ref()?;
                let mut dot = 0.0f32;
                for &(id, w, term_idf) in &query {
                    if let Some(&(_, tf)) = doc.terms.iter().find(|p| p.0 == id) {
                        dot += w * tf * term_idf;
                    }
                }
                let similarity = cosine(dot, q_norm, self.norms.norm(slot, self.live));
                (similarity > 0.0 && similarity >= floor).then_some((similarity, slot))
            })
            .collect();
        by_similarity.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        by_similarity
    }

    /// The TF-IDF vector of the query terms under the index's current counts.
    fn query_vector(&self, q_terms: &[String]) -> TfIdf {
        TfIdf::build(q_terms, |t| match self.term_ids.get(t) {
            Some(&id) => self.idf_of(id),
            None => idf_formula(self.live as u64, 0),
        })
    }

    /// Every memory sharing a term or keyword with the query, as (the part of its score known
    /// without reading its row, similarity, keyword overlap, slot).
    fn candidates(&self, q_terms: &[String]) -> Vec<(f32, f32, f32, u32)> {
        let qv = self.query_vector(q_terms);
        let q_norm = qv.norm();
        let q_set: BTreeSet<&str> = q_terms.iter().map(String::as_str).collect();
        let n = self.docs.len();
        let mut dot = vec![0.0f32; n];
        let mut common = vec![0u16; n];
        let mut seen = vec![false; n];
        let mut touched: Vec<u32> = Vec::new();
        for (term, w) in qv.weights() {
            let Some(&id) = self.term_ids.get(term) else {
                continue;
            };
            let term_idf = self.idf_of(id);
            for &(slot, tf) in &self.postings[id as usize] {
                let s = slot as usize;
                if !seen[s] {
                    seen[s] = true;
                    touched.push(slot);
                }
                dot[s] += w * tf * term_idf;
            }
        }
        for term in &q_set {
            let Some(&id) = self.term_ids.get(*term) else {
                continue;
            };
            for &slot in &self.keyword_postings[id as usize] {
                let s = slot as usize;
                if !seen[s] {
                    seen[s] = true;
                    touched.push(slot);
                }
                common[s] = common[s].saturating_add(1);
            }
        }
        touched
            .into_iter()
            .filter_map(|slot| {
                let s = slot as usize;
                let doc = self.docs[s].as_ref()?;
                let similarity = cosine(dot[s], q_norm, self.norms.norm(slot, self.live));
                let c = f32::from(common[s]);
                let union = q_set.len() as f32 + doc.keywords.len() as f32 - c;
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

/// The cosine of a dot product between vectors of norms `a` and `b`, in `[0, 1]`; zero when
/// either is empty.
fn cosine(dot: f32, a: f32, b: f32) -> f32 {
    if a > 0.0 && b > 0.0 {
        (dot / (a * b)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_norms_match_the_definition_after_adds_and_removes() {
        let mut ix = ProjectIndex {
            norms: Norms::with_heavy_df(2),
            ..ProjectIndex::default()
        };
        let texts = [
            "deploy staging deploy",
            "stripe webhooks verify",
            "deploy stripe price cents",
            "price price price",
            "queue cache deploy",
        ];
        for (num, text) in texts.iter().enumerate() {
            ix.insert(num as i64, text, "[]", MemoryCategory::Fact);
        }
        ix.remove(2);
        ix.insert(9, "cents cents webhooks deploy", "[]", MemoryCategory::Fact);
        for (slot, doc) in ix.docs.iter().enumerate() {
            let Some(doc) = doc else { continue };
            // The definition: √Σ(tf · idf)² under the current counts.
            let direct = doc
                .terms
                .iter()
                .map(|&(id, tf)| f64::from(tf * ix.idf_of(id)).powi(2))
                .sum::<f64>()
                .sqrt() as f32;
            let kept = ix.norms.norm(slot as u32, ix.live);
            assert!((kept - direct).abs() < 1e-5 * direct, "{kept} vs {direct}");
        }
    }

    /// The pruned walk finds exactly what comparing the query with every memory finds.
    #[test]
    fn similar_slots_equal_a_comparison_with_every_memory() {
        let words = [
            "deploy", "staging", "stripe", "webhooks", "cents", "price", "queue", "cache", "pnpm", "docker",
            "tests", "routes", "lint", "build", "release",
        ];
        let mut rng = 0x5EED_u64;
        let mut next = |k: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % k as u64) as usize
        };
        let mut ix = ProjectIndex {
            norms: Norms::with_heavy_df(8),
            ..ProjectIndex::default()
        };
        for num in 0..300 {
            let len = 1 + next(6);
            // Skewed towards the first words, as real vocabularies are.
            let text: Vec<&str> = (0..len)
                .map(|_| {
                    let upto = 1 + next(words.len());
                    words[next(upto)]
                })
                .collect();
            ix.insert(num, &text.join(" "), "[]", MemoryCategory::ALL[next(5)]);
        }
        for num in (0..300).step_by(7) {
            ix.remove(num);
        }
        for _ in 0..200 {
            let query: Vec<String> = (0..1 + next(6))
                .map(|_| words[next(words.len())].to_string())
                .collect();
            let floor = [0.25, 0.5, 0.6, 0.85][next(4)];
            let category = [None, Some(MemoryCategory::ALL[next(5)])][next(2)];
            let qv = ix.query_vector(&query);
            let mut every: Vec<(f32, u32)> = ix
                .docs
                .iter()
                .enumerate()
                .filter_map(|(slot, doc)| {
                    let doc = doc.as_ref()?;
                    if category.is_some_and(|c| ix.categories[slot] != c) {
                        return None;
                    }
                    let mut dot = 0.0f32;
                    for (t, w) in qv.weights() {
                        let Some(&id) = ix.term_ids.get(t) else { continue };
                        if let Some(&(_, tf)) = doc.terms.iter().find(|p| p.0 == id) {
                            dot += w * tf * ix.idf_of(id);
                        }
                    }
                    let similarity = cosine(dot, qv.norm(), ix.norms.norm(slot as u32, ix.live));
                    (similarity > 0.0 && similarity >= floor).then_some((similarity, slot as u32))
                })
                .collect();
            every.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            assert_eq!(
                ix.similar_slots(&query, floor, category),
                every,
                "{query:?} at {floor}"
            );
        }
    }
}
