//! The OpenAI chat-completions wire format, spoken by OpenAI and most compatible servers
//! (vLLM, llama.cpp's server, LM Studio, OpenRouter…).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::{sealed, HttpModel, Protocol};
use super::wire::{tool_specs, WireMessage};
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest, Usage};

/// `POST {base_url}/chat/completions` with `{"model", "messages", "tools"?, "response_format"?}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAi;

/// An OpenAI-compatible chat model; the key comes from `OPENAI_API_KEY` unless configured.
///
/// ```no_run
/// use ctxkit::http::OpenAiModel;
/// let local = OpenAiModel::new("qwen2.5-7b").base_url("http://localhost:8000/v1").without_api_key();
/// ```
pub type OpenAiModel = HttpModel<OpenAi>;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    /// ctxkit's messages already serialise in exactly this API's shape.
    messages: &'a [Message],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<CompletionUsage>,
}

/// `prompt_tokens` includes the cached ones, which OpenAI reports apart.
#[derive(Deserialize)]
struct CompletionUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<CompletionUsage> for Usage {
    fn from(u: CompletionUsage) -> Self {
        let cached = u.prompt_tokens_details.map_or(0, |d| d.cached_tokens);
        Usage {
            input_tokens: u.prompt_tokens.saturating_sub(cached),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
            output_tokens: u.completion_tokens,
        }
    }
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
}

impl sealed::Sealed for OpenAi {}

impl Protocol for OpenAi {
    const PREFIX: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    const DEFAULT_API_KEY_ENV: Option<&'static str> = Some("OPENAI_API_KEY");
    const PATH: &'static str = "/chat/completions";
    const EXPECTED: &'static str = "an OpenAI chat completion with `choices[0].message`";

    fn encode<'a>(model: &'a str, request: &'a ModelRequest) -> impl Serialize + 'a {
        Body {
            model,
            messages: &request.messages,
            tools: tool_specs(&request.tools),
            response_format: request.reply_schema.as_ref().map(|schema| {
                serde_json::json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}})
            }),
        }
    }

    fn decode(_: &ModelRequest, body: &str) -> Result<ModelReply, String> {
        let completion: Completion = serde_json::from_str(body).map_err(|e| e.to_string())?;
        let choice = completion
            .choices
            .into_iter()
            .next()
            .ok_or("`choices` is empty")?;
        Ok(ModelReply {
            message: choice.message.into_message(),
            usage: completion.usage.map(Usage::from),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_schema_is_sent_as_response_format() {
        let mut request = ModelRequest::default();
        let plain = serde_json::to_value(OpenAi::encode("m", &request)).unwrap();
        assert_eq!(plain.get("response_format"), None);
        request.reply_schema = Some(json!({"type": "object"}));
        let body = serde_json::to_value(OpenAi::encode("m", &request)).unwrap();
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": {"type": "object"}}})
        );
    }

    #[test]
    fn usage_counts_cached_prompt_tokens_apart() {
        let body = r#"{"choices":[{"message":{"content":"hi"}}],
            "usage":{"prompt_tokens":1200,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":1024}}}"#;
        let reply = OpenAi::decode(&ModelRequest::default(), body).unwrap();
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 176,
                cache_read_tokens: 1024,
                cache_write_tokens: 0,
                output_tokens: 7
            })
        );
        let bare = OpenAi::decode(
            &ModelRequest::default(),
            r#"{"choices":[{"message":{"content":"hi"}}]}"#,
        );
        assert_eq!(bare.unwrap().usage, None);
    }
}
