//! `tools.json`: how a skill declares the commands it may run, parsed and validated once at
//! index time so that a request only ever sees specs that passed every load-time check. The
//! format is documented on [`ToolSpec`] and in `docs/skill-tools.md`; running a spec is
//! `crate::exec`'s job.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::confined::Confined;
use crate::diagnostic::Diagnostic;

/// The descriptor's file name, next to `SKILL.md`.
pub(crate) const TOOLS_FILE: &str = "tools.json";

/// The folder, inside a skill, that `scripts/FILE` commands name.
pub(crate) const SCRIPTS_DIR: &str = "scripts";

/// Tool names the provider itself uses; a skill cannot shadow them.
const RESERVED_NAMES: &[&str] = &["read_skill", "read_skills"];

/// Suffix of every descriptor diagnostic, so an author knows what the problem cost.
const CONSEQUENCE: &str = "the skill loads without its tools";

/// Most tools, allowlist entries, and fixed arguments or parameters per tool a descriptor may
/// declare: far above what a skill needs, and a bound on the work (and the diagnostics) a
/// hostile file can cause before anyone trusts it.
const MAX_ENTRIES: usize = 64;

/// Most problems reported for one descriptor; the rest are counted in one line.
const MAX_PROBLEMS: usize = 16;

/// The JSON type of a parameter's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
}

impl ParamType {
    /// The JSON Schema type name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }
}

/// How a parameter becomes command-line arguments: `positional`, `flag` or `flagifboolean`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ParamKind {
    /// The value as one argument.
    #[default]
    Positional,
    /// The flag, then the value.
    Flag,
    /// The flag alone, when the value is true.
    FlagIfBoolean,
}

/// One declared parameter of a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ParamSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ParamType,
    pub description: String,
    pub required: bool,
    pub kind: ParamKind,
    /// The flag of `flag` and `flagifboolean` parameters (always starts with `-`).
    pub flag: Option<String>,
    /// The value names a file: absolute paths and `..` escapes are refused.
    pub path: bool,
}

/// What a tool runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Program {
    /// A bare program name from the descriptor's allowlist, found through `PATH`.
    Binary(String),
    /// A file name inside the skill's `scripts/` folder.
    Script(String),
}

/// One validated tool of a skill. Built only by [`ToolSpec::parse`], so every spec's command
/// is allowlisted (or a script) and every parameter is well-formed.
///
/// The `tools.json` format, next to `SKILL.md`:
///
/// ```json
/// {
///   "allowlist": ["grep", "ls"],
///   "tools": [{
///     "name": "list_files",
///     "description": "List the files of a folder.",
///     "command": "ls",
///     "args": ["-1"],
///     "parameters": [
///       {"name": "all", "type": "boolean", "kind": "flagifboolean", "flag": "-a"},
///       {"name": "dir", "type": "string", "kind": "positional", "path": true, "required": true}
///     ]
///   }]
/// }
/// ```
///
/// - `allowlist`: bare program names (no slashes) the file's tools may run, resolved through
///   `PATH`. A tool's `command` is one of them, or `scripts/FILE` — an executable in the skill's
///   own `scripts/` folder, run only when [`ExecOptions::allow_scripts`](crate::exec::ExecOptions::allow_scripts) is true.
/// - `args`: fixed arguments, always first. Then each parameter, in declared order:
///   `positional` → the value as one argument; `flag` → the flag and the value as two;
///   `flagifboolean` → the flag alone, when the value is true. A missing optional parameter
///   adds nothing.
/// - `type` is `string` (default; `boolean` for `flagifboolean`), `integer`, `number` or
///   `boolean`; `path: true` marks a value that names a file, checked against the allowed roots.
///
/// Any problem (bad JSON, an unknown key or kind, a command outside the allowlist, a duplicate
/// name…) is a warning naming the file, and the skill loads without tools: a half-valid
/// descriptor would offer tools whose behaviour the author did not intend. Every refusal at
/// call time is described on [`crate::exec::SkillTool`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolSpec {
    name: String,
    description: String,
    program: Program,
    args: Vec<String>,
    params: Vec<ParamSpec>,
}

