//! Authoring skills: `ctxkit skills new` scaffolds one, `ctxkit skills test` runs the examples
//! skills declare, so a skill's triggers are tested the way code is, and `skills validate`
//! warns about triggers that are common English words.
//!
//! Examples come from the frontmatter (`examples: {fire: [...], silent: [...]}`) or from a
//! `tests.jsonl` beside `SKILL.md`, one `{"text": "...", "fires": true|false}` per line.
//! `skills test` also runs the built-in everyday sentences (`data/everyday.txt`), on which no
//! skill should fire.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use ctxkit_skills::inflect::is_form;
use ctxkit_skills::{Diagnostic, Reason, SelectOptions, Selection, Skill, SkillIndex};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::CliError;
use crate::printable::{printable, printable_line};
use crate::setup::SkillDirs;

#[derive(Args, Debug)]
pub(crate) struct NewArgs {
    /// The skill's name: lowercase letters, digits and hyphens.
    name: String,
    /// What the skill does and when to use it (default: a placeholder to replace).
    #[arg(long)]
    description: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct TestArgs {
    /// Only this skill's examples (repeatable); default: every skill with examples.
    #[arg(long = "skill", value_name = "NAME")]
    skills: Vec<String>,
    /// The most skills sent, as at run time.
    #[arg(long, default_value_t = 3)]
    max_skills: usize,
    /// Count a cross-fire (an example of one skill selecting another) as a failure too.
    #[arg(long)]
    deny_cross_fires: bool,
    /// Count a fire on a built-in everyday sentence as a failure too (by default a warning).
    #[arg(long)]
    deny_everyday_fires: bool,
    /// One JSON object per skill per line.
    #[arg(long)]
    json: bool,
}

/// The longest name `skills new` accepts (the agentskills.io limit).
const MAX_NAME: usize = 64;
/// The largest `tests.jsonl` read.
const MAX_TESTS_BYTES: u64 = 1 << 20;
/// English words, most frequent first: wordfreq's 20,000 most frequent that an English
/// dictionary holds (how it is made: `data/common-words.py`).
const COMMON_WORDS: &str = include_str!("../data/common-words.txt");
/// The most frequent of [`COMMON_WORDS`] count as stop words: a phrase of nothing else is as
/// common as a single common word.
const STOP_WORDS: usize = 100;
/// Everyday sentences no skill should fire on, written for ctxkit.
const EVERYDAY: &str = include_str!("../data/everyday.txt");

/// Create `NAME/SKILL.md` in the first `--dir` (default `skills/`), refusing to overwrite.
pub(crate) fn new(args: &NewArgs, dirs: &SkillDirs, out: &mut impl Write) -> Result<(), CliError> {
    let name = &args.name;
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        return Err(CliError::new(format!(
            "`{}` is not a skill name: use 1-{MAX_NAME} lowercase letters, digits and single hyphens",
            printable_line(name)
        )));
    }
    let parent = dirs
        .dirs
        .first()
        .map_or_else(|| PathBuf::from("skills"), |d| d.path.clone());
    let folder = parent.join(name);
    let file = folder.join("SKILL.md");
    if file.exists() {
        return Err(CliError::new(format!("`{}` already exists", file.display())));
    }
    let description = args
        .description
        .clone()
        .unwrap_or_else(|| format!("TODO: say what {name} does and when to use it, in one line"));
    let (text, tests) = template(name, &description);
    // The template must load as it will be read and follow the agentskills.io specification;
    // a description that breaks either is the user's to fix, before anything is written.
    let (parsed, mut diagnostics) = Skill::parse(&file, &text, Some(name));
    diagnostics.extend(Skill::check_spec(&file, &text));
    if parsed.is_none() || diagnostics.iter().any(|d| d.is_error()) {
        let why: Vec<String> = diagnostics.iter().map(|d| d.to_string()).collect();
        return Err(CliError::new(format!(
            "the skill would not load or would not follow the specification: {}",
            printable_line(&why.join("; "))
        )));
    }
    std::fs::create_dir_all(&folder)
        .map_err(|e| CliError::caused_by(format!("cannot create `{}`: {e}", folder.display()), e))?;
    for (path, content) in [(file.clone(), text), (folder.join("tests.jsonl"), tests)] {
        std::fs::write(&path, content)
            .map_err(|e| CliError::caused_by(format!("cannot write `{}`: {e}", path.display()), e))?;
    }
    writeln!(out, "created {}", printable_line(&file.display().to_string()))?;
    Ok(())
}

