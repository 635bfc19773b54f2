//! The words a skill offers, ranked against a message: its name, description, `when_to_use`
//! and tags (from the frontmatter or `metadata`), and its body, weighted by how rare each word
//! is across the library (BM25F: a word of the name counts twice, one of the body a third),
//! with the project's inflection rule so "webhooks" finds "webhook". Its `when_not_to_use`
//! words lower it for a message that holds them.
//!
//! The body is the weakest evidence and the most telling: a word the body repeats is what the
//! skill is about, one the description mentions in passing is not, and a long body dilutes
//! every word of its skill (BM25's length normalization). On the labelled corpus set it
//! lifted recall in the first three from 0.848 to 0.919, precision from 0.661 to 0.737, and
//! the silence on everyday sentences from 0.31 to 0.52 (DESIGN-NOTES has the sweep). Selection
//! never picks a skill on its body's words alone (see `select`).
//!
//! Everything a message's words are looked up in is built once per index: a table from each
//! word of the library, and each base the inflection rule gives it, to a term; each term's
//! postings with their BM25 weight already computed. Reading every body takes most of
//! 70-100 ms for 650 skills, so a library loaded through the index cache keeps its ranker in the cache
//! folder too (see `cache::ranker`). A message is then a split, one hash lookup per word and a
//! sum over postings: no stemming, no allocation per word.

mod flat;
mod lexicon;

use rustc_hash::FxHashMap;

use flat::{Reader, Strings, Writer};
use lexicon::Lexicon;

use crate::inflect::each_base;
use crate::skill::Skill;
use ctxkit::text::is_word_char;

/// BM25's term-frequency saturation and length normalization.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A word of the name counts as this many words of the description.
const NAME_WEIGHT: f32 = 2.0;
/// A word of the body counts as this share of a word of the description (calibrated on the
/// corpus set: 0.2 gave R@3 0.890, 0.3 gave 0.910, 0.4 let off-topic requests through).
const BODY_WEIGHT: f32 = 0.3;
/// A word found only in a skill's body whose weight is below this (in units of a rare word)
/// is not kept: a common word a body uses once or twice says little, and dropping it keeps
/// the postings a message walks short. On the corpus set 0.1, 0.15 and 0.2 gave R@3 0.914,
/// 0.919 and 0.910, precision 0.718, 0.737 and 0.743.
const BODY_FLOOR: f32 = 0.15;

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

impl Field {
    /// How much one occurrence counts, in words of the description.
    fn weight(self) -> f32 {
        match self {
            Field::Name => NAME_WEIGHT,
            Field::Rest => 1.0,
            Field::Body => BODY_WEIGHT,
            Field::Against => 0.0,
        }
    }
}

/// What a saved ranker was computed with: a file saved by a build that weighs words
/// differently is another file. Bump `FORMAT` with any change to what `Ranker::new` computes
/// that the constants do not show (the words it reads, the stop words, the inflection rule).
pub(crate) fn recipe() -> String {
    /// The version of what a ranker holds and how it is computed.
    const FORMAT: u32 = 1;
    format!("{FORMAT} {K1} {B} {NAME_WEIGHT} {BODY_WEIGHT} {BODY_FLOOR}")
}

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
        // Most words of a text with a few non-ASCII characters (a dash, an arrow) are ASCII.
        if raw.is_ascii() {
            each_ascii_word(raw, scratch, &mut each);
        } else {
            each_unicode_word(raw, scratch, &mut each);
        }
    }
}

/// [`each_word`] for one run of word characters, any script: cut at camelCase and between
/// letters and digits.
fn each_unicode_word(raw: &str, scratch: &mut String, each: &mut impl FnMut(&str)) {
    let mut start = 0;
    let mut previous: Option<char> = None;
    for (at, c) in raw.char_indices() {
        let cut = previous.is_some_and(|p| {
            (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_alphabetic())
        });
        if cut {
            word(&raw[start..at], scratch, each);
            start = at;
        }
        previous = Some(c);
    }
    word(&raw[start..], scratch, each);
}

