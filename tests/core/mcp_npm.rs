//! The MCP client against a real third-party server: `@modelcontextprotocol/server-everything`
//! from npm (pinned in `tests/mcp/package.json`), installed by `.ci/run` into
//! `target/mcp-suites/npm`. Its tools are mounted in an agent driven by a scripted model; the
//! server is then killed mid-conversation, and the next call is a tool error the run survives.
#![cfg(unix)]

use crate::support;

use std::sync::Arc;

use ctxkit::mcp::McpServer;
use ctxkit::{Agent, Message, Role, ScriptedModel, Thread, ToolCall};
use serde_json::json;
use support::suites::{required, suites_dir};

/// The content of the last tool result in `messages`.
fn last_tool_output(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .expect("a tool result")
}

#[tokio::test]
async fn server_everything_tools_run_in_the_agent_until_the_server_is_killed() {
    let bin = suites_dir().join("npm/node_modules/.bin/mcp-server-everything");
    let Some(bin) = required(bin, "the npm MCP server suite") else {
        return;
    };
    let server = McpServer::stdio(bin.to_string_lossy(), ["stdio"])
        .name("everything")
        .connect()
        .await
        .unwrap();
    let names: Vec<&str> = server.tools().iter().map(ctxkit::Tool::name).collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");
    let pid = server.process_id().expect("a child process");

    let echo = |id: &str, text: &str| {
        Message::tool_calls(vec![ToolCall::new(
            id,
            "everything__echo",
            &json!({ "message": text }),
        )])
    };
    let model = Arc::new(ScriptedModel::new([
        echo("1", "hello from ctxkit"),
        Message::assistant("echoed"),
        echo("2", "anyone there?"),
        Message::assistant("done anyway"),
    ]));
    let agent = Agent::builder().model(model.clone()).mcp(server).build().unwrap();
    let mut thread = Thread::new();

    let out = agent.run(&mut thread, "echo something").await.unwrap();
    assert_eq!(out.reply.content, "echoed");
    let requests = model.requests();
    let seen = last_tool_output(&requests.last().unwrap().messages);
    assert!(seen.contains("hello from ctxkit"), "the model saw: {seen}");
    assert!(
        requests[0].tools.iter().any(|t| t.name == "everything__echo"),
        "the model was offered the server's tools"
    );

    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = agent.run(&mut thread, "and again").await.unwrap();
    assert_eq!(out.reply.content, "done anyway", "the run completes");
    let error = last_tool_output(thread.history());
    assert!(
        error.starts_with("error:") && error.contains("MCP server `everything`"),
        "{error}"
    );
}

#[tokio::test]
async fn a_slow_call_times_out_and_a_long_answer_is_cut() {
    let bin = suites_dir().join("npm/node_modules/.bin/mcp-server-everything");
    let Some(bin) = required(bin, "the npm MCP server suite") else {
        return;
    };
    let server = McpServer::stdio(bin.to_string_lossy(), ["stdio"])
        .name("everything")
        .timeout(std::time::Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let tool = |name: &str| {
        server
            .tools()
            .iter()
            .find(|t| ctxkit::Tool::name(*t) == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };

    // The operation takes a minute; the call gives up at the server's bound.
    let slow = ctxkit::Tool::call(
        tool("everything__trigger-long-running-operation"),
        json!({"duration": 60, "steps": 1}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        slow.contains("MCP server `everything` did not answer within 2s"),
        "{slow}"
    );

    // Echo hands back 150,000 characters; the model is given the first 100,000.
    let long = "é".repeat(150_000);
    let echoed = ctxkit::Tool::call(tool("everything__echo"), json!({ "message": long }))
        .await
        .unwrap();
    let (kept, marker) = echoed.split_at(echoed.len() - "\n[output cut]".len());
    assert_eq!(marker, "\n[output cut]");
    assert_eq!(kept.chars().count(), 100_000);
    assert!(kept.ends_with('é'), "cut on a character boundary");

    // The server is still usable after the timed-out call.
    let short = ctxkit::Tool::call(tool("everything__echo"), json!({"message": "still here"}))
        .await
        .unwrap();
    assert!(short.contains("still here"), "{short}");
}