/// A new skill's `SKILL.md`, to the letter of the agentskills.io specification (its triggers
/// under `metadata`, which ctxkit reads), and its `tests.jsonl` examples.
fn template(name: &str, description: &str) -> (String, String) {
    let trigger = name.replace('-', " ");
    let skill = format!(
        "---\nname: {name}\ndescription: {}\nmetadata:\n  triggers: {}\n---\n\n# {name}\n\nWhat the agent should do when this skill applies: the steps, the conventions, the\npitfalls. Keep it short; the triggers above decide when it is sent.\n",
        serde_json::to_string(description).unwrap_or_default(),
        serde_json::to_string(&trigger).unwrap_or_default(),
    );
    let tests = [
        (format!("help me with {trigger}"), true),
        ("what is 2+2?".into(), false),
    ]
    .iter()
    .map(|(text, fires)| format!("{}\n", json!({"text": text, "fires": fires})))
    .collect();
    (skill, tests)
}

/// One example: the text, and whether the skill should fire on it.
struct Example {
    text: String,
    fires: bool,
}

#[derive(Deserialize)]
struct Line {
    text: String,
    fires: bool,
}

/// What one skill's examples and the everyday sentences gave.
#[derive(Default)]
struct Outcome {
    hits: usize,
    misses: Vec<String>,
    /// (example, what fired the skill: `Selection::fired`)
    false_fires: Vec<(String, Vec<String>)>,
    /// (example, the other skill it fired, what fired that one)
    cross_fires: Vec<(String, String, Vec<String>)>,
    /// (everyday sentence, what fired the skill)
    everyday_fires: Vec<(String, Vec<String>)>,
    /// Examples that could not be read.
    problems: Vec<String>,
}

/// Run every declared example, and the built-in everyday sentences, against the index and
/// report per skill; an error (exit 1) when any example missed or fired falsely (or
/// cross-fired, with `--deny-cross-fires`; or an everyday sentence fired a skill, with
/// `--deny-everyday-fires`), or could not be read. A skill without examples is reported only
/// when an everyday sentence fires it.
pub(crate) fn test(index: &SkillIndex, args: &TestArgs, out: &mut impl Write) -> Result<(), CliError> {
    for name in &args.skills {
        if index.get(name).is_none() {
            return Err(CliError::new(format!(
                "no skill is named `{}`",
                printable_line(name)
            )));
        }
    }
    let options = SelectOptions {
        max_skills: args.max_skills,
        ..SelectOptions::default()
    };
    // Examples and everyday sentences are selected for alike, as a message is at run time.
    let select = |text: &str| index.select(&[text], &[], &options);
    let everyday: Vec<(&str, Vec<Selection>)> = entries(EVERYDAY).map(|t| (t, select(t))).collect();
    let (mut tested, mut failed, mut warned) = (0, 0, 0);
    for skill in index.ranked() {
        if !args.skills.is_empty() && !args.skills.iter().any(|n| n.eq_ignore_ascii_case(&skill.name)) {
            continue;
        }
        let (examples, problems) = examples(skill);
        // `always` skills fire on everything: not a false fire worth a word.
        let everyday_fires: Vec<(String, Vec<String>)> = everyday
            .iter()
            .filter_map(|(text, selected)| {
                selected
                    .iter()
                    .find(|s| s.name == skill.name && s.reason != Reason::Always)
                    .map(|s| (text.to_string(), s.fired()))
            })
            .collect();
        let has_examples = !examples.is_empty() || !problems.is_empty();
        if !has_examples && everyday_fires.is_empty() {
            continue;
        }
        tested += usize::from(has_examples);
        warned += usize::from(!everyday_fires.is_empty());
        let mut outcome = Outcome {
            problems,
            everyday_fires,
            ..Outcome::default()
        };
        for example in examples {
            let selected = select(&example.text);
            let own = selected.iter().find(|s| s.name == skill.name);
            match (example.fires, own) {
                (true, Some(_)) | (false, None) => outcome.hits += 1,
                (true, None) => outcome.misses.push(example.text.clone()),
                (false, Some(own)) => outcome.false_fires.push((example.text.clone(), own.fired())),
            }
            for other in selected
                .iter()
                .filter(|s| s.name != skill.name && s.reason != Reason::Always)
            {
                outcome
                    .cross_fires
                    .push((example.text.clone(), other.name.clone(), other.fired()));
            }
        }
        let fails = !outcome.misses.is_empty()
            || !outcome.false_fires.is_empty()
            || !outcome.problems.is_empty()
            || (args.deny_cross_fires && !outcome.cross_fires.is_empty())
            || (args.deny_everyday_fires && !outcome.everyday_fires.is_empty());
        failed += usize::from(fails);
        report(&skill.name, &outcome, fails, args.json, out)?;
    }
    if !args.json {
        writeln!(
            out,
            "{tested} skills tested, {failed} failed; {warned} fire on everyday sentences ({} built in)",
            everyday.len()
        )?;
    }
    if failed > 0 {
        return Err(CliError::quiet(format!("{failed} skills failed their tests")));
    }
    Ok(())
}

