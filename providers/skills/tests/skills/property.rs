//! Selection on arbitrary text: it never panics and only reports triggers that occur.
//! (Agreement with a naive reference is a unit test of `select.rs`, and `agreement.rs` on the
//! corpora.)

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
}
