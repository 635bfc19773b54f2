//! The configuration: the one TOML format, read from the user's config file and from a
//! project's `.ctxkit/config.toml`, the project's values over the user's over the defaults.
//!
//! The user file lives in the user's config directory (see [`crate::places`]), never in a
//! project, and it is the only one that may grant trust: a cloned repository could otherwise
//! trust its own tools and hooks. A project file that sets `[tools]`, `[hooks]`, `[mcp]` or a
//! trusted root is refused. See `docs/controls.md` for every key.
//!
//! ```toml
//! [skills]
//! disabled = ["docker-compose"]      # turned off (`ctxkit skills disable NAME`)
//! mode = "hybrid"                    # full | triggered | on-demand | hybrid
//! max_skills = 3
//! token_budget = 16000
//! external = ["external-skills.json"]
//! [[skills.roots]]
//! path = "~/team-skills"
//! tier = "user"                      # builtin | external | user | project
//! priority = 150
//! trusted = true                     # user config only: its tools and hooks may run
//!
//! [tools]                            # user config only
//! trust = ["~/my-skills/"]           # absolute folders whose skills' tools and hooks may run
//! interpreters = ["python3"]
//! pass_env = ["GOPATH"]
//!
//! [hooks]                            # user config only
//! shell = false                      # run SKILL.md hook commands through `sh -c`
//! timeout_secs = 10
//!
//! [mcp]                              # user config only
//! servers = ["npx -y @modelcontextprotocol/server-everything"]
//!
//! [learn]
//! enabled = true                     # false: a session's end proposes no skill
//! auto_accept = false                # user config only: learned skills skip review
//! min_tool_calls = 3                 # successful tool calls a session needs to be learned from
//!
//! [memory]
//! extract = true                     # false: a session's end asks the model for no memories
//!
//! [chat]
//! history_tokens = 32000             # the most tokens of conversation sent (0: no bound)
//!
//! [instructions]
//! max_tokens = 8000                  # the most tokens of AGENTS.md + CLAUDE.md sent (0: none)
//! ```

use std::path::{Component, Path, PathBuf};

use ctxkit_skills::{
    ExecOptions, ExternalSkills, HookOptions, Mode, SelectOptions, SkillConfig, SkillRoot, Source, ToolTrust,
};
use serde::Deserialize;

use crate::confined_file::ConfinedFile;
use crate::error::CliError;

/// Where a project keeps its config, below the project folder.
pub(crate) const PROJECT_CONFIG: &str = ".ctxkit/config.toml";

/// One config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    skills: SkillsSection,
    #[serde(default)]
    tools: ToolsSection,
    #[serde(default)]
    hooks: HooksSection,
    #[serde(default)]
    mcp: McpSection,
    #[serde(default)]
    learn: LearnSection,
    #[serde(default)]
    memory: MemorySection,
    #[serde(default)]
    chat: ChatSection,
    #[serde(default)]
    instructions: InstructionsSection,
}

/// The project's standing instructions (its own `AGENTS.md` and `CLAUDE.md`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct InstructionsSection {
    /// The most tokens of them sent with every request (0: none).
    max_tokens: Option<usize>,
}

/// `ctxkit chat`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatSection {
    /// The most tokens of conversation sent with a message (0: no bound).
    history_tokens: Option<usize>,
}

/// Project memory (`ctxkit memory`, the hook, `context`, `chat`, `mcp`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySection {
    /// User config only: a sentence-embedding model folder (sentence-transformers layout).
    embeddings: Option<PathBuf>,
    /// Whether a session's end asks the model for memories (default true).
    extract: Option<bool>,
}

