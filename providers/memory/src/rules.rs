//! What every backend checks before it writes, and the limits it checks against: one
//! definition, so SQLite and PostgreSQL refuse and normalise exactly the same input.
//!
//! Secrets are checked first, on every field exactly as given (before trimming or
//! lowercasing), then again on what will be stored.

use crate::error::{MemoryError, Result};
use crate::text;
use crate::types::*;

/// Upsert merges into an existing memory above this cosine similarity.
pub(crate) const MERGE_SIMILARITY: f32 = 0.85;
/// Compaction merges memories above this cosine similarity.
pub(crate) const COMPACT_SIMILARITY: f32 = 0.90;
/// The longest memory content accepted, in characters (the whole injection budget is 2,000).
pub(crate) const MAX_CONTENT_CHARS: usize = 2000;
/// The highest access count kept: counting saturates here, and an import above it is refused
/// (sums over a project stay far from overflowing).
pub(crate) const MAX_ACCESS_COUNT: i64 = 1_000_000_000_000;
/// The latest timestamp accepted from an import, in Unix milliseconds (the end of year 9999);
/// earlier than 0 is refused too.
pub(crate) const MAX_TIMESTAMP_MS: i64 = 253_402_300_799_999;
/// Importance, and the thresholds compared with it (`prune --min-importance`), lie in here.
pub(crate) const IMPORTANCE_RANGE: std::ops::RangeInclusive<f32> = 0.0..=1.0;
/// Longest `source_context` kept, in characters (longer ones are cut).
const MAX_SOURCE_CONTEXT_CHARS: usize = 500;

/// A validated memory ready to store.
#[derive(Clone)]
pub(crate) struct Checked {
    pub(crate) project_path: String,
    pub(crate) category: MemoryCategory,
    pub(crate) content: String,
    pub(crate) keywords: Vec<String>,
    pub(crate) importance: f32,
    pub(crate) source_session_id: Option<String>,
    pub(crate) source_context: Option<String>,
}

impl Checked {
    /// The memory a fresh insert stores, under `id` at time `now`.
    pub(crate) fn into_entry(self, id: String, now: i64) -> MemoryEntry {
        MemoryEntry {
            id,
            project_path: self.project_path,
            category: self.category,
            content: self.content,
            keywords: self.keywords,
            importance: self.importance,
            access_count: 0,
            source_session_id: self.source_session_id,
            source_context: self.source_context,
            created_at: now,
            updated_at: now,
            last_accessed_at: now,
            decayed_at: None,
            superseded_by: None,
            superseded_at: None,
        }
    }
}

/// Check and normalise a new memory.
pub(crate) fn check_new(new: &NewMemoryEntry) -> Result<Checked> {
    check_raw_secrets(
        &new.project_path,
        &new.content,
        &new.keywords,
        new.source_context.as_deref(),
        new.source_session_id.as_deref(),
    )?;
    let project_path = check_project(&new.project_path)?;
    let content = check_content(&new.content)?;
    let importance = check_importance(new.importance)?;
    let keywords = if new.keywords.iter().all(|k| k.trim().is_empty()) {
        text::derive_keywords(&content)
    } else {
        text::normalize_keywords(&new.keywords)
    };
    let source_context = new
        .source_context
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| text::truncate_chars(s, MAX_SOURCE_CONTEXT_CHARS));
    let source_session_id = new.source_session_id.clone().filter(|s| !s.trim().is_empty());
    check_secrets(
        &content,
        &keywords,
        source_context.as_deref(),
        source_session_id.as_deref(),
    )?;
    Ok(Checked {
        project_path,
        category: new.category,
        content,
        keywords,
        importance,
        source_session_id,
        source_context,
    })
}

/// A checked [`MemoryUpdate`]: the normalised new values, `None` where unchanged.
#[derive(Clone)]
pub(crate) struct CheckedUpdate {
    content: Option<String>,
    category: Option<MemoryCategory>,
    importance: Option<f32>,
    keywords: Option<Vec<String>>,
}

impl CheckedUpdate {
    /// The new content, when the update changes it.
    pub(crate) fn content(&self) -> Option<&str> {
        self.content.as_deref()
    }

