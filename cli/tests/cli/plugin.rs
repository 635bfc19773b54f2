//! ctxkit as a Claude Code plugin (`plugin/`, listed by the repository's
//! `.claude-plugin/marketplace.json`): its manifests agree with the crate and with what
//! `hook install` writes; and the real Claude Code CLI (pinned; `.ci/run` installs it into
//! `target/mcp-suites/claude-code`) validates them, installs the plugin from the marketplace,
//! and in a session against a stand-in model server sends the model the skill ctxkit's hook
//! selected, with ctxkit's MCP tools beside it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::cli::stand_in;
use crate::suites;
use crate::support::{isolated, isolated_program, stderr, stdout, write};

/// The hook's command as the plugin runs it: `ctxkit` from `PATH`.
const HOOK_COMMAND: &str = "ctxkit hook claude-code";

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn repository() -> PathBuf {
    suites::workspace()
}

#[test]
fn the_plugin_runs_the_hooks_hook_install_writes_and_serves_ctxkit_mcp() {
    let repo = repository();
    let market = read_json(&repo.join(".claude-plugin/marketplace.json"));
    let entry = &market["plugins"][0];
    let folder = repo.join(entry["source"].as_str().unwrap());
    let manifest = read_json(&folder.join(".claude-plugin/plugin.json"));
    assert_eq!(entry["name"], manifest["name"]);
    assert_eq!(
        (&manifest["name"], &manifest["version"], &manifest["license"]),
        (
            &json!("ctxkit"),
            &json!(env!("CARGO_PKG_VERSION")),
            &json!(env!("CARGO_PKG_LICENSE"))
        ),
        "the plugin's version and license are the crate's"
    );

    // `hook install` into a scratch project: the plugin's hooks are the same events, timeout
    // and arguments, with `ctxkit` found on PATH instead of the installer's absolute path.
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    std::fs::create_dir_all(&project).unwrap();
    let o = isolated(dir.path())
        .args(["hook", "install", "claude-code", "--project"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut installed = read_json(&project.join(".claude/settings.json"))["hooks"].clone();
    for groups in installed.as_object_mut().unwrap().values_mut() {
        for hook in groups[0]["hooks"].as_array_mut().unwrap() {
            let command = hook["command"].as_str().unwrap();
            assert!(command.ends_with(" hook claude-code"), "{command}");
            hook["command"] = json!(HOOK_COMMAND);
        }
    }
    let hooks = read_json(&folder.join("hooks/hooks.json"));
    assert_eq!(hooks["hooks"], installed);

    let mcp = read_json(&folder.join(".mcp.json"));
    assert_eq!(
        mcp["mcpServers"]["ctxkit"],
        json!({"command": "ctxkit", "args": ["mcp"]})
    );
}

/// A stand-in for the Anthropic Messages API: a streamed answer to a streamed request, a plain
/// one otherwise.
fn anthropic() -> (String, crate::cli::Exchanges) {
    stand_in(|_, body| {
        let model = body["model"].as_str().unwrap_or("stand-in");
        let message = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}
        });
        if body["stream"] != json!(true) {
            let mut whole = message;
            whole["content"] = json!([{"type": "text", "text": "Bonjour, Alice!"}]);
            whole["stop_reason"] = json!("end_turn");
            return (200, whole.to_string());
        }
        let events = [
            (
                "message_start",
                json!({"type": "message_start", "message": message}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bonjour, Alice!"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        let stream = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        (200, stream)
    })
}

#[test]
fn claude_code_installs_the_plugin_from_the_marketplace_and_a_matched_skill_reaches_the_model() {
    let suite = "the Claude Code plugin suite";
    let claude = suites::suites_dir().join("claude-code/node_modules/.bin/claude");
    let Some(claude) = suites::required(claude, suite) else {
        return;
    };
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    // A project skill under `skills/`, a folder Claude Code does not read itself: only
    // ctxkit's hook can bring its body to the model.
    write(
        &project.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greetings in French\ntriggers: [bonjour]\n---\nGREET-BODY-MARKER: answer in French.\n",
    );
    let (addr, exchanges) = anthropic();
    let ctxkit_dir = Path::new(env!("CARGO_BIN_EXE_ctxkit")).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(ctxkit_dir.to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    // Claude Code as a user runs it, in the project, with a home, a model server and a
    // `ctxkit` on PATH of this test's own, each run bounded by coreutils' `timeout`.
    let claude_code = |args: &[&str]| {
        let mut command = isolated_program(Path::new("timeout"), dir.path());
        command
            .arg("300")
            .arg(&claude)
            .args(args)
            .current_dir(&project)
            .env("PATH", &path)
            .env("ANTHROPIC_BASE_URL", format!("http://{addr}"))
            .env("ANTHROPIC_API_KEY", "sk-stand-in")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDECODE")
            .stdin(Stdio::null());
        let o = command.output().unwrap();
        assert!(
            o.status.success(),
            "claude {args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        stdout(&o)
    };
    let sent = |marker: &str| {
        let exchanges = exchanges.lock().unwrap();
        exchanges.iter().any(|e| e.body.to_string().contains(marker))
    };

    for manifest in [repo.join("plugin"), repo.clone()] {
        let out = claude_code(&["plugin", "validate", "--strict", manifest.to_str().unwrap()]);
        assert!(out.contains("Validation passed"), "{out}");
    }

    // Without the plugin the skill's body never reaches the model.
    let answer = claude_code(&["-p", "say bonjour to Alice"]);
    assert_eq!(answer.trim(), "Bonjour, Alice!");
    assert!(
        !exchanges.lock().unwrap().is_empty(),
        "Claude Code asked the stand-in"
    );
    assert!(!sent("GREET-BODY-MARKER"));

    // Installed from the repository's marketplace, the plugin's hook sends it, and its MCP
    // server's tools are offered.
    claude_code(&["plugin", "marketplace", "add", repo.to_str().unwrap()]);
    claude_code(&["plugin", "install", "ctxkit@ctxkit"]);
    exchanges.lock().unwrap().clear();
    claude_code(&["-p", "say bonjour to Alice"]);
    assert!(
        sent("GREET-BODY-MARKER: answer in French."),
        "the hook's skill reached the model"
    );
    assert!(
        sent("mcp__plugin_ctxkit_ctxkit__match_skills"),
        "ctxkit's MCP server is connected"
    );
}
