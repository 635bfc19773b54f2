//! A session as the learner sees it: the task, the tool calls with brief arguments and
//! results, and how it ended — read from a ctxkit session or a Claude Code transcript.

use ctxkit::{Message, Role, SessionSummary};
use ctxkit_memory::secrets::redact;
use serde_json::Value;

/// The most characters of one argument list or result kept for the model.
const BRIEF: usize = 200;
/// The most characters of the task and of the outcome kept for the model.
const LONG: usize = 2_000;
/// The most tool calls described to the model (the first ones).
const MAX_CALLS: usize = 40;

/// One tool call of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolUse {
    /// The tool's name.
    pub name: String,
    /// Its arguments, brief and with secrets redacted.
    pub arguments: String,
    /// What it returned, brief and with secrets redacted.
    pub result: String,
    /// Whether the tool failed.
    pub failed: bool,
}

/// What one session did, as much as the learner needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trajectory {
    /// The session's id, kept with what is learned from it.
    pub session: String,
    /// The user's first message: the task.
    pub task: String,
    /// The tool calls, in order.
    pub calls: Vec<ToolUse>,
    /// The assistant's last words.
    pub outcome: String,
    /// Runs that ended in an error.
    pub failed_turns: usize,
}

impl Trajectory {
    /// The tool calls that worked.
    pub fn successful_calls(&self) -> usize {
        self.calls.iter().filter(|c| !c.failed).count()
    }

    /// A ctxkit session, from the summary its session end is given.
    pub fn from_summary(summary: &SessionSummary) -> Self {
        let mut t = Trajectory {
            session: summary.thread_id.clone(),
            failed_turns: summary.failed_turns,
            ..Trajectory::default()
        };
        for m in &summary.messages {
            match m.role {
                Role::User if t.task.is_empty() => t.task = brief(&m.content, LONG),
                Role::Assistant => {
                    for call in &m.tool_calls {
                        t.calls.push(ToolUse {
                            name: call.function.name.clone(),
                            arguments: brief(&call.function.arguments.to_string(), BRIEF),
                            result: String::new(),
                            failed: false,
                        });
                    }
                    if !m.content.trim().is_empty() {
                        t.outcome = brief(&m.content, LONG);
                    }
                }
                Role::Tool => answer(&mut t, m.tool_call_id.as_deref(), &summary.messages, &m.content),
                _ => {}
            }
        }
        t
    }

    /// A Claude Code session transcript (JSON lines of `user` and `assistant` entries whose
    /// `message.content` holds text, `tool_use` and `tool_result` blocks). Lines that are not
    /// such entries (summaries, snapshots) are skipped; `None` when no line was one.
    pub fn from_claude_code(jsonl: &str) -> Option<Self> {
        let mut t = Trajectory::default();
        let mut ids: Vec<String> = Vec::new();
        let mut entries = 0;
        for line in jsonl.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let kind = entry["type"].as_str().unwrap_or("");
            if kind != "user" && kind != "assistant" {
                continue;
            }
            entries += 1;
            if t.session.is_empty() {
                if let Some(id) = entry["sessionId"].as_str() {
                    t.session = id.to_string();
                }
            }
            let content = &entry["message"]["content"];
            let blocks: Vec<Value> = match content {
                Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
                Value::Array(blocks) => blocks.clone(),
                _ => continue,
            };
            for block in &blocks {
                match (kind, block["type"].as_str().unwrap_or("")) {
                    ("user", "text") if t.task.is_empty() => {
                        t.task = brief(block["text"].as_str().unwrap_or(""), LONG);
                    }
                    ("assistant", "text") => {
                        let text = block["text"].as_str().unwrap_or("");
                        if !text.trim().is_empty() {
                            t.outcome = brief(text, LONG);
                        }
                    }
                    ("assistant", "tool_use") => {
                        ids.push(block["id"].as_str().unwrap_or("").to_string());
                        t.calls.push(ToolUse {
                            name: block["name"].as_str().unwrap_or("tool").to_string(),
                            arguments: brief(&block["input"].to_string(), BRIEF),
                            result: String::new(),
                            failed: false,
                        });
                    }
                    ("user", "tool_result") => {
                        let id = block["tool_use_id"].as_str().unwrap_or("");
                        if let Some(i) = ids.iter().position(|known| known == id) {
                            let result = match &block["content"] {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            t.calls[i].result = brief(&result, BRIEF);
                            t.calls[i].failed = block["is_error"].as_bool().unwrap_or(false);
                        }
                    }
                    _ => {}
                }
            }
        }
        (entries > 0).then_some(t)
    }

    /// The session described for the model: task, calls, outcome.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("Task:\n{}\n\nTool calls:\n", self.task);
        for (i, c) in self.calls.iter().take(MAX_CALLS).enumerate() {
            out.push_str(&format!(
                "{}. {}({}) -> {}{}\n",
                i + 1,
                c.name,
                c.arguments,
                if c.failed { "FAILED: " } else { "" },
                c.result
            ));
        }
        if self.calls.len() > MAX_CALLS {
            out.push_str(&format!("… and {} more\n", self.calls.len() - MAX_CALLS));
        }
        out.push_str(&format!("\nOutcome:\n{}\n", self.outcome));
        out
    }
}

/// Give the call `id` of the conversation its result.
fn answer(t: &mut Trajectory, id: Option<&str>, messages: &[Message], content: &str) {
    let Some(id) = id else { return };
    let position = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .position(|c| c.id == id);
    if let Some(call) = position.and_then(|i| t.calls.get_mut(i)) {
        call.failed = content.starts_with("error:");
        call.result = brief(content, BRIEF);
    }
}

/// `text` with secrets redacted, cut to `max` characters.
fn brief(text: &str, max: usize) -> String {
    let text = redact(text.trim());
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_transcript_pairs_results_with_calls_and_redacts_secrets() {
        let lines = [
            r#"{"type":"summary","summary":"x"}"#,
            r#"{"type":"user","sessionId":"cc-1","message":{"role":"user","content":"Release version 2.1 of the app"}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"On it."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"git tag v2.1"}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}]}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"make"}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"boom","is_error":true}]}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Released."}]}}"#,
            "not json",
        ];
        let t = Trajectory::from_claude_code(&lines.join("\n")).unwrap();
        assert_eq!(t.session, "cc-1");
        assert_eq!(t.task, "Release version 2.1 of the app");
        assert_eq!(t.calls.len(), 2);
        assert!(t.calls[0].arguments.contains("git tag v2.1"));
        assert!(!t.calls[0].result.contains("ghp_"), "{}", t.calls[0].result);
        assert!(t.calls[1].failed);
        assert_eq!(t.successful_calls(), 1);
        assert_eq!(t.outcome, "Released.");
        assert!(Trajectory::from_claude_code("{}\nnot json").is_none());
    }
}
