//! OpenAI Codex's hook protocol (<https://developers.openai.com/codex/hooks>; schemas in
//! `codex-rs/hooks/schema/generated/` of github.com/openai/codex): the same JSON wire as Claude
//! Code. `UserPromptSubmit` (`session_id`, `cwd`, `prompt`, `turn_id`, …) and `SessionStart`
//! (`source`: startup, resume, clear) answer with
//! `hookSpecificOutput.{hookEventName, additionalContext}`; `PreCompact` only tells ctxkit that
//! what it sent is about to be summarised away, so the next prompt sends it again.

use super::claude_code::hook_specific_output;
use super::event::{EventType, Host};

/// The Codex host.
pub(super) struct Codex;

impl Host for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn event_type(&self, event_name: &str, source: Option<&str>) -> Option<EventType> {
        match event_name {
            "UserPromptSubmit" => Some(EventType::Prompt),
            "SessionStart" => Some(EventType::SessionStart {
                fresh: source != Some("resume"),
            }),
            "PreCompact" => Some(EventType::Compacting),
            _ => None,
        }
    }

    fn answer(&self, event_name: &str, context: &str) -> serde_json::Value {
        hook_specific_output(event_name, context)
    }

    fn own_instructions(&self) -> &'static [&'static str] {
        &["AGENTS.md"]
    }
}