    /// `old` with the update applied (timestamps untouched). Changing the content keeps the
    /// keywords unless new ones are given; an empty keyword list derives them from the content.
    pub(crate) fn apply(self, old: &MemoryEntry) -> MemoryEntry {
        let mut new = old.clone();
        if let Some(c) = self.content {
            new.content = c;
        }
        if let Some(c) = self.category {
            new.category = c;
        }
        if let Some(i) = self.importance {
            new.importance = i;
        }
        if let Some(k) = self.keywords {
            new.keywords = if k.is_empty() {
                text::derive_keywords(&new.content)
            } else {
                k
            };
        }
        new
    }
}

/// Check a change of fields: secrets as given and as stored, content and importance.
pub(crate) fn check_update(update: MemoryUpdate) -> Result<CheckedUpdate> {
    if let Some(c) = &update.content {
        check_secret("memory", c)?;
    }
    if let Some(k) = &update.keywords {
        check_keyword_secrets(k)?;
    }
    let content = update.content.as_deref().map(check_content).transpose()?;
    let importance = update.importance.map(check_importance).transpose()?;
    let keywords = update.keywords.as_ref().map(|k| text::normalize_keywords(k));
    if let Some(c) = &content {
        check_secret("memory", c)?;
    }
    if let Some(k) = &keywords {
        check_secret("memory", &k.join(" "))?;
    }
    Ok(CheckedUpdate {
        content,
        category: update.category,
        importance,
        keywords,
    })
}

/// Check a new episodic record: secrets in every field, and the project. Returns the project.
pub(crate) fn check_episode(new: &NewEpisodicRecord) -> Result<String> {
    check_secret("episodic record", &new.project_path)?;
    let project_path = check_project(&new.project_path)?;
    for text in [
        &new.task_summary,
        &new.approach_summary,
        &new.outcome_summary,
        &new.session_id,
    ]
    .into_iter()
    .chain(&new.tools_used)
    .chain(&new.keywords)
    {
        check_secret("episodic record", text)?;
    }
    Ok(project_path)
}

/// The episodic record an add stores, under `id` at time `now`.
pub(crate) fn episode_record(
    new: NewEpisodicRecord,
    project_path: String,
    id: String,
    now: i64,
) -> EpisodicRecord {
    EpisodicRecord {
        id,
        project_path,
        session_id: new.session_id,
        record_type: new.record_type,
        task_summary: new.task_summary,
        approach_summary: new.approach_summary,
        outcome_summary: new.outcome_summary,
        tools_used: new.tools_used,
        keywords: text::normalize_keywords(&new.keywords),
        created_at: now,
    }
}

/// Check a `project:` state value (secrets in the key, in every string inside the value and in
/// the serialised pair). Returns the project and the value as JSON text.
pub(crate) fn check_state(project: &str, key: &str, value: &serde_json::Value) -> Result<(String, String)> {
    check_secret_fields("state value", [project, key])?;
    check_json_strings(value)?;
    let project = check_project(project)?;
    if key.trim().is_empty() {
        return Err(MemoryError::Invalid("a state key must not be empty".into()));
    }
    let json = value.to_string();
    check_secret("state value", &format!("{key}={json}"))?;
    check_secret("state value", &format!("{key} {json}"))?;
    Ok((project, json))
}

/// A stored state value read back: JSON, or the text itself when it is not JSON.
pub(crate) fn state_value(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

/// Every string (and object key) inside a state value, as given: JSON escaping must not hide a
/// secret from the check of the serialised value.
fn check_json_strings(value: &serde_json::Value) -> Result<()> {
    match value {
        serde_json::Value::String(s) => check_secret("state value", s),
        serde_json::Value::Array(items) => items.iter().try_for_each(check_json_strings),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            check_secret("state value", k)?;
            check_json_strings(v)
        }),
        _ => Ok(()),
    }
}

/// Check every memory of a batch (an error names the memory by its place), each with the ids
/// it names as superseded.
pub(crate) fn check_batch(entries: Vec<NewMemoryEntry>) -> Result<Vec<(Checked, Vec<String>)>> {
    let total = entries.len();
    entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            Ok((
                check_new(&e).map_err(|err| numbered(i, total, err))?,
                e.supersedes,
            ))
        })
        .collect()
}

