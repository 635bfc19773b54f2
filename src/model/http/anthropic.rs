//! Anthropic's Messages API: the system text goes in a top-level `system` field, never as a
//! message; tool calls and results are content blocks (`tool_use`, `tool_result`) paired by
//! id; the reply is streamed as server-sent events. Two prompt-cache breakpoints are set: at
//! the end of the system text's stable prefix (instructions, stable context, skill catalog —
//! the tools come before it in Anthropic's cache order, so they are covered too) and at the
//! end of the conversation, so a session's later requests and a run's tool rounds read what
//! earlier ones wrote.

use reqwest::header::HeaderName;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::{sealed, HttpModel, Protocol};
use super::wire::arguments_object;
use crate::message::{Message, Role, ToolCall};
use crate::model::{ModelReply, ModelRequest, Usage};

/// `POST {base_url}/v1/messages` with `{"model", "max_tokens", "system", "messages", "tools"?,
/// "tool_choice"?, "stream": true}`, the key in `x-api-key` and `anthropic-version: 2023-06-01`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Anthropic;

/// Claude through the Anthropic Messages API; the key comes from `ANTHROPIC_API_KEY` unless
/// configured.
///
/// ```no_run
/// use ctxkit::http::AnthropicModel;
/// let claude = AnthropicModel::new("claude-sonnet-4-5");
/// ```
pub type AnthropicModel = HttpModel<Anthropic>;

/// The most tokens a reply may have (the API requires a bound). Replies are streamed, so a
/// long one does not hit an idle timeout on the way.
const MAX_TOKENS: u32 = 8192;

/// The tool a reply with a [`ModelRequest::reply_schema`] is forced through: its input is the
/// reply, which the API then checks against the schema.
const REPLY_TOOL: &str = "reply";

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolSpec<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    stream: bool,
}

#[derive(Serialize)]
struct ToolSpec<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One content block of a request, with an optional cache breakpoint after it.
#[derive(Serialize)]
struct Block<'a> {
    #[serde(flatten)]
    kind: BlockKind<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockKind<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        content: &'a str,
    },
}

/// `{"type": "ephemeral"}`: the cache breakpoint Anthropic offers.
#[derive(Clone, Copy, Serialize)]
#[serde(tag = "type", rename = "ephemeral")]
struct Ephemeral {}

impl<'a> Block<'a> {
    fn new(kind: BlockKind<'a>) -> Self {
        Block {
            kind,
            cache_control: None,
        }
    }

    /// A text block, or nothing for blank text (the API refuses empty text blocks).
    fn text(text: &'a str) -> Option<Self> {
        (!text.trim().is_empty()).then(|| Block::new(BlockKind::Text { text }))
    }

    fn cached(mut self) -> Self {
        self.cache_control = Some(Ephemeral {});
        self
    }
}

impl sealed::Sealed for Anthropic {}

impl Protocol for Anthropic {
    const PREFIX: &'static str = "anthropic";
    const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    const DEFAULT_API_KEY_ENV: Option<&'static str> = Some("ANTHROPIC_API_KEY");
    const PATH: &'static str = "/v1/messages";
    const EXPECTED: &'static str = "an Anthropic message or a stream of message events";
    const HEADERS: &'static [(&'static str, &'static str)] = &[("anthropic-version", "2023-06-01")];

    fn key_header(key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_string())
    }

    fn encode<'a>(model: &'a str, request: &'a ModelRequest) -> impl Serialize + 'a {
        let leading = request
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let (tools, tool_choice) = match &request.reply_schema {
            Some(schema) => (
                vec![ToolSpec {
                    name: REPLY_TOOL,
                    description: "Give your reply as this tool's input.",
                    input_schema: schema,
                }],
                Some(serde_json::json!({"type": "tool", "name": REPLY_TOOL})),
            ),
            None => (
                request
                    .tools
                    .iter()
                    .map(|t| ToolSpec {
                        name: &t.name,
                        description: &t.description,
                        input_schema: &t.parameters,
                    })
                    .collect(),
                None,
            ),
        };
        Body {
            model,
            max_tokens: MAX_TOKENS,
            system: system(&request.messages[..leading], request.stable_prefix),
            messages: turns(&request.messages[leading..]),
            tools,
            tool_choice,
            stream: true,
        }
    }

    fn decode(request: &ModelRequest, body: &str) -> Result<ModelReply, String> {
        let reply = if body.trim_start().starts_with('{') {
            serde_json::from_str::<Reply>(body).map_err(|e| e.to_string())?
        } else {
            from_events(body)?
        };
        if reply.stop_reason.as_deref() == Some("max_tokens") {
            tracing::warn!(
                max_tokens = MAX_TOKENS,
                "the model's reply was cut at its token limit"
            );
        }
        let usage = Some(reply.usage.into());
        Ok(ModelReply {
            message: reply.message(request.reply_schema.is_some()),
            usage,
        })
    }
}

