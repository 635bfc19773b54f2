//! Explicit memory commands in user messages: the user says in so many words what to
//! remember, forget or recall.
//!
//! - Create: "remember that …", "remember: …", "note that …", "always …", "never …",
//!   "from now on …";
//! - Delete: "forget that …", "forget about …", "stop remembering …", "delete memory about …";
//! - Query: "what do you remember about …", "what are my preferences …".
//!
//! A command must open the message (after a "please", "ok" or "hey"); a question is never a
//! create command ("Always use tabs?"), and idioms are not commands ("never mind",
//! "forget it", "do you remember that?"). Created memories get importance 0.95.

use std::sync::OnceLock;

use regex::Regex;

use crate::types::MemoryCategory;

/// Importance of a memory the user asked for explicitly.
pub(crate) const EXPLICIT_IMPORTANCE: f32 = 0.95;

/// A memory operation the user asked for in so many words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MemoryCommand {
    /// Store this (with importance [`EXPLICIT_IMPORTANCE`]).
    Remember {
        content: String,
        category: MemoryCategory,
    },
    /// Delete what matches this.
    Forget { query: String },
    /// Show what is remembered about this (an empty query means everything, best first).
    Query {
        query: String,
        category: Option<MemoryCategory>,
    },
}

struct Patterns {
    lead: Regex,
    remember: Regex,
    always_never: Regex,
    from_now_on: Regex,
    forget: Regex,
    query: Regex,
    preferences: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("memory command patterns are valid");
        Patterns {
            lead: re(r"(?i)^(?:(?:please|pls|ok(?:ay)?|hey|also|and|so|btw|by the way)\b[\s,!.:;-]*)+"),
            remember: re(
                r"(?i)^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:remember|note)(?:\s+this|\s+for later|\s+for the future)?(?:\s+that\b|\s*:)\s*(?P<c>.+)$",
            ),
            always_never: re(r"(?i)^(?P<c>(?:always|never)\s+\S+.*)$"),
            from_now_on: re(r"(?i)^(?:from now on|going forward|in (?:the )?future)\s*[,:]?\s+(?P<c>.+)$"),
            forget: re(
                r"(?i)^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:forget(?:\s+(?:that|about|what i said about|everything about))|stop remembering(?:\s+that|\s+about)?|(?:delete|remove|erase|drop|clear)\s+(?:the\s+|any\s+|all\s+|your\s+)?(?:memory|memories)\s+(?:about|of|that|on|regarding|for))\s+(?P<q>.+)$",
            ),
            query: re(
                r"(?i)^what\s+(?:do|did)\s+you\s+(?:remember|know|recall)(?:\s+(?:about|of|regarding|on)\s+(?P<q>.+?))?\s*[?.!]*$",
            ),
            preferences: re(
                r"(?i)^what\s+(?:are|were)\s+my\s+(?:preferences|prefs)(?:\s+(?:about|for|on|regarding|with)\s+(?P<q>.+?))?\s*[?.!]*$",
            ),
        }
    })
}

/// Every word a command, or the polite lead before one, can open with: a message opening
/// with another word is no command, and the patterns are not even compiled (a one-shot
/// process pays for them on every prompt otherwise).
const FIRST_WORDS: [&str; 29] = [
    "also", "always", "and", "btw", "by", "can", "clear", "could", "delete", "drop", "erase", "forget",
    "from", "going", "hey", "in", "never", "note", "ok", "okay", "please", "pls", "remember", "remove", "so",
    "stop", "what", "will", "would",
];

/// Whether `line` opens with one of [`FIRST_WORDS`], compared as the patterns' `(?i)` does:
/// ASCII letters in either case, and the two other letters that fold to one (`ſ`, the Kelvin
/// sign).
fn may_be_command(line: &str) -> bool {
    let fold = |c: char| match c {
        'ſ' => 's',
        '\u{212A}' => 'k',
        c => c.to_ascii_lowercase(),
    };
    let word: String = line
        .chars()
        .take_while(|c| c.is_alphabetic())
        .take(9)
        .map(fold)
        .collect();
    FIRST_WORDS.contains(&word.as_str())
}

/// Detect an explicit memory command; `None` when the message is not one.
pub(crate) fn detect_memory_command(user_message: &str) -> Option<MemoryCommand> {
    // Only the first line counts; the rest of a message is the request itself.
    let line = user_message.trim().lines().next()?.trim();
    if !may_be_command(line) {
        return None;
    }
    by_patterns(line)
}

