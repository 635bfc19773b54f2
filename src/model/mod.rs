//! Chat models: the trait, the offline `dry-run` model and a scripted model for tests.
//! HTTP backends live behind the `http` feature.

mod dry_run;
#[cfg(feature = "http")]
pub mod http;
mod scripted;

use async_trait::async_trait;
use serde::Serialize;

use crate::{Message, Result, ToolDefinition};

pub use dry_run::DryRunModel;
#[cfg(feature = "http")]
pub use http::{model_from_spec, OllamaModel, OpenAiModel};
pub use scripted::ScriptedModel;

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
    /// Where the request's parts came from; backends do not send it.
    #[serde(skip)]
    pub meta: RequestMeta,
}

/// Attribution of a request, for reports and the dry-run model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestMeta {
    /// `(source, kind, items)` of every instruction section, in request order.
    pub sections: Vec<(String, String, Vec<String>)>,
    /// Token count of the whole request.
    pub tokens: usize,
}

impl RequestMeta {
    /// Items of every section of `kind`.
    pub fn items_of(&self, kind: &str) -> Vec<&str> {
        self.sections
            .iter()
            .filter(|(_, k, _)| k == kind)
            .flat_map(|(_, _, items)| items.iter().map(String::as_str))
            .collect()
    }
}

/// A chat model: messages and tool definitions in, one assistant message out (which may ask
/// for tool calls).
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// `backend:model`, for logs and errors.
    fn name(&self) -> &str;
    async fn complete(&self, request: &ModelRequest) -> Result<Message>;
}
