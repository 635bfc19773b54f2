//! `ctxkit sessions`: the conversations `chat --session` keeps in the memory database — list
//! them, show one, delete one.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use ctxkit::{Role, SessionStore};

use crate::error::CliError;
use crate::printable::{printable, printable_line};

#[derive(Args, Debug)]
pub(crate) struct SessionsArgs {
    /// The memory database holding the sessions: a SQLite file, or a PostgreSQL server as a
    /// postgres:// URL (default: the one `ctxkit memory` uses).
    #[arg(long, value_name = "FILE|URL", global = true)]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SessionsCommand {
    /// The saved sessions, the most recently saved first: id, runs, messages, when.
    List {
        /// One JSON object per session.
        #[arg(long)]
        json: bool,
    },
    /// One session's conversation, as it would be resumed (secrets were redacted when saved).
    Show {
        /// The session's id.
        id: String,
        /// The saved thread as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a session.
    Delete {
        /// The session's id.
        id: String,
    },
}

pub(crate) async fn run(args: SessionsArgs) -> Result<(), CliError> {
    let store = crate::memory::open::open_store(args.db.as_deref())?.sessions();
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    match args.command {
        SessionsCommand::List { json } => {
            for s in store.list().await? {
                if json {
                    writeln!(out, "{}", serde_json::to_string(&s)?)?;
                } else {
                    writeln!(
                        out,
                        "{}  {} runs, {} messages, saved {}",
                        printable_line(&s.id),
                        s.turns,
                        s.messages,
                        crate::memory::output::format_rfc3339(s.updated as i64 * 1000)
                    )?;
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let thread = load(&*store, &id).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&thread)?)?;
            } else {
                for m in thread.history().iter().filter(|m| m.role != Role::System) {
                    let role = serde_json::to_value(m.role)?;
                    writeln!(out, "{}: {}", role.as_str().unwrap_or("?"), printable(&m.content))?;
                }
            }
        }
        SessionsCommand::Delete { id } => {
            if !store.delete(&id).await? {
                return Err(no_session(&id));
            }
            writeln!(out, "session {} deleted", printable_line(&id))?;
        }
    }
    Ok(())
}

async fn load(store: &dyn SessionStore, id: &str) -> Result<ctxkit::Thread, CliError> {
    store.load(id).await?.ok_or_else(|| no_session(id))
}

fn no_session(id: &str) -> CliError {
    CliError::new(format!(
        "no session `{}` is saved (`ctxkit sessions list` shows them)",
        printable_line(id)
    ))
}
