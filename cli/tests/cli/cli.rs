//! The `ctxkit` binary: output shapes, exit codes and error sentences.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support;
use support::{isolated, run_with_stdin, stderr, stdout};

fn skills_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills")
}

/// The binary, with an index cache of this test run's own (never the user's), and no
/// embedding model from the environment (one would change the memory ranking under test).
fn ctxkit_command() -> Command {
    static CACHE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| tempfile::tempdir().unwrap());
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxkit"));
    command
        .env("CTXKIT_CACHE_DIR", cache.path())
        .env_remove("CTXKIT_EMBEDDINGS");
    command
}

fn ctxkit(args: &[&str]) -> Output {
    ctxkit_with_stdin(args, None)
}

fn ctxkit_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    ctxkit_with_stdin_bytes(args, stdin.unwrap_or_default().as_bytes())
}

/// Run `ctxkit` in a fresh folder holding its own user config (none, so nothing is trusted),
/// cache and memory database, with no log level from the environment, `stdin` piped in.
fn ctxkit_with_stdin_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    ctxkit_in(dir.path(), args, stdin)
}

#[test]
fn context_json_has_the_documented_shape() {
    let skills = skills_dir();
    let o = ctxkit(&[
        "context",
        "--skills",
        skills.to_str().unwrap(),
        "--json",
        "Say bonjour to Alice",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON object per line");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    assert!(v["system"].as_str().unwrap().contains("## hello-extended"));
    assert_eq!(
        v["messages"],
        serde_json::json!([{"role": "user", "content": "Say bonjour to Alice"}])
    );
    let tool = &v["tools"][0];
    assert_eq!(tool["name"], "read_skill");
    assert!(tool["description"].is_string() && tool["parameters"].is_object());
    let stats = &v["stats"];
    assert_eq!(stats["skills"], serde_json::json!(["hello-extended"]));
    assert_eq!(v["left_out"], serde_json::json!([]), "nothing was left out");
    assert_eq!(stats["memories"], 0);
    let (tokens, full) = (
        stats["tokens"].as_u64().unwrap(),
        stats["tokens_full"].as_u64().unwrap(),
    );
    assert!(tokens > 0 && tokens < full, "{tokens} vs full {full}");
    let provider = &stats["providers"][0];
    assert_eq!(
        (provider["name"].as_str(), provider["outcome"].as_str()),
        (Some("skills"), Some("ok"))
    );
    assert!(provider["elapsed_us"].is_u64());
}

#[test]
fn context_with_instructions_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("AGENTS.md");
    std::fs::write(&file, "Always answer in French.").unwrap();
    // No skills anywhere under the (empty) working directory.
    let o = ctxkit(&[
        "context",
        "--instructions",
        file.to_str().unwrap(),
        "--json",
        "hi",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["system"], "Always answer in French.");
    assert_eq!(v["tools"], serde_json::json!([]));
}

#[test]
fn errors_are_one_sentence_with_exit_code_1() {
    let o = ctxkit(&["context", "--instructions", "/nonexistent/AGENTS.md", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot read `/nonexistent/AGENTS.md`:"),
        "{err}"
    );

    let o = ctxkit(&["context", "--skills", "/nonexistent/skills", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: skills folder `/nonexistent/skills` does not exist or is not a folder\n"
    );

    let o = ctxkit(&["context", "--mode", "sometimes", "hi"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
    assert!(stderr(&o).contains("unknown skill mode `sometimes`"));

    let skills = skills_dir();
    let o = ctxkit(&[
        "skills",
        "--dir",
        skills.to_str().unwrap(),
        "show",
        "../etc/passwd",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no skill is named `../etc/passwd`"));
}

#[test]
fn skills_match_explains_why() {
    let skills = skills_dir();
    let dir = skills.to_str().unwrap();
    let o = ctxkit(&[
        "skills",
        "--dir",
        dir,
        "match",
        "--json",
        "docker compose fails on my c++ build",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["skills"], serde_json::json!(["docker-compose", "cpp-review"]));
    assert_eq!(
        v["why"]["docker-compose"],
        serde_json::json!(["docker", "docker compose"])
    );
    assert_eq!(v["why"]["cpp-review"], serde_json::json!(["c++"]));
    let o = ctxkit(&["skills", "--dir", dir, "match", "Say bonjour to Alice"]);
    let text = stdout(&o);
    assert!(
        text.starts_with("hello-extended") && text.contains("score  1") && text.contains("triggers: bonjour"),
        "{text}"
    );
}

#[test]
fn skills_match_and_context_say_which_form_fired() {
    let skills = skills_dir();
    let dir = skills.to_str().unwrap();
    let message = "I greeted Bob in French yesterday";
    let o = ctxkit(&["skills", "--dir", dir, "match", message]);
    let text = stdout(&o);
    assert!(
        text.starts_with("hello-extended") && text.contains("triggers: greet (as greeted)"),
        "{text}"
    );

    let o = ctxkit(&["skills", "--dir", dir, "match", "--json", message]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["why"]["hello-extended"], serde_json::json!(["greet"]));
    assert_eq!(v["selected"][0]["forms"], serde_json::json!({"greet": "greeted"}));
    // A trigger that also fires as written is explained as written.
    let o = ctxkit(&[
        "skills",
        "--dir",
        dir,
        "match",
        "--json",
        "greet them, they greeted me",
    ]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["selected"][0].get("forms"), None, "{v}");

    let o = ctxkit(&["context", "--skills", dir, "--json", message]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["stats"]["skills"], serde_json::json!(["hello-extended"]));
    let selected = &v["selected"][0];
    assert_eq!(
        (&selected["name"], &selected["reason"], &selected["forms"]),
        (
            &"hello-extended".into(),
            &"triggered".into(),
            &serde_json::json!({"greet": "greeted"})
        )
    );
    let o = ctxkit(&["context", "--skills", dir, message]);
    assert!(
        stdout(&o).contains("triggered hello-extended: greet (as greeted)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn skills_match_batch_keeps_input_order() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    let batch = dir.path().join("in.jsonl");
    std::fs::write(
        &batch,
        "{\"id\": 1, \"text\": \"Say bonjour\"}\n{\"id\": \"b\", \"text\": \"What is 2+2?\"}\nnot json\n{\"id\": 3, \"text\": \"git rebase\"}\n",
    )
    .unwrap();
    let o = ctxkit(&[
        "skills",
        "--dir",
        skills.to_str().unwrap(),
        "match",
        "--batch",
        batch.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "a bad line fails the run");
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        (lines[0]["id"].clone(), lines[0]["skills"].clone()),
        (1.into(), serde_json::json!(["hello-extended"]))
    );
    assert_eq!(
        (lines[1]["id"].clone(), lines[1]["skills"].clone()),
        ("b".into(), serde_json::json!([]))
    );
    assert_eq!(lines[2]["line"], 3);
    assert_eq!(lines[3]["skills"], serde_json::json!(["git-workflow"]));
    assert!(lines[0]["elapsed_us"].is_u64());
    assert!(stderr(&o).contains("1 lines of"), "{}", stderr(&o));
}

#[test]
fn skills_validate_reports_and_exits_1_on_skips() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("SKILL.md"), "---\nname: Good\ndescription: d\n---\n").unwrap();
    let d = dir.path().to_str().unwrap();
    let o = ctxkit(&["skills", "--dir", d, "validate"]);
    assert_eq!(o.status.code(), Some(0), "warnings alone pass");
    assert!(
        stdout(&o).contains("SKILL.md:2: warning: name `Good`"),
        "{}",
        stdout(&o)
    );
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("SKILL.md"), "---\nname: bad\n---\n").unwrap();
    let o = ctxkit(&["skills", "--dir", d, "validate"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("bad/SKILL.md:1: error: no `description`"), "{out}");
    assert!(out.ends_with("1 skills loaded, 2 warnings, 1 skipped\n"), "{out}");
}

#[test]
fn context_lazy_shows_every_message_the_run_sends() {
    let skills = skills_dir();
    let o = ctxkit(&[
        "context",
        "--lazy",
        "--no-memory",
        "--skills",
        skills.to_str().unwrap(),
        "--json",
        "Say bonjour to Alice",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(
        v["system"].as_str().unwrap().starts_with("[System Prompt]"),
        "{v}"
    );
    // The matched skill's body goes in its own message just before the user's: shown, and
    // counted in the stats.
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("## hello-extended"),
        "{messages:?}"
    );
    assert_eq!(messages[1]["content"], "Say bonjour to Alice");
    assert_eq!(v["stats"]["skills"], serde_json::json!(["hello-extended"]));
}

#[test]
fn chat_reads_lines_when_piped() {
    let skills = skills_dir();
    let input = "Say bonjour to Alice\n/stats\n/compact\n/reset\nWhat is 2+2?\n/new\n";
    let o = ctxkit_with_stdin(&["chat", "--skills", skills.to_str().unwrap()], Some(input));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("[dry-run] 2 messages") && lines[0].contains("Skills: hello-extended."),
        "{out}"
    );
    assert!(
        lines[1].starts_with("tokens: ") && lines[1].contains("(full mode: "),
        "{out}"
    );
    assert!(out.contains("(compacted: "), "{out}");
    assert!(out.contains("(reset: "), "{out}");
    assert!(out.contains("Skills: none."), "{out}");
    assert!(out.contains("(new conversation)"), "{out}");
}

#[test]
fn chat_bounds_the_history_it_sends() {
    let input = "tell me a long story about a dragon who lived in the mountains and loved gold\n\
                 second question\n";
    let sent = |bound: &str| -> Vec<String> {
        let o = ctxkit_with_stdin(&["chat", "--no-memory", "--history-tokens", bound], Some(input));
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
            .lines()
            .filter(|l| l.starts_with("[dry-run] "))
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect()
    };
    // Unbounded, the second request carries the first turn; within 30 tokens only the new
    // question fits beside the system message.
    assert_eq!(sent("0"), ["[dry-run] 2 messages", "[dry-run] 4 messages"]);
    assert_eq!(sent("30"), ["[dry-run] 2 messages", "[dry-run] 2 messages"]);
    // The project's config sets it when the flag does not.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".ctxkit")).unwrap();
    std::fs::write(
        dir.path().join(".ctxkit/config.toml"),
        "[chat]\nhistory_tokens = 30\n",
    )
    .unwrap();
    let o = ctxkit_in(dir.path(), &["chat", "--no-memory"], input);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let requests: Vec<&str> = out.lines().filter(|l| l.starts_with("[dry-run] ")).collect();
    assert!(requests[1].starts_with("[dry-run] 2 messages"), "{requests:?}");
}

#[test]
fn bench_tokens_reproduces_the_adr_shape() {
    let skills = skills_dir();
    let o = ctxkit(&["bench", "tokens", "--skills", skills.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    let tokens = |row: &Value, mode: &str| row[mode].as_u64().unwrap() as f64;
    for row in [&rows[0], &rows[2]] {
        // "What is 2+2?" and "Calculate pi": at least 66 % below full in every mode.
        for mode in ["triggered", "on_demand", "hybrid"] {
            assert!(tokens(row, mode) <= 0.34 * tokens(row, "full"), "{row}");
        }
    }
    let bonjour = &rows[1];
    assert_eq!(bonjour["query"], "Say bonjour to Alice");
    assert!(tokens(bonjour, "hybrid") < tokens(bonjour, "full"));
    assert_eq!(bonjour["skills"], serde_json::json!(["hello-extended"]));
}

/// A memory's text holding a line break is shown on its own row, escaped: it cannot forge a
/// row of `memory list` or a field of `memory show`.
#[test]
fn a_line_break_in_a_memory_cannot_forge_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = vec!["memory", "--db", db, "--project", "/p"];
        all.extend_from_slice(args);
        ctxkit(&all)
    };
    let o = with(&["add", "Use pnpm\nm-forged  [fact] forged row  (importance 1.00)"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let list = stdout(&with(&["list"]));
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains("Use pnpm\\u{a}m-forged"), "{list}");
    let shown = stdout(&with(&["get", &id]));
    assert!(shown.contains("content:"), "{shown}");
    assert!(!shown.lines().any(|l| l.starts_with("m-forged")), "{shown}");
}

#[test]
fn memory_commands_round_trip_and_refuse_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = vec!["memory", "--db", db, "--project", "/p"];
        all.extend_from_slice(args);
        ctxkit(&all)
    };
    let o = with(&["add", "--category", "preference", "Use pnpm, not npm"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    assert!(!id.is_empty());

    let o = with(&["search", "--json", "npm install"]);
    let hit: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(
        (hit["id"].as_str(), hit["category"].as_str()),
        (Some(id.as_str()), Some("preference"))
    );
    assert!(hit["score"].as_f64().unwrap() > 0.0);

    for (secret, value) in [
        ("token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "ghp_0123"),
        (
            "SECRET_KEY_BASE=0d7a2b9c4e6f8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f",
            "0d7a2b9c",
        ),
        (
            "run curl -u admin:Sup3rS3cret https://api.example.com",
            "Sup3rS3cret",
        ),
        ("JWT_SECRET_KEY=s3cr3tJwtK3yValue99", "s3cr3tJwt"),
    ] {
        let o = with(&["add", secret]);
        assert_eq!(o.status.code(), Some(1), "{secret}");
        assert!(!stderr(&o).contains(value), "the secret is not echoed");
        assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    }

    let export = dir.path().join("e.jsonl");
    assert!(with(&["export", export.to_str().unwrap()]).status.success());
    assert!(with(&["import", export.to_str().unwrap()]).status.success());
    let stats: Value = serde_json::from_str(stdout(&with(&["stats", "--json"])).trim()).unwrap();
    assert_eq!(
        stats["total"], 1,
        "the secret was not stored and importing twice adds nothing"
    );

    // Another project sees nothing.
    let o = ctxkit(&[
        "memory",
        "--db",
        db,
        "--project",
        "/other",
        "search",
        "--json",
        "npm",
    ]);
    assert_eq!(stdout(&o).trim(), "");
}

// ---------------------------------------------------------------------------------------------
// `chat` against a model server: exit status, credentials, invalid UTF-8, session end.

/// One request a stand-in model server received.
#[derive(Debug)]
pub(crate) struct Exchange {
    /// Header names lower-cased.
    headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Exchange {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) type Exchanges = std::sync::Arc<std::sync::Mutex<Vec<Exchange>>>;

/// A model server on 127.0.0.1 whose answer to request n (counted from 0, given its body) is
/// `answer(n, body)`: a status and a body, sent as JSON, or as a stream of server-sent events
/// when it starts with `event:`. Returns its address (`127.0.0.1:PORT`) and the requests
/// received.
pub(crate) fn stand_in(
    answer: impl Fn(usize, &Value) -> (u16, String) + Send + 'static,
) -> (String, Exchanges) {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let exchanges = Exchanges::default();
    let log = exchanges.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(30)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
                }
            }
            let length = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap_or(0));
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, reply) = {
                let mut log = log.lock().unwrap();
                let reply = answer(log.len(), &body);
                log.push(Exchange { headers, body });
                reply
            };
            let kind = if reply.starts_with("event:") {
                "text/event-stream"
            } else {
                "application/json"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} Scripted\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (addr, exchanges)
}

/// An OpenAI-compatible stand-in: request n gets `replies[n]` (the last one repeats), a
/// `(200, content)` as a chat completion and any other status as an error.
fn model_server(replies: Vec<(u16, &'static str)>) -> (String, Exchanges) {
    stand_in(move |n, _| {
        let (status, content) = replies[n.min(replies.len() - 1)];
        let reply = if status == 200 {
            serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
        } else {
            serde_json::json!({"error": {"message": content}})
        };
        (status, reply.to_string())
    })
}

/// A reply of the Anthropic Messages API as the stream of events it sends, with the usage a
/// server with a prompt cache reports.
fn anthropic_events(content: Vec<Value>, usage: Value) -> String {
    let mut events = vec![serde_json::json!({"type": "message_start", "message": {
        "id": "msg", "type": "message", "role": "assistant", "content": [], "usage": usage}})];
    for (index, block) in content.into_iter().enumerate() {
        events
            .push(serde_json::json!({"type": "content_block_start", "index": index, "content_block": block}));
        events.push(serde_json::json!({"type": "content_block_stop", "index": index}));
    }
    events.push(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}));
    events.push(serde_json::json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

#[test]
fn chat_exits_1_when_a_message_fails_and_goes_on_without_showing_url_credentials() {
    let skills = skills_dir();
    let (addr, bodies) = model_server(vec![(400, "no such model here"), (200, "second answer")]);
    let base = format!("http://user:chat-secret-99@{addr}/v1?api_key=sk-chat-query-77");
    let o = ctxkit_with_stdin_bytes(
        &[
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            // Model failures only: no memory, so no extraction at the session's end.
            "--no-memory",
        ],
        b"first\nsecond\n",
    );

    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "second answer\n");
    assert_eq!(
        stderr(&o),
        format!(
            "error: model `openai:test-model` failed: http://user:***@{addr}/v1/chat/completions?api_key=*** \
             answered HTTP 400 Bad Request: no such model here\n"
        )
    );
    assert_eq!(bodies.lock().unwrap().len(), 2, "the second line is still sent");
}

#[test]
fn chat_exits_1_when_the_model_is_unreachable() {
    let skills = skills_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let o = ctxkit_with_stdin_bytes(
        &[
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            // Model failures only: no memory, so no extraction at the session's end.
            "--no-memory",
        ],
        b"hello\n/stats\n",
    );

    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "no request yet\n");
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "error: model `openai:test-model` failed: could not connect to {base}/chat/completions after 4 attempts: "
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let help = stdout(&ctxkit(&["chat", "--help"]));
    assert!(help.contains("the exit status is then 1"), "{help}");
}

#[test]
fn a_good_chat_exits_0_when_the_session_end_cannot_read_the_extraction() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    // The answer, then an extraction reply with no JSON in it, as small models give.
    let (addr, bodies) = model_server(vec![
        (200, "Bonjour Alice!"),
        (200, "Sure! Here is what I learned: the user likes French."),
    ]);
    let base = format!("http://{addr}/v1");
    let o = ctxkit_with_stdin_bytes(
        &[
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            "--memory",
            db.to_str().unwrap(),
        ],
        b"say bonjour to Alice\n",
    );
    assert_eq!(
        bodies.lock().unwrap().len(),
        2,
        "the session end asked for memories"
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Bonjour Alice!\n");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning: the session ended, but hook `memory` failed in session_end: cannot read the memory extraction reply"),
        "{err}"
    );
    assert!(!err.contains("ERROR") && !err.contains("error:"), "{err}");
}

#[test]
fn memory_extraction_at_the_session_end_can_be_switched_off() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let chat = |extra: &[&str], config: &str| {
        let (addr, bodies) = model_server(vec![(200, "Bonjour Alice!"), (200, "{\"memories\": []}")]);
        let base = format!("http://{addr}/v1");
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".ctxkit")).unwrap();
        std::fs::write(project.path().join(".ctxkit/config.toml"), config).unwrap();
        let mut args = vec![
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            "--memory",
            db.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = ctxkit_in(project.path(), &args, "say bonjour to Alice\n");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let asked = bodies.lock().unwrap().len();
        asked
    };
    assert_eq!(chat(&[], ""), 2, "the session end asks for memories by default");
    assert_eq!(chat(&["--no-extract"], ""), 1, "--no-extract");
    assert_eq!(
        chat(&[], "[memory]\nextract = false\n"),
        1,
        "[memory] extract = false"
    );
}

#[test]
fn a_project_cannot_turn_back_on_what_the_user_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    // The user's file (the isolated `CTXKIT_CONFIG`) turns both off; the project's turns them on.
    std::fs::write(
        dir.path().join("config.toml"),
        "[memory]\nextract = false\n[learn]\nenabled = false\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".ctxkit")).unwrap();
    std::fs::write(
        dir.path().join(".ctxkit/config.toml"),
        "[memory]\nextract = true\n[learn]\nenabled = true\n",
    )
    .unwrap();
    let (addr, bodies) = model_server(vec![(200, "Bonjour Alice!"), (200, "{\"memories\": []}")]);
    let base = format!("http://{addr}/v1");
    let o = ctxkit_in(
        dir.path(),
        &["chat", "--model", "openai:test-model", "--base-url", &base],
        "say bonjour to Alice\n",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(bodies.lock().unwrap().len(), 1, "the user's off wins");
}

#[test]
fn a_chat_with_claude_caches_its_stable_prefix_and_pairs_tool_results_by_id() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    let usage = |write: u64, read: u64| serde_json::json!({"input_tokens": 20, "cache_creation_input_tokens": write, "cache_read_input_tokens": read, "output_tokens": 1});
    // Claude reads a second skill, then answers; the extraction reply is plain text, which
    // a stand-in ignoring the forced tool would give.
    let (addr, exchanges) = stand_in(move |n, _| {
        let (content, usage) = match n {
            0 => (
                vec![
                    serde_json::json!({"type": "tool_use", "id": "toolu_cli_1", "name": "read_skill", "input": {"name": "git-workflow"}}),
                ],
                usage(1800, 0),
            ),
            1 => (
                vec![serde_json::json!({"type": "text", "text": "Bonjour Alice!"})],
                usage(60, 1800),
            ),
            _ => (
                vec![serde_json::json!({"type": "text", "text": "Nothing worth keeping."})],
                usage(0, 0),
            ),
        };
        (200, anthropic_events(content, usage))
    });
    let mut command = isolated(dir.path());
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-cli-secret-1")
        .current_dir(dir.path())
        .args([
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "anthropic:claude-test",
        ])
        .args(["--base-url", &format!("http://{addr}")]);
    let o = run_with_stdin(&mut command, b"say bonjour to Alice\n/stats\n");

    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("Bonjour Alice!\n"), "{out}");
    assert!(
        out.contains("model usage over 2 calls: 40 input tokens, 1800 read from the prompt cache, 1860 written to it, 14 output"),
        "{out}"
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "only the unreadable extraction: {err}");
    assert!(err.starts_with("warning: the session ended, but "), "{err}");
    assert!(!format!("{out}{err}").contains("sk-ant-cli-secret-1"));

    let exchanges = exchanges.lock().unwrap();
    assert_eq!(exchanges.len(), 3, "a tool round, the answer and the extraction");
    for e in exchanges.iter() {
        assert_eq!(e.header("x-api-key"), Some("sk-ant-cli-secret-1"));
        assert_eq!(e.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(e.header("authorization"), None);
        let roles: Vec<&str> = e.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(!roles.contains(&"system"), "{roles:?}");
    }
    // The matched skill is in the top-level system text, after a cache breakpoint that ends the
    // part every request repeats; the breakpoint falls at the same text in both requests.
    let first = &exchanges[0].body;
    let system = first["system"].as_array().unwrap();
    assert_eq!(
        system[0]["cache_control"],
        serde_json::json!({"type": "ephemeral"})
    );
    assert!(system[0]["text"]
        .as_str()
        .unwrap()
        .contains("## Available skills"));
    assert!(system[1]["text"].as_str().unwrap().contains("## hello-extended"));
    assert_eq!(exchanges[1].body["system"][0], system[0]);
    let read_skill = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_skill")
        .unwrap();
    assert_eq!(read_skill["input_schema"]["type"], "object");
    assert!(read_skill["input_schema"]["properties"]["name"].is_object());
    // The body read goes back under the call's id.
    let messages = exchanges[1].body["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_cli_1");
    assert!(
        result["content"].as_str().unwrap().contains("# Git workflow"),
        "{result}"
    );
    // The extraction asks for its reply through a forced tool.
    assert_eq!(
        exchanges[2].body["tool_choice"],
        serde_json::json!({"type": "tool", "name": "reply"})
    );
}

#[test]
fn the_model_bounds_are_set_on_the_command_line() {
    let skills = skills_dir();
    // A 5 KB reply, then one that takes three seconds.
    let (addr, _) = stand_in(|n, _| {
        if n == 1 {
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
        let reply = serde_json::json!({"choices": [{"message": {"content": "x".repeat(5_000)}}]});
        (200, reply.to_string())
    });
    let base = format!("http://{addr}/v1");
    let o = ctxkit_with_stdin_bytes(
        &[
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--no-memory",
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "--max-response-bytes",
            "4096",
            "--model-timeout",
            "1",
        ],
        b"first\nsecond\n",
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].contains("larger than the 4 KiB response size limit"),
        "{err}"
    );
    assert!(lines[1].contains("within the 1s request timeout"), "{err}");
}

#[test]
fn chat_reads_invalid_utf8_lossily_and_still_ends_the_session() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let (addr, bodies) = model_server(vec![(200, "[]")]);
    let base = format!("http://{addr}/v1");
    let o = ctxkit_with_stdin_bytes(
        &[
            "chat",
            "--skills",
            skills.to_str().unwrap(),
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            "--memory",
            db.to_str().unwrap(),
        ],
        b"hello\n\xff\xfe oops\n/quit\nnever sent\n",
    );

    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "[]\n[]\n");
    assert_eq!(
        stderr(&o),
        "warning: line 2 of standard input is not valid UTF-8; its invalid bytes were replaced with U+FFFD\n"
    );
    let bodies = bodies.lock().unwrap();
    assert_eq!(
        bodies.len(),
        3,
        "two messages, then the session-end extraction: {bodies:?}"
    );
    let last_message = |b: &Value| b["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(last_message(&bodies[1].body), "\u{FFFD}\u{FFFD} oops");
    // The session end's memory extraction: one prompt quoting the conversation.
    let extraction = bodies[2].body["messages"].as_array().unwrap();
    assert_eq!(extraction.len(), 1, "{extraction:?}");
    assert!(extraction[0]["content"].as_str().unwrap().contains("oops"));
    assert!(!bodies.iter().any(|b| b.body.to_string().contains("never sent")));
}

/// A skills root with one skill whose name, description and body carry terminal escapes, and
/// whose `tools.json` offers `ls`.
fn hostile_skills(root: &Path) -> PathBuf {
    let dir = root.join("skills/painter");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: painter\ndescription: \"Paints \\e[31mred\\e]0;owned\\a\"\ntriggers: [paint]\n---\nBody \x1b[2J cleared.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools.json"),
        r#"{"allowlist": ["ls"], "tools": [{"name": "list_here", "command": "ls"}]}"#,
    )
    .unwrap();
    root.join("skills")
}

