//! What several commands share: where skills come from, the instructions, and the agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use ctxkit::{Agent, Assembly, BpeCounter, ChatModel, MemoCounter};
use ctxkit_skills::{
    Mode, SelectOptions, SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source,
};

use crate::memory::open::{
    default_project, memory_db_path, normalize_project, open_hook, open_provider, open_provider_with,
};
use crate::user_config::UserConfig;
use crate::CliError;

/// Instructions used when `--instructions` is not given.
pub const DEFAULT_INSTRUCTIONS: &str =
    "You are a helpful assistant. Answer concisely and follow the skills below when they apply.";

/// Where skills are loaded from.
#[derive(Args, Debug, Clone, Default)]
pub struct SkillDirs {
    /// A folder of skills (repeatable). Default: the project roots under the current directory
    /// (skills/, .skills/, .agents/skills/, .claude/skills/ and convention files like AGENTS.md).
    #[arg(long = "dir", value_name = "DIR", global = true)]
    pub dirs: Vec<PathBuf>,
}

impl SkillDirs {
    /// The roots to load; an explicit folder that does not exist is an error naming it.
    pub fn roots(&self) -> Result<Vec<SkillRoot>, CliError> {
        if self.dirs.is_empty() {
            let cwd = std::env::current_dir()
                .map_err(|e| CliError::new(format!("cannot read the current directory: {e}")))?;
            return Ok(SkillRoot::project_defaults(&cwd));
        }
        self.dirs
            .iter()
            .map(|d| {
                if d.is_dir() {
                    Ok(SkillRoot::new(d, Source::Project))
                } else {
                    Err(CliError::new(format!(
                        "skills folder `{}` does not exist or is not a folder",
                        d.display()
                    )))
                }
            })
            .collect()
    }

    /// Load the library; diagnostics are logged as warnings (use `skills validate` to see them).
    pub fn library(&self) -> Result<Arc<SkillLibrary>, CliError> {
        Ok(load_library(self.roots()?))
    }
}

