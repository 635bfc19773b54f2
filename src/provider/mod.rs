//! The `ContextProvider` contract and the wrappers that make providers compose.
//!
//! The lifecycle of one provider in one [`Agent::run`](crate::agent::Agent::run):
//!
//! ```text
//! thread_created   once, when the thread's first run starts
//! invoking         once per run: contribute context (read-only: previews call it too)
//! invoked          after every model call of the run (each tool round), with its reply or error
//! run_finished     once, after the final reply or the failure that ended the run: the one
//!                  place to write (record access, carry out commands, persist state)
//! ```
//!
//! A `Vec`, an `Option`, an `Arc` and a `Box` of providers are providers too, so an agent holds
//! exactly one.

mod compose;
mod once;

pub use once::{Sent, SentOnce, SentRecord};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use tracing::Instrument;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::state::State;

/// What a provider may know about the run it serves.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// The thread the run belongs to, to key what a provider keeps per conversation.
    pub thread_id: String,
    /// The project the run works in (scopes memories); `None` when unknown.
    pub project: Option<String>,
    /// When the whole context assembly must be done; providers are cut off at it.
    pub deadline: Option<tokio::time::Instant>,
    /// A snapshot of the thread's scoped state at the start of the run.
    pub state: State,
    /// Token budget for everything providers inject; `None` for no budget.
    pub token_budget: Option<usize>,
    /// Nothing will be sent: the run only shows its request ([`Agent::preview`](crate::agent::Agent::preview)).
    /// `run_finished` never follows a preview.
    pub preview: bool,
    /// The run report compares the request with a baseline: providers that can say what
    /// sending everything would cost fill in [`Context::baseline_delta`].
    pub baseline: bool,
    /// The phase of the host's work this run serves (planning, implementation, retry), so a
    /// provider can offer what fits it; `None` when the host does not say, which means every
    /// phase.
    pub phase: Option<Phase>,
    /// What the conversation was already sent, when the provider wears [`SentOnce`]: a
    /// provider leaves out the items it holds in the same version.
    pub sent: Option<Arc<Sent>>,
    /// Characters, as a host's JSON counts them, for what a provider rendering for an agent
    /// host injects (a host caps what a hook adds); `None` for no such budget.
    pub char_budget: Option<usize>,
}

impl RunInfo {
    /// Whether the conversation already holds this version of `item` (see [`SentOnce`]).
    pub fn was_sent(&self, kind: &crate::context::SectionKind, item: &str, version: &str) -> bool {
        self.sent
            .as_ref()
            .is_some_and(|s| s.contains(kind, item, version))
    }
}

/// A phase of a host's work, for context meant for one kind of step: a skill for writing
/// code need not ride along while a plan is drafted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Drafting a plan, a design or requirements.
    Planning,
    /// Carrying the work out: writing code, running commands.
    Implementation,
    /// Recovering from a failed step.
    Retry,
}

impl Phase {
    /// Every phase, in the order a task goes through them.
    pub const ALL: [Phase; 3] = [Phase::Planning, Phase::Implementation, Phase::Retry];

    /// The lowercase name `FromStr` accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planning => "planning",
            Phase::Implementation => "implementation",
            Phase::Retry => "retry",
        }
    }
}

impl std::str::FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Phase::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown phase `{s}`; use planning, implementation or retry"))
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run ended, handed to [`ContextProvider::run_finished`].
#[derive(Clone, Copy, Debug)]
pub struct RunOutcome<'a> {
    /// The thread after the run: earlier turns, this run's user message, tool rounds and the
    /// reply.
    pub messages: &'a [Message],
    /// The run's user message (as hooks left it).
    pub input: &'a Message,
    /// The final reply, or the error that ended the run.
    pub result: std::result::Result<&'a Message, &'a Error>,
    /// What the providers contributed to this run.
    pub context: &'a Context,
    /// The thread's scoped state at the end of the run.
    pub state: &'a State,
}

