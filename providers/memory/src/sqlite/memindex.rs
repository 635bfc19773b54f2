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
//! **Norms without staleness.** A memory's TF-IDF norm depends on every term's IDF, and
//! `idf = ln(1+N) + 1 − ln(1+df)` moves with the number of memories `N`: a stored norm would be
//! stale after any write. Writing `a = ln(1+N) + 1` and `b_t = ln(1+df_t)`, the squared norm is
//! `a²·Σtf² − 2a·Σtf²·b_t + Σtf²·b_t²`, so each memory keeps the three sums, which do not
//! depend on `N`. A write changes `df` of the written memory's terms only; the sums of the
//! memories holding those terms are moved by the difference. `b_t` is kept in fixed point
//! (`2⁻³²`) and the sums as integers, so the sums after any sequence of writes are exactly those
//! of an index built from scratch (floating-point deltas would drift, and ties would then order
//! differently from a rebuild). A search computes each candidate's norm from three numbers.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{params, OptionalExtension, Transaction};

use crate::clock::days_between;
use crate::error::Result;
use crate::retrieval::{
    compute_relevance_score, idf as idf_formula, TfIdf, W_IMPORTANCE, W_KEYWORDS, W_RECENCY, W_SIMILARITY,
};
use crate::text::{keyword_terms, terms};
use crate::types::{MemoryCategory, MemoryEntry, MemorySearchResult};

use super::index::{changes_between, Op, Version};
use super::rows::{row_to_entry, COLS};

struct Doc {
    num: i64,
    /// Content term ids with their frequency in the content.
    terms: Vec<(u32, f32)>,
    /// Keyword term ids (distinct).
    keywords: Vec<u32>,
}

/// `Σtf²`, `Σtf²·B_t` and `Σtf²·B_t²` over a memory's terms, `B_t` being [`fixed_b`] of the
/// term's current document frequency.
#[derive(Clone, Copy, Default)]
struct NormSums {
    tf2: u64,
    tf2_b: i128,
    tf2_b2: i128,
}

/// `2³²`: the scale of `B_t`.
const FIXED: f64 = 4_294_967_296.0;

/// `ln(1 + df)` in fixed point: an integer, so sums of it are exact in any order.
fn fixed_b(df: usize) -> i128 {
    ((1.0 + df as f64).ln() * FIXED).round() as i128
}

impl NormSums {
    /// Move the sums by a change of one term's `B` from `old` to `new`, for a term occurring
    /// `tf` times.
    fn shift(&mut self, tf: f32, old: i128, new: i128) {
        let tf2 = i128::from(tf as u32).pow(2);
        self.tf2_b += tf2 * (new - old);
        self.tf2_b2 += tf2 * (new * new - old * old);
    }

    /// The sums of these terms (with their frequencies) under `b` of each term id.
    fn of(terms: &[(u32, f32)], b: impl Fn(u32) -> i128) -> Self {
        let mut sums = NormSums::default();
        for &(id, tf) in terms {
            sums.tf2 += u64::from(tf as u32).pow(2);
            sums.shift(tf, 0, b(id));
        }
        sums
    }

