//! The agentskills.io specification to the letter, for `skills validate --spec`: what the
//! lenient loader warns about or accepts (a bad name, no frontmatter, a `metadata` value that
//! is not a string, a `compatibility` over 500 characters, a field the specification does not
//! define), each an error with its fix. Loading is unchanged: ctxkit still reads such skills.

use std::path::Path;

use serde_yaml::{Mapping, Value as Yaml};

use super::foreign::{valid_name, MAX_NAME};
use super::{bounds, load_yaml, over_bounds, split_frontmatter, yaml_scalar, Loaded};
use crate::diagnostic::Diagnostic;
use crate::skill::Skill;

/// The top-level fields the specification defines.
const SPEC_FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];
/// Fields ctxkit also reads under `metadata`, so moving them there keeps their effect.
const READ_IN_METADATA: &[&str] = &["triggers", "when_to_use", "when_not_to_use"];
/// Fields ctxkit reads only at the top level.
const CTXKIT_FIELDS: &[&str] = &[
    "tags",
    "priority",
    "user-invocable",
    "inject_into",
    "inject-into",
    "disable-model-invocation",
    "always",
    "detect",
    "hooks",
];
const MAX_DESCRIPTION: usize = 1024;
const MAX_COMPATIBILITY: usize = 500;
/// Longest value quoted in a fix.
const MAX_QUOTED: usize = 80;

impl Skill {
    /// Check a `SKILL.md`'s text against the agentskills.io specification, to the letter: every
    /// problem is an error that says how to fix it. `path` names the file, and its folder is
    /// the one `name` must match. Parsing is bounded as loading is.
    pub fn check_spec(path: &Path, content: &str) -> Vec<Diagnostic> {
        let folder = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let mut found = Vec::new();
        let mut error =
            |line: Option<usize>, message: String| found.push(Diagnostic::error(path, line, message));
        let (frontmatter, _) = split_frontmatter(content);
        let Some(frontmatter) = frontmatter else {
            let message = if content.trim_start().starts_with("---") {
                "the frontmatter opened on line 1 is never closed; add a `---` line after it".into()
            } else {
                format!("the specification requires YAML frontmatter; start the file with `---`, `name: {}`, `description: …`, `---`", clip(folder))
            };
            error(Some(1), message);
            return found;
        };
        let lines = bounds::LineIndex::new(frontmatter);
        if let Some((line, why)) = over_bounds(frontmatter, &lines) {
            error(Some(line), format!("{why}; shorten it"));
            return found;
        }
        let keys = lines.top_level_keys(frontmatter);
        let line_of = |key: &str| keys.get(key).map(|i| i + 2);
        let map = match load_yaml(frontmatter) {
            Ok(Yaml::Mapping(map)) => map,
            Ok(Yaml::Null) => Mapping::new(),
            Ok(_) => {
                error(
                    Some(2),
                    "the frontmatter must be a mapping of `key: value` lines".into(),
                );
                return found;
            }
            Err(Loaded::TooManyNodes) => {
                error(
                    Some(2),
                    "the frontmatter's YAML aliases expand too far; write the values out".into(),
                );
                return found;
            }
            Err(Loaded::Yaml(e)) => {
                let reason = e.to_string();
                let reason = reason.split(" at line").next().unwrap_or(&reason).to_string();
                let line = e.location().map(|l| l.line() + 1);
                error(line, format!("the frontmatter is not valid YAML ({reason}); quote a value that holds `: ` or starts with `*`, `&`, `!`, `[` or `{{`"));
                return found;
            }
        };
        let get = |key: &str| map.get(key);
        match get("name") {
            None => error(None, format!("`name` is required; add `name: {}`", clip(folder))),
            Some(Yaml::String(name)) => {
                for problem in name_problems(name, folder) {
                    error(line_of("name"), problem);
                }
            }
            Some(_) => error(line_of("name"), "`name` must be a string".into()),
        }
        match get("description") {
            Some(Yaml::String(d)) if !d.trim().is_empty() => {
                let n = d.chars().count();
                if n > MAX_DESCRIPTION {
                    error(line_of("description"), format!("`description` is {n} characters, more than {MAX_DESCRIPTION}; shorten it"));
                }
            }
            Some(Yaml::String(_)) | None => error(
                line_of("description").or(Some(1)),
                "`description` is required and must not be empty; say in one line what the skill does and when to use it".into(),
            ),
            Some(_) => error(line_of("description"), "`description` must be a string".into()),
        }
        match get("compatibility") {
            None => {}
            Some(Yaml::String(c)) => {
                let n = c.chars().count();
                if n == 0 || n > MAX_COMPATIBILITY {
                    error(line_of("compatibility"), format!("`compatibility` is {n} characters; it must be 1 to {MAX_COMPATIBILITY} (leave it out when the skill needs nothing special)"));
                }
            }
            Some(other) => error(
                line_of("compatibility"),
                format!(
                    "`compatibility` must be a string; write `compatibility: \"{}\"`",
                    as_text(other)
                ),
            ),
        }
        match get("license") {
            None | Some(Yaml::String(_)) => {}
            Some(other) => error(
                line_of("license"),
                format!(
                    "`license` must be a string; write `license: \"{}\"`",
                    as_text(other)
                ),
            ),
        }
        match get("allowed-tools") {
            None | Some(Yaml::String(_)) => {}
            Some(Yaml::Sequence(items)) if items.iter().all(|i| matches!(i, Yaml::String(_))) => {}
            Some(_) => error(
                line_of("allowed-tools"),
                "`allowed-tools` must be a space-separated string or a list of strings".into(),
            ),
        }
        match get("metadata") {
            None => {}
            Some(Yaml::Mapping(m)) => {
                for (k, v) in m {
                    let key = yaml_scalar(k).unwrap_or_default();
                    if !matches!(k, Yaml::String(_)) {
                        error(
                            line_of("metadata"),
                            format!("`metadata` key `{}` must be a string; quote it", clip(&key)),
                        );
                    }
                    if !matches!(v, Yaml::String(_)) {
                        error(line_of("metadata"), format!("`metadata.{0}` must be a string, as every `metadata` value; write `{0}: \"{1}\"`", clip(&key), as_text(v)));
                    }
                }
            }
            Some(_) => error(
                line_of("metadata"),
                "`metadata` must be a mapping of string keys to string values".into(),
            ),
        }
        for (k, v) in &map {
            let key = yaml_scalar(k).unwrap_or_default();
            if SPEC_FIELDS.contains(&key.as_str()) {
                continue;
            }
            error(line_of(&key), unknown_field(&key, v));
        }
        found
    }
}