/// What a provider learns when a conversation starts.
#[derive(Clone, Debug, Default)]
pub struct ThreadInfo {
    /// The new thread's id; its runs carry the same one in [`RunInfo::thread_id`].
    pub thread_id: String,
    /// The project the agent works in (scopes memories); `None` when unknown.
    pub project: Option<String>,
}

/// How composition treats a provider: how long it may take and whether its failure fails the run.
///
/// Timeouts use Tokio's timer, so composition runs on a runtime with the time driver enabled
/// (`#[tokio::main]` and `#[tokio::test]` have it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// `None` means no timeout of its own (the run's deadline still applies).
    pub timeout: Option<Duration>,
    /// When true a failure or timeout fails the run; otherwise it is logged, reported and skipped.
    pub fail_closed: bool,
}

impl Policy {
    /// Five seconds, fail-open.
    pub const DEFAULT: Policy = Policy {
        timeout: Some(Duration::from_secs(5)),
        fail_closed: false,
    };
}

/// The least time `run_finished` gets, whatever a provider's timeout for context is: the writes
/// a run's end carries (several database transactions, each of which may wait for another
/// writer) must not be cut off by a timeout sized for reading context.
const MIN_FINISH_TIMEOUT: Duration = Duration::from_secs(30);

impl Policy {
    /// The timeout of `run_finished`: the policy's, but at least 30 s.
    pub(crate) fn finish_timeout(&self) -> Option<Duration> {
        self.timeout.map(|t| t.max(MIN_FINISH_TIMEOUT))
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Contributes context to model calls. Implement `name` and `invoking`; the rest is optional.
///
/// ```
/// use ctxkit::{Context, ContextProvider, Message, Result, RunInfo};
///
/// struct Today;
///
/// #[async_trait::async_trait]
/// impl ContextProvider for Today {
///     fn name(&self) -> &str { "today" }
///     async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
///         Ok(Context::new().with_instructions("Today is Sunday."))
///     }
/// }
/// ```
#[async_trait]
pub trait ContextProvider: Send + Sync {
    /// A short name for logs, reports and errors.
    fn name(&self) -> &str;

    /// Timeout and failure policy; see [`ProviderExt`] to change it.
    fn policy(&self) -> Policy {
        Policy::DEFAULT
    }

    /// Called once when a conversation starts.
    async fn thread_created(&self, _thread: &ThreadInfo) -> Result<()> {
        Ok(())
    }

    /// Contribute context for the run; `messages` is the conversation so far, ending with the
    /// run's user message.
    ///
    /// **Read-only by contract**: previews (`ctxkit context`, [`Agent::preview`](crate::agent::Agent::preview))
    /// call it too, and a run may be assembled twice. Record what the run used in
    /// [`run_finished`](Self::run_finished).
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context>;

    /// Called after every model call with what was sent and what came back (or the error).
    async fn invoked(
        &self,
        _request: &[Message],
        _response: std::result::Result<&[Message], &Error>,
        _run: &RunInfo,
    ) -> Result<()> {
        Ok(())
    }

    /// Called once when a run ends, after its final reply or the failure that ended it, with
    /// the run's outcome and final state; never after a preview (nor when a run fails before
    /// its context was gathered: then nothing was used).
    async fn run_finished(&self, _run: &RunInfo, _outcome: &RunOutcome<'_>) -> Result<()> {
        Ok(())
    }
}

/// One run of `provider` outside an [`Agent`](crate::agent::Agent), for a surface that only injects
/// context and never sees the reply (an agent host's hook: the host's own model answers):
/// `invoking` on the single user message `input`, then `run_finished` as a run that ended with
/// an empty reply, so the provider carries out and records what a run in an agent would
/// (memory commands, access counts). Returns what it contributed.
pub async fn run_once(provider: &dyn ContextProvider, input: &str, run: &RunInfo) -> Result<Context> {
    let span = |stage: &'static str| tracing::debug_span!("provider", provider = provider.name(), stage);
    let messages = [Message::user(input)];
    let context = provider
        .invoking(&messages, run)
        .instrument(span("invoking"))
        .await?;
    let reply = Message::assistant("");
    let outcome = RunOutcome {
        messages: &messages,
        input: &messages[0],
        result: Ok(&reply),
        context: &context,
        state: &State::default(),
    };
    provider
        .run_finished(run, &outcome)
        .instrument(span("run_finished"))
        .await?;
    Ok(context)
}

/// Change a provider's [`Policy`].
pub trait ProviderExt: ContextProvider + Sized {
    /// Cut the provider off after `timeout`.
    fn with_timeout(self, timeout: Duration) -> WithPolicy<Self> {
        let policy = Policy {
            timeout: Some(timeout),
            ..self.policy()
        };
        WithPolicy { inner: self, policy }
    }

    /// Make a failure or timeout of this provider fail the whole run.
    fn fail_closed(self) -> WithPolicy<Self> {
        let policy = Policy {
            fail_closed: true,
            ..self.policy()
        };
        WithPolicy { inner: self, policy }
    }

    /// Send each item once per conversation of `record` (see [`SentOnce`]).
    fn sent_once(self, record: SentRecord) -> SentOnce<Self> {
        SentOnce::new(self, record)
    }
}

impl<P: ContextProvider> ProviderExt for P {}

/// A provider with a policy set by [`ProviderExt`]. It enforces its own timeout on every call,
/// alone or inside a `Vec` (which also applies it, and decides what a failure costs).
pub struct WithPolicy<P> {
    inner: P,
    policy: Policy,
}

impl<P: ContextProvider> WithPolicy<P> {
    async fn enforce<T>(&self, call: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        self.enforce_within(self.policy.timeout, call).await
    }

    async fn enforce_within<T>(
        &self,
        timeout: Option<Duration>,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        match timeout {
            Some(after) => tokio::time::timeout(after, call).await.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    provider: self.inner.name().to_string(),
                    after,
                })
            }),
            None => call.await,
        }
    }
}

