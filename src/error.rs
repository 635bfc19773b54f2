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
        provider: String,
        #[source]
        source: BoxError,
    },
    /// A context provider did not answer within its timeout.
    #[error("context provider `{provider}` timed out after {after:?}")]
    Timeout { provider: String, after: Duration },
    /// A context provider panicked; the panic was contained.
    #[error("context provider `{provider}` panicked: {message}")]
    Panic { provider: String, message: String },
    /// Two providers (or a provider and the agent) offer a tool with the same name.
    #[error("tool `{tool}` is offered by both `{first}` and `{second}`; tool names must be unique")]
    DuplicateTool {
        tool: String,
        first: String,
        second: String,
    },
    /// The model asked for a tool nobody registered.
    #[error("unknown tool `{tool}`; available tools: {available}")]
    UnknownTool { tool: String, available: String },
    /// The arguments of a tool call do not fit the tool's parameter schema.
    #[error("invalid arguments for tool `{tool}`: {message}")]
    ToolArguments { tool: String, message: String },
    /// A tool ran and failed.
    #[error("tool `{tool}` failed: {message}")]
    Tool { tool: String, message: String },
    /// The model call failed.
    #[error("model `{model}` failed: {message}")]
    Model { model: String, message: String },
    /// A lifecycle hook returned an error; the run stops there.
    #[error("hook `{hook}` failed in {point}: {source}")]
    Hook {
        hook: String,
        point: &'static str,
        #[source]
        source: BoxError,
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

    /// The error of a named provider, keeping the original as its source.
    pub fn provider(provider: impl Into<String>, err: impl Into<BoxError>) -> Self {
        Error::Provider {
            provider: provider.into(),
            source: err.into(),
        }
    }
}
