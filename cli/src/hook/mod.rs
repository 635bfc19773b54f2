//! `ctxkit hook HOST`: ctxkit inside an agent that already runs (Claude Code, Codex, Gemini
//! CLI). The host starts one process per event, writes the event as JSON on standard input and
//! adds what the process prints, in the host's protocol, to the model's context.
//!
//! - [`event`] reads and checks the event (bounded, untrusted);
//! - [`context`] is the one function that decides the text: the skills a prompt fires, the
//!   project memories, memory commands carried out, the always-on context at session start;
//! - [`session`] remembers per session which skills were already sent;
//! - [`claude_code`], [`codex`], [`gemini`] map their host's event names and format its answer;
//! - [`install`] writes the hook entries into Claude Code's `settings.json`.
//!
//! A hook must never block the user's prompt: every problem with the input or the setup is one
//! line on standard error and exit code 0 with nothing on standard output, unless `--strict`.

mod claude_code;
mod codex;
mod context;
mod event;
mod gemini;
mod install;
mod session;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};

use self::event::{Event, Host};
use crate::confined_file::ConfinedFile;
use crate::error::CliError;

#[derive(Args, Debug)]
pub(crate) struct HookArgs {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Subcommand, Debug)]
enum HookCommand {
    /// Answer one Claude Code hook event (UserPromptSubmit, SessionStart) read from stdin.
    ClaudeCode(EventArgs),
    /// Answer one Codex hook event (UserPromptSubmit, SessionStart, PreCompact) read from stdin.
    Codex(EventArgs),
    /// Answer one Gemini CLI hook event (BeforeAgent, SessionStart, PreCompress) read from stdin.
    Gemini(EventArgs),
    /// Add ctxkit's hook entries to a host's settings (other settings and hooks are kept).
    Install(InstallArgs),
    /// Remove ctxkit's hook entries from a host's settings (nothing else is touched).
    Uninstall(InstallArgs),
}

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

#[derive(Args, Debug)]
pub(crate) struct InstallArgs {
    /// The host whose settings are changed.
    host: InstallHost,
    /// The project whose `.claude/settings.json` is changed (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    project: Option<PathBuf>,
    /// Change the user's `~/.claude/settings.json` instead of a project's.
    #[arg(long)]
    user: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum InstallHost {
    ClaudeCode,
}

pub(crate) async fn run(args: HookArgs) -> Result<(), CliError> {
    match args.command {
        HookCommand::ClaudeCode(a) => answer_event(&claude_code::ClaudeCode, &a).await,
        HookCommand::Codex(a) => answer_event(&codex::Codex, &a).await,
        HookCommand::Gemini(a) => answer_event(&gemini::Gemini, &a).await,
        HookCommand::Install(a) => install::install(&settings_file(&a)?),
        HookCommand::Uninstall(a) => install::uninstall(&settings_file(&a)?),
    }
}

/// `DIR/.claude/settings.json`, or the user's `~/.claude/settings.json`, reached without
/// following a link below the project (or below `~/.claude`, which the user may have linked).
fn settings_file(args: &InstallArgs) -> Result<ConfinedFile, CliError> {
    let InstallHost::ClaudeCode = args.host;
    if args.user {
        let home = dirs::home_dir()
            .ok_or_else(|| CliError::new("cannot find the home directory (HOME is not set)"))?;
        return Ok(ConfinedFile::new(home.join(".claude"), "settings.json"));
    }
    let project = match &args.project {
        Some(dir) if dir.is_dir() => dir.clone(),
        Some(dir) => {
            return Err(CliError::new(format!(
                "project folder `{}` does not exist or is not a folder",
                dir.display()
            )))
        }
        None => std::env::current_dir()
            .map_err(|e| CliError::caused_by(format!("cannot read the current directory: {e}"), e))?,
    };
    Ok(ConfinedFile::new(project, ".claude/settings.json"))
}

/// Start `ctxkit hook HOST … --finish-loading CWD` detached from this process and its group:
/// it loads the project's skills with no deadline, which saves them in the index cache, embeds
/// the skill descriptions `[skills] semantic` lacks, and prints nothing. Without a cache
/// folder nothing would be kept, so nothing is started.
fn finish_loading_later(cwd: &std::path::Path) {
    if crate::places::cache_dir().is_none() {
        return;
    }
    let started = std::env::current_exe().and_then(|exe| {
        let mut command = std::process::Command::new(exe);
        command
            .args(std::env::args_os().skip(1))
            .arg("--finish-loading")
            .arg(cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command.spawn()
    });
    if let Err(e) = started {
        eprintln!("ctxkit hook: cannot finish loading the skills in the background: {e}");
    }
}

/// The `--finish-loading` run: load the skills, and embed the descriptions `[skills] semantic`
/// needs, unless another such run holds the lock (one at a time per cache folder: every
/// prompt during a long first scan would start one).
fn finish_loading(cwd: &std::path::Path, args: &EventArgs) {
    let Some(cache) = crate::places::cache_dir() else {
        return;
    };
    if std::fs::create_dir_all(&cache).is_err() {
        return;
    }
    let Ok(lock) = std::fs::File::create(cache.join("hook-loading.lock")) else {
        return;
    };
    #[cfg(unix)]
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return;
    }
    if let Ok(skills) = context::load_skills(cwd, args) {
        if let Some(meaning) = skills.meaning() {
            meaning.prepare(&skills.library().snapshot());
        }
    }
    drop(lock);
}

/// Read one event, answer it; any problem is one stderr line and, unless `--strict`, exit 0.
async fn answer_event(host: &dyn Host, args: &EventArgs) -> Result<(), CliError> {
    if let Some(cwd) = &args.finish_loading {
        finish_loading(cwd, args);
        return Ok(());
    }
    let answered = respond(host, args).await;
    let printed = match &answered {
        Ok(Some(answer)) => writeln!(std::io::stdout().lock(), "{answer}").map_err(CliError::from),
        _ => Ok(()),
    };
    context::wait_for_memory();
    printed?;
    match answered {
        Ok(_) => Ok(()),
        Err(e) if args.strict => Err(e),
        Err(e) => {
            eprintln!("ctxkit hook {}: {}", host.name(), e.message());
            Ok(())
        }
    }
}

async fn respond(host: &dyn Host, args: &EventArgs) -> Result<Option<serde_json::Value>, CliError> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.deadline);
    let input = event::read_stdin(deadline)?;
    let Event {
        name,
        kind,
        session_id,
        cwd,
    } = event::parse(&input, host)?;
    // The envelope's own characters count against the budget too.
    let envelope = host.answer(&name, "").to_string().chars().count();
    let budget = usize::try_from(args.budget)
        .unwrap_or(usize::MAX)
        .saturating_sub(envelope);
    let request = context::Request {
        kind,
        session_id: session_id.as_deref(),
        cwd: &cwd,
        budget,
        deadline,
    };
    let text = context::build(&request, args).await?;
    Ok(text.filter(|t| !t.is_empty()).map(|t| host.answer(&name, &t)))
}
