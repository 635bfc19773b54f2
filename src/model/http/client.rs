//! The one HTTP model type: configuration, the API key, the retry loop and error reporting,
//! written once and parameterised by a [`Protocol`] that only knows its wire format.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde::Serialize;
use tokio::time::Instant;

use super::endpoint::Endpoint;
use super::failure::{excerpt, redact, Failure};
use super::retry::{parse_retry_after, RetryPolicy};
use crate::error::{Error, Result};
use crate::model::{ChatModel, ModelReply, ModelRequest};

/// Default for [`HttpModel::timeout`]: generous, because a large local model can take minutes
/// to answer a long request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Default for [`HttpModel::total_timeout`]: one call, all its attempts and the pauses between
/// them, takes at most this long (or one full [`HttpModel::timeout`] if that is longer).
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(120);

/// Default for [`HttpModel::max_response_bytes`]: 16 MiB, far above any real chat reply.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes of an error reply that are read: only an excerpt is ever shown.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

pub(super) mod sealed {
    /// Keeps [`super::Protocol`] closed, so new methods can be added to it without a breaking
    /// change.
    pub trait Sealed {}
}

/// The wire format of one chat API: where to post, how to encode a request and how to read
/// the reply. Implemented by [`OpenAi`](super::OpenAi), [`Ollama`](super::Ollama) and
/// [`Anthropic`](super::Anthropic).
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
    /// Headers every request carries besides the key, e.g. an API version.
    const HEADERS: &'static [(&'static str, &'static str)] = &[];

    /// The header that carries the API key, and its value: `Authorization: Bearer KEY` unless
    /// the API wants it otherwise.
    fn key_header(key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// The request body.
    fn encode<'a>(model: &'a str, request: &'a ModelRequest) -> impl Serialize + 'a;

    /// The assistant message of a successful reply to `request` and its usage, or why the
    /// body is not one.
    fn decode(request: &ModelRequest, body: &str) -> std::result::Result<ModelReply, String>;
}

/// A chat model behind an HTTP API, configured builder-style. Use it through the
/// [`OpenAiModel`](super::OpenAiModel) and [`OllamaModel`](super::OllamaModel) aliases.
///
/// Every call is bounded: each attempt by [`timeout`](Self::timeout), the whole call with its
/// retries by [`total_timeout`](Self::total_timeout), and the reply's size by
/// [`max_response_bytes`](Self::max_response_bytes). Errors, logs and `Debug` show the endpoint
/// with credentials masked (a password or token in the base URL, `api_key=`-like query
/// parameters) and never the API key.
///
/// ```no_run
/// # use std::time::Duration;
/// use ctxkit::http::OllamaModel;
/// let model = OllamaModel::new("llama3.2")
///     .base_url("http://gpu-box:11434")
///     .timeout(Duration::from_secs(300))
///     .total_timeout(Duration::from_secs(600))
///     .max_retries(5);
/// ```
#[derive(Clone)]
pub struct HttpModel<P> {
    name: String,
    model: String,
    endpoint: Endpoint,
    api_key_env: Option<String>,
    timeout: Duration,
    /// `None`: [`DEFAULT_TOTAL_TIMEOUT`], stretched to one full `timeout`.
    total_timeout: Option<Duration>,
    max_response_bytes: usize,
    retry: RetryPolicy,
    /// Built once so connections are pooled across requests; building can only fail when the
    /// TLS backend cannot start, which is reported by the first request rather than panicking.
    client: std::result::Result<reqwest::Client, String>,
    protocol: PhantomData<fn() -> P>,
}

