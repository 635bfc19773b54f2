//! Trigger matching (lowercase, find every occurrence, keep whole words): one Aho-Corasick automaton over every
//! literal trigger of every skill and one `RegexSet` over the patterns, built once per index.
//!
//! A message is lowercased with Unicode rules (aho-corasick's own case folding is ASCII-only),
//! every occurrence is found (overlapping, so `docker` and `docker compose` both count), and an
//! occurrence counts only as a whole word: at each end of the trigger whose character is a word
//! character of a script written with spaces, the neighbouring message character must not be a
//! word character. Scripts written without spaces never need a boundary.

use ctxkit::text::{is_word_char, is_written_without_spaces};
use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{RegexSet, RegexSetBuilder};

use crate::diagnostic::Diagnostic;
use crate::skill::Skill;

/// Compiled size (regex `size_limit`) of all trigger patterns of one index together: patterns
/// of the highest-priority skills are kept first, the rest are dropped with a warning.
pub(crate) const MAX_INDEX_PATTERN_BYTES: usize = 4 << 20;
/// Lazy-DFA cache of the index's pattern set (regex `dfa_size_limit`).
const PATTERN_SET_DFA_BYTES: usize = 2 << 20;

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

/// Whether a trigger end with this character needs a word boundary in the message.
fn needs_boundary(c: Option<char>) -> bool {
    c.is_some_and(|c| is_word_char(c) && !is_written_without_spaces(c))
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
        needs_boundary(trigger.chars().next()),
        needs_boundary(trigger.chars().next_back()),
    )
}

impl Matcher {
    /// One automaton over every distinct literal trigger (each remembering the skills that
    /// declare it) and one set over every pattern; a part that cannot compile is a warning and
    /// matching goes on without it.
    pub(crate) fn build(skills: &[Skill], diagnostics: &mut Vec<Diagnostic>) -> Matcher {
        let mut literal_ids: HashMap<String, usize> = HashMap::new();
        let mut literal_owners: Vec<Vec<TriggerRef>> = Vec::new();
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
        let (regexes, regex_owners) = compile_patterns(skills, diagnostics);
        Matcher {
            automaton,
            boundaries,
            starts,
            owners,
            regexes,
            regex_owners,
        }
    }
}

/// Every skill's patterns in one set, with the trigger each set entry stands for. Skills are
/// taken in priority order (stable), so when the set is over [`MAX_INDEX_PATTERN_BYTES`] the
/// most important patterns are the ones kept.
fn compile_patterns(
    skills: &[Skill],
    diagnostics: &mut Vec<Diagnostic>,
) -> (Option<RegexSet>, Vec<TriggerRef>) {
    let mut patterns: Vec<&str> = Vec::new();
    let mut regex_owners: Vec<TriggerRef> = Vec::new();
    let mut by_priority: Vec<usize> = (0..skills.len()).collect();
    by_priority.sort_by_key(|&s| std::cmp::Reverse(skills[s].priority));
    for &s in &by_priority {
        let skill = &skills[s];
        let first_pattern = skill.triggers.keywords.len() + skill.triggers.verbs.len();
        for (p, pattern) in skill.triggers.patterns.iter().enumerate() {
            patterns.push(pattern);
            regex_owners.push((s as u32, (first_pattern + p) as u16));
        }
    }

    let regexes = if patterns.is_empty() {
        None
    } else {
        match build_within_budget(&patterns) {
            Ok((set, kept)) => {
                drop_over_budget(skills, &regex_owners[kept..], diagnostics);
                regex_owners.truncate(kept);
                Some(set)
            }
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
    (regexes, regex_owners)
}

fn pattern_set(patterns: &[&str]) -> Result<RegexSet, regex::Error> {
    RegexSetBuilder::new(patterns)
        .case_insensitive(true)
        .size_limit(MAX_INDEX_PATTERN_BYTES)
        .dfa_size_limit(PATTERN_SET_DFA_BYTES)
        .build()
}

/// The set of the longest prefix of `patterns` that compiles within
/// [`MAX_INDEX_PATTERN_BYTES`], and its length. Over budget, a binary search over the prefix
/// length: each attempt stops once it passes the budget, so this costs a few budget-sized
/// compilations whatever the number of patterns.
fn build_within_budget(patterns: &[&str]) -> Result<(RegexSet, usize), regex::Error> {
    match pattern_set(patterns) {
        Ok(set) => return Ok((set, patterns.len())),
        Err(regex::Error::CompiledTooBig(_)) => {}
        Err(e) => return Err(e),
    }
    let (mut fits, mut too_big) = (0, patterns.len());
    let mut best = RegexSet::empty();
    while too_big - fits > 1 {
        let mid = fits + (too_big - fits) / 2;
        match pattern_set(&patterns[..mid]) {
            Ok(set) => {
                best = set;
                fits = mid;
            }
            Err(regex::Error::CompiledTooBig(_)) => too_big = mid,
            Err(e) => return Err(e),
        }
    }
    Ok((best, fits))
}

/// One warning per skill that lost patterns to the index budget.
fn drop_over_budget(skills: &[Skill], dropped: &[TriggerRef], diagnostics: &mut Vec<Diagnostic>) {
    let mut per_skill: Vec<(u32, usize)> = Vec::new();
    for &(s, _) in dropped {
        match per_skill.last_mut() {
            Some((last, n)) if *last == s => *n += 1,
            _ => per_skill.push((s, 1)),
        }
    }
    for (s, n) in per_skill {
        diagnostics.push(Diagnostic::warning(
            &skills[s as usize].path,
            None,
            format!(
                "{n} trigger pattern(s) of skill `{}` are dropped: the index's patterns together compile to more than {} MiB, and skills of higher priority keep theirs first",
                skills[s as usize].name,
                MAX_INDEX_PATTERN_BYTES >> 20
            ),
        ));
    }
}

impl Matcher {
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