/// The leading system messages as the top-level `system` blocks; the first is split at the
/// stable prefix, with a cache breakpoint after it.
fn system(messages: &[Message], stable_prefix: usize) -> Vec<Block<'_>> {
    let mut blocks = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let text = m.content.as_str();
        let cut = if i == 0 && text.is_char_boundary(stable_prefix.min(text.len())) {
            stable_prefix.min(text.len())
        } else {
            0
        };
        blocks.extend(Block::text(&text[..cut]).map(Block::cached));
        blocks.extend(Block::text(&text[cut..]));
    }
    blocks
}

/// The conversation as alternating user and assistant turns: a tool result is a user turn's
/// `tool_result` block, a system message after the conversation began is user text (the API
/// has no system role), and messages of the same role in a row become one turn. The last
/// block carries the conversation's cache breakpoint.
fn turns(messages: &[Message]) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for m in messages {
        let (role, blocks): (&'static str, Vec<Block<'_>>) = match m.role {
            Role::Assistant => (
                "assistant",
                Block::text(&m.content)
                    .into_iter()
                    .chain(m.tool_calls.iter().map(|call| {
                        Block::new(BlockKind::ToolUse {
                            id: &call.id,
                            name: &call.function.name,
                            input: arguments_object(&call.function.arguments),
                        })
                    }))
                    .collect(),
            ),
            Role::Tool => (
                "user",
                vec![Block::new(BlockKind::ToolResult {
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or_default(),
                    content: &m.content,
                })],
            ),
            Role::User | Role::System => ("user", Block::text(&m.content).into_iter().collect()),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    if let Some(block) = turns.last_mut().and_then(|t| t.content.last_mut()) {
        block.cache_control = Some(Ephemeral {});
    }
    turns
}

/// A reply, whole or put together from its stream.
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    content: Vec<ReplyBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: ReplyUsage,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReplyBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking and blocks of later API versions: not part of the answer.
    #[serde(other)]
    Other,
}

/// `input_tokens` excludes the cached tokens, which come apart.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl ReplyUsage {
    /// Figures of a later event replace those of an earlier one (a stream's `message_delta`
    /// carries the final output count).
    fn update(&mut self, later: ReplyUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later.cache_read_input_tokens.or(self.cache_read_input_tokens);
    }
}

impl From<ReplyUsage> for Usage {
    fn from(u: ReplyUsage) -> Self {
        Usage {
            input_tokens: u.input_tokens.unwrap_or(0),
            cache_read_tokens: u.cache_read_input_tokens.unwrap_or(0),
            cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
        }
    }
}

impl Reply {
    /// The assistant message: the text blocks joined, each `tool_use` a tool call under its
    /// id. Under a reply schema, the forced `reply` call's input is the message's text.
    fn message(self, schema: bool) -> Message {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.content {
            match block {
                ReplyBlock::Text { text: part } => text.push_str(&part),
                ReplyBlock::ToolUse { name, input, .. } if schema && name == REPLY_TOOL => {
                    text = input.to_string();
                }
                ReplyBlock::ToolUse { id, name, input } => {
                    let input = if input.is_null() {
                        Value::Object(Default::default())
                    } else {
                        input
                    };
                    tool_calls.push(ToolCall::new(id, name, &input));
                }
                ReplyBlock::Other => {}
            }
        }
        Message {
            tool_calls,
            ..Message::assistant(text)
        }
    }
}

/// One event of the stream; only the fields ctxkit reads.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: Reply,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    MessageDelta {
        #[serde(default)]
        delta: StopDelta,
        #[serde(default)]
        usage: Option<ReplyUsage>,
    },
    MessageStop,
    Error {
        error: Value,
    },
    /// `ping`, `content_block_stop` and events of later API versions.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Default, Deserialize)]
