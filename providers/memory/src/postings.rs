//! Impact-ordered postings: the candidate index both backends keep beside the memory rows, so
//! a one-shot search reads a bounded number of index entries whatever the project's size.
//!
//! Each memory has one posting per distinct term of its content or keywords, carrying an
//! *impact*: what the memory scores on that term alone, its importance included. A backend stores them
//! under the key `(project, term, impact DESC, num)`, so a term's best memories are the first
//! entries of its range. A search reads the first [`per_term`] entries of each query term's
//! range (the rarest [`MAX_QUERY_TERMS`](crate::retrieval::MAX_QUERY_TERMS) terms), adds up
//! each memory's impacts weighted by the terms' IDF ([`merge`]), reads the rows of the best
//! ones, and ranks those exactly with [`rank`](crate::retrieval::rank).
//!
//! FTS5's `bm25` and PostgreSQL's `ts_rank` had to score *every* memory holding a query term
//! before any cut: 1.7 µs per hit, and a common term is held by up to 15 % of a project. Here the
//! cut comes first and the work per term is fixed.
//!
//! The impact depends on the memory alone (never on document frequencies that move with every
//! write), so postings are written with the row, rewritten only when its terms or importance
//! change, and are the same whatever the order of the writes:
//!
//! ```text
//! impact(t, m) = 0.40 · tf(t, m) / √Σ tf² + 0.25 · [t ∈ keywords(m)] / |keywords(m)| + 0.20 · importance(m)
//! ```
//!
//! the ranking formula's terms with the memory's own length in place of its TF-IDF norm and
//! recency left out (it moves with every access), in fixed point ([`SCALE`]) so both backends
//! store and compare integers. The importance matters most: it is a fifth of the score, so a
//! term's memories ordered by text alone put the important ones deep in a common term's range.
//! Measured on 100,000 memories against the exhaustive ranking (`memory_load`): without it the
//! same reads found 70 % of the top ten, with it 98 %.
//!
//! A posting is deleted by recomputing its key from the stored memory, so a change to the
//! tokenizer or to this formula comes with a migration that writes every posting anew (and,
//! for the tokenizer, clears the terms each row stores, [`MemoryTerms`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::retrieval::{Candidate, W_IMPORTANCE, W_KEYWORDS, W_SIMILARITY};
use crate::text::MemoryTerms;
use crate::types::{MemoryCategory, MemoryEntry};

/// Fixed-point scale of an impact.
const SCALE: f32 = 1_048_576.0;

/// A memory's postings: each distinct content or keyword term with its impact (see the
/// [module docs](self)), sorted by term.
pub(crate) fn of(entry: &MemoryEntry) -> Vec<(String, i64)> {
    let terms = MemoryTerms::of(&entry.content, &entry.keywords);
    let mut tf: BTreeMap<&str, u32> = BTreeMap::new();
    for term in terms.content() {
        *tf.entry(term).or_default() += 1;
    }
    let length = tf.values().map(|&n| f64::from(n * n)).sum::<f64>().sqrt() as f32;
    let mut impacts: BTreeMap<&str, f32> = tf
        .into_iter()
        .map(|(term, n)| (term, W_SIMILARITY * n as f32 / length))
        .collect();
    let keywords = terms.keywords().count();
    for term in terms.keywords() {
        *impacts.entry(term).or_default() += W_KEYWORDS / keywords as f32;
    }
    let importance = W_IMPORTANCE * entry.importance;
    impacts
        .into_iter()
        .map(|(term, impact)| (term.to_string(), ((impact + importance) * SCALE).round() as i64))
        .collect()
}

/// Whether a change of a memory changes its postings (its terms, project or importance).
pub(crate) fn moved(old: &MemoryEntry, new: &MemoryEntry) -> bool {
    old.content != new.content
        || old.keywords != new.keywords
        || old.project_path != new.project_path
        || old.importance != new.importance
}

/// The key every posting of a project is stored under: a hash of its path (rows read through
/// it are checked against the path itself, so a collision costs candidates, never a leak).
pub(crate) fn project_key(project: &str) -> i64 {
    crate::ids::project_hash(project) as i64
}

/// How many postings of each query term a search reads for `limit` candidates: four times
/// as many, as a memory strong on the whole query is seldom at the top of any one term's
/// range, and filters drop some. Measured on 100,000 memories against the exhaustive ranking
/// (`memory_load`): the top ten agreed at 86 % with twice as many, 98 % with four times.
pub(crate) fn per_term(limit: usize) -> usize {
    limit.saturating_mul(4)
}

/// The memories of the lists read for each query term (`(idf, [(num, impact)])`), best first:
/// by the sum over the lists of `idf · impact`, then by row number.
pub(crate) fn merge(lists: &[(f32, Vec<(i64, i64)>)]) -> Vec<i64> {
    let mut sums: HashMap<i64, f32> = HashMap::new();
    for (idf, postings) in lists {
        for &(num, impact) in postings {
            *sums.entry(num).or_default() += idf * impact as f32;
        }
    }
    let mut order: Vec<(i64, f32)> = sums.into_iter().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order.into_iter().map(|(num, _)| num).collect()
}

