//! The HTTP model backends against a scripted HTTP/1.1 server on 127.0.0.1: the exact
//! requests they send, how they read replies, and how they fail.
#![cfg(feature = "http")]

use crate::support;

use std::time::Duration;

use ctxkit::http::{
    model_from_spec, AnthropicModel, ModelOptions, OllamaModel, OpenAiModel, RetryPolicy,
    DEFAULT_MAX_RESPONSE_BYTES,
};
use ctxkit::{ChatModel, Error, Message, ModelRequest, ToolCall, ToolDefinition, Usage};
use serde_json::{json, Value};
use support::capture::capture;
use support::{ok, serve, status, Reply, Server};

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn read_skill_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read_skill".into(),
        description: "Read one skill".into(),
        parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    }
}

/// A history with every kind of message, including a tool round.
fn tool_round_request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::system("be brief"),
            Message::user("how do I rebase?"),
            Message::tool_calls(vec![ToolCall::new(
                "call_9",
                "read_skill",
                &json!({"name": "git"}),
            )]),
            Message::tool_result("call_9", "# Git\nUse rebase -i."),
        ],
        tools: vec![read_skill_tool()],
        ..Default::default()
    }
}

fn hello_request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("hello")],
        ..Default::default()
    }
}

fn openai_reply(message: Value) -> Reply {
    ok(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    }))
}

fn ollama_reply(message: Value) -> Reply {
    ok(json!({
        "model": "llama-test",
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": true,
        "done_reason": "stop"
    }))
}

/// An OpenAI model pointed at `server` with tiny backoff and no key.
fn openai(server: &Server) -> OpenAiModel {
    OpenAiModel::new("gpt-test")
        .base_url(format!("{}/v1", server.url))
        .without_api_key()
        .base_delay(Duration::from_millis(1))
}

fn model_error(err: Error) -> (String, String) {
    match err {
        Error::Model { model, message, .. } => (model, message),
        other => panic!("expected a model error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible.

#[tokio::test]
async fn openai_sends_the_exact_request_with_the_key() {
    let server = serve(vec![openai_reply(
        json!({"role": "assistant", "content": "Rebase with -i.", "refusal": null}),
    )])
    .await;
    std::env::set_var("CTXKIT_TEST_KEY_OPENAI_EXACT", "sk-test-123");
    let model = openai(&server).api_key_env("CTXKIT_TEST_KEY_OPENAI_EXACT");

    let reply = model.complete(&tool_round_request()).await.unwrap().message;

    assert_eq!(reply, Message::assistant("Rebase with -i."));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "how do I rebase?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_9", "type": "function",
                     "function": {"name": "read_skill", "arguments": "{\"name\":\"git\"}"}}
                ]},
                {"role": "tool", "content": "# Git\nUse rebase -i.", "tool_call_id": "call_9"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_skill",
                "description": "Read one skill",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            }}]
        })
    );
}

#[tokio::test]
async fn openai_omits_tools_and_authorization_when_there_are_none() {
    let server = serve(vec![openai_reply(json!({"role": "assistant", "content": "hi"}))]).await;
    let model = openai(&server).api_key_env("CTXKIT_TEST_KEY_NEVER_SET_4b1f");

    model.complete(&hello_request()).await.unwrap();

    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body,
        json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hello"}]})
    );
}