/// [`each_word`] for ASCII text (most messages and descriptions), a byte at a time: the same
/// words at a fraction of the cost, as a 2 KB message is read for every selection. In ASCII the
/// rule comes down to runs of letters (digits split like any other byte, and a number alone is
/// no word), each cut where a lowercase letter meets a capital: a piece is some capitals, then
/// some lowercase letters.
fn each_ascii_word(text: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut at = 0;
    while at < n {
        if !bytes[at].is_ascii_alphabetic() {
            at += 1;
            continue;
        }
        let start = at;
        while at < n && bytes[at].is_ascii_uppercase() {
            at += 1;
        }
        let capitals = at > start;
        while at < n && bytes[at].is_ascii_lowercase() {
            at += 1;
        }
        if at - start < 2 {
            continue;
        }
        let piece = &text[start..at];
        if capitals {
            scratch.clear();
            scratch.push_str(piece);
            scratch.make_ascii_lowercase();
            each(scratch);
        } else {
            each(piece);
        }
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

/// Where a skill holds a term: the strongest of its fields that does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    Name,
    /// Description, `when_to_use`, tags.
    Rest,
    Body,
    /// `when_not_to_use`: lowers the skill.
    Against,
}

/// One skill's share of a term.
#[derive(Debug, Clone, Copy)]
struct Posting {
    skill: u32,
    /// The term's BM25 weight in the skill, in units of a rare word (see [`Ranker::new`]).
    weight: f32,
    field: Field,
}

/// What the words of one message gave one skill, beyond its score: what the selection's rules
/// ask of the few skills that can be selected, counted for them alone
/// ([`Ranker::evidence`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SkillWords {
    /// How many of the message's terms it matched.
    pub(crate) matched: u32,
    /// The rarest term it matched in its name (0 when none).
    pub(crate) rare_name: f32,
    /// How many of the message's terms it holds outside its body.
    pub(crate) described: u32,
}

/// The message's words a skill holds, by where it holds them (as the library writes them).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Words {
    pub(crate) name: Vec<String>,
    /// In the description, `when_to_use` or tags, not the name.
    pub(crate) description: Vec<String>,
    /// Only in the body.
    pub(crate) body: Vec<String>,
    /// In its `when_not_to_use`.
    pub(crate) against: Vec<String>,
}

/// What the words of one message gave every skill, by position in the index.
#[derive(Debug, Default)]
pub(crate) struct WordScores {
    /// The message's distinct terms.
    terms: Vec<u32>,
    /// Per skill: its matched terms' weights, less what `when_not_to_use` took; -∞ for a
    /// skill none of the message's words reached.
    pub(crate) skills: Vec<f32>,
}

impl WordScores {
    /// Skill `i`'s score, 0 where none of the message's words reached it.
    pub(crate) fn score_of(&self, i: usize) -> f32 {
        match self.skills[i] {
            f32::NEG_INFINITY => 0.0,
            score => score,
        }
    }
}

/// The library's words, their terms and postings (see the module docs), in flat arrays that
/// are saved and read back as they stand.
#[derive(Debug)]
pub(crate) struct Ranker {
    /// A word, or a base the inflection rule gives a word, to its term.
    terms: Lexicon,
    /// Each term as the library writes it (its shortest form), for explanations.
    text: Strings,
    /// Where each term's postings start in `postings`, and one past the last.
    starts: Vec<u32>,
    /// Every term's postings, term by term, each term's by skill.
    postings: Vec<Posting>,
    /// `when_not_to_use` words: (term, skill, the weight it takes away), in that order.
    against: Vec<(u32, u32, f32)>,
    /// Each term's rarity: 1.0 for a word of one skill, less the more skills hold it.
    rarity: Vec<f32>,
}