impl ToolSpec {
    /// Parse and validate a descriptor's text; `path` only names the file in diagnostics. Every
    /// problem found is reported, and any problem means no tools.
    pub fn parse(path: &Path, text: &str) -> (Vec<ToolSpec>, Vec<Diagnostic>) {
        let raw: RawDescriptor = match serde_json::from_str(text) {
            Ok(raw) => raw,
            Err(e) => {
                let line = (e.line() > 0).then(|| e.line());
                let message = format!("not a valid tool descriptor ({e}); {CONSEQUENCE}");
                return (Vec::new(), vec![Diagnostic::warning(path, line, message)]);
            }
        };
        let too_many = [
            ("tools", raw.tools.len()),
            ("allowlist entries", raw.allowlist.len()),
            (
                "fixed arguments in one tool",
                raw.tools.iter().map(|t| t.args.len()).max().unwrap_or(0),
            ),
            (
                "parameters in one tool",
                raw.tools.iter().map(|t| t.parameters.len()).max().unwrap_or(0),
            ),
        ];
        if let Some((what, n)) = too_many.iter().find(|(_, n)| *n > MAX_ENTRIES) {
            let message =
                format!("the file declares {n} {what}, more than the {MAX_ENTRIES} allowed; {CONSEQUENCE}");
            return (Vec::new(), vec![Diagnostic::warning(path, None, message)]);
        }
        let mut problems: Vec<(Option<usize>, String)> = Vec::new();
        for entry in &raw.allowlist {
            if !is_program_name(entry) {
                problems.push((
                    None,
                    format!("allowlist entry `{entry}` is not a bare program name (letters, digits, `-`, `_`, `.`, `+`; no slashes)"),
                ));
            }
        }
        let mut names: HashSet<&str> = HashSet::new();
        let mut tools = Vec::with_capacity(raw.tools.len());
        for (i, tool) in raw.tools.iter().enumerate() {
            let shared_with_param = raw
                .tools
                .iter()
                .flat_map(|t| &t.parameters)
                .any(|p| p.name == tool.name);
            let earlier = raw.tools[..i].iter().filter(|t| t.name == tool.name).count();
            let line = name_line(text, &tool.name, (!shared_with_param).then_some(earlier));
            if !names.insert(&tool.name) {
                problems.push((line, format!("tool `{}` is declared twice", tool.name)));
            }
            match validate_tool(tool, &raw.allowlist) {
                Ok(spec) => tools.push(spec),
                Err(found) => problems.extend(found.into_iter().map(|p| (line, p))),
            }
        }
        if problems.is_empty() {
            return (tools, Vec::new());
        }
        let more = problems.len().saturating_sub(MAX_PROBLEMS);
        let mut diagnostics: Vec<Diagnostic> = problems
            .into_iter()
            .take(MAX_PROBLEMS)
            .map(|(line, p)| Diagnostic::warning(path, line, format!("{p}; {CONSEQUENCE}")))
            .collect();
        if more > 0 {
            diagnostics.push(Diagnostic::warning(
                path,
                None,
                format!("{more} more problems not shown"),
            ));
        }
        (Vec::new(), diagnostics)
    }

    /// The tool name the model calls; unique among the tools offered in one request.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the model reads to decide when to call the tool.
    pub fn description(&self) -> &str {
        &self.description
    }

    pub(crate) fn program(&self) -> &Program {
        &self.program
    }

