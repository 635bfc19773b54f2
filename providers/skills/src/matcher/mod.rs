//! Trigger matching (lowercase, find every occurrence, keep whole words, and the regular English
//! inflections of a trigger): a table of trigger words and one `RegexSet` over the patterns,
//! built once per index.
//!
//! A message is lowercased with Unicode rules, and an occurrence of a literal trigger counts
//! only as a whole word: at each end of the trigger whose character is a word character of a
//! script written with spaces, the neighbouring message character must not be a word
//! character. Scripts written without spaces never need a boundary.
//!
//! Take a literal's first word of a spaced script (a run of its word characters, split at any
//! other character): wherever the literal stands as a whole word, the message holds that word
//! as a whole run too — it is cut at the same characters, or at the literal's ends, which need
//! a boundary there. The same holds for a form of a one-word literal ("greeted" for `greet`):
//! the run is the form. So literals are filed by the hash of their first word, and a message
//! is matched by splitting it into runs once and looking up each run, and the words it may be
//! a form of ([`inflect::each_base`]); each literal found is then checked against the text
//! around the run, as written or as a form. A request costs one pass over the message and a
//! few lookups per word, whatever the number of triggers and without one more literal per
//! form; building the table hashes each literal once, which a process started per prompt can
//! afford. Literals without a word of a spaced script (`日本語`, `++`) need no boundary and are
//! found by one Aho-Corasick automaton over only them.

mod filter;
mod patterns;
mod words;

use std::borrow::Cow;
use std::hash::Hasher;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use ctxkit::text::is_word_char;
use regex::RegexSet;
use rustc_hash::{FxHashMap, FxHasher};

use crate::diagnostic::Diagnostic;
use crate::inflect;
use crate::skill::Skill;
use filter::WordFilter;
use patterns::compile_patterns;
pub(crate) use patterns::MAX_INDEX_PATTERN_BYTES;
use words::{for_each_word, is_spaced};

/// `(skill index, trigger index within the skill)`; literals first, then patterns.
pub(crate) type TriggerRef = (u32, u16);

/// A trigger that fired in a message, and the inflected form it fired as (`None`: as written,
/// or as a pattern).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Hit {
    pub(crate) trigger: TriggerRef,
    pub(crate) form: Option<String>,
}

/// The compiled triggers of one index, over the skills it was built from (which every
/// call is given again).
#[derive(Debug)]
pub(crate) struct Matcher {
    /// The first literal filed under each word key (see the module docs); the rest follow
    /// through [`Filed::next`]. Two words sharing a key only add a literal the check rejects.
    by_word: FxHashMap<u64, u32>,
    /// Says "no" for most words that are in no trigger, before the map is asked.
    filter: WordFilter,
    filed: Vec<Filed>,
    /// Literal triggers without a word of a spaced script.
    unkeyed: Vec<TriggerRef>,
    /// `unkeyed` compiled together on the first message (`None` inside: it could not be built).
    unkeyed_automaton: OnceLock<Option<Literals>>,
    regexes: Option<RegexSet>,
    regex_owners: Vec<TriggerRef>,
}

/// A literal trigger in the word table.
#[derive(Debug)]
struct Filed {
    trigger: TriggerRef,
    /// Where its first word starts in the lowercased literal.
    offset: u32,
    /// The next literal under the same key (`u32::MAX`: none).
    next: u32,
}

const NONE: u32 = u32::MAX;

/// Literal triggers compiled into one automaton: each distinct lowercased literal is one
/// pattern, remembering the triggers that declare it.
#[derive(Debug)]
struct Literals {
    automaton: AhoCorasick,
    /// For each pattern: the triggers that declare it (`owners[starts[p]..starts[p+1]]`).
    starts: Vec<u32>,
    owners: Vec<TriggerRef>,
}

/// Whether `text[start..end]` stands as a whole word, given which ends need a boundary.
pub(crate) fn is_whole_word(
    text: &str,
    start: usize,
    end: usize,
    (check_start, check_end): (bool, bool),
) -> bool {
    let before_ok = !check_start || !text[..start].chars().next_back().is_some_and(is_word_char);
    let after_ok = !check_end || !text[end..].chars().next().is_some_and(is_word_char);
    before_ok && after_ok
}

