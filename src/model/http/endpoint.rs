//! Where requests go, and how that place is shown: the protocol's path joined onto the base
//! URL (keeping its query string), and the same URL with its credentials masked for errors
//! and logs.
//!
//! A base URL may carry credentials — `https://user:pass@host/v1` or `…/v1?api_key=…` — which
//! must reach the server but never a terminal. Every message that names the URL uses
//! [`Endpoint::shown`], and [`Endpoint::scrub`] removes the same credentials from any text a
//! server sends back (some proxies quote the request line).

use reqwest::Url;

/// What replaces a credential in shown URLs and scrubbed text.
const MASK: &str = "***";

/// A query parameter whose name contains one of these (ignoring case) carries a credential.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "sig",
    "auth",
    "credential",
    "code",
    "jwt",
];

/// Credentials shorter than this are masked in the URL but not searched for in free text,
/// where replacing a two-letter password would garble the message and hide nothing.
const MIN_SCRUB_LEN: usize = 6;

/// The chat endpoint of one base URL.
#[derive(Clone)]
pub(super) struct Endpoint {
    /// The URL requests are posted to, credentials included, or why the base URL is unusable.
    url: Result<Url, String>,
    /// The URL as errors and logs show it, credentials masked.
    shown: String,
    /// Credential values of the URL (raw and decoded), longest first, for [`Endpoint::scrub`].
    secrets: Vec<String>,
}

impl Endpoint {
    /// `path` (e.g. `/chat/completions`) appended to the path of `base`; the query string is
    /// kept, the fragment dropped, and a trailing `/` of the base path ignored.
    pub(super) fn new(base: &str, path: &str) -> Endpoint {
        match join(base, path) {
            Ok(url) => Endpoint {
                shown: redacted(&url),
                secrets: secrets(&url),
                url: Ok(url),
            },
            Err(why) => Endpoint {
                url: Err(why),
                shown: redacted_text(base.trim().trim_end_matches('/'), path),
                secrets: Vec::new(),
            },
        }
    }

    /// The URL to send requests to, or why the base URL cannot be used.
    pub(super) fn url(&self) -> Result<&Url, &str> {
        self.url.as_ref().map_err(String::as_str)
    }

    /// The URL with credentials masked: safe for errors and logs.
    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with every credential of the URL masked.
    pub(super) fn scrub(&self, mut text: String) -> String {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), MASK);
            }
        }
        text
    }
}

/// The base URL as a user typed it, with credentials masked: for errors about the base URL
/// itself.
pub(super) fn shown_base(base: &str) -> String {
    match Url::parse(base.trim()) {
        Ok(url) => redacted(&url),
        Err(_) => redacted_text(base.trim(), ""),
    }
}

fn join(base: &str, path: &str) -> Result<Url, String> {
    let mut url = Url::parse(base.trim()).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme `{}` is not http or https", url.scheme()));
    }
    let joined = format!("{}{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    url.set_fragment(None);
    Ok(url)
}

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|hint| name.contains(hint))
}

/// `url` with its password (or a lone user name, which is usually a token) and the values of
/// credential-like query parameters replaced by [`MASK`].
fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    // Setting user info fails only for URLs without a host, which cannot carry any.
    if shown.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    } else if !shown.username().is_empty() {
        let _ = shown.set_username(MASK);
    }
    if url.query_pairs().any(|(name, _)| is_secret_param(&name)) {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if is_secret_param(&name) {
                    MASK.to_string()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        shown.query_pairs_mut().clear().extend_pairs(pairs);
    }
    shown.to_string()
}

/// The credentials [`redacted`] masks, as they appear in the URL and decoded.
fn secrets(url: &Url) -> Vec<String> {
    let mut found = Vec::new();
    match url.password() {
        Some(password) => found.push(password),
        None if !url.username().is_empty() => found.push(url.username()),
        None => {}
    }
    for pair in url.query().unwrap_or_default().split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if is_secret_param(&percent_decode(name).unwrap_or_default()) {
            found.push(value);
        }
    }
    let mut found: Vec<String> = found
        .into_iter()
        .flat_map(|raw| {
            // As sent, decoded, and decoded the form way (`+` is a space).
            let decoded = [percent_decode(raw), percent_decode(&raw.replace('+', " "))];
            std::iter::once(raw.to_string()).chain(decoded.into_iter().flatten())
        })
        .filter(|s| s.chars().count() >= MIN_SCRUB_LEN)
        .collect();
    // Longest first, so a secret containing another is masked whole.
    found.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    found.dedup();
    found
}