/// Shows the endpoint with credentials masked.
impl<P> fmt::Debug for HttpModel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModel")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint.shown())
            .field("api_key_env", &self.api_key_env)
            .field("timeout", &self.timeout)
            .field("total_timeout", &self.total_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// Why a call failed, before it becomes an [`Error`].
enum CallError {
    /// One sentence, not yet scrubbed of secrets, and whether a later call may succeed.
    Message {
        text: String,
        retryable: bool,
    },
    TooLarge,
    Budget {
        attempts: u32,
        last_failure: Option<String>,
    },
}

impl From<String> for CallError {
    fn from(message: String) -> Self {
        CallError::Message {
            text: message,
            retryable: false,
        }
    }
}

impl<P: Protocol> HttpModel<P> {
    /// The model `model` at the protocol's default base URL, with default limits and retries.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        HttpModel {
            name: format!("{}:{model}", P::PREFIX),
            model,
            endpoint: Endpoint::new(P::DEFAULT_BASE_URL, P::PATH),
            api_key_env: P::DEFAULT_API_KEY_ENV.map(Into::into),
            timeout: DEFAULT_TIMEOUT,
            total_timeout: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            retry: RetryPolicy::default(),
            client: reqwest::Client::builder().build().map_err(|e| {
                format!("could not set up the HTTP client ({e}); the TLS backend may be unavailable")
            }),
            protocol: PhantomData,
        }
    }

    /// Base URL of the API, e.g. `http://localhost:8000/v1` for a local OpenAI-compatible
    /// server. The protocol's path is appended to the URL's path (a trailing `/` is ignored)
    /// and its query string is kept, so `https://host/v1?api-version=2` posts to
    /// `https://host/v1/chat/completions?api-version=2`. Credentials in it (`user:pass@`,
    /// `?api_key=…`) are sent but masked in every error and log. A URL that is not http(s)
    /// fails the first request with an error saying so.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Endpoint::new(&url.into(), P::PATH);
        self
    }

    /// Read the API key from environment variable `var` (at every request, so a rotated key
    /// is picked up). An unset or empty variable sends no key header, which local
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
    /// An attempt that times out is not retried.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Limit for a whole call: every attempt and every pause between retries (default
    /// [`DEFAULT_TOTAL_TIMEOUT`], 120 s, or one full [`timeout`](Self::timeout) when that is
    /// longer). An attempt never runs past it, and no retry starts whose pause would reach
    /// it; the call then fails with [`Error::ModelTimeBudget`], which counts the attempts.
    pub fn total_timeout(mut self, budget: Duration) -> Self {
        self.total_timeout = Some(budget);
        self
    }

    /// The most bytes of a reply that are read (default [`DEFAULT_MAX_RESPONSE_BYTES`],
    /// 16 MiB). Bytes are counted as they arrive, whatever `Content-Length` says, so a chunked
    /// or endless reply is cut too; the call then fails with [`Error::ModelResponseTooLarge`]
    /// and is not retried.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Retries after a `429`, a `5xx` or a connection error (default 3), within the
    /// [`total_timeout`](Self::total_timeout).
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

    /// The URL requests are posted to, with credentials masked (`***`), as errors show it.
    pub fn endpoint(&self) -> String {
        self.endpoint.shown().to_string()
    }

    /// The time budget of one call.
    fn budget(&self) -> Duration {
        self.total_timeout
            .unwrap_or_else(|| DEFAULT_TOTAL_TIMEOUT.max(self.timeout))
    }

    /// The key, if a variable is configured and holds a non-blank value.
    fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.as_deref()?;
        let key = std::env::var(var).ok()?;
        let key = key.trim();
        (!key.is_empty()).then(|| key.to_string())
    }

    fn authorization(&self, key: &str) -> std::result::Result<(HeaderName, HeaderValue), String> {
        let (name, text) = P::key_header(key);
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            let var = self.api_key_env.as_deref().unwrap_or_default();
            format!("the API key in environment variable `{var}` contains characters not allowed in an HTTP header")
        })?;
        // Keeps the value out of reqwest's and hyper's debug output.
        value.set_sensitive(true);
        Ok((name, value))
    }

    /// Post `body` until a success, a final failure, the retry count or the time budget runs
    /// out; returns the text of a successful reply.
    async fn post(&self, body: Vec<u8>, key: Option<&str>) -> std::result::Result<String, CallError> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let auth = key.map(|k| self.authorization(k)).transpose()?;
        let shown = self.endpoint.shown();
        let url = match self.endpoint.url() {
            Ok(url) => url,
            Err(why) => return Err(Failure::invalid_url(why).describe(shown, 1).into()),
        };
        let deadline = Instant::now() + self.budget();
        let mut attempts = 0;
        let mut last_failure = None;
        loop {
            let timeout = self
                .timeout
                .min(deadline.saturating_duration_since(Instant::now()));
            attempts += 1;
            let mut request = client
                .post(url.clone())
                .timeout(timeout)
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
            for (name, value) in P::HEADERS {
                request = request.header(*name, *value);
            }
            if let Some((name, value)) = &auth {
                request = request.header(name, value.clone());
            }
            // reqwest's timeout covers the body too; the outer one also covers what it does
            // not (resolving the host), so the budget holds whatever stalls.
            let sent =
                tokio::time::timeout_at(deadline, attempt(request, timeout, self.max_response_bytes)).await;
            let failure = match sent {
                Ok(Ok(text)) => return Ok(text),
                Ok(Err(failure)) => failure,
                Err(_) => Failure::timeout(timeout),
            };
            if failure.is_too_large() {
                return Err(CallError::TooLarge);
            }
            if failure.is_timeout() && timeout < self.timeout {
                // Cut short by the budget, not by the server being slower than `timeout`.
                return Err(CallError::Budget {
                    attempts,
                    last_failure,
                });
            }
            let retry = attempts - 1;
            if !failure.is_retryable() || retry >= self.retry.max_retries {
                return Err(CallError::Message {
                    text: failure.describe(shown, attempts),
                    retryable: failure.is_retryable(),
                });
            }
            let delay = self.retry.delay(retry, failure.retry_after);
            let reason = failure.describe("the server", 1);
            if Instant::now() + delay >= deadline {
                return Err(CallError::Budget {
                    attempts,
                    last_failure: Some(reason),
                });
            }
            tracing::debug!(
                model = %self.name,
                url = shown,
                retry = attempts,
                max_retries = self.retry.max_retries,
                ?delay,
                reason = %self.endpoint.scrub(redact(reason.clone(), key)),
                "retrying model request"
            );
            last_failure = Some(reason);
            tokio::time::sleep(delay).await;
        }
    }
}

