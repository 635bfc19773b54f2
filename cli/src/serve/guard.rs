//! Who may use the page: requests that name the served address (a page of another site
//! reaching the port under a name it controls, DNS rebinding, is refused), and writes that come
//! from the page itself (another site open in the same browser can send a form here, but it
//! cannot read the token, and its browser says where the form came from).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::served::Served;

/// Refuse a request for another host, and a write from elsewhere or to a read-only server;
/// set the headers every answer carries.
pub(super) async fn check(State(served): State<Arc<Served>>, request: Request, next: Next) -> Response {
    if let Some(refusal) = refusal(&served, request.method(), request.headers()) {
        return refusal.into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // Nothing from elsewhere, no script at all, no framing by another page.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    // Nothing of the page's addresses (memory ids, searches) goes to another site; not
    // `no-referrer`, under which a browser sends `Origin: null` with the page's own forms.
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("same-origin"),
    );
    response
}

fn refusal(served: &Served, method: &Method, headers: &HeaderMap) -> Option<(StatusCode, String)> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if let Some(hosts) = &served.hosts {
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Some((
                StatusCode::MISDIRECTED_REQUEST,
                format!("this server answers only at {}", hosts[0]),
            ));
        }
    }
    if method == Method::GET || method == Method::HEAD {
        return None;
    }
    if served.read_only() {
        return Some((
            StatusCode::FORBIDDEN,
            "this server is read-only (--read-only)".into(),
        ));
    }
    let site = headers.get("sec-fetch-site").and_then(|h| h.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|h| h.to_str().ok());
    if site.is_some_and(|s| s != "same-origin") || origin.is_some_and(|o| o != format!("http://{host}")) {
        return Some((StatusCode::FORBIDDEN, FROM_ELSEWHERE.into()));
    }
    None
}

/// Why a write from elsewhere is refused.
const FROM_ELSEWHERE: &str = "writes are accepted only from this page";

/// The refusal of a write whose form does not carry this process's token, or nothing when it
/// does: every handler that writes asks first (the token is in the form, which the middleware
/// does not read).
pub(super) fn forged(served: &Served, token: &str) -> Option<Response> {
    (!token_ok(served, token)).then(|| (StatusCode::FORBIDDEN, FROM_ELSEWHERE).into_response())
}

/// Whether a form's token is this process's.
fn token_ok(served: &Served, token: &str) -> bool {
    // Equal length is public; the comparison does not stop at the first difference.
    token.len() == served.token.len()
        && token
            .bytes()
            .zip(served.token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}
