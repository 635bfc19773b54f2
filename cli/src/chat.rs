//! `ctxkit chat`: an interactive session (or, when standard input is not a terminal, one
//! message per line, one reply per line).

use std::borrow::Cow;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use ctxkit::{Agent, Limits, RunReport, SectionKind, Thread};
use ctxkit_skills::SkillLibrary;

use crate::error::CliError;
use crate::model_args::ModelArgs;
use crate::printable::list_or_none;
use crate::setup::{follow_toggles, save_counts, token_counter, RequestOptions};
use crate::user_config::Config;

const HELP: &str =
    "commands: /new (new conversation), /compact, /reset, /skills, /memory, /stats, /help, /quit";

/// Exit status and failure handling, shown by `ctxkit chat --help`.
const CHAT_HELP: &str =
    "On a terminal, type messages and commands (/help lists them). When standard input is not a \
terminal, each line is one message and each reply is printed on one line. A message or command \
that fails (e.g. the model is unreachable) prints one sentence on stderr and the session goes \
on (with the next line when piped), but the exit status is then 1. A line that is not valid \
UTF-8 is read with its bad bytes replaced by U+FFFD, with a warning naming the line. The \
session always ends properly (memory extraction and maintenance), whether input ends, /quit is \
typed or an error stops it; a session end that fails (say, a model reply the memory extraction \
cannot read) is one warning line and leaves the exit status as the conversation set it.";

/// The most tokens of conversation `chat` sends when neither the flag nor the config says.
const DEFAULT_HISTORY_TOKENS: usize = 32_000;

#[derive(Args, Debug)]
#[command(after_long_help = after_long_help())]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    pub request: RequestOptions,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Messages kept by /compact.
    #[arg(long, default_value_t = 6)]
    pub keep: usize,
    /// The most tokens of conversation sent with a message: before each message the oldest
    /// turns are dropped until the rest fit (tool calls stay with their results; the latest
    /// message is always sent), as /compact would. 0: no bound. Default: `[chat]
    /// history_tokens` in the config, else 32,000.
    #[arg(long, value_name = "TOKENS")]
    pub history_tokens: Option<usize>,
    /// Resume the conversation saved under ID in the memory database (or start one under
    /// it); it is saved after every message, secrets redacted, and /new starts it afresh.
    /// `ctxkit sessions` lists them.
    #[arg(long, value_name = "ID", conflicts_with = "no_memory")]
    pub session: Option<String>,
    /// An MCP server whose tools the agent may call, as a command line ("npx -y some-server"),
    /// split into words and run without a shell (repeatable); its tools are named
    /// `SERVER__tool`. The user config's `[mcp] servers` are mounted too; a project never adds one.
    #[arg(long = "mcp", value_name = "COMMAND")]
    pub mcp: Vec<String>,
    /// Seconds between checks of the skill folders: an edited, added or deleted skill is in
    /// use from the next message (a broken edit keeps the last good version and its problem is
    /// printed on stderr; with --lazy the change reaches the model as a [Context Update]).
    /// 0: never check.
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    pub watch: u64,
    /// Write each session as DIR/SESSION.jsonl when it ends, for `ctxkit skills learn
    /// --transcript` (the messages as sent and received, tool calls and results included).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Seconds an MCP server may take to start or to answer one tool call.
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub mcp_timeout: u64,
}

/// `--help`: how chat fails, then the exit codes every command shows.
fn after_long_help() -> String {
    format!("{CHAT_HELP}\n\n{}", crate::error::EXIT_CODES)
}

/// Start the MCP servers of `--mcp` and of the user config; one that cannot start is an error
/// naming it (the user asked for it).
async fn mount_servers(args: &ChatArgs, config: &Config) -> Result<Vec<ctxkit::mcp::McpTools>, CliError> {
    let timeout = std::time::Duration::from_secs(args.mcp_timeout);
    let mut mounted: Vec<ctxkit::mcp::McpTools> = Vec::new();
    for command in config.mcp_servers().iter().chain(&args.mcp) {
        let server = crate::mcp::client::mount(command, timeout).await?;
        if let Some(clash) = mounted.iter().find(|m| m.name() == server.name()) {
            return Err(CliError::new(format!(
                "two MCP servers are named `{}`; their tools would clash",
                clash.name()
            )));
        }
        tracing::info!(server = %server.name(), tools = server.tools().len(), "MCP server mounted");
        mounted.push(server);
    }
    Ok(mounted)
}

