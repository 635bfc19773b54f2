//! The TF-IDF norms of the memories of a [`ProjectIndex`](super::memindex::ProjectIndex), kept
//! exact under writes at a cost that does not grow with the number of memories.
//!
//! **Norms without staleness.** A memory's norm depends on every term's IDF, and
//! `idf = ln(1+N) + 1 − ln(1+df)` moves with the number of memories `N`: a stored norm would be
//! stale after any write. Writing `a = ln(1+N) + 1` and `b_t = ln(1+df_t)`, the squared norm is
//! `a²·Σtf² − 2a·Σtf²·b_t + Σtf²·b_t²`, so each memory keeps the sums, which do not depend on
//! `N` (`Σtf²` is summed from its terms when needed). `b_t` is kept in fixed point (`2⁻³²`,
//! [`fixed_b`]) and the sums as integers, so they are exactly those of an index built from
//! scratch whatever the order of the writes (floating-point deltas would drift, and ties would
//! then order differently from a rebuild).
//!
//! **Heavy terms are summed when read.** A write changes `df` of the written memory's terms,
//! so the sums of every memory holding one of them must move. For a rare term that is a few
//! memories; for a common one it is a large part of the project (the first version walked
//! about 25,000 sums per add at 100,000 memories). So a term held by at least [`HEAVY_DF`]
//! memories becomes *heavy*: its share leaves the sums of the memories holding it, their entry
//! for it is flagged ([`Entry::heavy`](super::docs::Entry::heavy)), and the norm adds the share from the term's current
//! `B` when it is computed, from the memory's terms (read anyway to compare it). A write then
//! updates one number per heavy term. Which terms are heavy changes nothing: the integers the
//! norm is computed from are the same.
//!
//! **Norms are cached until the next write.** Adding the heavy terms' share costs a search a
//! few multiplications per candidate; searches far outnumber writes (one per message against a
//! few adds per session), so each norm computed is kept in the memory's record, tagged with the
//! index's write count, and reused until a write changes that count.

use std::sync::atomic::Ordering;

use super::docs::{Docs, NormSums};

/// Memories holding a term from which its share of the norms is summed when read (see the
/// [module docs](self)): below it a write walks the term's postings, at most this many.
pub(crate) const HEAVY_DF: usize = 256;

/// `2³²`: the scale of `B`.
const FIXED: f64 = 4_294_967_296.0;

/// `ln(1 + df)` in fixed point: an integer, so sums of it are exact in any order.
pub(crate) fn fixed_b(df: usize) -> i128 {
    ((1.0 + df as f64).ln() * FIXED).round() as i128
}

/// A heavy term's current `B` and `B²`.
struct Heavy {
    b: i128,
    b2: i128,
}

impl Heavy {
    fn at(df: usize) -> Self {
        let b = fixed_b(df);
        Heavy { b, b2: b * b }
    }
}

/// `tf²` of a term frequency: an entry's, or a posting's (the same whole number, as `f32`).
fn squared(tf: u16) -> u32 {
    u32::from(tf) * u32::from(tf)
}

/// What the norms of an index's memories are computed from, beside their records; see the
/// [module docs](self).
pub(crate) struct Norms {
    /// Term id → the term's state once heavy.
    heavy: Vec<Option<Heavy>>,
    /// Document frequency from which a term becomes heavy ([`HEAVY_DF`]; smaller in tests,
    /// so small indexes exercise both kinds of terms).
    heavy_df: usize,
    /// Writes so far (never 0, which marks an empty cache entry); any change of the index
    /// moves it.
    writes: u32,
}

impl Default for Norms {
    fn default() -> Self {
        Norms::with_heavy_df(HEAVY_DF)
    }
}

impl Norms {
    /// Norms whose terms become heavy at `heavy_df` memories.
    pub(crate) fn with_heavy_df(heavy_df: usize) -> Self {
        Norms {
            heavy: Vec::new(),
            heavy_df,
            writes: 1,
        }
    }

    /// An empty index's norms, with the same threshold.
    pub(crate) fn cleared(&self) -> Self {
        Norms::with_heavy_df(self.heavy_df)
    }

    /// Room for term ids below `terms`.
    pub(crate) fn grow(&mut self, terms: usize) {
        if self.heavy.len() < terms {
            self.heavy.resize_with(terms, || None);
        }
    }

    /// After building from rows: every term held by at least the threshold is heavy, then each
    /// memory's sums are computed once from the final counts.
    pub(crate) fn compute_all(&mut self, postings: &[Vec<(u32, f32)>], docs: &mut Docs) {
        self.changed(docs);
        self.grow(postings.len());
        let b: Vec<i128> = postings.iter().map(|p| fixed_b(p.len())).collect();
        for (id, list) in postings.iter().enumerate() {
            if list.len() >= self.heavy_df {
                self.heavy[id] = Some(Heavy::at(list.len()));
            }
        }
        for slot in 0..docs.len() as u32 {
            if docs.category(slot).is_some() {
                self.place(docs, slot, |id| b[id as usize]);
            }
        }
    }