#[test]
fn terminal_escapes_in_skills_are_printed_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = hostile_skills(tmp.path());
    let skills = skills.to_str().unwrap();
    for args in [
        vec!["skills", "list", "--dir", skills],
        vec!["skills", "show", "painter", "--dir", skills],
        vec!["context", "--skills", skills, "paint it"],
    ] {
        let o = ctxkit(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            !out.contains('\x1b') && !out.contains('\x07'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("\\u{1b}"), "{args:?}: {out}");
    }
}

/// A line break in a skill's name, description, path, triggers or a diagnostic is shown as
/// `\u{a}`: a hostile skill cannot print a row of its own in a listing.
#[test]
fn line_breaks_in_skill_fields_cannot_forge_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("skills/forger\nFAKE-ROW path");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: \"forger\\nFAKE-ROW   project    100   9 triggers  Trusted\"\n\
         description: \"Forges\\nFAKE-ROW description\\rFAKE-ROW\\tcarriage\"\n\
         triggers: [\"paint\", \"pa\\nFAKE-ROW trigger\"]\n---\nBody line one\nBody line two\n",
    )
    .unwrap();
    let skills = tmp.path().join("skills");
    let skills = skills.to_str().unwrap();
    let name = "forger\nFAKE-ROW   project    100   9 triggers  Trusted";
    for args in [
        vec!["skills", "list", "--dir", skills],
        vec!["skills", "show", name, "--dir", skills],
        vec!["skills", "validate", "--dir", skills],
        vec!["skills", "match", "paint it", "--dir", skills],
        vec!["context", "--no-memory", "--skills", skills, "paint it"],
    ] {
        let o = ctxkit(&args);
        let out = stdout(&o);
        assert!(!out.is_empty(), "{args:?}: {}", stderr(&o));
        // `context` shows the request's system text as the text it is (what the model reads);
        // its listings come after.
        let out = out
            .split_once("=== tools ===")
            .map_or(out.as_str(), |(_, listings)| listings);
        assert!(!out.lines().any(|l| l.starts_with("FAKE-ROW")), "{args:?}: {out}");
        assert!(out.contains("\\u{a}FAKE-ROW"), "{args:?}: {out}");
    }
    // A body is text: its lines stay lines.
    let out = stdout(&ctxkit(&["skills", "show", name, "--dir", skills]));
    assert!(out.contains("Body line one\nBody line two"), "{out}");
}

