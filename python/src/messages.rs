//! Conversations as Python hands them over: `(role, text)` pairs.

use ctxkit::Message;
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// `(role, text)` pairs as ctxkit messages. System, user and assistant turns are kept; other
/// roles (tool results) carry nothing a provider matches on and are left out.
pub(crate) fn from_pairs(pairs: Vec<(String, String)>) -> PyResult<Vec<Message>> {
    let mut messages = Vec::with_capacity(pairs.len());
    for (role, text) in pairs {
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