/// A row read for candidates: its number, its memory and its stored terms (`None` for a row
/// written before terms were stored).
pub(crate) type CandidateRow = (i64, MemoryEntry, Option<MemoryTerms>);

/// The candidates a search keeps, offered in [`merge`] order: the first `limit` the filter
/// passes, tokenized once, and the terms of theirs whose document frequencies are still to read.
pub(crate) struct Kept<'a> {
    filter: &'a Filter<'a>,
    /// Terms whose frequencies are already read (the query's).
    known: &'a BTreeSet<String>,
    limit: usize,
    pub(crate) candidates: Vec<Candidate>,
}

impl<'a> Kept<'a> {
    pub(crate) fn new(filter: &'a Filter<'a>, known: &'a BTreeSet<String>, limit: usize) -> Self {
        Kept {
            filter,
            known,
            limit,
            candidates: Vec::new(),
        }
    }

    /// Whether `limit` candidates are kept.
    pub(crate) fn is_full(&self) -> bool {
        self.candidates.len() >= self.limit
    }

    /// Offer the rows read for `round`, a slice of [`merge`] order, in that order (a backend
    /// reads a round's rows in one statement, in whatever order they come).
    pub(crate) fn offer_round(&mut self, round: &[i64], rows: impl IntoIterator<Item = CandidateRow>) {
        let mut by_num: HashMap<i64, (MemoryEntry, Option<MemoryTerms>)> = rows
            .into_iter()
            .map(|(num, entry, terms)| (num, (entry, terms)))
            .collect();
        for num in round {
            if let Some((entry, terms)) = by_num.remove(num) {
                self.offer(*num, entry, terms);
            }
        }
    }

    /// Keep the memory of row `num` (with its stored terms, if any) if there is room and the
    /// filter passes it.
    pub(crate) fn offer(&mut self, num: i64, entry: MemoryEntry, terms: Option<MemoryTerms>) {
        if self.is_full() || !self.filter.keeps(&entry) {
            return;
        }
        self.candidates.push(Candidate::new(num, entry, terms));
    }

    /// The kept candidates' terms whose document frequencies are still to read, sorted and
    /// distinct: those not known already. A memory sharing no word with the query has a text
    /// similarity of 0 whatever its terms' frequencies (a memory found by meaning alone, say):
    /// only those that share a word need theirs. Borrowed from the candidates, so 200 of them
    /// cost one list, not a string per term.
    pub(crate) fn new_terms(&self) -> Vec<&str> {
        let mut terms: Vec<&str> = self
            .candidates
            .iter()
            .filter(|c| c.terms.content().any(|t| self.known.contains(t)))
            .flat_map(|c| c.terms.content())
            .filter(|t| !self.known.contains(*t))
            .collect();
        terms.sort_unstable();
        terms.dedup();
        terms
    }
}

/// What candidate retrieval is confined to: one project's current memories, at or above an
/// importance, of some categories.
pub(crate) struct Filter<'a> {
    pub(crate) project: &'a str,
    pub(crate) min_importance: f32,
    pub(crate) categories: Option<&'a [MemoryCategory]>,
}

