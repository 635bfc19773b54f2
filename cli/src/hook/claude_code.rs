//! Claude Code's hook protocol (<https://code.claude.com/docs/en/hooks>): the event is JSON on
//! stdin with `hook_event_name`, `session_id`, `transcript_path`, `cwd` and, per event,
//! `prompt` (UserPromptSubmit) or `source` (SessionStart: startup, resume, clear, compact).
//! Context goes back as `{"hookSpecificOutput": {"hookEventName", "additionalContext"}}` with
//! exit code 0; Claude Code shows output longer than 10,000 characters only as a preview.

use serde_json::json;

use super::event::{EventType, Host};

/// The Claude Code host.
pub(super) struct ClaudeCode;

impl Host for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn event_type(&self, event_name: &str, source: Option<&str>) -> Option<EventType> {
        match event_name {
            "UserPromptSubmit" => Some(EventType::Prompt),
            // `resume` continues a conversation whose context still holds what was sent.
            "SessionStart" => Some(EventType::SessionStart {
                fresh: source != Some("resume"),
            }),
            _ => None,
        }
    }

    fn answer(&self, event_name: &str, context: &str) -> serde_json::Value {
        hook_specific_output(event_name, context)
    }

    fn own_instructions(&self) -> &'static [&'static str] {
        &["CLAUDE.md"]
    }
}

/// The answer shape Claude Code defined and Codex and Gemini CLI adopted.
pub(super) fn hook_specific_output(event_name: &str, context: &str) -> serde_json::Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event_name,
            "additionalContext": context,
        }
    })
}
