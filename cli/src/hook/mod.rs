//! `ctxkit hook HOST`: ctxkit inside an agent that already runs (Claude Code, Codex, Gemini
//! CLI). The host starts one process per event, writes the event as JSON on standard input and
//! adds what the process prints, in the host's protocol, to the model's context.
//!
//! - [`event`] reads and checks the event (bounded, untrusted);
//! - [`context`] is the one function that decides the text, by composing the memory and skill
//!   providers: the memories and skills a prompt calls for, memory commands carried out, the
//!   always-on context at session start;
//! - [`session`] keeps per session what was already sent (the skills and memories);
//! - [`claude_code`], [`codex`], [`gemini`] map their host's event names and format its answer;
//! - [`install`] writes the hook entries into Claude Code's `settings.json`.
//!
//! A hook must never block the user's prompt: every problem with the input or the setup is one
//! line on standard error and exit code 0 with nothing on standard output, unless `--strict`.

mod args;
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

use self::args::EventArgs;
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

/// The `--finish-loading` run: load the skills, and embed the descriptions `[skills] semantic`
/// needs, unless another such run holds the lock (one at a time per cache folder: every
/// prompt during a long first scan would start one).
fn finish_loading(cwd: &std::path::Path, args: &EventArgs, host: &dyn Host) {
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
    if let Ok(skills) = context::load_skills(cwd, args, host.own_instructions()) {
        if let Some(meaning) = skills.meaning() {
            meaning.prepare(&skills.library().snapshot());
        }
    }
    drop(lock);
}

/// Read one event, answer it; any problem is one stderr line and, unless `--strict`, exit 0.
async fn answer_event(host: &dyn Host, args: &EventArgs) -> Result<(), CliError> {
    if let Some(cwd) = &args.finish_loading {
        finish_loading(cwd, args, host);
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
        own_instructions: host.own_instructions(),
        budget,
        deadline,
    };
    let text = context::build(&request, args).await?;
    Ok(text.filter(|t| !t.is_empty()).map(|t| host.answer(&name, &t)))
}
