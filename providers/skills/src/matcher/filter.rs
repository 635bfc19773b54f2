//! A filter in front of the trigger table: most words of a message are in no trigger.

/// A set of word keys that may say "yes" for a key it does not hold (about one time in 20) but
/// never "no" for one it holds: a blocked Bloom filter of 8 bits per key, so 10,000 trigger
/// words take 16 KiB, which the L1 cache keeps, and a question costs one load.
#[derive(Debug)]
pub(super) struct WordFilter {
    blocks: Vec<u64>,
    /// How far a key is shifted to give its block: its highest bits.
    shift: u32,
}

impl WordFilter {
    pub(super) fn new(keys: impl ExactSizeIterator<Item = u64>) -> Self {
        let blocks = (keys.len() * 8 / 64).next_power_of_two();
        let mut filter = WordFilter {
            blocks: vec![0; blocks],
            shift: 64 - blocks.trailing_zeros(),
        };
        for key in keys {
            let (block, bits) = filter.place(key);
            filter.blocks[block] |= bits;
        }
        filter
    }

    /// A key's block, and its two bits there (from its lowest 12 bits).
    #[inline(always)]
    fn place(&self, key: u64) -> (usize, u64) {
        // A shift by 64 (one block) is no shift at all: mask it to block 0.
        let block = key.checked_shr(self.shift).unwrap_or(0) as usize;
        (block, 1 << (key & 63) | 1 << ((key >> 6) & 63))
    }

    #[inline(always)]
    pub(super) fn may_hold(&self, key: u64) -> bool {
        let (block, bits) = self.place(key);
        self.blocks[block] & bits == bits
    }
}
