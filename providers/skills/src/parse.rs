//! SKILL.md and convention-file parsing, lenient as the agentskills.io client guide asks:
//! a skill is skipped only when its YAML cannot be read or it has no description; every
//! other problem is a warning, and nothing is dropped silently.

use std::path::Path;

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use crate::diagnostic::Diagnostic;
use crate::index::{sha256_hex, skill_id};
use crate::skill::{Detect, Skill, Source, Triggers};

/// Files that are skills without frontmatter: name = file stem, description = first heading.
pub const CONVENTION_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    "AGENT.md",
    "SKILLS.md",
    "COPILOT.md",
    "GEMINI.md",
];

/// Split `content` into frontmatter and body exactly as seed 002's `strip_skill_frontmatter`:
/// after the opening `---`, the frontmatter runs to the first `\n---`; the body is what follows
/// that line, trimmed. Without a closing `---` there is no frontmatter and the content is the
/// body unchanged. Only a file that starts with `---` has frontmatter.
pub fn split_frontmatter(content: &str) -> (Option<&str>, &str) {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let Some(rest) = content.strip_prefix("---") else {
        return (None, content);
    };
    let Some(close) = rest.find("\n---") else {
        return (None, content);
    };
    let frontmatter = rest[..close].strip_prefix(['\r', '\n']).unwrap_or(&rest[..close]);
    let frontmatter = frontmatter.strip_prefix('\n').unwrap_or(frontmatter);
    let after = &rest[close + 4..];
    let body = after.split_once('\n').map_or("", |(_, body)| body);
    (Some(frontmatter), body.trim())
}

/// The body of a skill file: [`split_frontmatter`]'s second half.
pub fn strip_frontmatter(content: &str) -> &str {
    split_frontmatter(content).1
}

/// Parse one skill file. `folder` is the name of the folder holding a `SKILL.md` (the name
/// rules compare against it). Returns the skill (or `None` when it must be skipped) and every
/// problem found. The skill counts as a project skill until [`Skill::with_root`] says where it
/// was found.
pub fn parse_skill(path: &Path, content: &str, folder: Option<&str>) -> (Option<Skill>, Vec<Diagnostic>) {
    let mut p = Parser {
        path,
        diags: Vec::new(),
        frontmatter: "",
    };
    let skill = p.parse(content, folder).map(|mut skill| {
        skill.hash = sha256_hex(content);
        skill.id = skill_id(&skill.name, &skill.hash);
        skill.path = path.to_path_buf();
        skill.with_root(Source::Project, Source::Project.default_priority())
    });
    (skill, p.diags)
}

struct Parser<'a> {
    path: &'a Path,
    diags: Vec<Diagnostic>,
    frontmatter: &'a str,
}

impl<'a> Parser<'a> {
    fn warn(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.diags.push(Diagnostic::warning(self.path, line, message));
    }

    fn fail<T>(&mut self, line: Option<usize>, message: impl Into<String>) -> Option<T> {
        self.diags.push(Diagnostic::error(self.path, line, message));
        None
    }

    /// The file line of a top-level frontmatter key (the frontmatter starts on line 2).
    fn line_of(&self, key: &str) -> Option<usize> {
        self.frontmatter
            .lines()
            .position(|l| {
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
            })
            .map(|i| i + 2)
    }

    fn parse(&mut self, content: &'a str, folder: Option<&str>) -> Option<Skill> {
        let stem = self.path.file_stem().and_then(|s| s.to_str()).unwrap_or("skill");
        let is_convention = CONVENTION_FILES
            .iter()
            .any(|c| self.path.file_name().is_some_and(|n| n == *c));
        let default_name = folder.filter(|_| !is_convention).unwrap_or(stem).to_string();
        let (frontmatter, body) = split_frontmatter(content);
        let Some(frontmatter) = frontmatter else {
            if content.trim_start().starts_with("---") {
                self.warn(Some(1), "the frontmatter opened on line 1 is never closed with `---`; reading the file as plain Markdown");
            } else if !is_convention {
                self.warn(
                    None,
                    "no YAML frontmatter; using the folder name and the first heading",
                );
            }
            return self.plain(default_name, content);
        };
        self.frontmatter = frontmatter;
        let map = self.yaml(frontmatter)?;
        self.fields(map, default_name, folder.filter(|_| !is_convention), body)
    }

