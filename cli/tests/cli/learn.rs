//! Skills learned from sessions, end to end through the binary and an OpenAI-compatible
//! stand-in: which sessions are learned from, the one request, review, use, export, hostile
//! replies, and a Claude Code transcript.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::cli::{stand_in, Exchanges};
use crate::support::{isolated, run_with_stdin, stderr, stdout, write};

const TASK: &str = "Release version 2.1 of the app";
const SKILL: &str = "---\nname: release-app\ndescription: Release a new version of the app\ntriggers: [release, tag a version]\n---\n1. `git tag vX.Y`\n2. `make release`\n";

/// Whether a request asks for a skill (the learner's instructions open it).
fn asks_for_skill(body: &Value) -> bool {
    first_text(body).starts_with("You turn a coding-agent session")
}

fn first_text(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap_or("")
}

/// What the stand-in model does next: how many tool calls it answers a message with, and
/// what it answers a request for a skill with.
#[derive(Clone, Default)]
struct Script(Arc<Mutex<(usize, String)>>);

impl Script {
    fn set(&self, calls: usize, skill: &str) {
        *self.0.lock().unwrap() = (calls, skill.to_string());
    }
}

/// A model that answers a user message with the script's number of `read_skill` calls, then
/// "Done."; the memory extraction with no memories; a request for a skill with the script's.
fn model(script: Script) -> (String, Exchanges) {
    stand_in(move |_, body| {
        let (calls, skill) = script.0.lock().unwrap().clone();
        let message = if asks_for_skill(body) {
            json!({"role": "assistant", "content": skill})
        } else if first_text(body).contains("memory extraction") {
            json!({"role": "assistant", "content": "{\"memories\": []}"})
        } else if body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool")
        {
            json!({"role": "assistant", "content": "Done."})
        } else {
            let calls: Vec<Value> = (0..calls)
                .map(|i| {
                    json!({"id": format!("c{i}"), "type": "function",
                           "function": {"name": "read_skill", "arguments": "{\"name\": \"notes\"}"}})
                })
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        };
        (200, json!({"choices": [{"message": message}]}).to_string())
    })
}