/// The command the patterns find in the message's first `line`.
fn by_patterns(line: &str) -> Option<MemoryCommand> {
    let p = patterns();
    let line = p.lead.replace(line, "");
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    if let Some(c) = p.preferences.captures(line) {
        let query = c.name("q").map_or("", |m| m.as_str()).trim().to_string();
        return Some(MemoryCommand::Query {
            query,
            category: Some(MemoryCategory::Preference),
        });
    }
    if let Some(c) = p.query.captures(line) {
        let query = c.name("q").map_or("", |m| m.as_str()).trim().to_string();
        return Some(MemoryCommand::Query {
            query,
            category: None,
        });
    }
    if let Some(c) = p.forget.captures(line) {
        let query = clean(c.name("q")?.as_str());
        let idiom = matches!(
            query.to_lowercase().as_str(),
            "it" | "this" | "that" | "them" | "everything" | "about it"
        );
        return (!query.is_empty() && !idiom).then_some(MemoryCommand::Forget { query });
    }
    if line.ends_with('?') {
        return None;
    }
    let content = if let Some(c) = p.remember.captures(line) {
        clean(c.name("c")?.as_str())
    } else if let Some(c) = p.from_now_on.captures(line) {
        clean(c.name("c")?.as_str())
    } else if let Some(c) = p.always_never.captures(line) {
        let c = clean(c.name("c")?.as_str());
        let lower = c.to_lowercase();
        let idioms = [
            "never mind",
            "never again",
            "never ever mind",
            "always the same",
            "never heard",
        ];
        if idioms.iter().any(|i| lower.starts_with(i)) || c.split_whitespace().count() < 2 {
            return None;
        }
        c
    } else {
        return None;
    };
    if content.split_whitespace().count() == 0
        || matches!(content.to_lowercase().as_str(), "it" | "this" | "that")
    {
        return None;
    }
    let category = classify(&content);
    Some(MemoryCommand::Remember { content, category })
}

