//! SKILL.md and convention-file parsing, lenient as the agentskills.io client guide asks:
//! a skill is skipped only when its YAML cannot be read or it has no description; every
//! other problem is a warning, and nothing is dropped silently.

mod bounds;
mod foreign;
mod spec;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;
use sha2::{Digest, Sha256};

use crate::diagnostic::Diagnostic;
use crate::skill::{Detect, Format, Skill, Source, Triggers};

/// Frontmatter larger than this is not parsed (the skill is skipped): YAML parsing costs about
/// 200 ms per MiB even for flat input, and real frontmatter is a few hundred bytes.
pub(crate) const MAX_FRONTMATTER_BYTES: usize = 16 << 10;
/// Deeper frontmatter nesting (flow brackets plus indentation levels) skips the skill.
pub(crate) const MAX_NESTING: usize = 64;
/// `[` and `{` allowed in a frontmatter, quoted or not: a bound on libyaml's flow depth (whose
/// scanner costs tokens × depth) that holds even where [`MAX_NESTING`]'s scan misreads quotes.
pub(crate) const MAX_BRACKETS: usize = 256;
/// Nodes a frontmatter may have once YAML aliases are expanded (alias bombs).
pub(crate) const MAX_YAML_NODES: usize = 16 << 10;
/// Keywords and verbs kept per skill.
pub(crate) const MAX_TRIGGERS: usize = 256;
/// Trigger patterns kept per skill.
pub(crate) const MAX_PATTERNS: usize = 16;
/// Compiled size (regex `size_limit`) allowed for one trigger pattern.
pub(crate) const MAX_PATTERN_BYTES: usize = 128 << 10;
/// Compiled size the trigger patterns of one library (every skill a load parses) may take
/// together: what one index keeps ([`crate::matcher::MAX_INDEX_PATTERN_BYTES`]), so the
/// index's own compilation seldom needs its search for a prefix that fits.
const MAX_LIBRARY_PATTERN_BYTES: usize = crate::matcher::MAX_INDEX_PATTERN_BYTES;
/// Warnings reported per file; the rest are counted in one closing warning.
pub(crate) const MAX_WARNINGS: usize = 32;
/// Longest excerpt of a trigger or pattern quoted in a diagnostic.
const MAX_QUOTED_CHARS: usize = 60;

/// Split `content` into frontmatter and body the way other agents that read `SKILL.md` do:
/// after the opening `---`, the frontmatter runs to the first `\n---`; the body is what follows
/// that line, trimmed. Without a closing `---` there is no frontmatter and the content is the
/// body unchanged. Only a file that starts with `---` has frontmatter.
fn split_frontmatter(content: &str) -> (Option<&str>, &str) {
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

/// Why a frontmatter must not reach the YAML parser (its size, nesting or brackets), with the
/// file line at fault.
fn over_bounds(frontmatter: &str, lines: &bounds::LineIndex) -> Option<(usize, String)> {
    if frontmatter.len() > MAX_FRONTMATTER_BYTES {
        let why = format!(
            "the frontmatter is {} KiB, more than the {} KiB limit",
            frontmatter.len().div_ceil(1024),
            MAX_FRONTMATTER_BYTES >> 10
        );
        return Some((1, why));
    }
    if let Some(at) = bounds::too_deep(frontmatter, MAX_NESTING) {
        let why = format!("the frontmatter is too deeply nested (more than {MAX_NESTING} levels of brackets or indentation)");
        return Some((lines.line(at) + 2, why));
    }
    let brackets = frontmatter.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    (brackets > MAX_BRACKETS).then(|| {
        (
            2,
            format!("the frontmatter has {brackets} `[` and `{{`, more than {MAX_BRACKETS}"),
        )
    })
}

/// The first non-blank line of `text`, without a heading's `#`s: the description of a file
/// that declares none.
fn first_line(text: &str) -> Option<String> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(first.trim_start_matches('#').trim().to_string())
}

/// A skill's id: normalized name + `-` + the first 12 hex digits of the content's SHA-256.
fn skill_id(name: &str, hash_hex: &str) -> String {
    let mut normalized: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    while normalized.contains("--") {
        normalized = normalized.replace("--", "-");
    }
    format!("{}-{}", normalized.trim_matches('-'), &hash_hex[..12])
}

