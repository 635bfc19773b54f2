//! Ollama's native chat API, which differs from OpenAI's in its tool calls: arguments are a
//! JSON object rather than text, calls carry no id, and a tool result names its tool instead
//! of a call id.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::{sealed, HttpModel, Protocol};
use super::wire::{arguments_object, tool_specs, WireMessage};
use crate::message::{Message, Role};
use crate::model::{ModelReply, ModelRequest, Usage};

/// `POST {base_url}/api/chat` with `{"model", "messages", "tools"?, "format"?, "stream": false}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ollama;

/// A model served by Ollama; no API key by default.
///
/// ```no_run
/// use ctxkit::http::OllamaModel;
/// let model = OllamaModel::new("llama3.2");
/// ```
pub type OllamaModel = HttpModel<Ollama>;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<OllamaMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    /// The reply's JSON schema, when the request has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
    /// One JSON reply rather than a stream of chunks.
    stream: bool,
}

#[derive(Serialize)]
struct OllamaMessage<'a> {
    role: Role,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OllamaToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
}

#[derive(Serialize)]
struct OllamaToolCall<'a> {
    function: OllamaFunction<'a>,
}

#[derive(Serialize)]
struct OllamaFunction<'a> {
    name: &'a str,
    arguments: Value,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    error: Option<String>,
    /// Tokens of the prompt that were evaluated (Ollama reuses a cached prefix silently).
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
}

impl sealed::Sealed for Ollama {}

impl Protocol for Ollama {
    const PREFIX: &'static str = "ollama";
    const DEFAULT_BASE_URL: &'static str = "http://localhost:11434";
    const DEFAULT_API_KEY_ENV: Option<&'static str> = None;
    const PATH: &'static str = "/api/chat";
    const EXPECTED: &'static str = "an Ollama chat response with `message`";

    fn encode<'a>(model: &'a str, request: &'a ModelRequest) -> impl Serialize + 'a {
        Body {
            model,
            messages: messages(&request.messages),
            tools: tool_specs(&request.tools),
            format: request.reply_schema.as_ref(),
            stream: false,
        }
    }

    fn decode(_: &ModelRequest, body: &str) -> Result<ModelReply, String> {
        let reply: Reply = serde_json::from_str(body).map_err(|e| e.to_string())?;
        let usage = (reply.prompt_eval_count.is_some() || reply.eval_count.is_some()).then(|| Usage {
            input_tokens: reply.prompt_eval_count.unwrap_or(0),
            output_tokens: reply.eval_count.unwrap_or(0),
            ..Usage::default()
        });
        match (reply.message, reply.error) {
            (Some(message), _) => Ok(ModelReply {
                message: message.into_message(),
                usage,
            }),
            (None, Some(error)) => Err(format!("the server reported `{error}`")),
            (None, None) => Err("missing field `message`".into()),
        }
    }
}

/// ctxkit's history in Ollama's shape. A tool result's `tool_name` is its `name` when set,
/// else the name of the earlier call it answers (the runner records only the call id).
fn messages(history: &[Message]) -> Vec<OllamaMessage<'_>> {
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    history
        .iter()
        .map(|m| {
            for call in &m.tool_calls {
                call_names.insert(&call.id, &call.function.name);
            }
            let tool_name = match m.role {
                Role::Tool => m.name.as_deref().or_else(|| {
                    m.tool_call_id
                        .as_deref()
                        .and_then(|id| call_names.get(id).copied())
                }),
                _ => None,
            };
            OllamaMessage {
                role: m.role,
                content: &m.content,
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| OllamaToolCall {
                        function: OllamaFunction {
                            name: &c.function.name,
                            arguments: arguments_object(&c.function.arguments),
                        },
                    })
                    .collect(),
                tool_name,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    #[test]
    fn a_reply_schema_is_sent_as_format() {
        let mut request = ModelRequest::default();
        let plain = serde_json::to_value(Ollama::encode("m", &request)).unwrap();
        assert_eq!(plain.get("format"), None);
        request.reply_schema = Some(json!({"type": "object"}));
        let body = serde_json::to_value(Ollama::encode("m", &request)).unwrap();
        assert_eq!(body["format"], json!({"type": "object"}));
    }

    #[test]
    fn tool_name_comes_from_name_or_the_answered_call() {
        let history = vec![
            Message::tool_calls(vec![ToolCall::new("c1", "read_skill", &json!({}))]),
            Message::tool_result("c1", "body"),
            Message {
                name: Some("explicit".into()),
                ..Message::tool_result("zz", "x")
            },
            Message::tool_result("unknown", "y"),
        ];
        let names: Vec<Option<&str>> = messages(&history).iter().map(|m| m.tool_name).collect();
        assert_eq!(names, [None, Some("read_skill"), Some("explicit"), None]);
    }

    #[test]
    fn error_replies_are_explained() {
        let err = Ollama::decode(&ModelRequest::default(), r#"{"error":"model 'x' not found"}"#).unwrap_err();
        assert!(err.contains("model 'x' not found"), "{err}");
    }
}
