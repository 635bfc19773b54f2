//! The memories of a [`ProjectIndex`](super::memindex::ProjectIndex), stored flat.
//!
//! Comparing a new memory with its few hundred candidates, or scoring a search's, touches
//! memories scattered over the whole project: at 100,000 memories each one looked at is a
//! cache miss. So a memory is one 64-byte record ([`Slot`]: its row, norm sums and cached
//! norm) and one run of [`Entry`]s in a shared arena (its content terms, then its keyword
//! terms): two or three cache lines, where a record with a term list of its own and norm data
//! kept apart took four. Categories are a dense array of their own, read first to pass over
//! the memories of other categories.
//!
//! Slots are never reused, so postings stay sorted by slot; a removed memory leaves its record
//! and its entries behind (its category `None`) until the index is rebuilt.

use std::sync::atomic::AtomicU64;

use crate::types::MemoryCategory;

/// A term of a memory: a content term with its frequency, or a keyword term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The index's id of the term.
    pub(crate) term: u32,
    /// How often the term occurs in the content (0 for a keyword term).
    pub(crate) tf: u16,
    /// The term is heavy (see [`norms`](super::norms)): its share of the norm is not in the
    /// memory's sums.
    pub(crate) heavy: bool,
}

/// One memory's record: what comparing it needs besides its terms and category, in one cache
/// line.
#[repr(align(64))]
pub(crate) struct Slot {
    /// What its norm is computed from, besides its terms.
    pub(crate) sums: NormSums,
    /// The last norm computed, tagged (see [`Norms::norm`](super::norms::Norms::norm)).
    pub(crate) cached_norm: AtomicU64,
    /// Its row number.
    pub(crate) num: i64,
    /// Where its entries start in the arena.
    at: u32,
    /// How many content terms, then keyword terms, it has.
    terms: u32,
    keywords: u32,
}

/// Every memory of an index: the records and categories by slot, and the arena of their
/// entries.
#[derive(Default)]
pub(crate) struct Docs {
    slots: Vec<Slot>,
    /// Slot → category, `None` once removed: apart from the records so that passing over the
    /// memories of other categories reads one dense array.
    categories: Vec<Option<MemoryCategory>>,
    arena: Vec<Entry>,
}

impl Docs {
    /// Store a memory with these content terms (distinct, with frequencies) and keyword terms;
    /// its slot. Its norm sums start at zero.
    pub(crate) fn push(
        &mut self,
        num: i64,
        category: MemoryCategory,
        terms: &[(u32, u16)],
        keywords: &[u32],
    ) -> u32 {
        let slot = self.slots.len() as u32;
        self.slots.push(Slot {
            sums: NormSums::default(),
            cached_norm: AtomicU64::new(0),
            num,
            at: self.arena.len() as u32,
            terms: terms.len() as u32,
            keywords: keywords.len() as u32,
        });
        self.categories.push(Some(category));
        let content = terms.iter().map(|&(term, tf)| Entry {
            term,
            tf,
            heavy: false,
        });
        let keyword = keywords.iter().map(|&term| Entry {
            term,
            tf: 0,
            heavy: false,
        });
        self.arena.extend(content.chain(keyword));
        slot
    }

    /// Mark the memory at `slot` removed.
    pub(crate) fn remove(&mut self, slot: u32) {
        self.categories[slot as usize] = None;
        self.slots[slot as usize].sums = NormSums::default();
    }

    /// The category of the memory at `slot`; `None` once removed.
    pub(crate) fn category(&self, slot: u32) -> Option<MemoryCategory> {
        self.categories[slot as usize]
    }

    /// The record of `slot`.
    pub(crate) fn slot(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }

    /// The record of `slot`, to change its sums.
    pub(crate) fn slot_mut(&mut self, slot: u32) -> &mut Slot {
        &mut self.slots[slot as usize]
    }

    /// Every record, by slot.
    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The content terms of the memory at `slot`.
    pub(crate) fn terms(&self, slot: u32) -> &[Entry] {
        let s = &self.slots[slot as usize];
        &self.arena[s.at as usize..][..s.terms as usize]
    }

    /// The content terms of the memory at `slot`, with its record, to change both.
    pub(crate) fn terms_mut(&mut self, slot: u32) -> (&mut Slot, &mut [Entry]) {
        let s = &mut self.slots[slot as usize];
        let terms = &mut self.arena[s.at as usize..][..s.terms as usize];
        (s, terms)
    }

    /// The keyword terms of the memory at `slot`.
    pub(crate) fn keywords(&self, slot: u32) -> &[Entry] {
        let s = &self.slots[slot as usize];
        &self.arena[s.at as usize + s.terms as usize..][..s.keywords as usize]
    }

    /// How many slots there are, removed ones included.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Approximate memory use in bytes.
    pub(crate) fn weight(&self) -> usize {
        self.slots.len() * (std::mem::size_of::<Slot>() + 1) + self.arena.len() * std::mem::size_of::<Entry>()
    }
}

// The layout this module exists for: a record is one cache line, an entry eight bytes.
const _: () = assert!(std::mem::size_of::<Slot>() == 64 && std::mem::size_of::<Entry>() == 8);

/// What a memory keeps for its norm: `Σtf²·B_t` and `Σtf²·B_t²` over its terms that are not
/// heavy.
#[derive(Clone, Copy, Default)]
pub(crate) struct NormSums {
    pub(super) tf2_b: i128,
    pub(super) tf2_b2: i128,
}

impl NormSums {
    /// Move the sums by a change of one term's `B` from `old` to `new`, for a term with
    /// `tf2 = tf²`.
    pub(super) fn shift(&mut self, tf2: u32, old: i128, new: i128) {
        let tf2 = i128::from(tf2);
        self.tf2_b += tf2 * (new - old);
        self.tf2_b2 += tf2 * (new * new - old * old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_as_stored_and_removal_keeps_the_others() {
        let mut docs = Docs::default();
        let a = docs.push(7, MemoryCategory::Fact, &[(1, 2), (4, 1)], &[9]);
        let b = docs.push(8, MemoryCategory::Preference, &[(4, 3)], &[]);
        docs.remove(a);
        assert_eq!(docs.category(a), None);
        assert_eq!(docs.terms(a).iter().map(|e| e.term).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(docs.keywords(a).iter().map(|e| e.term).collect::<Vec<_>>(), [9]);
        assert_eq!(docs.slot(b).num, 8);
        assert_eq!(docs.category(b), Some(MemoryCategory::Preference));
        assert_eq!(
            docs.terms(b),
            &[Entry {
                term: 4,
                tf: 3,
                heavy: false
            }]
        );
        assert!(docs.keywords(b).is_empty());
    }
}
