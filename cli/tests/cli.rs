//! The `ctxkit` binary: output shapes, exit codes and error sentences.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn skills_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills")
}

fn ctxkit(args: &[&str]) -> Output {
    ctxkit_with_stdin(args, None)
}

fn ctxkit_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxkit"))
        .args(args)
        .current_dir(dir.path())
        .env("CTXKIT_MEMORY_DB", dir.path().join("memory.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
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

    let secret = "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let o = with(&["add", secret]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("ghp_0123"), "the secret is not echoed");
    assert!(stderr(&o).contains("refused"), "{}", stderr(&o));

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
