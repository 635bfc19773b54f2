//! Trigger matching (DESIGN.md "Matching", steps 1-3): one Aho-Corasick automaton over every
//! literal trigger of every skill and one `RegexSet` over the patterns, built once per index.
//!
//! A message is lowercased with Unicode rules (aho-corasick's own case folding is ASCII-only),
//! every occurrence is found (overlapping, so `docker` and `docker compose` both count), and an
//! occurrence counts only as a whole word: at each end of the trigger whose character is a word
//! character of a script written with spaces, the neighbouring message character must not be a
//! word character. Scripts written without spaces never need a boundary.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{RegexSet, RegexSetBuilder};

use crate::diagnostic::Diagnostic;
use crate::skill::Skill;

/// `(skill index, trigger index within the skill)`; literals first, then patterns.
pub(crate) type TriggerRef = (u32, u16);

/// The compiled triggers of one index.
#[derive(Debug)]
pub(crate) struct Matcher {
    automaton: Option<AhoCorasick>,
    /// For each automaton pattern: whether its first / last character needs a word boundary.
    boundaries: Vec<(bool, bool)>,
    /// For each automaton pattern: the triggers that declare it (`owners[starts[p]..starts[p+1]]`).
    starts: Vec<u32>,
    owners: Vec<TriggerRef>,
    regexes: Option<RegexSet>,
    regex_owners: Vec<TriggerRef>,
}

/// A letter, digit or `_`.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Han, Hiragana, Katakana, Thai, Lao, Khmer and Myanmar are written without spaces between
/// words, so a trigger in them matches anywhere.
pub fn is_no_space_script(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF            // Thai, Lao
        | 0x1000..=0x109F | 0xA9E0..=0xA9FF | 0xAA60..=0xAA7F // Myanmar
        | 0x1780..=0x17FF | 0x19E0..=0x19FF // Khmer
        | 0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F // Hiragana, Katakana
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF // Han
        | 0x20000..=0x2EBEF | 0x30000..=0x3134F)
}

/// Whether a trigger end with this character needs a word boundary in the message.
fn needs_boundary(c: Option<char>) -> bool {
    c.is_some_and(|c| is_word_char(c) && !is_no_space_script(c))
}

/// Whether `text[start..end]` stands as a whole word, given which ends need a boundary.
pub fn is_whole_word(text: &str, start: usize, end: usize, (check_start, check_end): (bool, bool)) -> bool {
    let before_ok = !check_start || !text[..start].chars().next_back().is_some_and(is_word_char);
    let after_ok = !check_end || !text[end..].chars().next().is_some_and(is_word_char);
    before_ok && after_ok
}

/// Which ends of a (lowercased) trigger need a word boundary.
pub fn trigger_boundaries(trigger: &str) -> (bool, bool) {
    (
        needs_boundary(trigger.chars().next()),
        needs_boundary(trigger.chars().next_back()),
    )
}

impl Matcher {
    pub(crate) fn build(skills: &[Skill], diagnostics: &mut Vec<Diagnostic>) -> Matcher {
        let mut literal_ids: HashMap<String, usize> = HashMap::new();
        let mut literal_owners: Vec<Vec<TriggerRef>> = Vec::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut regex_owners: Vec<TriggerRef> = Vec::new();
        for (s, skill) in skills.iter().enumerate() {
            let literals = skill.triggers.literals().map(str::to_lowercase);
            for (t, literal) in literals.enumerate() {
                let next = literal_ids.len();
                let id = *literal_ids.entry(literal).or_insert(next);
                if id == literal_owners.len() {
                    literal_owners.push(Vec::new());
                }
                literal_owners[id].push((s as u32, t as u16));
            }
            let first_pattern = skill.triggers.keywords.len() + skill.triggers.verbs.len();
            for (p, pattern) in skill.triggers.patterns.iter().enumerate() {
                patterns.push(pattern.clone());
                regex_owners.push((s as u32, (first_pattern + p) as u16));
            }
        }

        let mut literals: Vec<(String, usize)> = literal_ids.into_iter().collect();
        literals.sort_by_key(|(_, id)| *id);
        let boundaries = literals.iter().map(|(l, _)| trigger_boundaries(l)).collect();
        let mut starts = Vec::with_capacity(literals.len() + 1);
        let mut owners = Vec::new();
        for refs in &literal_owners {
            starts.push(owners.len() as u32);
            owners.extend_from_slice(refs);
        }
        starts.push(owners.len() as u32);
        let automaton = if literals.is_empty() {
            None
        } else {
            let built = AhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .build(literals.iter().map(|(l, _)| l));
            built
                .map_err(|e| {
                    diagnostics.push(Diagnostic::warning(
                        "<index>",
                        None,
                        format!("trigger keywords could not be compiled ({e}); keyword matching is off"),
                    ))
                })
                .ok()
        };

        let regexes = if patterns.is_empty() {
            None
        } else {
            match RegexSetBuilder::new(&patterns)
                .case_insensitive(true)
                .size_limit(256 << 20)
                .build()
            {
                Ok(set) => Some(set),
                Err(e) => {
                    diagnostics.push(Diagnostic::warning(
                        "<index>",
                        None,
                        format!("trigger patterns could not be compiled together ({e}); patterns are ignored, keywords still work"),
                    ));
                    regex_owners.clear();
                    None
                }
            }
        };
        Matcher {
            automaton,
            boundaries,
            starts,
            owners,
            regexes,
            regex_owners,
        }
    }

    /// Append every trigger that fires in `lowercased` to `hits` (unsorted, may repeat).
    pub(crate) fn collect_hits(&self, lowercased: &str, hits: &mut Vec<TriggerRef>) {
        if let Some(ac) = &self.automaton {
            for m in ac.find_overlapping_iter(lowercased) {
                let p = m.pattern().as_usize();
                if is_whole_word(lowercased, m.start(), m.end(), self.boundaries[p]) {
                    let (a, b) = (self.starts[p] as usize, self.starts[p + 1] as usize);
                    hits.extend_from_slice(&self.owners[a..b]);
                }
            }
        }
        if let Some(set) = &self.regexes {
            hits.extend(set.matches(lowercased).iter().map(|i| self.regex_owners[i]));
        }
    }
}
