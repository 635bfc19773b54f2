//! The words a skill offers, ranked against a message: its name, description, `when_to_use`
//! and tags (from the frontmatter or `metadata`), weighted by how rare each word is across the
//! library (BM25, the name counting twice), with the project's inflection rule so "webhooks"
//! finds "webhook". Its `when_not_to_use` words lower it for a message that holds them.
//!
//! Everything a message's words are looked up in is built once per index (about 2 ms for 650
//! skills): a table from each word of the library, and each base the inflection rule gives
//! it, to a term; each term's postings with their BM25 weight already computed. A message is
//! then a split, one hash lookup per word and a sum over postings: no stemming, no allocation
//! per word.

use rustc_hash::FxHashMap;

use crate::inflect::each_base;
use crate::skill::Skill;
use ctxkit::text::is_word_char;

/// BM25's term-frequency saturation and length normalization.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A word of the name counts as this many words of the description.
const NAME_WEIGHT: f32 = 2.0;

/// Words that say nothing about what a skill is for.
const STOP_WORDS: &[&str] = &[
    "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "both",
    "but", "by", "can", "could", "did", "do", "does", "each", "few", "for", "from", "get", "had", "has",
    "have", "hello", "here", "hey", "hi", "how", "if", "in", "into", "is", "it", "its", "just", "let",
    "lets", "me", "more", "most", "my", "no", "not", "of", "ok", "okay", "on", "only", "or", "other", "our",
    "out", "own", "please", "same", "should", "so", "some", "such", "sure", "than", "thank", "thanks",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up",
    "us", "use", "used", "using", "very", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "yeah", "yes", "you", "your",
];

/// The term a stop word stands for in the ranker's table: one lookup tells a message's word
/// is weighed, or is a stop word, or needs its bases tried.
const STOP: u32 = u32::MAX;

/// Calls `each` with the words of `text` the ranking may weigh: lowercased, split at
/// non-word characters, at camelCase (`getWeather`) and between letters and digits (`ride2`),
/// without single characters and numbers. Stop words are left to the caller (see [`STOP`]).
fn each_word(text: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    if text.is_ascii() {
        return each_ascii_word(text, scratch, each);
    }
    for raw in text.split(|c: char| !is_word_char(c) || c == '_') {
        let mut start = 0;
        let mut previous: Option<char> = None;
        for (at, c) in raw.char_indices() {
            let cut = previous.is_some_and(|p| {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_alphabetic() && c.is_ascii_digit())
                    || (p.is_ascii_digit() && c.is_alphabetic())
            });
            if cut {
                word(&raw[start..at], scratch, &mut each);
                start = at;
            }
            previous = Some(c);
        }
        word(&raw[start..], scratch, &mut each);
    }
}

/// [`each_word`] for ASCII text (most messages and descriptions), a byte at a time: the same
/// words at a fraction of the cost, as a 2 KB message is read for every selection.
fn each_ascii_word(text: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    /// A byte's class: 0 splits, then lowercase, uppercase, digit.
    const SPLIT: u8 = 0;
    const LOWER: u8 = 1;
    const UPPER: u8 = 2;
    const DIGIT: u8 = 3;
    let class = |b: u8| match b {
        b'a'..=b'z' => LOWER,
        b'A'..=b'Z' => UPPER,
        b'0'..=b'9' => DIGIT,
        _ => SPLIT,
    };
    // A piece without capitals is passed as it stands (the ranker's messages come lowercased).
    let mut emit = |piece: &str, letters: usize, capitals: bool| {
        if letters < 2 {
            return;
        }
        if capitals {
            scratch.clear();
            scratch.push_str(piece);
            scratch.make_ascii_lowercase();
            each(scratch);
        } else {
            each(piece);
        }
    };
    let (mut start, mut letters, mut capitals, mut previous) = (0, 0, false, SPLIT);
    for (at, &b) in text.as_bytes().iter().enumerate() {
        let c = class(b);
        let cut = matches!(
            (previous, c),
            (_, SPLIT) | (LOWER, UPPER) | (LOWER | UPPER, DIGIT) | (DIGIT, LOWER | UPPER)
        );
        if cut && previous != SPLIT {
            emit(&text[start..at], letters, capitals);
            (letters, capitals) = (0, false);
        }
        if cut || previous == SPLIT {
            start = if c == SPLIT { at + 1 } else { at };
        }
        letters += usize::from(c == LOWER || c == UPPER);
        capitals |= c == UPPER;
        previous = c;
    }
    if previous != SPLIT {
        emit(&text[start..], letters, capitals);
    }
}