struct StopDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A block as its stream builds it: the start event's block, and a tool call's input as the
/// JSON text its deltas spell out.
struct Building {
    block: Value,
    text: String,
    input_json: String,
}

/// The reply a stream of server-sent events spells out, or why it does not: an `error`
/// event, a line that is not an event's JSON, or an end before `message_stop`.
fn from_events(body: &str) -> Result<Reply, String> {
    let mut reply = Reply::default();
    let mut blocks: Vec<Building> = Vec::new();
    let mut stopped = false;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let event: Event =
            serde_json::from_str(data.trim()).map_err(|e| format!("an event is not valid ({e})"))?;
        match event {
            Event::MessageStart { message } => reply.usage.update(message.usage),
            Event::ContentBlockStart { index, content_block } => {
                // Blocks start in order, one at a time; an index from elsewhere could make
                // the reader allocate without bound.
                if index != blocks.len() {
                    return Err(format!("block {index} starts out of order"));
                }
                blocks.push(Building {
                    block: content_block,
                    text: String::new(),
                    input_json: String::new(),
                });
            }
            Event::ContentBlockDelta { index, delta } => {
                let block = blocks
                    .get_mut(index)
                    .ok_or_else(|| format!("a delta names block {index}, which never started"))?;
                match delta {
                    Delta::Text { text } => block.text.push_str(&text),
                    Delta::InputJson { partial_json } => block.input_json.push_str(&partial_json),
                    Delta::Other => {}
                }
            }
            Event::MessageDelta { delta, usage } => {
                reply.stop_reason = delta.stop_reason.or(reply.stop_reason);
                if let Some(usage) = usage {
                    reply.usage.update(usage);
                }
            }
            Event::MessageStop => stopped = true,
            Event::Error { error } => {
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
                let message = error.get("message").and_then(Value::as_str).unwrap_or("");
                return Err(format!("the stream ended with `{kind}`: {message}"));
            }
            Event::Other => {}
        }
    }
    if !stopped {
        return Err("the stream ended before `message_stop`".into());
    }
    for b in blocks {
        let mut block = b.block;
        if let Some(fields) = block.as_object_mut() {
            if !b.text.is_empty() {
                let start = fields.get("text").and_then(Value::as_str).unwrap_or("");
                let text = format!("{start}{}", b.text);
                fields.insert("text".into(), Value::String(text));
            }
            if !b.input_json.trim().is_empty() {
                let input = serde_json::from_str(&b.input_json)
                    .map_err(|e| format!("a tool call's input is not valid JSON ({e})"))?;
                fields.insert("input".into(), input);
            }
        }
        if !block.is_null() {
            reply.content.push(
                serde_json::from_value(block).map_err(|e| format!("a content block is not valid ({e})"))?,
            );
        }
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolDefinition;
    use serde_json::json;

    fn encode(request: &ModelRequest) -> Value {
        serde_json::to_value(Anthropic::encode("claude", request)).unwrap()
    }

    #[test]
    fn system_text_is_top_level_and_cached_at_its_stable_prefix() {
        let request = ModelRequest {
            messages: vec![Message::system("stable part\n\nper message"), Message::user("hi")],
            stable_prefix: "stable part".len(),
            ..ModelRequest::default()
        };
        let body = encode(&request);
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "stable part", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "\n\nper message"}
            ])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}])
        );
        assert_eq!(body["stream"], json!(true));
        assert!(body["max_tokens"].as_u64().unwrap() > 0);
    }

    #[test]
    fn a_prefix_off_a_char_boundary_sets_no_system_breakpoint() {
        let request = ModelRequest {
            messages: vec![Message::system("é"), Message::user("hi")],
            stable_prefix: 1,
            ..ModelRequest::default()
        };
        assert_eq!(encode(&request)["system"], json!([{"type": "text", "text": "é"}]));
    }

    #[test]
    fn tool_rounds_become_blocks_paired_by_id_in_alternating_turns() {
        let request = ModelRequest {
            messages: vec![
                Message::user("read it"),
                Message {
                    tool_calls: vec![
                        ToolCall::new("toolu_1", "read_skill", &json!({"name": "greet"})),
                        ToolCall {
                            function: crate::message::FunctionCall {
                                name: "f".into(),
                                arguments: "not json".into(),
                            },
                            ..ToolCall::new("toolu_2", "f", &json!({}))
                        },
                    ],
                    ..Message::assistant("Reading.")
                },
                Message::tool_result("toolu_1", "BODY"),
                Message::tool_result("toolu_2", ""),
                Message::system("[Context Update] x"),
            ],
            tools: vec![ToolDefinition {
                name: "read_skill".into(),
                description: "Read a skill.".into(),
                parameters: json!({"type": "object"}),
            }],
            ..ModelRequest::default()
        };
        let body = encode(&request);
        assert_eq!(body.get("system"), None);
        assert_eq!(
            body["tools"],
            json!([{"name": "read_skill", "description": "Read a skill.", "input_schema": {"type": "object"}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "read it"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_skill", "input": {"name": "greet"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "f", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "BODY"},
                    {"type": "tool_result", "tool_use_id": "toolu_2"},
                    {"type": "text", "text": "[Context Update] x", "cache_control": {"type": "ephemeral"}}
                ]}
            ])
        );
    }

    #[test]
    fn a_reply_schema_forces_the_reply_tool_and_its_input_is_the_text() {
        let request = ModelRequest {
            messages: vec![Message::user("extract")],
            tools: vec![ToolDefinition {
                name: "other".into(),
                description: "".into(),
                parameters: json!({}),
            }],
            reply_schema: Some(json!({"type": "object"})),
            ..ModelRequest::default()
        };
        let body = encode(&request);
        assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "reply"}));
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let reply = r#"{"content":[{"type":"tool_use","id":"t","name":"reply","input":{"memories":[]}}],
            "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}"#;
        let message = Anthropic::decode(&request, reply).unwrap().message;
        assert_eq!(message, Message::assistant(r#"{"memories":[]}"#));
    }

    /// A stream as the API sends it: text and a tool call's input in pieces, usage at the
    /// start and the output count at the end.
    const STREAM: &str = "event: message_start
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":2048,\"output_tokens\":1}}}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}

event: ping
data: {\"type\":\"ping\"}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"look.\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":0}

event: content_block_start
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"read_skill\",\"input\":{}}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"name\\\": \\\"gr\"}}

event: content_block_delta
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"eet\\\"}\"}}

event: content_block_stop
data: {\"type\":\"content_block_stop\",\"index\":1}

event: message_delta
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":40}}

event: message_stop
data: {\"type\":\"message_stop\"}
";

    #[test]
    fn a_stream_is_put_together_with_its_usage() {
        let reply = Anthropic::decode(&ModelRequest::default(), STREAM).unwrap();
        assert_eq!(reply.message.content, "Let me look.");
        assert_eq!(
            reply.message.tool_calls,
            [ToolCall::new("toolu_9", "read_skill", &json!({"name": "greet"}))]
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 12,
                cache_read_tokens: 2048,
                cache_write_tokens: 0,
                output_tokens: 40
            })
        );
    }

    #[test]
    fn a_cut_or_failed_stream_says_why() {
        let cut = &STREAM[..STREAM.find("event: message_stop").unwrap()];
        let err = Anthropic::decode(&ModelRequest::default(), cut).unwrap_err();
        assert!(err.contains("before `message_stop`"), "{err}");
        let failed = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n";
        let err = Anthropic::decode(&ModelRequest::default(), failed).unwrap_err();
        assert_eq!(err, "the stream ended with `overloaded_error`: Overloaded");
        let far = "data: {\"type\":\"content_block_start\",\"index\":1000000000000,\"content_block\":{\"type\":\"text\"}}\n";
        let err = Anthropic::decode(&ModelRequest::default(), far).unwrap_err();
        assert_eq!(err, "block 1000000000000 starts out of order");
    }

    #[test]
    fn a_whole_message_is_read_too() {
        let body = r#"{"id":"m","type":"message","role":"assistant",
            "content":[{"type":"thinking","thinking":"…"},{"type":"text","text":"Hi."}],
            "stop_reason":"end_turn","usage":{"input_tokens":3,"cache_creation_input_tokens":1500,"output_tokens":2}}"#;
        let reply = Anthropic::decode(&ModelRequest::default(), body).unwrap();
        assert_eq!(reply.message, Message::assistant("Hi."));
        assert_eq!(reply.usage.unwrap().cache_write_tokens, 1500);
    }
}