    /// A file without frontmatter: name from the file, description from the first heading.
    fn plain(&mut self, name: String, content: &str) -> Option<Skill> {
        let first = content.lines().map(str::trim).find(|l| !l.is_empty());
        let Some(first) = first else {
            return self.fail(
                None,
                "the file is empty; a skill needs at least a heading that describes it",
            );
        };
        let description = first.trim_start_matches('#').trim().to_string();
        Some(Skill {
            name,
            description,
            body: content.trim().to_string(),
            ..Default::default()
        })
    }

    /// Parse the frontmatter, retrying once with unquoted `key: value: more` values quoted.
    fn yaml(&mut self, frontmatter: &str) -> Option<serde_yaml::Mapping> {
        let parsed = match serde_yaml::from_str::<Yaml>(frontmatter) {
            Ok(v) => v,
            Err(first) => match serde_yaml::from_str::<Yaml>(&quote_colon_values(frontmatter)) {
                Ok(v) => {
                    let line = first.location().map(|l| l.line() + 1);
                    self.warn(line, "a value contains an unquoted `: `; read it as a quoted string (quote it to silence this)");
                    v
                }
                Err(_) => {
                    let line = first.location().map(|l| l.line() + 1);
                    let reason = first.to_string();
                    let reason = reason.split(" at line").next().unwrap_or(&reason).to_string();
                    return self.fail(
                        line,
                        format!("the YAML frontmatter cannot be parsed ({reason}); the skill is skipped"),
                    );
                }
            },
        };
        match parsed {
            Yaml::Mapping(m) => Some(m),
            Yaml::Null => Some(serde_yaml::Mapping::new()),
            _ => self.fail(
                Some(2),
                "the frontmatter is not a mapping of `key: value` lines; the skill is skipped",
            ),
        }
    }

    fn fields(
        &mut self,
        map: serde_yaml::Mapping,
        default_name: String,
        folder: Option<&str>,
        body: &str,
    ) -> Option<Skill> {
        let mut skill = Skill {
            body: body.to_string(),
            ..Default::default()
        };
        let mut name = None;
        let mut description = None;
        let mut metadata_triggers = None;
        for (key, value) in map {
            let key = match key {
                Yaml::String(s) => s,
                other => yaml_scalar(&other).unwrap_or_default(),
            };
            let line = self.line_of(&key);
            match key.as_str() {
                "name" => name = self.string(&key, value, line),
                "description" => description = self.string(&key, value, line),
                "triggers" => {
                    let t = self.triggers(value, line);
                    merge_triggers(&mut skill.triggers, t);
                }
                "tags" => skill.tags = self.list(&key, value, line),
                "priority" => match &value {
                    Yaml::Number(n) if n.as_i64().is_some() => skill.declared_priority = n.as_i64(),
                    _ => self.warn(
                        line,
                        "`priority` must be an integer; using the priority of the skill's root",
                    ),
                },
                "version" => skill.version = self.string(&key, value, line),
                "license" => skill.license = self.string(&key, value, line),
                "compatibility" => skill.compatibility = self.string(&key, value, line),
                "allowed-tools" => skill.allowed_tools = self.list(&key, value, line),
                "user-invocable" => skill.user_invocable = self.flag(&key, value, line),
                "disable-model-invocation" => skill.disable_model_invocation = self.flag(&key, value, line),
                "always" => skill.always = self.flag(&key, value, line),
                "detect" => skill.detect = self.detect(value, line),
                "hooks" => skill.hooks = Some(yaml_to_json(value)),
                "metadata" => {
                    let Yaml::Mapping(m) = value else {
                        self.warn(line, "`metadata` must be a mapping; ignored");
                        continue;
                    };
                    for (k, v) in m {
                        let k = yaml_scalar(&k).unwrap_or_default();
                        if k == "triggers" {
                            metadata_triggers = Some(v.clone());
                        }
                        skill.metadata.insert(k, yaml_to_json(v));
                    }
                }
                _ => {
                    skill.extra.insert(key, yaml_to_json(value));
                }
            }
        }
        if let Some(v) = metadata_triggers {
            let line = self.line_of("metadata");
            let t = self.triggers(v, line);
            merge_triggers(&mut skill.triggers, t);
        }
        skill.name = match name.filter(|n| !n.trim().is_empty()) {
            Some(n) => n.trim().to_string(),
            None => {
                self.warn(
                    None,
                    format!("no `name`; using `{default_name}` from the file's location"),
                );
                default_name
            }
        };
        self.check_name(&skill.name, folder);
        match description.map(|d| d.trim().to_string()).filter(|d| !d.is_empty()) {
            Some(d) => {
                if d.chars().count() > 1024 {
                    self.warn(self.line_of("description"), "`description` is longer than 1024 characters; catalogs will show all of it");
                }
                skill.description = d;
            }
            None => {
                return self.fail(
                    self.line_of("description").or(Some(1)),
                    "no `description`; add one line saying what the skill does and when to use it (the skill is skipped)",
                )
            }
        }
        if skill.disable_model_invocation && !skill.triggers.is_empty() {
            self.warn(self.line_of("triggers"), "`disable-model-invocation` is set, so the triggers never fire; the skill is selected only by `$name` or `/name`");
        }
        Some(skill)
    }

