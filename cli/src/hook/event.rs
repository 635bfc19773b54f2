//! The hook event on standard input: untrusted JSON from the host (or from whoever runs the
//! command). It is read up to a cap, parsed once, and every field ctxkit uses is checked here,
//! so the rest of the hook only sees a well-formed [`Event`].

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::CliError;

/// The most bytes read from standard input: a pasted log of a few hundred KiB still passes;
/// more is refused rather than matched.
pub(super) const MAX_INPUT_BYTES: u64 = 1 << 20;
/// The longest `cwd` accepted (Linux's PATH_MAX).
const MAX_CWD_BYTES: usize = 4096;

/// Which of ctxkit's events a host's event is (a host module maps its names to these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    /// The user submitted a prompt.
    Prompt,
    /// A session (re)started; `fresh` unless the conversation resumes with its context intact.
    SessionStart { fresh: bool },
    /// The host is about to compact the conversation.
    Compacting,
}

/// What the hook is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum EventKind {
    /// The user submitted a prompt: inject what it fires.
    Prompt(String),
    /// A session (re)started; `fresh` when the model's context was emptied (startup, clear,
    /// compact), so what was sent before must be sent again.
    SessionStart { fresh: bool },
    /// The host is about to compact the conversation: what was sent is forgotten by the model.
    Compacting,
}

/// One checked event.
#[derive(Debug)]
pub(super) struct Event {
    /// The host's event name, echoed in the answer.
    pub name: String,
    pub kind: EventKind,
    /// The host's session id (untrusted text; [`super::session`] makes it a file name).
    pub session_id: Option<String>,
    /// The project folder: the event's `cwd`, canonical, an existing folder.
    pub cwd: PathBuf,
}

/// The fields every supported host sends (all snake_case); unknown fields are ignored.
#[derive(Deserialize)]
struct Raw {
    hook_event_name: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    prompt: Option<String>,
    source: Option<String>,
}

/// The first JSON value on standard input, read up to its last byte — never waiting for the
/// end of the stream, which a host (or a stuck pipe) may keep open — and only until
/// `deadline`: what has not arrived by then is an error, and the reading thread is left to
/// the end of the process. At most [`MAX_INPUT_BYTES`]; more is an error, never a partial read.
pub(super) fn read_stdin(deadline: Instant) -> Result<Vec<u8>, CliError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("ctxkit-hook-stdin".into())
        .spawn(move || {
            let _ = sender.send(read_one_value(std::io::stdin().lock()));
        })
        .map_err(|e| CliError::caused_by(format!("cannot read standard input: {e}"), e))?;
    let wait = deadline.saturating_duration_since(Instant::now());
    receiver.recv_timeout(wait).unwrap_or_else(|_| {
        Err(CliError::new(format!(
            "no complete event arrived on standard input within {:.1} s; nothing was injected",
            wait.as_secs_f64()
        )))
    })
}

/// The text of the first JSON value in `input` (empty when there is none).
fn read_one_value(input: impl Read) -> Result<Vec<u8>, CliError> {
    let mut limited = std::io::BufReader::new(input.take(MAX_INPUT_BYTES + 1));
    let mut values = serde_json::Deserializer::from_reader(&mut limited).into_iter::<Box<RawValue>>();
    let first = values.next();
    drop(values);
    match first {
        None => Ok(Vec::new()),
        Some(Ok(value)) => Ok(value.get().as_bytes().to_vec()),
        Some(Err(_)) if limited.into_inner().limit() == 0 => Err(CliError::new(format!(
            "the event on standard input is larger than {} KiB; nothing was injected",
            MAX_INPUT_BYTES >> 10
        ))),
        // serde_json's messages name a line and column, never the input itself.
        Some(Err(e)) => Err(CliError::new(format!(
            "the event is not a JSON object of the expected shape ({e})"
        ))),
    }
}

/// What a host module provides: how its events are named and how it answers.
pub(crate) trait Host {
    /// The name after `ctxkit hook`, for messages.
    fn name(&self) -> &'static str;
    /// Our event for the host's `hook_event_name` and `source`, if it is one we answer.
    fn event_type(&self, event_name: &str, source: Option<&str>) -> Option<EventType>;
    /// The answer printed on stdout for `event_name` carrying `context`.
    fn answer(&self, event_name: &str, context: &str) -> serde_json::Value;
    /// The project's instruction files the host loads itself, which the hook never sends
    /// again as skills.
    fn own_instructions(&self) -> &'static [&'static str];
}

/// Parse and check one event for `host`.
pub(super) fn parse(input: &[u8], host: &dyn Host) -> Result<Event, CliError> {
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::new(
            "standard input is empty; expected one hook event as JSON",
        ));
    }
    // serde_json's messages name a line and column, never the input itself.
    let raw: Raw = serde_json::from_slice(input).map_err(|e| {
        CliError::new(format!(
            "the event is not a JSON object of the expected shape ({e})"
        ))
    })?;
    let name = raw
        .hook_event_name
        .ok_or_else(|| CliError::new("the event has no `hook_event_name`"))?;
    let kind = match host.event_type(&name, raw.source.as_deref()) {
        Some(EventType::Prompt) => EventKind::Prompt(
            raw.prompt
                .ok_or_else(|| CliError::new("the prompt event has no `prompt`"))?,
        ),
        Some(EventType::SessionStart { fresh }) => EventKind::SessionStart { fresh },
        Some(EventType::Compacting) => EventKind::Compacting,
        None => {
            return Err(CliError::new(format!(
                "`{}` is not an event ctxkit answers for {}",
                short(&ctxkit_secrets::redact(&name)),
                host.name()
            )))
        }
    };
    Ok(Event {
        name,
        kind,
        session_id: raw.session_id.filter(|s| !s.is_empty()),
        cwd: project_folder(raw.cwd.as_deref())?,
    })
}

/// The event's `cwd` as a canonical existing folder.
fn project_folder(cwd: Option<&str>) -> Result<PathBuf, CliError> {
    let cwd = cwd.ok_or_else(|| CliError::new("the event has no `cwd`"))?;
    if cwd.is_empty() || cwd.len() > MAX_CWD_BYTES || cwd.contains('\0') {
        return Err(CliError::new(
            "the event's `cwd` is empty, too long or holds a NUL byte",
        ));
    }
    let path = PathBuf::from(cwd);
    if !path.is_absolute() {
        return Err(CliError::new("the event's `cwd` is not an absolute path"));
    }
    match std::fs::canonicalize(&path) {
        Ok(p) if p.is_dir() => Ok(p),
        _ => Err(CliError::new("the event's `cwd` is not an existing folder")),
    }
}

/// An event name for a message (redacted first: a cut could leave a token too short for its
/// rule): names are short words; anything else is cut.
fn short(name: &str) -> String {
    let cut: String = name.chars().take(40).filter(|c| !c.is_control()).collect();
    if cut.len() < name.len() {
        format!("{cut}…")
    } else {
        cut
    }
}
