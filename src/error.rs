//! The one error type of the core, shared by providers, tools, models and the runner.

use std::time::Duration;

/// A boxed error from outside ctxkit (a provider's own error type, an I/O error…).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result alias used across ctxkit.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while assembling context or running an agent.
///
/// Each message is one sentence that names the provider, tool, model or hook at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A context provider returned an error.
    #[error("context provider `{provider}` failed: {source}")]
    Provider {
        /// Which provider failed, by its [`name`](crate::provider::ContextProvider::name).
        provider: String,
        /// The provider's own error, kept whole so callers can inspect or downcast it.
        #[source]
        source: BoxError,
    },
    /// A context provider did not answer within its timeout.
    #[error("context provider `{provider}` timed out after {after:?}")]
    Timeout {
        /// Which provider was cut off.
        provider: String,
        /// The limit it ran into: its own timeout, or what was left of the run's deadline.
        after: Duration,
    },
    /// A context provider panicked; the panic was contained.
    #[error("context provider `{provider}` panicked: {message}")]
    Panic {
        /// Which provider panicked; the other providers' contributions are unaffected.
        provider: String,
        /// The panic's message when it was a string, else `unknown panic`.
        message: String,
    },
    /// Two providers (or a provider and the agent) offer a tool with the same name.
    #[error("tool `{tool}` is offered by both `{first}` and `{second}`; tool names must be unique")]
    DuplicateTool {
        /// The contested name; the model could not tell the two tools apart.
        tool: String,
        /// Who offered the name first: `agent` or a provider's name.
        first: String,
        /// Who offered it again: `agent`, a provider's name, or `a context provider` when a
        /// provider's tool collides with one of the agent's.
        second: String,
    },
    /// The model asked for a tool nobody registered.
    #[error("unknown tool `{tool}`; available tools: {available}")]
    UnknownTool {
        /// The name the model asked for.
        tool: String,
        /// The registered names, comma-separated (`none` when there are none), so the message
        /// shows what the model could have called.
        available: String,
    },
    /// The arguments of a tool call do not fit the tool's parameter schema.
    #[error("invalid arguments for tool `{tool}`: {message}")]
    ToolArguments {
        /// The tool the model called.
        tool: String,
        /// What is wrong: not JSON, not an object, a missing required argument or a wrong type.
        message: String,
    },
    /// A tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Tool {
        /// The tool that failed.
        tool: String,
        /// The tool's own account of the failure; the runner hands it back to the model as
        /// an `error: …` tool result.
        message: String,
    },
    /// The model call failed.
    #[error("model `{model}` failed: {message}")]
    Model {
        /// `backend:model`.
        model: String,
        /// What went wrong, one sentence (credentials masked).
        message: String,
        /// Whether the same call may succeed later (overload, server trouble, a lost
        /// connection), as opposed to a request or configuration the server will keep refusing.
        retryable: bool,
    },
    /// A model's reply was larger than the backend's response size limit; reading stopped at
    /// the limit, so a runaway or hostile server cannot exhaust memory.
    #[error(
        "model `{model}` failed: the reply from {url} is larger than the {} response size limit, so it was not read to the end",
        byte_size(*.limit)
    )]
    ModelResponseTooLarge {
        /// `backend:model` of the model whose reply was cut off.
        model: String,
        /// The endpoint, credentials masked.
        url: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A model call spent its whole time budget (all attempts and the pauses between them)
    /// without a usable reply.
    #[error(
        "model `{model}` failed: its {budget:?} time budget ran out after {} at {url}{}",
        attempts_text(*.attempts),
        last_failure.as_ref().map(|f| format!(" (last failure: {f})")).unwrap_or_default()
    )]
    ModelTimeBudget {
        /// `backend:model` of the model that ran out of time.
        model: String,
        /// The endpoint, credentials masked.
        url: String,
        /// The whole call's allowance: every attempt and the pauses between them.
        budget: Duration,
        /// Attempts started, including one cut short by the budget.
        attempts: u32,
        /// Why the last attempt that ended on its own failed, if any did.
        last_failure: Option<String>,
    },
    /// A lifecycle hook returned an error; the run stops there.
    #[error("hook `{hook}` failed in {point}: {source}")]
    Hook {
        /// Which hook failed, by its [`name`](crate::agent::Hook::name).
        hook: String,
        /// The lifecycle point it failed in, e.g. `before_model` or `after_tool`.
        point: &'static str,
        /// The hook's own error, kept whole so callers can inspect or downcast it.
        #[source]
        source: BoxError,
    },
    /// A run (every model call and tool call it made) took longer than
    /// [`Limits::run_timeout`](crate::agent::Limits::run_timeout); what was under way was
    /// stopped.
    #[error("the run did not finish within its {budget:?} time budget ({model_calls} model calls and {tool_calls} tool calls had completed)")]
    RunTimeBudget {
        /// The run's allowance.
        budget: Duration,
        /// Model calls that had answered.
        model_calls: usize,
        /// Tool calls that had finished.
        tool_calls: usize,
    },
    /// The model kept asking for tools beyond the agent's bound.
    #[error("the model asked for tools in more than {0} consecutive rounds; raise `max_tool_rounds` or check the model")]
    ToolRounds(usize),
    /// Any other error, with its own message.
    #[error("{0}")]
    Other(#[source] BoxError),
}

impl Error {
    /// Wrap any error or message as [`Error::Other`].
    pub fn other(err: impl Into<BoxError>) -> Self {
        Error::Other(err.into())
    }

    /// Whether trying the same thing again later may succeed: a model that was overloaded,
    /// unreachable or out of time, as opposed to a refusal that will repeat.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Model { retryable, .. } => *retryable,
            Error::ModelTimeBudget { .. } | Error::RunTimeBudget { .. } | Error::Timeout { .. } => true,
            _ => false,
        }
    }

    /// The error of a named provider, keeping the original as its source.
    pub fn provider(provider: impl Into<String>, err: impl Into<BoxError>) -> Self {
        Error::Provider {
            provider: provider.into(),
            source: err.into(),
        }
    }
}

/// `16 MiB`, `512 KiB` or `1000 bytes`: the largest unit that divides the size exactly.
fn byte_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        1 => "1 byte".into(),
        b => format!("{b} bytes"),
    }
}

fn attempts_text(attempts: u32) -> String {
    match attempts {
        1 => "1 attempt".into(),
        n => format!("{n} attempts"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_read_naturally() {
        assert_eq!(byte_size(16 * 1024 * 1024), "16 MiB");
        assert_eq!(byte_size(1536), "1536 bytes");
        assert_eq!(byte_size(2048), "2 KiB");
        assert_eq!(byte_size(1000), "1000 bytes");
        assert_eq!(byte_size(1), "1 byte");
    }
}