/// Trim, drop trailing sentence punctuation and capitalise the first letter.
fn clean(text: &str) -> String {
    let t = text.trim().trim_end_matches(['.', '!', ';', ',']).trim();
    let mut chars = t.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The category of an explicit memory: a prohibition is a correction, an instruction or a
/// stated preference is a preference, anything else a fact. How the content starts decides
/// first ("Always use pnpm, never npm" is a preference), then what it contains.
fn classify(content: &str) -> MemoryCategory {
    static RE: OnceLock<[Regex; 4]> = OnceLock::new();
    let [starts_no, starts_pref, has_no, has_pref] = RE.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("classification patterns are valid");
        [
            re(r"(?i)^(?:never|don'?t|do not|avoid|stop)\b"),
            re(r"(?i)^(?:always|prefer|use|i (?:prefer|like|want|use)|we (?:prefer|use|like))\b"),
            re(r"(?i)\b(?:never|don'?t|do not|avoid)\b"),
            re(r"(?i)\b(?:always|prefers?|preferred|instead of|rather than)\b"),
        ]
    });
    if starts_no.is_match(content) {
        MemoryCategory::Correction
    } else if starts_pref.is_match(content) {
        MemoryCategory::Preference
    } else if has_no.is_match(content) {
        MemoryCategory::Correction
    } else if has_pref.is_match(content) {
        MemoryCategory::Preference
    } else {
        MemoryCategory::Fact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first-word check never turns away what the patterns take: every first word (in
    /// either case, folded forms too) before every opening the patterns know, and
    /// near-misses that must still reach them.
    #[test]
    fn the_first_word_check_never_hides_a_command() {
        let openings = [
            "remember that tests need Docker",
            "remember: tests need Docker",
            "note that tests need Docker",
            "always use pnpm for packages",
            "never push to main directly",
            "from now on, use pnpm",
            "going forward: use pnpm",
            "in future, use pnpm",
            "forget about the staging server",
            "stop remembering the staging server",
            "delete memories about the staging server",
            "what do you remember about staging?",
            "what are my preferences?",
            "could you remember that tests need Docker",
        ];
        let mut leads: Vec<String> = FIRST_WORDS.iter().map(|w| format!("{w} ")).collect();
        leads.extend([
            "".into(),
            "by the way, ".into(),
            "OK, ".into(),
            "ſo ".into(),
            "o\u{212A}, ".into(),
        ]);
        let mut commands = 0;
        for lead in &leads {
            for opening in openings {
                for line in [
                    format!("{lead}{opening}"),
                    format!("{lead}{opening}").to_uppercase(),
                ] {
                    if by_patterns(&line).is_some() {
                        commands += 1;
                        assert!(may_be_command(&line), "{line:?} is a command");
                    }
                }
            }
        }
        assert!(commands > 300, "only {commands} lines were commands");
        for line in [
            "how do we deploy?",
            "remembering things is hard",
            "notes: none",
            "whatever",
        ] {
            assert!(!may_be_command(line) && by_patterns(line).is_none(), "{line}");
        }
    }

    #[test]
    fn a_command_opens_the_message() {
        assert_eq!(
            detect_memory_command("Please remember that the API lives in src/api"),
            Some(MemoryCommand::Remember {
                content: "The API lives in src/api".into(),
                category: MemoryCategory::Fact
            })
        );
        assert_eq!(detect_memory_command("I always forget the syntax"), None);
    }

    fn remember(content: &str, category: MemoryCategory) -> Option<MemoryCommand> {
        Some(MemoryCommand::Remember {
            content: content.into(),
            category,
        })
    }

    #[test]
    fn create_commands() {
        use MemoryCategory::*;
        let cases = [
            (
                "remember that we deploy on Fridays.",
                remember("We deploy on Fridays", Fact),
            ),
            (
                "Remember: tests live in tests/",
                remember("Tests live in tests/", Fact),
            ),
            (
                "please remember this: use pnpm, not npm",
                remember("Use pnpm, not npm", Preference),
            ),
            ("Can you remember that I prefer tabs?", None),
            (
                "could you remember that I prefer tabs",
                remember("I prefer tabs", Preference),
            ),
            (
                "note that the CI runs on Linux only",
                remember("The CI runs on Linux only", Fact),
            ),
            ("Always use pnpm", remember("Always use pnpm", Preference)),
            (
                "never commit directly to main!",
                remember("Never commit directly to main", Correction),
            ),
            (
                "OK, never use unwrap in library code",
                remember("Never use unwrap in library code", Correction),
            ),
            (
                "From now on, answer in French",
                remember("Answer in French", Fact),
            ),
            (
                "remember that don't push on Fridays",
                remember("Don't push on Fridays", Correction),
            ),
            (
                "remember that we always use pnpm, never npm",
                remember("We always use pnpm, never npm", Correction),
            ),
            (
                "Always use pnpm, never npm",
                remember("Always use pnpm, never npm", Preference),
            ),
            (
                "note that the team prefers rebase",
                remember("The team prefers rebase", Preference),
            ),
        ];
        for (msg, want) in cases {
            assert_eq!(detect_memory_command(msg), want, "{msg:?}");
        }
    }

    #[test]
    fn not_commands() {
        for msg in [
            "",
            "What is 2+2?",
            "I always forget the syntax of let-else",
            "Do you remember that bug from yesterday?",
            "I don't remember where the config is",
            "Never mind, let's move on",
            "Always?",
            "Always use tabs?",
            "never",
            "Forget it.",
            "forget about it",
            "Don't forget to run the tests",
            "Remember when we fixed the parser",
            "Can you note the time",
            "Please fix the build; remember that it needs nightly",
            "The note that I left in the README",
            "What do you think about pnpm?",
        ] {
            assert_eq!(detect_memory_command(msg), None, "{msg:?}");
        }
    }

    #[test]
    fn forget_commands() {
        for (msg, query) in [
            ("forget that we use npm", "We use npm"),
            ("Please forget about the staging server.", "The staging server"),
            ("stop remembering my editor preference", "My editor preference"),
            ("delete memory about deploy days", "Deploy days"),
            ("Delete the memories about pnpm", "Pnpm"),
            ("forget what I said about tabs", "Tabs"),
        ] {
            assert_eq!(
                detect_memory_command(msg),
                Some(MemoryCommand::Forget { query: query.into() }),
                "{msg:?}"
            );
        }
    }

    #[test]
    fn query_commands() {
        let q = |query: &str, category| {
            Some(MemoryCommand::Query {
                query: query.into(),
                category,
            })
        };
        assert_eq!(
            detect_memory_command("What do you remember about the deploy process?"),
            q("the deploy process", None)
        );
        assert_eq!(
            detect_memory_command("what do you know about pnpm"),
            q("pnpm", None)
        );
        assert_eq!(detect_memory_command("What do you remember?"), q("", None));
        assert_eq!(
            detect_memory_command("what are my preferences?"),
            q("", Some(MemoryCategory::Preference))
        );
        assert_eq!(
            detect_memory_command("What are my preferences for formatting?"),
            q("formatting", Some(MemoryCategory::Preference))
        );
    }
}
