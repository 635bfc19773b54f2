//! What several commands share: where skills come from, the instructions, and the agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use ctxkit::{Agent, AgentBuilder, Assembly, BpeCounter, ChatModel, MemoCounter, Phase, TokenCounter};
use ctxkit_skills::{
    LoadOptions, Mode, SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source,
    StandingInstructions, STANDING_FILES,
};

use crate::error::CliError;
use crate::memory::open::{
    default_project, memory_db_path, memory_hook, memory_provider, normalize_project, open_agent_store,
    server_url,
};
use crate::memory::Store;
use crate::user_config::Config;

/// Instructions used when `--instructions` is not given.
pub(crate) const DEFAULT_INSTRUCTIONS: &str =
    "You are a helpful assistant. Answer concisely and follow the skills below when they apply.";

/// A skills folder from the command line, with the tier its skills get: `PATH`, or
/// `TIER:PATH` with a tier of builtin, external, user or project (the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TierDir {
    pub source: Source,
    pub path: PathBuf,
}

impl std::str::FromStr for TierDir {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        const TIERS: [(&str, Source); 4] = [
            ("builtin:", Source::Builtin),
            ("external:", Source::External),
            ("user:", Source::User),
            ("project:", Source::Project),
        ];
        let (source, path) = TIERS
            .iter()
            .find_map(|(prefix, source)| s.strip_prefix(prefix).map(|p| (*source, p)))
            .unwrap_or((Source::Project, s));
        if path.is_empty() {
            return Err(format!("`{s}` names no folder"));
        }
        Ok(TierDir {
            source,
            path: PathBuf::from(path),
        })
    }
}

/// Where skills are loaded from.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct SkillDirs {
    /// A folder of skills (repeatable), `DIR` or `TIER:DIR` (tier builtin, external, user or
    /// project, the default). Default: the project roots under the current directory (skills/,
    /// .skills/, .agents/skills/, .claude/skills/, convention files like AGENTS.md, Cursor
    /// rules and Copilot instructions). Roots of the config files are added either way.
    #[arg(long = "dir", value_name = "[TIER:]DIR", global = true)]
    pub dirs: Vec<TierDir>,
}

impl SkillDirs {
    /// The roots to load; an explicit folder that does not exist is an error naming it.
    pub(crate) fn roots(&self) -> Result<Vec<SkillRoot>, CliError> {
        if self.dirs.is_empty() {
            return Ok(SkillRoot::project_defaults(&current_dir()?));
        }
        self.dirs
            .iter()
            .map(|d| {
                if d.path.is_dir() {
                    Ok(SkillRoot::new(&d.path, d.source))
                } else {
                    Err(CliError::new(format!(
                        "skills folder `{}` does not exist or is not a folder",
                        d.path.display()
                    )))
                }
            })
            .collect()
    }

    /// Load the library with `config`'s roots and disabled skills, and `learned` (the root of
    /// the project's accepted learned skills, see [`crate::learned`]); diagnostics are logged
    /// as warnings (use `skills validate` to see them).
    pub(crate) fn library(
        &self,
        config: &Config,
        learned: Option<SkillRoot>,
    ) -> Result<Arc<SkillLibrary>, CliError> {
        Ok(load_library(
            self.roots()?.into_iter().chain(learned).collect(),
            config,
        ))
    }
}

/// The current directory, with an error that says so.
pub(crate) fn current_dir() -> Result<PathBuf, CliError> {
    std::env::current_dir()
        .map_err(|e| CliError::caused_by(format!("cannot read the current directory: {e}"), e))
}

/// Load a library from `roots` plus the config's roots, without the skills the config turns
/// off: the one way every command (and so every entry point: context, chat, hooks, MCP) gets
/// its skills, through the index cache in the user's cache folder (see `crate::places`).
/// Diagnostics are logged as warnings (use `skills validate` to see them).
pub(crate) fn load_library(mut roots: Vec<SkillRoot>, config: &Config) -> Arc<SkillLibrary> {
    roots.extend(config.roots());
    let options = LoadOptions {
        cache: crate::places::cache_dir(),
        disabled: config.disabled(),
    };
    let library = SkillLibrary::load_with(roots, options);
    for d in library.snapshot().diagnostics() {
        tracing::warn!("{d}");
    }
    let library = Arc::new(library);
    // A command loads one library and keeps it to the end; the operating system takes it back
    // at exit faster than freeing thousands of skills one by one (10 % of a hook's time at
    // 10,000 skills).
    std::mem::forget(library.clone());
    library
}

