//! Text to terms: a Unicode word tokenizer with English stop words, shared by the index, the
//! TF-IDF vectors and keyword overlap so that all three see the same terms.
//!
//! - A word is a run of alphanumeric characters or `_`, lowercased with Unicode rules; words of
//!   one character are dropped, and so are stop words.
//! - `'s` after a word is dropped and other apostrophes are removed (`don't` → `dont`).
//! - `+` and `#` right after a short word stay on it (`C++`, `C#`, `F#`).
//! - Scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) give
//!   overlapping character bigrams (`日本語` → `日本`, `本語`); a single such character is a term.
//! - Words of letters only are stemmed (Snowball English, Porter 2): `webhooks` and `webhook`,
//!   `storing` and `stored` are one term each. People ask in other inflections than they wrote
//!   the memory in, and without stemming a plural alone made a right memory invisible. Words
//!   with digits or symbols (`v2`, `c++`, `snake_case`) are kept as they are.

use ctxkit::text::{is_word_char, is_written_without_spaces};
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

use crate::types::MemoryEntry;

/// The longest a keyword may be, in characters.
const MAX_KEYWORD_CHARS: usize = 64;
/// The most keywords one memory keeps.
pub(crate) const MAX_KEYWORDS: usize = 16;
/// How many keywords are derived from the content when none are given.
const DERIVED_KEYWORDS: usize = 8;

/// Common English words that carry no topic.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "arent",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "cant",
    "could",
    "couldnt",
    "did",
    "didnt",
    "do",
    "does",
    "doesnt",
    "doing",
    "dont",
    "down",
    "during",
    "each",
    "else",
    "etc",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "got",
    "had",
    "hadnt",
    "has",
    "hasnt",
    "have",
    "havent",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "id",
    "if",
    "ill",
    "im",
    "in",
    "into",
    "is",
    "isnt",
    "it",
    "its",
    "itself",
    "ive",
    "just",
    "let",
    "lets",
    "like",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "mustnt",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "shall",
    "shant",
    "she",
    "should",
    "shouldnt",
    "so",
    "some",
    "such",
    "than",
    "that",
    "thats",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "theres",
    "these",
    "they",
    "theyre",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "was",
    "wasnt",
    "we",
    "were",
    "werent",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "wont",
    "would",
    "wouldnt",
    "yes",
    "yet",
    "you",
    "youd",
    "youll",
    "your",
    "youre",
    "yours",
    "yourself",
    "yourselves",
    "youve",
];

/// True for a stop word (already lowercased).
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// A character of a word in a script written with spaces (a run of the others is split into
/// pairs instead).
fn is_spaced_word_char(c: char) -> bool {
    is_word_char(c) && !is_written_without_spaces(c)
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// The terms of `text`, in order, repeats kept, stop words removed; a run of Han or kana
/// becomes its overlapping pairs ("日本語" → "日本", "本語").
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text, true)
}

/// The words of `text` as [`terms`] finds them, stemmed or as written (lowercased).
fn words(text: &str, stem: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if is_written_without_spaces(c) {
            let end = rest
                .find(|c: char| !is_written_without_spaces(c))
                .unwrap_or(rest.len());
            let run: Vec<char> = rest[..end].chars().collect();
            push_unspaced(&run, &mut out);
            rest = &rest[end..];
        } else if is_spaced_word_char(c) {
            let mut word = String::new();
            let mut chars = rest.char_indices().peekable();
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                if is_spaced_word_char(c) {
                    push_lower(&mut word, c);
                    continue;
                }
                let next = chars.peek().map(|&(_, n)| n);
                if is_apostrophe(c) && next.is_some_and(char::is_alphabetic) {
                    // `'s` at the end of a word is a possessive: drop it; otherwise join.
                    let (j, n) = chars.next().unwrap_or((i, c));
                    let after = chars.peek().map(|&(_, a)| a);
                    if (n == 's' || n == 'S') && !after.is_some_and(is_spaced_word_char) {
                        end = j + n.len_utf8();
                        break;
                    }
                    push_lower(&mut word, n);
                    continue;
                }
                end = i;
                break;
            }
            rest = &rest[end..];
            // `c++`, `c#`, `f#`: keep the symbols on a short word when nothing word-like follows.
            if word.chars().count() <= 2 {
                let symbols = rest.len() - rest.trim_start_matches(['+', '#']).len();
                let symbols = symbols.min(2);
                if symbols > 0 && !rest[symbols..].chars().next().is_some_and(is_spaced_word_char) {
                    word.push_str(&rest[..symbols]);
                    rest = &rest[symbols..];
                }
            }
            push_word(word, stem, &mut out);
        } else {
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn push_lower(word: &mut String, c: char) {
    if c.is_ascii() {
        word.push(c.to_ascii_lowercase());
    } else {
        word.extend(c.to_lowercase());
    }
}

fn push_word(word: String, stem: bool, out: &mut Vec<String>) {
    let trimmed = word.trim_matches('_');
    if trimmed.chars().nth(1).is_none() || is_stop_word(trimmed) {
        return;
    }
    if stem && trimmed.chars().all(char::is_alphabetic) {
        out.push(stemmed(trimmed));
        return;
    }
    out.push(if trimmed.len() == word.len() {
        word
    } else {
        trimmed.to_string()
    });
}

/// Words stemmed at most before the memo of [`stemmed`] starts afresh.
const STEM_MEMO: usize = 16_384;
/// The longest word the memo keeps, in bytes: longer ones are rare and would make its size
/// depend on the text.
const STEM_MEMO_WORD: usize = 32;

/// The stem of a lowercase word of letters; the word itself when its stem would be one
/// character ("as" is a stop word, but "is"-like leftovers say nothing).
///
/// Stemming costs about a microsecond a word, and the same words come back all the time: a
/// memory's content is tokenized when it is checked, indexed and compared, and a project's
/// vocabulary is small. So stems are remembered, up to [`STEM_MEMO`] words of at most
/// [`STEM_MEMO_WORD`] bytes.
fn stemmed(word: &str) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    static MEMO: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let memo = MEMO.get_or_init(Mutex::default);
    if let Some(stem) = memo.lock().unwrap_or_else(|p| p.into_inner()).get(word) {
        return stem.clone();
    }
    let stem = STEMMER
        .get_or_init(|| Stemmer::create(Algorithm::English))
        .stem(word);
    let stem = if stem.chars().nth(1).is_some() {
        stem.into_owned()
    } else {
        word.to_string()
    };
    if word.len() <= STEM_MEMO_WORD {
        let mut memo = memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= STEM_MEMO {
            memo.clear();
        }
        memo.insert(word.to_string(), stem.clone());
    }
    stem
}

