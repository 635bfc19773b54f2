//! Why one HTTP attempt failed, whether another could help, and the one sentence a user reads.
//!
//! Messages name the URL and what to check, never the API key: the caller redacts the key
//! from every message as a last step (see [`redact`]), because servers sometimes quote it.

use std::error::Error as StdError;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

/// Longest excerpt of a response body quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// One failed attempt.
#[derive(Debug)]
pub(super) struct Failure {
    kind: Kind,
    /// The server's `Retry-After`, when it sent one in seconds.
    pub(super) retry_after: Option<Duration>,
}

#[derive(Debug)]
enum Kind {
    /// The server answered with a non-success status; `detail` is its own explanation.
    Status { status: StatusCode, detail: String },
    /// No TCP/TLS connection could be made (refused, DNS, unreachable).
    Connect { cause: String },
    /// The connection broke after it was made, before a response arrived.
    Broken { cause: String },
    /// The whole request took longer than the configured timeout.
    Timeout { after: Duration },
    /// The base URL is unusable.
    InvalidUrl { cause: String },
    /// A successful reply was longer than the response size limit.
    TooLarge,
    /// Anything else reqwest reports (a body that could not be read, too many redirects…).
    Other { cause: String },
}

impl Failure {
    /// A non-success status; the body supplies the detail.
    pub(super) fn status(status: StatusCode, retry_after: Option<Duration>, body: &str) -> Self {
        Failure {
            kind: Kind::Status {
                status,
                detail: detail_of(body),
            },
            retry_after,
        }
    }

    /// Classify a transport error; `timeout` is the configured one, for the message.
    pub(super) fn transport(err: reqwest::Error, timeout: Duration) -> Self {
        // reqwest's own text names the URL, credentials and all; the endpoint is named by
        // `describe` in its masked form instead.
        let err = err.without_url();
        let cause = root_cause(&err);
        let kind = if err.is_timeout() {
            Kind::Timeout { after: timeout }
        } else if err.is_builder() {
            Kind::InvalidUrl { cause }
        } else if err.is_connect() {
            Kind::Connect { cause }
        } else if err.is_request() {
            Kind::Broken { cause }
        } else {
            Kind::Other { cause }
        };
        Failure {
            kind,
            retry_after: None,
        }
    }

    /// No complete reply within `after`.
    pub(super) fn timeout(after: Duration) -> Self {
        Failure {
            kind: Kind::Timeout { after },
            retry_after: None,
        }
    }

    /// A base URL that cannot be used, and why.
    pub(super) fn invalid_url(cause: impl Into<String>) -> Self {
        Failure {
            kind: Kind::InvalidUrl { cause: cause.into() },
            retry_after: None,
        }
    }

    /// A successful reply longer than the response size limit.
    pub(super) fn too_large() -> Self {
        Failure {
            kind: Kind::TooLarge,
            retry_after: None,
        }
    }

    pub(super) fn is_timeout(&self) -> bool {
        matches!(self.kind, Kind::Timeout { .. })
    }

    pub(super) fn is_too_large(&self) -> bool {
        matches!(self.kind, Kind::TooLarge)
    }

    /// Overload (`429`), server trouble (`5xx`) and lost connections are usually transient.
    /// Timeouts are not retried: the server may still be working on the request, and waiting
    /// the full timeout again would multiply the user's wait.
    pub(super) fn is_retryable(&self) -> bool {
        match &self.kind {
            Kind::Status { status, .. } => {
                *status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
            }
            Kind::Connect { .. } | Kind::Broken { .. } => true,
            Kind::Timeout { .. } | Kind::InvalidUrl { .. } | Kind::TooLarge | Kind::Other { .. } => false,
        }
    }

    /// The sentence for the user, after `attempts` attempts at `url`.
    pub(super) fn describe(&self, url: &str, attempts: u32) -> String {
        let tries = if attempts > 1 {
            format!(" after {attempts} attempts")
        } else {
            String::new()
        };
        match &self.kind {
            Kind::Status { status, detail } => {
                let reason = status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default();
                format!("{url} answered HTTP {}{reason}{tries}: {detail}", status.as_u16())
            }
            Kind::Connect { cause } => {
                format!("could not connect to {url}{tries}: {cause}; is the server running there?")
            }
            Kind::Broken { cause } => {
                format!("the connection to {url} broke before a response arrived{tries}: {cause}")
            }
            Kind::Timeout { after } => format!(
                "no response from {url} within the {after:?} request timeout; the server may be \
                 overloaded, or the timeout too short for this model"
            ),
            Kind::InvalidUrl { cause } => format!("`{url}` is not a usable URL: {cause}; check the base URL"),
            Kind::TooLarge => format!("the reply from {url} is larger than the response size limit"),
            Kind::Other { cause } => format!("the request to {url} failed{tries}: {cause}"),
        }
    }
}

/// The innermost error's text: `Connection refused (os error 111)` rather than reqwest's
/// generic "error sending request".
fn root_cause(err: &(dyn StdError + 'static)) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

/// What the server said went wrong: `error.message` (OpenAI), `error` (Ollama), `message` or
/// `detail` (other compatible servers), else a short excerpt of the raw body.
pub(super) fn detail_of(body: &str) -> String {
    let said = serde_json::from_str::<Value>(body).ok().and_then(|json| {
        [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_owned))
    });
    match said {
        Some(text) => excerpt(&text),
        None if body.trim().is_empty() => "empty body".into(),
        None => excerpt(body),
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text` on one line.
pub(super) fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// `message` with every occurrence of `secret` replaced, so an API key quoted back by a server
/// (or a proxy) never reaches logs or terminals.
pub(super) fn redact(message: String, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() && message.contains(secret) => {
            message.replace(secret, "[redacted]")
        }
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_prefers_the_servers_own_words() {
        assert_eq!(
            detail_of(r#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(
            detail_of(r#"{"error":"model 'q' not found"}"#),
            "model 'q' not found"
        );
        assert_eq!(detail_of(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(detail_of("  <html>\n oops </html>"), "<html> oops </html>");
        assert_eq!(detail_of(""), "empty body");
    }

    #[test]
    fn excerpt_is_short_and_cuts_on_char_boundaries() {
        let long = "é".repeat(500);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn redacts_every_occurrence() {
        let msg = redact("key sk-1 and sk-1".into(), Some("sk-1"));
        assert_eq!(msg, "key [redacted] and [redacted]");
        assert_eq!(redact("x".into(), Some("")), "x");
        assert_eq!(redact("x".into(), None), "x");
    }

    #[test]
    fn retryable_statuses() {
        let f = |code: u16| Failure::status(StatusCode::from_u16(code).unwrap(), None, "").is_retryable();
        assert!(f(429) && f(500) && f(503));
        assert!(!f(400) && !f(401) && !f(404));
    }
}
