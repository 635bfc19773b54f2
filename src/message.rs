//! Chat messages in the OpenAI chat-completions shape.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions and injected context.
    System,
    /// The person talking to the agent (the default); context goes just before their latest
    /// message.
    #[default]
    User,
    /// The model: replies and requests for tool calls.
    Assistant,
    /// A tool's output, answering one call by [`Message::tool_call_id`].
    Tool,
}

/// One chat message; serialises exactly as OpenAI's `messages[]` items.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it, which tells the model how to read it.
    pub role: Role,
    /// Text of the message; `null` in JSON reads as empty.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub content: String,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `tool` messages: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Optional participant or tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            ..Default::default()
        }
    }
    /// Instructions or injected context.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    /// What the person said; a run adds its input as one.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    /// A plain reply of the model, without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    /// An assistant message that asks for tool calls.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls: calls,
            ..Self::new(Role::Assistant, "")
        }
    }
    /// The answer to one tool call.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
}

/// The latest user message of a history, if any.
pub fn latest_user_message(messages: &[Message]) -> Option<&Message> {
    messages.iter().rev().find(|m| m.role == Role::User)
}

/// A tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Pairs the call with its result ([`Message::tool_call_id`]).
    pub id: String,
    /// Always `function` in OpenAI's format; kept so messages read back as they were written.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// Which tool to run, with what arguments.
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".into()
}

/// Name and JSON-encoded arguments of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool to run, by the name it was registered under.
    pub name: String,
    /// The arguments as JSON text, as OpenAI sends them.
    pub arguments: String,
}

impl ToolCall {
    /// A call of tool `name` with `arguments` encoded as JSON text, as a model sends it (for
    /// tests and scripted replies).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_openai_shape() {
        let call = ToolCall::new("c1", "read_skill", &serde_json::json!({"name": "x"}));
        let msgs = vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::tool_calls(vec![call]),
            Message::tool_result("c1", "body"),
        ];
        let json = serde_json::to_value(&msgs).unwrap();
        assert_eq!(
            json[0],
            serde_json::json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(json[2]["tool_calls"][0]["type"], "function");
        assert_eq!(
            json[2]["tool_calls"][0]["function"]["arguments"],
            "{\"name\":\"x\"}"
        );
        assert_eq!(json[3]["tool_call_id"], "c1");
        let back: Vec<Message> = serde_json::from_value(json).unwrap();
        assert_eq!(back, msgs);
    }

    #[test]
    fn null_content_reads_as_empty() {
        let m: Message = serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        assert_eq!(m.content, "");
        assert_eq!(m.role, Role::Assistant);
    }
}
