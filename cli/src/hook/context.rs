//! The one function every host shares: from a checked event to the text put in front of the
//! model, within a character budget. The hook assembles nothing itself: it composes the
//! providers an agent uses and joins what they contribute as an agent's request does
//! ([`Context::system_text`]: stable sections, then those chosen for the message).
//!
//! - A prompt: the project memories relevant to it, with memory commands in it carried out
//!   ([`MemoryContextProvider`], secrets refused there as on every write path), then the skills
//!   it selects ([`SkillContextProvider`] rendering for a host, [`RenderProfile::Host`]).
//! - A session start: the always-on context — the project's essentials and most important
//!   memories (importance ≥ 0.8), `always: true` skills and those the project's files detect.
//!   No skill catalog: every host already lists its skills.
//! - A compaction: nothing is printed; the session's record is cleared so what was sent is
//!   sent again.
//!
//! Both providers wear the sent-once layer ([`ProviderExt::sent_once`]) over the session's
//! record, kept in a file between events ([`SessionState`]): what the session already holds
//! in the same version is left out before a provider fills its budget.
//!
//! The budget counts characters as they appear in the host's JSON (escapes included), so the
//! whole answer fits in it: the memories are sent when they fit, and the skills get the room
//! they leave.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxkit::{Context, ContextProvider, Message, ProviderExt, RunInfo, Sent, SentRecord};
use ctxkit_memory::{MemoryContextProvider, MemoryStore};
use ctxkit_skills::render::{Budgeted, Measure};
use ctxkit_skills::{Mode, RenderProfile, SkillConfig, SkillContextProvider, SkillRoot, Source};

use super::args::EventArgs;
use super::event::EventKind;
use super::session::SessionState;
use crate::error::CliError;
use crate::memory::open::{memory_db_path, normalize_project, open_store_for_hook};
use crate::setup::{load_library, SkillDirs};
use crate::user_config::Config;

/// Memories at least this important come at every session start.
const PINNED_IMPORTANCE: f32 = 0.8;
/// A session id longer than this is not recorded with remembered memories.
const MAX_SESSION_ID_CHARS: usize = 128;

/// One checked event, ready to answer.
pub(super) struct Request<'a> {
    pub kind: EventKind,
    pub session_id: Option<&'a str>,
    /// The project: canonical, an existing folder.
    pub cwd: &'a Path,
    /// The project's instruction files the host loads itself ([`Host::own_instructions`](super::event::Host::own_instructions)).
    pub own_instructions: &'static [&'static str],
    /// Characters the context may take, as JSON-escaped text.
    pub budget: usize,
    /// When the answer must be printed, with whatever is ready.
    pub deadline: Instant,
}

/// The context for `request`, or `None` when there is nothing to add.
pub(super) async fn build(request: &Request<'_>, args: &EventArgs) -> Result<Option<String>, CliError> {
    let cache = crate::places::cache_dir();
    let mut session = SessionState::load(cache.as_deref(), request.session_id);
    // What the event asks for (a session start is an empty message), and whether the model
    // forgot what it was sent.
    let (asked, forgotten) = match &request.kind {
        EventKind::Compacting => (None, true),
        EventKind::SessionStart { fresh } => (Some(""), *fresh),
        EventKind::Prompt(prompt) => (Some(prompt.as_str()), false),
    };
    if forgotten {
        session.sent = Sent::default();
    }
    let context = match asked {
        Some(message) => Some(compose(request, args, &mut session.sent, message).await?),
        None => None,
    };
    if let Err(e) = session.save() {
        eprintln!("ctxkit hook: the session record was not saved: {e}");
    }
    Ok(context.and_then(|c| c.system_text()))
}

/// What the memory and skill providers contribute for `message` (empty at a session start),
/// each wearing the sent-once layer over what the session was `sent`, which is brought up to
/// date; within the request's budget.
async fn compose(
    request: &Request<'_>,
    args: &EventArgs,
    sent: &mut Sent,
    message: &str,
) -> Result<Context, CliError> {
    let start = matches!(request.kind, EventKind::SessionStart { .. });
    let project = normalize_project(&request.cwd.to_string_lossy());
    let thread_id = request
        .session_id
        .filter(|s| s.chars().count() <= MAX_SESSION_ID_CHARS)
        .unwrap_or_default()
        .to_string();
    let record = SentRecord::new();
    record.restore(&thread_id, std::mem::take(sent));
    let run = RunInfo {
        thread_id: thread_id.clone(),
        project: Some(project),
        char_budget: Some(request.budget),
        ..RunInfo::default()
    };
    if !start {
        let (no_memory, cwd) = (args.no_memory, request.cwd.to_path_buf());
        crate::embeddings::embed_ahead(message, move || {
            !no_memory || Config::load(&cwd).is_ok_and(|c| c.semantic_skills())
        });
    }
    // The memory part keeps its own copy of the record: what it sent counts only when its
    // text is used (it may answer after the hook stopped waiting for it).
    let memory_record = SentRecord::new();
    memory_record.restore(&thread_id, record.get(&thread_id));
    let memories = (!args.no_memory).then(|| {
        let part = memory_part(
            args.clone(),
            run.clone(),
            message.to_string(),
            memory_record.clone(),
            start,
        );
        beside(part, request.deadline)
    });
    let skills = load_skills_by(request, args)?;
    let mut context = Context::new();
    // The memories are sent when they fit whole; the skills get the room they leave.
    let mut answer = Budgeted::new(request.budget, Measure::JsonChars);
    if let Some(memories) = memories {
        if let Some(mut found) = warn_on_error(memories.await) {
            if found.system_text().is_some_and(|text| answer.push(&text)) {
                context.append(&mut found);
                record.restore(&thread_id, memory_record.get(&thread_id));
            }
        }
    }
    if let Some(skills) = skills.map(Arc::new) {
        let run = RunInfo {
            char_budget: Some(answer.room()),
            ..run
        };
        let provider = skills.clone().sent_once(record.clone());
        let mut found = provider.invoking(&[Message::user(message)], &run).await?;
        context.append(&mut found);
        // Descriptions not embedded yet are embedded in the background, for the next
        // prompts, rather than for seconds in this one.
        if !start && skills.meaning().is_some_and(|m| m.pending() > 0) {
            finish_loading_later(request.cwd);
        }
    }
    *sent = record.get(&thread_id);
    Ok(context)
}