#[tokio::test]
async fn openai_parses_tool_calls() {
    let server = serve(vec![openai_reply(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_skill", "arguments": "{\"name\":\"git\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}
        ]
    }))])
    .await;

    let reply = openai(&server)
        .complete(&tool_round_request())
        .await
        .unwrap()
        .message;

    assert_eq!(
        reply,
        Message::tool_calls(vec![
            ToolCall::new("call_a", "read_skill", &json!({"name": "git"})),
            ToolCall::new("call_b", "search", &json!({"q": "x"})),
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Ollama.

#[tokio::test]
async fn ollama_sends_tool_calls_as_objects_and_results_with_tool_name() {
    let server = serve(vec![ollama_reply(
        json!({"role": "assistant", "content": "Rebase with -i."}),
    )])
    .await;
    let model = OllamaModel::new("llama-test").base_url(&server.url);

    let reply = model.complete(&tool_round_request()).await.unwrap().message;

    assert_eq!(reply, Message::assistant("Rebase with -i."));
    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/chat"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body,
        json!({
            "model": "llama-test",
            "stream": false,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "how do I rebase?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "read_skill", "arguments": {"name": "git"}}}
                ]},
                {"role": "tool", "content": "# Git\nUse rebase -i.", "tool_name": "read_skill"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_skill",
                "description": "Read one skill",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            }}]
        })
    );
}

#[tokio::test]
async fn ollama_reads_object_arguments_and_numbers_the_calls() {
    let server = serve(vec![ollama_reply(json!({
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "read_skill", "arguments": {"name": "git"}}},
            {"function": {"name": "search", "arguments": {"q": "x", "n": 2}}}
        ]
    }))])
    .await;
    let model = OllamaModel::new("llama-test").base_url(&server.url);

    let reply = model.complete(&hello_request()).await.unwrap().message;

    assert_eq!(reply.content, "");
    let calls: Vec<(&str, &str, Value)> = reply
        .tool_calls
        .iter()
        .map(|c| {
            let args: Value = serde_json::from_str(&c.function.arguments).unwrap();
            (c.id.as_str(), c.function.name.as_str(), args)
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0", "read_skill", json!({"name": "git"})),
            ("call_1", "search", json!({"q": "x", "n": 2})),
        ]
    );
    assert!(reply.tool_calls.iter().all(|c| c.kind == "function"));
}

