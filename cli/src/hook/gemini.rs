//! Gemini CLI's hook protocol (<https://geminicli.com/docs/hooks/reference>): JSON on stdin
//! with `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`; `BeforeAgent`
//! carries the user's `prompt` and `SessionStart` its `source` (startup, resume, clear).
//! `hookSpecificOutput.additionalContext` is appended to the prompt (BeforeAgent) or injected
//! as the first turn (SessionStart); stdout must hold nothing but that JSON. `PreCompress`
//! cannot inject anything; ctxkit only forgets what it sent, so the next prompt sends it again.

use super::claude_code::hook_specific_output;
use super::event::{EventType, Host};

/// The Gemini CLI host.
pub(super) struct Gemini;

impl Host for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn event_type(&self, event_name: &str, source: Option<&str>) -> Option<EventType> {
        match event_name {
            "BeforeAgent" => Some(EventType::Prompt),
            "SessionStart" => Some(EventType::SessionStart {
                fresh: source != Some("resume"),
            }),
            "PreCompress" => Some(EventType::Compacting),
            _ => None,
        }
    }

    fn answer(&self, event_name: &str, context: &str) -> serde_json::Value {
        hook_specific_output(event_name, context)
    }

    fn own_instructions(&self) -> &'static [&'static str] {
        &["GEMINI.md"]
    }
}