    /// Compute the sums of the memory at `slot`, `b` giving the current `B` of each term, and
    /// flag its heavy terms.
    fn place(&self, docs: &mut Docs, slot: u32, b: impl Fn(u32) -> i128) {
        let (record, terms) = docs.terms_mut(slot);
        let mut sums = NormSums::default();
        for e in terms {
            e.heavy = self.heavy[e.term as usize].is_some();
            if !e.heavy {
                sums.shift(squared(e.tf), 0, b(e.term));
            }
        }
        record.sums = sums;
    }

    /// Index the new memory at `slot`, whose terms were just added to `postings`: move the sums
    /// of the memories sharing its terms, compute its own, and make heavy the terms that
    /// reached the threshold.
    pub(crate) fn insert(&mut self, postings: &[Vec<(u32, f32)>], docs: &mut Docs, slot: u32) {
        self.changed(docs);
        for i in 0..docs.terms(slot).len() {
            let id = docs.terms(slot)[i].term;
            let df = postings[id as usize].len();
            self.df_changed(postings, docs, id, slot, df - 1, df);
        }
        self.place(docs, slot, |id| fixed_b(postings[id as usize].len()));
        for i in 0..docs.terms(slot).len() {
            let id = docs.terms(slot)[i].term;
            let df = postings[id as usize].len();
            if df >= self.heavy_df && self.heavy[id as usize].is_none() {
                self.make_heavy(postings, docs, id);
            }
        }
    }

    /// Forget the memory at `slot`, before its postings are removed.
    pub(crate) fn remove(&mut self, docs: &mut Docs, slot: u32) {
        self.changed(docs);
        docs.remove(slot);
    }

    /// The postings of term `id` went from `old` to `new` memories because of the memory at
    /// `except` (whose own sums are computed afresh): move everyone else's.
    pub(crate) fn df_changed(
        &mut self,
        postings: &[Vec<(u32, f32)>],
        docs: &mut Docs,
        id: u32,
        except: u32,
        old: usize,
        new: usize,
    ) {
        self.changed(docs);
        let (old_b, new_b) = (fixed_b(old), fixed_b(new));
        if old_b == new_b {
            return;
        }
        match &mut self.heavy[id as usize] {
            Some(h) => *h = Heavy::at(new),
            None => {
                for &(slot, tf) in &postings[id as usize] {
                    if slot != except {
                        docs.slot_mut(slot).sums.shift(squared(tf as u16), old_b, new_b);
                    }
                }
            }
        }
    }

    /// Term `id` becomes heavy: its share leaves the sums of the memories holding it, and their
    /// entries for it are flagged. Once per term, at [`HEAVY_DF`] postings; a term never
    /// becomes light again (its postings may shrink, which only makes it cheaper).
    fn make_heavy(&mut self, postings: &[Vec<(u32, f32)>], docs: &mut Docs, id: u32) {
        let list = &postings[id as usize];
        let h = Heavy::at(list.len());
        for &(slot, tf) in list {
            let (record, terms) = docs.terms_mut(slot);
            record.sums.shift(squared(tf as u16), h.b, 0);
            if let Some(e) = terms.iter_mut().find(|e| e.term == id) {
                e.heavy = true;
            }
        }
        self.heavy[id as usize] = Some(h);
    }

    /// The integers the norm of `slot` is computed from: `(Σtf², Σtf²·B_t, Σtf²·B_t²)` over all
    /// its terms.
    fn totals(&self, docs: &Docs, slot: u32) -> (u64, i128, i128) {
        let s = docs.slot(slot).sums;
        let (mut tf2, mut b, mut b2) = (0u64, s.tf2_b, s.tf2_b2);
        for e in docs.terms(slot) {
            let t = squared(e.tf);
            tf2 += u64::from(t);
            if e.heavy {
                if let Some(h) = &self.heavy[e.term as usize] {
                    b += i128::from(t) * h.b;
                    b2 += i128::from(t) * h.b2;
                }
            }
        }
        (tf2, b, b2)
    }

    /// Every cached norm is stale from now on (the number of memories, a `B` or a memory's
    /// sums may change).
    fn changed(&mut self, docs: &Docs) {
        self.writes = self.writes.wrapping_add(1);
        if self.writes == 0 {
            // Wrapped around: an old tag could look current again.
            for record in docs.slots() {
                record.cached_norm.store(0, Ordering::Relaxed);
            }
            self.writes = 1;
        }
    }

    /// The TF-IDF norm of the memory at `slot` in a project of `count` memories (the index's
    /// count: it changes only with a write).
    pub(crate) fn norm(&self, docs: &Docs, slot: u32, count: usize) -> f32 {
        let cell = &docs.slot(slot).cached_norm;
        let cached = cell.load(Ordering::Relaxed);
        if (cached >> 32) as u32 == self.writes {
            return f32::from_bits(cached as u32);
        }
        let norm = self.compute_norm(docs, slot, count);
        cell.store(
            u64::from(self.writes) << 32 | u64::from(norm.to_bits()),
            Ordering::Relaxed,
        );
        norm
    }

