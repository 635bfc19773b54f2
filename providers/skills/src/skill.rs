//! A loaded skill: its metadata, triggers and body.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::descriptor::ToolSpec;

/// Where a skill came from; decides who wins when two skills share a name.
///
/// Tiers are ordered: a project skill beats a user skill beats an external one beats a
/// builtin one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Shipped with the program that embeds ctxkit.
    Builtin,
    /// Installed from elsewhere (a shared collection, a package).
    External,
    /// The user's own skills, for every project.
    User,
    /// Learned from this project's sessions and accepted by a person: they know the project,
    /// but the project's own skills were written by people on purpose.
    Learned,
    /// The project's skills, which know the project best.
    #[default]
    Project,
}

impl Source {
    /// The default priority of a root of this tier (builtin 1-50, external 51-100, user
    /// 101-200, project 201+; learned skills take 200, under every project skill).
    pub fn default_priority(self) -> i64 {
        match self {
            Source::Builtin => 25,
            Source::External => 75,
            Source::User => 150,
            Source::Learned => 200,
            Source::Project => 250,
        }
    }
}

/// What makes a skill fire: literal keywords and verbs, and regular expressions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triggers {
    /// Words or phrases that fire when they appear as whole words (case-insensitive).
    pub keywords: Vec<String>,
    /// Actions (`deploy`, `rebase`), matched exactly like keywords and kept apart so authors
    /// can say what the skill does as well as what it is about.
    pub verbs: Vec<String>,
    /// Regular expressions (case-insensitive), for triggers a word list cannot say.
    pub patterns: Vec<String>,
}

impl Triggers {
    /// Whether nothing can fire: such a skill is selected only by name, `always`, detection
    /// or the lexical fallback.
    pub fn is_empty(&self) -> bool {
        self.keywords.is_empty() && self.verbs.is_empty() && self.patterns.is_empty()
    }

    /// Keywords and verbs, the literal triggers.
    pub fn literals(&self) -> impl Iterator<Item = &str> {
        self.keywords.iter().chain(&self.verbs).map(String::as_str)
    }

    /// The trigger at `i`, counting keywords, then verbs, then patterns (a `TriggerRef`'s
    /// numbering).
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        let verb = i.checked_sub(self.keywords.len());
        let pattern = verb.and_then(|v| v.checked_sub(self.verbs.len()));
        match (verb, pattern) {
            (None, _) => self.keywords.get(i),
            (Some(v), None) => self.verbs.get(v),
            (_, Some(p)) => self.patterns.get(p),
        }
        .map(String::as_str)
    }
}

/// Files whose presence (and content) marks a project a skill applies to, so the skill is
/// injected for the whole thread without any trigger firing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detect {
    /// Paths relative to the project root (`Cargo.toml`, `.github/workflows/ci.yml`); one
    /// must exist (or one of `globs` match). Absolute paths and `..` are ignored.
    #[serde(default)]
    pub files: Vec<String>,
    /// Globs of project files (`**/*.tsx`, `src/**/*.{ts,js}`; one without a `/` matches a
    /// file name at any depth): a Cursor rule's `globs`, a Copilot file's `applyTo`.
    #[serde(default)]
    pub globs: Vec<String>,
    /// Substrings one of the present files must contain; empty means presence is enough.
    #[serde(default)]
    pub patterns: Vec<String>,
}

impl Detect {
    /// Whether the rules can match anything: a file or a glob to look for.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.globs.is_empty()
    }
}

/// Files that are skills without frontmatter: name = file stem, description = first heading.
const CONVENTION_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    "AGENT.md",
    "SKILLS.md",
    "COPILOT.md",
    "GEMINI.md",
];

/// The kind of file a skill was read from: a skill folder's `SKILL.md`, or an instruction file
/// another agent keeps, read as a skill.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `SKILL.md` (agentskills.io).
    #[default]
    Skill,
    /// A project convention file without frontmatter: `AGENTS.md`, `CLAUDE.md`, ….
    Convention,
    /// A Cursor rule, `.cursor/rules/*.mdc`: `alwaysApply` is `always`, `globs` detection.
    Cursor,
    /// GitHub Copilot instructions: `.github/copilot-instructions.md` (always) and
    /// `.github/instructions/*.instructions.md` (`applyTo` is detection).
    Copilot,
}

impl Format {
    /// The format of the file at `path`, by its name and folder.
    pub fn of(path: &std::path::Path) -> Format {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parents: Vec<&str> = path
            .parent()
            .into_iter()
            .flat_map(|p| p.iter().filter_map(|c| c.to_str()))
            .collect();
        let under = |a: &str, b: &str| parents.windows(2).any(|w| w == [a, b]);
        if CONVENTION_FILES.contains(&name) {
            Format::Convention
        } else if name.ends_with(".mdc") && under(".cursor", "rules") {
            Format::Cursor
        } else if (name == "copilot-instructions.md" && parents.last() == Some(&".github"))
            || (name.ends_with(".instructions.md") && under(".github", "instructions"))
        {
            Format::Copilot
        } else {
            Format::Skill
        }
    }

