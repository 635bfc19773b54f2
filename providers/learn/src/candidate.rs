//! What the model is asked, and everything checked about its reply before anything is kept:
//! the reply is untrusted text.

use std::collections::BTreeSet;
use std::path::Path;

use ctxkit::Message;
use ctxkit_secrets::find_secret;
use ctxkit_skills::{Reason, SelectOptions, Skill, SkillIndex, Source};

use crate::trajectory::Trajectory;

/// The most bytes of a reply read; a longer one is dropped unread.
pub(crate) const MAX_REPLY: usize = 16 * 1024;
/// The most existing skills named in the request (the first, by name).
const MAX_LISTED: usize = 200;
/// Description-and-trigger similarity at which a candidate is the same skill as another.
pub(crate) const SAME_SKILL: f64 = 0.80;
/// The same, as the cosine of the two texts' sentence vectors (with a model).
pub(crate) const SAME_MEANING: f32 = 0.80;

const INSTRUCTIONS: &str = "You turn a coding-agent session that succeeded into a reusable skill \
for the same project. Reply with exactly one SKILL.md document and nothing else: YAML frontmatter \
between --- lines with `name` (lowercase letters, digits and hyphens), `description` (one \
sentence: what it does and when to use it) and `triggers` (a list of 2-6 words or short phrases \
a user would type when asking for this task again), then a short procedural Markdown body: the \
steps that worked, the commands and files involved, the pitfall the session hit if any. At most \
40 lines. Never include secrets, tokens, passwords or personal data. If the session holds no \
reusable procedure, or an existing skill already covers it, reply with the single word NONE.";

/// The request: the instructions, then the session and the skills that already exist.
pub(crate) fn request(trajectory: &Trajectory, existing: &[(String, String)]) -> Vec<Message> {
    let mut listed = String::new();
    for (name, description) in existing.iter().take(MAX_LISTED) {
        listed.push_str(&format!("- {name}: {description}\n"));
    }
    if listed.is_empty() {
        listed.push_str("(none)\n");
    }
    vec![
        Message::system(INSTRUCTIONS),
        Message::user(format!(
            "{}\nSkills that already exist:\n{listed}",
            trajectory.describe()
        )),
    ]
}

/// A reply that passed every check: a parsed skill and its text.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub skill: Skill,
    pub text: String,
}

/// Why a reply was not kept, in one sentence that never quotes it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The model said there is nothing to learn.
    Declined,
    /// Anything else; the reason is safe to log.
    Dropped(String),
}

/// Read the model's reply: `NONE`, or one SKILL.md that parses without error, has a plain
/// name, holds no secret, and fires on `task` by its triggers.
pub(crate) fn read_reply(reply: &str, task: &str) -> Result<Candidate, Refusal> {
    let drop = |why: &str| Err(Refusal::Dropped(why.to_string()));
    if reply.len() > MAX_REPLY {
        return drop("the reply is longer than a short skill can be");
    }
    let text = unfence(reply.trim());
    if text.trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace()) == "NONE" {
        return Err(Refusal::Declined);
    }
    if find_secret(text).is_some() {
        return drop("the reply holds what looks like a secret");
    }
    let (skill, diagnostics) = Skill::parse(Path::new("learned/SKILL.md"), text, None);
    let Some(skill) = skill.filter(|_| diagnostics.iter().all(|d| !d.is_error())) else {
        return drop("the reply is not a valid SKILL.md");
    };
    if !ctxkit_memory::LearnedSkill::is_plain_name(&skill.name) {
        return drop("the skill's name is not a plain name (lowercase letters, digits, hyphens)");
    }
    let skill = skill.with_root(Source::Learned, Source::Learned.default_priority());
    let index = SkillIndex::build(vec![skill.clone()], Vec::new());
    let fires = index
        .select(&[task], &[], &SelectOptions::default())
        .iter()
        .any(|s| s.reason == Reason::Triggered);
    if !fires {
        return drop("the skill's triggers do not fire on the task it was learned from");
    }
    Ok(Candidate {
        skill,
        text: format!("{}\n", text.trim_end()),
    })
}

/// The text inside one Markdown code fence around the whole reply, else the reply.
fn unfence(reply: &str) -> &str {
    let Some(rest) = reply.strip_prefix("```") else {
        return reply;
    };
    let Some(body_start) = rest.find('\n') else {
        return reply;
    };
    rest[body_start + 1..]
        .trim_end()
        .strip_suffix("```")
        .unwrap_or(reply)
}

/// What a skill says it is for, as one text: its description, then its triggers.
pub(crate) fn purpose_text<'a>(description: &str, triggers: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = description.to_owned();
    for t in triggers {
        text.push_str("; ");
        text.push_str(t);
    }
    text
}

/// What a skill says it is for, as a set of words: its description's and its triggers'.
pub(crate) fn purpose<'a>(
    description: &str,
    triggers: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    purpose_text(description, triggers)
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_string)
        .collect()
}

/// How alike two skills are by their [`purpose`]s: the cosine of the two word sets.
pub(crate) fn similarity(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    a.intersection(b).count() as f64 / ((a.len() * b.len()) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: release-app\ndescription: Release a new version of the app\ntriggers: [release, tag a version]\n---\n1. `git tag vX.Y`\n2. `make release`\n";

    #[test]
    fn a_good_reply_is_read_and_fenced_ones_too() {
        let c = read_reply(GOOD, "Release version 2.1 of the app").unwrap();
        assert_eq!(c.skill.name, "release-app");
        assert_eq!(c.skill.source, Source::Learned);
        let fenced = format!("```markdown\n{GOOD}```");
        assert!(read_reply(&fenced, "please release it").is_ok());
        assert_eq!(read_reply("NONE", "x").unwrap_err(), Refusal::Declined);
        assert_eq!(read_reply("NONE.", "x").unwrap_err(), Refusal::Declined);
    }

    #[test]
    fn hostile_replies_are_dropped_without_quoting_them() {
        let task = "Release version 2.1 of the app";
        let cases = [
            GOOD.replace("name: release-app", "name: ../../etc/evil"),
            GOOD.replace(
                "2. `make release`",
                "2. export TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            ),
            "---\nname: [unclosed\n---\nbody".to_string(),
            "x".repeat(1 << 20),
            "Sure! Here is what I learned.".to_string(),
            GOOD.replace("triggers: [release, tag a version]", "triggers: [deploy]"),
        ];
        for reply in cases {
            match read_reply(&reply, task) {
                Err(Refusal::Dropped(why)) => {
                    assert!(!why.contains("ghp_") && !why.contains("evil"), "{why}")
                }
                other => panic!("kept: {other:?} for {}", &reply[..reply.len().min(60)]),
            }
        }
    }
}
