//! The agent end to end against a local HTTP server speaking the OpenAI-compatible protocol
//! (and Ollama's): the exact requests ctxkit sends for the ADR's three requests, the tool
//! definitions, a `read_skill` round trip, provider failure isolation, and memory written in
//! one thread and injected in the next.
#![cfg(feature = "http")]

use crate::support;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::http::{OllamaModel, OpenAiModel};
use ctxkit::{
    Agent, ChatModel, Context, ContextProvider, Error, Message, Outcome, Result, RunInfo, SectionKind, Thread,
};
use ctxkit_skills::{SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source};
use serde_json::{json, Value};
use support::{ok, serve, Reply, Server};

const BASE: &str = "You are a helpful assistant.";
const CATALOG_INTRO: &str = "Skills are available on demand. When one clearly applies, call the `read_skill` tool with its name to load its full instructions before following it.";
const TRIGGERED_INTRO: &str = "The following skills apply to this request. Follow them when relevant.";

fn library() -> Arc<SkillLibrary> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let library = SkillLibrary::load(vec![SkillRoot::new(dir, Source::Project)]);
    assert!(
        !library.snapshot().has_errors(),
        "{:?}",
        library.snapshot().diagnostics()
    );
    Arc::new(library)
}

/// The system text the ADR's requests must carry, built from the shipped skill files.
fn expected_system(library: &SkillLibrary, matched: Option<&str>) -> String {
    let index = library.snapshot();
    let catalog: Vec<String> = index
        .ranked()
        .filter(|s| !s.disable_model_invocation)
        .map(|s| format!("- {}: {}", s.name, s.description))
        .collect();
    let mut text = format!(
        "{BASE}\n\n{CATALOG_INTRO}\n\n## Available skills\n{}",
        catalog.join("\n")
    );
    if let Some(name) = matched {
        let s = index.get(name).unwrap();
        text.push_str(&format!(
            "\n\n{TRIGGERED_INTRO}\n\n## {}\n{}\n\n{}",
            s.name,
            s.description,
            s.body.trim()
        ));
    }
    text
}

fn openai(server: &Server) -> Arc<dyn ChatModel> {
    Arc::new(
        OpenAiModel::new("test-model")
            .base_url(format!("{}/v1", server.url))
            .without_api_key()
            .max_retries(0),
    )
}

fn openai_reply(message: Value) -> Reply {
    ok(
        json!({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}),
    )
}

fn agent(model: Arc<dyn ChatModel>, library: &Arc<SkillLibrary>) -> Agent {
    Agent::builder()
        .instructions(BASE)
        .model(model)
        .provider(SkillContextProvider::new(library.clone(), SkillConfig::default()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_adr_requests_carry_exactly_the_matching_skill() {
    let library = library();
    let replies = (0..3)
        .map(|i| openai_reply(json!({"role": "assistant", "content": format!("answer {i}")})))
        .collect();
    let server = serve(replies).await;
    let agent = agent(openai(&server), &library);
    for query in ["What is 2+2?", "Say bonjour to Alice", "Calculate pi"] {
        let out = agent.run(&mut Thread::new(), query).await.unwrap();
        assert!(out.reply.content.starts_with("answer"));
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (req, (query, matched)) in requests.iter().zip([
        ("What is 2+2?", None),
        ("Say bonjour to Alice", Some("hello-extended")),
        ("Calculate pi", None),
    ]) {
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(req.body["model"], "test-model");
        let messages = req.body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "{query}");
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": expected_system(&library, matched)}),
            "{query}"
        );
        assert_eq!(messages[1], json!({"role": "user", "content": query}));
        let tools: Vec<&str> = req.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["read_skill", "read_skills"]);
        assert_eq!(
            req.body["tools"][0],
            json!({"type": "function", "function": {
                "name": "read_skill",
                "description": "Load the full instructions of one skill by name, before following it; with `file`, one of the files it lists.",
                "parameters": {"type": "object", "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."},
                    "file": {"type": "string", "description": "A file of the skill, by the path its instructions list (e.g. references/api.md); omit it for the instructions."}
                }, "required": ["name"]}
            }})
        );
    }
}

