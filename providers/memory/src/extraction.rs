//! LLM-driven memory extraction: ask a [`ChatModel`] what in a session is worth remembering,
//! read its JSON answer, and upsert what is new.
//!
//! The reply is read leniently in form (a bare array, an array in a code fence or inside prose,
//! or an object holding the array) and strictly in content: a missing or mistyped field is an
//! error naming the item and the field. A failed model call is an error, never silently
//! nothing. Proposed memories holding secrets are refused one by one and reported.

use std::sync::Arc;

use ctxkit::{ChatModel, Message, ModelRequest, Role, SessionSummary, State};
use serde_json::Value;

use crate::error::{MemoryError, Result};
use crate::store::MemoryStore;
use crate::text::truncate_chars;
use crate::types::*;
use crate::types::{ListOptions, ListOrder};

/// What a session is summarised as for the extraction prompt.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ExtractionInput {
    pub task_description: String,
    pub files_read: Vec<String>,
    pub key_findings: Vec<String>,
    pub conversation_summary: String,
    /// Recorded as the memories' `source_session_id`.
    pub session_id: Option<String>,
}

const TASK_CHARS: usize = 500;
const MESSAGE_CHARS: usize = 600;
const TRANSCRIPT_CHARS: usize = 8000;
const MAX_FILES: usize = 50;

impl ExtractionInput {
    /// Summarise a conversation: the first user message is the task, file arguments of tool
    /// calls are the files read, and the transcript (latest part, secrets redacted) is the
    /// conversation summary.
    pub(crate) fn from_messages(messages: &[Message]) -> Self {
        let task = messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| truncate_chars(&ctxkit_secrets::redact(m.content.trim()), TASK_CHARS))
            .unwrap_or_default();
        let mut files: Vec<String> = Vec::new();
        for call in messages.iter().flat_map(|m| &m.tool_calls) {
            let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.function.arguments) else {
                continue;
            };
            for key in ["path", "file", "file_path", "filepath", "filename"] {
                if let Some(Value::String(p)) = args.get(key) {
                    if !files.contains(p) && files.len() < MAX_FILES {
                        files.push(p.clone());
                    }
                }
            }
        }
        let mut lines: Vec<String> = Vec::new();
        for m in messages {
            let who = match m.role {
                Role::System => continue,
                Role::User => "User".to_string(),
                Role::Assistant if !m.tool_calls.is_empty() => {
                    let names: Vec<&str> = m.tool_calls.iter().map(|c| c.function.name.as_str()).collect();
                    lines.push(format!("Assistant called: {}", names.join(", ")));
                    if m.content.trim().is_empty() {
                        continue;
                    }
                    "Assistant".to_string()
                }
                Role::Assistant => "Assistant".to_string(),
                Role::Tool => format!(
                    "Tool result{}",
                    m.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
                ),
            };
            let content =
                truncate_chars(&ctxkit_secrets::redact(m.content.trim()), MESSAGE_CHARS).replace('\n', " ");
            lines.push(format!("{who}: {content}"));
        }
        // Keep the latest part when the whole is too long.
        let mut kept: Vec<String> = Vec::new();
        let mut total = 0;
        for line in lines.iter().rev() {
            let n = line.chars().count() + 1;
            if total + n > TRANSCRIPT_CHARS {
                kept.push("(earlier messages omitted)".to_string());
                break;
            }
            total += n;
            kept.push(line.clone());
        }
        kept.reverse();
        ExtractionInput {
            task_description: task,
            files_read: files,
            key_findings: Vec::new(),
            conversation_summary: ctxkit_secrets::redact(&kept.join("\n")),
            session_id: None,
        }
    }

    /// Summarise a finished session; `session:key_findings` (a string or a list of strings) in
    /// the thread's state become the key findings.
    pub(crate) fn from_session(summary: &SessionSummary, state: &State) -> Self {
        let mut input = Self::from_messages(&summary.messages);
        input.session_id = Some(summary.thread_id.clone()).filter(|s| !s.is_empty());
        input.key_findings = match state.get("session:key_findings") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        input.key_findings = input
            .key_findings
            .iter()
            .map(|f| ctxkit_secrets::redact(f))
            .collect();
        input
    }
}