fn sha256_hex(content: &str) -> String {
    Sha256::digest(content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Skill {
    /// Parse one skill file. `folder` is the name of the folder holding a `SKILL.md` (the name
    /// rules compare against it). Returns the skill (or `None` when it must be skipped) and
    /// every problem found. The skill counts as a project skill until [`Skill::with_root`] says
    /// where it was found.
    pub fn parse(path: &Path, content: &str, folder: Option<&str>) -> (Option<Skill>, Vec<Diagnostic>) {
        parse_skill(path, content, folder, &mut PatternBudget::library())
    }
}

impl Skill {
    /// The frontmatter as its author wrote it, every field, as JSON: what the MCP Skills
    /// extension publishes, which hosts compare field by field with the file. Read as
    /// [`Skill::parse`] read it (an unquoted `key: a: b` value taken as a string); `None` for a
    /// skill without frontmatter.
    pub fn frontmatter_fields(&self) -> Option<serde_json::Map<String, Json>> {
        let text = self.frontmatter.as_deref()?;
        let yaml = load_yaml(text)
            .or_else(|_| load_yaml(&quote_colon_values(text)))
            .ok()?;
        match yaml_to_json(yaml) {
            Json::Object(fields) => Some(fields),
            Json::Null => Some(serde_json::Map::new()),
            _ => None,
        }
    }
}

/// See [`Skill::parse`]; the skill's patterns are compiled within what is left of `budget`,
/// the budget of the library it belongs to.
pub(crate) fn parse_skill(
    path: &Path,
    content: &str,
    folder: Option<&str>,
    budget: &mut PatternBudget,
) -> (Option<Skill>, Vec<Diagnostic>) {
    let mut p = Parser {
        path,
        diags: Vec::new(),
        keys: HashMap::new(),
        warnings: 0,
        budget: *budget,
    };
    let skill = p.parse(content, folder);
    *budget = p.budget;
    let skill = skill.map(|mut skill| {
        skill.hash = sha256_hex(content);
        skill.format = Format::of(path);
        skill.id = skill_id(&skill.name, &skill.hash);
        skill.path = path.to_path_buf();
        skill.with_root(Source::Project, Source::Project.default_priority())
    });
    if p.warnings > MAX_WARNINGS {
        let more = p.warnings - MAX_WARNINGS;
        p.diags.push(Diagnostic::warning(
            path,
            None,
            format!("{more} more warnings for this file are not shown (at most {MAX_WARNINGS} are)"),
        ));
    }
    (skill, p.diags)
}

/// Frontmatter values settled only once every key has been read.
#[derive(Default)]
struct Pending {
    name: Option<String>,
    description: Option<String>,
    /// `metadata.triggers`, merged after `triggers` so the top-level ones come first.
    metadata_triggers: Option<Yaml>,
}

struct Parser<'a> {
    path: &'a Path,
    diags: Vec<Diagnostic>,
    /// File line of each top-level frontmatter key, computed once.
    keys: HashMap<&'a str, usize>,
    /// Warnings raised so far (only the first [`MAX_WARNINGS`] are kept).
    warnings: usize,
    /// What the library's patterns may still compile to.
    budget: PatternBudget,
}

/// `text` cut to [`MAX_QUOTED_CHARS`] characters for quoting in a diagnostic.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

impl<'a> Parser<'a> {
    fn warn(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.warnings += 1;
        if self.warnings <= MAX_WARNINGS {
            self.diags.push(Diagnostic::warning(self.path, line, message));
        }
    }

    fn fail<T>(&mut self, line: Option<usize>, message: impl Into<String>) -> Option<T> {
        self.diags.push(Diagnostic::error(self.path, line, message));
        None
    }

    /// The file line of a top-level frontmatter key (the frontmatter starts on line 2).
    fn line_of(&self, key: &str) -> Option<usize> {
        self.keys.get(key).map(|i| i + 2)
    }

    fn parse(&mut self, content: &'a str, folder: Option<&str>) -> Option<Skill> {
        let stem = self.path.file_stem().and_then(|s| s.to_str()).unwrap_or("skill");
        let format = Format::of(self.path);
        let folder = folder.filter(|_| format == Format::Skill);
        let default_name = match format {
            Format::Skill => folder.unwrap_or(stem).to_string(),
            Format::Convention => stem.to_string(),
            Format::Cursor | Format::Copilot => foreign::rule_name(self.path),
        };
        let (frontmatter, body) = split_frontmatter(content);
        let Some(frontmatter) = frontmatter else {
            if content.trim_start().starts_with("---") {
                self.warn(Some(1), "the frontmatter opened on line 1 is never closed with `---`; reading the file as plain Markdown");
            } else if format == Format::Skill {
                self.warn(
                    None,
                    "no YAML frontmatter; using the folder name and the first heading",
                );
            }
            let skill = self.plain(default_name, content)?;
            return Some(foreign::activate(format, self.path, false, skill));
        };
        let lines = bounds::LineIndex::new(frontmatter);
        if let Some((line, why)) = over_bounds(frontmatter, &lines) {
            return self.fail(Some(line), format!("{why}; the skill is skipped"));
        }
        self.keys = lines.top_level_keys(frontmatter);
        if format == Format::Skill || format == Format::Convention {
            let map = self.yaml(frontmatter)?;
            let mut skill = self.fields(map, default_name, folder, body)?;
            skill.frontmatter = Some(frontmatter.to_string());
            return Some(skill);
        }
        let map = self.yaml(&foreign::quote_globs(frontmatter))?;
        let (map, described) = self.translate(format, map, &default_name, body);
        let skill = self.fields(map, default_name, None, body)?;
        Some(foreign::activate(format, self.path, described, skill))
    }

    /// A file without frontmatter: name from the file, description from the first heading.
    fn plain(&mut self, name: String, content: &str) -> Option<Skill> {
        let Some(description) = first_line(content) else {
            return self.fail(
                None,
                "the file is empty; a skill needs at least a heading that describes it",
            );
        };
        Some(Skill {
            name,
            description,
            body: content.trim().into(),
            ..Default::default()
        })
    }

    /// Parse the frontmatter, retrying once with unquoted `key: value: more` values quoted.
    fn yaml(&mut self, frontmatter: &str) -> Option<serde_yaml::Mapping> {
        let parsed = match load_yaml(frontmatter) {
            Ok(v) => v,
            Err(Loaded::TooManyNodes) => return self.alias_bomb(),
            Err(Loaded::Yaml(first)) => match load_yaml(&quote_colon_values(frontmatter)) {
                Ok(v) => {
                    let line = first.location().map(|l| l.line() + 1);
                    self.warn(line, "a value contains an unquoted `: `; read it as a quoted string (quote it to silence this)");
                    v
                }
                Err(Loaded::TooManyNodes) => return self.alias_bomb(),
                Err(Loaded::Yaml(_)) => {
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

    fn alias_bomb<T>(&mut self) -> Option<T> {
        self.fail(
            Some(2),
            format!("the frontmatter's YAML aliases expand to more than {MAX_YAML_NODES} values; the skill is skipped"),
        )
    }

    /// Every frontmatter key into a skill, then the checks that need all of them.
    fn fields(
        &mut self,
        map: serde_yaml::Mapping,
        default_name: String,
        folder: Option<&str>,
        body: &str,
    ) -> Option<Skill> {
        let mut skill = Skill {
            body: body.into(),
            ..Default::default()
        };
        let mut pending = Pending::default();
        for (key, value) in map {
            let key = match key {
                Yaml::String(s) => s,
                other => yaml_scalar(&other).unwrap_or_default(),
            };
            self.field(&mut skill, &mut pending, key, value);
        }
        if let Some(v) = pending.metadata_triggers {
            let line = self.line_of("metadata");
            let t = self.triggers(v, line);
            merge_triggers(&mut skill.triggers, t);
        }
        self.cap_triggers(&mut skill.triggers);
        self.redundant_forms(&skill.triggers);
        skill.name = self.name(pending.name, default_name);
        self.check_name(&skill.name, folder);
        skill.description = self.description(pending.description)?;
        if skill.disable_model_invocation && !skill.triggers.is_empty() {
            self.warn(self.line_of("triggers"), "`disable-model-invocation` is set, so the triggers never fire; the skill is selected only by `$name` or `/name`");
        }
        Some(skill)
    }

    /// Warn about a listed trigger that the inflection rule already derives from another listed
    /// one (`greet` and `greeted`), so authors can shorten their lists.
    fn redundant_forms(&mut self, triggers: &Triggers) {
        let listed: Vec<String> = triggers.literals().map(str::to_lowercase).collect();
        let set: HashSet<&str> = listed.iter().map(String::as_str).collect();
        let mut scratch = String::new();
        for trigger in &listed {
            // One lookup per word the trigger may be a form of, not a pass over the list.
            let mut base = None;
            crate::inflect::each_base(trigger, &mut scratch, |b| {
                if base.is_none() && set.contains(b) && crate::inflect::is_form(b, trigger) {
                    base = Some(b.to_string());
                }
            });
            let Some(base) = base else {
                continue;
            };
            self.warn(
                self.line_of("triggers"),
                format!(
                    "trigger `{trigger}` is a form of `{base}`, which already matches it; it can be removed"
                ),
            );
        }
    }

    /// One top-level key, into `skill` or, when it is settled later, into `pending`.
    fn field(&mut self, skill: &mut Skill, pending: &mut Pending, key: String, value: Yaml) {
        let line = self.line_of(&key);
        match key.as_str() {
            "name" => pending.name = self.string(&key, value, line),
            "description" => pending.description = self.string(&key, value, line),
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
            "user-invocable" => skill.user_invocable = Some(self.flag(&key, value, line)),
            "inject_into" | "inject-into" => skill.inject_into = self.phases(&key, value, line),
            "disable-model-invocation" => skill.disable_model_invocation = self.flag(&key, value, line),
            "always" => skill.always = self.flag(&key, value, line),
            "detect" => skill.detect = self.detect(value, line),
            "hooks" => skill.hooks = Some(yaml_to_json(value)),
            "metadata" => self.metadata(skill, pending, value, line),
            _ => {
                skill.extra.insert(key, yaml_to_json(value));
            }
        }
    }

    /// `metadata`, kept as JSON; its `triggers` are triggers too, merged after the top-level
    /// ones.
    fn metadata(&mut self, skill: &mut Skill, pending: &mut Pending, value: Yaml, line: Option<usize>) {
        let Yaml::Mapping(m) = value else {
            self.warn(line, "`metadata` must be a mapping; ignored");
            return;
        };
        for (k, v) in m {
            let k = yaml_scalar(&k).unwrap_or_default();
            if k == "triggers" {
                pending.metadata_triggers = Some(v.clone());
            }
            skill.metadata.insert(k, yaml_to_json(v));
        }
    }

    /// The declared name, else `default_name` (from the file's location) with a warning.
    fn name(&mut self, declared: Option<String>, default_name: String) -> String {
        match declared.filter(|n| !n.trim().is_empty()) {
            Some(n) => n.trim().to_string(),
            None => {
                self.warn(
                    None,
                    format!("no `name`; using `{default_name}` from the file's location"),
                );
                default_name
            }
        }
    }

    /// The declared description; without one the skill is skipped, since neither the catalog
    /// nor the model could tell what it is for.
    fn description(&mut self, declared: Option<String>) -> Option<String> {
        let Some(d) = declared.map(|d| d.trim().to_string()).filter(|d| !d.is_empty()) else {
            return self.fail(
                self.line_of("description").or(Some(1)),
                "no `description`; add one line saying what the skill does and when to use it (the skill is skipped)",
            );
        };
        if d.chars().count() > 1024 {
            self.warn(
                self.line_of("description"),
                "`description` is longer than 1024 characters; catalogs will show all of it",
            );
        }
        Some(d)
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

    /// `inject_into`: phase names; `always` (or nothing) means every phase, an unknown name is
    /// a warning.
    fn phases(&mut self, key: &str, value: Yaml, line: Option<usize>) -> Vec<ctxkit::Phase> {
        let names = self.list(key, value, line);
        if names.iter().any(|n| n.eq_ignore_ascii_case("always")) {
            return Vec::new();
        }
        let mut phases = Vec::new();
        for name in names {
            match name.parse() {
                Ok(phase) => phases.push(phase),
                Err(e) => self.warn(line, format!("`{key}`: {e} (or always); ignored")),
            }
        }
        phases
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

    /// Globs: a list, or one string split at the commas outside `{…}` (`**/*.{ts,tsx}, *.md`
    /// is two globs).
    fn globs(&mut self, key: &str, value: Yaml, line: Option<usize>) -> Vec<String> {
        let Some(text) = yaml_scalar(&value) else {
            return self.list(key, value, line);
        };
        let mut globs = Vec::new();
        let (mut depth, mut start) = (0usize, 0);
        for (i, c) in text.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    globs.push(text[start..i].trim().to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        globs.push(text[start..].trim().to_string());
        globs.retain(|g| !g.is_empty());
        globs
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
        if t.patterns.len() > MAX_PATTERNS {
            self.warn(line, format!("`triggers` declares {} patterns, more than {MAX_PATTERNS}; the first {MAX_PATTERNS} are kept", t.patterns.len()));
            t.patterns.truncate(MAX_PATTERNS);
        }
        let mut unfunded = 0;
        for pattern in std::mem::take(&mut t.patterns) {
            match self.budget.compile(&pattern) {
                Ok(()) => t.patterns.push(pattern),
                Err(None) => unfunded += 1,
                Err(Some(regex::Error::CompiledTooBig(_))) => self.warn(line, format!(
                    "trigger pattern `{}` compiles to more than {} KiB (Unicode classes like `\\w` are large; `[a-z0-9_]` or `(?-u:\\w)` are not); ignored, the other triggers still work",
                    clip(&pattern),
                    MAX_PATTERN_BYTES >> 10
                )),
                Err(Some(e)) => {
                    let reason = e.to_string().lines().last().unwrap_or("").trim().to_string();
                    self.warn(line, format!("trigger pattern `{}` is not a valid regex ({reason}); ignored, the other triggers still work", clip(&pattern)));
                }
            }
        }
        if unfunded > 0 {
            self.warn(line, format!(
                "{unfunded} trigger pattern(s) ignored: the library's trigger patterns already compile to {} MiB, the most they may together; the other triggers still work",
                MAX_LIBRARY_PATTERN_BYTES >> 20
            ));
        }
        t
    }

    /// At most [`MAX_TRIGGERS`] keywords and verbs (keywords first) and [`MAX_PATTERNS`]
    /// patterns per skill, counted after `triggers` and `metadata.triggers` are merged.
    fn cap_triggers(&mut self, t: &mut Triggers) {
        let line = self.line_of("triggers").or_else(|| self.line_of("metadata"));
        let literals = t.keywords.len() + t.verbs.len();
        if literals > MAX_TRIGGERS {
            self.warn(line, format!("the skill declares {literals} trigger keywords and verbs, more than {MAX_TRIGGERS}; the first {MAX_TRIGGERS} are kept"));
            t.keywords.truncate(MAX_TRIGGERS);
            t.verbs.truncate(MAX_TRIGGERS - t.keywords.len());
        }
        if t.patterns.len() > MAX_PATTERNS {
            self.warn(line, format!("the skill declares {} trigger patterns, more than {MAX_PATTERNS}; the first {MAX_PATTERNS} are kept", t.patterns.len()));
            t.patterns.truncate(MAX_PATTERNS);
        }
    }

    fn trigger_list(&mut self, value: Yaml, line: Option<usize>) -> Vec<String> {
        let raw: Vec<String> = match value {
            Yaml::Sequence(items) => items.iter().map(|i| yaml_scalar(i).unwrap_or_default()).collect(),
            Yaml::String(s) => s.split(',').map(String::from).collect(),
            Yaml::Null => Vec::new(),
            other => vec![yaml_scalar(&other).unwrap_or_default()],
        };
        let mut out: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for trigger in raw {
            let trimmed = trigger.trim();
            if !trimmed.chars().any(char::is_alphanumeric) {
                self.warn(
                    line,
                    format!(
                        "trigger `{}` has no letters or digits and would match almost anything; ignored",
                        clip(trimmed)
                    ),
                );
            } else if seen.insert(trimmed.to_lowercase()) {
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
                Some("globs") => d.globs = self.globs("detect.globs", v, line),
                Some("patterns") => d.patterns = self.list("detect.patterns", v, line),
                _ => self.warn(line, "`detect` takes only `files`, `globs` and `patterns`"),
            }
        }
        (!d.is_empty()).then_some(d)
    }
}

fn merge_triggers(into: &mut Triggers, from: Triggers) {
    for (dst, src) in [
        (&mut into.keywords, from.keywords),
        (&mut into.verbs, from.verbs),
        (&mut into.patterns, from.patterns),
    ] {
        let mut seen: HashSet<String> = dst.iter().cloned().collect();
        for t in src {
            if seen.insert(t.clone()) {
                dst.push(t);
            }
        }
    }
}

/// The compiled size one library's trigger patterns may still take. Compiling costs time in
/// proportion to the size reached, so this bounds the work a folder of hostile patterns causes,
/// in the foreground or behind it, whatever the number of files: a pattern is charged its
/// compiled size, or the limit it reached when refused as too big, and once the budget is
/// spent the rest are refused uncompiled. Sizes, not time, keep the result deterministic.
#[derive(Clone, Copy)]
pub(crate) struct PatternBudget {
    left: usize,
}

impl PatternBudget {
    /// A whole library's budget, [`MAX_LIBRARY_PATTERN_BYTES`].
    pub(crate) fn library() -> PatternBudget {
        PatternBudget {
            left: MAX_LIBRARY_PATTERN_BYTES,
        }
    }

    /// Compile one trigger pattern as the index will (case-insensitive), within
    /// [`MAX_PATTERN_BYTES`] and what is left. `Err(None)`: the budget is spent.
    fn compile(&mut self, pattern: &str) -> Result<(), Option<regex::Error>> {
        let limit = MAX_PATTERN_BYTES.min(self.left);
        if limit == 0 {
            return Err(None);
        }
        let built = regex::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(limit)
            .dfa_size_limit(2 * MAX_PATTERN_BYTES)
            .build();
        match built {
            Ok(_) => {
                // The size regex's limit counts: the forward automaton (regex does not say it).
                let size = regex_automata::nfa::thompson::Compiler::new()
                    .syntax(regex_automata::util::syntax::Config::new().case_insensitive(true))
                    .build(pattern)
                    .map_or(limit, |nfa| nfa.memory_usage());
                self.left -= size.min(self.left);
                Ok(())
            }
            Err(regex::Error::CompiledTooBig(_)) if limit < MAX_PATTERN_BYTES => {
                self.left = 0;
                Err(None)
            }
            Err(e @ regex::Error::CompiledTooBig(_)) => {
                self.left -= limit;
                Err(Some(e))
            }
            Err(e) => Err(Some(e)),
        }
    }
}

/// Why bounded YAML loading failed.
enum Loaded {
    Yaml(serde_yaml::Error),
    TooManyNodes,
}

/// Parse YAML whose nesting was checked; with aliases, first check that their expansion stays
/// within [`MAX_YAML_NODES`] (serde_yaml's own repetition limit scales with the file).
fn load_yaml(text: &str) -> Result<Yaml, Loaded> {
    if bounds::may_have_aliases(text)
        && !bounds::fits_node_budget(text, MAX_YAML_NODES).map_err(Loaded::Yaml)?
    {
        return Err(Loaded::TooManyNodes);
    }
    serde_yaml::from_str::<Yaml>(text).map_err(Loaded::Yaml)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_stripping_follows_seed_002() {
        assert_eq!(
            split_frontmatter("---\na: 1\n---\n\n# Title\n"),
            (Some("a: 1"), "# Title")
        );
        assert_eq!(
            split_frontmatter("---\r\na: 1\r\n---\r\nbody\r\n"),
            (Some("a: 1\r"), "body")
        );
        // No closing marker: the content is returned unchanged.
        assert_eq!(split_frontmatter("---\na: 1\nbody"), (None, "---\na: 1\nbody"));
        // A rule later in a file without frontmatter is not frontmatter.
        assert_eq!(
            split_frontmatter("# T\n---\nx\n---\n"),
            (None, "# T\n---\nx\n---\n")
        );
        // The body may itself contain `---` rules.
        assert_eq!(split_frontmatter("---\na: 1\n---\nx\n---\ny").1, "x\n---\ny");
    }

    #[test]
    fn a_skill_id_is_the_normalized_name_and_the_hash_prefix() {
        let hash = sha256_hex("x");
        assert_eq!(hash.len(), 64);
        assert_eq!(skill_id("My  Skill!", &hash), format!("my-skill-{}", &hash[..12]));
    }

    #[test]
    fn the_frontmatter_is_kept_as_written() {
        let text = "---\nname:  deploy \ndescription: >\n  Ship it\nlicense: MIT\nallowed-tools: [Bash, Read]\nmetadata: {owner: ops, n: 2}\nx-custom: a: b\n---\nBody";
        let skill = Skill::parse(Path::new("deploy/SKILL.md"), text, Some("deploy"))
            .0
            .unwrap();
        assert_eq!(skill.name, "deploy");
        let fields = skill.frontmatter_fields().unwrap();
        assert_eq!(
            Json::Object(fields),
            serde_json::json!({
                "name": "deploy", "description": "Ship it\n", "license": "MIT",
                "allowed-tools": ["Bash", "Read"], "metadata": {"owner": "ops", "n": 2},
                "x-custom": "a: b"
            })
        );
        let plain = Skill::parse(Path::new("AGENTS.md"), "# Rules\nUse pnpm.", None)
            .0
            .unwrap();
        assert!(plain.frontmatter.is_none() && plain.frontmatter_fields().is_none());
    }
}