/// What is wrong with a `name` by the specification, each with its fix.
fn name_problems(name: &str, folder: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let chars = name.chars().count();
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if chars == 0 || chars > MAX_NAME {
        problems.push(format!(
            "`name` is {chars} characters; it must be 1 to {MAX_NAME}"
        ));
    }
    if !valid_chars || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        let fixed = valid_name(name);
        let fix = if fixed.is_empty() {
            String::new()
        } else {
            format!(" (e.g. `{fixed}`)")
        };
        problems.push(format!(
            "`name` `{}` may hold only lowercase letters a-z, digits and single hyphens, none at either end{fix}",
            clip(name)
        ));
    }
    if name != folder {
        problems.push(format!(
            "`name` `{}` must match its folder `{}`; rename one",
            clip(name),
            clip(folder)
        ));
    }
    problems
}

/// The error for a top-level field the specification does not define, with the way to keep it.
fn unknown_field(key: &str, value: &Yaml) -> String {
    let key = clip(key);
    let outside = format!("`{key}` is not a field of the specification (only name, description, license, compatibility, metadata and allowed-tools are)");
    if READ_IN_METADATA.contains(&key.as_str()) {
        format!(
            "{outside}; write `metadata: {{{key}: \"{}\"}}`, which ctxkit reads the same way",
            as_text(value)
        )
    } else if key == "examples" {
        format!("{outside}; move the examples into a `tests.jsonl` beside SKILL.md (one `{{\"text\": …, \"fires\": true}}` per line), which `ctxkit skills test` reads the same way")
    } else if CTXKIT_FIELDS.contains(&key.as_str()) {
        format!("{outside}; ctxkit reads `{key}` only here, so drop it from a skill meant for every agent or keep the skill ctxkit's")
    } else {
        format!(
            "{outside}; move it under `metadata` as a string: `metadata: {{{key}: \"{}\"}}`",
            as_text(value)
        )
    }
}

/// A value as the one string `metadata` could hold: a scalar as written, a list's items (or
/// `triggers`' keywords and verbs) joined with `, `.
fn as_text(value: &Yaml) -> String {
    let items: Vec<String> = match value {
        Yaml::Sequence(items) => items.iter().filter_map(yaml_scalar).collect(),
        Yaml::Mapping(m) => ["keywords", "verbs"]
            .iter()
            .filter_map(|k| m.get(*k))
            .filter_map(|v| v.as_sequence())
            .flatten()
            .filter_map(yaml_scalar)
            .collect(),
        other => yaml_scalar(other).into_iter().collect(),
    };
    if items.is_empty() {
        return "…".into();
    }
    clip(&items.join(", ")).replace('"', "\\\"")
}

/// `text` cut to [`MAX_QUOTED`] characters.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Vec<String> {
        Skill::check_spec(Path::new("skills/my-skill/SKILL.md"), text)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn a_skill_to_the_letter_passes_and_each_rule_is_an_error_with_its_fix() {
        let good = "---\nname: my-skill\ndescription: Does one thing.\nlicense: MIT\ncompatibility: Needs git\nmetadata:\n  triggers: \"deploy, rollback\"\nallowed-tools: Read Bash\n---\nBody.\n";
        assert_eq!(check(good), Vec::<String>::new());
        let bad = format!(
            "---\nname: My_Skill\ndescription: {}\ncompatibility: {}\nmetadata:\n  version: 1.0\n  tags: [a, b]\ntriggers: [deploy, rollback]\nowner: me\n---\n",
            "d".repeat(1025),
            "c".repeat(501)
        );
        let found = check(&bad);
        let expect = [
            "(e.g. `my-skill`)",
            "must match its folder `my-skill`",
            "1025 characters, more than 1024",
            "it must be 1 to 500",
            "`metadata.version` must be a string, as every `metadata` value; write `version: \"1.0\"`",
            "write `tags: \"a, b\"`",
            "write `metadata: {triggers: \"deploy, rollback\"}`, which ctxkit reads the same way",
            "move it under `metadata` as a string: `metadata: {owner: \"me\"}`",
        ];
        assert_eq!(found.len(), expect.len(), "{found:#?}");
        for (message, part) in found.iter().zip(expect) {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
        assert!(check("# Title\nno frontmatter\n")[0].contains("requires YAML frontmatter"));
        assert!(check("---\nname: my-skill\ndescription: Use when: x\n---\n")[0].contains("not valid YAML"));
        assert!(check("---\nname: my-skill\n---\n")[0].contains("`description` is required"));
    }
}
