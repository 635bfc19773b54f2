//! BERT's uncased WordPiece tokenizer, read from the model's `vocab.txt`.
//!
//! Written here rather than taken from the `tokenizers` crate because a one-shot process pays
//! for loading it on every run: `tokenizers` parses `tokenizer.json` in 13-18 ms on the
//! 2-core machine the figures come from, this builds its table from `vocab.txt` in about
//! 1 ms. A test checks it gives the same ids as `tokenizers` on every text of the memory
//! evaluation set and of hostile inputs.

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

use crate::error::EmbedError;

/// A word longer than this (in characters) is one unknown token, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// Text to token ids: normalised (control characters dropped, lowercased, accents stripped,
/// CJK characters set apart), split at whitespace and punctuation, each word cut greedily
/// into the longest pieces the vocabulary has.
#[derive(Debug)]
pub(crate) struct WordPiece {
    vocab: Vocab,
    lowercase: bool,
    cls: u32,
    sep: u32,
    unk: u32,
}

impl WordPiece {
    /// The vocabulary is one token per line, its id the line number.
    pub(crate) fn new(vocab_txt: String, lowercase: bool) -> Result<Self, EmbedError> {
        let vocab = Vocab::new(vocab_txt);
        let special = |name: &str| {
            vocab
                .get(name)
                .ok_or_else(|| EmbedError::malformed("vocab.txt", format!("it has no {name} token")))
        };
        Ok(Self {
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            unk: special("[UNK]")?,
            vocab,
            lowercase,
        })
    }

    /// How many ids the vocabulary gives out, one per line, a repeated token included (the
    /// model's embedding table must have a row for each).
    pub(crate) fn len(&self) -> usize {
        self.vocab.spans.len()
    }

    /// `[CLS]`, the text's pieces (at most `max_tokens - 2`), `[SEP]`.
    pub(crate) fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let room = max_tokens.saturating_sub(1);
        // Every word gives at least one piece, so no more words than there is room for are
        // read: a long text costs no more than its first few hundred words.
        for word in self.words(text, room) {
            self.pieces(&word, &mut ids);
            if ids.len() >= room {
                ids.truncate(room);
                break;
            }
        }
        ids.push(self.sep);
        ids
    }

    /// The first `limit` normalised words and punctuation marks of `text`. A word longer than
    /// [`MAX_WORD_CHARS`] is kept cut one character past it (it is one unknown token anyway).
    fn words(&self, text: &str, limit: usize) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let end_word = |word: &mut String, words: &mut Vec<String>| {
            if !word.is_empty() {
                words.push(std::mem::take(word));
            }
        };
        for c in self.normalise(text) {
            if words.len() >= limit {
                break;
            }
            if c.is_whitespace() {
                end_word(&mut word, &mut words);
            } else if is_punctuation(c) || is_cjk(c) {
                end_word(&mut word, &mut words);
                words.push(c.to_string());
            } else if word.len() <= 4 * MAX_WORD_CHARS || word.chars().count() <= MAX_WORD_CHARS {
                // Counting only once the bytes could hold more characters than allowed.
                word.push(c);
            }
        }
        end_word(&mut word, &mut words);
        words.truncate(limit);
        words
    }

    fn normalise<'a>(&self, text: &'a str) -> Box<dyn Iterator<Item = char> + 'a> {
        let clean = text
            .chars()
            .filter(|&c| c != '\0' && c != '\u{fffd}' && !is_control(c));
        if self.lowercase {
            // Uncased BERT strips accents from the canonical decomposition, then lowercases.
            Box::new(
                clean
                    .nfd()
                    .filter(|&c| c.general_category() != GeneralCategory::NonspacingMark)
                    .flat_map(char::to_lowercase),
            )
        } else {
            Box::new(clean)
        }
    }

    /// Greedy longest-match-first: a word no sequence of pieces covers is one `[UNK]`.
    fn pieces(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(&piece) {
                    break Some(id);
                }
                match word[start..end].char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            let Some(id) = found else {
                ids.truncate(first);
                ids.push(self.unk);
                return;
            };
            ids.push(id);
            start = end;
        }
    }
}

