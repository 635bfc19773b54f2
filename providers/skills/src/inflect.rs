//! Regular English inflections of a trigger, so authors need not list them: `greet` also fires
//! on "greeted", `dockerfile` on "Dockerfiles", `slow query` on "slow queries".
//!
//! A trigger whose last character is an ASCII letter also matches, each again as a whole word:
//! - `+s`, `+es`, `+ed`, `+ing`, `+'s`, `+’s`;
//! - ending in `e`: `+d`, and `ing` in place of the `e` ("translating");
//! - ending consonant-vowel-consonant (the last letter not `w`, `x` or `y`, the letter before
//!   the vowel a consonant): the last letter doubled, `+ed` / `+ing` ("plotted");
//! - ending consonant + `y`: `ies` / `ied` in place of the `y` ("queries").
//!
//! A multi-word trigger inflects its last word. Other scripts and triggers ending in anything
//! but a letter (`c++`, `404`, `日本語`) have no forms. Whole-word matching still holds, so
//! `git` never fires on "digit" and `plot` never on "plotter", which is not a form.
//!
//! [`forms`] lists a trigger's forms and [`is_form`] says whether a word is one. The matcher
//! goes backward, from a word of a message to the words it may be a form of, so it finds a
//! form's trigger in its table of trigger words without listing every trigger's forms.

const VOWELS: &[u8] = b"aeiou";

/// The suffixes every trigger ending in a letter takes.
const SUFFIXES: [&str; 6] = ["s", "es", "ed", "ing", "'s", "’s"];

fn is_consonant(b: u8) -> bool {
    b.is_ascii_lowercase() && !VOWELS.contains(&b)
}

/// Whether the word ends in a consonant and `y`, which become `ies` / `ied`.
fn ends_consonant_y(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[bytes.len() - 1] == b'y' && is_consonant(bytes[bytes.len() - 2])
}

/// The forms of a lowercased trigger, itself excluded, in a fixed order; none unless it ends
/// with an ASCII letter.
///
/// ```
/// use ctxkit_skills::inflect::forms;
/// assert_eq!(forms("plot"), ["plots", "plotes", "ploted", "ploting", "plot's", "plot’s", "plotted", "plotting"]);
/// assert!(forms("c++").is_empty());
/// ```
pub fn forms(trigger: &str) -> Vec<String> {
    let bytes = trigger.as_bytes();
    let Some(&last) = bytes.last() else {
        return Vec::new();
    };
    if !last.is_ascii_lowercase() {
        return Vec::new();
    }
    let mut out: Vec<String> = SUFFIXES
        .iter()
        .map(|suffix| format!("{trigger}{suffix}"))
        .collect();
    let stem = &trigger[..trigger.len() - 1];
    if last == b'e' {
        out.push(format!("{trigger}d"));
        out.push(format!("{stem}ing"));
    }
    if ends_consonant_vowel_consonant(bytes) {
        let doubled = last as char;
        out.push(format!("{trigger}{doubled}ed"));
        out.push(format!("{trigger}{doubled}ing"));
    }
    if ends_consonant_y(bytes) {
        out.push(format!("{stem}ies"));
        out.push(format!("{stem}ied"));
    }
    out
}

/// Whether `word` is one of the [`forms`] of `base` (both lowercased), without building them.
///
/// ```
/// use ctxkit_skills::inflect::is_form;
/// assert!(is_form("greet", "greeted") && is_form("slow query", "slow queries"));
/// assert!(!is_form("plot", "plotter") && !is_form("git", "digit"));
/// ```
pub fn is_form(base: &str, word: &str) -> bool {
    let bytes = base.as_bytes();
    let Some(&last) = bytes.last() else {
        return false;
    };
    if !last.is_ascii_lowercase() {
        return false;
    }
    if let Some(suffix) = word.strip_prefix(base) {
        if SUFFIXES.contains(&suffix) || (last == b'e' && suffix == "d") {
            return true;
        }
        if ends_consonant_vowel_consonant(bytes) {
            if let Some(rest) = suffix.strip_prefix(last as char) {
                return rest == "ed" || rest == "ing";
            }
        }
        return false;
    }
    let stem = &base[..base.len() - 1];
    let Some(suffix) = word.strip_prefix(stem) else {
        return false;
    };
    (last == b'e' && suffix == "ing") || (ends_consonant_y(bytes) && (suffix == "ies" || suffix == "ied"))
}

/// `stem` without its last letter when that letter is doubled ("plott" → "plot"), else "".
fn undoubled(stem: &str) -> &str {
    let b = stem.as_bytes();
    let doubled = b.len() >= 2 && b[b.len() - 1].is_ascii_lowercase() && b[b.len() - 1] == b[b.len() - 2];
    if doubled {
        &stem[..stem.len() - 1]
    } else {
        ""
    }
}

