//! The words of a text: runs of word characters of scripts written with spaces, read 64 bytes
//! at a time.

use ctxkit::text::{is_word_char, is_written_without_spaces};

/// Calls `f` with each run of word characters of spaced scripts in `text` ([`is_spaced`]), and
/// where it starts: a message's words, and the words that file a literal.
///
/// The text is read 64 bytes at a time into a mask of its word bytes ([`word_mask`]), and words
/// are read off the mask's changes: no branch per byte that the processor could mispredict.
#[inline(always)]
pub(super) fn for_each_word<'a>(text: &'a str, mut f: impl FnMut(usize, &'a str)) {
    // Where the word being read starts (`NO_WORD`: none yet).
    const NO_WORD: usize = usize::MAX;
    let (mut start, mut in_word) = (NO_WORD, false);
    let mut chunk = 0;
    while chunk < text.len() {
        let mask = word_mask(text, chunk);
        // A change where a byte differs from the one before it: a word's start, then its end.
        // Past the text's end the mask is 0, so a word that reaches it ends there.
        let mut changes = mask ^ (mask << 1 | u64::from(in_word));
        in_word = mask >> 63 == 1;
        while changes != 0 {
            if start == NO_WORD {
                start = chunk + changes.trailing_zeros() as usize;
                changes &= changes - 1;
                if changes == 0 {
                    break;
                }
            }
            let end = chunk + changes.trailing_zeros() as usize;
            changes &= changes - 1;
            f(start, &text[start..end]);
            start = NO_WORD;
        }
        chunk += 64;
    }
    // A word that runs to the end of a text of a multiple of 64 bytes.
    if start != NO_WORD {
        f(start, &text[start..]);
    }
}

/// Whether `c` is a word character of a script written with spaces: what words are made of,
/// and what needs a word boundary at a trigger's end.
pub(super) fn is_spaced(c: char) -> bool {
    is_word_char(c) && !is_written_without_spaces(c)
}

/// The mask of the word bytes of `text[at..at + 64]` (bit `i` for byte `at + i`), a few
/// operations per 8 ASCII bytes. Once per 64 bytes, kept out of line so that reading a word
/// stays small.
#[inline(never)]
fn word_mask(text: &str, at: usize) -> u64 {
    let bytes = text.as_bytes();
    let chunk = &bytes[at..bytes.len().min(at + 64)];
    let (mut word, mut other) = (0u64, 0u64);
    let mut eights = chunk.chunks_exact(8);
    for (i, eight) in eights.by_ref().enumerate() {
        let x = u64::from_le_bytes(eight.try_into().unwrap_or_default());
        let (w, o) = ascii_word_bytes(x);
        word |= w << (8 * i);
        other |= o << (8 * i);
    }
    let done = chunk.len() - eights.remainder().len();
    for (i, &b) in eights.remainder().iter().enumerate() {
        word |= u64::from(b.is_ascii_alphanumeric() || b == b'_') << (done + i);
        other |= u64::from(!b.is_ascii()) << (done + i);
    }
    while other != 0 {
        let i = other.trailing_zeros() as usize;
        other &= other - 1;
        // The character this byte belongs to starts at most three bytes before it.
        let mut lead = at + i;
        while bytes[lead] & 0xC0 == 0x80 {
            lead -= 1;
        }
        if text[lead..].chars().next().is_some_and(is_spaced) {
            word |= 1 << i;
        }
    }
    word
}

/// Which of the 8 bytes of `x` (little-endian) are ASCII word characters (letters, digits,
/// `_`), and which are not ASCII, as two 8-bit masks: a few operations for 8 bytes.
fn ascii_word_bytes(x: u64) -> (u64, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low = x & !HIGH;
    // The high bit of each byte of `low` + (0x80 - lo) is set when the byte is ≥ lo; no byte
    // carries into the next, as every byte of `low` is below 0x80.
    let in_range =
        |lo: u8, hi: u8| (low + ONES * u64::from(0x80 - lo)) & !(low + ONES * u64::from(0x7F - hi));
    let word = (in_range(b'a', b'z') | in_range(b'A', b'Z') | in_range(b'0', b'9') | in_range(b'_', b'_'))
        & !x
        & HIGH;
    (high_bits(word), high_bits(x & HIGH))
}

/// The high bit of each byte of `x` (the others clear), gathered into the low 8 bits.
fn high_bits(x: u64) -> u64 {
    ((x >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The 64-byte masks read the same words as a walk over the characters, across chunk
        /// edges and characters of every length.
        #[test]
        fn words_are_the_runs_of_word_characters(text in "([a-zA-Z0-9_ ,.'’-]|é|日|Ж|🙂|\\PC){0,200}") {
            let mut expected = Vec::new();
            let mut start = None;
            for (i, c) in text.char_indices() {
                match (is_word_char(c) && !is_written_without_spaces(c), start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        expected.push((s, &text[s..i]));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = start {
                expected.push((s, &text[s..]));
            }
            let mut words = Vec::new();
            for_each_word(&text, |at, word| words.push((at, word)));
            prop_assert_eq!(words, expected);
        }
    }
}
