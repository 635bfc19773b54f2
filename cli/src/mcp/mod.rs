//! `ctxkit mcp`: ctxkit's skills and project memory as a Model Context Protocol server, so any
//! MCP host (Claude Code, Codex, VS Code, Claude Desktop, Cursor) gets trigger-matched skills,
//! `read_skill` by name (and a skill's files by the paths it lists), whole skill folders
//! through the Skills extension, and a project memory that refuses secrets.
//!
//! - [`server`] is the protocol handler: capabilities, resources, prompts, the Skills
//!   extension, and the watcher that announces a changed skill index;
//! - [`http`] serves the same handler over streamable HTTP (`--http ADDR`, loopback unless
//!   `--allow-remote`), with [`replay`] keeping recent events for clients that resume a
//!   stream;
//! - [`stdio`] is the line transport of standard input and output, which answers a line that
//!   is not a message instead of dropping it;
//! - [`tools`] holds the seven tools and their bounded, checked arguments;
//! - [`client`] turns `chat --mcp` command lines into the core's `ctxkit::mcp::McpServer`
//!   (the other direction: an MCP server's tools in ctxkit's agent);
//! - [`skills`] renders skills as the resources, prompts and extension entries the handler
//!   serves, from the index in memory (no argument ever opens a file).
//!
//! Standard output carries protocol messages only: logging goes to standard error (see
//! `init_tracing` in `main.rs`), and nothing here prints.

pub(crate) mod client;
mod http;
mod replay;
mod server;
mod skills;
mod stdio;
mod tools;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ctxkit_skills::Mode;
use rmcp::ServiceExt;

pub(crate) use self::server::CtxkitServer;
use crate::error::CliError;
use crate::memory::open::{default_project, memory_db_path, normalize_project, open_store_with};
use crate::setup::SkillDirs;
use crate::user_config::Config;

#[derive(Args, Debug, Clone)]
pub(crate) struct McpArgs {
    /// A folder of skills (repeatable); default: the project roots under the current directory.
    #[arg(long = "skills", value_name = "[TIER:]DIR")]
    pub skills: Vec<crate::setup::TierDir>,
    /// The memory database, a SQLite file or a postgres:// URL (default: $CTXKIT_MEMORY_DB, else ctxkit/memory.db in the user's
    /// data folder).
    #[arg(long, value_name = "DB")]
    pub memory: Option<PathBuf>,
    /// The project memories are scoped to; default: the current directory.
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// What `match_skills` returns: the bodies of the skills that fire (full, triggered,
    /// hybrid), or their names and descriptions only, to be read with `read_skill` (on-demand).
    /// Default: the config's `[skills] mode`, else hybrid.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// The most skills `match_skills` selects by their triggers, unless the call asks for fewer.
    /// Default: the config's `[skills] max_skills`, else 3.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=tools::MAX_SKILLS as u64))]
    pub max_skills: Option<u64>,
    /// Seconds between checks of the skill folders; a change sends `resources/list_changed`
    /// and `prompts/list_changed` to every session, over stdio or HTTP (0: never check).
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    pub watch: u64,
    /// Serve over streamable HTTP at http://ADDR/mcp instead of standard input and output:
    /// PORT (on 127.0.0.1), IP:PORT or localhost:PORT.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Let `--http` bind an address other than loopback; there is no authentication.
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

/// Serve one client over standard input and output until it closes the connection, or, with
/// `--http`, every client that connects until the process is stopped.
pub(crate) async fn run(args: McpArgs) -> Result<(), CliError> {
    // The address first: a refused one must not create a memory database.
    let addr = (args.http.as_deref())
        .map(|addr| http::parse_addr(addr, args.allow_remote))
        .transpose()?;
    let mut server = build(&args).await?;
    if args.watch > 0 {
        server = server.watching(Duration::from_secs(args.watch));
    }
    if let Some(addr) = addr {
        return http::serve(server, addr).await;
    }
    let transport = stdio::LineTransport::new(tokio::io::stdin(), tokio::io::stdout());
    let service = server
        .session()
        .serve(transport)
        .await
        .map_err(|e| CliError::caused_by(format!("the MCP session did not start: {e}"), e))?;
    service
        .waiting()
        .await
        .map_err(|e| CliError::caused_by(format!("the MCP session ended with an error: {e}"), e))?;
    Ok(())
}

/// The server for `args`: skills through the shared index cache, the memory database every
/// command uses, and the project scoped as `ctxkit context` scopes it.
async fn build(args: &McpArgs) -> Result<CtxkitServer, CliError> {
    let dirs = SkillDirs {
        dirs: args.skills.clone(),
    };
    let dir = crate::setup::current_dir()?;
    let config = Config::load(&dir)?;
    let db = memory_db_path(args.memory.as_deref())?;
    let store = open_store_with(Some(&db), ctxkit_memory::SearchIndex::Background)?;
    let project = match &args.project {
        Some(p) => normalize_project(p),
        None => default_project()?,
    };
    if let Err(e) = crate::learned::sync(&*store, &db, &project).await {
        tracing::warn!("the learned skills may be out of date: {}", e.message());
    }
    let library = dirs.library(&config, crate::learned::root(&db, &project))?;
    let store = store.shared();
    let mut skills = config.skill_config(args.mode, args.max_skills.and_then(|n| usize::try_from(n).ok()));
    skills.select.max_skills = skills.select.max_skills.clamp(1, tools::MAX_SKILLS);
    Ok(CtxkitServer::new(
        crate::embeddings::skill_provider(&config, library, skills, false)?,
        store,
        project,
        Some(&dir),
    ))
}

#[cfg(test)]
mod tests;