/// One memory proposed by the model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExtractedMemory {
    pub category: MemoryCategory,
    pub content: String,
    pub keywords: Vec<String>,
    pub importance: f32,
    /// Ids of known memories the model says this one replaces.
    pub supersedes: Vec<String>,
}

/// At most this many `supersedes` ids per proposed memory.
const MAX_SUPERSEDES: usize = 8;

/// What an extraction did, so a caller of [`MemoryHook::finish`](crate::hook::MemoryHook::finish)
/// can see what was learned, what was already known and what was refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExtractionReport {
    /// How many memories the model proposed.
    pub proposed: usize,
    /// Ids of new memories.
    pub inserted: Vec<String>,
    /// Ids of memories that absorbed a proposal.
    pub merged: Vec<String>,
    /// Why proposals were skipped (already known).
    pub skipped: Vec<String>,
    /// Rules of the secret checks that refused proposals.
    pub refused: Vec<&'static str>,
}

/// The extraction prompt: the session, the memories already known, the categories and the JSON
/// to answer with, and a rule against secrets.
pub(crate) fn build_prompt(input: &ExtractionInput, existing: &[MemoryEntry]) -> String {
    let list = |items: &[String], empty: &str| {
        if items.is_empty() {
            empty.to_string()
        } else {
            items
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    let known: Vec<String> = existing
        .iter()
        .map(|e| format!("{} {} (id {})", e.category.badge(), e.content, e.id))
        .collect();
    let or_none = |s: &str| {
        if s.trim().is_empty() {
            "(none)".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        r#"You are a memory extraction system. Analyze the following session data and extract
facts worth remembering for future sessions with this project.

## Session Task
{task}

## Files Read
{files}

## Key Findings
{findings}

## Conversation Summary
{summary}

## Already Known (DO NOT duplicate these)
{known}

---

Extract NEW facts in the following JSON format. Only extract information that is:
1. Stable (unlikely to change frequently)
2. Useful for future sessions
3. Not already known

Return a JSON array:
[
  {{
    "category": "preference|convention|pattern|correction|fact",
    "content": "concise factual statement",
    "keywords": ["keyword1", "keyword2"],
    "importance": 0.0-1.0,
    "supersedes": ["id of a known memory this one replaces, if any"]
  }}
]

Rules:
- "preference": user explicitly stated preferences (e.g., "use pnpm not npm")
- "convention": project-specific conventions discovered (e.g., "tests in __tests__/ directories")
- "pattern": recurring code/architecture patterns (e.g., "all API routes return CommandResponse<T>")
- "correction": mistakes to avoid (e.g., "editing executor.rs requires cargo check due to type complexity")
- "fact": general project facts (e.g., "frontend uses Zustand for state management")
- importance: 0.9+ for explicit user instructions, 0.5-0.8 for discovered patterns, 0.3-0.5 for general facts
- "supersedes": when a new fact contradicts or replaces a known one (e.g. the project moved from pnpm to bun), list the known memory's id; otherwise omit it
- Do NOT extract secrets, credentials, API keys, or passwords
- Return empty array [] if nothing worth extracting
"#,
        task = or_none(&input.task_description),
        files = list(&input.files_read, "(none)"),
        findings = list(&input.key_findings, "(none)"),
        summary = or_none(&input.conversation_summary),
        known = list(&known, "(nothing yet)"),
    )
}

/// Read the model's reply as a list of memories: a bare array, one in a code fence or in
/// prose, or an object holding it; anything else is an error, never an empty extraction.
pub(crate) fn parse_extraction(reply: &str) -> Result<Vec<ExtractedMemory>> {
    let items = find_array(reply)?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| parse_item(i + 1, v))
        .collect()
}

/// The first JSON array of memories in `text`: in a code fence, bare, or inside an object.
fn find_array(text: &str) -> Result<Vec<Value>> {
    let mut regions: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                regions.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                regions.push(body);
                break;
            }
        }
    }
    regions.push(text);
    let mut first_error: Option<String> = None;
    for region in regions {
        for (pos, _) in region.match_indices(['[', '{']).take(64) {
            let mut stream = serde_json::Deserializer::from_str(&region[pos..]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(Value::Array(items))) => return Ok(items),
                Some(Ok(Value::Object(map))) => {
                    if let Some(items) = map.values().find_map(|v| match v {
                        Value::Array(items) if items.iter().all(Value::is_object) => Some(items.clone()),
                        _ => None,
                    }) {
                        return Ok(items);
                    }
                }
                Some(Err(e)) if first_error.is_none() && region[pos..].starts_with("[") => {
                    let next = region[pos + 1..].trim_start();
                    if next.starts_with('{') || next.starts_with(']') {
                        first_error = Some(e.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let start: String = truncate_chars(&ctxkit_secrets::redact(text.trim()), 80);
    Err(MemoryError::ExtractionParse(match first_error {
        Some(e) => format!("the reply's JSON array is malformed ({e})"),
        None if text.trim().is_empty() => "the reply is empty".to_string(),
        None => format!("the reply holds no JSON array of memories; it starts with {start:?}"),
    }))
}

/// The reply asked of backends with structured output: `{"memories": [...]}` (their schemas
/// need an object at the root), which the reader takes like a bare array.
fn reply_schema() -> Value {
    let strings = serde_json::json!({"type": "array", "items": {"type": "string"}});
    serde_json::json!({
        "type": "object",
        "properties": {"memories": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "category": {"type": "string", "enum": MemoryCategory::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>()},
                "content": {"type": "string"},
                "keywords": strings,
                "importance": {"type": "number", "minimum": 0, "maximum": 1},
                "supersedes": strings,
            },
            "required": ["category", "content", "keywords", "importance"],
        }}},
        "required": ["memories"],
    })
}

fn parse_item(n: usize, v: &Value) -> Result<ExtractedMemory> {
    let bad = |m: String| MemoryError::ExtractionParse(format!("item {n}: {m}"));
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("expected an object, found {}", kind(v))))?;
    let category = match obj.get("category") {
        Some(Value::String(s)) => s.parse::<MemoryCategory>().map_err(|_| {
            bad(format!(
                "`category` is {s:?}; expected preference, convention, pattern, correction or fact"
            ))
        })?,
        Some(other) => return Err(bad(format!("`category` must be a string, found {}", kind(other)))),
        None => return Err(bad("`category` is missing".into())),
    };
    let content = match obj.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) => return Err(bad("`content` is empty".into())),
        Some(other) => return Err(bad(format!("`content` must be a string, found {}", kind(other)))),
        None => return Err(bad("`content` is missing".into())),
    };
    let keywords = match obj.get("keywords") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|k| {
                k.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("`keywords` must hold strings, found {}", kind(k))))
            })
            .collect::<Result<Vec<_>>>()?,
        Some(other) => {
            return Err(bad(format!(
                "`keywords` must be a list of strings, found {}",
                kind(other)
            )))
        }
    };
    let importance = match obj.get("importance") {
        None | Some(Value::Null) => 0.5,
        Some(Value::Number(x)) => x.as_f64().unwrap_or(0.5).clamp(0.0, 1.0) as f32,
        Some(other) => {
            return Err(bad(format!(
                "`importance` must be a number, found {}",
                kind(other)
            )))
        }
    };
    let supersedes = match obj.get("supersedes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(id)) => vec![id.clone()],
        Some(Value::Array(items)) if items.len() <= MAX_SUPERSEDES => items
            .iter()
            .map(|k| {
                k.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("`supersedes` must hold memory ids, found {}", kind(k))))
            })
            .collect::<Result<Vec<_>>>()?,
        Some(Value::Array(_)) => {
            return Err(bad(format!(
                "`supersedes` names more than {MAX_SUPERSEDES} memories"
            )))
        }
        Some(other) => {
            return Err(bad(format!(
                "`supersedes` must be a list of memory ids, found {}",
                kind(other)
            )))
        }
    };
    Ok(ExtractedMemory {
        category,
        content,
        keywords,
        importance,
        supersedes,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Calls a model to extract memories and upserts them into a store; give it to
/// [`MemoryHook::with_extractor`](crate::hook::MemoryHook::with_extractor) to learn from every session
/// end and compaction without the user saying "remember".
pub struct MemoryExtractor {
    model: Arc<dyn ChatModel>,
    store: Arc<dyn MemoryStore>,
    max_existing: usize,
}

impl std::fmt::Debug for MemoryExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryExtractor")
            .field("model", &self.model.name())
            .field("max_existing", &self.max_existing)
            .finish_non_exhaustive()
    }
}

