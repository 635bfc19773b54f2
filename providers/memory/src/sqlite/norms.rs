//! The TF-IDF norms of the memories of a [`ProjectIndex`](super::memindex::ProjectIndex), kept
//! exact under writes at a cost that does not grow with the number of memories.
//!
//! **Norms without staleness.** A memory's norm depends on every term's IDF, and
//! `idf = ln(1+N) + 1 − ln(1+df)` moves with the number of memories `N`: a stored norm would be
//! stale after any write. Writing `a = ln(1+N) + 1` and `b_t = ln(1+df_t)`, the squared norm is
//! `a²·Σtf² − 2a·Σtf²·b_t + Σtf²·b_t²`, so each memory keeps the three sums, which do not
//! depend on `N`. `b_t` is kept in fixed point (`2⁻³²`, [`fixed_b`]) and the sums as integers,
//! so they are exactly those of an index built from scratch whatever the order of the writes
//! (floating-point deltas would drift, and ties would then order differently from a rebuild).
//!
//! **Heavy terms are summed when read.** A write changes `df` of the written memory's terms,
//! so the sums of every memory holding one of them must move. For a rare term that is a few
//! memories; for a common one it is a large part of the project (the first version walked
//! about 25,000 sums per add at 100,000 memories). So a term held by at least
//! [`HEAVY_DF`] memories becomes *heavy*: each memory lists up to [`INLINE`] of its heavy terms
//! beside its sums (term id and `tf²`), their share is left out of the sums, and the norm adds
//! it from the term's current `B` when it is computed. A write then updates one number per
//! heavy term. A memory with more heavy terms keeps the rest in its sums, and the heavy term
//! remembers it (`overflow`) so a change of `B` moves those few. Which terms are listed and
//! which are summed changes nothing: the integers the norm is computed from are the same.
//!
//! **Norms are cached until the next write.** Adding the listed terms' share costs a search a
//! few multiplications per candidate; searches far outnumber writes (one per message against a
//! few adds per session), so each norm computed is kept, tagged with the index's write count,
//! and reused until a write changes that count.

/// Memories holding a term from which its share of the norms is summed when read (see the
/// [module docs](self)): below it a write walks the term's postings, at most this many.
pub(crate) const HEAVY_DF: usize = 256;
/// Heavy terms listed beside a memory's sums; more are kept in the sums.
pub(crate) const INLINE: usize = 8;

use std::sync::atomic::{AtomicU64, Ordering};

/// `2³²`: the scale of `B`.
const FIXED: f64 = 4_294_967_296.0;

/// `ln(1 + df)` in fixed point: an integer, so sums of it are exact in any order.
pub(crate) fn fixed_b(df: usize) -> i128 {
    ((1.0 + df as f64).ln() * FIXED).round() as i128
}

/// What a memory keeps for its norm: `Σtf²` over all its terms, `Σtf²·B_t` and `Σtf²·B_t²`
/// over the terms not listed in `heavy`, and the listed heavy terms as `(term id, tf²)`.
#[derive(Clone, Copy, Default)]
struct NormSums {
    tf2: u64,
    tf2_b: i128,
    tf2_b2: i128,
    heavy: [(u32, u32); INLINE],
    heavy_len: u8,
}

impl NormSums {
    /// Move the sums by a change of one term's `B` from `old` to `new`, for a term with
    /// `tf2 = tf²`.
    fn shift(&mut self, tf2: u32, old: i128, new: i128) {
        let tf2 = i128::from(tf2);
        self.tf2_b += tf2 * (new - old);
        self.tf2_b2 += tf2 * (new * new - old * old);
    }
}

/// A heavy term: its current `B` and `B²`, and the memories (slot, `tf²`) that keep its share
/// in their sums, slots ascending.
struct Heavy {
    b: i128,
    b2: i128,
    overflow: Vec<(u32, u32)>,
}

impl Heavy {
    fn at(df: usize) -> Self {
        let b = fixed_b(df);
        Heavy {
            b,
            b2: b * b,
            overflow: Vec::new(),
        }
    }
}

/// `tf²` of a term frequency.
fn squared(tf: f32) -> u32 {
    (tf as u32).saturating_mul(tf as u32)
}