    /// The agentskills.io name rules, as warnings.
    fn check_name(&mut self, name: &str, folder: Option<&str>) {
        let line = self.line_of("name");
        let valid_chars = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_chars
            || name.len() > 64
            || name.starts_with('-')
            || name.ends_with('-')
            || name.contains("--")
        {
            self.warn(line, format!("name `{name}` should be 1-64 lowercase letters, digits and single hyphens (e.g. `my-skill`)"));
        }
        if let Some(folder) = folder {
            if folder != name {
                self.warn(
                    line,
                    format!("name `{name}` does not match its folder `{folder}`; rename one so they agree"),
                );
            }
        }
    }

    fn string(&mut self, key: &str, value: Yaml, line: Option<usize>) -> Option<String> {
        let s = yaml_scalar(&value);
        if s.is_none() && !value.is_null() {
            self.warn(
                line,
                format!("`{key}` must be a single value, not a list or mapping; ignored"),
            );
        }
        s
    }

    fn flag(&mut self, key: &str, value: Yaml, line: Option<usize>) -> bool {
        match value {
            Yaml::Bool(b) => b,
            Yaml::String(s) if s.eq_ignore_ascii_case("true") => true,
            Yaml::String(s) if s.eq_ignore_ascii_case("false") => false,
            _ => {
                self.warn(line, format!("`{key}` must be true or false; read as false"));
                false
            }
        }
    }

    /// A list of strings, or one comma-separated string.
    fn list(&mut self, key: &str, value: Yaml, line: Option<usize>) -> Vec<String> {
        match value {
            Yaml::Null => Vec::new(),
            Yaml::Sequence(items) => items
                .into_iter()
                .filter_map(|item| {
                    let s = yaml_scalar(&item);
                    if s.is_none() {
                        self.warn(line, format!("an item of `{key}` is not a plain value; ignored"));
                    }
                    s
                })
                .collect(),
            other => match yaml_scalar(&other) {
                Some(s) => s
                    .split([',', ' '])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                None => {
                    self.warn(line, format!("`{key}` must be a list; ignored"));
                    Vec::new()
                }
            },
        }
    }

    /// `triggers` as a list, `{keywords, verbs, patterns}` or a comma-separated string.
    fn triggers(&mut self, value: Yaml, line: Option<usize>) -> Triggers {
        let mut t = Triggers::default();
        match value {
            Yaml::Mapping(m) => {
                for (k, v) in m {
                    let k = yaml_scalar(&k).unwrap_or_default();
                    let items = self.trigger_list(v, line);
                    match k.as_str() {
                        "keywords" => t.keywords = items,
                        "verbs" => t.verbs = items,
                        "patterns" => t.patterns = items,
                        _ => self.warn(
                            line,
                            format!("unknown trigger kind `{k}`; use `keywords`, `verbs` or `patterns`"),
                        ),
                    }
                }
            }
            other => t.keywords = self.trigger_list(other, line),
        }
        for pattern in std::mem::take(&mut t.patterns) {
            match regex::Regex::new(&pattern) {
                Ok(_) => t.patterns.push(pattern),
                Err(e) => {
                    let reason = e.to_string().lines().last().unwrap_or("").trim().to_string();
                    self.warn(line, format!("trigger pattern `{pattern}` is not a valid regex ({reason}); ignored, the other triggers still work"));
                }
            }
        }
        t
    }

