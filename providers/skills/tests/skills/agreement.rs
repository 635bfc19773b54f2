//! Corpus-wide agreement: on real skills and real text, selection fires exactly the triggers a
//! naive reference finds — every trigger and each of its inflected forms searched at every
//! position of the message, kept where it stands as a whole word, the reference written apart
//! from the matcher. 400 queries on OpenHands' real trigger skills, and 400 on a corpus of
//! skills whose triggers are words and phrases of 650 real skill descriptions, with messages
//! made of those descriptions (real inflections, real infix traps). Skipped with a line on
//! stderr when the corpora kept beside the repository are absent (a failure in CI).

use std::collections::{BTreeMap, BTreeSet};

use ctxkit_skills::inflect::{forms, is_form};
use ctxkit_skills::{Reason, SelectOptions, Skill, SkillIndex, SkillRoot, Source};

use crate::common;

/// SplitMix64: the same queries on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// A letter, digit or `_`.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A word character of a script written with spaces (the corpora's text is Latin, Cyrillic or
/// Han; Han and Japanese kana are written without spaces).
fn needs_boundary(c: char) -> bool {
    word_char(c) && !matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// Whether `needle` occurs in `text` as a whole word, trying every position.
fn occurs(text: &str, needle: &str) -> bool {
    let first = needle.chars().next().is_some_and(needs_boundary);
    let last = needle.chars().next_back().is_some_and(needs_boundary);
    let mut from = 0;
    while let Some(found) = text[from..].find(needle) {
        let i = from + found;
        let before = text[..i].chars().next_back().is_some_and(word_char);
        let after = text[i + needle.len()..].chars().next().is_some_and(word_char);
        if !(first && before || last && after) {
            return true;
        }
        // The next occurrence may overlap this one.
        from = i + text[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The triggers of each skill the reference fires for `message`: a trigger fires when it or
/// one of its forms occurs as a whole word; of listed triggers that are forms of one another
/// ("webhook", "webhooks"), the base counts.
fn reference(index: &SkillIndex, message: &str) -> BTreeMap<String, BTreeSet<String>> {
    let lower = message.to_lowercase();
    let mut out = BTreeMap::new();
    for skill in index.skills() {
        let fired: Vec<String> = skill
            .triggers
            .literals()
            .filter(|t| {
                let t = t.to_lowercase();
                occurs(&lower, &t) || forms(&t).iter().any(|f| occurs(&lower, f))
            })
            .map(str::to_string)
            .collect();
        let kept: BTreeSet<String> = fired
            .iter()
            .filter(|t| {
                !fired
                    .iter()
                    .any(|b| forms(&b.to_lowercase()).contains(&t.to_lowercase()))
            })
            .cloned()
            .collect();
        if !kept.is_empty() {
            out.insert(skill.name.clone(), kept);
        }
    }
    out
}

/// What selection fires by trigger, uncapped, with the ranking's other evidence on (a trigger
/// fires whatever the words and the floor say); and how many of its triggers fired only as a
/// form, each checked: the form is one, it occurs, and the trigger as written does not.
fn selected(index: &SkillIndex, message: &str) -> (BTreeMap<String, BTreeSet<String>>, usize) {
    let options = SelectOptions {
        max_skills: usize::MAX,
        ..SelectOptions::default()
    };
    let lower = message.to_lowercase();
    let mut inflected = 0;
    let mut out = BTreeMap::new();
    for s in index.select(&[message], &[], &options) {
        if s.reason == Reason::Explicit {
            // Named as `/name` (triggers such as "/news-digest:setup" hold names): selected
            // by name, so its triggers are not counted. Compared as such.
            out.insert(s.name, BTreeSet::from(["/name".to_string()]));
            continue;
        }
        if s.reason != Reason::Triggered {
            // Selected by its words: not the triggers' business.
            assert_eq!(s.reason, Reason::Lexical, "{message:?}");
            continue;
        }
        for (trigger, form) in &s.forms {
            let t = trigger.to_lowercase();
            assert!(is_form(&t, form), "{form:?} is no form of {t:?}");
            assert!(
                occurs(&lower, form) && !occurs(&lower, &t),
                "{t:?} as {form:?} in {message:?}"
            );
            inflected += 1;
        }
        out.insert(s.name, s.triggers.into_iter().collect());
    }
    (out, inflected)
}

/// `trigger` as a query would carry it: as written, as one of its forms, or glued into a longer
/// word (which must not fire it), in some letter case.
fn variant(rng: &mut Rng, trigger: &str) -> String {
    let t = trigger.to_lowercase();
    let all = forms(&t);
    let word = match rng.below(10) {
        0..=3 => t,
        4..=7 if !all.is_empty() => rng.pick(&all),
        8 => format!("{}{t}", rng.pick(&["re", "un", "x", "pre"])),
        _ => format!("{t}{}", rng.pick(&["er", "ly", "able", "ish", "s_"])),
    };
    match rng.below(4) {
        0 => word.to_uppercase(),
        1 => {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
        _ => word,
    }
}

/// Run `queries`, assert agreement on each, and return (queries where a skill fired, triggers
/// that fired only as a form).
fn agree(index: &SkillIndex, queries: &[String]) -> (usize, usize) {
    let (mut fired, mut inflected) = (0, 0);
    for query in queries {
        let (got, forms) = selected(index, query);
        let mut expected = reference(index, query);
        for (name, triggers) in &got {
            if triggers.contains("/name") {
                expected.insert(name.clone(), triggers.clone());
            }
        }
        assert_eq!(got, expected, "query: {query:?}");
        fired += usize::from(!got.is_empty());
        inflected += forms;
    }
    (fired, inflected)
}

#[test]
fn openhands_trigger_skills_agree_with_the_reference_on_400_queries() {
    let Some(corpora) = crate::suites::corpora("the corpus agreement test") else {
        return;
    };
    let index = SkillIndex::load(&[SkillRoot::new(
        corpora.join("openhands-extensions"),
        Source::External,
    )]);
    let skills: Vec<&Skill> = index.skills().iter().filter(|s| !s.triggers.is_empty()).collect();
    assert!(skills.len() >= 60, "{} trigger skills", skills.len());
    let descriptions: Vec<&str> = index.skills().iter().map(|s| s.description.as_str()).collect();
    let mut rng = Rng(23);
    let queries: Vec<String> = (0..400)
        .map(|_| {
            let skill = rng.pick(&skills);
            let triggers: Vec<&str> = skill.triggers.literals().collect();
            let mut parts = vec![rng.pick(&descriptions).to_string()];
            for _ in 0..1 + rng.below(3) {
                let glue = rng.pick(&[" ", ", ", " (", "\n", ": ", "'s "]);
                let trigger = rng.pick(&triggers);
                parts.push(format!("{glue}{}", variant(&mut rng, trigger)));
            }
            parts.push(format!(" {}", rng.pick(&descriptions)));
            parts.concat()
        })
        .collect();
    let (fired, inflected) = agree(&index, &queries);
    assert!(fired >= 300, "only {fired} of 400 queries fire a skill");
    assert!(inflected >= 50, "only {inflected} triggers fired as a form");
}

#[test]
fn a_corpus_of_real_words_agrees_with_the_reference_on_400_queries() {
    let Some(corpora) = crate::suites::corpora("the corpus agreement test") else {
        return;
    };
    let real = SkillIndex::load(&[SkillRoot::new(&corpora, Source::External)]);
    let descriptions: Vec<&str> = real.skills().iter().map(|s| s.description.as_str()).collect();
    // Triggers: words of the descriptions, and two-word phrases as they stand there.
    let words: Vec<Vec<&str>> = descriptions
        .iter()
        .map(|d| {
            d.split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| w.len() >= 3)
                .collect()
        })
        .filter(|w: &Vec<&str>| w.len() >= 2)
        .collect();
    let mut rng = Rng(650);
    let skills: Vec<Skill> = (0..300)
        .map(|i| {
            let triggers: BTreeSet<String> = (0..4 + rng.below(5))
                .map(|_| {
                    let sentence = rng.pick(&words);
                    let at = rng.below(sentence.len() - 1);
                    if rng.below(5) == 0 {
                        format!("{} {}", sentence[at], sentence[at + 1])
                    } else {
                        sentence[at].to_string()
                    }
                })
                .collect();
            let list: Vec<String> = triggers.iter().map(|t| format!("{t:?}")).collect();
            common::skill(&format!("s{i:03}"), &format!("[{}]", list.join(", ")), "")
        })
        .collect();
    let index = common::index(skills);
    let all_triggers: Vec<String> = index
        .skills()
        .iter()
        .flat_map(|s| s.triggers.literals().map(str::to_string))
        .collect();
    let queries: Vec<String> = (0..400)
        .map(|_| {
            let mut parts = vec![rng.pick(&descriptions).to_string()];
            for _ in 0..rng.below(3) {
                let trigger = rng.pick(&all_triggers);
                parts.push(format!(" {}", variant(&mut rng, &trigger)));
            }
            parts.concat()
        })
        .collect();
    let (fired, inflected) = agree(&index, &queries);
    assert!(fired >= 300, "only {fired} of 400 queries fire a skill");
    assert!(inflected >= 50, "only {inflected} triggers fired as a form");
}
