//! ctxkit decides what context an LLM agent sends with every request.
//!
//! The core is one trait, [`ContextProvider`]: before each model call every provider
//! contributes a [`Context`] (instructions, messages, tools, a catalog); after it, each hears
//! the outcome. A `Vec` of providers is a provider that runs them concurrently under their own
//! timeouts and merges in registration order, so an [`Agent`] holds exactly one. Skills and
//! memory live in their own crates (`ctxkit-skills`, `ctxkit-memory`) and depend on this one
//! alone.
//!
//! The crate's parts, each at one path (the crate root; HTTP backends under `http` with the
//! `http` feature; character classes shared by providers under [`text`]; the one way to open a
//! file someone else chose under [`files`]):
//! - [`Message`] / [`Role`] — the OpenAI chat shape;
//! - [`Context`] / [`Section`] — what providers contribute, with sources;
//! - [`ContextProvider`] and its composition (a `Vec` of providers is a provider), [`WithPolicy`];
//! - [`Agent`] / [`Thread`] — the runner, the tool loop, hooks, scoped [`State`];
//! - [`ContextManager`] — lazy injection (full once, then deltas);
//! - [`Tool`] / [`ToolRegistry`], [`ChatModel`] with [`DryRunModel`] and [`ScriptedModel`];
//! - [`TokenCounter`] with real BPE counts ([`BpeCounter`]) and an approximation;
//! - with the `mcp` feature, `mcp`: MCP servers' tools in the agent (stdio or streamable HTTP).
//!
//! # Layering
//!
//! Each module uses only modules on lower lines:
//!
//! ```text
//! agent                      the runner: assembly, the tool loop, hooks, threads, reports
//! mcp                        MCP servers' tools (feature `mcp`)
//! provider                   the ContextProvider trait, composition, policies
//! tokens                     token counting of requests
//! model                      ChatModel, ModelRequest, the dry-run, scripted and HTTP backends
//! lazy                       ContextManager: full context once, then deltas
//! context                    what providers contribute: Context, Section, CatalogEntry
//! report, restrict           how a provider fared; limits on the tools a run may call
//! tool, state                tools and their registry; scoped state
//! message, error, text       the chat shape; errors; character classes
//! files                      opening only regular files, never blocking on a FIFO
//! ```

#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod agent;
mod context;
mod error;
pub mod files;
mod lazy;
#[cfg(feature = "mcp")]
pub mod mcp;
mod message;
mod model;
mod provider;
mod report;
mod restrict;
mod state;
pub mod text;
mod tokens;
mod tool;

pub use agent::{
    Agent, AgentBuilder, Assembly, Hook, HookContext, Limits, RunOutput, RunReport, SessionInfo,
    SessionStore, SessionSummary, Thread, TokenReport,
};
pub use context::{CatalogEntry, Context, LeftOut, Placement, Section, SectionKind};
pub use error::{BoxError, Error, Result};
pub use lazy::ContextManager;
pub use message::{latest_user_message, FunctionCall, Message, Role, ToolCall};
#[cfg(feature = "http")]
pub use model::http;
pub use model::{ChatModel, DryRunModel, ModelReply, ModelRequest, RequestMeta, ScriptedModel, Usage};
pub use provider::{
    run_once, ContextProvider, Phase, Policy, ProviderExt, RunInfo, RunOutcome, Sent, SentOnce, SentRecord,
    ThreadInfo, WithPolicy,
};
pub use report::{Outcome, ProviderReport};
pub use restrict::ToolRestriction;
pub use state::State;
pub use tokens::{ApproxCounter, BpeCounter, MemoCounter, TokenCounter};
pub use tool::{CancellationToken, Tool, ToolContext, ToolDefinition, ToolRegistry};

/// Compile-time proof that the public types can be shared across threads and tasks (an agent
/// behind an `Arc` serving many conversations, a report sent to another task). Adding a field
/// that is not `Send + Sync` fails the build here instead of in a user's `tokio::spawn`.
#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}

    /// A provider to instantiate the generic wrapper with.
    struct Nothing;
    #[async_trait::async_trait]
    impl ContextProvider for Nothing {
        fn name(&self) -> &str {
            "nothing"
        }
        async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
            Ok(Context::new())
        }
    }

    is::<Agent>();
    is::<AgentBuilder>();
    is::<Thread>();
    is::<Limits>();
    is::<Assembly>();
    is::<RunOutput>();
    is::<RunReport>();
    is::<TokenReport>();
    is::<HookContext<'static>>();
    is::<SessionSummary>();
    is::<Context>();
    is::<Sent>();
    is::<SentRecord>();
    is::<SentOnce<Nothing>>();
    is::<Section>();
    is::<SectionKind>();
    is::<Placement>();
    is::<CatalogEntry>();
    is::<Error>();
    is::<ContextManager>();
    is::<Message>();
    is::<Role>();
    is::<ToolCall>();
    is::<FunctionCall>();
    is::<ModelRequest>();
    is::<RequestMeta>();
    is::<DryRunModel>();
    is::<ScriptedModel>();
    is::<RunInfo>();
    is::<RunOutcome<'static>>();
    is::<ThreadInfo>();
    is::<Policy>();
    is::<ProviderReport>();
    is::<Outcome>();
    is::<WithPolicy<Nothing>>();
    is::<State>();
    is::<BpeCounter>();
    is::<ApproxCounter>();
    is::<MemoCounter>();
    is::<ToolRegistry>();
    is::<ToolDefinition>();
    is::<ModelReply>();
    is::<Usage>();
    #[cfg(feature = "http")]
    {
        is::<http::OpenAiModel>();
        is::<http::OllamaModel>();
        is::<http::AnthropicModel>();
        is::<http::ModelOptions>();
        is::<http::RetryPolicy>();
    }
    #[cfg(feature = "mcp")]
    {
        is::<mcp::McpServer>();
        is::<mcp::McpTools>();
        is::<mcp::McpTool>();
    }

    // The runner's futures too: an agent's work can be spawned onto a multi-threaded runtime.
    fn is_send<T: Send>(_: &T) {}
    let agent = Agent::builder().build().unwrap();
    let mut thread = Thread::new();
    is_send(&agent.preview(&thread, ""));
    is_send(&agent.run(&mut thread, ""));
    is_send(&agent.compact(&mut thread, 0));
    is_send(&agent.end_session(&mut thread));
}

/// The README's code blocks, compiled as doc-tests so the README never shows code that does not build.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