/// Whether the last three letters are consonant, vowel, consonant other than `w`, `x`, `y`.
fn ends_consonant_vowel_consonant(bytes: &[u8]) -> bool {
    let n = bytes.len();
    n >= 3
        && is_consonant(bytes[n - 3])
        && VOWELS.contains(&bytes[n - 2])
        && is_consonant(bytes[n - 1])
        && !b"wxy".contains(&bytes[n - 1])
}

/// Calls `found` with every word that `word` (lowercased: a word of a message, or a listed
/// trigger) may be a form of
/// (itself excluded, some maybe twice): a superset of the words whose [`forms`] hold it, so a
/// base that is no trigger costs one lookup. `scratch` holds the bases that are not a prefix of
/// `word` ("queries" → "query"), so the words of a message are looked up without allocating.
#[inline]
pub(crate) fn each_base(word: &str, scratch: &mut String, mut found: impl FnMut(&str)) {
    let bytes = word.as_bytes();
    let n = bytes.len();
    // The `k`th byte from the end, and the word without its last `k` bytes (all ASCII when
    // asked for).
    let from_end = |k: usize| if k <= n { bytes[n - k] } else { 0 };
    let stem = |k: usize| &word[..n - k];
    let mut base = |stem: &str| {
        if !stem.is_empty() {
            found(stem);
        }
    };
    let mut with = |stem: &str, last: char, base: &mut dyn FnMut(&str)| {
        scratch.clear();
        scratch.push_str(stem);
        scratch.push(last);
        base(scratch);
    };
    match from_end(1) {
        b's' => {
            base(stem(1));
            match from_end(2) {
                b'\'' => base(stem(2)),
                b'e' => {
                    base(stem(2));
                    if from_end(3) == b'i' {
                        with(stem(3), 'y', &mut base);
                    }
                }
                _ if word.ends_with("’s") => base(stem("’s".len())),
                _ => {}
            }
        }
        b'd' => {
            base(stem(1));
            if from_end(2) == b'e' {
                base(stem(2));
                base(undoubled(stem(2)));
                if from_end(3) == b'i' {
                    with(stem(3), 'y', &mut base);
                }
            }
        }
        b'g' if from_end(2) == b'n' && from_end(3) == b'i' => {
            base(stem(3));
            with(stem(3), 'e', &mut base);
            base(undoubled(stem(3)));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bases(word: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_base(word, &mut String::new(), |b| out.push(b.to_string()));
        out
    }

    fn has(trigger: &str, form: &str) -> bool {
        forms(trigger).iter().any(|f| f == form)
    }

    #[test]
    fn the_rule_by_example() {
        assert!(has("greet", "greeted"));
        assert!(has("dockerfile", "dockerfiles"));
        assert!(has("plot", "plotted"));
        assert!(has("plot", "plotting"));
        assert!(has("slow query", "slow queries"));
        assert!(has("translate", "translating"));
        assert!(has("translate", "translated"));
        assert!(has("webhook", "webhooks"));
        assert!(has("score", "scoring"));
        assert!(has("api", "api's"));
        assert!(has("api", "api’s"));
        assert!(!has("plot", "plotter"));
        assert!(!has("translate", "translator's"));
        assert!(!has("fix", "fixxed"), "x is never doubled");
        assert!(!has("play", "plaies"), "a vowel before y keeps it");
        for unchanged in ["c++", "404", "日本語", "node.js 2", ""] {
            assert!(forms(unchanged).is_empty(), "{unchanged}");
        }
    }

    #[test]
    fn a_message_word_leads_back_to_its_base() {
        for (word, base) in [
            ("greeted", "greet"),
            ("dockerfiles", "dockerfile"),
            ("plotted", "plot"),
            ("queries", "query"),
            ("queried", "query"),
            ("translating", "translate"),
            ("translated", "translate"),
            ("api's", "api"),
        ] {
            assert!(
                bases(word).iter().any(|b| b == base),
                "{word} → {:?}",
                bases(word)
            );
        }
    }

    proptest! {
        /// `is_form` answers what `forms` lists, for forms and for words that only look like
        /// them.
        #[test]
        fn is_form_agrees_with_forms(base in "[a-z]{1,8}( [a-z]{1,5})?", word in "[a-z]{1,12}('s|ies|ied|ing|ed|s)?") {
            let listed = forms(&base);
            for w in listed.iter().chain([&word]) {
                prop_assert_eq!(is_form(&base, w), listed.contains(w), "{} / {}", base, w);
            }
        }

        /// Every form of a one-word trigger leads back to the trigger, so the per-message
        /// candidate lookup finds every trigger a form fires.
        #[test]
        fn every_form_leads_back_to_its_trigger(trigger in "[a-z]{1,12}") {
            for form in forms(&trigger) {
                prop_assert!(bases(&form).contains(&trigger), "{form} does not lead back to {trigger}");
            }
        }
    }
}
