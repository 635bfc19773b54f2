//! `ctxkit`: inspect the context an agent would send, author and check skills, manage project
//! memory, chat, and measure token savings.

mod bench_cmd;
mod bench_memory;
mod bench_select;
mod chat;
mod confined_file;
mod context_cmd;
mod embeddings;
mod error;
mod hook;
mod learned;
mod listen;
mod mcp;
mod memory;
mod model_args;
mod places;
mod printable;
mod serve;
mod sessions_cmd;
mod setup;
mod skills_author;
mod skills_cmd;
mod text_file;
mod user_config;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use error::EXIT_CODES;

#[derive(Parser, Debug)]
#[command(name = "ctxkit", version, about = "Decide what context an LLM agent sends with every request.", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A sentence-embedding model folder (sentence-transformers layout, e.g. all-MiniLM-L6-v2):
    /// memory is then ranked by meaning as well as words. Default: $CTXKIT_EMBEDDINGS, else
    /// `[memory] embeddings` in the user config; without one, by words only.
    #[arg(long, global = true, value_name = "DIR")]
    embeddings: Option<std::path::PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the request ctxkit would send for a message: system text, messages, tools, stats.
    #[command(after_help = EXIT_CODES)]
    Context(context_cmd::ContextArgs),
    /// Work with skills: list, show, validate, match, enable/disable, detect, new, test.
    #[command(after_help = EXIT_CODES)]
    Skills(skills_cmd::SkillsArgs),
    /// Manage project memory.
    #[command(after_help = EXIT_CODES)]
    Memory(memory::MemoryArgs),
    /// Chat with an agent (dry-run model by default); reads one message per line when piped.
    #[command(after_help = EXIT_CODES)]
    Chat(chat::ChatArgs),
    /// The conversations `chat --session` keeps: list, show, delete.
    #[command(after_help = EXIT_CODES)]
    Sessions(sessions_cmd::SessionsArgs),
    /// Measure: request tokens per injection mode, memory search quality.
    #[command(after_help = EXIT_CODES)]
    Bench(bench_cmd::BenchArgs),
    /// Run inside an agent host: answer its hook events (claude-code, codex, gemini), or
    /// install / uninstall the hook entries in its settings.
    #[command(after_help = EXIT_CODES)]
    Hook(hook::HookArgs),
    /// Serve skills and project memory to MCP clients (Claude Code, Codex, VS Code, …) over
    /// standard input and output.
    #[command(after_help = EXIT_CODES)]
    Mcp(mcp::McpArgs),
    /// Manage the project's skills and memory in the browser: a local page, loopback only.
    /// The first line printed is its URL.
    #[command(after_help = EXIT_CODES)]
    Serve(serve::ServeArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CTXKIT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    // Closing spans are printed with their fields, so provider, model and tool timings show.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

/// Print clap's error (stderr, exit 2) or help/version (stdout, exit 0). clap quotes the
/// arguments it rejects, so every argument that looks like a secret is redacted first: a
/// `-----BEGIN … PRIVATE KEY-----` given without `--` must not be echoed to the terminal.
fn usage_error(e: &clap::Error) -> ExitCode {
    use ctxkit_secrets::{find_secret, redact};
    let mut text = e.render().to_string();
    if e.use_stderr() {
        for arg in std::env::args_os().skip(1) {
            let arg = arg.to_string_lossy();
            if let Some(found) = find_secret(&arg) {
                text = text.replace(&*arg, &format!("[REDACTED:{}]", found.rule));
            }
        }
        // Whatever part of an argument clap quoted on its own.
        text = redact(&text);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    } else {
        // `--help | head` closes the pipe early; that is not an error worth a panic.
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

fn main() -> ExitCode {
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    // One thread: a command serves one request at a time, and a hook starts a process per
    // prompt, so worker threads would only cost start-up time.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(dir) = cli.embeddings {
        embeddings::set_embeddings_flag(dir);
    }
    let code = runtime.block_on(run(cli.command));
    // Every task was awaited, so nothing is left to finish: don't wait for idle blocking
    // threads to wind down (milliseconds of every hook call).
    runtime.shutdown_background();
    code
}

async fn run(command: Command) -> ExitCode {
    let result = match command {
        Command::Context(args) => context_cmd::run(args).await,
        Command::Skills(args) => skills_cmd::run(args).await,
        Command::Memory(args) => memory::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Sessions(args) => sessions_cmd::run(args).await,
        Command::Bench(args) => bench_cmd::run(args).await,
        Command::Hook(args) => hook::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::Serve(args) => serve::run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            e.report();
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::{Arg, ArgAction, CommandFactory, Parser};

    use super::Cli;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Values tried, in order, for an argument without a list of possible values: one of them
    /// must parse for each argument, so an argument with a new kind of value needs one here.
    const SAMPLES: &[&str] = &["1", "1024", "full", "planning", "preference", "x", "127.0.0.1:0"];

    /// Every argument of every command is parsed into `Cli`, so the derive's access code runs
    /// for each: an argument read with another type than it was defined with (a panic at run
    /// time, as `skills detect --project` was) fails here, as does one no sample parses.
    #[test]
    fn every_argument_of_every_command_parses() {
        let mut root = Cli::command();
        root.build();
        let mut failures = Vec::new();
        walk(&root, &mut vec!["ctxkit".to_string()], &mut failures);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Check the arguments of `cmd` (at `path`) and of every command below it.
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, failures: &mut Vec<String>) {
        let subcommands: Vec<&clap::Command> =
            cmd.get_subcommands().filter(|s| s.get_name() != "help").collect();
        if subcommands.is_empty() {
            for arg in cmd.get_arguments().filter(|a| !is_help(a)) {
                check(arg, path, &[], cmd, failures);
            }
            return;
        }
        // A command's own arguments (`skills --dir X …`) come before a subcommand: given with
        // the first command below it. Global ones are checked where they are propagated.
        let (mut leaf_path, mut leaf) = (Vec::new(), cmd);
        while let Some(sub) = leaf.get_subcommands().find(|s| s.get_name() != "help") {
            leaf_path.push(sub.get_name().to_string());
            leaf = sub;
        }
        for arg in cmd.get_arguments().filter(|a| !is_help(a) && !a.is_global_set()) {
            check(arg, path, &leaf_path, leaf, failures);
        }
        for sub in subcommands {
            path.push(sub.get_name().to_string());
            walk(sub, path, failures);
            path.pop();
        }
    }

    fn is_help(arg: &Arg) -> bool {
        matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
    }

    /// Parse `arg` given at `path`, followed by `then` (a path to the command `leaf`).
    fn check(arg: &Arg, path: &[String], then: &[String], leaf: &clap::Command, failures: &mut Vec<String>) {
        let before = failures.len();
        // Stops at the first sample that parses or panics (recorded once).
        let parsed = samples(arg).iter().any(|value| {
            let mut argv = path.to_vec();
            argv.extend(given(arg, value));
            argv.extend(then.iter().cloned());
            parses(leaf, argv, failures) || failures.len() > before
        });
        if !parsed {
            failures.push(format!(
                "{} {:?}: no sample value parses",
                path.join(" "),
                arg.get_id()
            ));
        }
    }

    fn samples(arg: &Arg) -> Vec<String> {
        let possible = arg.get_possible_values();
        if possible.is_empty() {
            SAMPLES.iter().map(|s| s.to_string()).collect()
        } else {
            possible.iter().map(|p| p.get_name().to_string()).collect()
        }
    }

    /// The words that give `arg` the value `value`.
    fn given(arg: &Arg, value: &str) -> Vec<String> {
        let name = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => return vec![value.to_string()],
        };
        if arg.get_action().takes_values() {
            vec![name, value.to_string()]
        } else {
            vec![name]
        }
    }

    /// Whether `argv`, completed with the arguments `cmd` says are missing, parses; a panic in
    /// the derive's access code is recorded as a failure.
    fn parses(cmd: &clap::Command, mut argv: Vec<String>, failures: &mut Vec<String>) -> bool {
        for _ in 0..8 {
            let error = match std::panic::catch_unwind(|| Cli::try_parse_from(&argv)) {
                Ok(Ok(_)) => return true,
                Ok(Err(error)) => error,
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures.push(format!("`{}` panics: {message}", argv.join(" ")));
                    return false;
                }
            };
            let Some(ContextValue::Strings(missing)) = (error.kind() == ErrorKind::MissingRequiredArgument)
                .then(|| error.get(ContextKind::InvalidArg))
                .flatten()
            else {
                return false;
            };
            for usage in missing {
                // `--http <ADDR>` or `<DIR>`.
                let found = cmd.get_arguments().find(|a| match a.get_long() {
                    Some(long) => usage.split(' ').next() == Some(&format!("--{long}")),
                    None => a.get_value_names().is_some_and(|names| {
                        names
                            .iter()
                            .any(|n| usage.trim_matches(['<', '>', '.']) == n.as_str())
                    }),
                });
                let Some(arg) = found else { return false };
                argv.extend(given(arg, &samples(arg)[0]));
            }
        }
        false
    }
}