impl MemoryExtractor {
    /// An extractor that shows the model up to 50 known memories (most important first).
    pub fn new(model: Arc<dyn ChatModel>, store: Arc<dyn MemoryStore>) -> Self {
        MemoryExtractor {
            model,
            store,
            max_existing: 50,
        }
    }

    /// Show the model at most this many known memories.
    pub fn with_max_existing(mut self, max_existing: usize) -> Self {
        self.max_existing = max_existing;
        self
    }

    /// One model call: the proposed memories, not yet stored.
    async fn extract_from_session(
        &self,
        input: &ExtractionInput,
        existing: &[MemoryEntry],
    ) -> Result<Vec<ExtractedMemory>> {
        let mut request = ModelRequest {
            messages: vec![Message::user(build_prompt(input, existing))],
            reply_schema: Some(reply_schema()),
            ..ModelRequest::default()
        };
        let reply = match self.model.complete(&request).await {
            // A server that refuses the schema (a model or compatible server without structured
            // output) is asked once more without it: the reader copes with prose. When that
            // fails too, the first refusal is the error.
            Err(refused @ ctxkit::Error::Model { retryable: false, .. }) => {
                tracing::debug!(error = %refused, "asking again without a reply schema");
                request.reply_schema = None;
                self.model.complete(&request).await.map_err(|again| {
                    tracing::debug!(error = %again, "the request without a reply schema failed too");
                    refused
                })
            }
            other => other,
        }
        .map_err(MemoryError::ExtractionModel)?;
        parse_extraction(&reply.message.content)
    }