fn push_unspaced(run: &[char], out: &mut Vec<String>) {
    if run.len() == 1 {
        out.push(run[0].to_lowercase().collect());
        return;
    }
    for pair in run.windows(2) {
        out.push(pair.iter().flat_map(|c| c.to_lowercase()).collect());
    }
}

/// The distinct terms of `text`.
pub(crate) fn term_set(text: &str) -> BTreeSet<String> {
    terms(text).into_iter().collect()
}

/// Keywords as stored: trimmed, lowercased, inner whitespace collapsed, empty ones and repeats
/// dropped, at most [`MAX_KEYWORDS`], each at most 64 characters.
pub(crate) fn normalize_keywords<S: AsRef<str>>(keywords: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in keywords {
        let k = k
            .as_ref()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let k: String = k.chars().take(MAX_KEYWORD_CHARS).collect();
        if !k.is_empty() && !out.contains(&k) {
            out.push(k);
        }
        if out.len() == MAX_KEYWORDS {
            break;
        }
    }
    out
}

/// Keywords for a memory given without any: its first words of distinct terms, as written
/// (lowercased), so they read as words; they are stemmed when compared, like everything else.
pub(crate) fn derive_keywords(content: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for w in words(content, false) {
        let stem = terms(&w).pop().unwrap_or_else(|| w.clone());
        if !seen.contains(&stem) {
            seen.push(stem);
            out.push(w);
            if out.len() == DERIVED_KEYWORDS {
                break;
            }
        }
    }
    out
}

/// The term set of a keyword list, for keyword overlap (`"package manager"` gives two terms).
pub(crate) fn keyword_terms<S: AsRef<str>>(keywords: &[S]) -> BTreeSet<String> {
    keywords.iter().flat_map(|k| terms(k.as_ref())).collect()
}

/// What the index sees of a memory: its content's [`terms`] in order and its distinct
/// [`keyword_terms`], each list kept as stored, joined by spaces (no term holds whitespace).
/// Backends store both beside the row when they write it, so a search reads its candidates'
/// terms instead of tokenizing each again: stemming costs about a microsecond a word, and a
/// one-shot process starts with an empty memo (at 100,000 memories, tokenizing a search's 200
/// candidates took 1.1–2.4 ms of a hook's time). Kept joined, a candidate's terms are one
/// allocation, not one per term.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MemoryTerms {
    content: String,
    keywords: String,
}

impl MemoryTerms {
    /// The terms to store for `new`, which replaces `old`: `None` when its text and keywords
    /// are the same, so the stored ones stand (a decay changes thousands of rows' importance
    /// and nothing else).
    pub(crate) fn changed(old: &MemoryEntry, new: &MemoryEntry) -> Option<Self> {
        (old.content != new.content || old.keywords != new.keywords)
            .then(|| MemoryTerms::of(&new.content, &new.keywords))
    }

    /// Tokenize a memory's content and keywords.
    pub(crate) fn of(content: &str, keywords: &[String]) -> Self {
        let keywords: Vec<String> = keyword_terms(keywords).into_iter().collect();
        MemoryTerms {
            content: terms(content).join(" "),
            keywords: keywords.join(" "),
        }
    }

    /// As a backend stores them: the content's, then the keywords'.
    pub(crate) fn stored(&self) -> (&str, &str) {
        (&self.content, &self.keywords)
    }

