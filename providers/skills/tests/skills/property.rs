//! Selection on arbitrary text: it never panics and only reports triggers that occur; on
//! messages built from the triggers, their near misses and noise, a trigger standing as a
//! whole word always selects its skill. (Agreement with a naive reference is a unit test of
//! `select.rs`, and `agreement.rs` on the corpora.)

use crate::common;

use std::collections::BTreeMap;

use ctxkit_skills::SelectOptions;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

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

    /// A trigger standing as a whole word selects its skill, whatever surrounds it.
    #[test]
    fn a_trigger_as_a_whole_word_always_selects(message in built_message()) {
        let index = common::index(vec![common::skill("s", "[hello, 'c++', 日本語]", "")]);
        let selected = !index.select(&[message.as_str()], &[], &SelectOptions::default()).is_empty();
        let lower = message.to_lowercase();
        let expected = ["hello", "c++", "日本語"].iter().any(|t| stands_alone(&lower, t));
        if expected {
            prop_assert!(selected, "{:?} holds a trigger as a whole word", message);
        }
    }
}

/// Messages made of the triggers, their near misses and noise, glued or spaced.
fn built_message() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("hello".to_string()),
        Just("HeLLo".to_string()),
        Just("c++".to_string()),
        Just("日本語".to_string()),
        Just("hellothere".to_string()),
        Just("c+".to_string()),
        Just("日本".to_string()),
        "[a-zA-Z0-9_ ,.!+日Пé-]{0,6}",
    ];
    prop::collection::vec(part, 0..10).prop_map(|parts| parts.concat())
}

/// The whole-word rule, written apart from the crate's: an end of the trigger that is a
/// letter, digit or `_` of a script written with spaces (`日` is not) must not touch a letter,
/// digit or `_` of any script. (Over the alphabet of [`built_message`].)
fn stands_alone(text: &str, trigger: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let spaced = |c: char| word(c) && !matches!(c, '日' | '本' | '語');
    let first = trigger.chars().next().is_some_and(spaced);
    let last = trigger.chars().next_back().is_some_and(spaced);
    text.char_indices().any(|(i, _)| {
        let rest = &text[i..];
        rest.starts_with(trigger)
            && !(first && text[..i].chars().next_back().is_some_and(word))
            && !(last && rest[trigger.len()..].chars().next().is_some_and(word))
    })
}