/// Exit status 1 if any message or command failed (each already said why on stderr).
pub(crate) async fn run(args: ChatArgs) -> Result<(), CliError> {
    let model = args.model.model()?;
    let loaded = args.request.load().await?;
    let library = loaded.library.clone();
    if args.watch > 0 {
        library.watch(std::time::Duration::from_secs(args.watch), |index| {
            warn(&format!("(skills reloaded: {} skills)", index.len()));
            for d in index.diagnostics() {
                warn(&format!("{}", crate::printable::printable_line(&d.to_string())));
            }
        });
    }
    let counter = token_counter();
    let servers = mount_servers(&args, &loaded.config).await?;
    let memory = args.request.open_memory()?;
    let mode = args.request.mode(&loaded.config);
    let skills = args
        .request
        .skills_provider(&loaded.config, &loaded.library, mode, &counter)?;
    let agent = args
        .request
        .agent(
            &loaded,
            Arc::new(skills),
            model,
            &counter,
            servers,
            memory.as_ref(),
        )?
        .report_baseline()
        .limits(Limits {
            history_tokens: Some(
                args.history_tokens
                    .or(loaded.config.history_tokens())
                    .unwrap_or(DEFAULT_HISTORY_TOKENS),
            )
            .filter(|&n| n > 0),
            ..args.model.limits()
        });
    let agent = match &args.record {
        Some(dir) => agent.hook(crate::learned::RecordSessions(dir.clone())),
        None => agent,
    };
    // Sessions live in the store the agent's memory already opened.
    let agent = match (&args.session, &memory) {
        (Some(_), _) if args.request.read_only => {
            return Err(CliError::new(
                "--session saves the conversation after every message; --read-only writes nothing",
            ));
        }
        (Some(_), Some(store)) => agent.sessions(store.sessions()),
        _ => agent,
    }
    .build()?;
    let thread = match &args.session {
        Some(id) => {
            let thread = agent.session(id).await?;
            if thread.turns() > 0 {
                warn(&format!(
                    "(session {} resumed: {} messages so far)",
                    crate::printable::printable_line(id),
                    thread.history().len()
                ));
            }
            thread
        }
        None => Thread::new(),
    };
    let mut chat = Chat {
        args: &args,
        agent: &agent,
        library: &library,
        dir: crate::setup::current_dir()?,
        thread,
        last: None,
        failures: 0,
    };
    let result = chat.converse().await;
    // The session ends on every way out of the loop: end of input, /quit, or an error.
    let ended = agent.end_session(&mut chat.thread).await;
    save_counts(&counter);
    // The conversation was answered: what the session end does after it (learning memories,
    // tidying them) is reported, never a failure of the chat.
    if let Err(end) = ended {
        session_end_failed(&end);
    }
    match result {
        Err(e) => Err(e),
        Ok(()) if chat.failures > 0 => Err(CliError::quiet(format!(
            "{} messages or commands failed",
            chat.failures
        ))),
        Ok(()) => Ok(()),
    }
}

/// One session: the conversation so far and what failed.
struct Chat<'a> {
    args: &'a ChatArgs,
    agent: &'a Agent,
    library: &'a SkillLibrary,
    /// The project folder, whose config may turn skills on and off during the session.
    dir: PathBuf,
    thread: Thread,
    last: Option<RunReport>,
    /// Messages and commands that failed; each was reported on stderr.
    failures: usize,
}