impl Filter<'_> {
    /// Whether `entry` is one this search may return.
    pub(crate) fn keeps(&self, entry: &MemoryEntry) -> bool {
        entry.project_path == self.project
            && entry.superseded_by.is_none()
            && entry.importance >= self.min_importance
            && self.categories.is_none_or(|c| c.contains(&entry.category))
    }

    /// Whether nothing at all can pass (an empty category list).
    pub(crate) fn is_empty(&self) -> bool {
        self.categories.is_some_and(<[_]>::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(content: &str, keywords: &[&str], importance: f32) -> MemoryEntry {
        MemoryEntry {
            id: "x".into(),
            project_path: "/p".into(),
            category: MemoryCategory::Fact,
            content: content.into(),
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            importance,
            access_count: 0,
            source_session_id: None,
            source_context: None,
            created_at: 0,
            updated_at: 0,
            last_accessed_at: 0,
            decayed_at: None,
            superseded_by: None,
            superseded_at: None,
        }
    }

    fn impact(postings: &[(String, i64)], term: &str) -> f32 {
        postings
            .iter()
            .find(|(t, _)| t == term)
            .map(|&(_, i)| i as f32 / SCALE)
            .unwrap_or(0.0)
    }

    #[test]
    fn impacts_by_hand() {
        // "pnpm pnpm yarn": tf 2 and 1, length √5; keywords {pnpm}.
        let p = of(&memory("pnpm pnpm yarn", &["pnpm"], 0.0));
        assert_eq!(
            p.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
            ["pnpm", "yarn"]
        );
        let root5 = 5f32.sqrt();
        assert!((impact(&p, "pnpm") - (0.40 * 2.0 / root5 + 0.25)).abs() < 1e-5);
        assert!((impact(&p, "yarn") - 0.40 / root5).abs() < 1e-5);
        // A keyword the content lacks still has a posting.
        let k = of(&memory("use the lockfile", &["pnpm", "yarn"], 0.0));
        assert!((impact(&k, "pnpm") - 0.125).abs() < 1e-5);
        // The importance counts in every posting.
        let important = of(&memory("pnpm pnpm yarn", &["pnpm"], 0.5));
        assert!((impact(&important, "yarn") - (0.40 / root5 + 0.10)).abs() < 1e-5);
        assert!(of(&memory(" ", &[], 1.0)).is_empty());
    }

    #[test]
    fn merge_adds_weighted_impacts_and_breaks_ties_by_row() {
        let lists = vec![
            (2.0, vec![(1, 100), (2, 90), (3, 10)]),
            (1.0, vec![(3, 200), (4, 150)]),
        ];
        // 1: 200, 2: 180, 3: 20 + 200 = 220, 4: 150.
        assert_eq!(merge(&lists), [3, 1, 2, 4]);
        assert_eq!(merge(&[(1.0, vec![(9, 5), (7, 5)])]), [7, 9]);
    }

    #[test]
    fn kept_takes_the_first_that_pass_in_merge_order_up_to_the_limit_and_the_terms_still_to_read() {
        let filter = Filter {
            project: "/p",
            min_importance: 0.3,
            categories: None,
        };
        let known: BTreeSet<String> = ["pnpm".to_string()].into();
        let mut kept = Kept::new(&filter, &known, 2);
        // A round's rows come in any order and are offered in the round's.
        let rows = [
            (3, memory("yarn berry pnpm", &[], 0.5), None),
            (1, memory("pnpm lockfile", &[], 0.1), None), // under the floor
            (2, memory("pnpm workspaces", &[], 0.5), None),
        ];
        kept.offer_round(&[1, 2, 3], rows);
        assert!(kept.is_full());
        kept.offer(4, memory("cargo build", &[], 0.9), None); // no room left
        let nums: Vec<i64> = kept.candidates.iter().map(|c| c.num).collect();
        assert_eq!(nums, [2, 3]);
        // The kept memories' terms, less the known ones: not the refused memories'.
        let mut expected = crate::text::terms("workspaces yarn berry");
        expected.sort();
        assert_eq!(kept.new_terms(), expected);
    }

    #[test]
    fn a_kept_memory_sharing_no_query_word_needs_no_frequencies() {
        let filter = Filter {
            project: "/p",
            min_importance: 0.0,
            categories: None,
        };
        let known: BTreeSet<String> = ["pnpm".to_string()].into();
        let mut kept = Kept::new(&filter, &known, 2);
        kept.offer(
            1,
            memory("install packages with the workspace tool", &[], 0.5),
            None,
        );
        assert_eq!(kept.candidates.len(), 1, "kept: it may be near in meaning");
        assert!(kept.new_terms().is_empty(), "{:?}", kept.new_terms());
    }

    #[test]
    fn a_candidate_with_stored_terms_is_not_tokenized_again() {
        let filter = Filter {
            project: "/p",
            min_importance: 0.0,
            categories: None,
        };
        let known: BTreeSet<String> = ["pnpm".to_string()].into();
        let mut kept = Kept::new(&filter, &known, 2);
        let entry = memory("pnpm workspaces", &["pnpm"], 0.5);
        let tokenized = MemoryTerms::of(&entry.content, &entry.keywords);
        let (content, keywords) = tokenized.stored();
        assert_eq!((content, keywords), ("pnpm workspac", "pnpm"));
        let read = MemoryTerms::read(Some(content.into()), Some(keywords.into()));
        assert_eq!(read.as_ref(), Some(&tokenized));
        // Terms as stored are taken as they are: here ones the text does not hold.
        let stored = MemoryTerms::read(Some("pnpm lockfil".into()), Some("lockfil".into())).unwrap();
        kept.offer(1, entry.clone(), Some(stored.clone()));
        kept.offer(2, entry, None);
        assert_eq!(kept.candidates[0].terms, stored);
        assert_eq!(kept.candidates[1].terms, tokenized);
        assert_eq!(kept.new_terms(), ["lockfil", "workspac"]);
        // A row written before terms were stored has none.
        assert_eq!(MemoryTerms::read(None, Some(String::new())), None);
    }

    #[test]
    fn filter_keeps_only_current_memories_of_its_project_and_categories() {
        let mut e = memory("x", &[], 0.5);
        let all = Filter {
            project: "/p",
            min_importance: 0.0,
            categories: None,
        };
        assert!(all.keeps(&e) && !all.is_empty());
        let facts = [MemoryCategory::Fact];
        let strict = Filter {
            project: "/p",
            min_importance: 0.6,
            categories: Some(&facts),
        };
        assert!(!strict.keeps(&e));
        assert!(!Filter { project: "/q", ..all }.keeps(&e));
        e.superseded_by = Some("y".into());
        assert!(!Filter {
            project: "/p",
            min_importance: 0.0,
            categories: None
        }
        .keeps(&e));
        assert!(Filter {
            project: "/p",
            min_importance: 0.0,
            categories: Some(&[])
        }
        .is_empty());
    }
}