/// The longest the hook waits for the memory part, from when it starts (and never past the
/// hook's deadline): the host waits for the whole hook, and a prompt is better answered
/// without its memories than late (a PostgreSQL server that does not answer would hold it for
/// the 10 s connect timeout).
const MEMORY_WAIT: Duration = Duration::from_secs(2);

/// What a memory part contributed, and the store it used: closed after the context is handed
/// over, so that closing (SQLite copies its log back into the database) overlaps the answer.
struct Found {
    context: Context,
    store: Arc<dyn MemoryStore>,
}

/// Memory parts that answered and are closing their store; the process waits for them
/// ([`wait_for_memory`]) before it ends, so a close is never cut short.
static CLOSING: std::sync::Mutex<Vec<std::sync::mpsc::Receiver<()>>> = std::sync::Mutex::new(Vec::new());

/// Wait, at most [`MEMORY_WAIT`], for the memory parts that answered to close their store.
pub(super) fn wait_for_memory() {
    let until = Instant::now() + MEMORY_WAIT;
    let closing = std::mem::take(&mut *CLOSING.lock().unwrap_or_else(|e| e.into_inner()));
    for closed in closing {
        // The sender is dropped when the thread ends: `Disconnected` is the normal answer.
        let _ = closed.recv_timeout(until.saturating_duration_since(Instant::now()));
    }
}

/// Start the memory part now, on a thread and runtime of its own, while this one loads the
/// skills: they read different files (or a server), so the hook waits for the slower of the
/// two rather than for both, and for the memory part at most [`MEMORY_WAIT`] or until
/// `deadline`. A memory part given up on is left running on its own runtime; the process ends
/// without waiting for it, and a write it had not committed is rolled back.
fn beside<F>(memory: F, deadline: Instant) -> impl Future<Output = Result<Context, CliError>>
where
    F: Future<Output = Result<Found, CliError>> + Send + 'static,
{
    let wait = MEMORY_WAIT.min(deadline.saturating_duration_since(Instant::now()));
    let until = tokio::time::Instant::now() + wait;
    let (done, answer) = tokio::sync::oneshot::channel();
    let (closing, closed) = std::sync::mpsc::channel::<()>();
    let started = std::thread::Builder::new()
        .name("ctxkit-hook-memory".into())
        .spawn(move || {
            let _closing = closing;
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let message = format!("cannot start the memory lookup: {e}");
                    let _ = done.send(Err(CliError::caused_by(message, e)));
                    return;
                }
            };
            let (result, store) = match runtime.block_on(memory) {
                Ok(found) => (Ok(found.context), Some(found.store)),
                Err(e) => (Err(e), None),
            };
            // The hook may have stopped waiting.
            let _ = done.send(result);
            drop(store);
        });
    async move {
        started.map_err(|e| CliError::caused_by(format!("cannot start the memory lookup: {e}"), e))?;
        match tokio::time::timeout_at(until, answer).await {
            Ok(Ok(result)) => {
                CLOSING.lock().unwrap_or_else(|e| e.into_inner()).push(closed);
                result
            }
            Ok(Err(_)) => Err(CliError::new("the memory lookup stopped")),
            Err(_) => Err(CliError::new(format!(
                "the memory store did not answer within {:.1} s",
                wait.as_secs_f64()
            ))),
        }
    }
}

/// A failure of an optional part (memory) is one line on stderr, not a failed hook.
fn warn_on_error(result: Result<Context, CliError>) -> Option<Context> {
    result
        .map_err(|e| eprintln!("ctxkit hook: project memory skipped: {}", e.message()))
        .ok()
}