/// Send one request and read its body: a successful one up to `max_bytes`, an error one up to
/// [`MAX_ERROR_BODY_BYTES`] (the rest is never shown).
async fn attempt(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    max_bytes: usize,
) -> std::result::Result<String, Failure> {
    let mut response = request.send().await.map_err(|e| Failure::transport(e, timeout))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    if !status.is_success() {
        let (body, _) = read_body(&mut response, max_bytes.min(MAX_ERROR_BODY_BYTES), timeout).await?;
        return Err(Failure::status(status, retry_after, &text_of(body)));
    }
    // A declared length over the limit fails before reading; an undeclared or false one is
    // caught by counting.
    if response
        .content_length()
        .is_some_and(|len| len > max_bytes as u64)
    {
        return Err(Failure::too_large());
    }
    match read_body(&mut response, max_bytes, timeout).await? {
        (body, false) => Ok(text_of(body)),
        (_, true) => Err(Failure::too_large()),
    }
}

/// Up to `max_bytes` of the body, counted as they arrive, and whether there was more.
async fn read_body(
    response: &mut reqwest::Response,
    max_bytes: usize,
    timeout: Duration,
) -> std::result::Result<(Vec<u8>, bool), Failure> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Failure::transport(e, timeout))?
    {
        let room = max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The body as text; bytes that are not UTF-8 become U+FFFD.
fn text_of(body: Vec<u8>) -> String {
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[async_trait]
impl<P: Protocol> ChatModel for HttpModel<P> {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply> {
        let key = self.api_key();
        let result = async {
            // Encoded once, resent as-is by every retry.
            let body = serde_json::to_vec(&P::encode(&self.model, request))
                .map_err(|e| format!("could not encode the request as JSON ({e})"))?;
            let text = self.post(body, key.as_deref()).await?;
            P::decode(request, &text).map_err(|why| {
                CallError::from(format!(
                    "{} answered with a body that is not {} ({why}); the body starts with `{}`",
                    self.endpoint.shown(),
                    P::EXPECTED,
                    excerpt(&text)
                ))
            })
        }
        .await;
        // Servers sometimes quote the key or the URL back: scrub both from whatever is shown.
        let clean = |text: String| self.endpoint.scrub(redact(text, key.as_deref()));
        result.map_err(|failure| match failure {
            CallError::Message { text, retryable } => Error::Model {
                model: self.name.clone(),
                message: clean(text),
                retryable,
            },
            CallError::TooLarge => Error::ModelResponseTooLarge {
                model: self.name.clone(),
                url: self.endpoint.shown().to_string(),
                limit: self.max_response_bytes,
            },
            CallError::Budget {
                attempts,
                last_failure,
            } => Error::ModelTimeBudget {
                model: self.name.clone(),
                url: self.endpoint.shown().to_string(),
                budget: self.budget(),
                attempts,
                last_failure: last_failure.map(clean),
            },
        })
    }
}
