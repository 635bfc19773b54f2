//! The automaton path agrees with a naive reference implementation of the same rules.

mod common;

use std::collections::BTreeMap;

use ctxkit_skills::{is_whole_word, trigger_boundaries, SelectOptions, SkillIndex};
use proptest::prelude::*;

const VOCAB: &[&str] = &[
    "hello",
    "hell",
    "othello",
    "c++",
    "c#",
    ".net",
    "docker",
    "docker compose",
    "compose",
    "pod",
    "podcast",
    "sed",
    "used",
    "日本語",
    "語",
    "привет",
    "größe",
    "known_hosts",
    "a",
    "ab",
    "std::vector",
];
const GLUE: &[&str] = &[" ", "", ", ", "-", "_", "!", "\n", "日", "x", "ПРИ", "."];

/// Reference: for each skill, for each trigger, scan every occurrence with `str::match_indices`
/// and apply the whole-word rule; score = distinct triggers; rank by score, priority, name.
fn naive(index: &SkillIndex, message: &str, max: usize) -> Vec<(String, usize)> {
    let lower = message.to_lowercase();
    let mut scored: Vec<(i64, String, usize)> = Vec::new();
    for skill in index.skills() {
        let mut fired = 0;
        for trigger in skill.triggers.literals() {
            let t = trigger.to_lowercase();
            let bounds = trigger_boundaries(&t);
            // match_indices skips overlaps of the same needle; check every start instead.
            let hit = (0..lower.len())
                .filter(|&i| lower.is_char_boundary(i) && lower[i..].starts_with(&t))
                .any(|i| is_whole_word(&lower, i, i + t.len(), bounds));
            fired += usize::from(hit);
        }
        if fired > 0 {
            scored.push((skill.priority, skill.name.clone(), fired));
        }
    }
    scored.sort_by(|a, b| b.2.cmp(&a.2).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)));
    scored.into_iter().take(max).map(|(_, n, s)| (n, s)).collect()
}

fn skills_strategy() -> impl Strategy<Value = Vec<(Vec<usize>, i64)>> {
    prop::collection::vec((prop::collection::vec(0..VOCAB.len(), 1..4), 200i64..203), 1..8)
}

fn message_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec((0..VOCAB.len(), 0..GLUE.len(), any::<bool>()), 0..12).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(w, g, upper)| {
                let w = if upper {
                    VOCAB[w].to_uppercase()
                } else {
                    VOCAB[w].to_string()
                };
                format!("{w}{}", GLUE[g])
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn automaton_agrees_with_reference(skills in skills_strategy(), message in message_strategy(), max in 1usize..5) {
        let mut built = Vec::new();
        for (i, (triggers, priority)) in skills.iter().enumerate() {
            let list: Vec<String> = triggers.iter().map(|&t| format!("'{}'", VOCAB[t])).collect();
            built.push(common::skill(&format!("s{i}"), &format!("[{}]", list.join(", ")), &format!("priority: {priority}\n")));
        }
        let index = common::index(built);
        let options = SelectOptions { max_skills: max, ..Default::default() };
        let fast: Vec<(String, usize)> =
            index.select(&[message.as_str()], &[], &options).into_iter().map(|s| (s.name, s.score)).collect();
        let reference = naive(&index, &message, max);
        prop_assert_eq!(fast, reference, "message {:?}", message);
    }

    /// Selection never panics on arbitrary text and only returns skills whose triggers occur.
    #[test]
    fn arbitrary_messages_are_safe(message in "\\PC{0,200}") {
        let index = common::index(vec![common::skill("s", "[hello, 'c++', 日本語]", "")]);
        let lower = message.to_lowercase();
        for s in index.select(&[message.as_str()], &[], &SelectOptions::default()) {
            let by: BTreeMap<_, _> = s.triggers.iter().map(|t| (t.clone(), lower.contains(t.as_str()))).collect();
            prop_assert!(by.values().all(|&v| v), "{:?}", by);
        }
    }
}
