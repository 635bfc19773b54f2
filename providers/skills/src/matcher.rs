//! Trigger matching (lowercase, find every occurrence, keep whole words): one Aho-Corasick automaton over every
//! literal trigger of every skill and one `RegexSet` over the patterns, built once per index.
//!
//! A message is lowercased with Unicode rules (aho-corasick's own case folding is ASCII-only),
//! every occurrence is found (overlapping, so `docker` and `docker compose` both count), and an
//! occurrence counts only as a whole word: at each end of the trigger whose character is a word
//! character of a script written with spaces, the neighbouring message character must not be a
//! word character. Scripts written without spaces never need a boundary.
//!
//! Building the automaton costs about 1.5 µs per literal (150 ms for 10,000 skills of 10
//! triggers), too much for a process started per prompt. So the first message an index
//! matches goes through a small automaton over only the literals that can match it. Take a
//! literal's first word of a spaced script (a run of its word characters, split at any other
//! character): wherever the literal matches, the message holds that word as a whole run too —
//! it is cut at the same characters, or at the literal's ends, which need a boundary there. So
//! literals are indexed by that word, and a message's runs pick the candidates (literals
//! without such a word are tried on every message). Building the index computes nothing else
//! per literal: lowercasing, merging equal literals and the automaton happen for the
//! candidates on the first message, and for every literal once, on the second message, for
//! long-lived processes. Both ways find the same triggers (a property test checks).

use ctxkit::text::{is_word_char, is_written_without_spaces};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

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

/// The compiled triggers of one index, over the skills it was built from (which every
/// call is given again).
#[derive(Debug)]
pub(crate) struct Matcher {
    /// Every literal trigger by the key of its first word of a spaced script, sorted by key
    /// (see the module docs). Keys are hashes: two words sharing one only add a candidate the
    /// automaton then rejects.
    first_words: Vec<(u64, TriggerRef)>,
    /// Literal triggers without a word of a spaced script: candidates for every message.
    unkeyed: Vec<TriggerRef>,
    /// Set by the first message matched: the next one builds the full automaton.
    matched_once: AtomicBool,
    /// Every literal trigger compiled together (`None` inside: it could not be built).
    all: OnceLock<Option<Literals>>,
    regexes: Option<RegexSet>,
    regex_owners: Vec<TriggerRef>,
}

/// Literal triggers compiled: one automaton over the distinct lowercased literals, each
/// pattern remembering which ends need a word boundary and the triggers that declare it.
#[derive(Debug)]
struct Literals {
    automaton: AhoCorasick,
    /// For each pattern: whether its first / last character needs a word boundary.
    boundaries: Vec<(bool, bool)>,
    /// For each pattern: the triggers that declare it (`owners[starts[p]..starts[p+1]]`).
    starts: Vec<u32>,
    owners: Vec<TriggerRef>,
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

/// The literal trigger `(s, t)` stands for.
fn literal(skills: &[Skill], (s, t): TriggerRef) -> &str {
    skills[s as usize].triggers.get(t as usize).unwrap_or_default()
}

impl Matcher {
    /// Index every literal trigger by its first word and compile every pattern into one set;
    /// a set that cannot compile is a warning and matching goes on without it.
    pub(crate) fn build(skills: &[Skill], diagnostics: &mut Vec<Diagnostic>) -> Matcher {
        let mut first_words = Vec::new();
        let mut unkeyed = Vec::new();
        for (s, skill) in skills.iter().enumerate() {
            for (t, literal) in skill.triggers.literals().enumerate() {
                let trigger = (s as u32, t as u16);
                match first_word_key(literal) {
                    Some(key) => first_words.push((key, trigger)),
                    None => unkeyed.push(trigger),
                }
            }
        }
        first_words.sort_unstable_by_key(|&(key, _)| key);
        let (regexes, regex_owners) = compile_patterns(skills, diagnostics);
        Matcher {
            first_words,
            unkeyed,
            matched_once: AtomicBool::new(false),
            all: OnceLock::new(),
            regexes,
            regex_owners,
        }
    }
}

/// The key of a literal's first word of a spaced script, once lowercased; `None` without one.
fn first_word_key(literal: &str) -> Option<u64> {
    // Lowercase ASCII is the usual trigger, and needs no copy.
    let lower = if literal.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(literal)
    } else {
        Cow::Owned(literal.to_lowercase())
    };
    // Bound first: the iterator borrows `lower`, which a tail expression would outlive.
    let key = spaced_words(&lower).next().map(word_key);
    key
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
    /// Append every trigger of `skills` (those the matcher was built from) that fires in
    /// `lowercased` to `hits` (unsorted, may repeat).
    pub(crate) fn collect_hits(&self, skills: &[Skill], lowercased: &str, hits: &mut Vec<TriggerRef>) {
        let once = self.matched_once.swap(true, Ordering::Relaxed);
        match once.then(|| self.all(skills)).flatten() {
            Some(all) => all.collect_hits(lowercased, hits),
            None => self.candidate_hits(skills, lowercased, hits),
        }
        if let Some(set) = &self.regexes {
            hits.extend(set.matches(lowercased).iter().map(|i| self.regex_owners[i]));
        }
    }

