//! Sessions in the memory database ([`ctxkit::SessionStore`] on both backends): a thread's
//! saved form as JSON, every secret in it redacted first. The database refuses secrets on
//! every other write path, so a key pasted into a conversation is not kept either; the
//! resumed conversation then shows the redaction where the key was.

use ctxkit::Thread;
use serde_json::Value;

use crate::error::{MemoryError, Result};
use ctxkit_secrets::{find_secret, redact};

/// The most bytes one saved session may take (a conversation under a history budget is far
/// smaller).
pub(crate) const MAX_SESSION_BYTES: usize = 16 << 20;

/// What a backend writes for one session.
pub(crate) struct SavedSession {
    /// The thread's saved form, redacted.
    pub(crate) json: String,
    pub(crate) turns: i64,
    pub(crate) messages: i64,
}

/// The saved form of `thread`, with every string that holds a secret redacted.
pub(crate) fn save_form(thread: &Thread) -> Result<SavedSession> {
    let mut value = serde_json::to_value(thread)
        .map_err(|e| MemoryError::Invalid(format!("a session cannot be saved: {e}")))?;
    redact_strings(&mut value);
    let json = value.to_string();
    if json.len() > MAX_SESSION_BYTES {
        return Err(MemoryError::Invalid(format!(
            "session `{}` is {} MiB saved, more than the {} MiB a session may take; bound its history",
            thread.id(),
            json.len() >> 20,
            MAX_SESSION_BYTES >> 20
        )));
    }
    Ok(SavedSession {
        json,
        turns: thread.turns() as i64,
        messages: thread.history().len() as i64,
    })
}

/// The thread a backend found saved under `id`, if it found one.
pub(crate) fn thread_from(id: &str, saved: Option<String>) -> Result<Option<Thread>> {
    saved
        .map(|json| {
            serde_json::from_str(&json)
                .map_err(|e| MemoryError::Invalid(format!("the saved session `{id}` cannot be read: {e}")))
        })
        .transpose()
}

fn redact_strings(value: &mut Value) {
    match value {
        Value::String(s) if find_secret(s).is_some() => *s = redact(s),
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(fields) => fields.values_mut().for_each(redact_strings),
        _ => {}
    }
}