    fn trigger_list(&mut self, value: Yaml, line: Option<usize>) -> Vec<String> {
        let raw: Vec<String> = match value {
            Yaml::Sequence(items) => items.iter().map(|i| yaml_scalar(i).unwrap_or_default()).collect(),
            Yaml::String(s) => s.split(',').map(String::from).collect(),
            Yaml::Null => Vec::new(),
            other => vec![yaml_scalar(&other).unwrap_or_default()],
        };
        let mut out: Vec<String> = Vec::new();
        for trigger in raw {
            let trimmed = trigger.trim();
            if !trimmed.chars().any(char::is_alphanumeric) {
                self.warn(line, format!("trigger `{trimmed}` has no letters or digits and would match almost anything; ignored"));
            } else if !out.iter().any(|t| t.to_lowercase() == trimmed.to_lowercase()) {
                out.push(trimmed.to_string());
            }
        }
        out
    }

    fn detect(&mut self, value: Yaml, line: Option<usize>) -> Option<Detect> {
        let Yaml::Mapping(m) = value else {
            self.warn(
                line,
                "`detect` must be a mapping with `files` and `patterns`; ignored",
            );
            return None;
        };
        let mut d = Detect::default();
        for (k, v) in m {
            match yaml_scalar(&k).as_deref() {
                Some("files") => d.files = self.list("detect.files", v, line),
                Some("patterns") => d.patterns = self.list("detect.patterns", v, line),
                _ => self.warn(line, "`detect` takes only `files` and `patterns`"),
            }
        }
        (!d.files.is_empty()).then_some(d)
    }
}

fn merge_triggers(into: &mut Triggers, from: Triggers) {
    for (dst, src) in [
        (&mut into.keywords, from.keywords),
        (&mut into.verbs, from.verbs),
        (&mut into.patterns, from.patterns),
    ] {
        for t in src {
            if !dst.contains(&t) {
                dst.push(t);
            }
        }
    }
}

/// A scalar as text (strings, numbers, booleans); `None` for null, lists and mappings.
fn yaml_scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Tagged(t) => yaml_scalar(&t.value),
        _ => None,
    }
}

/// YAML to JSON, stringifying non-string mapping keys instead of failing on them.
fn yaml_to_json(value: Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64().map_or(Json::Null, Json::from)
            }
        }
        Yaml::String(s) => Json::String(s),
        Yaml::Sequence(items) => Json::Array(items.into_iter().map(yaml_to_json).collect()),
        Yaml::Mapping(m) => Json::Object(
            m.into_iter()
                .map(|(k, v)| {
                    (
                        yaml_scalar(&k).unwrap_or_else(|| format!("{k:?}")),
                        yaml_to_json(v),
                    )
                })
                .collect(),
        ),
        Yaml::Tagged(t) => yaml_to_json(t.value),
    }
}

/// Quote plain values that contain `: ` (a common authoring slip YAML rejects):
/// `description: Use when: x` becomes `description: "Use when: x"`.
fn quote_colon_values(frontmatter: &str) -> String {
    let mut out = String::with_capacity(frontmatter.len() + 16);
    for line in frontmatter.lines() {
        let fixed = line.split_once(": ").and_then(|(key, value)| {
            let plain_key = !key.is_empty()
                && key
                    .trim_start()
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_');
            let v = value.trim();
            let needs = plain_key
                && (v.contains(": ") || v.ends_with(':'))
                && !v.starts_with(['"', '\'', '[', '{', '|', '>']);
            needs.then(|| format!("{key}: \"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        });
        out.push_str(fixed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}