/// Decode `%XX` escapes; `None` when the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|decoded| decoded.into_owned())
}

/// A base URL that does not parse, shown with `path` appended and anything that might be a
/// credential masked: the user info before the last `@` and the whole query string.
fn redacted_text(base: &str, path: &str) -> String {
    // User info ends at the last `@`, wherever a `?` sits in it (`user:abc?def@host`).
    let base = match base.rfind('@') {
        Some(at) => {
            let start = base.find("://").map(|i| i + 3).filter(|&s| s <= at).unwrap_or(0);
            format!("{}{MASK}{}", &base[..start], &base[at..])
        }
        None => base.to_string(),
    };
    match base.split_once('?') {
        Some((before, _)) => format!("{before}{path}?{MASK}"),
        None => format!("{base}{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(base: &str) -> Endpoint {
        Endpoint::new(base, "/chat/completions")
    }

    #[test]
    fn the_path_is_appended_to_the_path_and_the_query_is_kept() {
        let cases = [
            ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
            ("http://h:8000/v1/", "http://h:8000/v1/chat/completions"),
            ("http://h:8000", "http://h:8000/chat/completions"),
            (
                "http://h/v1?api-version=2024",
                "http://h/v1/chat/completions?api-version=2024",
            ),
            (
                "http://h/v1/?a=1&b=2#frag",
                "http://h/v1/chat/completions?a=1&b=2",
            ),
        ];
        for (base, want) in cases {
            assert_eq!(endpoint(base).url().unwrap().as_str(), want, "{base}");
        }
    }

    #[test]
    fn credentials_are_masked_in_the_shown_url() {
        let e = endpoint("https://alice:hunter2-pw@h/v1?api_key=sk-123456&mode=x&Sig=abcdef");
        assert_eq!(
            e.shown(),
            "https://alice:***@h/v1/chat/completions?api_key=***&mode=x&Sig=***"
        );
        assert_eq!(
            e.url().unwrap().as_str(),
            "https://alice:hunter2-pw@h/v1/chat/completions?api_key=sk-123456&mode=x&Sig=abcdef"
        );
        assert_eq!(
            endpoint("https://ghp_token@h/").shown(),
            "https://***@h/chat/completions"
        );
        // Nothing to mask: the query keeps its exact spelling.
        assert_eq!(
            endpoint("http://h/v1?q=a%20b").shown(),
            "http://h/v1/chat/completions?q=a%20b"
        );
    }

    #[test]
    fn scrub_masks_raw_and_decoded_credentials_in_free_text() {
        let e = endpoint("https://u:p%40ss-word@h/v1?token=abc%2Fdef12&x=visible");
        let text = "proxy said: bad token abc%2Fdef12 (abc/def12) for p@ss-word; x=visible".to_string();
        assert_eq!(
            e.scrub(text),
            "proxy said: bad token *** (***) for ***; x=visible"
        );
        // Short credentials are masked in the URL only.
        assert_eq!(endpoint("http://u:ab@h").scrub("about".into()), "about");
    }

    #[test]
    fn unparsable_base_urls_are_shown_without_their_credentials() {
        let e = endpoint("http//user:secret@host/v1?key=sk-1");
        assert!(e.url().is_err());
        assert_eq!(e.shown(), "***@host/v1/chat/completions?***");
        assert_eq!(shown_base("no scheme here"), "no scheme here");
        // A `?` inside the password does not end the masking early.
        assert_eq!(shown_base("https://user:abc?def@host/v1"), "https://***@host/v1");
        assert_eq!(
            shown_base("https://h/v1?code=azure-function-key"),
            "https://h/v1?code=***"
        );
        assert_eq!(shown_base("ftp://u:secretpw@h/x"), "ftp://u:***@h/x");
        assert!(endpoint("ftp://h/x")
            .url()
            .unwrap_err()
            .contains("not http or https"));
    }
}