/// Token to id, as a table of ids into the file's own text: building it allocates nothing per
/// token (a table of owned strings was a third of a new process's load). A token listed twice
/// has its last line's id, as in the `tokenizers` crate. Hashed with FxHash: fast, and the
/// keys are the model's own vocabulary.
#[derive(Debug)]
struct Vocab {
    text: String,
    /// Each id's token, as a byte range of `text`.
    spans: Vec<(u32, u32)>,
    ids: HashTable<u32>,
}

impl Vocab {
    fn new(text: String) -> Self {
        let mut spans = Vec::with_capacity(text.len() / 6);
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            let token = line.strip_suffix('\n').unwrap_or(line);
            let token = token.strip_suffix('\r').unwrap_or(token);
            // `text` is at most a few megabytes (`model.rs` caps it), so offsets fit in u32.
            spans.push((start as u32, (start + token.len()) as u32));
            start += line.len();
        }
        let token_of = |id: u32| token(&text, &spans, id);
        let mut ids = HashTable::with_capacity(spans.len());
        for id in 0..spans.len() as u32 {
            let token = token_of(id);
            let same = |other: &u32| token_of(*other) == token;
            let rehash = |other: &u32| FxBuildHasher.hash_one(token_of(*other));
            match ids.entry(FxBuildHasher.hash_one(token), same, rehash) {
                Entry::Occupied(mut seen) => *seen.get_mut() = id,
                Entry::Vacant(slot) => {
                    slot.insert(id);
                }
            }
        }
        Self { text, spans, ids }
    }

    fn get(&self, wanted: &str) -> Option<u32> {
        self.ids
            .find(FxBuildHasher.hash_one(wanted), |&id| {
                token(&self.text, &self.spans, id) == wanted
            })
            .copied()
    }
}

/// The token of `id`: its byte range of the vocabulary's text.
fn token<'a>(text: &'a str, spans: &[(u32, u32)], id: u32) -> &'a str {
    let (start, end) = spans[id as usize];
    &text[start as usize..end as usize]
}

/// Control and format characters (general category C*), but not the whitespace BERT keeps.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.general_category_group() == GeneralCategoryGroup::Other
}

/// ASCII symbols count as punctuation in BERT (`$`, `+`, `^`, …), as does Unicode's P*.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.general_category_group() == GeneralCategoryGroup::Punctuation
}

/// The CJK Unified Ideographs blocks, which BERT tokenizes one character at a time.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\nhello\n!\ncafe\n,\n中\n";
        WordPiece::new(vocab.to_owned(), true).unwrap()
    }

    #[test]
    fn words_are_cut_into_the_longest_pieces() {
        assert_eq!(tiny().encode("unaffable", 64), [2, 4, 5, 6, 3]);
    }

    #[test]
    fn case_accents_punctuation_and_cjk_are_normalised() {
        assert_eq!(tiny().encode("HELLO, Café!中", 64), [2, 7, 10, 9, 8, 11, 3]);
    }

    #[test]
    fn a_word_without_a_cover_is_one_unknown_token() {
        assert_eq!(tiny().encode("unaffx hello", 64), [2, 1, 7, 3]);
        assert_eq!(tiny().encode(&"a".repeat(101), 64), [2, 1, 3]);
    }

    #[test]
    fn the_sequence_is_cut_to_the_limit() {
        let ids = tiny().encode(&"hello ".repeat(100), 8);
        assert_eq!(ids.len(), 8);
        assert_eq!((ids[0], ids[7]), (2, 3));
    }

    #[test]
    fn a_word_listed_twice_has_its_last_id_and_every_line_counts() {
        let vocab = WordPiece::new("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\r\nhello\n".to_owned(), true).unwrap();
        assert_eq!(vocab.encode("hello", 8), [2, 5, 3]);
        assert_eq!(vocab.len(), 6);
    }

    #[test]
    fn a_vocabulary_without_special_tokens_is_refused() {
        let err = WordPiece::new("hello\n".to_owned(), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("[CLS]"), "{err}");
    }
}