/// The skill roots: `--skills` folders, else the project's default roots plus the user's
/// `~/.claude/skills` in the user tier, without the instruction files the host loads itself;
/// and the project's accepted learned skills as the session start last wrote them, unless
/// memory is off.
fn roots(args: &EventArgs, cwd: &Path, own: &'static [&'static str]) -> Result<Vec<SkillRoot>, CliError> {
    let mut roots = if args.skills.is_empty() {
        let mut roots = SkillRoot::project_defaults(cwd);
        if let Some(home) = dirs::home_dir() {
            roots.push(SkillRoot::new(home.join(".claude").join("skills"), Source::User).optional());
        }
        roots
    } else {
        SkillDirs {
            dirs: args.skills.clone(),
        }
        .roots()?
    };
    roots = roots.into_iter().map(|root| root.leaving_out(own)).collect();
    if let (false, Ok(db)) = (args.no_memory, memory_db_path(args.memory.as_deref())) {
        roots.extend(crate::learned::root(
            &db,
            &normalize_project(&cwd.to_string_lossy()),
        ));
    }
    Ok(roots)
}

/// The event's project's skill provider under its config: the skills as `roots` finds them,
/// selected as every other command selects them (auto-detection, `disabled`, `max_skills`),
/// rendered for a host.
pub(super) fn load_skills(
    cwd: &Path,
    args: &EventArgs,
    own_instructions: &'static [&'static str],
) -> Result<SkillContextProvider, CliError> {
    let config = Config::load(cwd)?;
    let library = load_library(roots(args, cwd, own_instructions)?, &config);
    let skill_config = SkillConfig {
        mode: Mode::Triggered,
        profile: RenderProfile::Host,
        ..config.skill_config(None, args.max_skills)
    };
    crate::embeddings::skill_provider(&config, library, skill_config, true)
}

/// [`load_skills`] on a thread of its own, waited for until the request's deadline, less
/// [`ANSWER_TIME`] to build the answer. `None` when the skills were not loaded by then (a
/// first scan of a huge or hostile repository): the hook answers without them, and the
/// loading is finished in the background ([`finish_loading_later`]) and saved in the
/// cache, so the next event answers in full.
fn load_skills_by(request: &Request<'_>, args: &EventArgs) -> Result<Option<SkillContextProvider>, CliError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let (cwd, thread_args, own) = (request.cwd.to_path_buf(), args.clone(), request.own_instructions);
    std::thread::Builder::new()
        .name("ctxkit-hook-skills".into())
        .spawn(move || {
            let _ = sender.send(load_skills(&cwd, &thread_args, own));
        })
        .map_err(|e| CliError::caused_by(format!("cannot start loading the skills: {e}"), e))?;
    let wait = request
        .deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(ANSWER_TIME);
    match receiver.recv_timeout(wait) {
        Ok(loaded) => loaded.map(Some),
        Err(_) => {
            eprintln!(
                "ctxkit hook: the skills were not loaded within the deadline; answering without them \
                 while they finish loading in the background"
            );
            finish_loading_later(request.cwd);
            Ok(None)
        }
    }
}

/// Time kept, before the deadline, for selecting skills and printing the answer.
const ANSWER_TIME: Duration = Duration::from_millis(250);

/// The memory provider's contribution for `message`, wearing the sent-once layer over
/// `record`: at a session start (an empty message) the essentials and the most important
/// memories, at a prompt those relevant to it, after a memory command in it is carried out.
/// The provider does both: `invoking` finds the memories (and says when a "remember" was
/// refused for a secret), `run_finished` stores or forgets and counts what was shown.
async fn memory_part(
    args: EventArgs,
    run: RunInfo,
    message: String,
    record: SentRecord,
    start: bool,
) -> Result<Found, CliError> {
    // Every memory read is redacted: the secret rules' automaton is built while the database
    // opens, rather than when the first memories come back (if no thread can be started, the
    // first redaction builds it).
    let _ = std::thread::Builder::new()
        .name("ctxkit-hook-rules".into())
        .spawn(ctxkit_secrets::prepare);
    let opened = open_store_for_hook(args.memory.as_deref())?;
    let store: Arc<dyn MemoryStore> = opened.shared();
    let project = run.project.clone().unwrap_or_default();
    if start {
        // The session's prompts load the accepted learned skills from the folder written here.
        let db = memory_db_path(args.memory.as_deref())?;
        if let Err(e) = crate::learned::sync(&*store, &db, &project).await {
            eprintln!(
                "ctxkit hook: the learned skills may be out of date: {}",
                e.message()
            );
        }
    }
    let mut provider = MemoryContextProvider::new(store.clone())
        .with_project(&project)
        .without_episodes()
        .without_state();
    if start {
        provider = provider.with_min_importance(PINNED_IMPORTANCE);
    }
    // A database the hook may only read still gives its memories; what it would write is left.
    if opened.is_read_only() {
        eprintln!(
            "ctxkit hook: memory database {} is read-only: memories are read, their use is not counted and memory commands are not carried out",
            crate::printable::printable(&memory_db_path(args.memory.as_deref())?.display().to_string())
        );
        provider = provider.read_only();
    }
    let context = ctxkit::run_once(&provider.sent_once(record), &message, &run).await?;
    Ok(Found { context, store })
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
