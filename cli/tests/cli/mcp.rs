//! `ctxkit mcp` as a client sees it: a process speaking JSON-RPC on standard input and output.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn skills_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../skills"))
}

/// Every line the server prints is a JSON-RPC 2.0 message, even with debug logging on: logs go
/// to standard error.
#[test]
fn every_stdout_line_is_a_json_rpc_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxkit"))
        .args(["mcp", "--skills"])
        .arg(skills_dir())
        .args(["--project", "/repo", "--watch", "0"])
        .current_dir(dir.path())
        .env("CTXKIT_CACHE_DIR", dir.path().join("cache"))
        .env("CTXKIT_MEMORY_DB", dir.path().join("memory.db"))
        .env("CTXKIT_CONFIG", dir.path().join("config.toml"))
        .env("CTXKIT_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    // Send one message; with an id, read lines until its answer arrives.
    let mut exchange = |message: Value| -> Option<Value> {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
        let id = message.get("id")?.clone();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let parsed: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert_eq!(parsed["jsonrpc"], "2.0", "{line}");
            printed.push(parsed.clone());
            if parsed.get("id") == Some(&id) {
                return Some(parsed);
            }
        }
        panic!("the server closed stdout before answering {id}");
    };
    let init = exchange(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    )
    .unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "ctxkit");
    exchange(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 7);
    let call = exchange(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "read_skill", "arguments": {"name": "../../etc/passwd"}}}),
    )
    .unwrap();
    assert_eq!(call["result"]["isError"], true);
    let call = exchange(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "list_skills", "arguments": {}}}),
    )
    .unwrap();
    assert!(
        call["result"]["structuredContent"]["skills"]
            .as_array()
            .unwrap()
            .len()
            > 1
    );
    // An unknown method is refused without repeating it (a token glued to it stays unseen).
    let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
    let unknown = exchange(json!({"jsonrpc": "2.0", "id": 5, "method": format!("x/{token}")})).unwrap();
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert!(!unknown.to_string().contains(token), "{unknown}");
    // A line that is not JSON is answered, and the session goes on.
    writeln!(input, "{{\"jsonrpc\": \"2.0\", \"id\": 6, oops").unwrap();
    input.flush().unwrap();
    let line = lines.next().expect("an answer").unwrap();
    printed.push(serde_json::from_str(&line).unwrap());
    let refused: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    assert_eq!(refused.get("id"), Some(&Value::Null), "{refused}");
    writeln!(input, "{}", json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).unwrap();
    input.flush().unwrap();
    let line = lines.next().expect("an answer").unwrap();
    let pong: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (pong["id"].clone(), pong.get("result").is_some()),
        (json!(7), true),
        "{pong}"
    );
    drop(input);
    // Whatever is printed after the last answer, until the server exits, is a message too.
    for line in lines {
        let line = line.unwrap();
        let parsed: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert_eq!(parsed["jsonrpc"], "2.0");
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.len() >= 4);
}