fn report(name: &str, o: &Outcome, fails: bool, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let fired = |fires: &[(String, Vec<String>)]| -> Vec<Value> {
        fires
            .iter()
            .map(|(t, fired)| json!({"text": t, "triggers": fired}))
            .collect()
    };
    if json {
        let cross: Vec<Value> = o
            .cross_fires
            .iter()
            .map(|(t, s, fired)| json!({"text": t, "fires": s, "triggers": fired}))
            .collect();
        let v = json!({
            "skill": name, "ok": !fails, "hits": o.hits, "misses": o.misses,
            "false_fires": fired(&o.false_fires), "cross_fires": cross,
            "everyday_fires": fired(&o.everyday_fires), "problems": o.problems,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    let status = if fails {
        "FAIL"
    } else if o.everyday_fires.is_empty() {
        "ok  "
    } else {
        "warn"
    };
    writeln!(
        out,
        "{status} {}: {} hits, {} misses, {} false fires, {} cross-fires, {} everyday fires",
        printable_line(name),
        o.hits,
        o.misses.len(),
        o.false_fires.len(),
        o.cross_fires.len(),
        o.everyday_fires.len()
    )?;
    // An example is quoted with `{:?}`, which shows a line break as `\n`.
    for text in &o.misses {
        writeln!(out, "  miss: {:?} should fire it and does not", printable(text))?;
    }
    for (text, fired) in &o.false_fires {
        writeln!(
            out,
            "  false fire: {:?} should not fire it and does{}",
            printable(text),
            by_triggers(fired)
        )?;
    }
    for (text, other, fired) in &o.cross_fires {
        writeln!(
            out,
            "  cross-fire: {:?} also fires `{}`{}",
            printable(text),
            printable_line(other),
            by_triggers(fired)
        )?;
    }
    for (text, fired) in &o.everyday_fires {
        writeln!(
            out,
            "  false fire on an everyday sentence: {:?} fires it{}",
            printable(text),
            by_triggers(fired)
        )?;
    }
    for problem in &o.problems {
        writeln!(out, "  problem: {}", printable_line(problem))?;
    }
    Ok(())
}

/// " (triggers: greet (as greeted))", or nothing for a skill not selected by its triggers.
fn by_triggers(fired: &[String]) -> String {
    if fired.is_empty() {
        String::new()
    } else {
        format!(" (triggers: {})", printable_line(&fired.join(", ")))
    }
}

/// A skill's examples: its frontmatter's, then its `tests.jsonl`'s; and what could not be read.
fn examples(skill: &Skill) -> (Vec<Example>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    if let Some(examples) = skill.extra.get("examples") {
        for (key, fires) in [("fire", true), ("silent", false)] {
            match examples.get(key) {
                None => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        match item.as_str() {
                            Some(text) => found.push(Example {
                                text: text.to_string(),
                                fires,
                            }),
                            None => problems.push(format!("`examples.{key}` holds a value that is not text")),
                        }
                    }
                }
                Some(_) => problems.push(format!("`examples.{key}` must be a list of texts")),
            }
        }
    }
    let file = skill.path.with_file_name("tests.jsonl");
    if skill.path.file_name().is_some_and(|n| n == "SKILL.md") {
        match read_tests(&file) {
            Ok(Some(text)) => {
                for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                    match serde_json::from_str::<Line>(line) {
                        Ok(l) => found.push(Example {
                            text: l.text,
                            fires: l.fires,
                        }),
                        Err(e) => problems.push(format!("tests.jsonl line {}: {e}", n + 1)),
                    }
                }
            }
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
    }
    (found, problems)
}

/// `tests.jsonl` when it is a regular file (a link is not followed: it could lead anywhere)
/// under the size cap; `None` when there is none.
fn read_tests(file: &Path) -> Result<Option<String>, String> {
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err("tests.jsonl is not a regular file (links are not followed); skipped".into());
    }
    let mut text = String::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_TESTS_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| format!("cannot read tests.jsonl: {e}"))?;
    if text.len() as u64 > MAX_TESTS_BYTES {
        return Err(format!(
            "tests.jsonl is larger than {} KiB; skipped",
            MAX_TESTS_BYTES >> 10
        ));
    }
    Ok(Some(text))
}

