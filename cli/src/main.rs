//! `ctxkit`: inspect the context an agent would send, author and check skills, manage project
//! memory, chat, and measure token savings.

mod bench_cmd;
mod bench_memory;
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
mod setup;
mod skills_author;
mod skills_cmd;
mod text_file;
mod user_config;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "Exit codes: 0 success (also when standard output is closed early, as by `| head`); 1 an error (one sentence on stderr) or, for `skills validate`, a skipped skill; 2 bad command-line usage.\nSet CTXKIT_LOG=info (or debug) to see provider and model spans on stderr.";

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
    use ctxkit_memory::secrets::{find_secret, redact};
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