#[async_trait]
impl<P: ContextProvider> ContextProvider for WithPolicy<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn policy(&self) -> Policy {
        self.policy
    }
    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        self.enforce(self.inner.thread_created(thread)).await
    }
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        self.enforce(self.inner.invoking(messages, run)).await
    }
    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        self.enforce(self.inner.invoked(request, response, run)).await
    }
    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        self.enforce_within(
            self.policy.finish_timeout(),
            self.inner.run_finished(run, outcome),
        )
        .await
    }
}

#[async_trait]
impl<P: ContextProvider + ?Sized> ContextProvider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn policy(&self) -> Policy {
        (**self).policy()
    }
    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        (**self).thread_created(thread).await
    }
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        (**self).invoking(messages, run).await
    }
    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        (**self).invoked(request, response, run).await
    }
    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        (**self).run_finished(run, outcome).await
    }
}

#[async_trait]
impl<P: ContextProvider + ?Sized> ContextProvider for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn policy(&self) -> Policy {
        (**self).policy()
    }
    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        (**self).thread_created(thread).await
    }
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        (**self).invoking(messages, run).await
    }
    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        (**self).invoked(request, response, run).await
    }
    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        (**self).run_finished(run, outcome).await
    }
}

/// An absent provider contributes nothing.
#[async_trait]
impl<P: ContextProvider> ContextProvider for Option<P> {
    fn name(&self) -> &str {
        self.as_ref().map_or("none", |p| p.name())
    }
    fn policy(&self) -> Policy {
        self.as_ref().map_or(Policy::DEFAULT, |p| p.policy())
    }
    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        match self {
            Some(p) => p.thread_created(thread).await,
            None => Ok(()),
        }
    }
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        match self {
            Some(p) => p.invoking(messages, run).await,
            None => Ok(Context::new()),
        }
    }
    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        match self {
            Some(p) => p.invoked(request, response, run).await,
            None => Ok(()),
        }
    }
    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        match self {
            Some(p) => p.run_finished(run, outcome).await,
            None => Ok(()),
        }
    }
}
