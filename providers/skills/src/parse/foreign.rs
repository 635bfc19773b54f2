//! Instruction files other agents keep, read as skills: their frontmatter is said in
//! `SKILL.md`'s words, so one parser, one selection and one detection serve every format.
//!
//! - A Cursor rule (`.cursor/rules/*.mdc`): `alwaysApply: true` is `always`, `globs` (a list
//!   or a comma-separated string) is `detect.globs`, `description` is the description.
//! - A Copilot path file (`.github/instructions/*.instructions.md`): `applyTo` (a
//!   comma-separated string) is `detect.globs`; `.github/copilot-instructions.md` is `always`.
//! - With none of these a file is only ever applied by hand (Cursor's `@rule`, Copilot's
//!   attached file): it is selected by `$name` alone.
//!
//! The name is the file's, made a valid skill name; a `name` the file declares (a Copilot
//! display name) is kept under `metadata.title`.

use std::path::Path;

use serde_yaml::{Mapping, Value as Yaml};

use super::{first_line, yaml_scalar, Parser};
use crate::skill::{Format, Skill};

/// Longest skill name (agentskills.io).
pub(super) const MAX_NAME: usize = 64;

/// A valid skill name from a rule's file name: `React Hooks.mdc` -> `react-hooks`,
/// `api.instructions.md` -> `api`, `copilot-instructions.md` -> `copilot-instructions`.
pub(super) fn rule_name(path: &Path) -> String {
    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = [".mdc", ".instructions.md", ".md"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))
        .unwrap_or(file);
    let name = valid_name(stem);
    if name.is_empty() {
        "rule".into()
    } else {
        name
    }
}

/// `text` as a valid skill name: lowercase ASCII letters and digits, every other run of
/// characters one hyphen, none at either end, at most 64 characters (empty when nothing is
/// left).
pub(super) fn valid_name(text: &str) -> String {
    let mut name = String::new();
    for c in text.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    name.truncate(MAX_NAME);
    name.trim_end_matches('-').to_string()
}

/// Quote the value of a top-level `globs:` or `applyTo:` line written bare: Cursor documents
/// `globs: **/*.ts, src/*.tsx` unquoted, which YAML reads as an alias (`*`) and rejects. A
/// trailing ` # comment` stays a comment.
pub(super) fn quote_globs(frontmatter: &str) -> String {
    let mut out = String::with_capacity(frontmatter.len() + 8);
    for line in frontmatter.lines() {
        let bare = ["globs:", "applyTo:"].iter().find_map(|key| {
            let value = line.strip_prefix(key)?;
            let value = value.split(" #").next().unwrap_or(value).trim();
            let quoted = value.is_empty() || value.starts_with(['"', '\'', '[']);
            (!quoted).then(|| {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                format!("{key} \"{escaped}\"")
            })
        });
        out.push_str(bare.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The activation a file's location implies once its fields are read:
/// `.github/copilot-instructions.md` applies to every request, and a Cursor or Copilot file
/// that declares no way to apply it is applied by hand only.
/// `described`: the file declared a description (Cursor's "agent requested" rule).
pub(super) fn activate(format: Format, path: &Path, described: bool, mut skill: Skill) -> Skill {
    let repo_wide = path.file_name().is_some_and(|n| n == "copilot-instructions.md");
    match format {
        Format::Copilot if repo_wide => skill.always = true,
        Format::Cursor | Format::Copilot => {
            if !skill.always && skill.detect.is_none() && !described {
                skill.disable_model_invocation = true;
            }
        }
        Format::Skill | Format::Convention => {}
    }
    skill
}

impl Parser<'_> {
    /// A Cursor or Copilot frontmatter in `SKILL.md`'s words, and whether it declared a
    /// description. `name` is `default_name`; an absent description is the body's first line.
    pub(super) fn translate(
        &mut self,
        format: Format,
        map: Mapping,
        default_name: &str,
        body: &str,
    ) -> (Mapping, bool) {
        let mut out = Mapping::new();
        let mut title = None;
        let globs_key = if format == Format::Cursor {
            "globs"
        } else {
            "applyTo"
        };
        for (key, value) in map {
            let key = yaml_scalar(&key).unwrap_or_default();
            match key.as_str() {
                k if k == globs_key => {
                    if let Some(line) = self.keys.get(globs_key).copied() {
                        self.keys.insert("detect", line);
                    }
                    if !value.is_null() {
                        let mut detect = Mapping::new();
                        detect.insert("globs".into(), value);
                        out.insert("detect".into(), Yaml::Mapping(detect));
                    }
                }
                "alwaysApply" if format == Format::Cursor => {
                    out.insert("always".into(), value);
                }
                "description" => {
                    if yaml_scalar(&value).is_some_and(|d| !d.trim().is_empty()) {
                        out.insert("description".into(), value);
                    }
                }
                "name" => title = Some(value),
                _ => {
                    out.insert(key.into(), value);
                }
            }
        }
        if let Some(title) = title {
            let metadata = out
                .entry("metadata".into())
                .or_insert_with(|| Mapping::new().into());
            if let Yaml::Mapping(metadata) = metadata {
                metadata.insert("title".into(), title);
            }
        }
        out.insert("name".into(), default_name.into());
        let described = out.contains_key("description");
        if !described {
            if let Some(first) = first_line(body) {
                out.insert("description".into(), first.into());
            }
        }
        (out, described)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_valid_skill_names() {
        for (file, name) in [
            ("x/.cursor/rules/React Hooks.mdc", "react-hooks"),
            ("x/.cursor/rules/001_core.mdc", "001-core"),
            (".github/instructions/api.instructions.md", "api"),
            (".github/copilot-instructions.md", "copilot-instructions"),
            (".cursor/rules/--.mdc", "rule"),
        ] {
            assert_eq!(rule_name(Path::new(file)), name);
        }
        assert_eq!(
            rule_name(Path::new(&format!("{}.mdc", "a".repeat(99)))).len(),
            MAX_NAME
        );
    }

    #[test]
    fn a_copilot_display_name_is_kept_as_the_title_beside_its_metadata() {
        let text = "---\nname: API rules\napplyTo: \"**/*.py\"\nmetadata:\n  owner: web\n---\nBody.\n";
        let path = Path::new("p/.github/instructions/api.instructions.md");
        let (skill, diags) = Skill::parse(path, text, None);
        let skill = skill.unwrap_or_else(|| panic!("{diags:?}"));
        assert_eq!(skill.name, "api");
        assert_eq!(skill.metadata["title"], "API rules");
        assert_eq!(skill.metadata["owner"], "web");
    }

    #[test]
    fn bare_globs_are_quoted_and_quoted_ones_kept() {
        assert_eq!(
            quote_globs("globs: **/*.ts, *.tsx # ts\nalwaysApply: false"),
            "globs: \"**/*.ts, *.tsx\"\nalwaysApply: false\n"
        );
        assert_eq!(
            quote_globs("globs: [\"*.ts\"]\nglobs:"),
            "globs: [\"*.ts\"]\nglobs:\n"
        );
    }
}
