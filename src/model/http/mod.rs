//! HTTP chat models (feature `http`): OpenAI-compatible `/chat/completions` and Ollama's
//! `/api/chat`.
//!
//! Both are one type, [`HttpModel`], over a [`Protocol`] that knows only its wire format, so
//! timeouts, retries with backoff, API keys and error messages behave the same for every
//! backend. Every call is bounded in time (per attempt and in total, retries included) and in
//! reply size, and credentials in a base URL are masked wherever the URL is shown.
//! [`model_from_spec`] turns a command-line spec such as `ollama:llama3.2` into a model.

mod client;
mod endpoint;
mod failure;
mod ollama;
mod openai;
mod retry;
mod wire;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{ChatModel, DryRunModel};

pub use client::{HttpModel, Protocol, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT};
pub use ollama::{Ollama, OllamaModel};
pub use openai::{OpenAi, OpenAiModel};
pub use retry::RetryPolicy;

/// The spec forms [`model_from_spec`] accepts, for help texts and errors.
pub const MODEL_SPECS: &str = "`dry-run`, `openai:MODEL` or `ollama:MODEL`";

/// The model a spec names: `dry-run` (offline), `openai:MODEL` (OpenAI or any compatible
/// server; key from `OPENAI_API_KEY` when set) or `ollama:MODEL`. `base_url` replaces the
/// backend's default URL and is ignored by `dry-run`, which makes no requests.
///
/// ```
/// let model = ctxkit::http::model_from_spec("ollama:llama3.2", Some("http://gpu-box:11434"))?;
/// assert_eq!(model.name(), "ollama:llama3.2");
/// # Ok::<(), ctxkit::Error>(())
/// ```
pub fn model_from_spec(spec: &str, base_url: Option<&str>) -> Result<Arc<dyn ChatModel>> {
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
        "openai" => Ok(Arc::new(with_base_url(OpenAiModel::new(model), base_url)?)),
        "ollama" => Ok(Arc::new(with_base_url(OllamaModel::new(model), base_url)?)),
        _ => Err(unknown()),
    }
}

/// Apply a user-given base URL, rejecting one that cannot work now rather than at the first
/// request. Errors show the URL with its credentials masked.
fn with_base_url<P: Protocol>(model: HttpModel<P>, base_url: Option<&str>) -> Result<HttpModel<P>> {
    let Some(url) = base_url else { return Ok(model) };
    let shown = endpoint::shown_base(url);
    match reqwest::Url::parse(url.trim()) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(model.base_url(url)),
        Ok(parsed) => Err(Error::other(format!(
            "base URL `{shown}` uses scheme `{}`; expected http or https, e.g. `http://localhost:11434`",
            parsed.scheme()
        ))),
        Err(e) => Err(Error::other(format!(
            "base URL `{shown}` is not a valid URL ({e}); expected e.g. `http://localhost:11434`"
        ))),
    }
}
