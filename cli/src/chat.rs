//! `ctxkit chat`: an interactive session (or, when standard input is not a terminal, one
//! message per line, one reply per line).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use clap::Args;
use ctxkit::{ChatModel, RunReport, Thread};

use crate::setup::RequestOptions;
use crate::CliError;

const HELP: &str =
    "commands: /new (new conversation), /compact, /reset, /skills, /memory, /stats, /help, /quit";

#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    pub request: RequestOptions,
    /// The model: dry-run (offline, the default), openai:NAME or ollama:NAME.
    #[arg(long, default_value = "dry-run")]
    pub model: String,
    /// Base URL of the model server (default: the backend's usual address).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Messages kept by /compact.
    #[arg(long, default_value_t = 6)]
    pub keep: usize,
}

pub async fn run(args: ChatArgs) -> Result<(), CliError> {
    let model: Arc<dyn ChatModel> =
        ctxkit::model::http::model_from_spec(&args.model, args.base_url.as_deref())?;
    let library = args.request.skill_dirs().library()?;
    let agent = args
        .request
        .agent_against_full(&library, args.request.mode, model)?;
    let interactive = std::io::stdin().is_terminal();
    let mut out = std::io::stdout().lock();
    if interactive {
        writeln!(
            out,
            "ctxkit chat — {} skills, model {}. {HELP}",
            library.snapshot().len(),
            agent.model_name()
        )?;
    }
    let mut thread = Thread::new();
    let mut last: Option<RunReport> = None;
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            write!(out, "> ")?;
            out.flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let input = line.trim();
        match input {
            "" => continue,
            "/quit" | "/exit" => break,
            "/help" => writeln!(out, "{HELP}")?,
            "/new" => {
                agent.end_session(&mut thread).await?;
                thread = Thread::new();
                last = None;
                writeln!(out, "(new conversation)")?;
            }
            "/compact" => {
                let removed = agent.compact(&mut thread, args.keep).await?;
                writeln!(
                    out,
                    "(compacted: {removed} messages removed; context is sent in full again)"
                )?;
            }
            "/reset" => {
                thread.reset();
                last = None;
                writeln!(out, "(reset: history cleared; context is sent in full again)")?;
            }
            "/skills" => {
                let injected = last
                    .as_ref()
                    .and_then(|r| r.injected.get("skills"))
                    .cloned()
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{} skills loaded; last request carried: {}",
                    library.snapshot().len(),
                    list(&injected)
                )?;
            }
            "/memory" => {
                if args.request.memory.is_none() {
                    writeln!(out, "no memory database (start with --memory DB)")?;
                } else {
                    let injected = last
                        .as_ref()
                        .and_then(|r| r.injected.get("memories"))
                        .cloned()
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "last request carried {} memories: {}",
                        injected.len(),
                        list(&injected)
                    )?;
                }
            }
            "/stats" => match &last {
                None => writeln!(out, "no request yet")?,
                Some(report) => {
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
                }
            },
            _ if input.starts_with('/')
                && !input.contains(' ')
                && library.snapshot().get(&input[1..]).is_none() =>
            {
                writeln!(out, "unknown command `{input}`; {HELP}")?;
            }
            _ => match agent.run(&mut thread, input).await {
                Ok(output) => {
                    writeln!(out, "{}", output.reply.content)?;
                    last = Some(output.report);
                }
                // One failed message does not end the session.
                Err(e) => eprintln!("error: {e}"),
            },
        }
    }
    agent.end_session(&mut thread).await?;
    Ok(())
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}