    /// The terms [`stored`](Self::stored) wrote; `None` for a row written before they were
    /// stored (its terms are then tokenized from the text, as [`of`](Self::of) does).
    pub(crate) fn read(content: Option<String>, keywords: Option<String>) -> Option<Self> {
        Some(MemoryTerms {
            content: content?,
            keywords: keywords?,
        })
    }

    /// The content's terms, in order, repeats kept.
    pub(crate) fn content(&self) -> impl Iterator<Item = &str> + Clone {
        self.content.split_whitespace()
    }

    /// The keywords' distinct terms, sorted.
    pub(crate) fn keywords(&self) -> impl Iterator<Item = &str> + Clone {
        self.keywords.split_whitespace()
    }
}

/// Cut `text` to at most `max` characters, marking the cut with `…`.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_lowercase_drop_stop_words_and_pair_han() {
        assert_eq!(
            terms("Don't use NPM; we use pnpm in C++ builds"),
            ["use", "npm", "use", "pnpm", "c++", "build"]
        );
        assert_eq!(terms("日本語"), ["日本", "本語"]);
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "STOP_WORDS must be sorted and unique"
        );
        assert!(is_stop_word("the") && !is_stop_word("pnpm"));
    }

    #[test]
    fn words_are_lowercased_and_filtered() {
        assert_eq!(
            terms("The API routes live in src/routes/"),
            ["api", "rout", "live", "src", "rout"]
        );
        assert_eq!(terms("a b c"), Vec::<String>::new());
        assert_eq!(terms("snake_case and __init__"), ["snake_case", "init"]);
        assert_eq!(terms("ÉCOLE Straße"), ["école", "straße"]);
        assert_eq!(terms("Node 18, v2"), ["node", "18", "v2"]);
    }

    #[test]
    fn apostrophes_and_symbols() {
        assert_eq!(terms("the user's tests don't pass"), ["user", "test", "pass"]);
        assert_eq!(terms("it’s Rust’s borrow checker"), ["rust", "borrow", "checker"]);
        assert_eq!(terms("C++ and C# but not a+b"), ["c++", "c#"]);
        assert_eq!(terms("g++ x++y"), ["g++"]);
    }

    #[test]
    fn unspaced_scripts_give_bigrams() {
        assert_eq!(terms("日本語の文法"), ["日本", "本語", "語の", "の文", "文法"]);
        assert_eq!(terms("中 文"), ["中", "文"]);
        assert_eq!(terms("使用pnpm安装"), ["使用", "pnpm", "安装"]);
    }

    #[test]
    fn keywords_normalise_and_derive() {
        assert_eq!(
            normalize_keywords(&["  Package   Manager ", "pnpm", "PNPM", ""]),
            ["package manager", "pnpm"]
        );
        let many: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        assert_eq!(normalize_keywords(&many).len(), MAX_KEYWORDS);
        assert_eq!(
            derive_keywords("Use pnpm, not npm, with pnpm workspaces"),
            ["use", "pnpm", "npm", "workspaces"]
        );
        assert_eq!(keyword_terms(&["package manager", "pnpm"]).len(), 3);
    }

    #[test]
    fn stored_terms_read_back_as_tokenized_whatever_the_spaces() {
        // The stored form joins terms with spaces and splits on any whitespace: no term may
        // hold one, or a stored memory would rank differently from a tokenized one.
        let text = "tabs\tand\u{a0}nbsp\u{3000}日本\u{3000}語 line\u{2028}break thin\u{2009}space";
        let keywords = ["ideo\u{3000}graphic".to_string(), "x\u{a0}y".to_string()];
        let tokenized = MemoryTerms::of(text, &keywords);
        assert!(tokenized
            .content()
            .chain(tokenized.keywords())
            .all(|t| !t.contains(char::is_whitespace)));
        assert_eq!(tokenized.content().collect::<Vec<_>>(), terms(text));
        let (content, keyword_list) = tokenized.stored();
        let read = MemoryTerms::read(Some(content.into()), Some(keyword_list.into()));
        assert_eq!(read, Some(tokenized));
    }

    #[test]
    fn inflections_share_a_stem() {
        assert_eq!(terms("webhooks"), terms("webhook"));
        assert_eq!(terms("storing prices"), terms("stored price"));
        assert_eq!(terms("v2 c++ snake_case"), ["v2", "c++", "snake_case"]);
    }

    #[test]
    fn a_remembered_stem_is_the_stem() {
        let words = ["webhooks", "storing", "prices", "deployments", "ies"];
        let first: Vec<String> = words.iter().map(|w| stemmed(w)).collect();
        assert_eq!(first, ["webhook", "store", "price", "deploy", "ie"]);
        let again: Vec<String> = words.iter().map(|w| stemmed(w)).collect();
        assert_eq!(again, first);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate_chars("abcdef", 10), "abcdef");
        assert_eq!(truncate_chars("abcdef", 4), "abc…");
        assert_eq!(truncate_chars("日本語日本語", 3), "日本…");
    }
}
