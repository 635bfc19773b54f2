//! A session as the learner sees it: the task, the tool calls with brief arguments and
//! results, and how it ended — read from a ctxkit session (live, or its record), a Claude Code
//! transcript or a Codex rollout.

use std::collections::HashMap;

use ctxkit::{Message, Role, SessionSummary};
use ctxkit_secrets::redact;
use serde_json::Value;

/// The most characters of one argument list or result kept for the model.
const BRIEF: usize = 200;
/// The most characters of the task and of the outcome kept for the model.
const LONG: usize = 2_000;
/// The most tool calls described to the model (the first ones).
const MAX_CALLS: usize = 40;
/// The most characters of a tool's name kept.
const NAME: usize = 64;
/// The most characters of a session id kept (ids are UUIDs; a longer one is cut).
const SESSION_ID: usize = 128;

/// One tool call of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolUse {
    /// The tool's name, brief and with secrets redacted.
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
    /// The session's id, kept with what is learned from it: at most 128 characters, secrets
    /// redacted (a transcript is untrusted, its id too).
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
        Self::from_messages(&summary.thread_id, &summary.messages, summary.failed_turns)
    }

    /// A file of any format this reads, told apart by its lines: a ctxkit session record, a
    /// Codex rollout, a Claude Code transcript. `None` when it is none of them.
    pub fn read(jsonl: &str) -> Option<Self> {
        Self::from_record(jsonl)
            .or_else(|| Self::from_codex(jsonl))
            .or_else(|| Self::from_claude_code(jsonl))
    }

    /// A ctxkit session record (`ctxkit chat --record DIR`): a first line
    /// `{"session": ID, "failed_turns": N}`, then one ctxkit message per line.
    pub fn from_record(jsonl: &str) -> Option<Self> {
        let mut lines = jsonl.lines();
        let head: Value = serde_json::from_str(lines.next()?).ok()?;
        let session = head["session"].as_str()?;
        let failed_turns = usize::try_from(head["failed_turns"].as_u64()?).ok()?;
        let messages: Vec<Message> = lines.filter_map(|l| serde_json::from_str(l).ok()).collect();
        Some(Self::from_messages(session, &messages, failed_turns))
    }

    /// The record [`from_record`](Self::from_record) reads, of a finished session.
    pub fn record(summary: &SessionSummary) -> String {
        let mut out = serde_json::json!({"session": summary.thread_id, "failed_turns": summary.failed_turns})
            .to_string();
        for m in &summary.messages {
            out.push('\n');
            out.push_str(&serde_json::to_string(m).unwrap_or_default());
        }
        out.push('\n');
        out
    }

    /// A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`): `session_meta` and
    /// `response_item` lines (or, in older rollouts, the items themselves) holding `message`,
    /// `function_call` and `function_call_output` items. A call whose output reports a non-zero
    /// exit code failed. `None` when no line is such an item.
    pub fn from_codex(jsonl: &str) -> Option<Self> {
        let mut t = Trajectory::default();
        let mut calls = Calls::default();
        let mut items = 0;
        for line in jsonl.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if entry["type"] == "session_meta" {
                t.session = session_id(entry["payload"]["id"].as_str().unwrap_or(""));
                continue;
            }
            let item = if entry["type"] == "response_item" {
                &entry["payload"]
            } else {
                &entry
            };
            match item["type"].as_str().unwrap_or("") {
                "message" => {
                    items += 1;
                    let text: String = item["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n");
                    // Codex's own context (`<environment_context>`, instructions) is not the task.
                    match item["role"].as_str() {
                        Some("user") if t.task.is_empty() && !text.trim_start().starts_with('<') => {
                            t.task = brief(&text, LONG)
                        }
                        Some("assistant") if !text.trim().is_empty() => t.outcome = brief(&text, LONG),
                        _ => {}
                    }
                }
                "function_call" => {
                    items += 1;
                    calls.call(
                        item["call_id"].as_str().unwrap_or(""),
                        item["name"].as_str().unwrap_or("tool"),
                        item["arguments"].as_str().unwrap_or(""),
                    );
                }
                "function_call_output" => {
                    items += 1;
                    let output = text_of(&item["output"]);
                    let exit = serde_json::from_str::<Value>(&output)
                        .ok()
                        .and_then(|o| o["metadata"]["exit_code"].as_i64());
                    let failed = exit.is_some_and(|code| code != 0);
                    calls.result(item["call_id"].as_str().unwrap_or(""), &output, failed);
                }
                _ => {}
            }
        }
        t.calls = calls.list;
        (items > 0).then_some(t)
    }

    /// A conversation of ctxkit messages.
    fn from_messages(session: &str, messages: &[Message], failed_turns: usize) -> Self {
        let mut t = Trajectory {
            session: session_id(session),
            failed_turns,
            ..Trajectory::default()
        };
        let mut calls = Calls::default();
        for m in messages {
            match m.role {
                Role::User if t.task.is_empty() => t.task = brief(&m.content, LONG),
                Role::Assistant => {
                    for call in &m.tool_calls {
                        calls.call(&call.id, &call.function.name, &call.function.arguments);
                    }
                    if !m.content.trim().is_empty() {
                        t.outcome = brief(&m.content, LONG);
                    }
                }
                Role::Tool => {
                    let id = m.tool_call_id.as_deref().unwrap_or("");
                    calls.result(id, &m.content, m.content.starts_with("error:"));
                }
                _ => {}
            }
        }
        t.calls = calls.list;
        t
    }

    /// A Claude Code session transcript (JSON lines of `user` and `assistant` entries whose
    /// `message.content` holds text, `tool_use` and `tool_result` blocks). Lines that are not
    /// such entries (summaries, snapshots) are skipped; `None` when no line was one.
    pub fn from_claude_code(jsonl: &str) -> Option<Self> {
        let mut t = Trajectory::default();
        let mut calls = Calls::default();
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
                    t.session = session_id(id);
                }
            }
            let text;
            let blocks = match &entry["message"]["content"] {
                Value::String(s) => {
                    text = [serde_json::json!({"type": "text", "text": s})];
                    &text[..]
                }
                Value::Array(blocks) => &blocks[..],
                _ => continue,
            };
            for block in blocks {
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
                    ("assistant", "tool_use") => calls.call(
                        block["id"].as_str().unwrap_or(""),
                        block["name"].as_str().unwrap_or("tool"),
                        &block["input"].to_string(),
                    ),
                    ("user", "tool_result") => calls.result(
                        block["tool_use_id"].as_str().unwrap_or(""),
                        &text_of(&block["content"]),
                        block["is_error"].as_bool().unwrap_or(false),
                    ),
                    _ => {}
                }
            }
        }
        t.calls = calls.list;
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