/// Load a library from `roots`: the one way every command gets its skills, through the index
/// cache in the user's cache folder (see `crate::places`). Diagnostics are logged as warnings
/// (use `skills validate` to see them).
pub fn load_library(roots: Vec<SkillRoot>) -> Arc<SkillLibrary> {
    let library = match crate::places::cache_dir() {
        Some(dir) => SkillLibrary::load_cached(roots, dir),
        None => SkillLibrary::load(roots),
    };
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

/// Options of every command that assembles a request.
#[derive(Args, Debug, Clone)]
pub struct RequestOptions {
    /// A folder of skills (repeatable); default: the project roots under the current directory.
    #[arg(long = "skills", value_name = "DIR")]
    pub skills: Vec<PathBuf>,
    /// A file with the agent's base instructions (e.g. AGENTS.md); default: a short built-in prompt.
    #[arg(long, value_name = "FILE")]
    pub instructions: Option<PathBuf>,
    /// How skills are injected: full, triggered, on-demand or hybrid.
    #[arg(long, default_value = "hybrid", value_parser = parse_mode)]
    pub mode: Mode,
    /// The most skills selected by their triggers per message.
    #[arg(long, default_value_t = 3)]
    pub max_skills: usize,
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
    /// A shell or interpreter (sh, python3, node, env, …) that trusted skills' tools may run
    /// (repeatable). Default: none, whatever a skill's allowlist says.
    #[arg(long = "allow-interpreter", value_name = "PROGRAM")]
    pub allow_interpreters: Vec<String>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

impl RequestOptions {
    pub fn skill_dirs(&self) -> SkillDirs {
        SkillDirs {
            dirs: self.skills.clone(),
        }
    }

    pub fn instructions(&self) -> Result<String, CliError> {
        match &self.instructions {
            None => Ok(DEFAULT_INSTRUCTIONS.to_string()),
            Some(path) => read_text(path),
        }
    }

    /// The memory database the agent uses: `--memory`, else the default one; none with
    /// `--no-memory`, or with `--read-only` when the default database does not exist yet.
    pub fn memory_db(&self) -> Result<Option<PathBuf>, CliError> {
        if self.no_memory {
            return Ok(None);
        }
        if self.read_only && self.memory.is_none() {
            let db = crate::places::memory_db()?;
            let server = db.to_str().is_some_and(ctxkit_memory::is_postgres_url);
            return Ok((server || db.is_file()).then_some(db));
        }
        memory_db_path(self.memory.as_deref()).map(Some)
    }

    pub fn project(&self) -> Result<String, CliError> {
        match &self.project {
            Some(p) => Ok(normalize_project(p)),
            None => default_project(),
        }
    }

    /// An agent over `library` in `mode`, with project memory unless `--no-memory` and the
    /// tools of mounted MCP servers; with `baseline`, its run reports also give the tokens
    /// `full` mode would have sent.
    pub fn agent(
        &self,
        library: &Arc<SkillLibrary>,
        mode: Mode,
        model: Arc<dyn ChatModel>,
        baseline: bool,
        counter: &Arc<MemoCounter>,
        mcp_servers: Vec<ctxkit::mcp::McpTools>,
    ) -> Result<Agent, CliError> {
        // Skill tools (e.g. file search) work on the project the CLI runs in.
        let tools = UserConfig::load()?.exec_options(
            &self.trust_tools,
            &self.allow_interpreters,
            std::env::current_dir().ok(),
        );
        let config = SkillConfig {
            mode,
            select: SelectOptions {
                max_skills: self.max_skills,
                ..Default::default()
            },
            // `full` is the baseline: what sending every skill costs, without a budget.
            token_budget: (mode != Mode::Full).then_some(SkillConfig::DEFAULT_TOKEN_BUDGET),
            tools,
            counter: counter.clone(),
            ..Default::default()
        };
        let (model_name, extraction_model) = (model.name().to_string(), model.clone());
        let mut builder = Agent::builder()
            .instructions(self.instructions()?)
            .model(model)
            .token_counter(counter.clone())
            .project(self.project()?)
            .assembly(if self.lazy {
                Assembly::Lazy
            } else {
                Assembly::PerRequest
            })
            .provider(SkillContextProvider::new(library.clone(), config));
        if let Some(db) = self.memory_db()? {
            let project = self.project()?;
            builder = builder.provider(if self.read_only {
                open_provider_with(&db, &project, true)?
            } else {
                open_provider(&db, &project)?
            });
            if !self.read_only {
                // The dry-run model's replies are summaries, not extraction JSON: extract only
                // with a real model.
                let extractor = (model_name != "dry-run").then_some(extraction_model);
                builder = builder.hook(open_hook(&db, &project, extractor)?);
            }
        }
        for server in mcp_servers {
            builder = builder.mcp(server);
        }
        if baseline {
            builder = builder.report_baseline();
        }
        Ok(builder.build()?)
    }
}

/// Token counts remembered across commands in the cache folder: without them every command
/// would count every skill body again (a second for 650 skills).
pub fn token_counter() -> Arc<MemoCounter> {
    let bpe = Arc::new(BpeCounter);
    Arc::new(match crate::places::cache_dir() {
        Some(dir) => MemoCounter::open(bpe, dir.join("tokens-o200k.bin")),
        None => MemoCounter::new(bpe),
    })
}

/// Keep what `counter` counted for the next command; a cache, so a failure is only logged.
pub fn save_counts(counter: &MemoCounter) {
    if let Err(e) = counter.save() {
        tracing::debug!("token counts not saved: {e}");
    }
}

/// Read a UTF-8 text file, with an error naming it.
pub fn read_text(path: &Path) -> Result<String, CliError> {
    let bytes =
        std::fs::read(path).map_err(|e| CliError::new(format!("cannot read `{}`: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|e| {
        CliError::new(format!(
            "`{}` is not valid UTF-8 (bad byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}
