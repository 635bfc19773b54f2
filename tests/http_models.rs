//! The HTTP model backends against a scripted HTTP/1.1 server on 127.0.0.1: the exact
//! requests they send, how they read replies, and how they fail.
#![cfg(feature = "http")]

mod support;

use std::time::Duration;

use ctxkit::model::http::{model_from_spec, OllamaModel, OpenAiModel, RetryPolicy};
use ctxkit::{ChatModel, Error, Message, ModelRequest, ToolCall, ToolDefinition};
use serde_json::{json, Value};
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
        Error::Model { model, message } => (model, message),
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

    let reply = model.complete(&tool_round_request()).await.unwrap();

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

    let reply = openai(&server).complete(&tool_round_request()).await.unwrap();

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

    let reply = model.complete(&tool_round_request()).await.unwrap();

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

    let reply = model.complete(&hello_request()).await.unwrap();

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

    assert_eq!(reply.content, "done");
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

    assert_eq!(reply.content, "done");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn gives_up_after_max_retries_with_the_last_status() {
    let overloaded = || status(503, r#"{"error":{"message":"still overloaded"}}"#);
    let server = serve(vec![overloaded(), overloaded(), overloaded()]).await;
    let model = openai(&server).max_retries(2);

    let (name, message) = model_error(model.complete(&hello_request()).await.unwrap_err());

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

    let reply = openai(&server).complete(&hello_request()).await.unwrap();

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
    assert_eq!(model_from_spec("dry-run", None).unwrap().name(), "dry-run");
    assert_eq!(
        model_from_spec("openai:gpt-4o-mini", None).unwrap().name(),
        "openai:gpt-4o-mini"
    );

    let server = serve(vec![ollama_reply(json!({"role": "assistant", "content": "hi"}))]).await;
    let model = model_from_spec("ollama:llama3.2", Some(&format!("{}/", server.url))).unwrap();
    assert_eq!(model.name(), "ollama:llama3.2");
    assert_eq!(
        model.complete(&hello_request()).await.unwrap(),
        Message::assistant("hi")
    );
    assert_eq!(
        server.requests()[0].body,
        json!({"model": "llama3.2", "stream": false, "messages": [{"role": "user", "content": "hello"}]})
    );
}

#[test]
fn factory_rejects_bad_specs_with_the_accepted_forms() {
    let err = |spec: &str, url: Option<&str>| model_from_spec(spec, url).err().unwrap().to_string();

    assert_eq!(
        err("claude:opus", None),
        "unknown model `claude:opus`; expected `dry-run`, `openai:MODEL` or `ollama:MODEL`"
    );
    assert_eq!(
        err("gpt-4o", None),
        "unknown model `gpt-4o`; expected `dry-run`, `openai:MODEL` or `ollama:MODEL`"
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