    /// [`norm`](Self::norm) without the cache.
    fn compute_norm(&self, docs: &Docs, slot: u32, count: usize) -> f32 {
        let (tf2, b, b2) = self.totals(docs, slot);
        let a = (1.0 + count as f64).ln() + 1.0;
        let squared = a * a * tf2 as f64 - 2.0 * a * (b as f64 / FIXED) + b2 as f64 / (FIXED * FIXED);
        squared.max(0.0).sqrt() as f32
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.heavy.len() * std::mem::size_of::<Option<Heavy>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::MemoryCategory;
    use proptest::prelude::*;

    /// Term ids of the tests.
    const TERMS: usize = 12;

    /// A minimal index: postings and memories, enough to drive [`Norms`].
    struct Toy {
        postings: Vec<Vec<(u32, f32)>>,
        docs: Docs,
        norms: Norms,
    }

    impl Toy {
        fn new(heavy_df: usize) -> Self {
            Toy {
                postings: vec![Vec::new(); TERMS],
                docs: Docs::default(),
                norms: Norms::with_heavy_df(heavy_df),
            }
        }

        fn insert(&mut self, terms: Vec<(u32, u16)>) {
            let slot = self.docs.push(0, MemoryCategory::Fact, &terms, &[]);
            for &(id, tf) in &terms {
                self.postings[id as usize].push((slot, f32::from(tf)));
            }
            self.norms.grow(self.postings.len());
            self.norms.insert(&self.postings, &mut self.docs, slot);
        }

        fn remove(&mut self, slot: usize) {
            let slot = slot as u32;
            if slot as usize >= self.docs.len() || self.docs.category(slot).is_none() {
                return;
            }
            let terms: Vec<u32> = self.docs.terms(slot).iter().map(|e| e.term).collect();
            self.norms.remove(&mut self.docs, slot);
            for id in terms {
                let list = &mut self.postings[id as usize];
                list.retain(|p| p.0 != slot);
                let df = list.len();
                self.norms
                    .df_changed(&self.postings, &mut self.docs, id, slot, df + 1, df);
            }
        }

        fn live(&self) -> impl Iterator<Item = u32> + '_ {
            (0..self.docs.len() as u32).filter(|&s| self.docs.category(s).is_some())
        }

        /// The totals by the definition: every term's `B` from its current postings.
        fn direct(&self, slot: u32) -> (u64, i128, i128) {
            let (mut tf2, mut b, mut b2) = (0u64, 0i128, 0i128);
            for e in self.docs.terms(slot) {
                let t = squared(e.tf);
                let bt = fixed_b(self.postings[e.term as usize].len());
                tf2 += u64::from(t);
                b += i128::from(t) * bt;
                b2 += i128::from(t) * bt * bt;
            }
            (tf2, b, b2)
        }
    }

    fn doc() -> impl Strategy<Value = Vec<(u32, u16)>> {
        proptest::collection::btree_map(0..TERMS as u32, 1u16..4, 1..TERMS)
            .prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        /// Whatever the order of adds and removes, and whichever terms are heavy, every
        /// memory's totals are exactly the definition's, a build from the final postings gives
        /// the same, and a memory's entry is flagged heavy exactly when its term is.
        #[test]
        fn totals_equal_the_definition_and_a_build(
            ops in proptest::collection::vec(prop_oneof![
                doc().prop_map(Ok),
                (0usize..40).prop_map(Err),
            ], 1..60),
            heavy_df in 1usize..6,
        ) {
            let mut toy = Toy::new(heavy_df);
            for op in ops {
                match op {
                    Ok(terms) => toy.insert(terms),
                    Err(slot) => toy.remove(slot),
                }
                // Norms cached before this write are not served after it.
                let live = toy.live().count();
                for slot in toy.live() {
                    let cached = toy.norms.norm(&toy.docs, slot, live);
                    prop_assert_eq!(cached.to_bits(), toy.norms.compute_norm(&toy.docs, slot, live).to_bits());
                }
            }
            let kept: Vec<_> = toy.live().map(|s| toy.norms.totals(&toy.docs, s)).collect();
            let direct: Vec<_> = toy.live().map(|s| toy.direct(s)).collect();
            prop_assert_eq!(&kept, &direct);
            for slot in toy.live() {
                for e in toy.docs.terms(slot) {
                    prop_assert_eq!(e.heavy, toy.norms.heavy[e.term as usize].is_some());
                }
            }
            let mut built = Norms::with_heavy_df(heavy_df);
            built.compute_all(&toy.postings, &mut toy.docs);
            let rebuilt: Vec<_> = toy.live().map(|s| built.totals(&toy.docs, s)).collect();
            prop_assert_eq!(&rebuilt, &direct);
        }
    }
}
