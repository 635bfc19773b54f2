//! ctxkit decides what context an LLM agent sends with every request.
//!
//! The core is one trait, [`ContextProvider`]: before each model call every provider
//! contributes a [`Context`] (instructions, messages, tools, a catalog); after it, each hears
//! the outcome. A `Vec` of providers is a provider that runs them concurrently under their own
//! timeouts and merges in registration order, so an [`Agent`] holds exactly one. Skills and
//! memory live in their own crates (`ctxkit-skills`, `ctxkit-memory`) and depend on this one
//! alone.
//!
//! The crate's parts, one module each:
//! - [`Message`] / [`Role`] — the OpenAI chat shape;
//! - [`Context`] / [`Section`] — what providers contribute, with sources;
//! - [`ContextProvider`] and composition ([`provider`]);
//! - [`Agent`] / [`Thread`] — the runner, the tool loop, hooks, scoped [`State`];
//! - [`ContextManager`] — lazy injection (full once, then deltas);
//! - [`Tool`] / [`ToolRegistry`], [`ChatModel`] with [`DryRunModel`] and [`ScriptedModel`];
//! - [`TokenCounter`] with real BPE counts ([`BpeCounter`]) and an approximation.

#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod agent;
pub mod context;
mod error;
pub mod lazy;
mod message;
pub mod model;
pub mod provider;
pub mod state;
pub mod tokens;
mod tool;

pub use agent::{
    Agent, AgentBuilder, Assembly, Hook, HookContext, Limits, RunOutput, RunReport, SessionSummary, Thread,
    TokenReport,
};
pub use context::{CatalogEntry, Context, Placement, Section, SectionKind};
pub use error::{BoxError, Error, Result};
pub use lazy::ContextManager;
pub use message::{latest_user_message, FunctionCall, Message, Role, ToolCall};
pub use model::{ChatModel, DryRunModel, ModelRequest, RequestMeta, ScriptedModel};
pub use provider::{
    ContextProvider, Outcome, Policy, ProviderExt, ProviderReport, RunInfo, RunOutcome, ThreadInfo,
};
pub use state::State;
pub use tokens::{ApproxCounter, BpeCounter, TokenCounter};
pub use tool::{Tool, ToolDefinition, ToolRegistry};

/// The README's code blocks, compiled as doc-tests so the README never shows code that does not build.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