/// Follow the skills turned on and off in `dir`'s config since `library` loaded (`ctxkit skills
/// disable` in another terminal, the `serve` page): a long-running command calls this before
/// each message, so a toggle counts from the next one. Other settings are read at start.
/// A config that no longer reads keeps the skills as they were, with a warning.
pub(crate) fn follow_toggles(library: &SkillLibrary, dir: &Path) {
    match Config::load(dir) {
        Ok(config) => {
            if let Some(index) = library.set_disabled(config.disabled()) {
                tracing::info!(
                    active = index.len(),
                    disabled = index.disabled().len(),
                    "skills turned on or off in the config; the new list is in use"
                );
            }
        }
        Err(e) => tracing::warn!("the skills turned on and off stay as they were: {e}"),
    }
}

/// What a command that assembles requests loads once: the config and the skill library, and
/// the project folder whose standing instructions its agents send.
pub(crate) struct Loaded {
    pub config: Config,
    pub library: Arc<SkillLibrary>,
    pub dir: PathBuf,
}

/// Options of every command that assembles a request.
#[derive(Args, Debug, Clone)]
pub(crate) struct RequestOptions {
    /// A folder of skills (repeatable), `DIR` or `TIER:DIR`; default: the project roots under
    /// the current directory.
    #[arg(long = "skills", value_name = "[TIER:]DIR")]
    pub skills: Vec<TierDir>,
    /// A file with the agent's instructions, sent instead of the project's AGENTS.md and
    /// CLAUDE.md and the built-in prompt (those two files then stay skills).
    #[arg(long, value_name = "FILE")]
    pub instructions: Option<PathBuf>,
    /// The most tokens of the project's AGENTS.md and CLAUDE.md opening every request, cut
    /// with a marker past it; 0 sends neither (default: the config's `[instructions]
    /// max_tokens`, else 8,000).
    #[arg(long, value_name = "N", conflicts_with = "instructions")]
    pub instructions_tokens: Option<usize>,
    /// How skills are injected: full, triggered, on-demand or hybrid (default: the config's
    /// `[skills] mode`, else hybrid).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// The most skills sent per message, always-on and detected ones included; a skill named
    /// with `$name` is outside it (default: the config's, else 3).
    #[arg(long)]
    pub max_skills: Option<usize>,
    /// The phase of the host's work (planning, implementation or retry): skills whose
    /// `inject_into` leaves it out are not injected. Default: every phase.
    #[arg(long, value_parser = parse_phase)]
    pub phase: Option<Phase>,
    /// The memory database whose project memories are injected, a SQLite file or a postgres://
    /// URL (default: the one `ctxkit memory` uses: $CTXKIT_MEMORY_DB, else ctxkit/memory.db in
    /// the user's data folder).
    #[arg(long, value_name = "DB", conflicts_with = "no_memory")]
    pub memory: Option<PathBuf>,
    /// No project memory: nothing injected, nothing remembered.
    #[arg(long)]
    pub no_memory: bool,
    /// Use project memory without writing to it: no access counts, no "remember …", no episodes,
    /// no maintenance at the end of the session.
    #[arg(long)]
    pub read_only: bool,
    /// Ask the model for no memories at the session's end (default: `[memory] extract` in the
    /// config, else on).
    #[arg(long)]
    pub no_extract: bool,
    /// Propose no skill at the session's end (default: `[learn] enabled` in the config, else
    /// on).
    #[arg(long)]
    pub no_learn: bool,
    /// The project memories are scoped to; default: the current directory.
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// Lazy injection: the full context once into the conversation, then only what changed.
    #[arg(long)]
    pub lazy: bool,
    /// Let a skill (by name) or every skill under a folder (written with a `/`, like
    /// `./skills/`) offer and run the tools of its tools.json (repeatable). Default: no
    /// skill's tools run; the user config's `[tools] trust` adds to this.
    #[arg(long = "trust-tools", value_name = "SKILL|DIR/")]
    pub trust_tools: Vec<String>,
    /// A shell, interpreter, launcher or program with a shell escape (sh, python3, env,
    /// sqlite3, git, …) that trusted skills' tools may run (repeatable). Default: none,
    /// whatever a skill's allowlist says.
    #[arg(long = "allow-interpreter", value_name = "PROGRAM")]
    pub allow_interpreters: Vec<String>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

fn parse_phase(s: &str) -> Result<Phase, String> {
    s.parse()
}

impl RequestOptions {
    pub(crate) fn skill_dirs(&self) -> SkillDirs {
        SkillDirs {
            dirs: self.skills.clone(),
        }
    }

