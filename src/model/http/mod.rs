//! HTTP chat models (feature `http`): OpenAI-compatible `/chat/completions`, Ollama's
//! `/api/chat` and Anthropic's `/v1/messages`.
//!
//! All three are one type, [`HttpModel`], over a [`Protocol`] that knows only its wire format, so
//! timeouts, retries with backoff, API keys and error messages behave the same for every
//! backend. Every call is bounded in time (per attempt and in total, retries included) and in
//! reply size, and credentials in a base URL are masked wherever the URL is shown.
//! [`model_from_spec`] turns a command-line spec such as `ollama:llama3.2` into a model.

mod anthropic;
mod client;
mod endpoint;
mod failure;
mod ollama;
mod openai;
mod retry;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::{ChatModel, DryRunModel};

pub use anthropic::{Anthropic, AnthropicModel};
pub use client::{HttpModel, Protocol, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT};
pub use ollama::{Ollama, OllamaModel};
pub use openai::{OpenAi, OpenAiModel};
pub use retry::RetryPolicy;

/// The spec forms [`model_from_spec`] accepts, for help texts and errors.
pub const MODEL_SPECS: &str = "`dry-run`, `openai:MODEL`, `anthropic:MODEL` or `ollama:MODEL`";

/// What a command line may set on an HTTP model besides its spec; `None` keeps the default.
#[derive(Clone, Debug, Default)]
pub struct ModelOptions {
    base_url: Option<String>,
    timeout: Option<Duration>,
    max_response_bytes: Option<usize>,
}

impl ModelOptions {
    /// Replace the backend's default URL ([`HttpModel::base_url`]).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }
    /// Limit each attempt ([`HttpModel::timeout`]); the call's whole budget is at least one
    /// such attempt.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Limit a reply's size ([`HttpModel::max_response_bytes`]).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = Some(bytes);
        self
    }

    /// `model` with these options applied. A base URL that cannot work is refused now rather
    /// than at the first request; errors show it with its credentials masked.
    fn apply<P: Protocol>(&self, mut model: HttpModel<P>) -> Result<HttpModel<P>> {
        if let Some(url) = &self.base_url {
            check_base_url(url)?;
            model = model.base_url(url);
        }
        if let Some(timeout) = self.timeout {
            model = model.timeout(timeout);
        }
        if let Some(bytes) = self.max_response_bytes {
            model = model.max_response_bytes(bytes);
        }
        Ok(model)
    }
}

/// The model a spec names: `dry-run` (offline), `openai:MODEL` (OpenAI or any compatible
/// server; key from `OPENAI_API_KEY` when set), `anthropic:MODEL` (Claude; key from
/// `ANTHROPIC_API_KEY`) or `ollama:MODEL`, with `options` applied. `dry-run` makes no
/// requests and ignores them.
///
/// ```
/// use ctxkit::http::{model_from_spec, ModelOptions};
/// let options = ModelOptions::default().base_url("http://gpu-box:11434");
/// let model = model_from_spec("ollama:llama3.2", &options)?;
/// assert_eq!(model.name(), "ollama:llama3.2");
/// # Ok::<(), ctxkit::Error>(())
/// ```
pub fn model_from_spec(spec: &str, options: &ModelOptions) -> Result<Arc<dyn ChatModel>> {
    let spec = spec.trim();
    if spec == "dry-run" {
        return Ok(Arc::new(DryRunModel));
    }
    let unknown = || Error::other(format!("unknown model `{spec}`; expected {MODEL_SPECS}"));
    let (backend, model) = spec.split_once(':').ok_or_else(unknown)?;
    let model = model.trim();
    if model.is_empty() {
        return Err(Error::other(format!(
            "model spec `{spec}` names no model; write `{backend}:MODEL`, e.g. `{backend}:llama3.2`"
        )));
    }
    match backend {
        "openai" => Ok(Arc::new(options.apply(OpenAiModel::new(model))?)),
        "anthropic" => Ok(Arc::new(options.apply(AnthropicModel::new(model))?)),
        "ollama" => Ok(Arc::new(options.apply(OllamaModel::new(model))?)),
        _ => Err(unknown()),
    }
}

/// Refuse a base URL that is not a valid http(s) URL.
fn check_base_url(url: &str) -> Result<()> {
    let shown = endpoint::shown_base(url);
    match reqwest::Url::parse(url.trim()) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(()),
        Ok(parsed) => Err(Error::other(format!(
            "base URL `{shown}` uses scheme `{}`; expected http or https, e.g. `http://localhost:11434`",
            parsed.scheme()
        ))),
        Err(e) => Err(Error::other(format!(
            "base URL `{shown}` is not a valid URL ({e}); expected e.g. `http://localhost:11434`"
        ))),
    }
}