/// Which ends of a (lowercased) trigger need a word boundary.
pub(crate) fn trigger_boundaries(trigger: &str) -> (bool, bool) {
    (
        trigger.chars().next().is_some_and(is_spaced),
        trigger.chars().next_back().is_some_and(is_spaced),
    )
}

/// The literal trigger `(s, t)` stands for, lowercased (lowercase ASCII, the usual trigger,
/// without a copy).
fn lowercased(skills: &[Skill], (s, t): TriggerRef) -> Cow<'_, str> {
    let literal = skills[s as usize].triggers.get(t as usize).unwrap_or_default();
    if literal.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(literal)
    } else {
        Cow::Owned(literal.to_lowercase())
    }
}

impl Matcher {
    /// File every literal trigger under its first word and compile every pattern into one set;
    /// a set that cannot compile is a warning and matching goes on without it.
    pub(crate) fn build(skills: &[Skill], diagnostics: &mut Vec<Diagnostic>) -> Matcher {
        let mut by_word = FxHashMap::default();
        let mut filed = Vec::new();
        let mut unkeyed = Vec::new();
        for (s, skill) in skills.iter().enumerate() {
            for t in 0..skill.triggers.literals().count() {
                let trigger = (s as u32, t as u16);
                let literal = lowercased(skills, trigger);
                let mut first = None;
                for_each_word(&literal, |at, word| {
                    first = first.or(Some((at, word)));
                });
                match first {
                    Some((offset, word)) => {
                        let head = by_word.entry(word_key(word)).or_insert(NONE);
                        filed.push(Filed {
                            trigger,
                            offset: offset as u32,
                            next: *head,
                        });
                        *head = (filed.len() - 1) as u32;
                    }
                    None => unkeyed.push(trigger),
                }
            }
        }
        let filter = WordFilter::new(by_word.keys().copied());
        let (regexes, regex_owners) = compile_patterns(skills, diagnostics);
        Matcher {
            by_word,
            filter,
            filed,
            unkeyed,
            unkeyed_automaton: OnceLock::new(),
            regexes,
            regex_owners,
        }
    }
}

impl Matcher {
    /// Append every trigger of `skills` (those the matcher was built from) that fires in
    /// `lowercased` to `hits` (unsorted, may repeat).
    pub(crate) fn collect_hits(&self, skills: &[Skill], lowercased: &str, hits: &mut Vec<Hit>) {
        if !self.by_word.is_empty() {
            let mut scratch = String::new();
            for_each_word(lowercased, |at, word| {
                self.look_up(skills, lowercased, at, word, hits);
                inflect::each_base(word, &mut scratch, |base| {
                    self.look_up(skills, lowercased, at, base, hits)
                });
            });
        }
        if let Some(unkeyed) = self.unkeyed_automaton(skills) {
            unkeyed.collect_hits(lowercased, hits);
        }
        if let Some(set) = &self.regexes {
            hits.extend(set.matches(lowercased).iter().map(|i| Hit {
                trigger: self.regex_owners[i],
                form: None,
            }));
        }
    }

    /// Check the literals filed under `word`, the word at `at` of `text` or a word it may be a
    /// form of.
    #[inline(always)]
    fn look_up(&self, skills: &[Skill], text: &str, at: usize, word: &str, hits: &mut Vec<Hit>) {
        let key = word_key(word);
        if self.filter.may_hold(key) {
            self.check_filed(skills, text, at, key, hits);
        }
    }

    /// Check the literals filed under `key` against `text` around the word at `at`.
    #[inline(never)]
    fn check_filed(&self, skills: &[Skill], text: &str, at: usize, key: u64, hits: &mut Vec<Hit>) {
        let mut next = self.by_word.get(&key).copied().unwrap_or(NONE);
        while let Some(filed) = self.filed.get(next as usize) {
            next = filed.next;
            let literal = lowercased(skills, filed.trigger);
            if let Some(form) = fires_at(text, at, &literal, filed.offset as usize) {
                hits.push(Hit {
                    trigger: filed.trigger,
                    form,
                });
            }
        }
    }