#[tokio::test]
async fn read_skill_round_trip() {
    let library = library();
    let server = serve(vec![
        openai_reply(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_skill", "arguments": "{\"name\":\"git-workflow\"}"}}
        ]})),
        openai_reply(json!({"role": "assistant", "content": "Use --force-with-lease."})),
    ])
    .await;
    let agent = agent(openai(&server), &library);
    let mut thread = Thread::new();
    let out = agent
        .run(
            &mut thread,
            "How should I update a shared branch after editing history?",
        )
        .await
        .unwrap();
    assert_eq!(out.reply.content, "Use --force-with-lease.");
    assert_eq!(out.report.tool_calls, 1);
    let second = &server.requests()[1].body["messages"];
    let git = library.snapshot();
    let git = git.get("git-workflow").unwrap();
    assert_eq!(second[2]["tool_calls"][0]["function"]["name"], "read_skill");
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": format!("# git-workflow\n{}\n\n{}", git.description, git.body)})
    );
}

struct Broken;
#[async_trait]
impl ContextProvider for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
        Err(Error::provider("broken", "index server unreachable"))
    }
}

#[tokio::test]
async fn a_failing_provider_is_isolated() {
    let library = library();
    let server = serve(vec![openai_reply(
        json!({"role": "assistant", "content": "Bonjour, Alice !"}),
    )])
    .await;
    let agent = Agent::builder()
        .instructions(BASE)
        .model(openai(&server))
        .provider(Broken)
        .provider(SkillContextProvider::new(library.clone(), SkillConfig::default()))
        .build()
        .unwrap();
    let out = agent
        .run(&mut Thread::new(), "Say bonjour to Alice")
        .await
        .unwrap();
    assert_eq!(out.reply.content, "Bonjour, Alice !");
    assert!(
        matches!(&out.report.providers[0].outcome, Outcome::Failed(e) if e.contains("index server unreachable"))
    );
    assert_eq!(out.report.providers[1].outcome, Outcome::Ok);
    let sent = &server.requests()[0].body["messages"][0]["content"];
    assert_eq!(
        sent.as_str().unwrap(),
        expected_system(&library, Some("hello-extended"))
    );
}

#[tokio::test]
async fn memory_written_in_one_thread_is_injected_in_the_next() {
    let library = library();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ctxkit_memory::SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    let replies = (0..2)
        .map(|i| openai_reply(json!({"role": "assistant", "content": format!("ok {i}")})))
        .collect();
    let server = serve(replies).await;
    let agent = Agent::builder()
        .instructions(BASE)
        .model(openai(&server))
        .project("/work/demo")
        .provider(SkillContextProvider::new(library.clone(), SkillConfig::default()))
        .provider(ctxkit_memory::MemoryContextProvider::new(store))
        .build()
        .unwrap();
    agent
        .run(
            &mut Thread::new(),
            "Remember that we deploy with docker compose on Fridays",
        )
        .await
        .unwrap();
    let out = agent
        .run(&mut Thread::new(), "When do we deploy with docker compose?")
        .await
        .unwrap();
    assert_eq!(out.report.injected[&SectionKind::MEMORIES].len(), 1);
    let system = server.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let memory_at = system.find("## Project Memory").expect("memory section sent");
    assert!(
        system[memory_at..].contains("- [FACT] We deploy with docker compose on Fridays"),
        "{system}"
    );
    // Per-message context follows the stable prefix: the catalog comes first.
    assert!(system.find("## Available skills").unwrap() < memory_at);
    assert!(system.contains("## docker-compose"), "the skill is matched too");
}

#[tokio::test]
async fn ollama_shape_end_to_end() {
    let library = library();
    let server = serve(vec![
        ok(json!({"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "read_skill", "arguments": {"name": "hello-extended"}}}
        ]}})),
        ok(json!({"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": "Bonjour, Alice !"}})),
    ])
    .await;
    let model: Arc<dyn ChatModel> = Arc::new(
        OllamaModel::new("llama3.2")
            .base_url(server.url.clone())
            .max_retries(0),
    );
    let out = agent(model, &library)
        .run(&mut Thread::new(), "Say bonjour to Alice")
        .await
        .unwrap();
    assert_eq!(out.reply.content, "Bonjour, Alice !");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/api/chat");
    let first = &requests[0].body;
    assert_eq!(first["stream"], false);
    assert_eq!(
        first["messages"][0]["content"].as_str().unwrap(),
        expected_system(&library, Some("hello-extended"))
    );
    assert_eq!(first["tools"][0]["function"]["name"], "read_skill");
    let second = &requests[1].body["messages"];
    assert_eq!(
        second[2]["tool_calls"][0]["function"]["arguments"],
        json!({"name": "hello-extended"})
    );
    assert_eq!(second[3]["role"], "tool");
    assert!(second[3]["content"]
        .as_str()
        .unwrap()
        .starts_with("# hello-extended\n"));
}
