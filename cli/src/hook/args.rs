//! The options every event command takes.

use std::path::PathBuf;

use clap::Args;

/// Options of every event command.
#[derive(Args, Debug, Clone)]
pub(crate) struct EventArgs {
    /// A folder of skills (repeatable). Default: the project roots under the event's `cwd`
    /// (.claude/skills, skills/, .skills/, .agents/skills/, convention files) plus the user's
    /// ~/.claude/skills.
    #[arg(long = "skills", value_name = "[TIER:]DIR")]
    pub skills: Vec<crate::setup::TierDir>,
    /// The memory database, a SQLite file or a postgres:// URL (default: $CTXKIT_MEMORY_DB, else ctxkit/memory.db in the user's
    /// data directory).
    #[arg(long, value_name = "DB", conflicts_with = "no_memory")]
    pub memory: Option<PathBuf>,
    /// Inject no project memories and carry out no memory commands.
    #[arg(long)]
    pub no_memory: bool,
    /// The most characters printed on stdout (the host cuts longer output to a preview).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(200..=1_000_000))]
    pub budget: u64,
    /// The most skills sent per prompt, always-on and detected ones included (default: the
    /// config's, else 3).
    #[arg(long)]
    pub max_skills: Option<usize>,
    /// Seconds from the start until the answer is printed, whatever is still loading (the
    /// hosts give a hook 10 s at most, then drop it). Skills still loading then are finished in
    /// the background and cached, so the next events answer in full.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS", value_parser = parse_deadline)]
    pub deadline: f64,
    /// Exit 1 on bad input or setup instead of 0 (for tests; a host hook must not fail).
    #[arg(long)]
    pub strict: bool,
    /// Internal: load the skills of this project folder into the cache, with no deadline and
    /// no output (what a hook that ran out of time starts in the background).
    #[arg(long, hide = true, value_name = "DIR")]
    pub finish_loading: Option<PathBuf>,
}

fn parse_deadline(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.1..=600.0).contains(&s) => Ok(s),
        _ => Err("expected a number of seconds from 0.1 to 600".into()),
    }
}