#[test]
fn skill_tools_are_offered_only_when_the_user_trusts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = hostile_skills(tmp.path());
    let tools = |extra: &[&str], config: Option<&str>| -> Vec<String> {
        let mut args = vec!["context", "--skills", skills.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        args.push("paint it");
        let mut command = ctxkit_command();
        command
            .args(&args)
            .current_dir(tmp.path())
            .env("CTXKIT_MEMORY_DB", tmp.path().join("memory.db"));
        let config_file = tmp.path().join("user-config.toml");
        match config {
            Some(text) => std::fs::write(&config_file, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&config_file);
            }
        }
        let o = command.env("CTXKIT_CONFIG", &config_file).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    // A project config cannot trust its own skills: it is refused, and nothing runs.
    std::fs::create_dir_all(tmp.path().join(".ctxkit")).unwrap();
    std::fs::write(
        tmp.path().join(".ctxkit/config.toml"),
        "[tools]\ntrust = [\"painter\"]\n",
    )
    .unwrap();
    let o = ctxkit_command()
        .args(["context", "--skills", skills.to_str().unwrap(), "paint it"])
        .current_dir(tmp.path())
        .env("CTXKIT_CONFIG", tmp.path().join("none.toml"))
        .env("CTXKIT_MEMORY_DB", tmp.path().join("memory.db"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("only the user config may set"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(tmp.path().join(".ctxkit/config.toml")).unwrap();
    assert!(!tools(&[], None).contains(&"list_here".to_string()));
    assert!(tools(&["--trust-tools", "painter"], None).contains(&"list_here".to_string()));
    let root = format!("{}/", skills.display());
    assert!(tools(&["--trust-tools", &root], None).contains(&"list_here".to_string()));
    let config = format!("[tools]\ntrust = [\"{root}\"]\n");
    assert!(tools(&[], Some(&config)).contains(&"list_here".to_string()));

    // The user config applies in every project: it may not trust a name, which any
    // project could claim.
    let config_file = tmp.path().join("by-name.toml");
    std::fs::write(&config_file, "[tools]\ntrust = [\"painter\"]\n").unwrap();
    let o = ctxkit_command()
        .args(["context", "--skills", skills.to_str().unwrap(), "paint it"])
        .env("CTXKIT_CONFIG", &config_file)
        .env("CTXKIT_MEMORY_DB", tmp.path().join("memory.db"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("trusts only absolute folders"),
        "{}",
        stderr(&o)
    );
}

#[cfg(unix)]
#[test]
fn a_skill_linking_to_the_environment_leaks_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    std::fs::create_dir_all(skills.join("env")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", skills.join("env/SKILL.md")).unwrap();
    std::fs::create_dir_all(skills.join("ok")).unwrap();
    std::fs::write(
        skills.join("ok/SKILL.md"),
        "---\nname: ok\ndescription: Fine\n---\nFine.\n",
    )
    .unwrap();
    for args in [
        vec![
            "context",
            "--skills",
            skills.to_str().unwrap(),
            "--mode",
            "full",
            "hello",
        ],
        vec!["skills", "show", "env", "--dir", skills.to_str().unwrap()],
        vec!["skills", "validate", "--dir", skills.to_str().unwrap()],
    ] {
        let o = ctxkit_command()
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test-must-not-appear")
            .env("CTXKIT_MEMORY_DB", tmp.path().join("memory.db"))
            .output()
            .unwrap();
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains("sk-test-must-not-appear"), "{args:?}: {all}");
    }
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    // The reader is gone before the first line is written, so the write fails with EPIPE.
    let mut child = ctxkit_command()
        .args([
            "skills",
            "match",
            "--batch",
            "/dev/stdin",
            "--dir",
            skills_dir().to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    for _ in 0..100 {
        if stdin
            .write_all(b"{\"id\": 1, \"text\": \"Say bonjour\"}\n")
            .is_err()
        {
            break;
        }
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[cfg(unix)]
#[test]
fn help_into_a_closed_pipe_ends_quietly() {
    // A pipe whose reader is gone before the program starts: its first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = ctxkit_command().arg("--help").stdout(writer).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

// ----- memory: regressions of the security review -------------------------------------------

/// `ctxkit memory --db DB --project P ARGS…`.
fn mem(db: &str, project: &str, args: &[&str]) -> Output {
    let mut all = vec!["memory", "--db", db, "--project", project];
    all.extend_from_slice(args);
    ctxkit(&all)
}

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn memory_undo_in_one_project_never_touches_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let o = mem(db, "/a", &["add", "Staging runs on port 8443"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let x = stdout(&o).trim().to_string();
    let export = dir.path().join("a.jsonl");
    assert!(mem(db, "/a", &["export", export.to_str().unwrap()])
        .status
        .success());
    assert!(mem(db, "/a", &["forget", &x]).status.success());
    // B imports A's export: same content, but never A's id.
    let o = mem(db, "/b", &["import", export.to_str().unwrap()]);
    assert!(stdout(&o).contains("1 under new ids"), "{}", stdout(&o));
    let b = json_lines(&mem(db, "/b", &["list", "--json"]));
    assert_eq!(b.len(), 1);
    assert_ne!(b[0]["id"].as_str(), Some(x.as_str()));

    let a_history = json_lines(&mem(db, "/a", &["history", "--json", &x]));
    let ids: Vec<String> = a_history.iter().map(|h| h["id"].to_string()).collect();
    assert_eq!(ids.len(), 2, "insert and delete");
    // B can't see or undo A's entries.
    let o = mem(db, "/b", &["undo", &ids[1]]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!("error: no memory history entry {} in project `/b`\n", ids[1])
    );
    assert_eq!(mem(db, "/b", &["history", &x]).status.code(), Some(1));
    // A's undos act on A only.
    assert!(mem(db, "/a", &["undo", &ids[1]]).status.success());
    assert!(mem(db, "/a", &["undo", &ids[0]]).status.success());
    assert_eq!(json_lines(&mem(db, "/a", &["list", "--json"])).len(), 0);
    assert_eq!(
        json_lines(&mem(db, "/b", &["list", "--json"])),
        b,
        "B's memory is untouched"
    );
}

#[test]
fn usage_errors_never_echo_a_secret_argument() {
    let body = "MIIEowIBAAKCAQEA7bq9xw";
    let key = format!("-----BEGIN RSA {}-----{body}", "PRIVATE KEY");
    let token = format!("ghp_{}", "Zx9Yw8Vu7T".repeat(4));
    for args in [
        vec!["memory", "add", key.as_str()],
        vec!["memory", "add", "--bogus", token.as_str()],
        vec![
            "memory",
            "--project",
            "/p",
            "add",
            "--category",
            token.as_str(),
            "x",
        ],
    ] {
        let o = ctxkit(&args);
        assert_eq!(o.status.code(), Some(2), "usage errors exit 2: {args:?}");
        let err = stderr(&o);
        assert!(err.starts_with("error:"), "{err}");
        assert!(!err.contains(body) && !err.contains("BEGIN RSA"), "{err}");
        assert!(!err.contains(&token[4..]), "{err}");
        assert!(stdout(&o).is_empty());
    }
    let err = stderr(&ctxkit(&["memory", "add", &key]));
    assert!(err.contains("[REDACTED:pem-private-key]"), "{err}");
    // Help and version still print to stdout and exit 0.
    for flag in ["--help", "--version"] {
        let o = ctxkit(&[flag]);
        assert_eq!(o.status.code(), Some(0));
        assert!(!stdout(&o).is_empty() && stderr(&o).is_empty());
    }
    // An ordinary usage error is unchanged.
    let o = ctxkit(&["memory", "frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'frobnicate'"), "{}", stderr(&o));
}

/// A mistyped server URL is refused in one sentence, without its password, and never becomes
/// a SQLite file in folders named after it.
#[test]
fn a_database_url_of_another_scheme_is_refused_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgress://ann:s3cret@db/mem";
    let runs = [
        isolated(dir.path())
            .args(["memory", "list"])
            .env("CTXKIT_MEMORY_DB", url)
            .current_dir(dir.path())
            .output()
            .unwrap(),
        isolated(dir.path())
            .args(["memory", "--db", url, "list"])
            .current_dir(dir.path())
            .output()
            .unwrap(),
        isolated(dir.path())
            .args(["context", "--memory", url, "hello"])
            .current_dir(dir.path())
            .output()
            .unwrap(),
    ];
    for o in runs {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("neither a SQLite file nor a postgres:// URL"),
            "{err}"
        );
        assert!(!err.contains("s3cret") && err.lines().count() == 1, "{err}");
    }
    assert!(
        !dir.path().join("postgress:").exists(),
        "no folder named after the URL"
    );
}

/// A libpq key/value connection string is not a file name: refused in one sentence without
/// its password, and no SQLite file named after it appears.
#[test]
fn a_key_value_connection_string_is_refused_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    for db in [
        "host=db.internal password=hunter2 user=ann dbname=mem",
        "password='hunter2 x' host=db",
    ] {
        let o = isolated(dir.path())
            .args(["memory", "--db", db, "list"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("key/value connection string") && err.lines().count() == 1,
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
    }
    let made: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("hunter2"))
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

/// A password with a tab in it is still hidden in the connection error.
#[test]
fn a_url_password_with_a_tab_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://ann:hun\tter2@127.0.0.1:{port}/mem?connect_timeout=2");
    let o = isolated(dir.path())
        .args(["memory", "--db", &url, "list"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("hun") && !err.contains("ter2"), "{err}");
}

#[test]
fn memory_import_refuses_crafted_counters_and_search_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let record = |count: &str| {
        format!(
            "{{\"kind\":\"memory\",\"id\":\"c1\",\"project_path\":\"/p\",\"category\":\"fact\",\"content\":\"Workers poll the queue\",\"keywords\":[],\"importance\":0.5,\"access_count\":{count},\"source_session_id\":null,\"source_context\":null,\"created_at\":1,\"updated_at\":1,\"last_accessed_at\":1}}\n"
        )
    };
    let file = dir.path().join("in.jsonl");
    std::fs::write(&file, record("9223372036854775807")).unwrap();
    let o = mem(db, "/p", &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 1") && err.contains("access_count"), "{err}");

    std::fs::write(&file, record("1000000000000")).unwrap();
    assert!(mem(db, "/p", &["import", file.to_str().unwrap()])
        .status
        .success());
    for _ in 0..2 {
        let o = mem(db, "/p", &["search", "--json", "workers queue"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(json_lines(&o).len(), 1);
    }
    let o = mem(db, "/p", &["get", "--json", "c1"]);
    assert_eq!(json_lines(&o)[0]["access_count"], 1_000_000_000_000i64);
    assert!(mem(db, "/p", &["stats"]).status.success());
}

#[test]
fn memory_prune_refuses_a_threshold_add_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    assert!(mem(db, "/p", &["add", "--importance", "0.9", "Keep this"])
        .status
        .success());
    let add = mem(db, "/p", &["add", "--importance", "2", "Too much"]);
    let prune = mem(db, "/p", &["prune", "--min-importance", "2"]);
    for o in [&add, &prune] {
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            stderr(o),
            "error: invalid memory: importance 2 is outside 0.0-1.0\n"
        );
    }
    let stats: Value = serde_json::from_str(stdout(&mem(db, "/p", &["stats", "--json"])).trim()).unwrap();
    assert_eq!(stats["total"], 1, "the refused prune deleted nothing");
}

#[test]
fn memory_text_output_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let hostile = "Deploys \x1b[2J\x1b]0;owned\x07 use \u{202e}pnpm\r";
    let o = mem(db, "/p", &["add", "--keywords", "deploys,\x1b[31mred", hostile]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    for args in [
        vec!["list"],
        vec!["search", "deploys pnpm"],
        vec!["get", id.as_str()],
        vec!["history"],
        vec!["forget", id.as_str()],
    ] {
        let o = mem(db, "/p", &args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("Deploys"), "{args:?}: {out}");
        assert!(
            !out.contains('\x1b')
                && !out.contains('\x07')
                && !out.contains('\r')
                && !out.contains('\u{202e}'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("\\u{1b}[2J"), "{args:?}: {out}");
    }
}

/// Run the binary as an unprivileged user when this is root (root writes through file
/// modes); `None` when that is not possible here.
fn ctxkit_unprivileged(cwd: &Path, args: &[&str]) -> Option<Output> {
    let bin = env!("CARGO_BIN_EXE_ctxkit");
    let root = std::fs::OpenOptions::new()
        .write(true)
        .open(cwd.join("m.db"))
        .is_ok();
    let mut cmd = if root {
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let mut c = Command::new(setpriv);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    let o = cmd
        .args(args)
        .current_dir(cwd)
        .env("CTXKIT_MEMORY_DB", cwd.join("never-used.db"))
        .env("CTXKIT_CACHE_DIR", cwd.join("cache"))
        // Not root's config, which the unprivileged user may not read.
        .env("CTXKIT_CONFIG", cwd.join("no-config.toml"))
        .env_remove("CTXKIT_EMBEDDINGS")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    Some(o)
}

#[cfg(unix)]
#[test]
fn memory_read_only_database_answers_reads_and_refuses_writes() {
    use std::os::unix::fs::PermissionsExt;
    let outer = tempfile::tempdir().unwrap();
    let folder = outer.path().join("ro");
    std::fs::create_dir(&folder).unwrap();
    let db = folder.join("m.db");
    let db_arg = db.to_str().unwrap();
    let o = mem(db_arg, "/p", &["add", "The docs are built with mdBook"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    // A read-only file in a read-only folder, readable by anyone.
    std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["memory", "--db", "m.db", "--project", "/p"];
        all.extend_from_slice(args);
        ctxkit_unprivileged(&folder, &all)
    };
    let Some(o) = run(&["list"]) else {
        crate::suites::skipped(
            "the read-only database test as an unprivileged user",
            "`setpriv` (this is root)",
        );
        return;
    };
    assert!(o.status.success(), "list: {}", stderr(&o));
    assert!(stdout(&o).contains("mdBook"));
    for args in [
        vec!["search", "docs mdbook"],
        vec!["get", id.as_str()],
        vec!["stats"],
        vec!["export"],
        vec!["history"],
    ] {
        let o = run(&args).unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stdout(&o).is_empty(), "{args:?}");
    }
    for args in [vec!["add", "another"], vec!["forget", id.as_str()], vec!["prune"]] {
        let o = run(&args).unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr(&o),
            "error: memory database m.db is read-only (the file or its folder cannot be written), so nothing was changed\n",
            "{args:?}"
        );
    }
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn context_is_a_preview_that_leaves_the_memory_database_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    assert!(mem(db, "/p", &["add", "Always use pnpm, not npm"])
        .status
        .success());
    let export = |name: &str| {
        let file = dir.path().join(name);
        assert!(mem(db, "/p", &["export", file.to_str().unwrap()])
            .status
            .success());
        std::fs::read_to_string(file).unwrap()
    };
    let before = export("before.jsonl");
    for message in [
        "How do I install lodash with npm?",
        "remember that the staging port is 8443",
        "forget about pnpm",
    ] {
        let o = ctxkit(&["context", "--memory", db, "--project", "/p", "--json", message]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let shown = ctxkit(&[
        "context",
        "--memory",
        db,
        "--project",
        "/p",
        "How do I install lodash with npm?",
    ]);
    assert!(stdout(&shown).contains("Always use pnpm"), "{}", stdout(&shown));
    assert_eq!(
        export("after.jsonl"),
        before,
        "no access counted, no command carried out"
    );
}

#[test]
fn context_shows_the_auto_detected_skills_a_chat_injects() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("skills/rust");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: rust\ndescription: Rust conventions\ndetect:\n  files: [Cargo.toml]\n---\nUse cargo.\n",
    )
    .unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("Cargo.toml"), "[package]\n").unwrap();
    let (skills, project) = (
        dir.path().join("skills").to_str().unwrap().to_string(),
        project.to_str().unwrap().to_string(),
    );
    let args = ["--skills", skills.as_str(), "--project", project.as_str()];

    let o = ctxkit(&[&["context", "--json"], &args[..], &["hello"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["stats"]["skills"], serde_json::json!(["rust"]));

    let o = ctxkit_with_stdin(&[&["chat"], &args[..]].concat(), Some("hello\n"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Skills: rust."), "{}", stdout(&o));
}

#[test]
fn concurrent_processes_share_one_index_cache() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    for name in ["alpha", "beta", "gamma"] {
        let folder = skills.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: The {name} skill\ntriggers: [{name}]\n---\nBody of {name}."
        );
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
    }
    // Files changed in the last two seconds are not cached (their next edit could go unseen).
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let cache = dir.path().join("cache");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ctxkit"))
            .args(args)
            .env("CTXKIT_CACHE_DIR", &cache)
            .env("CTXKIT_CONFIG", dir.path().join("config.toml"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let dir_arg = skills.to_str().unwrap();
    let children: Vec<_> = (0..6)
        .map(|_| run(&["skills", "show", "beta", "--dir", dir_arg]))
        .collect();
    for child in children {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("Body of beta."));
    }
    let files: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(
        files.len(),
        1,
        "one whole cache file, no temporary left: {files:?}"
    );
    // A cached run shows what a fresh one does, after an edit too.
    std::fs::write(
        skills.join("beta/SKILL.md"),
        "---\nname: beta\ndescription: The beta skill\ntriggers: [beta]\n---\nEdited body.",
    )
    .unwrap();
    let o = run(&["skills", "show", "beta", "--dir", dir_arg])
        .wait_with_output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("Edited body."));
}

/// `ctxkit` in `dir`, which holds its user config, cache and memory database.
fn ctxkit_in(dir: &Path, args: &[&str], stdin: impl AsRef<[u8]>) -> Output {
    run_with_stdin(isolated(dir).args(args).current_dir(dir), stdin.as_ref())
}

#[test]
fn chat_resumes_a_session_kept_without_its_secrets_and_sessions_lists_shows_and_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let first = ctxkit_in(
        dir.path(),
        &["chat", "--session", "s1"],
        format!("my token is {key}\nhello\n"),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    // Another process resumes it: the new message goes with the four before it.
    let second = ctxkit_in(dir.path(), &["chat", "--session", "s1"], "and again\n");
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("(session s1 resumed: 4 messages so far)"),
        "{}",
        stderr(&second)
    );
    assert!(
        stdout(&second).starts_with("[dry-run] 6 messages"),
        "{}",
        stdout(&second)
    );

    let listed = ctxkit_in(dir.path(), &["sessions", "list", "--json"], "");
    let sessions = json_lines(&listed);
    assert_eq!(sessions.len(), 1, "{}", stdout(&listed));
    assert_eq!(
        (sessions[0]["id"].as_str(), sessions[0]["turns"].as_u64()),
        (Some("s1"), Some(3))
    );
    let shown = stdout(&ctxkit_in(dir.path(), &["sessions", "show", "s1"], ""));
    assert!(shown.starts_with("user: my token is [REDACTED"), "{shown}");
    assert!(!shown.contains(key), "{shown}");
    // /new starts the named session afresh rather than saving one under a new name.
    let fresh = ctxkit_in(dir.path(), &["chat", "--session", "s1"], "/new\nfresh start\n");
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    let sessions = json_lines(&ctxkit_in(dir.path(), &["sessions", "list", "--json"], ""));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(
        (sessions[0]["id"].as_str(), sessions[0]["turns"].as_u64()),
        (Some("s1"), Some(1))
    );
    assert!(ctxkit_in(dir.path(), &["sessions", "delete", "s1"], "")
        .status
        .success());
    let again = ctxkit_in(dir.path(), &["sessions", "delete", "s1"], "");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("no session `s1` is saved"),
        "{}",
        stderr(&again)
    );
    let refused = ctxkit_in(dir.path(), &["chat", "--read-only", "--session", "s1"], "hi\n");
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
}

#[test]
fn chat_remembers_a_preference_and_sends_it_with_an_unrelated_question_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let skills = skills_dir();
    let chat = ["chat", "--skills", skills.to_str().unwrap()];
    let o = ctxkit_in(
        dir.path(),
        &chat,
        "remember that we always use pnpm, not npm\nhow do I install lodash?\n/memory\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    // No word in common with the preference, and still the request carries it.
    assert!(lines[1].contains("Memories: 1."), "{out}");
    let listed = ctxkit_in(dir.path(), &["memory", "list", "--json"], "");
    let memories = json_lines(&listed);
    assert_eq!(memories.len(), 1, "{}", stdout(&listed));
    assert_eq!(memories[0]["content"], "We always use pnpm, not npm");
    let id = memories[0]["id"].as_str().unwrap();
    assert_eq!(
        lines[2],
        format!("last request carried 1 essentials: {id}; 0 memories: none"),
        "{out}"
    );
    let o = ctxkit_in(dir.path(), &["context", "--json", "how do I install lodash?"], "");
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["stats"]["essentials"], 1);
    assert!(v["system"]
        .as_str()
        .unwrap()
        .contains("- [PREF] We always use pnpm, not npm"));

    // --no-memory: nothing sent, nothing remembered.
    let o = ctxkit_in(
        dir.path(),
        &[&chat[..], &["--no-memory"]].concat(),
        "how do I install lodash?\n/memory\n",
    );
    let out = stdout(&o);
    assert!(out.lines().next().unwrap().contains("Memories: 0."), "{out}");
    assert!(out.contains("memory is off"), "{out}");
}

#[test]
fn memory_list_all_shows_what_a_newer_memory_superseded() {
    let dir = tempfile::tempdir().unwrap();
    let add = |content: &str| {
        let o = ctxkit_in(
            dir.path(),
            &["memory", "add", "--category", "preference", content],
            "",
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    let old = add("Always use pnpm");
    let new = add("Use bun instead of pnpm");
    let current = stdout(&ctxkit_in(dir.path(), &["memory", "list"], ""));
    assert!(!current.contains("Always use pnpm"), "{current}");
    let all = stdout(&ctxkit_in(dir.path(), &["memory", "list", "--all"], ""));
    assert!(
        all.contains(&format!(
            "Always use pnpm  (importance 0.50, superseded by {new})"
        )),
        "{all}"
    );
    let history = stdout(&ctxkit_in(dir.path(), &["memory", "history", &old], ""));
    let line = history.lines().find(|l| l.contains("supersede")).expect(&history);
    let entry = line.trim_start_matches('#').split_whitespace().next().unwrap();
    let o = ctxkit_in(dir.path(), &["memory", "undo", entry], "");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&ctxkit_in(dir.path(), &["memory", "list"], "")).contains("Always use pnpm"));
}

#[test]
fn bench_memory_reports_both_systems_on_the_embedded_set() {
    let o = ctxkit(&["bench", "memory", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(report["memories"].as_u64().unwrap() >= 200, "{report}");
    assert!(report["queries"].as_u64().unwrap() >= 100, "{report}");
    for system in ["ctxkit", "baseline"] {
        for metric in ["recall_at_5", "mrr"] {
            let v = report[system][metric].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "{system} {metric} = {v}");
        }
        // Searches are confined to the query's project.
        assert_eq!(report[system]["other_project"], 0, "{report}");
    }
    assert_eq!(
        report["outcomes"].as_array().unwrap().len() as u64,
        report["queries"].as_u64().unwrap()
    );
}

#[test]
fn bench_memory_reads_a_set_from_a_folder_and_names_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memories.jsonl"),
        r#"{"id": "m1", "project": "/p", "category": "preference", "content": "Always use pnpm, not npm"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("queries.jsonl"),
        r#"{"project": "/p", "text": "which package manager?", "relevant": ["m1"]}"#,
    )
    .unwrap();
    let o = ctxkit(&["bench", "memory", "--eval", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("1 memories (0 superseded) in 1 projects, 1 queries"),
        "{out}"
    );
    assert!(out.contains("fts5 bm25"), "{out}");
    std::fs::write(dir.path().join("queries.jsonl"), "not json\n").unwrap();
    let o = ctxkit(&["bench", "memory", "--eval", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("queries.jsonl line 1"), "{}", stderr(&o));
}

/// `bench select` scores the skills a folder's selection picks for a labelled set, per kind,
/// and says in one sentence what is missing.
#[test]
fn bench_select_scores_a_labelled_set_over_a_skill_folder() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(corpus.join("greet")).unwrap();
    std::fs::write(
        corpus.join("greet/SKILL.md"),
        "---\nname: greet\ndescription: Greetings and farewells in French\ntriggers: [bonjour]\n---\nSay hello.",
    )
    .unwrap();
    let set = dir.path().join("set.jsonl");
    std::fs::write(
        &set,
        [
            r#"{"query": "say bonjour to Alice", "expect": ["greet"], "kind": "positive"}"#,
            r#"{"query": "what is 2+2", "expect": [], "kind": "chitchat"}"#,
            r#"{"query": "french farewells please", "expect": ["greet"], "kind": "described"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let args = [
        "bench",
        "select",
        "--corpus",
        corpus.to_str().unwrap(),
        "--set",
        set.to_str().unwrap(),
    ];
    let o = ctxkit(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("labelled corpus set: 1 skills"), "{out}");
    // A kind's row of the table, cell by cell.
    fn row<'a>(out: &'a str, kind: &str) -> Vec<&'a str> {
        out.lines()
            .find(|l| l.starts_with(kind))
            .unwrap_or_default()
            .split_whitespace()
            .collect()
    }
    assert_eq!(
        row(&out, "positive"),
        ["positive", "1", "1.000", "1.000", "1.000", "0.000", "1.00"]
    );
    assert_eq!(
        row(&out, "chitchat"),
        ["chitchat", "1", "—", "—", "—", "1.000", "0.00"]
    );
    assert!(out.contains("selection: default\n"), "{out}");
    assert_eq!(row(&out, "described").get(2), Some(&"1.000"), "{out}");
    let o = ctxkit(&[&args[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["set"], "corpus");
    assert_eq!(v["report"]["outcomes"][0]["selected"][0], "greet");
    assert_eq!((v["floor"].as_f64(), v["cut"].as_f64()), (Some(1.5), Some(0.75)));

    // A floor no words reach: the request by words selects nothing; a trigger still fires.
    let o = ctxkit(&[&args[..], &["--floor", "100", "--cut", "0"]].concat());
    let out = stdout(&o);
    assert!(out.contains("selection: floor 100, cut 0\n"), "{out}");
    assert_eq!(row(&out, "described").get(5), Some(&"1.000"), "{out}");
    assert_eq!(row(&out, "positive").get(2), Some(&"1.000"), "{out}");
    let o = ctxkit(&[&args[..], &["--cut", "2"]].concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--cut 2 is not a share of the best score"),
        "{}",
        stderr(&o)
    );

    let o = ctxkit(&["bench", "select", "--corpus", set.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not a folder"), "{}", stderr(&o));
    let o = ctxkit(&[
        "bench",
        "select",
        "--bfcl",
        dir.path().to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("BFCL_v4_multiple.json"), "{}", stderr(&o));
}

#[test]
fn chat_mounts_the_mcp_servers_of_the_flag_and_of_the_user_config() {
    let skills = skills_dir();
    let dir = tempfile::tempdir().unwrap();
    // A memory only the mounted server can reach: the chat itself runs without memory.
    let served = dir.path().join("served.db");
    let served = served.to_str().unwrap();
    let add = isolated(dir.path())
        .args(["memory", "--db", served, "--project", "/repo", "add"])
        .arg("Deploys go out on Tuesdays")
        .output()
        .unwrap();
    assert!(add.status.success(), "{}", stderr(&add));
    // The server is ctxkit's own, started as the user would write it.
    let server = shell_words::join([
        env!("CARGO_BIN_EXE_ctxkit"),
        "mcp",
        "--skills",
        skills.to_str().unwrap(),
        "--memory",
        served,
        "--project",
        "/repo",
        "--watch",
        "0",
    ]);
    let chat = |config: &str, flags: &[&str]| {
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        // The model searches the server's memories, then answers.
        let (addr, exchanges) = stand_in(|_, body| {
            let answered = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "tool");
            let message = if answered {
                serde_json::json!({"role": "assistant", "content": "On Tuesday."})
            } else {
                serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {
                        "name": "ctxkit__search_memories", "arguments": "{\"query\": \"when do deploys go out\"}"}}]})
            };
            (
                200,
                serde_json::json!({"choices": [{"message": message}]}).to_string(),
            )
        });
        let mut command = isolated(dir.path());
        command
            .args([
                "chat",
                "--no-memory",
                "--watch",
                "0",
                "--model",
                "openai:test-model",
            ])
            .args(["--base-url", &format!("http://{addr}/v1")])
            .args(flags);
        let o = run_with_stdin(&mut command, b"when do we deploy?\n");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(stdout(&o), "On Tuesday.\n");
        let exchanges = exchanges.lock().unwrap();
        assert_eq!(exchanges.len(), 2, "a tool round, then the answer");
        let offered: Vec<&str> = exchanges[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(offered.contains(&"ctxkit__search_memories"), "{offered:?}");
        let result = exchanges[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .to_string();
        assert!(result.contains("Deploys go out on Tuesdays"), "{result}");
    };
    chat("", &["--mcp", &server]);
    chat(
        &format!("[mcp]\nservers = [{}]\n", Value::from(server.as_str())),
        &[],
    );
}

/// A project with standing instructions and a skill of its own, in `dir`.
fn project_with_standing_instructions(dir: &Path) {
    support::write(
        &dir.join("AGENTS.md"),
        "# House rules\nAlways answer in French.\n",
    );
    support::write(
        &dir.join("CLAUDE.md"),
        "# Claude notes\nRun cargo fmt before committing.\n",
    );
    support::write(
        &dir.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greetings\ntriggers: [bonjour]\n---\nGREET-BODY\n",
    );
}

/// `context --json` in `dir` for `message`, with `args` before it.
fn context_in(dir: &Path, args: &[&str], message: &str) -> Value {
    let mut all = vec!["context", "--no-memory", "--json"];
    all.extend_from_slice(args);
    all.push(message);
    let o = ctxkit_in(dir, &all, "");
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(stdout(&o).trim()).unwrap()
}

/// Everything a request sends as text: the system text and every message.
fn everything_sent(v: &Value) -> String {
    let messages = v["messages"].as_array().unwrap().iter();
    std::iter::once(v["system"].as_str().unwrap())
        .chain(messages.map(|m| m["content"].as_str().unwrap()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn agents_md_and_claude_md_open_every_request_once_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    project_with_standing_instructions(dir.path());
    let standing =
        "# House rules\nAlways answer in French.\n\n# Claude notes\nRun cargo fmt before committing.";
    let modes: [&[&str]; 5] = [
        &["--mode", "triggered"],
        &["--mode", "hybrid"],
        &["--mode", "full"],
        &["--mode", "on-demand"],
        &["--mode", "hybrid", "--lazy"],
    ];
    for mode in modes {
        // The message's words are the files' own: as skills, they would be picked.
        let v = context_in(dir.path(), mode, "what are the house rules and the claude notes?");
        let system = v["system"].as_str().unwrap();
        let lazy = mode.contains(&"--lazy");
        let opening = if lazy {
            format!("[System Prompt]\n{standing}")
        } else {
            standing.to_string()
        };
        assert!(system.starts_with(&opening), "{mode:?}: {system}");
        // Sent once: not also a skill, in the catalog or selected.
        let sent = everything_sent(&v);
        for text in ["House rules", "Claude notes", "cargo fmt"] {
            assert_eq!(sent.matches(text).count(), 1, "{mode:?}: {text} in {sent}");
        }
        let selected = v["selected"].to_string();
        assert!(
            !selected.contains("AGENTS") && !selected.contains("CLAUDE"),
            "{mode:?}: {selected}"
        );
        if !lazy {
            // In the stable prefix prompt caches keep.
            let stable = v["stable_chars"].as_u64().unwrap() as usize;
            assert!(stable >= standing.chars().count(), "{mode:?}: {stable}");
        }
    }
    // The stable part is the same whatever the message selects.
    let prefix = |v: &Value| -> String {
        let stable = v["stable_chars"].as_u64().unwrap() as usize;
        v["system"].as_str().unwrap().chars().take(stable).collect()
    };
    let plain = context_in(dir.path(), &["--mode", "triggered"], "hi");
    let greet = context_in(dir.path(), &["--mode", "triggered"], "say bonjour");
    assert!(
        greet["system"].as_str().unwrap().contains("GREET-BODY"),
        "{greet}"
    );
    assert!(prefix(&plain).starts_with(standing));
    assert_eq!(prefix(&plain), prefix(&greet));
}

#[test]
fn an_instructions_file_overrides_the_standing_instructions_which_stay_skills() {
    let dir = tempfile::tempdir().unwrap();
    project_with_standing_instructions(dir.path());
    let mine = dir.path().join("mine.md");
    support::write(&mine, "Answer in haiku.");
    let v = context_in(
        dir.path(),
        &["--mode", "hybrid", "--instructions", mine.to_str().unwrap()],
        "hi",
    );
    let system = v["system"].as_str().unwrap();
    assert!(system.starts_with("Answer in haiku.\n\n"), "{system}");
    assert!(!system.contains("Always answer in French"), "{system}");
    // As before standing instructions: the files are skills, in the hybrid catalog.
    assert!(system.contains("- AGENTS: House rules"), "{system}");
    // A budget for a file the user chose is a usage error.
    let o = ctxkit_in(
        dir.path(),
        &[
            "context",
            "--instructions",
            mine.to_str().unwrap(),
            "--instructions-tokens",
            "5",
            "hi",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn standing_instructions_are_cut_to_their_budget_with_a_marker_or_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    project_with_standing_instructions(dir.path());
    let rules: String = (0..2_000)
        .map(|i| format!("Rule {i}: keep the code tidy.\n"))
        .collect();
    support::write(&dir.path().join("AGENTS.md"), &rules);
    // The default budget (8,000 tokens) cuts a file of about 20,000.
    let v = context_in(dir.path(), &["--mode", "triggered"], "hi");
    let system = v["system"].as_str().unwrap();
    assert!(system.starts_with("Rule 0: keep the code tidy.\n"), "{system}");
    assert!(!system.contains("Rule 1999"));
    assert!(
        system.contains("more lines of AGENTS.md left out: standing instructions are cut at 8000 tokens; read AGENTS.md for the rest]"),
        "{system}"
    );
    let tokens = v["stats"]["by_section"]["instructions"].as_u64().unwrap();
    assert!((7_000..=8_200).contains(&tokens), "{tokens}");
    // The flag sets the budget.
    let v = context_in(
        dir.path(),
        &["--mode", "triggered", "--instructions-tokens", "100"],
        "hi",
    );
    let tokens = v["stats"]["by_section"]["instructions"].as_u64().unwrap();
    assert!(tokens <= 160, "{tokens}");
    assert!(v["system"].as_str().unwrap().contains("cut at 100 tokens"));
    // The project's config cannot raise it (it wrote the files); the user's can.
    let cut_at = |v: &Value, tokens: &str| {
        let system = v["system"].as_str().unwrap();
        system.contains(&format!("cut at {tokens} tokens"))
    };
    let project_config = dir.path().join(".ctxkit/config.toml");
    support::write(&project_config, "[instructions]\nmax_tokens = 100000\n");
    assert!(cut_at(&context_in(dir.path(), &[], "hi"), "8000"));
    support::write(
        &dir.path().join("config.toml"),
        "[instructions]\nmax_tokens = 100000\n",
    );
    let v = context_in(dir.path(), &[], "hi");
    assert!(!cut_at(&v, "100000") && v["system"].as_str().unwrap().contains("Rule 1999"));
    // The project's config may lower it; 0 sends none, and the files are skills again.
    support::write(&project_config, "[instructions]\nmax_tokens = 0\n");
    let v = context_in(dir.path(), &["--mode", "hybrid"], "hi");
    let system = v["system"].as_str().unwrap();
    assert!(!system.starts_with("Rule 0"), "{system}");
    assert!(system.contains("- CLAUDE: Claude notes"), "{system}");
}

#[cfg(unix)]
#[test]
fn an_agents_md_linking_out_of_the_project_is_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    support::write(&dir.path().join("secret.txt"), "OPENAI_API_KEY=sk-not-for-you\n");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), project.join("AGENTS.md")).unwrap();
    let mut command = isolated(&project);
    command.env("CTXKIT_LOG", "warn").current_dir(&project);
    let o = run_with_stdin(command.args(["context", "--no-memory", "--json", "hi"]), b"");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("sk-not-for-you"), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("AGENTS.md") && err.contains("not sent as standing instructions"),
        "{err}"
    );
    assert!(!err.contains("sk-not-for-you"), "{err}");
}

#[test]
fn chat_sends_the_standing_instructions_in_claudes_cached_system_block_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    project_with_standing_instructions(dir.path());
    let usage = serde_json::json!({"input_tokens": 20, "output_tokens": 1});
    let (addr, exchanges) = stand_in(move |_, _| {
        let text = serde_json::json!({"type": "text", "text": "D'accord."});
        (200, anthropic_events(vec![text], usage.clone()))
    });
    let mut command = isolated(dir.path());
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-cli-secret-1")
        .current_dir(dir.path())
        .args([
            "chat",
            "--no-memory",
            "--mode",
            "triggered",
            "--model",
            "anthropic:claude-test",
        ])
        .args(["--base-url", &format!("http://{addr}")]);
    let o = run_with_stdin(&mut command, b"hi\nsay bonjour\n");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let exchanges = exchanges.lock().unwrap();
    assert_eq!(exchanges.len(), 2, "two messages, no extraction without memory");
    let first = &exchanges[0].body["system"];
    let stable = &first[0];
    assert_eq!(stable["cache_control"], serde_json::json!({"type": "ephemeral"}));
    assert!(
        stable["text"]
            .as_str()
            .unwrap()
            .starts_with("# House rules\nAlways answer in French.\n\n# Claude notes\n"),
        "{first}"
    );
    // The second message fires a skill, after the breakpoint; the cached block is unchanged.
    let second = &exchanges[1].body["system"];
    assert_eq!(&second[0], stable);
    assert!(
        second[1]["text"].as_str().unwrap().contains("GREET-BODY"),
        "{second}"
    );
}