    /// The name `skills list` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Skill => "skill",
            Format::Convention => "convention",
            Format::Cursor => "cursor",
            Format::Copilot => "copilot",
        }
    }
}

/// What an operator's config (`external-skills.json`) sets for the skills of one root, over
/// what their files say: the config is the operator's word, the file the author's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Overrides {
    pub priority: Option<i64>,
    pub detect: Option<Detect>,
    pub inject_into: Option<Vec<ctxkit::Phase>>,
}

impl Overrides {
    pub(crate) fn apply(&self, skill: &mut Skill) {
        if let Some(p) = self.priority {
            skill.priority = p;
        }
        if let Some(d) = &self.detect {
            skill.detect = Some(d.clone());
        }
        if let Some(phases) = &self.inject_into {
            skill.inject_into = phases.clone();
        }
    }
}

/// One skill: what its file says, and where it was found.
///
/// A deserialized skill has no [`tools`](Skill::tools): tools come only from a `tools.json`
/// validated by [`ToolSpec::parse`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Skill {
    /// Normalized name + `-` + the first 12 hex digits of the file's SHA-256.
    pub id: String,
    /// The name the model and `$name` / `/name` use; unique in an index (case-insensitive).
    pub name: String,
    /// One line saying what the skill does and when to use it: what the catalog shows.
    pub description: String,
    /// Markdown body, frontmatter stripped.
    pub body: Body,
    /// The file it was read from (for diagnostics and for trusting its folder's tools).
    pub path: PathBuf,
    /// The tier of the root it was found under.
    pub source: Source,
    /// Frontmatter `priority` when it is an integer, else the root's.
    pub priority: i64,
    /// Frontmatter `priority`, when it is an integer.
    pub declared_priority: Option<i64>,
    /// What makes it fire (`triggers`, merged with `metadata.triggers`).
    pub triggers: Triggers,
    /// Free labels; the lexical fallback weighs them above the body.
    pub tags: Vec<String>,
    /// Frontmatter `version`, as written.
    pub version: Option<String>,
    /// Frontmatter `license`, as written.
    pub license: Option<String>,
    /// Frontmatter `compatibility`: what the skill needs from its environment.
    pub compatibility: Option<String>,
    /// Frontmatter `allowed-tools` (agentskills.io), kept for hosts that enforce it.
    pub allowed_tools: Vec<String>,
    /// Frontmatter `user-invocable`: `Some(true)`, the skill is meant to be called as `/name`
    /// (MCP hosts list it as a prompt); `Some(false)`, `$name` / `/name` never select it;
    /// `None` when not declared (selectable by name, not listed as a prompt).
    pub user_invocable: Option<bool>,
    /// Frontmatter `disable-model-invocation`: never selected by triggers, detection,
    /// `always` or the catalog, only by an explicit `$name` / `/name`.
    pub disable_model_invocation: bool,
    /// Frontmatter `always`: injected with every request (within the budget).
    pub always: bool,
    /// Frontmatter `detect`: the projects the skill applies to from the start.
    pub detect: Option<Detect>,
    /// Frontmatter `hooks` (PreToolUse / PostToolUse / Stop), as JSON; run by
    /// [`SkillHooks`](crate::exec::SkillHooks), for trusted skills only.
    pub hooks: Option<serde_json::Value>,
    /// The phases the skill is injected in (frontmatter or config `inject_into`); empty means
    /// every phase (`always`).
    pub inject_into: Vec<ctxkit::Phase>,
    /// Frontmatter `metadata`, as JSON.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// Frontmatter keys ctxkit does not know, kept as they were.
    pub extra: BTreeMap<String, serde_json::Value>,
    /// The frontmatter as written: the text between the `---` lines, which is what the skill
    /// publishes ([`Skill::frontmatter_fields`]); `None` for a file without one.
    #[serde(default)]
    pub frontmatter: Option<String>,
    /// Full SHA-256 of the file, hex.
    pub hash: String,
    /// The kind of file it was read from.
    #[serde(default)]
    pub format: Format,
    /// The real path of the folder of its `SKILL.md` when discovery loaded it: its files are
    /// read only while the folder still resolves there (see [`Skill::files`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) real_folder: Option<PathBuf>,
    /// Tools from the `tools.json` next to the file (see `docs/skill-tools.md`), validated at
    /// load; a tool whose name a higher-priority skill already uses is dropped when the index
    /// is built.
    #[serde(skip_serializing_if = "Vec::is_empty", skip_deserializing)]
    pub tools: Vec<ToolSpec>,
}

impl Skill {
    /// The skill as found under a root of `source` with `root_priority`: its effective priority
    /// is the declared one, else the root's.
    pub fn with_root(mut self, source: Source, root_priority: i64) -> Skill {
        self.source = source;
        self.priority = self.declared_priority.unwrap_or(root_priority);
        self
    }

    /// Whether the skill may be injected in `phase` (`None`: the host did not say, so yes).
    pub fn serves(&self, phase: Option<ctxkit::Phase>) -> bool {
        match phase {
            Some(phase) => self.inject_into.is_empty() || self.inject_into.contains(&phase),
            None => true,
        }
    }
}
