//! JSON pieces the protocols share: the tool list OpenAI and Ollama send, the assistant
//! message they answer with, and tool-call arguments as the object Ollama and Anthropic want.
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

/// Ollama accepts only an object here. Arguments that are not one (the model wrote bad JSON)
/// are sent as `{}`: the tool result that follows already tells the model what went wrong,
/// and rejecting the history would make every later request of the thread fail.
pub(super) fn arguments_object(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        _ => {
            if !text.trim().is_empty() {
                tracing::debug!(
                    arguments = text,
                    "tool-call arguments are not a JSON object; sending {{}}"
                );
            }
            Value::Object(Default::default())
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
    fn arguments_are_objects_even_when_malformed() {
        use serde_json::json;
        assert_eq!(arguments_object(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(arguments_object(""), json!({}));
        assert_eq!(arguments_object("[1]"), json!({}));
        assert_eq!(arguments_object("{oops"), json!({}));
    }

    #[test]
    fn plain_reply_has_no_calls() {
        let m = parse(r#"{"content":"hi","tool_calls":null}"#);
        assert_eq!(m, Message::assistant("hi"));
    }
}