/// A project with one skill the model reads (`notes`), its own user folders, and the model.
struct Setup {
    dir: tempfile::TempDir,
    script: Script,
    addr: String,
    exchanges: Exchanges,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("proj/skills/notes/SKILL.md"),
            "---\nname: notes\ndescription: Release notes conventions\ntriggers: [notes]\n---\nKeep a changelog.\n",
        );
        let script = Script::default();
        let (addr, exchanges) = model(script.clone());
        Setup {
            dir,
            script,
            addr,
            exchanges,
        }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn command(&self) -> Command {
        let mut command = isolated(self.dir.path());
        command.current_dir(self.project());
        command
    }

    fn model_args(&self) -> Vec<String> {
        vec![
            "--model".into(),
            "openai:stand-in".into(),
            "--base-url".into(),
            format!("http://{}/v1", self.addr),
        ]
    }

    /// One chat session of one message; it must exit 0 whatever the learning did.
    fn chat(&self, calls: usize, skill: &str) -> Output {
        self.script.set(calls, skill);
        let o = run_with_stdin(
            self.command().arg("chat").args(self.model_args()),
            format!("{TASK}\n").as_bytes(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        o
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.command().args(args).stdin(Stdio::null()).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    }

    fn skill_requests(&self) -> usize {
        self.exchanges
            .lock()
            .unwrap()
            .iter()
            .filter(|e| asks_for_skill(&e.body))
            .count()
    }

    fn learned(&self) -> Vec<Value> {
        self.ok(&["skills", "learned", "list", "--json"])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn matched(&self, message: &str) -> String {
        self.ok(&["skills", "match", message])
    }
}

#[test]
fn learning_can_be_switched_off_in_the_config() {
    let s = Setup::new();
    write(
        &s.project().join(".ctxkit/config.toml"),
        "[learn]\nenabled = false\n",
    );
    s.chat(3, SKILL);
    assert_eq!(s.skill_requests(), 0, "no request for a skill");
    assert!(s.learned().is_empty());
}

#[test]
fn a_worked_session_proposes_one_skill_which_fires_once_accepted_and_exports_valid() {
    let s = Setup::new();
    s.chat(3, SKILL);
    assert_eq!(s.skill_requests(), 1, "one request for a skill");
    let asked = s
        .exchanges
        .lock()
        .unwrap()
        .iter()
        .find(|e| asks_for_skill(&e.body))
        .map(|e| e.body["messages"][1]["content"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        asked.contains(TASK) && asked.contains("read_skill") && asked.contains("- notes: "),
        "{asked}"
    );
    let learned = s.learned();
    assert_eq!(learned.len(), 1);
    assert_eq!(
        (learned[0]["name"].as_str(), learned[0]["status"].as_str()),
        (Some("release-app"), Some("proposed"))
    );
    assert!(
        !s.matched("release the app").contains("release-app"),
        "proposed: never injected"
    );

    s.chat(1, SKILL);
    assert_eq!(s.skill_requests(), 1, "a 1-tool-call session is not learned from");
    s.chat(3, SKILL);
    assert_eq!(s.skill_requests(), 2);
    let learned = s.learned();
    assert_eq!(
        (learned.len(), learned[0]["sessions"].as_u64()),
        (1, Some(2)),
        "refined, no duplicate"
    );

    assert!(s
        .ok(&["skills", "learned", "accept", "release-app"])
        .contains("accepted"));
    let matched = s.matched("please release the app");
    assert!(matched.starts_with("release-app"), "{matched}");
    let context = s.ok(&["context", "--json", "please release the app"]);
    assert!(context.contains("\"release-app\""), "{context}");
    // An agent host's hook injects it too.
    let event = json!({"session_id": "h1", "cwd": s.project(), "hook_event_name": "UserPromptSubmit",
                       "prompt": "please release the app"});
    let o = run_with_stdin(
        s.command().args(["hook", "claude-code"]),
        event.to_string().as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("release-app") && stdout(&o).contains("make release"),
        "{}",
        stdout(&o)
    );
    // Measured in use: a chat that carries it counts one use, and its success.
    s.chat(0, "NONE");
    let learned = s.learned();
    assert_eq!(
        (learned[0]["uses"].as_u64(), learned[0]["success_rate"].as_f64()),
        (Some(1), Some(1.0))
    );

    let out = s.dir.path().join("exported");
    s.ok(&[
        "skills",
        "learned",
        "export",
        "release-app",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(out.join("release-app/SKILL.md")).unwrap(),
        SKILL
    );

    assert!(s
        .ok(&["skills", "learned", "reject", "release-app"])
        .contains("rejected"));
    assert!(
        !s.matched("please release the app").contains("release-app"),
        "rejected: gone"
    );
    // It loads as exported; the one warning is the author's advice on its trigger `release`.
    let validated = s.ok(&["skills", "--dir", out.to_str().unwrap(), "validate"]);
    assert!(
        validated.ends_with("1 skills loaded, 1 warnings, 0 skipped\n")
            && validated.contains("trigger `release` is a common English word"),
        "{validated}"
    );
}

#[test]
fn hostile_replies_store_nothing_and_the_chat_still_exits_0() {
    let s = Setup::new();
    let hostile = [
        SKILL.replace("name: release-app", "name: ../../../escaped"),
        SKILL.replace(
            "2. `make release`",
            "2. TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB make",
        ),
        "---\nname: [broken\n---\n".to_string(),
        "z".repeat(1 << 20),
    ];
    for reply in &hostile {
        let o = s.chat(3, reply);
        assert!(!stderr(&o).contains("ghp_"), "{}", stderr(&o));
    }
    assert_eq!(s.skill_requests(), hostile.len());
    assert!(s.learned().is_empty());
    for place in [
        s.dir.path().join("escaped"),
        s.dir.path().parent().unwrap().join("escaped"),
    ] {
        assert!(!place.exists(), "{}", place.display());
    }
}

#[test]
fn a_claude_code_transcript_is_learned_from() {
    let s = Setup::new();
    s.script.set(0, SKILL);
    let lines = [
        json!({"type": "user", "sessionId": "cc-7", "message": {"role": "user", "content": TASK}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "git tag v2.1"}},
            {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "make release"}},
            {"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "git push --tags"}}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "b", "content": "built"},
            {"type": "tool_result", "tool_use_id": "c", "content": "pushed"}]}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Released 2.1."}]}}),
    ];
    let transcript = s.dir.path().join("session.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&transcript, text.join("\n")).unwrap();
    let model = s.model_args();
    let mut args = vec!["skills", "learn", "--transcript", transcript.to_str().unwrap()];
    args.extend(model.iter().map(String::as_str));
    let out = s.ok(&args);
    assert!(out.contains("release-app proposed"), "{out}");
    let asked = s.exchanges.lock().unwrap()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(asked.contains("git push --tags"), "{asked}");
    assert_eq!(s.learned()[0]["sessions"], 1);

    let not_a_transcript = s.dir.path().join("other.jsonl");
    std::fs::write(&not_a_transcript, "{\"hello\": 1}\n").unwrap();
    let o = s
        .command()
        .args([
            "skills",
            "learn",
            "--transcript",
            not_a_transcript.to_str().unwrap(),
        ])
        .args(&model)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not a Claude Code transcript, a Codex rollout or a ctxkit session record"),
        "{}",
        stderr(&o)
    );
}

/// A transcript that is a FIFO (or a device) is refused at once in one sentence, never waited
/// for: only a regular file is read.
#[cfg(unix)]
#[test]
fn a_transcript_that_is_not_a_regular_file_is_refused_without_blocking() {
    let s = Setup::new();
    let fifo = s.dir.path().join("session.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for transcript in [fifo.as_path(), std::path::Path::new("/dev/zero")] {
        let o = s
            .command()
            .args(["skills", "learn", "--transcript", transcript.to_str().unwrap()])
            .args(s.model_args())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
}

#[test]
fn a_recorded_chat_session_is_learned_from_later() {
    let s = Setup::new();
    let records = s.dir.path().join("records");
    s.script.set(3, "NONE");
    let o = run_with_stdin(
        s.command()
            .arg("chat")
            .args(s.model_args())
            .args(["--record", records.to_str().unwrap()]),
        format!("{TASK}\n").as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.learned().is_empty(), "the model declined at the session's end");
    let record = std::fs::read_dir(&records)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    s.script.set(0, SKILL);
    let mut args = vec!["skills", "learn", "--transcript", record.to_str().unwrap()];
    let model = s.model_args();
    args.extend(model.iter().map(String::as_str));
    assert!(s.ok(&args).contains("release-app proposed"));
    let asked: Vec<String> = s
        .exchanges
        .lock()
        .unwrap()
        .iter()
        .filter(|e| asks_for_skill(&e.body))
        .map(|e| e.body["messages"][1]["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[0], asked[1],
        "the record tells the model what the live session did"
    );
}
