//! When a new memory replaces an older one: the contradiction rules, apart from the store that
//! applies them.
//!
//! A newer statement supersedes an older one of the same project when
//! - it names it (the extraction model's `supersedes`, [`NewMemoryEntry::supersedes`](crate::types::NewMemoryEntry));
//! - it says so: "… instead of X", "no longer X", "not X anymore", "switched from X" — the older
//!   memory holds every term of X and is either of the same category and at least
//!   [`EXPLICIT_SAME_CATEGORY_SIMILARITY`] similar, or at least [`EXPLICIT_SIMILARITY`] similar;
//! - or it is about the same thing and claims something else: the same category, a TF-IDF
//!   cosine of at least [`SUPERSEDE_SIMILARITY`] (below the 0.85 at which an upsert merges),
//!   and each has a term the other lacks ("Deploys run on Fridays" after "Deploys run on
//!   Mondays").
//!
//! The old memory is kept with a link to its successor: nothing is lost, and undo restores it.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::text::{term_set, terms};

/// Same category and at least this similar, with a different claim: superseded.
pub(crate) const SUPERSEDE_SIMILARITY: f32 = 0.6;
/// An explicit replacement ("instead of X") of another category needs this similarity.
pub(crate) const EXPLICIT_SIMILARITY: f32 = 0.5;
/// An explicit replacement of the same category needs this similarity: holding the replaced
/// words is not enough when the rest is about something else ("Release notes are no longer
/// written by hand" does not replace "… a hand-written container on iOS", which shares only
/// those two words).
pub(crate) const EXPLICIT_SAME_CATEGORY_SIMILARITY: f32 = 0.25;
/// How many similar memories are examined per new memory.
pub(crate) const CANDIDATES: usize = 8;

/// What an explicit replacement says is replaced ("X" in "use bun instead of X"), as terms;
/// `None` when the content says nothing of the kind.
pub(crate) fn replaced_terms(content: &str) -> Option<BTreeSet<String>> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:instead\s+of|rather\s+than|in\s+place\s+of|no\s+longer(?:\s+use)?|switched\s+(?:away\s+)?from|moved\s+(?:away\s+)?from|migrated\s+(?:away\s+)?from|replaced)\s+(?P<x>[^,.;:!?]{1,60})|\bnot\s+(?P<y>[^,.;:!?]{1,60}?)\s+any\s*more\b",
        )
        .expect("the replacement pattern is valid")
    });
    let caps = re.captures(content)?;
    let phrase = caps.name("x").or_else(|| caps.name("y"))?.as_str();
    // The object is the first few words: "instead of pnpm for installs" replaces pnpm.
    let words: Vec<String> = terms(phrase).into_iter().take(2).collect();
    let set: BTreeSet<String> = words.into_iter().collect();
    (!set.is_empty()).then_some(set)
}

/// The lowest similarity at which a memory of this content may supersede another by one of the
/// rules above: below it, an older memory need not even be looked at.
pub(crate) fn similarity_floor(content: &str) -> f32 {
    if replaced_terms(content).is_some() {
        EXPLICIT_SAME_CATEGORY_SIMILARITY.min(EXPLICIT_SIMILARITY)
    } else {
        SUPERSEDE_SIMILARITY
    }
}

/// The one category a new memory's supersession candidates can have, when only one can: an
/// implicit contradiction needs the same category, an explicit replacement may cross them.
pub(crate) fn candidate_category(
    content: &str,
    category: crate::types::MemoryCategory,
) -> Option<crate::types::MemoryCategory> {
    replaced_terms(content).is_none().then_some(category)
}

/// Whether the older content holds every replaced term.
pub(crate) fn names_replaced(old_content: &str, replaced: &BTreeSet<String>) -> bool {
    let old = term_set(old_content);
    replaced.iter().all(|t| old.contains(t))
}

/// Whether a category holds one current statement per subject (so a similar newer one
/// replaces an older one): preferences and conventions.
pub(crate) fn single_valued(category: crate::types::MemoryCategory) -> bool {
    matches!(
        category,
        crate::types::MemoryCategory::Preference | crate::types::MemoryCategory::Convention
    )
}

/// Whether two statements on one subject claim different things: each has a term the other
/// lacks (one only adding detail is not a contradiction).
pub(crate) fn claims_differ(new_content: &str, old_content: &str) -> bool {
    let (a, b) = (term_set(new_content), term_set(old_content));
    a.difference(&b).next().is_some() && b.difference(&a).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> Option<BTreeSet<String>> {
        Some(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn explicit_replacements() {
        assert_eq!(replaced_terms("Use bun instead of pnpm"), set(&["pnpm"]));
        assert_eq!(
            replaced_terms("We no longer use Jest, tests run on Vitest"),
            set(&["jest"])
        );
        assert_eq!(
            replaced_terms("We do not deploy on Fridays anymore"),
            set(&["deploy", "friday"])
        );
        assert_eq!(
            replaced_terms("Switched from MySQL, now on Postgres"),
            set(&["mysql"])
        );
        assert_eq!(replaced_terms("Always use pnpm"), None);
    }

    #[test]
    fn differing_claims() {
        assert!(claims_differ("Deploys run on Fridays", "Deploys run on Mondays"));
        assert!(!claims_differ(
            "Deploys run on Mondays at noon",
            "Deploys run on Mondays"
        ));
        assert!(names_replaced(
            "Always use pnpm, not npm",
            &set(&["pnpm"]).unwrap()
        ));
    }
}