    /// Extract from a session and upsert what is new into `project`.
    pub(crate) async fn extract_and_store(
        &self,
        project: &str,
        input: &ExtractionInput,
    ) -> Result<ExtractionReport> {
        let existing = self
            .store
            .list(
                project,
                ListOptions {
                    limit: self.max_existing,
                    order: ListOrder::Importance,
                    ..ListOptions::default()
                },
            )
            .await?;
        let proposed = self.extract_from_session(input, &existing).await?;
        let mut report = ExtractionReport {
            proposed: proposed.len(),
            ..Default::default()
        };
        for m in proposed {
            let mut entry = NewMemoryEntry::new(project, m.category, m.content)
                .importance(m.importance)
                .keywords(m.keywords)
                .supersedes(m.supersedes)
                .context("extracted from a session by the model");
            entry.source_session_id = input.session_id.clone();
            match self.store.upsert(entry).await {
                Ok(UpsertResult::Inserted(e)) => report.inserted.push(e.id),
                Ok(UpsertResult::Merged { merged, .. }) => report.merged.push(merged.id),
                Ok(UpsertResult::Skipped { reason, .. }) => report.skipped.push(reason),
                Err(MemoryError::Secret { rule, .. }) => {
                    tracing::warn!(rule, "an extracted memory holds a secret and was refused");
                    report.refused.push(rule);
                }
                Err(MemoryError::Invalid(why)) => report.skipped.push(why),
                Err(e) => return Err(e),
            }
        }
        tracing::info!(
            project,
            proposed = report.proposed,
            inserted = report.inserted.len(),
            merged = report.merged.len(),
            skipped = report.skipped.len(),
            refused = report.refused.len(),
            "memory extraction finished"
        );
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