/// The norm data of every slot of an index; see the [module docs](self).
pub(crate) struct Norms {
    /// Slot → sums; a flat array, so a write walks it in slot order along a posting list.
    sums: Vec<NormSums>,
    /// Term id → the term's state once heavy.
    heavy: Vec<Option<Heavy>>,
    /// Document frequency from which a term becomes heavy ([`HEAVY_DF`]; smaller in tests,
    /// so small indexes exercise both kinds of terms).
    heavy_df: usize,
    /// Writes so far (never 0, which marks an empty cache entry); any change of the index
    /// moves it.
    writes: u32,
    /// Slot → the last norm computed (`f32` bits, low half) and `writes` then (high half).
    /// Atomic because searches compute norms under a shared lock.
    cache: Vec<AtomicU64>,
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
            sums: Vec::new(),
            heavy: Vec::new(),
            heavy_df,
            writes: 1,
            cache: Vec::new(),
        }
    }

    /// An empty index's norms, with the same threshold.
    pub(crate) fn cleared(&self) -> Self {
        Norms::with_heavy_df(self.heavy_df)
    }

    /// Room for a new slot (sums zero until [`place`](Self::place)) and term ids below `terms`.
    pub(crate) fn grow(&mut self, terms: usize) {
        self.changed();
        self.sums.push(NormSums::default());
        self.cache.push(AtomicU64::new(0));
        if self.heavy.len() < terms {
            self.heavy.resize_with(terms, || None);
        }
    }

    /// After building from rows: every term held by at least the threshold is heavy, then each
    /// slot's sums are computed once from the final counts.
    pub(crate) fn compute_all<'a>(
        &mut self,
        postings: &[Vec<(u32, f32)>],
        docs: impl Iterator<Item = (u32, &'a [(u32, f32)])>,
    ) {
        self.changed();
        self.heavy.resize_with(postings.len(), || None);
        let b: Vec<i128> = postings.iter().map(|p| fixed_b(p.len())).collect();
        for (id, list) in postings.iter().enumerate() {
            if list.len() >= self.heavy_df {
                self.heavy[id] = Some(Heavy::at(list.len()));
            }
        }
        for (slot, terms) in docs {
            self.place(slot, terms, |id| b[id as usize]);
        }
    }

    /// Compute the sums of a memory at `slot` with these terms, `b` giving the current `B` of
    /// each term; its heavy terms are listed while there is room.
    fn place(&mut self, slot: u32, terms: &[(u32, f32)], b: impl Fn(u32) -> i128) {
        let mut sums = NormSums::default();
        for &(id, tf) in terms {
            let tf2 = squared(tf);
            sums.tf2 += u64::from(tf2);
            match &mut self.heavy[id as usize] {
                Some(_) if usize::from(sums.heavy_len) < INLINE => {
                    sums.heavy[usize::from(sums.heavy_len)] = (id, tf2);
                    sums.heavy_len += 1;
                }
                Some(h) => {
                    sums.shift(tf2, 0, h.b);
                    // A new memory takes the last slot, and a build places slots in order.
                    h.overflow.push((slot, tf2));
                }
                None => sums.shift(tf2, 0, b(id)),
            }
        }
        self.sums[slot as usize] = sums;
    }

    /// Index a new memory at `slot` whose terms were just added to `postings`: move the sums of
    /// the memories sharing its terms, compute its own, and make heavy the terms that reached
    /// the threshold.
    pub(crate) fn insert(&mut self, postings: &[Vec<(u32, f32)>], slot: u32, terms: &[(u32, f32)]) {
        self.changed();
        for &(id, _) in terms {
            let df = postings[id as usize].len();
            self.df_changed(postings, id, slot, df - 1, df);
        }
        self.place(slot, terms, |id| fixed_b(postings[id as usize].len()));
        for &(id, _) in terms {
            let df = postings[id as usize].len();
            if df >= self.heavy_df && self.heavy[id as usize].is_none() {
                self.make_heavy(postings, id);
            }
        }
    }

    /// Forget the memory at `slot` with these terms, before its postings are removed.
    pub(crate) fn remove(&mut self, slot: u32, terms: &[(u32, f32)]) {
        self.changed();
        for &(id, _) in terms {
            if let Some(h) = &mut self.heavy[id as usize] {
                if let Ok(at) = h.overflow.binary_search_by_key(&slot, |o| o.0) {
                    h.overflow.remove(at);
                }
            }
        }
        self.sums[slot as usize] = NormSums::default();
    }

    /// The postings of term `id` went from `old` to `new` memories because of the memory at
    /// `except` (whose own sums are computed afresh): move everyone else's.
    pub(crate) fn df_changed(
        &mut self,
        postings: &[Vec<(u32, f32)>],
        id: u32,
        except: u32,
        old: usize,
        new: usize,
    ) {
        self.changed();
        let (old_b, new_b) = (fixed_b(old), fixed_b(new));
        if old_b == new_b {
            return;
        }
        match &mut self.heavy[id as usize] {
            Some(h) => {
                h.b = new_b;
                h.b2 = new_b * new_b;
                for &(slot, tf2) in &h.overflow {
                    if slot != except {
                        self.sums[slot as usize].shift(tf2, old_b, new_b);
                    }
                }
            }
            None => {
                for &(slot, tf) in &postings[id as usize] {
                    if slot != except {
                        self.sums[slot as usize].shift(squared(tf), old_b, new_b);
                    }
                }
            }
        }
    }

    /// Term `id` becomes heavy: its share leaves the sums of the memories that can list it.
    /// Once per term, at [`HEAVY_DF`] postings; a term never becomes light again (its
    /// postings may shrink, which only makes it cheaper).
    fn make_heavy(&mut self, postings: &[Vec<(u32, f32)>], id: u32) {
        let list = &postings[id as usize];
        let mut h = Heavy::at(list.len());
        for &(slot, tf) in list {
            let tf2 = squared(tf);
            let sums = &mut self.sums[slot as usize];
            if usize::from(sums.heavy_len) < INLINE {
                sums.shift(tf2, h.b, 0);
                sums.heavy[usize::from(sums.heavy_len)] = (id, tf2);
                sums.heavy_len += 1;
            } else {
                h.overflow.push((slot, tf2));
            }
        }
        self.heavy[id as usize] = Some(h);
    }

    /// The integers the norm of `slot` is computed from: `(Σtf², Σtf²·B_t, Σtf²·B_t²)` over all
    /// its terms.
    fn totals(&self, slot: u32) -> (u64, i128, i128) {
        let s = &self.sums[slot as usize];
        let (mut b, mut b2) = (s.tf2_b, s.tf2_b2);
        for &(id, tf2) in &s.heavy[..usize::from(s.heavy_len)] {
            if let Some(h) = &self.heavy[id as usize] {
                b += i128::from(tf2) * h.b;
                b2 += i128::from(tf2) * h.b2;
            }
        }
        (s.tf2, b, b2)
    }

    /// Every cached norm is stale from now on (the number of memories, a `B` or a memory's
    /// sums may change).
    fn changed(&mut self) {
        self.writes = self.writes.wrapping_add(1);
        if self.writes == 0 {
            // Wrapped around: an old tag could look current again.
            self.cache.iter_mut().for_each(|c| *c.get_mut() = 0);
            self.writes = 1;
        }
    }

    /// The TF-IDF norm of the memory at `slot` in a project of `docs` memories (the index's
    /// count: it changes only with a write).
    pub(crate) fn norm(&self, slot: u32, docs: usize) -> f32 {
        let cell = &self.cache[slot as usize];
        let cached = cell.load(Ordering::Relaxed);
        if (cached >> 32) as u32 == self.writes {
            return f32::from_bits(cached as u32);
        }
        let norm = self.compute_norm(slot, docs);
        cell.store(
            u64::from(self.writes) << 32 | u64::from(norm.to_bits()),
            Ordering::Relaxed,
        );
        norm
    }

    /// [`norm`](Self::norm) without the cache.
    fn compute_norm(&self, slot: u32, docs: usize) -> f32 {
        let (tf2, b, b2) = self.totals(slot);
        let a = (1.0 + docs as f64).ln() + 1.0;
        let squared = a * a * tf2 as f64 - 2.0 * a * (b as f64 / FIXED) + b2 as f64 / (FIXED * FIXED);
        squared.max(0.0).sqrt() as f32
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.sums.len() * (std::mem::size_of::<NormSums>() + 8)
            + self.heavy.len() * std::mem::size_of::<Option<Heavy>>()
            + self
                .heavy
                .iter()
                .flatten()
                .map(|h| h.overflow.len() * 8)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Term ids of the tests: more than a memory can list.
    const TERMS: usize = INLINE + 4;

    /// A minimal index: postings and terms per slot, enough to drive [`Norms`].
    struct Toy {
        postings: Vec<Vec<(u32, f32)>>,
        docs: Vec<Option<Vec<(u32, f32)>>>,
        norms: Norms,
    }

    impl Toy {
        fn new(heavy_df: usize) -> Self {
            Toy {
                postings: vec![Vec::new(); TERMS],
                docs: Vec::new(),
                norms: Norms::with_heavy_df(heavy_df),
            }
        }

        fn insert(&mut self, terms: Vec<(u32, f32)>) {
            let slot = self.docs.len() as u32;
            for &(id, tf) in &terms {
                self.postings[id as usize].push((slot, tf));
            }
            self.norms.grow(self.postings.len());
            self.norms.insert(&self.postings, slot, &terms);
            self.docs.push(Some(terms));
        }

        fn remove(&mut self, slot: usize) {
            let Some(terms) = self.docs.get_mut(slot).and_then(Option::take) else {
                return;
            };
            self.norms.remove(slot as u32, &terms);
            for &(id, _) in &terms {
                let list = &mut self.postings[id as usize];
                list.retain(|p| p.0 != slot as u32);
                let df = list.len();
                self.norms.df_changed(&self.postings, id, slot as u32, df + 1, df);
            }
        }

        /// The totals by the definition: every term's `B` from its current postings.
        fn direct(&self, terms: &[(u32, f32)]) -> (u64, i128, i128) {
            let (mut tf2, mut b, mut b2) = (0u64, 0i128, 0i128);
            for &(id, tf) in terms {
                let t = squared(tf);
                let bt = fixed_b(self.postings[id as usize].len());
                tf2 += u64::from(t);
                b += i128::from(t) * bt;
                b2 += i128::from(t) * bt * bt;
            }
            (tf2, b, b2)
        }
    }

    fn doc() -> impl Strategy<Value = Vec<(u32, f32)>> {
        proptest::collection::btree_map(0..TERMS as u32, 1u32..4, 1..TERMS)
            .prop_map(|m| m.into_iter().map(|(id, tf)| (id, tf as f32)).collect())
    }

    proptest! {
        /// Whatever the order of adds and removes, and whichever terms are heavy, listed or
        /// overflowing, every memory's totals are exactly the definition's, and a build from
        /// the final postings gives the same.
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
                let live = toy.docs.iter().flatten().count();
                for (slot, _) in toy.docs.iter().enumerate().filter(|(_, d)| d.is_some()) {
                    let cached = toy.norms.norm(slot as u32, live);
                    prop_assert_eq!(cached.to_bits(), toy.norms.compute_norm(slot as u32, live).to_bits());
                }
            }
            let mut built = Norms::with_heavy_df(heavy_df);
            for _ in &toy.docs {
                built.grow(toy.postings.len());
            }
            built.compute_all(
                &toy.postings,
                toy.docs.iter().enumerate().filter_map(|(s, d)| Some((s as u32, d.as_deref()?))),
            );
            for (slot, terms) in toy.docs.iter().enumerate() {
                let Some(terms) = terms else { continue };
                let kept = toy.norms.totals(slot as u32);
                prop_assert_eq!(kept, toy.direct(terms));
                prop_assert_eq!(kept, built.totals(slot as u32));
            }
        }
    }

    #[test]
    fn a_memory_with_more_heavy_terms_than_listed_keeps_the_rest_in_its_sums() {
        let mut toy = Toy::new(1);
        let all: Vec<(u32, f32)> = (0..TERMS as u32).map(|id| (id, 1.0)).collect();
        toy.insert(all.clone());
        // Every term is heavy from its first memory: INLINE are listed, the rest summed.
        assert!(toy.norms.heavy.iter().all(Option::is_some));
        assert_eq!(usize::from(toy.norms.sums[0].heavy_len), INLINE);
        let last = (TERMS - 1) as u32;
        assert_eq!(
            toy.norms.heavy[last as usize].as_ref().unwrap().overflow,
            vec![(0, 1)]
        );
        // A second memory with a summed term moves the first one's sums.
        let second = vec![(0, 2.0), (last, 3.0)];
        toy.insert(second.clone());
        assert_eq!(toy.norms.totals(0), toy.direct(&all));
        assert_eq!(toy.norms.totals(1), toy.direct(&second));
        toy.remove(0);
        assert_eq!(toy.norms.totals(1), toy.direct(&second));
        assert!(toy.norms.heavy[last as usize]
            .as_ref()
            .unwrap()
            .overflow
            .is_empty());
    }
}