    /// The config in force in the current directory (read once per command) and the skills
    /// it and the command line name, the project's learned skills brought in step first.
    pub(crate) async fn load(&self) -> Result<Loaded, CliError> {
        self.sync_learned().await?;
        self.load_in(&current_dir()?)
    }

    /// [`load`](Self::load) with `dir`'s config in place of the current directory's, and the
    /// learned skills as last synced. The project's standing instructions, when they are sent,
    /// are not loaded as skills.
    pub(crate) fn load_in(&self, dir: &Path) -> Result<Loaded, CliError> {
        let config = Config::load(dir)?;
        let learned = match self.memory_db()? {
            Some(db) => crate::learned::root(&db, &self.project()?),
            None => None,
        };
        let standing = self.standing_tokens(&config) > 0;
        let roots = self
            .skill_dirs()
            .roots()?
            .into_iter()
            .map(|root| {
                if standing {
                    root.leaving_out(&STANDING_FILES)
                } else {
                    root
                }
            })
            .chain(learned)
            .collect();
        let library = load_library(roots, &config);
        Ok(Loaded {
            config,
            library,
            dir: dir.to_path_buf(),
        })
    }

    /// Write the project's accepted learned skills where [`load_in`](Self::load_in) finds
    /// them (nothing without memory).
    pub(crate) async fn sync_learned(&self) -> Result<(), CliError> {
        crate::learned::sync_before_loading(self.memory_db()?.as_deref(), &self.project()?, self.read_only)
            .await;
        Ok(())
    }

    /// The injection mode: `--mode`, else the config's, else hybrid.
    pub(crate) fn mode(&self, config: &Config) -> Mode {
        config.skill_config(self.mode, None).mode
    }

    /// The most tokens of standing instructions: none with `--instructions`, else
    /// `--instructions-tokens`, else the config's (see [`Config::standing_tokens`]).
    fn standing_tokens(&self, config: &Config) -> usize {
        if self.instructions.is_some() {
            return 0;
        }
        self.instructions_tokens
            .unwrap_or_else(|| config.standing_tokens(StandingInstructions::DEFAULT_TOKENS))
    }

    /// The agent's instructions: `--instructions FILE`, else the standing instructions of the
    /// project in `loaded` (its `AGENTS.md`, then `CLAUDE.md`, cut to their budget) before
    /// the built-in prompt. The one text every command's agent opens its requests with.
    pub(crate) fn instructions(
        &self,
        loaded: &Loaded,
        counter: &dyn TokenCounter,
    ) -> Result<String, CliError> {
        if let Some(path) = &self.instructions {
            return crate::text_file::read_text(path);
        }
        let standing = StandingInstructions::read(&loaded.dir, self.standing_tokens(&loaded.config), counter);
        for d in &standing.diagnostics {
            tracing::warn!("{d}");
        }
        if standing.text.is_empty() {
            Ok(DEFAULT_INSTRUCTIONS.to_string())
        } else {
            Ok(format!("{}\n\n{DEFAULT_INSTRUCTIONS}", standing.text))
        }
    }

    /// The memory database the agent uses: `--memory`, else the default one; none with
    /// `--no-memory`, or with `--read-only` when the database file does not exist (read-only
    /// creates nothing, not even its folder).
    pub(crate) fn memory_db(&self) -> Result<Option<PathBuf>, CliError> {
        if self.no_memory {
            return Ok(None);
        }
        if self.read_only {
            let db = match &self.memory {
                Some(db) => db.clone(),
                None => crate::places::memory_db()?,
            };
            let server = server_url(&db)?.is_some();
            return Ok((server || db.is_file()).then_some(db));
        }
        memory_db_path(self.memory.as_deref()).map(Some)
    }

