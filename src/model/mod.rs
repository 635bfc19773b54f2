//! Chat models: the trait, the offline `dry-run` model and a scripted model for tests.
//! HTTP backends live behind the `http` feature.

mod dry_run;
#[cfg(feature = "http")]
pub mod http;
mod scripted;

use async_trait::async_trait;
use serde::Serialize;

use crate::context::{Section, SectionKind};
use crate::error::Result;
use crate::message::Message;
use crate::tool::ToolDefinition;

pub use dry_run::DryRunModel;
pub use scripted::ScriptedModel;

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRequest {
    /// Everything the model reads, in order: the conversation with the injected context in
    /// its place.
    pub messages: Vec<Message>,
    /// The tools the model may call in its reply: the agent's and this run's providers'.
    pub tools: Vec<ToolDefinition>,
    /// A JSON schema the reply's text must follow (its root an object), for a reply a program
    /// reads: backends with structured output send it (OpenAI `response_format`, Ollama
    /// `format`), others ignore it, so the reader must still check what it gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_schema: Option<serde_json::Value>,
    /// Bytes at the start of the first message, when it is the system text, that stay the same
    /// from one request to the next as long as the instructions, stable context and skill
    /// catalog do: backends with prompt caching (Anthropic) end a cache breakpoint there. 0:
    /// no such prefix.
    #[serde(skip)]
    pub stable_prefix: usize,
    /// Where the request's parts came from; backends do not send it.
    #[serde(skip)]
    pub meta: RequestMeta,
}

/// Attribution of a request, for reports and the dry-run model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestMeta {
    /// Every section of the system text, in request order, with its source and items.
    pub sections: Vec<Section>,
    /// Token count of the whole request.
    pub tokens: usize,
}

impl RequestMeta {
    /// Items of every section of `kind`.
    pub fn items_of(&self, kind: &SectionKind) -> Vec<&str> {
        self.sections
            .iter()
            .filter(|s| &s.kind == kind)
            .flat_map(|s| s.items.iter().map(String::as_str))
            .collect()
    }
}

/// A model's answer to one request: the assistant message and, when the server said, what it
/// cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelReply {
    /// The assistant message, which may ask for tool calls.
    pub message: Message,
    /// Tokens as the server counted them; `None` when it did not report them.
    pub usage: Option<Usage>,
}

impl From<Message> for ModelReply {
    /// A reply without usage figures.
    fn from(message: Message) -> Self {
        ModelReply { message, usage: None }
    }
}

/// Tokens of model calls as the server counted them. Added up over a run's calls in
/// [`RunReport::usage`](crate::RunReport::usage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Input tokens read in full (not from a prompt cache).
    pub input_tokens: u64,
    /// Input tokens read from the prompt cache, at a fraction of the price.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache for later requests.
    pub cache_write_tokens: u64,
    /// Tokens of the reply.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// A chat model: messages and tool definitions in, one assistant message out (which may ask
/// for tool calls).
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// `backend:model`, for logs and errors.
    fn name(&self) -> &str;
    /// Answer one request with one assistant message, and its token usage when the server
    /// reports it. A failure names the model, and
    /// [`Error::is_retryable`](crate::error::Error::is_retryable) tells the caller whether trying
    /// again may help.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply>;
}