/// The tool calls of a session being read, each found again by its id when its result comes
/// (a map, so a transcript of many calls is read in linear time).
#[derive(Default)]
struct Calls {
    list: Vec<ToolUse>,
    by_id: HashMap<String, usize>,
}

impl Calls {
    fn call(&mut self, id: &str, name: &str, arguments: &str) {
        self.by_id.insert(id.to_string(), self.list.len());
        self.list.push(ToolUse {
            name: brief(name, NAME),
            arguments: arguments_brief(arguments),
            result: String::new(),
            failed: false,
        });
    }

    fn result(&mut self, id: &str, result: &str, failed: bool) {
        if let Some(&i) = self.by_id.get(id) {
            self.list[i].result = brief(result, BRIEF);
            self.list[i].failed = failed;
        }
    }
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A tool call's arguments for the model. When they are JSON, every string in them is
/// redacted as decoded first: a `DB_PASSWORD="…"` in a command arrives in the JSON text as
/// `DB_PASSWORD=\"…\"`, which the rules would not read as a quoted value. Then the JSON text
/// as a whole (a `{"password": "…"}` pair), then it is cut.
fn arguments_brief(arguments: &str) -> String {
    fn redact_strings(value: &mut Value) {
        match value {
            Value::String(s) => *s = redact(s),
            Value::Array(items) => items.iter_mut().for_each(redact_strings),
            Value::Object(fields) => fields.values_mut().for_each(redact_strings),
            _ => {}
        }
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(mut value) => {
            redact_strings(&mut value);
            brief(&value.to_string(), BRIEF)
        }
        Err(_) => brief(arguments, BRIEF),
    }
}

/// A session id as kept: secrets redacted, cut to [`SESSION_ID`] characters. Only its first
/// 4 KiB is read, so a huge id costs no more than a short one.
fn session_id(id: &str) -> String {
    let head = id.char_indices().nth(4_096).map_or(id, |(cut, _)| &id[..cut]);
    brief(head, SESSION_ID)
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

    /// What a hostile or careless transcript holds never reaches the model: secrets quoted
    /// inside JSON arguments (escaped as `\"`), in a tool's name, in the session id; and a
    /// huge name or id is cut.
    #[test]
    fn secrets_in_arguments_names_and_ids_are_redacted_and_cut() {
        let password = "hunter2x";
        let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        let token = format!("ghp_{}", "0123456789abcdefghijklmnopqrstuvwxyzAB");
        let calls = [
            serde_json::json!({"command": format!("DB_PASSWORD=\"{password}\" psql -c 'select 1'")}),
            serde_json::json!({"command": format!("AWS_SECRET_ACCESS_KEY=\"{aws}\" aws s3 ls")}),
            serde_json::json!({"password": password, "user": "ann"}),
            serde_json::json!({"cmd": ["sh", "-c", format!("API_KEY=\"{}\" ./deploy", "k3y-0123456789abcdef")]}),
        ];
        let mut lines = vec![serde_json::json!({"type": "user", "sessionId": token, "message": {"role": "user", "content": "Deploy"}}).to_string()];
        for (i, input) in calls.iter().enumerate() {
            let block = serde_json::json!({"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": input});
            lines.push(serde_json::json!({"type": "assistant", "message": {"role": "assistant", "content": [block]}}).to_string());
        }
        let long_name = format!("{token}{}", "x".repeat(10_000));
        let block = serde_json::json!({"type": "tool_use", "id": "n", "name": long_name, "input": {}});
        lines.push(
            serde_json::json!({"type": "assistant", "message": {"role": "assistant", "content": [block]}})
                .to_string(),
        );
        let t = Trajectory::from_claude_code(&lines.join("\n")).unwrap();
        let described = t.describe();
        for secret in [password, aws, &token, "k3y-0123456789abcdef"] {
            assert!(
                !described.contains(secret),
                "{secret} reached the model: {described}"
            );
            assert!(!t.session.contains(secret));
        }
        assert!(t.calls[4].name.chars().count() <= NAME + 1, "the name is cut");
        assert!(
            t.calls[2].arguments.contains("ann"),
            "the rest is kept: {}",
            t.calls[2].arguments
        );

        let huge = format!(
            r#"{{"type":"session_meta","payload":{{"id":"{}"}}}}"#,
            "7".repeat(10_000_000)
        );
        let message = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Go"}]}}"#;
        let t = Trajectory::read(&format!("{huge}\n{message}")).unwrap();
        assert!(
            t.session.chars().count() <= SESSION_ID + 1,
            "{} characters",
            t.session.len()
        );
    }

    #[test]
    fn a_codex_rollout_is_read_new_and_old_style() {
        let new = [
            r#"{"type":"session_meta","payload":{"id":"cx-1","cwd":"/repo"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Bump the version"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"make\",\"bump\"]}","call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"no rule\",\"metadata\":{\"exit_code\":2}}"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Bumped."}]}}"#,
        ];
        let t = Trajectory::read(&new.join("\n")).unwrap();
        assert_eq!(
            (t.session.as_str(), t.task.as_str(), t.outcome.as_str()),
            ("cx-1", "Bump the version", "Bumped.")
        );
        assert!(t.calls[0].failed && t.calls[0].arguments.contains("bump"));
        let old = new[2..].iter().map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["payload"].to_string()
        });
        let t = Trajectory::read(&old.collect::<Vec<_>>().join("\n")).unwrap();
        assert_eq!((t.task.as_str(), t.calls.len()), ("Bump the version", 1));
    }

    #[test]
    fn a_ctxkit_record_reads_back_as_the_session_it_was() {
        let call = ctxkit::ToolCall::new("1", "shell", &serde_json::json!({"cmd": "make"}));
        let summary = SessionSummary {
            thread_id: "t-9".into(),
            failed_turns: 1,
            messages: vec![
                Message::user("Build it"),
                Message::tool_calls(vec![call]),
                Message::tool_result("1", "error: no make"),
                Message::assistant("Could not."),
            ],
            ..SessionSummary::default()
        };
        let back = Trajectory::read(&Trajectory::record(&summary)).unwrap();
        assert_eq!(back, Trajectory::from_summary(&summary));
        assert_eq!((back.failed_turns, back.calls[0].failed), (1, true));
    }
}