/// Error of the `i`-th of `total` batch items.
pub(crate) fn numbered(i: usize, total: usize, err: MemoryError) -> MemoryError {
    match err {
        MemoryError::Invalid(m) => MemoryError::Invalid(format!("memory {} of {total}: {m}", i + 1)),
        other => other,
    }
}

pub(crate) fn check_project(project: &str) -> Result<String> {
    if project.trim().is_empty() {
        return Err(MemoryError::Invalid("the project path must not be empty".into()));
    }
    Ok(project.to_string())
}

pub(crate) fn check_content(content: &str) -> Result<String> {
    let content = content.trim();
    if content.is_empty() {
        return Err(MemoryError::Invalid("the content must not be empty".into()));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(MemoryError::Invalid(format!(
            "the content is {chars} characters long; the limit is {MAX_CONTENT_CHARS}"
        )));
    }
    Ok(content.to_string())
}

/// Importance must be in [`IMPORTANCE_RANGE`] (`[0, 1]`; NaN is not); it is kept at `f32`
/// precision so exports round-trip exactly. Thresholds compared with importance (`prune`) are
/// checked by this too.
pub(crate) fn check_importance(importance: f32) -> Result<f32> {
    if !IMPORTANCE_RANGE.contains(&importance) {
        return Err(MemoryError::Invalid(format!(
            "importance {importance} is outside 0.0-1.0"
        )));
    }
    Ok(importance)
}

/// The access count after one more access: saturates at [`MAX_ACCESS_COUNT`], like `touch`.
pub(crate) fn bumped(count: i64) -> i64 {
    count.min(MAX_ACCESS_COUNT - 1) + 1
}

/// Each keyword as given, and all of them together (a secret split across keywords).
pub(crate) fn check_keyword_secrets(keywords: &[String]) -> Result<()> {
    check_secret_fields("memory", keywords.iter().map(String::as_str))?;
    check_secret("memory", &keywords.join(" "))
}

/// Every field of a memory as given, before any normalisation.
pub(crate) fn check_raw_secrets(
    project: &str,
    content: &str,
    keywords: &[String],
    context: Option<&str>,
    session: Option<&str>,
) -> Result<()> {
    check_secret("memory", project)?;
    check_secret("memory", content)?;
    check_keyword_secrets(keywords)?;
    check_secret_fields("memory", context.into_iter().chain(session))
}

/// What will be stored, after normalisation.
pub(crate) fn check_secrets(
    content: &str,
    keywords: &[String],
    context: Option<&str>,
    session: Option<&str>,
) -> Result<()> {
    check_secret("memory", content)?;
    check_secret("memory", &keywords.join(" "))?;
    if let Some(c) = context {
        check_secret("memory", c)?;
    }
    if let Some(s) = session {
        check_secret("memory", s)?;
    }
    Ok(())
}

/// Check `text` ([`ctxkit_secrets::find_secret`]), answering with the refusal the store gives; `what` names the thing being
/// stored ("memory", "episodic record", …). Check each field as given, before normalising it.
pub(crate) fn check_secret(what: &'static str, text: &str) -> crate::error::Result<()> {
    match ctxkit_secrets::find_secret(text) {
        None => Ok(()),
        Some(f) => Err(crate::error::MemoryError::Secret {
            what,
            rule: f.rule,
            description: f.description,
        }),
    }
}

/// Check several fields of one thing, each as given.
pub(crate) fn check_secret_fields<'a>(
    what: &'static str,
    fields: impl IntoIterator<Item = &'a str>,
) -> crate::error::Result<()> {
    fields.into_iter().try_for_each(|f| check_secret(what, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_the_rule_without_echoing_the_secret() {
        let secret = format!("ghp_{}", "x1".repeat(18));
        let err = check_secret("memory", &format!("token {secret}"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("github-token") && err.contains("GitHub token"),
            "{err}"
        );
        assert!(!err.contains(&secret), "{err}");
        assert!(check_secret("memory", "use pnpm").is_ok());
        assert!(check_secret_fields("memory", ["fine", &secret]).is_err());
    }
}