    /// Fixed arguments, before the parameters.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    pub(crate) fn params(&self) -> &[ParamSpec] {
        &self.params
    }

    /// The JSON Schema the model sees, generated from the declared parameters.
    pub fn schema(&self) -> Value {
        let mut properties = Map::new();
        for p in &self.params {
            let mut prop = json!({"type": p.ty.as_str()});
            if !p.description.is_empty() {
                prop["description"] = Value::String(p.description.clone());
            }
            properties.insert(p.name.clone(), prop);
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDescriptor {
    #[serde(default)]
    allowlist: Vec<String>,
    tools: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    #[serde(default)]
    description: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    parameters: Vec<RawParam>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParam {
    name: String,
    #[serde(rename = "type", default)]
    ty: Option<ParamType>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    kind: ParamKind,
    #[serde(default)]
    flag: Option<String>,
    #[serde(default)]
    path: bool,
}

/// Read the `tools.json` next to `skill_file`, inside the skill's `root`, if there is one. No
/// file means no tools and no diagnostic; an unreadable or invalid one is a warning.
pub(crate) fn load_descriptor(root: &Confined, skill_file: &Path) -> (Vec<ToolSpec>, Vec<Diagnostic>) {
    let Some(dir) = skill_file.parent() else {
        return (Vec::new(), Vec::new());
    };
    let path = dir.join(TOOLS_FILE);
    if fs::symlink_metadata(&path).is_err() {
        return (Vec::new(), Vec::new());
    }
    match root.read_text(&path) {
        Ok(text) => ToolSpec::parse(&path, &text),
        Err(problem) => {
            let message = format!("{}; {CONSEQUENCE}", problem.reason(root.real()));
            (
                Vec::new(),
                vec![Diagnostic::warning(&path, problem.line(), message)],
            )
        }
    }
}

/// A tool's spec, or every problem with it (one sentence each).
fn validate_tool(tool: &RawTool, allowlist: &[String]) -> Result<ToolSpec, Vec<String>> {
    let name = &tool.name;
    let mut problems = Vec::new();
    if !is_tool_name(name) {
        problems.push(format!(
            "tool name `{name}` must be 1 to 64 letters, digits, `_` or `-`"
        ));
    }
    if RESERVED_NAMES.contains(&name.as_str()) {
        problems.push(format!(
            "tool name `{name}` is reserved for ctxkit's own skill tools"
        ));
    }
    let program = match tool.command.strip_prefix("scripts/") {
        Some(file) if is_plain_file_name(file) => Some(Program::Script(file.to_string())),
        Some(_) => {
            problems.push(format!(
                "tool `{name}`: command `{}` must be `scripts/FILE` with a plain file name",
                tool.command
            ));
            None
        }
        None if !is_program_name(&tool.command) => {
            problems.push(format!(
                "tool `{name}`: command `{}` must be a bare program name from the allowlist or `scripts/FILE`",
                tool.command
            ));
            None
        }
        None if !allowlist.contains(&tool.command) => {
            problems.push(format!(
                "tool `{name}`: command `{}` is not in this file's allowlist",
                tool.command
            ));
            None
        }
        None => Some(Program::Binary(tool.command.clone())),
    };
    if tool.args.iter().any(|a| a.contains('\0')) {
        problems.push(format!("tool `{name}`: a fixed argument contains a NUL byte"));
    }
    let mut params = Vec::with_capacity(tool.parameters.len());
    let mut seen: HashSet<&str> = HashSet::new();
    for p in &tool.parameters {
        if !seen.insert(&p.name) {
            problems.push(format!("tool `{name}`: parameter `{}` is declared twice", p.name));
        }
        match validate_param(p) {
            Ok(spec) => params.push(spec),
            Err(reason) => problems.push(format!("tool `{name}`: parameter `{}` {reason}", p.name)),
        }
    }
    match program {
        Some(program) if problems.is_empty() => Ok(ToolSpec {
            name: name.clone(),
            description: tool.description.clone(),
            program,
            args: tool.args.clone(),
            params,
        }),
        _ => Err(problems),
    }
}

/// A parameter's spec, or what is wrong with it (completing "parameter `x` …").
fn validate_param(p: &RawParam) -> Result<ParamSpec, String> {
    if !is_tool_name(&p.name) {
        return Err("has a name that is not 1 to 64 letters, digits, `_` or `-`".into());
    }
    let ty = p.ty.unwrap_or(match p.kind {
        ParamKind::FlagIfBoolean => ParamType::Boolean,
        _ => ParamType::String,
    });
    match (p.kind, &p.flag) {
        (ParamKind::Positional, Some(_)) => {
            return Err(
                "is positional, so `flag` does not apply; use kind `flag` to pass it after a flag".into(),
            )
        }
        (ParamKind::Flag | ParamKind::FlagIfBoolean, None) => {
            return Err("needs a `flag` (e.g. \"-n\") for its kind".into())
        }
        (_, Some(flag)) if !flag.starts_with('-') || flag.contains('\0') || flag.len() < 2 => {
            return Err(format!(
                "has flag `{flag}`, which does not look like an option (it must start with `-`)"
            ))
        }
        _ => {}
    }
    if p.kind == ParamKind::FlagIfBoolean && ty != ParamType::Boolean {
        return Err("is a flagifboolean parameter, so its type must be boolean".into());
    }
    if p.path && ty != ParamType::String {
        return Err("is marked `path`, so its type must be string".into());
    }
    Ok(ParamSpec {
        name: p.name.clone(),
        ty,
        description: p.description.clone(),
        required: p.required,
        kind: p.kind,
        flag: p.flag.clone(),
        path: p.path,
    })
}

/// OpenAI's rule for function names, which every backend accepts.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A program found through `PATH`: no separators, nothing that reads as an option or a path.
fn is_program_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// One component naming a file in `scripts/`, never a way out of it.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// The line of the `skip`-th `"name": "…"` with this value: where the tool is declared. The
/// caller passes no `skip` when a parameter shares the name, since a wrong line is worse than
/// none.
fn name_line(text: &str, name: &str, skip: Option<usize>) -> Option<usize> {
    let pattern = format!(r#""name"\s*:\s*"{}""#, regex::escape(name));
    let re = regex::Regex::new(&pattern).ok()?;
    let at = re.find_iter(text).nth(skip?)?.start();
    Some(1 + text[..at].bytes().filter(|&b| b == b'\n').count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_types_default_and_the_command_is_the_allowlisted_binary() {
        let text = json!({
            "allowlist": ["git"],
            "tools": [{
                "name": "git_log",
                "command": "git",
                "parameters": [
                    {"name": "count", "type": "integer", "kind": "flag", "flag": "-n"},
                    {"name": "stat", "kind": "flagifboolean", "flag": "--stat"},
                    {"name": "path", "path": true}
                ]
            }]
        });
        let (specs, diags) = ToolSpec::parse(Path::new("s/tools.json"), &text.to_string());
        assert!(diags.is_empty(), "{diags:?}");
        let spec = &specs[0];
        assert_eq!(spec.program(), &Program::Binary("git".into()));
        let kinds: Vec<(ParamKind, ParamType)> = spec.params().iter().map(|p| (p.kind, p.ty)).collect();
        assert_eq!(
            kinds,
            [
                (ParamKind::Flag, ParamType::Integer),
                (ParamKind::FlagIfBoolean, ParamType::Boolean),
                (ParamKind::Positional, ParamType::String)
            ],
            "kind defaults to positional, type to string (boolean for flagifboolean)"
        );
    }
}