    /// The memory store the agent uses, opened once for the command (see [`Self::memory_db`]):
    /// the provider, hook, learner and usage [`Self::agent`] builds all share it.
    pub(crate) fn open_memory(&self) -> Result<Option<Store>, CliError> {
        self.memory_db()?
            .map(|db| open_agent_store(&db, self.read_only))
            .transpose()
    }

    pub(crate) fn project(&self) -> Result<String, CliError> {
        match &self.project {
            Some(p) => Ok(normalize_project(p)),
            None => default_project(),
        }
    }

    /// The skills provider of these options: what the agent injects skills with, and what
    /// explains its choice.
    pub(crate) fn skills_provider(
        &self,
        config: &Config,
        library: &Arc<SkillLibrary>,
        mode: Mode,
        counter: &Arc<MemoCounter>,
    ) -> Result<SkillContextProvider, CliError> {
        // Skill tools (e.g. file search) work on the project the CLI runs in.
        let tools = config.exec_options(
            &self.trust_tools,
            &self.allow_interpreters,
            std::env::current_dir().ok(),
        );
        let skill_config = SkillConfig {
            tools,
            counter: counter.clone(),
            ..config.skill_config(Some(mode), self.max_skills)
        };
        crate::embeddings::skill_provider(config, library.clone(), skill_config, false)
    }

    /// An agent with `skills` (from [`Self::skills_provider`], kept by a command that also
    /// explains their choice), project memory unless `--no-memory` and the tools of mounted
    /// MCP servers, ready for a command to add its own limits and build.
    pub(crate) fn agent(
        &self,
        loaded: &Loaded,
        skills: Arc<SkillContextProvider>,
        model: Arc<dyn ChatModel>,
        counter: &Arc<MemoCounter>,
        mcp_servers: Vec<ctxkit::mcp::McpTools>,
        memory: Option<&Store>,
    ) -> Result<AgentBuilder, CliError> {
        let Loaded { config, library, .. } = loaded;
        // The hooks of the skills selected in each run, for the skills trusted like tools.
        let skill_hooks = skills.hooks(config.hook_options());
        let (model_name, extraction_model) = (model.name().to_string(), model.clone());
        let mut builder = Agent::builder()
            .instructions(self.instructions(loaded, counter.as_ref())?)
            .model(model)
            .token_counter(counter.clone())
            .project(self.project()?)
            .assembly(if self.lazy {
                Assembly::Lazy
            } else {
                Assembly::PerRequest
            })
            .provider(skills)
            .hook(skill_hooks);
        if let Some(store) = memory {
            let project = self.project()?;
            builder = builder.provider(memory_provider(store, &project, self.read_only));
            if !self.read_only {
                // The dry-run model's replies are summaries, not extraction JSON or skills:
                // extract and learn only with a real model.
                let real = (model_name != "dry-run").then_some(extraction_model);
                let extract = !self.no_extract && config.extract_memories();
                let learn = !self.no_learn && config.learn_enabled();
                if let Some(model) = real.as_ref().filter(|_| learn) {
                    let usage =
                        ctxkit_learn::LearnedUsage::new(store.shared(), library.clone(), project.clone());
                    let learner = crate::memory::open::skill_learner(
                        model.clone(),
                        store.shared(),
                        library.clone(),
                        project.clone(),
                        config.learn_options(),
                    )?;
                    builder = builder.provider(usage).hook(learner);
                }
                builder = builder.hook(memory_hook(store, &project, real.filter(|_| extract)));
            }
        }
        for server in mcp_servers {
            builder = builder.mcp(server);
        }
        if let Some(phase) = self.phase {
            builder = builder.phase(phase);
        }
        Ok(builder)
    }
}

/// Token counts remembered across commands in the cache folder: without them every command
/// would count every skill body again (a second for 650 skills).
pub(crate) fn token_counter() -> Arc<MemoCounter> {
    let bpe = Arc::new(BpeCounter);
    Arc::new(match crate::places::cache_dir() {
        Some(dir) => MemoCounter::open(bpe, dir.join("tokens-o200k.bin")),
        None => MemoCounter::new(bpe),
    })
}

/// Keep what `counter` counted for the next command; a cache, so a failure is only logged.
pub(crate) fn save_counts(counter: &MemoCounter) {
    if let Err(e) = counter.save() {
        tracing::debug!("token counts not saved: {e}");
    }
}