    /// The TF-IDF norm for a project of `docs` memories.
    fn norm(&self, docs: usize) -> f32 {
        let a = (1.0 + docs as f64).ln() + 1.0;
        let squared = a * a * self.tf2 as f64 - 2.0 * a * (self.tf2_b as f64 / FIXED)
            + self.tf2_b2 as f64 / (FIXED * FIXED);
        squared.max(0.0).sqrt() as f32
    }
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
    /// Slot → the norm's sums (see the [module docs](self)); a flat array, so a write walks it
    /// in slot order along a posting list.
    sums: Vec<NormSums>,
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
            "SELECT num, content, keywords FROM project_memories WHERE project_path = ?1 ORDER BY num",
        )?;
        let mut rows = stmt.query(params![project])?;
        while let Some(row) = rows.next()? {
            let keywords: String = row.get(2)?;
            ix.add_doc(row.get(0)?, &row.get::<_, String>(1)?, &keywords);
        }
        // Sums once from the final counts, rather than moved on every insert.
        let b: Vec<i128> = ix.postings.iter().map(|p| fixed_b(p.len())).collect();
        for (slot, doc) in ix.docs.iter().enumerate() {
            if let Some(doc) = doc {
                ix.sums[slot] = NormSums::of(&doc.terms, |id| b[id as usize]);
            }
        }
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
        let mut read = tx.prepare_cached("SELECT content, keywords FROM project_memories WHERE num = ?1")?;
        for (num, op) in changes {
            match op {
                Op::Add => {
                    // The row as it is now: a later change in the same catch-up removes or
                    // replaces it again, so the end state is the current one.
                    let row: Option<(String, String)> = read
                        .query_row(params![num], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()?;
                    self.remove(num);
                    if let Some((content, keywords)) = row {
                        self.insert(num, &content, &keywords);
                    }
                }
                Op::Remove => self.remove(num),
                Op::Clear => *self = ProjectIndex::default(),
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
    fn insert(&mut self, num: i64, content: &str, keywords_json: &str) {
        let slot = self.add_doc(num, content, keywords_json);
        let Some(doc) = self.docs[slot as usize].take() else {
            return;
        };
        for &(id, _) in &doc.terms {
            let df = self.postings[id as usize].len();
            self.shift_sums(id, slot, fixed_b(df - 1), fixed_b(df));
        }
        self.sums[slot as usize] = NormSums::of(&doc.terms, |id| fixed_b(self.postings[id as usize].len()));
        self.docs[slot as usize] = Some(doc);
    }

    /// Add the memory of row `num` to the postings, its norm sums left at zero; its slot.
    fn add_doc(&mut self, num: i64, content: &str, keywords_json: &str) -> u32 {
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
        self.docs.push(Some(Doc {
            num,
            terms: counted,
            keywords: kw,
        }));
        self.sums.push(NormSums::default());
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
        for (id, _) in doc.terms {
            let list = &mut self.postings[id as usize];
            if let Ok(at) = list.binary_search_by_key(&slot, |p| p.0) {
                list.remove(at);
            }
            let df = list.len();
            self.shift_sums(id, slot, fixed_b(df + 1), fixed_b(df));
        }
        for id in doc.keywords {
            let list = &mut self.keyword_postings[id as usize];
            if let Ok(at) = list.binary_search(&slot) {
                list.remove(at);
            }
        }
        self.sums[slot as usize] = NormSums::default();
        self.live -= 1;
    }

    /// Move the norm sums of every memory holding term `id` (but `except`, whose sums are
    /// computed afresh) by a change of its `B`.
    fn shift_sums(&mut self, id: u32, except: u32, old: i128, new: i128) {
        if old == new {
            return;
        }
        for &(slot, tf) in &self.postings[id as usize] {
            if slot != except {
                self.sums[slot as usize].shift(tf, old, new);
            }
        }
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
            + self.sums.len() * std::mem::size_of::<NormSums>()
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
                let Some(doc) = &self.docs[slot as usize] else {
                    continue;
                };
                let (_, entry) = stmt.query_row(params![doc.num], row_to_entry)?;
                if entry.importance < min_importance
                    || entry.superseded_by.is_some()
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

    /// The current memories most similar to the query terms by TF-IDF cosine alone (what a new
    /// memory may supersede or merge into), at most `n`, most similar first (then oldest
    /// first), with their row numbers. Only the rows returned, and superseded ones passed over,
    /// are read.
    pub(crate) fn most_similar(
        &self,
        tx: &Transaction,
        q_terms: &[String],
        n: usize,
    ) -> Result<Vec<(f32, i64, MemoryEntry)>> {
        let mut by_similarity: Vec<(f32, u32)> = self
            .candidates(q_terms)
            .into_iter()
            .filter(|c| c.1 > 0.0)
            .map(|(_, similarity, _, slot)| (similarity, slot))
            .collect();
        by_similarity.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut stmt = tx.prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE num = ?1"))?;
        let mut out = Vec::new();
        for (similarity, slot) in by_similarity {
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

    /// Every memory sharing a term or keyword with the query, as (the part of its score known
    /// without reading its row, similarity, keyword overlap, slot).
    fn candidates(&self, q_terms: &[String]) -> Vec<(f32, f32, f32, u32)> {
        let qv = TfIdf::build(q_terms, |t| match self.term_ids.get(t) {
            Some(&id) => self.idf_of(id),
            None => idf_formula(self.live as u64, 0),
        });
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
                let norm = self.sums[s].norm(self.live);
                let similarity = if q_norm > 0.0 && norm > 0.0 {
                    (dot[s] / (q_norm * norm)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
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

/// The order of results: score, then importance, then id.
pub(crate) fn rank_before(a: &MemorySearchResult, b: &MemorySearchResult) -> bool {
    a.relevance_score
        .total_cmp(&b.relevance_score)
        .reverse()
        .then_with(|| b.entry.importance.total_cmp(&a.entry.importance))
        .then_with(|| a.entry.id.cmp(&b.entry.id))
        .is_lt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The norm as the definition computes it: `√Σ(tf · idf)²` under the current counts.
    fn direct_norm(ix: &ProjectIndex, doc: &Doc) -> f32 {
        doc.terms
            .iter()
            .map(|&(id, tf)| f64::from(tf * ix.idf_of(id)).powi(2))
            .sum::<f64>()
            .sqrt() as f32
    }

    #[test]
    fn kept_norm_sums_match_the_definition_after_adds_and_removes() {
        let mut ix = ProjectIndex::default();
        let texts = [
            "deploy staging deploy",
            "stripe webhooks verify",
            "deploy stripe price cents",
            "price price price",
            "queue cache deploy",
        ];
        for (num, text) in texts.iter().enumerate() {
            ix.insert(num as i64, text, "[]");
        }
        ix.remove(2);
        ix.insert(9, "cents cents webhooks", "[]");
        for (slot, doc) in ix.docs.iter().enumerate() {
            let Some(doc) = doc else { continue };
            let (kept, direct) = (ix.sums[slot].norm(ix.live), direct_norm(&ix, doc));
            assert!((kept - direct).abs() < 1e-5 * direct, "{kept} vs {direct}");
        }
        // Sums are integers: the same memories in another order give the very same sums.
        let mut other = ProjectIndex::default();
        for (num, text) in [(9, "cents cents webhooks"), (4, texts[4]), (0, texts[0])] {
            other.insert(num, text, "[]");
        }
        for (num, text) in [(1, texts[1]), (3, texts[3])] {
            other.insert(num, text, "[]");
        }
        let sums = |ix: &ProjectIndex, num: i64| {
            let s = ix.sums[ix.slot_of[&num] as usize];
            (s.tf2, s.tf2_b, s.tf2_b2)
        };
        for num in [0, 1, 3, 4, 9] {
            assert_eq!(sums(&ix, num), sums(&other, num));
        }
        // A build from the final rows gives them too.
        let mut built = ProjectIndex::default();
        for (num, text) in [
            (0, texts[0]),
            (1, texts[1]),
            (3, texts[3]),
            (4, texts[4]),
            (9, "cents cents webhooks"),
        ] {
            built.add_doc(num, text, "[]");
        }
        let b: Vec<i128> = built.postings.iter().map(|p| fixed_b(p.len())).collect();
        for slot in 0..built.docs.len() {
            let terms = built.docs[slot].as_ref().unwrap().terms.clone();
            built.sums[slot] = NormSums::of(&terms, |id| b[id as usize]);
        }
        for num in [0, 1, 3, 4, 9] {
            assert_eq!(sums(&ix, num), sums(&built, num));
        }
    }
}
