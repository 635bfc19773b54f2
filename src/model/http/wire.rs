//! JSON pieces both protocols share: the tool list they send and the assistant message they
//! answer with.
//!
//! OpenAI sends tool-call arguments as JSON *text* with an id; Ollama sends a JSON *object*
//! without one. Reading both through one lenient shape means an OpenAI-compatible server that
//! answers the Ollama way (or the reverse) still works, and the conversion lives in one place.

use serde::Deserialize;
use serde_json::Value;

use crate::message::{FunctionCall, Message, ToolCall};
use crate::tool::ToolDefinition;

/// The `tools` array of a request: `{"type": "function", "function": {…}}` per tool, which
/// OpenAI and Ollama both accept.
pub(super) fn tool_specs(tools: &[ToolDefinition]) -> Vec<Value> {
    tools.iter().map(ToolDefinition::to_function_json).collect()
}

/// An assistant message as either server writes it; unknown fields (`refusal`, `thinking`,
/// `images`…) are ignored.
#[derive(Debug, Deserialize)]
pub(super) struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    /// A string of JSON (OpenAI), an object (Ollama), or missing.
    #[serde(default)]
    arguments: Value,
}

impl WireMessage {
    /// The ctxkit assistant message: arguments become JSON text and calls without an id get
    /// `call_N` (N = position in this reply), which is all the tool loop needs to pair
    /// results with calls.
    pub(super) fn into_message(self) -> Message {
        let calls = self.tool_calls.unwrap_or_default();
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                kind: "function".into(),
                function: FunctionCall {
                    name: call.function.name,
                    arguments: arguments_text(call.function.arguments),
                },
            })
            .collect();
        Message {
            tool_calls,
            ..Message::assistant(self.content.unwrap_or_default())
        }
    }
}

fn arguments_text(arguments: Value) -> String {
    match arguments {
        Value::String(text) => text,
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Message {
        serde_json::from_str::<WireMessage>(json).unwrap().into_message()
    }

    #[test]
    fn string_and_object_arguments_become_text() {
        let m = parse(
            r#"{"role":"assistant","content":null,"tool_calls":[
                {"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
                {"function":{"name":"g","arguments":{"y":[2]}}},
                {"function":{"name":"h"}}]}"#,
        );
        assert_eq!(m.content, "");
        let got: Vec<(&str, &str, &str)> = m
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.function.name.as_str(),
                    c.function.arguments.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", "f", "{\"x\":1}"),
                ("call_1", "g", "{\"y\":[2]}"),
                ("call_2", "h", "{}")
            ]
        );
    }

    #[test]
    fn plain_reply_has_no_calls() {
        let m = parse(r#"{"content":"hi","tool_calls":null}"#);
        assert_eq!(m, Message::assistant("hi"));
    }
}