impl Ranker {
    /// Index the words of `skills`. Skills that the model may not invoke are left out.
    pub(crate) fn new(skills: &[Skill]) -> Ranker {
        let mut scratch = String::new();
        let mut terms: FxHashMap<Box<str>, u32> = STOP_WORDS.iter().map(|&w| (w.into(), STOP)).collect();
        let mut text = Strings::default();
        let is_stop_word = |w: &str| terms.contains_key(w);
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
                (skill.body.as_str(), Field::Body),
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
                    lengths[i] += kind.weight();
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
                    joined = terms.get(base).copied().filter(|&t| t != STOP);
                }
            });
            let term = joined.unwrap_or_else(|| {
                text.push(w);
                (text.len() - 1) as u32
            });
            terms.insert(w.into(), term);
            term_of_surface[id as usize] = term;
        }
        // A message's word may be the base of a word the library holds only inflected
        // ("webhook" for "webhooks"): the base finds it too.
        let mut aliases: Vec<(String, u32)> = Vec::new();
        for &(w, id) in &distinct {
            each_base(w, &mut scratch, |base| {
                if !terms.contains_key(base) {
                    aliases.push((base.to_string(), term_of_surface[id as usize]));
                }
            });
        }
        for (base, term) in aliases {
            terms.entry(base.into()).or_insert(term);
        }

        // Each term's weighted frequency per skill, then BM25 with rarity. The occurrences
        // come skill by skill, so each term's list is built in skill order without a sort.
        let described = lengths.iter().filter(|&&l| l > 0.0).count().max(1) as f32;
        let average = (lengths.iter().sum::<f32>() / described).max(1.0);
        let idf = |n: f32| (1.0 + (described - n + 0.5) / (n + 0.5)).ln();
        let one = idf(1.0);
        // Per term: (skill, weighted frequency, strongest field).
        let mut lists: Vec<Vec<(u32, f32, Field)>> = vec![Vec::new(); text.len()];
        let mut against: Vec<(u32, u32, f32)> = Vec::new();
        for (id, skill, kind) in occurrences {
            let term = term_of_surface[id as usize];
            if kind == Field::Against {
                against.push((term, skill, 0.0));
                continue;
            }
            let list = &mut lists[term as usize];
            if list.last().is_none_or(|&(s, _, _)| s != skill) {
                list.push((skill, 0.0, kind));
            }
            let last = list.last_mut().expect("just pushed");
            last.1 += kind.weight();
            last.2 = last.2.min(kind);
        }
        against.sort_unstable_by_key(|&(t, s, _)| (t, s));
        against.dedup_by_key(|&mut (t, s, _)| (t, s));
        let rarity: Vec<f32> = lists.iter().map(|p| idf(p.len() as f32) / one).collect();
        let mut starts = vec![0u32];
        let mut postings = Vec::new();
        for (list, &rarity) in lists.into_iter().zip(&rarity) {
            postings.extend(list.into_iter().filter_map(|(skill, tf, field)| {
                let norm = K1 * (1.0 - B + B * lengths[skill as usize] / average);
                let weight = rarity * tf * (K1 + 1.0) / (tf + norm);
                (field != Field::Body || weight >= BODY_FLOOR).then_some(Posting { skill, weight, field })
            }));
            starts.push(postings.len() as u32);
        }
        // A `when_not_to_use` word takes away what the same word would give a skill of one
        // occurrence, scaled by its rarity.
        for (term, _, weight) in &mut against {
            *weight = rarity[*term as usize];
        }
        Ranker {
            terms: Lexicon::new(terms),
            text,
            starts,
            postings,
            against,
            rarity,
        }
    }

    fn postings_of(&self, term: u32) -> &[Posting] {
        let t = term as usize;
        &self.postings[self.starts[t] as usize..self.starts[t + 1] as usize]
    }

    /// The skills whose `when_not_to_use` holds `term`, with the weight it takes away.
    fn against_of(&self, term: u32) -> &[(u32, u32, f32)] {
        let start = self.against.partition_point(|a| a.0 < term);
        let end = self.against.partition_point(|a| a.0 <= term);
        &self.against[start..end]
    }

    /// The term a message's word (lowercased) stands for, itself or a base of it.
    fn term_of(&self, word: &str, scratch: &mut String) -> Option<u32> {
        if let Some(t) = self.terms.get(word) {
            return (t != STOP).then_some(t);
        }
        let mut found = None;
        each_base(word, scratch, |base| {
            if found.is_none() {
                found = self.terms.get(base).filter(|&t| t != STOP);
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

    /// What the words of `message` give the skills of the index (`skills` of them). Only the
    /// weights are summed here, a few instructions per posting, as a long message's words
    /// reach most skills; the rest of each skill's evidence is counted for the few that can be
    /// selected ([`Ranker::evidence`]).
    pub(crate) fn score(&self, message: &str, skills: usize) -> WordScores {
        let terms = self.terms_of(message);
        let mut acc = vec![0f32; skills];
        for &t in &terms {
            for p in self.postings_of(t) {
                acc[p.skill as usize] += p.weight;
            }
        }
        // Every weight is positive, so a skill still at 0 holds none of the message's words.
        for score in &mut acc {
            if *score == 0.0 {
                *score = f32::NEG_INFINITY;
            }
        }
        if !self.against.is_empty() {
            for &t in &terms {
                for &(_, skill, weight) in self.against_of(t) {
                    acc[skill as usize] -= weight;
                }
            }
        }
        WordScores { terms, skills: acc }
    }

    /// Skill `i`'s postings among the message's terms, with their terms.
    fn postings_for<'a>(
        &'a self,
        scores: &'a WordScores,
        i: usize,
    ) -> impl Iterator<Item = (u32, Posting)> + 'a {
        scores.terms.iter().filter_map(move |&t| {
            let postings = self.postings_of(t);
            let at = postings.binary_search_by_key(&(i as u32), |p| p.skill).ok()?;
            Some((t, postings[at]))
        })
    }

    /// What the selection's rules ask of skill `i` beside its score.
    pub(crate) fn evidence(&self, scores: &WordScores, i: usize) -> SkillWords {
        let mut words = SkillWords::default();
        for (t, p) in self.postings_for(scores, i) {
            words.matched += 1;
            words.described += u32::from(p.field != Field::Body);
            if p.field == Field::Name {
                words.rare_name = words.rare_name.max(self.rarity[t as usize]);
            }
        }
        words
    }

    /// The words behind skill `i`'s score.
    pub(crate) fn words_of(&self, scores: &WordScores, i: usize) -> Words {
        let mut words = Words::default();
        let text = |t: u32| self.text.get(t as usize).to_string();
        for (t, p) in self.postings_for(scores, i) {
            match p.field {
                Field::Name => words.name.push(text(t)),
                Field::Rest => words.description.push(text(t)),
                Field::Body | Field::Against => words.body.push(text(t)),
            }
        }
        for &t in &scores.terms {
            if self.against_of(t).iter().any(|a| a.1 as usize == i) {
                words.against.push(text(t));
            }
        }
        words
    }

    /// The ranker as bytes, for [`Ranker::read`].
    pub(crate) fn write(&self) -> Vec<u8> {
        let mut out = Writer::default();
        self.terms.write(&mut out);
        self.text.write(&mut out);
        out.u32s(&self.starts);
        out.u32s(&self.postings.iter().map(|p| p.skill).collect::<Vec<_>>());
        out.f32s(&self.postings.iter().map(|p| p.weight).collect::<Vec<_>>());
        out.bytes(&self.postings.iter().map(|p| p.field as u8).collect::<Vec<_>>());
        out.u32s(&self.against.iter().flat_map(|a| [a.0, a.1]).collect::<Vec<_>>());
        out.f32s(&self.against.iter().map(|a| a.2).collect::<Vec<_>>());
        out.f32s(&self.rarity);
        out.finish()
    }

    /// A ranker [`Ranker::write`] wrote for an index of `skills` skills; `None` unless every
    /// part is whole and every term and skill it names is in range, so a damaged or foreign
    /// file is rebuilt rather than trusted.
    pub(crate) fn read(bytes: &[u8], skills: usize) -> Option<Ranker> {
        let input = &mut Reader::new(bytes);
        let terms = Lexicon::read(input)?;
        let text = Strings::read(input)?;
        let starts = input.u32s()?;
        let (skill, weight, field) = (input.u32s()?, input.f32s()?, input.bytes()?);
        let (pairs, taken) = (input.u32s()?, input.f32s()?);
        let rarity = input.f32s()?;
        let n = text.len();
        let fields = [Field::Name, Field::Rest, Field::Body];
        let sound = input.is_done()
            && starts.len() == n + 1
            && starts.first() == Some(&0)
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts.last() == Some(&(skill.len() as u32))
            && weight.len() == skill.len()
            // `score` tells a skill no word reached by a sum still at 0.
            && weight.iter().all(|&w| w.is_finite() && w > 0.0)
            && field.len() == skill.len()
            && field.iter().all(|&f| (f as usize) < fields.len())
            && skill.iter().all(|&s| (s as usize) < skills)
            && terms.terms().iter().all(|&t| t == STOP || (t as usize) < n)
            && pairs.len() == 2 * taken.len()
            && pairs
                .chunks_exact(2)
                .all(|p| (p[0] as usize) < n && (p[1] as usize) < skills)
            && pairs.chunks_exact(2).is_sorted_by_key(|p| p[0])
            && rarity.len() == n
            && rarity.iter().chain(&taken).all(|r| r.is_finite());
        sound.then(|| Ranker {
            terms,
            text,
            starts,
            postings: (skill.iter().zip(&weight).zip(field))
                .map(|((&skill, &weight), &f)| Posting {
                    skill,
                    weight,
                    field: fields[f as usize],
                })
                .collect(),
            against: pairs
                .chunks_exact(2)
                .zip(taken)
                .map(|(p, w)| (p[0], p[1], w))
                .collect(),
            rarity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::{Skill, Source};

    fn skill(name: &str, description: &str, extra: &str) -> Skill {
        skill_of(name, description, extra, "Body.")
    }

    fn skill_with_body(name: &str, description: &str, body: &str) -> Skill {
        skill_of(name, description, "", body)
    }

    /// A skill parsed from its frontmatter fields (`extra`: more lines of it) and body.
    fn skill_of(name: &str, description: &str, extra: &str, body: &str) -> Skill {
        let text = format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}");
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

    /// The words of an ASCII `text` read the way any script is read.
    fn unicode_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut push = |w: &str| out.push(w.to_string());
        for raw in text.split(|c: char| !is_word_char(c) || c == '_') {
            each_unicode_word(raw, &mut String::new(), &mut push);
        }
        out
    }

    #[test]
    fn ascii_text_gives_the_words_any_script_gives() {
        for text in [
            "getWeatherForecast uber.ride2 add_postgres_server",
            "  HTTPServer x2y 3d-model a1b2c3 __init__ I/O e.g. it's ABC",
            "ready,set;go!  trailing",
            "",
            "9 99 a",
        ] {
            let mut fast = Vec::new();
            each_word(text, &mut String::new(), |w| fast.push(w.to_string()));
            assert_eq!(fast, unicode_words(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_ascii_reading_is_the_general_one(text in "[a-cA-C0-2 _.'-]{0,24}") {
            let mut fast = Vec::new();
            each_ascii_word(&text, &mut String::new(), |w| fast.push(w.to_string()));
            proptest::prop_assert_eq!(fast, unicode_words(&text));
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
        let words = r.words_of(&s, 0);
        assert_eq!(
            (words.name, words.description),
            (vec!["webhooks".to_string()], vec!["failed".to_string()])
        );
        let s = r.score("deploying the app", 3);
        assert_eq!(r.words_of(&s, 1).name, ["deploy"]);
        // "app" is in two skills, "changelog" in one: the rarer word weighs more.
        let s = r.score("app changelog", 3);
        assert!(s.skills[2] > s.skills[1]);
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
        assert!(scanned.skills[0] < plain.skills[0], "{scanned:?}");
        assert_eq!(r.words_of(&scanned, 0).against, ["scanned"]);
    }

    #[test]
    fn the_body_finds_its_skill_and_is_explained_apart_from_the_description() {
        let skills = vec![
            skill_with_body(
                "frontend-security",
                "Secure the browser side of a web app",
                "Escape output against XSS. Never assign user text to innerHTML; \
                 sanitize it first. XSS in attributes needs attribute escaping.",
            ),
            skill_with_body("xss-scanner", "Scan pages for XSS", "Run the scanner."),
            skill_with_body("css", "Style pages", "Layout and colours."),
        ];
        let r = Ranker::new(&skills);
        let s = r.score("how do I stop xss from innerHTML", 3);
        assert!(s.skills[0] > 0.0 && s.skills[1] > 0.0, "{s:?}");
        assert_eq!(
            s.skills[2],
            f32::NEG_INFINITY,
            "no word of the message reached `css`"
        );
        // What the selection's rules ask: the body's three words are outside the description,
        // and `xss-scanner` holds its one word in its name.
        let (body, named) = (r.evidence(&s, 0), r.evidence(&s, 1));
        assert_eq!((body.matched, body.described, body.rare_name), (3, 0, 0.0));
        assert_eq!((named.matched, named.described), (1, 1));
        assert!(named.rare_name > 0.0);
        let words = r.words_of(&s, 0);
        assert_eq!(
            (words.description, words.body),
            (vec![], vec!["xss".to_string(), "inner".into(), "html".into()])
        );
        assert_eq!(r.words_of(&s, 1).name, ["xss"]);
    }

    #[test]
    fn a_saved_ranker_reads_back_to_the_same_scores_and_a_damaged_one_is_refused() {
        let skills = vec![
            skill(
                "stripe-webhooks",
                "Verify Stripe webhooks and replay failed events",
                "",
            ),
            skill(
                "pdf",
                "Read and fill PDF forms",
                "when_not_to_use: scanned images\n",
            ),
            skill_with_body("deploy", "Deploy the app", "Roll back a failed release."),
        ];
        let built = Ranker::new(&skills);
        let bytes = built.write();
        let read = Ranker::read(&bytes, skills.len()).expect("reads back");
        for message in ["the webhook failed", "scanned pdf form", "roll back the release"] {
            let (a, b) = (built.score(message, 3), read.score(message, 3));
            for i in 0..3 {
                assert_eq!(a.skills[i], b.skills[i], "{message}");
                assert_eq!(built.words_of(&a, i), read.words_of(&b, i), "{message}");
            }
        }
        // Short, or for a smaller index than its skills need: rebuilt, never trusted.
        assert!(Ranker::read(&bytes[..bytes.len() - 1], skills.len()).is_none());
        assert!(Ranker::read(&bytes, 2).is_none());
        assert!(Ranker::read(b"", 3).is_none());
        // A weight no build gives: refused, as a sum still at 0 must mean "no word".
        for weight in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            let mut bad = Ranker::read(&bytes, skills.len()).expect("reads back");
            bad.postings[0].weight = weight;
            assert!(Ranker::read(&bad.write(), skills.len()).is_none(), "{weight}");
        }
    }
}