/// Skills learned from sessions (`ctxkit skills learned`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LearnSection {
    /// User config only: accept learned skills without review.
    #[serde(default)]
    auto_accept: bool,
    /// Successful tool calls a session needs to be learned from.
    min_tool_calls: Option<usize>,
    /// Whether a session's end may propose a skill (default true).
    enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsSection {
    #[serde(default)]
    disabled: Vec<String>,
    /// Project config: turned back on although the user config disables them.
    #[serde(default)]
    enabled: Vec<String>,
    mode: Option<String>,
    max_skills: Option<usize>,
    token_budget: Option<usize>,
    catalog_tokens: Option<usize>,
    max_content_lines: Option<usize>,
    #[serde(default)]
    external: Vec<String>,
    #[serde(default)]
    roots: Vec<RootEntry>,
    /// Select triggerless skills by meaning when slots remain (needs an embedding model).
    semantic: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RootEntry {
    path: String,
    #[serde(default = "project_tier")]
    tier: Source,
    priority: Option<i64>,
    #[serde(default)]
    trusted: bool,
}

fn project_tier() -> Source {
    Source::Project
}

/// MCP servers whose tools `ctxkit chat` mounts: command lines, split into words (no shell).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpSection {
    #[serde(default)]
    servers: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsSection {
    #[serde(default)]
    trust: Vec<String>,
    #[serde(default)]
    interpreters: Vec<String>,
    #[serde(default)]
    pass_env: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksSection {
    #[serde(default)]
    shell: bool,
    timeout_secs: Option<u64>,
}

/// The most bytes read from a config file.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The configuration in force: the user's file and the project's.
#[derive(Debug, Default)]
pub(crate) struct Config {
    user: ConfigFile,
    user_path: Option<PathBuf>,
    project: ConfigFile,
    /// The project folder, when its config was looked for.
    project_dir: Option<PathBuf>,
    /// Roots and settings from `[[skills.roots]]` and the `external` files, resolved once.
    extra: Extra,
}

/// Which config file a change goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layer {
    User,
    Project,
}

impl Config {
    /// The user's config file, checked, its external files not read yet.
    fn read_user() -> Result<Config, CliError> {
        let user_path = crate::places::user_config();
        let user = match &user_path {
            Some(path) => read(&ConfinedFile::in_folder_of(path))?.unwrap_or_default(),
            None => ConfigFile::default(),
        };
        if let Some(path) = &user_path {
            check_user(&user, path)?;
        }
        Ok(Config {
            user,
            user_path,
            ..Config::default()
        })
    }

    /// The embedding model folder the user config names (`[memory] embeddings`, `~/` expanded).
    pub(crate) fn user_embeddings() -> Result<Option<PathBuf>, CliError> {
        Ok(Self::read_user()?
            .user
            .memory
            .embeddings
            .map(|p| expand_home(&p.to_string_lossy())))
    }

    /// The user's config and `project`'s `.ctxkit/config.toml` (either may be missing).
    pub(crate) fn load(project: &Path) -> Result<Config, CliError> {
        let mut config = Self::read_user()?;
        let file = ConfinedFile::new(project, PROJECT_CONFIG);
        if let Some(found) = read(&file)? {
            check_project(&found, &file.path())?;
            config.project = found;
        }
        config.project_dir = Some(project.to_path_buf());
        config.extra = config.resolve()?;
        Ok(config)
    }

    /// The file a change to `layer` goes to.
    pub(crate) fn file(&self, layer: Layer) -> Result<ConfinedFile, CliError> {
        match layer {
            Layer::User => self
                .user_path
                .as_deref()
                .map(ConfinedFile::in_folder_of)
                .ok_or_else(|| {
                    CliError::new(
                        "cannot find the user's config directory (HOME is not set); set CTXKIT_CONFIG",
                    )
                }),
            Layer::Project => Ok(ConfinedFile::new(
                self.project_dir.clone().unwrap_or_else(|| PathBuf::from(".")),
                PROJECT_CONFIG,
            )),
        }
    }

    /// Skills turned off: the project's, and the user's unless the project turns them back on.
    pub(crate) fn disabled(&self) -> Vec<String> {
        let project = &self.project.skills;
        let mut names = project.disabled.clone();
        names.extend(
            self.user
                .skills
                .disabled
                .iter()
                .filter(|n| !project.enabled.iter().any(|e| e.eq_ignore_ascii_case(n)))
                .cloned(),
        );
        names
    }

    /// Whether `name` is turned off in `layer`'s file itself.
    pub(crate) fn disables_in(&self, layer: Layer, name: &str) -> bool {
        let file = match layer {
            Layer::User => &self.user,
            Layer::Project => &self.project,
        };
        file.skills.disabled.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// A value of `[skills]`: the project's, else the user's.
    fn skills<T: Copy>(&self, get: impl Fn(&SkillsSection) -> Option<T>) -> Option<T> {
        get(&self.project.skills).or_else(|| get(&self.user.skills))
    }

    /// `[skills] mode`, checked when the file was read.
    fn mode(&self) -> Option<Mode> {
        let mode = self
            .project
            .skills
            .mode
            .as_ref()
            .or(self.user.skills.mode.as_ref())?;
        mode.parse().ok()
    }

    /// `[skills] max_skills`, else an external file's `settings.max_skills_per_story`.
    fn max_skills(&self) -> Option<usize> {
        self.skills(|s| s.max_skills).or(self.extra.max_skills)
    }

    fn token_budget(&self) -> Option<usize> {
        self.skills(|s| s.token_budget)
    }

    fn catalog_tokens(&self) -> Option<usize> {
        self.skills(|s| s.catalog_tokens)
    }

    /// `[skills] max_content_lines`, else an external file's `settings.max_content_lines`.
    fn max_content_lines(&self) -> Option<usize> {
        self.skills(|s| s.max_content_lines)
            .or(self.extra.max_content_lines)
    }

    /// The skill provider's settings for every command: each one the command-line flag when
    /// given, else the config's, else the default — decided here once, so `context`, `chat`,
    /// the hooks and `mcp` select the same skills. `full` mode has no token budget (it is the
    /// baseline of what sending everything costs).
    pub(crate) fn skill_config(&self, mode: Option<Mode>, max_skills: Option<usize>) -> SkillConfig {
        let defaults = SkillConfig::default();
        let mode = mode.or(self.mode()).unwrap_or_default();
        SkillConfig {
            mode,
            select: SelectOptions {
                max_skills: max_skills
                    .or(self.max_skills())
                    .unwrap_or(defaults.select.max_skills),
                ..defaults.select.clone()
            },
            token_budget: (mode != Mode::Full)
                .then(|| self.token_budget().unwrap_or(SkillConfig::DEFAULT_TOKEN_BUDGET)),
            catalog_tokens: self.catalog_tokens().unwrap_or(defaults.catalog_tokens),
            max_content_lines: self.max_content_lines().unwrap_or(defaults.max_content_lines),
            ..defaults
        }
    }

    /// Whether `[skills] semantic` asks for the semantic fallback (the project's over the
    /// user's).
    pub(crate) fn semantic_skills(&self) -> bool {
        self.skills(|s| s.semantic).unwrap_or(false)
    }

    /// The roots the config adds: `[[skills.roots]]` and the skills of each `external` file,
    /// the user's first, then the project's (confined to the project).
    pub(crate) fn roots(&self) -> Vec<SkillRoot> {
        self.extra.roots.clone()
    }

    /// Read what the files point to: roots, and the external files with their settings.
    fn resolve(&self) -> Result<Extra, CliError> {
        let mut extra = Extra::default();
        if let Some(base) = self.user_path.as_deref().and_then(Path::parent) {
            self.add_roots(&self.user, base, None, &mut extra)?;
        }
        if let Some(project) = &self.project_dir {
            self.add_roots(&self.project, project, Some(project), &mut extra)?;
        }
        Ok(extra)
    }

    /// Add `file`'s roots and external files, relative to `base`; a project's (`confine`)
    /// stay inside the project, links resolved, and get no `~` expansion.
    fn add_roots(
        &self,
        file: &ConfigFile,
        base: &Path,
        confine: Option<&Path>,
        extra: &mut Extra,
    ) -> Result<(), CliError> {
        let resolve = |entry: &str| match confine {
            Some(_) => base.join(entry),
            None => base.join(expand_home(entry)),
        };
        for entry in &file.skills.roots {
            let root = SkillRoot::new(resolve(&entry.path), entry.tier)
                .with_priority(entry.priority.unwrap_or_else(|| entry.tier.default_priority()));
            extra.roots.push(match confine {
                Some(project) => root.within(project),
                None => root,
            });
        }
        for name in &file.skills.external {
            let path = resolve(name);
            if let Some(project) = confine {
                let inside = match (path.canonicalize(), project.canonicalize()) {
                    (Ok(real), Ok(project)) => real.starts_with(project),
                    _ => true, // a missing file is reported by the read below
                };
                if !inside {
                    return Err(CliError::new(format!(
                        "the project config names `{name}`, which leads out of the project"
                    )));
                }
            }
            // Each external root is already confined to its file's folder.
            let external = ExternalSkills::read(&path).map_err(CliError::new)?;
            for w in &external.warnings {
                tracing::warn!("{w}");
            }
            extra.max_skills = extra.max_skills.or(external.max_skills);
            extra.max_content_lines = extra.max_content_lines.or(external.max_content_lines);
            extra.roots.extend(external.roots);
        }
        Ok(())
    }

    /// `[memory] extract` (default on). Off in either file wins: a cloned project must not
    /// turn back on what its user turned off.
    pub(crate) fn extract_memories(&self) -> bool {
        ![self.project.memory.extract, self.user.memory.extract].contains(&Some(false))
    }

    /// `[learn] enabled` (default on); off in either file wins, as for extraction.
    pub(crate) fn learn_enabled(&self) -> bool {
        ![self.project.learn.enabled, self.user.learn.enabled].contains(&Some(false))
    }

    /// `[chat] history_tokens`, the project's over the user's.
    pub(crate) fn history_tokens(&self) -> Option<usize> {
        self.project.chat.history_tokens.or(self.user.chat.history_tokens)
    }

    /// `[instructions] max_tokens`: the user's (else `default`), which the project's may lower
    /// but not raise, since the project also writes the files it bounds.
    pub(crate) fn standing_tokens(&self, default: usize) -> usize {
        let user = self.user.instructions.max_tokens.unwrap_or(default);
        self.project.instructions.max_tokens.map_or(user, |p| p.min(user))
    }

    /// The MCP servers the user configured for `ctxkit chat`.
    pub(crate) fn mcp_servers(&self) -> &[String] {
        &self.user.mcp.servers
    }

    /// How sessions are learned from: `[learn]`, `auto_accept` from the user config only (a
    /// project must not skip its users' review).
    pub(crate) fn learn_options(&self) -> ctxkit_learn::LearnOptions {
        let defaults = ctxkit_learn::LearnOptions::default();
        ctxkit_learn::LearnOptions {
            min_tool_calls: self
                .project
                .learn
                .min_tool_calls
                .or(self.user.learn.min_tool_calls)
                .unwrap_or(defaults.min_tool_calls),
            auto_accept: self.user.learn.auto_accept,
        }
    }

    /// How SKILL.md hooks of trusted skills run: `[hooks]` and `[tools] pass_env` of the
    /// user config only.
    pub(crate) fn hook_options(&self) -> HookOptions {
        let defaults = HookOptions::default();
        HookOptions {
            allow_shell: self.user.hooks.shell,
            timeout: self
                .user
                .hooks
                .timeout_secs
                .map_or(defaults.timeout, std::time::Duration::from_secs),
            pass_env: self.user.tools.pass_env.clone(),
        }
    }

    /// Tool options from the user config (its `[tools]` and trusted roots) plus the command
    /// line's `--trust-tools` and `--allow-interpreter`, with the workspace tools run in.
    pub(crate) fn exec_options(
        &self,
        trust: &[String],
        interpreters: &[String],
        workspace: Option<PathBuf>,
    ) -> ExecOptions {
        let mut tool_trust = ToolTrust::default();
        for entry in self.user.tools.trust.iter().chain(trust) {
            tool_trust = if is_folder(entry) {
                tool_trust.root(expand_home(entry))
            } else {
                tool_trust.skill(entry)
            };
        }
        for root in self.user.skills.roots.iter().filter(|r| r.trusted) {
            tool_trust = tool_trust.root(expand_home(&root.path));
        }
        ExecOptions {
            trust: tool_trust,
            allow_interpreters: self
                .user
                .tools
                .interpreters
                .iter()
                .chain(interpreters)
                .cloned()
                .collect(),
            pass_env: self.user.tools.pass_env.clone(),
            workspace_root: workspace,
            ..ExecOptions::default()
        }
    }
}

/// What the config adds to the command line's roots.
#[derive(Debug, Default)]
struct Extra {
    roots: Vec<SkillRoot>,
    /// `settings.max_skills_per_story` of an external file.
    max_skills: Option<usize>,
    /// `settings.max_content_lines` of an external file.
    max_content_lines: Option<usize>,
}

/// Read and parse one config file, `None` when there is none: at most [`MAX_CONFIG_BYTES`],
/// never through a link, one sentence on any error.
fn read(file: &ConfinedFile) -> Result<Option<ConfigFile>, CliError> {
    let Some(text) = read_text(file)? else {
        return Ok(None);
    };
    let config: ConfigFile = toml::from_str(&text).map_err(|e| {
        CliError::new(format!(
            "the config file `{}` is not valid: {}",
            file.path().display(),
            e.message()
        ))
    })?;
    if let Some(mode) = config.skills.mode.as_deref() {
        mode.parse::<Mode>()
            .map_err(|e| CliError::new(format!("the config file `{}`: {e}", file.path().display())))?;
    }
    Ok(Some(config))
}

/// The text of a config file, `None` when there is none.
fn read_text(file: &ConfinedFile) -> Result<Option<String>, CliError> {
    let Some(bytes) = file.read(MAX_CONFIG_BYTES)? else {
        return Ok(None);
    };
    String::from_utf8(bytes).map(Some).map_err(|_| {
        CliError::new(format!(
            "the config file `{}` is not UTF-8 text",
            file.path().display()
        ))
    })
}

/// The user config applies in every project, so it trusts folders only, and only absolute ones:
/// a name or a relative folder would trust whatever a cloned repository puts there.
fn check_user(config: &ConfigFile, path: &Path) -> Result<(), CliError> {
    let relative_trust = config.tools.trust.iter().find(|e| !expand_home(e).is_absolute());
    let relative_root = config
        .skills
        .roots
        .iter()
        .find(|r| r.trusted && !expand_home(&r.path).is_absolute())
        .map(|r| &r.path);
    match relative_trust.or(relative_root) {
        Some(entry) => Err(CliError::new(format!(
            "the config file `{}` trusts `{entry}`, but the user config trusts only absolute folders \
             (or ~/…): a name or a relative folder would trust what any project puts there; \
             use --trust-tools for one command",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// A project's config is the project's text: it may choose skills and settings, never grant
/// trust, start programs, or name a folder outside the project.
fn check_project(config: &ConfigFile, path: &Path) -> Result<(), CliError> {
    let refuse = |what: &str| {
        Err(CliError::new(format!(
            "the project config `{}` sets {what}, which only the user config may set: a project must not trust its own tools or hooks",
            path.display()
        )))
    };
    let tools = &config.tools;
    if !(tools.trust.is_empty() && tools.interpreters.is_empty() && tools.pass_env.is_empty()) {
        return refuse("[tools]");
    }
    if config.hooks.shell || config.hooks.timeout_secs.is_some() {
        return refuse("[hooks]");
    }
    if !config.mcp.servers.is_empty() {
        return refuse("[mcp] servers");
    }
    if config.learn.auto_accept {
        return refuse("[learn] auto_accept");
    }
    if config.memory.embeddings.is_some() {
        return refuse("[memory] embeddings");
    }
    if config.skills.roots.iter().any(|r| r.trusted) {
        return refuse("a trusted root");
    }
    let outside = config
        .skills
        .roots
        .iter()
        .map(|r| &r.path)
        .chain(&config.skills.external)
        .find(|p| {
            !Path::new(p)
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        });
    if let Some(p) = outside {
        return Err(CliError::new(format!(
            "the project config `{}` names `{p}`, which is not a folder inside the project",
            path.display()
        )));
    }
    Ok(())
}

/// Turn `name` off (`disable`) or on in `layer`'s config file, the one way every surface
/// (`ctxkit skills enable|disable`, `ctxkit serve`) does it; returns the file's path.
pub(crate) fn toggle_skill(
    config: &Config,
    layer: Layer,
    name: &str,
    disable: bool,
) -> Result<PathBuf, CliError> {
    let file = config.file(layer)?;
    // Turning on in the project what the user's config turns off needs a record in the
    // project's file, or the user's word would still hold there.
    let override_user = !disable && layer == Layer::Project && config.disables_in(Layer::User, name);
    set_disabled(&file, name, disable, override_user)?;
    Ok(file.path())
}

/// Turn `name` off (or back on) in the config `file`, keeping the rest of the file (comments
/// included) as it was, under the file's lock so concurrent toggles all apply. Turning a skill
/// on in the project file while the user file disables it records it under `enabled`, so the
/// project wins.
fn set_disabled(
    file: &ConfinedFile,
    name: &str,
    disabled: bool,
    override_user: bool,
) -> Result<(), CliError> {
    let path = file.path();
    let _lock = file.lock()?;
    let text = read_text(file)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        CliError::new(format!(
            "the config file `{}` is not valid: {}",
            path.display(),
            e.message()
        ))
    })?;
    let skills = doc
        .entry("skills")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| CliError::new(format!("`skills` in `{}` is not a table", path.display())))?;
    let (add_to, remove_from) = if disabled {
        ("disabled", "enabled")
    } else {
        ("enabled", "disabled")
    };
    edit_list(skills, remove_from, name, false, &path)?;
    edit_list(skills, add_to, name, disabled || override_user, &path)?;
    file.write(doc.to_string().as_bytes())
}

/// Make `name` present (`present`) or absent in the string array `key` of `table`.
fn edit_list(
    table: &mut dyn toml_edit::TableLike,
    key: &str,
    name: &str,
    present: bool,
    path: &Path,
) -> Result<(), CliError> {
    if !present && table.get(key).is_none() {
        return Ok(());
    }
    let item = table
        .entry(key)
        .or_insert(toml_edit::value(toml_edit::Array::new()));
    let array = item
        .as_array_mut()
        .ok_or_else(|| CliError::new(format!("`skills.{key}` in `{}` is not a list", path.display())))?;
    array.retain(|v| !v.as_str().is_some_and(|s| s.eq_ignore_ascii_case(name)));
    if present {
        array.push(name);
    }
    Ok(())
}

/// A trust entry names a folder when it is written like a path: with a slash, or `.`/`~`.
fn is_folder(entry: &str) -> bool {
    entry.contains('/') || entry.contains(std::path::MAIN_SEPARATOR) || entry.starts_with(['.', '~'])
}

fn expand_home(entry: &str) -> PathBuf {
    match (entry.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConfigFile {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn entries_with_a_slash_are_folders_and_the_rest_names() {
        let config = Config {
            user: file("[tools]\ntrust = [\"/opt/skills\"]\ninterpreters = [\"python3\"]"),
            ..Config::default()
        };
        let options = config.exec_options(&["file-search".into(), "other/".into()], &["node".into()], None);
        assert_eq!(options.trust.skills, ["file-search"]);
        assert_eq!(
            options.trust.roots,
            [PathBuf::from("/opt/skills"), PathBuf::from("other/")]
        );
        assert_eq!(options.allow_interpreters, ["python3", "node"]);
        assert!(!options.allow_scripts);
    }

    #[test]
    fn the_user_config_trusts_absolute_folders_only() {
        for entry in ["file-search", "./skills", "skills/"] {
            let config = file(&format!("[tools]\ntrust = [\"{entry}\"]"));
            assert!(check_user(&config, Path::new("c.toml")).is_err(), "{entry}");
        }
        let config = file("[[skills.roots]]\npath = \"team\"\ntrusted = true");
        assert!(check_user(&config, Path::new("c.toml")).is_err());
        assert!(check_user(&file("[tools]\ntrust = [\"/opt/skills/\"]"), Path::new("c.toml")).is_ok());
    }

    #[test]
    fn a_project_config_never_grants_trust_or_leaves_the_project() {
        for text in [
            "[tools]\ntrust = [\"/x/\"]",
            "[hooks]\nshell = true",
            "[mcp]\nservers = [\"x\"]",
            "[[skills.roots]]\npath = \"s\"\ntrusted = true",
            "[[skills.roots]]\npath = \"../s\"",
            "[skills]\nexternal = [\"/etc/x.json\"]",
        ] {
            let err = check_project(&file(text), Path::new("p.toml")).unwrap_err();
            assert!(err.message().contains("p.toml"), "{text}: {}", err.message());
        }
        assert!(check_project(
            &file("[skills]\ndisabled = [\"a\"]\nmax_skills = 2"),
            Path::new("p.toml")
        )
        .is_ok());
    }

    #[test]
    fn the_project_wins_over_the_user_and_may_turn_a_skill_back_on() {
        let config = Config {
            user: file("[skills]\ndisabled = [\"a\", \"b\"]\nmax_skills = 5\nmode = \"full\""),
            project: file("[skills]\ndisabled = [\"c\"]\nenabled = [\"A\"]\nmax_skills = 2"),
            ..Config::default()
        };
        assert_eq!(config.disabled(), ["c", "b"]);
        assert_eq!(config.max_skills(), Some(2));
        assert_eq!(config.mode(), Some(Mode::Full));
        assert_eq!(config.token_budget(), None);
    }

    #[test]
    fn unknown_keys_and_bad_modes_are_errors() {
        assert!(toml::from_str::<ConfigFile>("[tools]\ntrusted = [\"x\"]").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let file = ConfinedFile::in_folder_of(&path);
        std::fs::write(&path, "[skills]\nmode = \"fast\"").unwrap();
        assert!(read(&file).unwrap_err().message().contains("unknown skill mode"));
        std::fs::write(&path, "#".repeat(MAX_CONFIG_BYTES as usize + 1)).unwrap();
        assert!(read(&file).unwrap_err().message().contains("larger than"));
    }

    #[test]
    fn disabling_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = ConfinedFile::new(dir.path(), PROJECT_CONFIG);
        let path = file.path();
        set_disabled(&file, "a", true, false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("# mine\n{text}")).unwrap();
        set_disabled(&file, "b", true, false).unwrap();
        set_disabled(&file, "A", false, false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine"), "{text}");
        assert_eq!(read(&file).unwrap().unwrap().skills.disabled, ["b"]);
        set_disabled(&file, "c", false, true).unwrap();
        assert_eq!(read(&file).unwrap().unwrap().skills.enabled, ["c"]);
    }
}