    /// Every literal trigger compiled together, built on first use.
    fn all(&self, skills: &[Skill]) -> Option<&Literals> {
        self.all
            .get_or_init(|| {
                let triggers = self.first_words.iter().map(|&(_, t)| t).chain(self.unkeyed.iter().copied());
                Literals::build(skills, triggers)
                    .map_err(|e| tracing::warn!("trigger keywords could not be compiled together ({e}); matching each message's candidates instead"))
                    .ok()
            })
            .as_ref()
    }

    /// The literal hits through an automaton over only the literals that can match `text`.
    fn candidate_hits(&self, skills: &[Skill], text: &str, hits: &mut Vec<TriggerRef>) {
        let mut candidates = self.unkeyed.clone();
        for word in spaced_words(text) {
            let key = word_key(word);
            let from = self.first_words.partition_point(|&(k, _)| k < key);
            let same = self.first_words[from..].iter().take_while(|&&(k, _)| k == key);
            candidates.extend(same.map(|&(_, trigger)| trigger));
        }
        if candidates.is_empty() {
            return;
        }
        candidates.sort_unstable();
        candidates.dedup();
        match Literals::build(skills, candidates.into_iter()) {
            Ok(literals) => literals.collect_hits(text, hits),
            Err(e) => tracing::warn!("trigger keywords could not be compiled ({e}); keyword matching is off"),
        }
    }
}

impl Literals {
    /// Lowercase `triggers`' literals and merge equal ones: each distinct literal becomes one
    /// pattern owning all its triggers. Sorting instead of hashing keeps 100,000 triggers to
    /// a few allocations.
    fn build(
        skills: &[Skill],
        triggers: impl Iterator<Item = TriggerRef>,
    ) -> Result<Literals, aho_corasick::BuildError> {
        let mut pairs: Vec<(String, TriggerRef)> =
            triggers.map(|t| (literal(skills, t).to_lowercase(), t)).collect();
        pairs.sort_unstable();
        let mut literals: Vec<String> = Vec::new();
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
            .build(&literals)?;
        Ok(Literals {
            automaton,
            boundaries: literals.iter().map(|l| trigger_boundaries(l)).collect(),
            starts,
            owners,
        })
    }

    /// Every occurrence in `text` that stands as a whole word, as triggers.
    fn collect_hits(&self, text: &str, hits: &mut Vec<TriggerRef>) {
        for m in self.automaton.find_overlapping_iter(text) {
            let p = m.pattern().as_usize();
            if is_whole_word(text, m.start(), m.end(), self.boundaries[p]) {
                let (a, b) = (self.starts[p] as usize, self.starts[p + 1] as usize);
                hits.extend_from_slice(&self.owners[a..b]);
            }
        }
    }
}

/// A word's key in [`Matcher::first_words`].
fn word_key(word: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(word)
}

/// The runs of word characters of spaced scripts in `text`: a message's words, and the words
/// that index a literal.
fn spaced_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !needs_boundary(Some(c)))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn skill(triggers: &[String]) -> Skill {
        Skill {
            name: "s".into(),
            triggers: crate::skill::Triggers {
                keywords: triggers.to_vec(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn sorted(mut hits: Vec<TriggerRef>) -> Vec<TriggerRef> {
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// Text from a few letters, separators, punctuation and a script written without spaces,
    /// so literals start and end every way the boundary rule distinguishes.
    fn text(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec![
                "a", "b", "ab", " ", "-", ".", "+", "_", "日", "本", "é", "1",
            ]),
            1..max,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn the_first_message_finds_what_the_full_automaton_finds(
            skills in proptest::collection::vec(proptest::collection::vec(text(5), 1..4), 1..6),
            message in text(24),
        ) {
            let skills: Vec<Skill> = skills.iter().map(|t| skill(t)).collect();
            let matcher = Matcher::build(&skills, &mut Vec::new());
            let (mut first, mut second) = (Vec::new(), Vec::new());
            matcher.collect_hits(&skills, &message, &mut first);
            matcher.collect_hits(&skills, &message, &mut second);
            prop_assert!(matcher.all.get().is_some_and(Option::is_some), "the second message builds the full automaton");
            prop_assert_eq!(sorted(first), sorted(second));
        }
    }

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