impl Chat<'_> {
    /// Read and answer lines until end of input or /quit; an error here is one that stops the
    /// session (standard input or output failing), not a failed message.
    async fn converse(&mut self) -> Result<(), CliError> {
        let interactive = std::io::stdin().is_terminal();
        let mut out = std::io::stdout().lock();
        if interactive {
            writeln!(
                out,
                "ctxkit chat — {} skills, model {}. {HELP}",
                self.library.snapshot().len(),
                self.agent.model_name()
            )?;
        }
        let mut input = std::io::stdin().lock();
        let mut buf = Vec::new();
        let mut number = 0usize;
        loop {
            if interactive {
                write!(out, "> ")?;
                out.flush()?;
            }
            buf.clear();
            if input.read_until(b'\n', &mut buf)? == 0 {
                return Ok(());
            }
            number += 1;
            let line = String::from_utf8_lossy(&buf);
            if matches!(line, Cow::Owned(_)) {
                warn(&format!(
                    "warning: line {number} of standard input is not valid UTF-8; its invalid bytes \
                     were replaced with U+FFFD"
                ));
            }
            match line.trim() {
                "" => continue,
                "/quit" | "/exit" => return Ok(()),
                input => self.answer(input, &mut out).await?,
            }
        }
    }

    /// Answer one message or command; a failure is reported and counted, and the session
    /// goes on. Only a failure to write stops it.
    async fn answer(&mut self, input: &str, out: &mut impl Write) -> Result<(), CliError> {
        follow_toggles(self.library, &self.dir);
        match input {
            "/help" => writeln!(out, "{HELP}")?,
            "/new" => self.new_conversation(out).await?,
            "/compact" => match self.agent.compact(&mut self.thread, self.args.keep).await {
                Ok(removed) => writeln!(
                    out,
                    "(compacted: {removed} messages removed; context is sent in full again)"
                )?,
                Err(e) => self.failed(&e),
            },
            "/reset" => {
                self.thread.reset();
                self.last = None;
                writeln!(out, "(reset: history cleared; context is sent in full again)")?;
            }
            "/skills" => {
                let injected = self.injected(&SectionKind::SKILLS);
                writeln!(
                    out,
                    "{} skills loaded; last request carried: {}",
                    self.library.snapshot().len(),
                    list_or_none(&injected)
                )?;
            }
            "/memory" => self.show_memory(out)?,
            "/stats" => self.show_stats(out)?,
            _ if input.starts_with('/')
                && !input.contains(' ')
                && self.library.snapshot().get(&input[1..]).is_none() =>
            {
                writeln!(out, "unknown command `{input}`; {HELP}")?;
            }
            _ => match self.agent.run(&mut self.thread, input).await {
                Ok(output) => {
                    writeln!(out, "{}", output.reply.content)?;
                    self.last = Some(output.report);
                }
                // One failed message does not end the session, but the exit status says so.
                Err(e) => self.failed(&e),
            },
        }
        Ok(())
    }

    /// `/new`: end this conversation (its session end runs) and start another.
    async fn new_conversation(&mut self, out: &mut impl Write) -> Result<(), CliError> {
        let ended = self.agent.end_session(&mut self.thread).await;
        // A new conversation either way: the old one's end was attempted. A named session
        // keeps its name: the new conversation replaces it from its first message.
        self.thread = match &self.args.session {
            Some(id) => Thread::with_id(id),
            None => Thread::new(),
        };
        self.last = None;
        if let Err(e) = ended {
            session_end_failed(&e);
        }
        writeln!(out, "(new conversation)")?;
        Ok(())
    }

    /// `/memory`: the memories the last request carried.
    fn show_memory(&self, out: &mut impl Write) -> Result<(), CliError> {
        if self.args.request.no_memory {
            writeln!(out, "memory is off (--no-memory)")?;
            return Ok(());
        }
        let essentials = self.injected(&SectionKind::ESSENTIALS);
        let injected = self.injected(&SectionKind::MEMORIES);
        writeln!(
            out,
            "last request carried {} essentials: {}; {} memories: {}",
            essentials.len(),
            list_or_none(&essentials),
            injected.len(),
            list_or_none(&injected)
        )?;
        Ok(())
    }

    /// `/stats`: the tokens of the last request, by section and provider, and what the server
    /// counted over the last message's model calls.
    fn show_stats(&self, out: &mut impl Write) -> Result<(), CliError> {
        let Some(report) = &self.last else {
            writeln!(out, "no request yet")?;
            return Ok(());
        };
        let full = report.tokens_full.map_or("?".to_string(), |t| t.to_string());
        writeln!(out, "tokens: {} (full mode: {full})", report.tokens.total)?;
        for (section, tokens) in &report.tokens.by_section {
            writeln!(out, "  {section}: {tokens}")?;
        }
        for p in &report.providers {
            writeln!(
                out,
                "  provider {}: {} in {} µs",
                p.name,
                p.outcome,
                p.elapsed.as_micros()
            )?;
        }
        if let Some(u) = &report.usage {
            writeln!(
                out,
                "model usage over {} calls: {} input tokens, {} read from the prompt cache, {} written to it, {} output",
                report.model_calls, u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens
            )?;
        }
        Ok(())
    }

    fn failed(&mut self, e: &ctxkit::Error) {
        self.failures += 1;
        warn(&format!("error: {e}"));
    }

    /// Items of `kind` the last request carried.
    fn injected(&self, kind: &SectionKind) -> Vec<String> {
        self.last
            .as_ref()
            .and_then(|r| r.injected.get(kind))
            .cloned()
            .unwrap_or_default()
    }
}

/// One warning line for a session end that failed; the exit status stays the conversation's.
fn session_end_failed(e: &ctxkit::Error) {
    warn(&format!("warning: the session ended, but {e}"));
}

/// One line on stderr; if stderr itself is gone there is nobody left to tell.
fn warn(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
