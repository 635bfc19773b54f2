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

/// A chat model: messages and tool definitions in, one assistant message out (which may ask
/// for tool calls).
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// `backend:model`, for logs and errors.
    fn name(&self) -> &str;
    /// Answer one request with one assistant message. A failure names the model, and
    /// [`Error::is_retryable`](crate::error::Error::is_retryable) tells the caller whether trying
    /// again may help.
    async fn complete(&self, request: &ModelRequest) -> Result<Message>;
}