fn word(piece: &str, scratch: &mut String, each: &mut impl FnMut(&str)) {
    scratch.clear();
    scratch.extend(piece.chars().flat_map(char::to_lowercase));
    let w = scratch.as_str();
    let letters = w.chars().filter(|c| c.is_alphabetic()).count();
    if letters >= 2 {
        each(w);
    }
}

/// A string field of the frontmatter or of `metadata` (a list is its items joined).
fn field(skill: &Skill, key: &str) -> String {
    let value = skill.extra.get(key).or_else(|| skill.metadata.get(key));
    match value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

/// One skill's share of a term.
#[derive(Debug, Clone, Copy)]
struct Posting {
    skill: u32,
    /// The term's BM25 weight in the skill, in units of a rare word (see [`Ranker::new`]).
    weight: f32,
    in_name: bool,
}

/// What the words of one message gave one skill.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SkillWords {
    /// Its matched terms' weights, less what `when_not_to_use` took.
    pub(crate) score: f32,
    /// How many of the message's terms it matched.
    pub(crate) matched: u16,
    /// The rarest term it matched in its name (0 when none).
    pub(crate) rare_name: f32,
}

/// What the words of one message gave every skill, by position in the index.
#[derive(Debug, Default)]
pub(crate) struct WordScores {
    /// The message's distinct terms.
    terms: Vec<u32>,
    /// Per skill.
    pub(crate) skills: Vec<SkillWords>,
}

/// The library's words, their terms and postings (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Ranker {
    /// A word, or a base the inflection rule gives a word, to its term.
    terms: FxHashMap<Box<str>, u32>,
    /// Each term as the library writes it (its shortest form), for explanations.
    text: Vec<Box<str>>,
    postings: Vec<Vec<Posting>>,
    /// `when_not_to_use` terms: the skills that name them, with the weight they take away.
    against: FxHashMap<u32, Vec<(u32, f32)>>,
    /// Each term's rarity: 1.0 for a word of one skill, less the more skills hold it.
    rarity: Vec<f32>,
}

impl Ranker {
    /// Index the words of `skills`. Skills that the model may not invoke are left out.
    pub(crate) fn new(skills: &[Skill]) -> Ranker {
        /// Where a word of a skill stands.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        enum Field {
            Name,
            Rest,
            Against,
        }
        let mut scratch = String::new();
        let mut ranker = Ranker::default();
        ranker.terms.extend(STOP_WORDS.iter().map(|&w| (w.into(), STOP)));
        let is_stop_word = |w: &str| ranker.terms.contains_key(w);
        // Every word once (`surface`), and each occurrence as (word, skill, field).
        let mut surface: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let mut occurrences: Vec<(u32, u32, Field)> = Vec::new();
        let mut lengths = vec![0f32; skills.len()];
        for (i, skill) in skills.iter().enumerate() {
            if skill.disable_model_invocation {
                continue;
            }
            let tags = skill.tags.join(", ");
            let fields = [
                (skill.name.as_str(), Field::Name),
                (skill.description.as_str(), Field::Rest),
                (&field(skill, "when_to_use"), Field::Rest),
                (&tags, Field::Rest),
                (&field(skill, "tags"), Field::Rest),
                (&field(skill, "keywords"), Field::Rest),
                (&field(skill, "when_not_to_use"), Field::Against),
            ];
            for (text, kind) in fields {
                each_word(text, &mut scratch, |w| {
                    if is_stop_word(w) {
                        return;
                    }
                    let id = match surface.get(w) {
                        Some(&id) => id,
                        None => {
                            let id = surface.len() as u32;
                            surface.insert(w.into(), id);
                            id
                        }
                    };
                    occurrences.push((id, i as u32, kind));
                    if kind != Field::Against {
                        lengths[i] += 1.0;
                    }
                });
            }
        }

