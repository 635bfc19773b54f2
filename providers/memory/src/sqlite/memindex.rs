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

use super::docs::Docs;
use super::index::{changes_between, Op, Version};
use super::norms::Norms;
use super::rows::{category_at, load_num};

/// One project's index; see the [module docs](self).
#[derive(Default)]
pub(crate) struct ProjectIndex {
    pub(crate) version: Version,
    term_ids: HashMap<String, u32>,
    /// Term id → (slot, term frequency in the content), slots ascending.
    postings: Vec<Vec<(u32, f32)>>,
    /// Term id → slots whose keywords have the term, ascending.
    keyword_postings: Vec<Vec<u32>>,
    /// The memories by slot (slots are never reused, so postings stay sorted).
    docs: Docs,
    /// What the memories' norms are computed from, beside their records.
    norms: Norms,
    slot_of: HashMap<i64, u32>,
    live: usize,
}

/// The row an index slot names: the index is as of `tx`, so it is there.
fn read(tx: &Transaction, num: i64) -> Result<MemoryEntry> {
    load_num(tx, num)?.ok_or_else(|| rusqlite::Error::QueryReturnedNoRows.into())
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
        ix.norms.compute_all(&ix.postings, &mut ix.docs);
        Ok(ix)
    }

    /// Apply the change log from this index's generation up to `target` as of `tx`. False when
    /// the log no longer covers the gap, or when removed memories' slots (their records and
    /// entries are kept until a rebuild) outnumber the live ones by more than `worn_slack`
    /// ([`OpenOptions`](crate::OpenOptions)'s): the caller rebuilds.
    pub(crate) fn catch_up(
        &mut self,
        tx: &Transaction,
        project: &str,
        target: Version,
        worn_slack: usize,
    ) -> Result<bool> {
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
        Ok(self.live as i64 == target.1 && self.docs.len() <= 2 * self.live + worn_slack)
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
        self.norms.insert(&self.postings, &mut self.docs, slot);
    }

    /// Add the memory of row `num` to the postings, its norm sums left at zero; its slot.
    fn add_doc(&mut self, num: i64, content: &str, keywords_json: &str, category: MemoryCategory) -> u32 {
        let slot = self.docs.len() as u32;
        let mut ids: Vec<u32> = terms(content).into_iter().map(|t| self.term_id(t)).collect();
        ids.sort_unstable();
        let mut counted: Vec<(u32, u16)> = Vec::new();
        for id in ids {
            match counted.last_mut() {
                Some((last, n)) if *last == id => *n = n.saturating_add(1),
                _ => counted.push((id, 1)),
            }
        }
        for &(id, tf) in &counted {
            self.postings[id as usize].push((slot, f32::from(tf)));
        }
        let keywords: Vec<String> = serde_json::from_str(keywords_json).unwrap_or_default();
        let kw: Vec<u32> = keyword_terms(&keywords)
            .into_iter()
            .map(|t| self.term_id(t))
            .collect();
        for &id in &kw {
            self.keyword_postings[id as usize].push(slot);
        }
        self.docs.push(num, category, &counted, &kw);
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
        if self.docs.category(slot).is_none() {
            return;
        }
        let terms: Vec<u32> = self.docs.terms(slot).iter().map(|e| e.term).collect();
        let keywords: Vec<u32> = self.docs.keywords(slot).iter().map(|e| e.term).collect();
        self.norms.remove(&mut self.docs, slot);
        for id in terms {
            let list = &mut self.postings[id as usize];
            if let Ok(at) = list.binary_search_by_key(&slot, |p| p.0) {
                list.remove(at);
                let df = list.len();
                self.norms
                    .df_changed(&self.postings, &mut self.docs, id, slot, df + 1, df);
            }
        }
        for id in keywords {
            let list = &mut self.keyword_postings[id as usize];
            if let Ok(at) = list.binary_search(&slot) {
                list.remove(at);
            }
        }
        self.live -= 1;
    }

    /// How many slots the index holds, removed memories' included.
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.docs.len()
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.postings.iter().map(|p| p.len() * 8).sum::<usize>()
            + self.keyword_postings.iter().map(|p| p.len() * 4).sum::<usize>()
            + self.docs.weight()
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
                let Some(category) = self.docs.category(slot) else {
                    continue;
                };
                if categories.is_some_and(|c| !c.contains(&category)) {
                    continue;
                }
                let entry = read(tx, self.docs.slot(slot).num)?;
                if entry.importance < min_importance || entry.superseded_by.is_some() {
                    continue;
                }
                let days = days_between(entry.last_accessed_at, now);
                let relevance_score =
                    compute_relevance_score(similarity, keyword_overlap, entry.importance, days);
                let hit = MemorySearchResult {
                    semantic_similarity: None,
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
        let mut out = Vec::new();
        for (similarity, slot) in self.similar_slots(q_terms, floor, category) {
            if out.len() == n {
                break;
            }
            let num = self.docs.slot(slot).num;
            let entry = read(tx, num)?;
            if entry.superseded_by.is_none() {
                out.push((similarity, num, entry));
            }
        }
        Ok(out)
    }

    /// Every indexed memory (of `category`, when given) at least `floor` similar to the query
    /// terms, with its cosine, most similar first (then by slot).
    ///
    /// At 100,000 memories a few hundred share one of a new memory's terms, and reading each
    /// one's terms costs cache and TLB misses: most of an add, when this read them all. So the
    /// candidates are narrowed through the postings first, and only those that can still reach
    /// `floor` are read:
    ///
    /// - only memories sharing one of the query's heaviest terms can reach `floor`
    ///   ([`TfIdf::prefix_terms`]), so those terms' postings give the candidates;
    /// - by Cauchy–Schwarz a memory's cosine is at most `√(Σ w²) / |q|` over the query weights
    ///   `w` of the terms it holds. The query's terms are intersected with the candidates
    ///   heaviest first, and a candidate is dropped once the weights it holds plus all those
    ///   not yet checked fall below `floor`: by the time the common words come, whose postings
    ///   are the longest, few candidates are left to look for in them.
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
        let mut slots: Vec<u32> = qv
            .prefix_terms(floor)
            .into_iter()
            .filter_map(|t| self.term_ids.get(t))
            .flat_map(|&id| self.postings[id as usize].iter().map(|p| p.0))
            .filter(|&slot| {
                let of = self.docs.category(slot);
                of.is_some() && category.is_none_or(|c| of == Some(c))
            })
            .collect();
        slots.sort_unstable();
        slots.dedup();
        // The indexed query terms with their squared weights, heaviest first.
        let mut by_weight: Vec<(u32, f32)> = qv
            .weights()
            .iter()
            .filter_map(|&(t, w)| self.term_ids.get(t).map(|&id| (id, w * w)))
            .collect();
        by_weight.sort_by(|a, b| b.1.total_cmp(&a.1));
        // The bound with room for rounding: it only spares reading memories, never decides.
        let reach = (floor.max(0.0) * q_norm * (1.0 - 1e-3)).powi(2);
        let mut unchecked: f32 = by_weight.iter().map(|t| t.1).sum();
        let mut held = vec![0.0f32; slots.len()];
        for &(id, w2) in &by_weight {
            if slots.is_empty() {
                break;
            }
            intersect(&slots, &self.postings[id as usize], |i| held[i] += w2);
            unchecked -= w2;
            let mut kept = 0;
            for i in 0..slots.len() {
                if held[i] + unchecked.max(0.0) >= reach {
                    slots[kept] = slots[i];
                    held[kept] = held[i];
                    kept += 1;
                }
            }
            slots.truncate(kept);
            held.truncate(kept);
        }
        // (term id, query weight, IDF) in the vector's order: the order `candidates` sums in,
        // so a similarity here equals the one a search computes, to the bit.
        let query: Vec<(u32, f32, f32)> = qv
            .weights()
            .iter()
            .filter_map(|&(t, w)| self.term_ids.get(t).map(|&id| (id, w, self.idf_of(id))))
            .collect();
        let mut by_similarity: Vec<(f32, u32)> = slots
            .into_iter()
            .filter_map(|slot| {
                let terms = self.docs.terms(slot);
                let mut dot = 0.0f32;
                for &(id, w, term_idf) in &query {
                    if let Some(e) = terms.iter().find(|e| e.term == id) {
                        dot += w * f32::from(e.tf) * term_idf;
                    }
                }
                let similarity = cosine(dot, q_norm, self.norms.norm(&self.docs, slot, self.live));
                (similarity > 0.0 && similarity >= floor).then_some((similarity, slot))
            })
            .collect();
        by_similarity.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        by_similarity
    }

    /// The TF-IDF vector of the query terms under the index's current counts.
    fn query_vector<'q>(&self, q_terms: &'q [String]) -> TfIdf<'q> {
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
            let Some(&id) = self.term_ids.get(*term) else {
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
                self.docs.category(slot)?;
                let similarity = cosine(dot[s], q_norm, self.norms.norm(&self.docs, slot, self.live));
                let c = f32::from(common[s]);
                let union = q_set.len() as f32 + self.docs.keywords(slot).len() as f32 - c;
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

/// Call `found(i)` for each of the sorted `slots` that has a posting, `i` its position:
/// the shorter side is walked and the longer searched by galloping (both are sorted, and the
/// slots searched for usually lie far apart).
fn intersect(slots: &[u32], postings: &[(u32, f32)], mut found: impl FnMut(usize)) {
    if slots.len() <= postings.len() {
        let mut rest = postings;
        for (i, &slot) in slots.iter().enumerate() {
            rest = &rest[gallop(rest, |p| p.0 < slot)..];
            match rest.first() {
                Some(&(at, _)) if at == slot => found(i),
                Some(_) => {}
                None => break,
            }
        }
    } else {
        let mut from = 0;
        for &(slot, _) in postings {
            from += gallop(&slots[from..], |&s| s < slot);
            match slots.get(from) {
                Some(&at) if at == slot => found(from),
                Some(_) => {}
                None => break,
            }
        }
    }
}

/// How many leading items of `sorted` are `before` (a partition point), found by doubling a
/// window from the start and then searching it: cheap when the answer is near the start.
fn gallop<T>(sorted: &[T], before: impl Fn(&T) -> bool) -> usize {
    let mut end = 1;
    while end < sorted.len() && before(&sorted[end - 1]) {
        end *= 2;
    }
    let end = end.min(sorted.len());
    sorted[..end].partition_point(before)
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
        for slot in 0..ix.docs.len() as u32 {
            if ix.docs.category(slot).is_none() {
                continue;
            }
            // The definition: √Σ(tf · idf)² under the current counts.
            let direct = ix
                .docs
                .terms(slot)
                .iter()
                .map(|e| f64::from(f32::from(e.tf) * ix.idf_of(e.term)).powi(2))
                .sum::<f64>()
                .sqrt() as f32;
            let kept = ix.norms.norm(&ix.docs, slot, ix.live);
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
            let mut every: Vec<(f32, u32)> = (0..ix.docs.len() as u32)
                .filter_map(|slot| {
                    let of = ix.docs.category(slot)?;
                    if category.is_some_and(|c| of != c) {
                        return None;
                    }
                    let mut dot = 0.0f32;
                    for (t, w) in qv.weights() {
                        let Some(&id) = ix.term_ids.get(*t) else { continue };
                        if let Some(e) = ix.docs.terms(slot).iter().find(|e| e.term == id) {
                            dot += w * f32::from(e.tf) * ix.idf_of(id);
                        }
                    }
                    let similarity = cosine(dot, qv.norm(), ix.norms.norm(&ix.docs, slot, ix.live));
                    (similarity > 0.0 && similarity >= floor).then_some((similarity, slot))
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