#[tokio::test]
async fn ollama_surfaces_its_error_string() {
    let server = serve(vec![status(
        404,
        r#"{"error":"model \"nope\" not found, try pulling it first"}"#,
    )])
    .await;
    let model = OllamaModel::new("nope").base_url(&server.url).max_retries(3);

    let (name, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

    assert_eq!(name, "ollama:nope");
    assert!(message.contains("HTTP 404 Not Found"), "{message}");
    assert!(
        message.contains(r#"model "nope" not found, try pulling it first"#),
        "{message}"
    );
    assert_eq!(server.requests().len(), 1, "a 404 is not retried");
}

// ---------------------------------------------------------------------------------------------
// Anthropic.

/// The server-sent events of a streamed reply: `text`, then each `(id, name, input)` tool
/// call with its input in two pieces, then the usage figures.
fn anthropic_stream(text: &str, calls: &[(&str, &str, Value)], usage: Value) -> Reply {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": usage}})];
    events.push(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    events.push(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    events.push(json!({"type": "content_block_stop", "index": 0}));
    for (i, (id, name, input)) in calls.iter().enumerate() {
        let json = input.to_string();
        let (a, b) = json.split_at(json.len() / 2);
        events.push(json!({"type": "content_block_start", "index": i + 1,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for part in [a, b] {
            events.push(json!({"type": "content_block_delta", "index": i + 1,
                "delta": {"type": "input_json_delta", "partial_json": part}}));
        }
        events.push(json!({"type": "content_block_stop", "index": i + 1}));
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}}),
    );
    events.push(json!({"type": "message_stop"}));
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    Reply::Http {
        status: 200,
        headers: vec![("X-Stream", "sse".into())],
        body,
    }
}

fn anthropic(server: &Server) -> AnthropicModel {
    AnthropicModel::new("claude-test")
        .base_url(&server.url)
        .without_api_key()
        .base_delay(Duration::from_millis(1))
}

#[tokio::test]
async fn anthropic_sends_its_headers_a_top_level_system_and_blocks_paired_by_id() {
    let server = serve(vec![anthropic_stream(
        "Let me read it.",
        &[("toolu_2", "read_skill", json!({"name": "git"}))],
        json!({"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1500, "output_tokens": 1}),
    )])
    .await;
    std::env::set_var("CTXKIT_TEST_KEY_ANTHROPIC_EXACT", "sk-ant-test-1");
    let model = anthropic(&server).api_key_env("CTXKIT_TEST_KEY_ANTHROPIC_EXACT");
    let request = ModelRequest {
        stable_prefix: "be".len(),
        ..tool_round_request()
    };

    let reply = model.complete(&request).await.unwrap();

    assert_eq!(
        reply.message,
        Message {
            tool_calls: vec![ToolCall::new("toolu_2", "read_skill", &json!({"name": "git"}))],
            ..Message::assistant("Let me read it.")
        }
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 30,
            cache_read_tokens: 1500,
            cache_write_tokens: 0,
            output_tokens: 9
        })
    );
    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test-1"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    let cached = json!({"type": "ephemeral"});
    assert_eq!(
        r.body,
        json!({
            "model": "claude-test",
            "max_tokens": r.body["max_tokens"],
            "system": [
                {"type": "text", "text": "be", "cache_control": cached},
                {"type": "text", "text": " brief"}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "how do I rebase?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_9", "name": "read_skill", "input": {"name": "git"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_9", "content": "# Git\nUse rebase -i.", "cache_control": cached}
                ]}
            ],
            "tools": [{
                "name": "read_skill",
                "description": "Read one skill",
                "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            }],
            "stream": true
        })
    );
}

#[tokio::test]
async fn anthropic_retries_an_overload_and_never_shows_the_key() {
    let server = serve(vec![
        Reply::Http {
            status: 529,
            headers: vec![("Retry-After", "0".into())],
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        },
        status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-secret-5"}}"#,
        ),
    ])
    .await;
    std::env::set_var("CTXKIT_TEST_KEY_ANTHROPIC_REDACT", "sk-ant-secret-5");
    let model = anthropic(&server).api_key_env("CTXKIT_TEST_KEY_ANTHROPIC_REDACT");

    let err = model.complete(&hello_request()).await.unwrap_err();

    assert_eq!(server.requests().len(), 2, "the 529 is retried");
    let shown = format!("{err} {err:?} {model:?}");
    assert!(!shown.contains("sk-ant-secret-5"), "{shown}");
    assert!(shown.contains("invalid x-api-key [redacted]"), "{shown}");
    assert!(
        shown.starts_with("model `anthropic:claude-test` failed: "),
        "{shown}"
    );
}

// ---------------------------------------------------------------------------------------------
// Retries.

#[tokio::test]
async fn retries_503_then_succeeds_with_the_same_request() {
    let overloaded = || status(503, r#"{"error":{"message":"overloaded"}}"#);
    let server = serve(vec![
        overloaded(),
        overloaded(),
        openai_reply(json!({"content": "done"})),
    ])
    .await;

    let reply = openai(&server)
        .max_retries(3)
        .complete(&tool_round_request())
        .await
        .unwrap();

    assert_eq!(reply.message.content, "done");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
}

#[tokio::test]
async fn honours_retry_after_on_429() {
    let server = serve(vec![
        Reply::Http {
            status: 429,
            headers: vec![("Retry-After", "0".into())],
            body: r#"{"error":{"message":"rate limited"}}"#.into(),
        },
        openai_reply(json!({"content": "done"})),
    ])
    .await;
    // The policy's own backoff is an hour: only an honoured `Retry-After: 0` finishes in time.
    let model = openai(&server).retry_policy(RetryPolicy {
        max_retries: 1,
        base_delay: Duration::from_secs(3_600),
        max_delay: Duration::from_secs(3_600),
    });

    let reply = tokio::time::timeout(Duration::from_secs(60), model.complete(&hello_request()))
        .await
        .expect("Retry-After: 0 was not honoured")
        .unwrap();

    assert_eq!(reply.message.content, "done");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn gives_up_after_max_retries_with_the_last_status() {
    let overloaded = || status(503, r#"{"error":{"message":"still overloaded"}}"#);
    let server = serve(vec![overloaded(), overloaded(), overloaded()]).await;
    let model = openai(&server).max_retries(2);

    let err = model.complete(&hello_request()).await.unwrap_err();
    assert!(
        err.is_retryable(),
        "overload may pass: the caller may try again later"
    );
    let (name, message) = model_error(err);

    assert_eq!(name, "openai:gpt-test");
    assert_eq!(
        message,
        format!(
            "{}/v1/chat/completions answered HTTP 503 Service Unavailable after 3 attempts: still overloaded",
            server.url
        )
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_a_connection_closed_before_the_reply() {
    let server = serve(vec![Reply::Close, openai_reply(json!({"content": "done"}))]).await;

    let reply = openai(&server).complete(&hello_request()).await.unwrap().message;

    assert_eq!(reply.content, "done");
    assert_eq!(server.requests().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Failures that are final.

#[tokio::test]
async fn a_400_is_not_retried_and_its_message_is_surfaced() {
    let server = serve(vec![status(
        400,
        r#"{"error":{"message":"Invalid value for 'model'","type":"invalid_request_error"}}"#,
    )])
    .await;

    let err = openai(&server)
        .max_retries(3)
        .complete(&hello_request())
        .await
        .unwrap_err();

    assert!(!err.is_retryable(), "a bad request stays bad");
    let (_, message) = model_error(err);
    assert_eq!(
        message,
        format!(
            "{}/v1/chat/completions answered HTTP 400 Bad Request: Invalid value for 'model'",
            server.url
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_body_that_is_not_json_says_what_was_expected() {
    let server = serve(vec![status(200, "<html>gateway page</html>")]).await;

    let (_, message) = model_error(openai(&server).complete(&hello_request()).await.unwrap_err());

    assert!(message.contains("is not an OpenAI chat completion"), "{message}");
    assert!(message.contains("`choices[0].message`"), "{message}");
    assert!(message.contains("<html>gateway page</html>"), "{message}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn empty_choices_are_an_error_not_a_panic() {
    let server = serve(vec![ok(json!({"choices": []}))]).await;

    let (_, message) = model_error(openai(&server).complete(&hello_request()).await.unwrap_err());

    assert!(message.contains("`choices` is empty"), "{message}");
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    let server = serve(vec![status(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-secret-777."}}"#,
    )])
    .await;
    std::env::set_var("CTXKIT_TEST_KEY_REDACT", "sk-secret-777");
    let model = openai(&server).api_key_env("CTXKIT_TEST_KEY_REDACT");

    let err = model.complete(&hello_request()).await.unwrap_err();

    let shown = format!("{err} {err:?} {model:?}");
    assert!(!shown.contains("sk-secret-777"), "{shown}");
    assert!(
        shown.contains("Incorrect API key provided: [redacted]."),
        "{shown}"
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-secret-777")
    );
}

#[tokio::test]
async fn a_refused_connection_names_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiModel::new("gpt-test")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .without_api_key()
        .max_retries(2)
        .base_delay(Duration::from_millis(1));

    let (_, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert!(
        message.starts_with(&format!("could not connect to {url} after 3 attempts: ")),
        "{message}"
    );
    assert!(message.ends_with("; is the server running there?"), "{message}");
}

#[tokio::test]
async fn a_silent_server_times_out_without_retries() {
    let server = serve(vec![Reply::Hang, Reply::Hang]).await;
    let model = OllamaModel::new("llama-test")
        .base_url(&server.url)
        .timeout(Duration::from_millis(300))
        .max_retries(1)
        .base_delay(Duration::from_millis(1));

    let (_, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

    assert_eq!(
        message,
        format!(
            "no response from {}/api/chat within the 300ms request timeout; the server may be overloaded, \
             or the timeout too short for this model",
            server.url
        )
    );
    assert_eq!(server.requests().len(), 1, "timeouts are not retried");
}

// ---------------------------------------------------------------------------------------------
// The factory.

#[tokio::test]
async fn factory_builds_each_backend_with_the_base_url() {
    assert_eq!(
        model_from_spec("dry-run", &ModelOptions::default())
            .unwrap()
            .name(),
        "dry-run"
    );
    assert_eq!(
        model_from_spec("openai:gpt-4o-mini", &ModelOptions::default())
            .unwrap()
            .name(),
        "openai:gpt-4o-mini"
    );

    let server = serve(vec![ollama_reply(json!({"role": "assistant", "content": "hi"}))]).await;
    let model = model_from_spec(
        "ollama:llama3.2",
        &ModelOptions::default().base_url(format!("{}/", server.url)),
    )
    .unwrap();
    assert_eq!(model.name(), "ollama:llama3.2");
    assert_eq!(
        model.complete(&hello_request()).await.unwrap().message,
        Message::assistant("hi")
    );
    assert_eq!(
        server.requests()[0].body,
        json!({"model": "llama3.2", "stream": false, "messages": [{"role": "user", "content": "hello"}]})
    );
}

#[test]
fn factory_rejects_bad_specs_with_the_accepted_forms() {
    let err = |spec: &str, url: Option<&str>| {
        let options = url.map_or_else(ModelOptions::default, |url| ModelOptions::default().base_url(url));
        model_from_spec(spec, &options).err().unwrap().to_string()
    };

    assert_eq!(
        err("claude:opus", None),
        "unknown model `claude:opus`; expected `dry-run`, `openai:MODEL`, `anthropic:MODEL` or `ollama:MODEL`"
    );
    assert_eq!(
        err("gpt-4o", None),
        "unknown model `gpt-4o`; expected `dry-run`, `openai:MODEL`, `anthropic:MODEL` or `ollama:MODEL`"
    );
    assert!(err("openai:", None).contains("names no model"));
    assert!(err("ollama:llama3.2", Some("localhost:11434")).contains("expected http or https"));
    assert!(err("ollama:llama3.2", Some("not a url")).contains("is not a valid URL"));
}

#[tokio::test]
async fn a_base_url_that_is_not_a_url_fails_without_a_request() {
    let model = OpenAiModel::new("gpt-test")
        .base_url("no scheme here")
        .without_api_key();

    let (_, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

    assert!(
        message.starts_with("`no scheme here/chat/completions` is not a usable URL: "),
        "{message}"
    );
    assert!(message.ends_with("; check the base URL"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// Bounds: reply size and the time budget of a call.

/// Fails the test instead of hanging it if a bound does not hold.
async fn within<T>(limit: Duration, call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, call)
        .await
        .expect("the call did not give up within its bound")
}

#[tokio::test]
async fn an_endless_chunked_reply_is_cut_at_the_size_limit() {
    let server = serve(vec![Reply::Endless {
        status: 200,
        chunked: true,
    }])
    .await;
    let model = openai(&server).max_response_bytes(1024 * 1024);

    let err = within(Duration::from_secs(60), model.complete(&hello_request()))
        .await
        .unwrap_err();

    let url = format!("{}/v1/chat/completions", server.url);
    assert_eq!(
        err.to_string(),
        format!(
            "model `openai:gpt-test` failed: the reply from {url} is larger than the 1 MiB response size \
             limit, so it was not read to the end"
        )
    );
    assert!(
        matches!(err, Error::ModelResponseTooLarge { limit, .. } if limit == 1024 * 1024),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1, "a reply too large is not retried");
}

#[tokio::test]
async fn a_declared_length_over_the_default_limit_fails_before_reading() {
    let server = serve(vec![Reply::Endless {
        status: 200,
        chunked: false,
    }])
    .await;

    let err = within(
        Duration::from_secs(60),
        openai(&server).complete(&hello_request()),
    )
    .await
    .unwrap_err();

    assert!(
        matches!(err, Error::ModelResponseTooLarge { limit, .. } if limit == DEFAULT_MAX_RESPONSE_BYTES),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("the 16 MiB response size limit"),
        "{err}"
    );
}

#[tokio::test]
async fn the_size_limit_counts_the_whole_reply() {
    let small = json!({"role": "assistant", "content": "short"});
    let big = json!({"role": "assistant", "content": "x".repeat(5_000)});
    let server = serve(vec![openai_reply(small), openai_reply(big)]).await;
    let model = openai(&server).max_response_bytes(4_096);

    assert_eq!(
        model.complete(&hello_request()).await.unwrap().message.content,
        "short"
    );
    let err = model.complete(&hello_request()).await.unwrap_err();

    assert!(
        matches!(err, Error::ModelResponseTooLarge { limit: 4_096, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("the 4 KiB response size limit"), "{err}");
}

#[tokio::test]
async fn an_endless_error_body_is_cut_to_an_excerpt() {
    let server = serve(vec![Reply::Endless {
        status: 500,
        chunked: true,
    }])
    .await;
    let model = openai(&server).max_retries(0);

    let (_, message) = model_error(
        within(Duration::from_secs(60), model.complete(&hello_request()))
            .await
            .unwrap_err(),
    );

    let start = format!(
        "{}/v1/chat/completions answered HTTP 500 Internal Server Error: {{\"choices\"",
        server.url
    );
    assert!(message.starts_with(&start), "{message}");
    assert!(message.ends_with("aaa…"), "{message}");
    assert!(message.len() < 1_000, "{message}");
}

#[tokio::test]
async fn slow_500s_stop_at_the_total_time_budget() {
    let slow_500 = || {
        Reply::Delayed(
            Duration::from_millis(300),
            Box::new(status(500, r#"{"error":{"message":"slow failure"}}"#)),
        )
    };
    let server = serve((0..30).map(|_| slow_500()).collect()).await;
    let model = openai(&server)
        .max_retries(50)
        .total_timeout(Duration::from_secs(1));
    let err = within(Duration::from_secs(60), model.complete(&hello_request()))
        .await
        .unwrap_err();

    let Error::ModelTimeBudget {
        budget,
        attempts,
        ref last_failure,
        ..
    } = err
    else {
        panic!("expected a time-budget error, got {err:?}");
    };
    assert_eq!(budget, Duration::from_secs(1));
    // The budget stopped the retries: `max_retries(50)` alone would make 51 attempts.
    assert!((2..=10).contains(&attempts), "{attempts} attempts");
    assert_eq!(
        last_failure.as_deref(),
        Some("the server answered HTTP 500 Internal Server Error: slow failure")
    );
    let shown = err.to_string();
    let url = format!("{}/v1/chat/completions", server.url);
    assert_eq!(
        shown,
        format!(
            "model `openai:gpt-test` failed: its 1s time budget ran out after {attempts} attempts at {url} \
             (last failure: the server answered HTTP 500 Internal Server Error: slow failure)"
        )
    );
}

#[tokio::test]
async fn a_silent_server_is_cut_by_the_total_budget_not_the_longer_timeout() {
    let server = serve(vec![Reply::Hang]).await;
    let model = OllamaModel::new("llama-test")
        .base_url(&server.url)
        .timeout(Duration::from_secs(600))
        .total_timeout(Duration::from_millis(500));

    let err = within(Duration::from_secs(60), model.complete(&hello_request()))
        .await
        .unwrap_err();

    assert_eq!(
        err.to_string(),
        format!(
            "model `ollama:llama-test` failed: its 500ms time budget ran out after 1 attempt at {}/api/chat",
            server.url
        )
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_is_not_waited_for() {
    let server = serve(vec![Reply::Http {
        status: 429,
        headers: vec![("Retry-After", "3600".into())],
        body: r#"{"error":{"message":"rate limited"}}"#.into(),
    }])
    .await;
    let model = openai(&server)
        .retry_policy(RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(3_600),
        })
        .total_timeout(Duration::from_secs(2));

    let err = within(Duration::from_secs(60), model.complete(&hello_request()))
        .await
        .unwrap_err();

    assert!(
        matches!(
            &err,
            Error::ModelTimeBudget { attempts: 1, last_failure: Some(f), .. }
                if f == "the server answered HTTP 429 Too Many Requests: rate limited"
        ),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Credentials in the base URL.

#[tokio::test]
async fn credentials_in_the_base_url_are_sent_but_never_shown() {
    let echo = |code: u16| {
        status(
            code,
            r#"{"error":{"message":"denied /v1/chat/completions?api_key=sk-query-secret-42 for user:pa55-word-x"}}"#,
        )
    };
    let server = serve(vec![echo(503), echo(401)]).await;
    let port = server.url.trim_start_matches("http://127.0.0.1:");
    let base =
        format!("http://user:pa55-word-x@127.0.0.1:{port}/v1?api_key=sk-query-secret-42&api-version=2024-06");
    let model = openai(&server).base_url(&base).max_retries(1);
    let (logs, _guard) = capture();

    let err = model.complete(&hello_request()).await.unwrap_err();

    // Sent: the path joins the base path and the query string survives.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].path,
        "/v1/chat/completions?api_key=sk-query-secret-42&api-version=2024-06"
    );
    // Never shown: not in the error, its debug form, the model's debug form or the logs.
    let shown_url =
        format!("http://user:***@127.0.0.1:{port}/v1/chat/completions?api_key=***&api-version=2024-06");
    let (_, message) = model_error(err);
    assert_eq!(
        message,
        format!(
            "{shown_url} answered HTTP 401 Unauthorized after 2 attempts: denied \
             /v1/chat/completions?api_key=*** for user:***"
        )
    );
    assert_eq!(model.endpoint(), shown_url);
    let logs = logs.lines().join("\n");
    assert!(logs.contains("retrying model request"), "{logs}");
    assert!(logs.contains(&format!("url={shown_url}")), "{logs}");
    let everything = format!("{message} {model:?} {logs}");
    for secret in ["pa55-word-x", "sk-query-secret-42"] {
        assert!(!everything.contains(secret), "{secret} leaked: {everything}");
    }
}

#[tokio::test]
async fn a_refused_connection_does_not_show_credentials() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OllamaModel::new("llama-test")
        .base_url(format!(
            "http://ghp_tokenAsUser99@127.0.0.1:{port}/?token=t0ken-value"
        ))
        .max_retries(0);

    let (_, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

    assert!(
        message.starts_with(&format!(
            "could not connect to http://***@127.0.0.1:{port}/api/chat?token=***: "
        )),
        "{message}"
    );
    assert!(
        !message.contains("ghp_tokenAsUser99") && !message.contains("t0ken-value"),
        "{message}"
    );
}

#[test]
fn the_factory_masks_credentials_in_base_url_errors() {
    let err = |url: &str| {
        model_from_spec("openai:gpt-test", &ModelOptions::default().base_url(url))
            .err()
            .unwrap()
            .to_string()
    };

    assert_eq!(
        err("ftp://me:hunter2hunter@host/v1?key=abc"),
        "base URL `ftp://me:***@host/v1?key=***` uses scheme `ftp`; expected http or https, e.g. \
         `http://localhost:11434`"
    );
    let unparsable = err("http//me:hunter2hunter@host/v1?api_key=sk-abc");
    assert!(
        unparsable.starts_with("base URL `***@host/v1?***` is not a valid URL ("),
        "{unparsable}"
    );
}
