//! The one HTTP model type: configuration, the API key, the retry loop and error reporting,
//! written once and parameterised by a [`Protocol`] that only knows its wire format.

use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde::Serialize;

use super::failure::{excerpt, redact, Failure};
use super::retry::{parse_retry_after, RetryPolicy};
use crate::model::{ChatModel, ModelRequest};
use crate::{Error, Message, Result};

/// Default for [`HttpModel::timeout`]: generous, because a large local model can take minutes
/// to answer a long request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

pub(super) mod sealed {
    /// Keeps [`super::Protocol`] closed, so new methods can be added to it without a breaking
    /// change.
    pub trait Sealed {}
}

/// The wire format of one chat API: where to post, how to encode a request and how to read
/// the reply. Implemented by [`OpenAi`](super::OpenAi) and [`Ollama`](super::Ollama).
pub trait Protocol: sealed::Sealed + Send + Sync + 'static {
    /// Backend part of [`ChatModel::name`], e.g. `openai`.
    const PREFIX: &'static str;
    /// Base URL used when none is configured.
    const DEFAULT_BASE_URL: &'static str;
    /// Environment variable holding the API key by default, if the API usually needs one.
    const DEFAULT_API_KEY_ENV: Option<&'static str>;
    /// Path of the chat endpoint, appended to the base URL.
    const PATH: &'static str;
    /// What a valid reply looks like, for the error when it is not.
    const EXPECTED: &'static str;

    /// The request body.
    fn encode<'a>(model: &'a str, request: &'a ModelRequest) -> impl Serialize + 'a;

    /// The assistant message of a successful reply, or why the body is not one.
    fn decode(body: &str) -> std::result::Result<Message, String>;
}

/// A chat model behind an HTTP API, configured builder-style. Use it through the
/// [`OpenAiModel`](super::OpenAiModel) and [`OllamaModel`](super::OllamaModel) aliases.
///
/// ```no_run
/// # use std::time::Duration;
/// use ctxkit::model::http::OllamaModel;
/// let model = OllamaModel::new("llama3.2")
///     .base_url("http://gpu-box:11434")
///     .timeout(Duration::from_secs(300))
///     .max_retries(5);
/// ```
#[derive(Debug, Clone)]
pub struct HttpModel<P> {
    name: String,
    model: String,
    base_url: String,
    api_key_env: Option<String>,
    timeout: Duration,
    retry: RetryPolicy,
    /// Built once so connections are pooled across requests; building can only fail when the
    /// TLS backend cannot start, which is reported by the first request rather than panicking.
    client: std::result::Result<reqwest::Client, String>,
    protocol: PhantomData<fn() -> P>,
}

impl<P: Protocol> HttpModel<P> {
    /// The model `model` at the protocol's default base URL, with default timeout and retries.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        HttpModel {
            name: format!("{}:{model}", P::PREFIX),
            model,
            base_url: P::DEFAULT_BASE_URL.into(),
            api_key_env: P::DEFAULT_API_KEY_ENV.map(Into::into),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            client: reqwest::Client::builder().build().map_err(|e| {
                format!("could not set up the HTTP client ({e}); the TLS backend may be unavailable")
            }),
            protocol: PhantomData,
        }
    }

    /// Base URL of the API, e.g. `http://localhost:8000/v1` for a local OpenAI-compatible
    /// server; a trailing `/` is ignored.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_string();
        self
    }

    /// Read the API key from environment variable `var` (at every request, so a rotated key
    /// is picked up). An unset or empty variable sends no `Authorization` header, which local
    /// servers accept.
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Never send an API key.
    pub fn without_api_key(mut self) -> Self {
        self.api_key_env = None;
        self
    }

    /// Limit for one attempt, from connecting to the last byte of the reply (default 120 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Retries after a `429`, a `5xx` or a connection error (default 3).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.retry.max_retries = retries;
        self
    }

    /// Pause before the first retry, doubled for each further one (default 500 ms).
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.retry.base_delay = delay;
        self
    }

    /// The whole retry policy at once, including the cap on any pause.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The model name sent to the server.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The full URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!("{}{}", self.base_url, P::PATH)
    }

    /// The key, if a variable is configured and holds a non-blank value.
    fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        let key = std::env::var(var).ok()?;
        let key = key.trim();
        (!key.is_empty()).then(|| key.to_string())
    }

    fn authorization(&self, key: &str) -> std::result::Result<HeaderValue, String> {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            let var = self.api_key_env.as_deref().unwrap_or_default();
            format!("the API key in environment variable `{var}` contains characters not allowed in an HTTP header")
        })?;
        // Keeps the value out of reqwest's and hyper's debug output.
        value.set_sensitive(true);
        Ok(value)
    }

    /// Post `body` until a success, a final failure or the retry budget runs out; returns the
    /// text of a successful reply.
    async fn post(&self, body: Vec<u8>, key: Option<&str>) -> std::result::Result<String, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let auth = key.map(|k| self.authorization(k)).transpose()?;
        let url = self.endpoint();
        let mut retry = 0;
        loop {
            let mut request = client
                .post(&url)
                .timeout(self.timeout)
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(auth) = &auth {
                request = request.header(AUTHORIZATION, auth.clone());
            }
            let failure = match attempt(request, self.timeout).await {
                Ok(text) => return Ok(text),
                Err(failure) => failure,
            };
            if !failure.is_retryable() || retry >= self.retry.max_retries {
                return Err(failure.describe(&url, retry + 1));
            }
            let delay = self.retry.delay(retry, failure.retry_after);
            retry += 1;
            tracing::debug!(
                model = %self.name,
                retry,
                max_retries = self.retry.max_retries,
                ?delay,
                reason = %redact(failure.describe(&url, 1), key),
                "retrying model request"
            );
            tokio::time::sleep(delay).await;
        }
    }
}

/// Send one request and read its whole body.
async fn attempt(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> std::result::Result<String, Failure> {
    let response = request
        .send()
        .await
        .map_err(|e| Failure::transport(&e, timeout))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let text = response
        .text()
        .await
        .map_err(|e| Failure::transport(&e, timeout))?;
    if status.is_success() {
        Ok(text)
    } else {
        Err(Failure::status(status, retry_after, &text))
    }
}

#[async_trait]
impl<P: Protocol> ChatModel for HttpModel<P> {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: &ModelRequest) -> Result<Message> {
        let key = self.api_key();
        let result = async {
            // Encoded once, resent as-is by every retry.
            let body = serde_json::to_vec(&P::encode(&self.model, request))
                .map_err(|e| format!("could not encode the request as JSON ({e})"))?;
            let text = self.post(body, key.as_deref()).await?;
            P::decode(&text).map_err(|why| {
                format!(
                    "{} answered with a body that is not {} ({why}); the body starts with `{}`",
                    self.endpoint(),
                    P::EXPECTED,
                    excerpt(&text)
                )
            })
        }
        .await;
        result.map_err(|message| Error::Model {
            model: self.name.clone(),
            message: redact(message, key.as_deref()),
        })
    }
}