    /// The literals without a word of a spaced script, compiled on first use.
    fn unkeyed_automaton(&self, skills: &[Skill]) -> Option<&Literals> {
        if self.unkeyed.is_empty() {
            return None;
        }
        self.unkeyed_automaton
            .get_or_init(|| {
                Literals::build(skills, &self.unkeyed)
                    .map_err(|e| {
                        tracing::warn!(
                            "trigger keywords without words could not be compiled ({e}); they are ignored"
                        )
                    })
                    .ok()
            })
            .as_ref()
    }
}

/// Whether `literal`, whose first word starts at `offset`, fires in `text` with that word at
/// `at`: `Some(None)` as written, `Some(Some(form))` as an inflected form, `None` not at all.
fn fires_at(text: &str, at: usize, literal: &str, offset: usize) -> Option<Option<String>> {
    let start = at.checked_sub(offset)?;
    let rest = text.get(start..)?;
    if !rest.as_bytes().starts_with(&literal.as_bytes()[..offset]) {
        return None;
    }
    let boundaries = trigger_boundaries(literal);
    if rest.starts_with(literal) && is_whole_word(text, start, start + literal.len(), boundaries) {
        return Some(None);
    }
    // A form differs from the literal in its last word only: take the message's word where
    // the literal's last word starts, and ask whether the two together are a form.
    let mut last = None;
    for_each_word(literal, |at, _| last = Some(at));
    let last = last?;
    if !rest.starts_with(&literal[..last]) {
        return None;
    }
    let word = &rest[last..];
    let end = start + last + word.find(|c| !is_spaced(c)).unwrap_or(word.len());
    (inflect::is_form(literal, &text[start..end]) && is_whole_word(text, start, end, boundaries))
        .then(|| Some(text[start..end].to_string()))
}

impl Literals {
    /// Lowercase `triggers`' literals and merge equal ones: each distinct literal becomes one
    /// pattern owning all its triggers.
    fn build(skills: &[Skill], triggers: &[TriggerRef]) -> Result<Literals, aho_corasick::BuildError> {
        let mut pairs: Vec<(Cow<'_, str>, TriggerRef)> =
            triggers.iter().map(|&t| (lowercased(skills, t), t)).collect();
        pairs.sort_unstable();
        let mut literals: Vec<Cow<'_, str>> = Vec::new();
        let mut starts = Vec::new();
        let mut owners = Vec::with_capacity(pairs.len());
        for (literal, owner) in pairs {
            if literals.last() != Some(&literal) {
                starts.push(owners.len() as u32);
                literals.push(literal);
            }
            owners.push(owner);
        }
        starts.push(owners.len() as u32);
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(literals.iter().map(|l| l.as_bytes()))?;
        Ok(Literals {
            automaton,
            starts,
            owners,
        })
    }

    /// Every occurrence in `text`, as triggers. These literals have no end that needs a word
    /// boundary, so every occurrence counts.
    fn collect_hits(&self, text: &str, hits: &mut Vec<Hit>) {
        for m in self.automaton.find_overlapping_iter(text) {
            let p = m.pattern().as_usize();
            let (a, b) = (self.starts[p] as usize, self.starts[p + 1] as usize);
            hits.extend(
                self.owners[a..b]
                    .iter()
                    .map(|&trigger| Hit { trigger, form: None }),
            );
        }
    }
}

/// A word's key in [`Matcher::by_word`].
fn word_key(word: &str) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(word.as_bytes());
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_word_boundaries_apply_to_spaced_scripts_only() {
        assert_eq!(trigger_boundaries("docker"), (true, true));
        assert_eq!(trigger_boundaries("c++"), (true, false));
        assert_eq!(trigger_boundaries(".net"), (false, true));
        assert_eq!(trigger_boundaries("日本語"), (false, false));
        assert!(is_whole_word("use docker now", 4, 10, (true, true)));
        assert!(!is_whole_word("dockerfile", 0, 6, (true, true)));
        assert!(is_whole_word("用日本語说", 3, 12, (false, false)));
    }
}
