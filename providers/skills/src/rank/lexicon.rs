//! A table from words to terms, laid out flat: a hash table whose buckets are ranges of one
//! sorted array, so it is saved and read back as it stands (no rehashing of tens of thousands
//! of words in a process started per prompt) and still answers in one hash and about one
//! string comparison.

use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;

use super::flat::{Reader, Strings, Writer};

#[derive(Debug)]
pub(super) struct Lexicon {
    /// Where each bucket's words start in `words`, and one past the last (a power of two plus
    /// one entries).
    buckets: Vec<u32>,
    /// The words, bucket by bucket.
    words: Strings,
    /// Each word's term.
    terms: Vec<u32>,
}

/// A fixed word's hash, saved with the table: a file written with another hash function (a
/// new `rustc-hash`) reads as foreign, not as a table whose words are never found.
fn check() -> u64 {
    FxBuildHasher.hash_one("ctxkit lexicon")
}

impl Lexicon {
    pub(super) fn new(words: impl IntoIterator<Item = (Box<str>, u32)>) -> Lexicon {
        let words: Vec<(Box<str>, u32)> = words.into_iter().collect();
        let count = words.len().next_power_of_two();
        let mut placed: Vec<(usize, Box<str>, u32)> = words
            .into_iter()
            .map(|(w, t)| (bucket(&w, count), w, t))
            .collect();
        placed.sort_unstable();
        let mut lexicon = Lexicon {
            buckets: Vec::with_capacity(count + 1),
            words: Strings::default(),
            terms: Vec::with_capacity(placed.len()),
        };
        for (b, word, term) in &placed {
            while lexicon.buckets.len() <= *b {
                lexicon.buckets.push(lexicon.terms.len() as u32);
            }
            lexicon.words.push(word);
            lexicon.terms.push(*term);
        }
        while lexicon.buckets.len() <= count {
            lexicon.buckets.push(lexicon.terms.len() as u32);
        }
        lexicon
    }

    #[inline]
    pub(super) fn get(&self, word: &str) -> Option<u32> {
        let b = bucket(word, self.buckets.len() - 1);
        (self.buckets[b] as usize..self.buckets[b + 1] as usize)
            .find(|&i| self.words.is(i, word))
            .map(|i| self.terms[i])
    }

    /// Every term the table holds.
    pub(super) fn terms(&self) -> &[u32] {
        &self.terms
    }

    pub(super) fn write(&self, out: &mut Writer) {
        out.u32s(&[(check() >> 32) as u32, check() as u32]);
        out.u32s(&self.buckets);
        self.words.write(out);
        out.u32s(&self.terms);
    }

    /// A table [`Lexicon::write`] wrote with this hash function, its buckets in order and in
    /// range.
    pub(super) fn read(input: &mut Reader) -> Option<Lexicon> {
        let check_words = input.u32s()?;
        let buckets = input.u32s()?;
        let words = Strings::read(input)?;
        let terms = input.u32s()?;
        let n = words.len();
        let sound = check_words == [(check() >> 32) as u32, check() as u32]
            && buckets.len() >= 2
            && (buckets.len() - 1).is_power_of_two()
            && buckets[0] == 0
            && buckets.windows(2).all(|w| w[0] <= w[1])
            && buckets.last() == Some(&(n as u32))
            && terms.len() == n;
        sound.then_some(Lexicon {
            buckets,
            words,
            terms,
        })
    }
}

/// The bucket of `word` among `count` (a power of two).
fn bucket(word: &str, count: usize) -> usize {
    FxBuildHasher.hash_one(word) as usize & (count - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_finds_its_term_before_and_after_a_round_trip() {
        let words: Vec<(Box<str>, u32)> = (0..1000u32).map(|i| (format!("w{i}").into(), i * 3)).collect();
        let lexicon = Lexicon::new(words.clone());
        let mut out = Writer::default();
        lexicon.write(&mut out);
        let bytes = out.finish();
        let back = Lexicon::read(&mut Reader::new(&bytes)).unwrap();
        for table in [&lexicon, &back] {
            for (w, t) in &words {
                assert_eq!(table.get(w), Some(*t), "{w}");
            }
            assert_eq!(table.get("w1000"), None);
            assert_eq!(table.get(""), None);
        }
        assert_eq!(Lexicon::new(Vec::new()).get("any"), None);
    }
}
