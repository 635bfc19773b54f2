//! Trigger patterns: every skill's regular expressions compiled into one `RegexSet`, within a
//! size budget that keeps the patterns of the most important skills.

use regex::{RegexSet, RegexSetBuilder};

use super::TriggerRef;
use crate::diagnostic::Diagnostic;
use crate::skill::Skill;

/// Compiled size (regex `size_limit`) of all trigger patterns of one index together: patterns
/// of the highest-priority skills are kept first, the rest are dropped with a warning.
pub(crate) const MAX_INDEX_PATTERN_BYTES: usize = 4 << 20;
/// Lazy-DFA cache of the index's pattern set (regex `dfa_size_limit`).
const PATTERN_SET_DFA_BYTES: usize = 2 << 20;

/// Every skill's patterns in one set, with the trigger each set entry stands for. Skills are
/// taken in priority order (stable), so when the set is over [`MAX_INDEX_PATTERN_BYTES`] the
/// most important patterns are the ones kept.
pub(super) fn compile_patterns(
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
