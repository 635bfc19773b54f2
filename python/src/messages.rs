//! Conversations as Python hands them over: `(role, text)` pairs.

use ctxkit::Message;
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// The most characters of a message the providers read, as the MCP server's bound: a message
/// from a framework is a user's text, and whatever is pasted into it sets the work.
const MAX_MESSAGE_CHARS: usize = 100_000;

/// `(role, text)` pairs as ctxkit messages, each cut to [`MAX_MESSAGE_CHARS`]. System, user
/// and assistant turns are kept; other roles (tool results) carry nothing a provider matches
/// on and are left out.
pub(crate) fn from_pairs(pairs: Vec<(String, String)>) -> PyResult<Vec<Message>> {
    let mut messages = Vec::with_capacity(pairs.len());
    for (role, mut text) in pairs {
        cut(&mut text);
        match role.as_str() {
            "user" => messages.push(Message::user(text)),
            "assistant" => messages.push(Message::assistant(text)),
            "system" => messages.push(Message::system(text)),
            "tool" => {}
            other => {
                let shown: String = other.chars().take(40).collect();
                return Err(PyValueError::new_err(format!(
                    "unknown message role `{shown}`; use user, assistant, system or tool"
                )));
            }
        }
    }
    Ok(messages)
}

/// Cut `text` to [`MAX_MESSAGE_CHARS`] characters.
pub(crate) fn cut(text: &mut String) {
    // Bytes bound characters, so a text within the bound in bytes is never walked.
    if text.len() > MAX_MESSAGE_CHARS {
        if let Some((end, _)) = text.char_indices().nth(MAX_MESSAGE_CHARS) {
            text.truncate(end);
        }
    }
}