        // Terms: the library's distinct words, shortest first, so a word whose base is
        // already a term joins it ("webhooks" joins "webhook").
        let mut distinct: Vec<(&str, u32)> = surface.iter().map(|(w, &id)| (&**w, id)).collect();
        distinct.sort_unstable_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0)));
        let mut term_of_surface = vec![0u32; surface.len()];
        for &(w, id) in &distinct {
            let mut joined = None;
            each_base(w, &mut scratch, |base| {
                if joined.is_none() {
                    joined = ranker.terms.get(base).copied().filter(|&t| t != STOP);
                }
            });
            let term = joined.unwrap_or_else(|| {
                ranker.text.push(w.into());
                (ranker.text.len() - 1) as u32
            });
            ranker.terms.insert(w.into(), term);
            term_of_surface[id as usize] = term;
        }
        // A message's word may be the base of a word the library holds only inflected
        // ("webhook" for "webhooks"): the base finds it too.
        let mut aliases: Vec<(String, u32)> = Vec::new();
        for &(w, id) in &distinct {
            each_base(w, &mut scratch, |base| {
                if !ranker.terms.contains_key(base) {
                    aliases.push((base.to_string(), term_of_surface[id as usize]));
                }
            });
        }
        for (base, term) in aliases {
            ranker.terms.entry(base.into()).or_insert(term);
        }

        // Each term's weighted frequency per skill (sorted by term, then skill), then BM25
        // with rarity.
        let mut weighted: Vec<(u32, u32, Field)> = occurrences
            .into_iter()
            .map(|(id, skill, kind)| (term_of_surface[id as usize], skill, kind))
            .collect();
        weighted.sort_unstable();
        let described = lengths.iter().filter(|&&l| l > 0.0).count().max(1) as f32;
        let average = (lengths.iter().sum::<f32>() / described).max(1.0);
        let idf = |n: f32| (1.0 + (described - n + 0.5) / (n + 0.5)).ln();
        let one = idf(1.0);
        let terms = ranker.text.len();
        let mut postings: Vec<Vec<(u32, f32, bool)>> = vec![Vec::new(); terms];
        for &(term, skill, kind) in &weighted {
            let list = &mut postings[term as usize];
            if kind == Field::Against {
                let against = ranker.against.entry(term).or_default();
                if against.last().is_none_or(|&(s, _)| s != skill) {
                    against.push((skill, 0.0));
                }
                continue;
            }
            if list.last().is_none_or(|&(s, _, _)| s != skill) {
                list.push((skill, 0.0, false));
            }
            let last = list.last_mut().expect("just pushed");
            last.1 += if kind == Field::Name { NAME_WEIGHT } else { 1.0 };
            last.2 |= kind == Field::Name;
        }
        ranker.rarity = postings.iter().map(|p| idf(p.len() as f32) / one).collect();
        ranker.postings = postings
            .into_iter()
            .enumerate()
            .map(|(term, list)| {
                list.into_iter()
                    .map(|(skill, tf, in_name)| {
                        let norm = K1 * (1.0 - B + B * lengths[skill as usize] / average);
                        Posting {
                            skill,
                            weight: ranker.rarity[term] * tf * (K1 + 1.0) / (tf + norm),
                            in_name,
                        }
                    })
                    .collect()
            })
            .collect();
        // A `when_not_to_use` word takes away what the same word would give a skill of one
        // occurrence, scaled by its rarity.
        for (term, list) in &mut ranker.against {
            for (_, weight) in list.iter_mut() {
                *weight = ranker.rarity.get(*term as usize).copied().unwrap_or(1.0);
            }
        }
        ranker
    }

    /// The term a message's word (lowercased) stands for, itself or a base of it.
    fn term_of(&self, word: &str, scratch: &mut String) -> Option<u32> {
        if let Some(&t) = self.terms.get(word) {
            return (t != STOP).then_some(t);
        }
        let mut found = None;
        each_base(word, scratch, |base| {
            if found.is_none() {
                found = self.terms.get(base).copied().filter(|&t| t != STOP);
            }
        });
        found
    }

    /// The distinct terms of `message`, in order.
    fn terms_of(&self, message: &str) -> Vec<u32> {
        let mut scratch = String::new();
        let mut lookup = String::new();
        let mut terms: Vec<u32> = Vec::new();
        let mut seen = vec![0u64; self.text.len().div_ceil(64)];
        each_word(message, &mut scratch, |w| {
            if let Some(t) = self.term_of(w, &mut lookup) {
                let (word, bit) = (t as usize / 64, 1u64 << (t % 64));
                if seen[word] & bit == 0 {
                    seen[word] |= bit;
                    terms.push(t);
                }
            }
        });
        terms
    }

    /// What the words of `message` give the skills of the index (`skills` of them).
    pub(crate) fn score(&self, message: &str, skills: usize) -> WordScores {
        let terms = self.terms_of(message);
        let mut acc = vec![SkillWords::default(); skills];
        for &t in &terms {
            let rarity = self.rarity[t as usize];
            for p in &self.postings[t as usize] {
                let a = &mut acc[p.skill as usize];
                a.score += p.weight;
                a.matched = a.matched.saturating_add(1);
                if p.in_name {
                    a.rare_name = a.rare_name.max(rarity);
                }
            }
            for &(skill, weight) in self.against.get(&t).into_iter().flatten() {
                acc[skill as usize].score -= weight;
            }
        }
        WordScores { terms, skills: acc }
    }

    /// The words behind skill `i`'s score: the message's terms in its name, those only in
    /// the rest, and its `when_not_to_use` words the message holds (as the library writes
    /// them).
    pub(crate) fn words_of(&self, scores: &WordScores, i: usize) -> (Vec<String>, Vec<String>, Vec<String>) {
        let (mut name, mut rest, mut against) = (Vec::new(), Vec::new(), Vec::new());
        for &t in &scores.terms {
            let text = || self.text[t as usize].to_string();
            let postings = &self.postings[t as usize];
            if let Ok(at) = postings.binary_search_by_key(&(i as u32), |p| p.skill) {
                if postings[at].in_name {
                    name.push(text());
                } else {
                    rest.push(text());
                }
            }
            if self
                .against
                .get(&t)
                .is_some_and(|l| l.iter().any(|(s, _)| *s as usize == i))
            {
                against.push(text());
            }
        }
        (name, rest, against)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::{Skill, Source};

    fn skill(name: &str, description: &str, extra: &str) -> Skill {
        let text = format!("---\nname: {name}\ndescription: {description}\n{extra}---\nBody.");
        let (parsed, diags) = Skill::parse(format!("skills/{name}/SKILL.md").as_ref(), &text, Some(name));
        parsed
            .unwrap_or_else(|| panic!("{name} did not parse: {diags:?}"))
            .with_root(Source::Project, 250)
    }

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_word(text, &mut String::new(), |w| {
            if !STOP_WORDS.contains(&w) {
                out.push(w.to_string())
            }
        });
        out
    }

    #[test]
    fn words_split_at_case_digits_and_separators_without_stop_words() {
        assert_eq!(words("getWeatherForecast"), ["weather", "forecast"]);
        assert_eq!(
            words("uber.ride2 add_postgres_server"),
            ["uber", "ride", "add", "postgres", "server"]
        );
        assert_eq!(words("What is 2+2?"), Vec::<String>::new());
        assert_eq!(words("Tìm thời tiết"), ["tìm", "thời", "tiết"]);
    }

    /// The words of `text` read the general way: a non-ASCII word (of one letter, so not a
    /// word itself) keeps the text off the ASCII path.
    fn general_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_word(&format!("{text} é"), &mut String::new(), |w| {
            out.push(w.to_string())
        });
        out
    }

    #[test]
    fn ascii_text_gives_the_words_the_general_reading_gives() {
        for text in [
            "getWeatherForecast uber.ride2 add_postgres_server",
            "  HTTPServer x2y 3d-model a1b2c3 __init__ I/O e.g. it's ABC",
            "ready,set;go!  trailing",
            "",
            "9 99 a",
        ] {
            let mut fast = Vec::new();
            each_word(text, &mut String::new(), |w| fast.push(w.to_string()));
            assert_eq!(fast, general_words(text), "{text:?}");
        }
    }

    #[test]
    fn a_message_finds_inflected_forms_both_ways_and_rare_words_weigh_more() {
        let skills = vec![
            skill(
                "stripe-webhooks",
                "Verify Stripe webhooks and replay failed events",
                "",
            ),
            skill(
                "deploy",
                "Deploy the app to production with a release checklist",
                "",
            ),
            skill(
                "release-notes",
                "Write release notes for the app from the changelog",
                "",
            ),
        ];
        let r = Ranker::new(&skills);
        let s = r.score("the webhook is failing", 3);
        assert_eq!(
            r.words_of(&s, 0),
            (vec!["webhooks".into()], vec!["failed".into()], vec![])
        );
        let s = r.score("deploying the app", 3);
        assert_eq!(r.words_of(&s, 1).0, ["deploy"]);
        // "app" is in two skills, "changelog" in one: the rarer word weighs more.
        let s = r.score("app changelog", 3);
        assert!(s.skills[2].score > s.skills[1].score);
    }

    #[test]
    fn when_not_to_use_lowers_a_skill() {
        let skills = vec![
            skill(
                "pdf",
                "Read and fill PDF forms",
                "when_not_to_use: scanned images of paper\n",
            ),
            skill("ocr", "Read text from scanned images", ""),
        ];
        let r = Ranker::new(&skills);
        let plain = r.score("read the PDF form", 2);
        let scanned = r.score("read the scanned PDF form", 2);
        assert!(scanned.skills[0].score < plain.skills[0].score, "{scanned:?}");
        assert_eq!(r.words_of(&scanned, 0).2, ["scanned"]);
    }
}