/// The lines of a built-in list, without its `#` comments.
fn entries(list: &'static str) -> impl Iterator<Item = &'static str> {
    list.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
}

/// The common English words, each with its rank (0 the most frequent).
struct CommonWords(HashMap<&'static str, usize>);

impl CommonWords {
    fn new() -> Self {
        CommonWords(entries(COMMON_WORDS).enumerate().map(|(i, w)| (w, i)).collect())
    }

    /// Why the words of a lowercased trigger fire on everyday sentences: a single common
    /// word, or a phrase of stop words only; `None` when they do not.
    fn why(&self, words: &[&str]) -> Option<&'static str> {
        match words {
            [word] if self.0.contains_key(word) => Some("is a common English word"),
            [_, _, ..]
                if words
                    .iter()
                    .all(|w| self.0.get(w).is_some_and(|&r| r < STOP_WORDS)) =>
            {
                Some("is made of common English words only")
            }
            _ => None,
        }
    }
}

/// A warning for each trigger that fires on everyday sentences ([`CommonWords::why`]). The
/// message quotes a built-in everyday sentence it fires on, when one has it, and proposes a
/// phrase.
pub(crate) fn common_word_triggers(index: &SkillIndex) -> Vec<Diagnostic> {
    let common = CommonWords::new();
    let mut found = Vec::new();
    for skill in index.skills() {
        for trigger in skill.triggers.literals() {
            let lower = trigger.to_lowercase();
            let words: Vec<&str> = lower.split_whitespace().collect();
            let Some(what) = common.why(&words) else {
                continue;
            };
            let example = entries(EVERYDAY).find(|s| holds(s, &words)).map_or_else(
                || "everyday sentences".to_string(),
                |s| format!("everyday sentences such as {s:?}"),
            );
            found.push(Diagnostic::warning(
                &skill.path,
                None,
                format!(
                    "trigger `{trigger}` {what}: it fires on {example}, which are not about `{}`; use a phrase ({}) instead",
                    skill.name,
                    phrase(&skill.name, &lower)
                ),
            ));
        }
    }
    found
}

/// Whether `sentence` holds the words of a trigger, each as itself or an inflected form.
fn holds(sentence: &str, trigger: &[&str]) -> bool {
    let lower = sentence.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(trigger.len()).any(|w| {
        w.iter()
            .zip(trigger)
            .all(|(word, t)| word == t || is_form(t, word))
    })
}

/// A phrase to propose for `trigger`: the skill's name when it holds the trigger
/// (`azure devops`), else the name's first word before the trigger (`jira ticket`,
/// `docker container`); the trigger and a word of the skill's subject when the name is the
/// trigger.
fn phrase(name: &str, trigger: &str) -> String {
    let name = name.to_lowercase().replace(['-', '_'], " ");
    let first = name.split_whitespace().next().unwrap_or_default();
    if name == trigger {
        format!("`{trigger} …` with a word only the skill's subject uses")
    } else if name.split_whitespace().any(|w| w == trigger) {
        format!("`{name}`")
    } else {
        format!("`{first} {trigger}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_loads_for_any_description() {
        for description in ["Plain", "has: a colon", "quotes \" and ' and #", "- dash"] {
            let (text, tests) = template("my-skill", description);
            let path = Path::new("s/my-skill/SKILL.md");
            let (parsed, diags) = Skill::parse(path, &text, Some("my-skill"));
            let skill = parsed.unwrap_or_else(|| panic!("{description}: {diags:?}"));
            assert_eq!(skill.description, description);
            assert!(diags.is_empty(), "{diags:?}");
            assert_eq!(Skill::check_spec(path, &text), []);
            assert_eq!(skill.triggers.keywords, ["my skill"]);
            let lines: Vec<Line> = tests.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(lines.iter().map(|l| l.fires).collect::<Vec<_>>(), [true, false]);
        }
    }

    #[test]
    fn common_words_flag_everyday_triggers_and_spare_distinctive_ones() {
        let common = CommonWords::new();
        let why = |t: &str| common.why(&t.split_whitespace().collect::<Vec<_>>());
        for t in [
            "ticket",
            "linear",
            "container",
            "azure",
            "test",
            "security",
            "notion",
            "how to",
        ] {
            assert!(why(t).is_some(), "{t} should be flagged");
        }
        // Not English words, web words no dictionary holds, and phrases of rarer words.
        for t in [
            "kubernetes",
            "dockerfile",
            "pytest",
            "terraform",
            "api",
            "sql",
            "git",
            "docker",
            "jira ticket",
            "issue tracking",
            "plain english",
        ] {
            assert_eq!(why(t), None, "{t} should not be flagged");
        }
    }

    #[test]
    fn the_built_in_lists_are_lowercase_words_and_distinct_sentences() {
        let words: Vec<&str> = entries(COMMON_WORDS).collect();
        assert!(
            words.len() > 10_000 && words[..3] == ["the", "to", "and"],
            "{:?}",
            &words[..3]
        );
        assert!(words
            .iter()
            .all(|w| !w.contains(char::is_whitespace) && *w == w.to_lowercase()));
        assert_eq!(CommonWords::new().0.len(), words.len(), "every word once");
        let sentences: Vec<&str> = entries(EVERYDAY).collect();
        let distinct: std::collections::HashSet<&str> = sentences.iter().copied().collect();
        assert!(sentences.len() >= 100 && distinct.len() == sentences.len());
    }

    #[test]
    fn the_proposed_phrase_names_the_skill() {
        assert_eq!(phrase("jira", "ticket"), "`jira ticket`");
        assert_eq!(phrase("docker-compose", "container"), "`docker container`");
        assert_eq!(phrase("azure-devops", "azure"), "`azure devops`");
        assert!(phrase("linear", "linear").starts_with("`linear …`"));
        assert!(holds("We bought new Tickets.", &["ticket"]) && !holds("the ticker stopped", &["ticket"]));
    }
}
