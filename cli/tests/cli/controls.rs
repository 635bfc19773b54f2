//! The skill controls end to end through the binary: enable/disable, the config files and
//! their precedence, `external-skills.json`, tiers on `--dir`, phases, `user-invocable`,
//! detection reports, `skills new` and `skills test`, and hostile config files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::support;
use support::{isolated, stderr, stdout, write};

/// A project folder with skills, and a user config beside it (never the real user's).
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// A project with three skills that all fire on "deploy the docs".
    fn new() -> Setup {
        let s = Setup {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(s.project()).unwrap();
        for (name, extra) in [("alpha", ""), ("beta", ""), ("gamma", "")] {
            s.skill(
                name,
                &format!("---\nname: {name}\ndescription: The {name} skill\ntriggers: [deploy, docs]\n{extra}---\n{name}-BODY\n"),
            );
        }
        s
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn user_config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Write `proj/skills/NAME/SKILL.md`.
    fn skill(&self, name: &str, text: &str) {
        let dir = self.project().join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }

    /// `ctxkit ARGS` in the project.
    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).stdin(Stdio::null()).output().unwrap()
    }

    /// `ctxkit` in the project, with this setup's user config, cache and memory.
    fn command(&self) -> Command {
        let mut command = isolated(self.dir.path());
        command.current_dir(self.project());
        command
    }

    /// Run and expect success; stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    }

    /// The skills `context --json` injects for `message`.
    fn injected(&self, extra: &[&str], message: &str) -> Value {
        let out = self.ok(&[&["context", "--no-memory", "--json"], extra, &[message]].concat());
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        v["stats"]["skills"].clone()
    }
}

#[test]
fn a_disabled_skill_is_listed_marked_and_never_injected_until_enabled() {
    let s = Setup::new();
    assert_eq!(
        s.injected(&[], "deploy the docs"),
        json!(["alpha", "beta", "gamma"])
    );
    assert!(s.ok(&["skills", "disable", "beta"]).contains("beta disabled"));
    let config = std::fs::read_to_string(s.project().join(".ctxkit/config.toml")).unwrap();
    assert!(config.contains("disabled = [\"beta\"]"), "{config}");

    assert_eq!(s.injected(&[], "deploy the docs"), json!(["alpha", "gamma"]));
    assert_eq!(s.injected(&[], "use $beta"), json!([]), "not even by name");
    let list = s.ok(&["skills", "list"]);
    let beta = list.lines().find(|l| l.starts_with("beta")).unwrap();
    assert!(beta.contains("(disabled)"), "{list}");
    let json_list = s.ok(&["skills", "list", "--json"]);
    let states: Vec<(String, bool)> = json_list
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["enabled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(states.contains(&("beta".into(), false)) && states.contains(&("alpha".into(), true)));
    let chat = s
        .command()
        .args(["chat", "--no-memory"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    chat.stdin
        .as_ref()
        .unwrap()
        .write_all(b"deploy the docs\n")
        .unwrap();
    let o = chat.wait_with_output().unwrap();
    assert!(stdout(&o).contains("Skills: alpha, gamma."), "{}", stdout(&o));

    s.ok(&["skills", "enable", "beta"]);
    assert_eq!(
        s.injected(&[], "deploy the docs"),
        json!(["alpha", "beta", "gamma"])
    );
    s.ok(&["skills", "disable", "beta"]);
    let shown = s.ok(&["skills", "show", "beta"]);
    assert!(shown.starts_with("state:       disabled"), "{shown}");
    s.ok(&["skills", "enable", "beta"]);
    // A name no skill has is recorded, with a note (a typo should not pass unseen).
    assert!(s
        .ok(&["skills", "disable", "betta"])
        .contains("note: no loaded skill is named `betta`"));
}

/// Twenty `skills disable` run at once, each for another skill: every one is recorded (each
/// read-modify-write of the config holds its lock, so none overwrites another's change).
#[test]
fn concurrent_toggles_lose_no_update() {
    let s = Setup::new();
    let names: Vec<String> = (0..20).map(|i| format!("skill-{i}")).collect();
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            s.command()
                .args(["skills", "disable", name])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let config = std::fs::read_to_string(s.project().join(".ctxkit/config.toml")).unwrap();
    let config: toml::Table = config.parse().unwrap();
    let mut disabled: Vec<String> = config["skills"]["disabled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    disabled.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(disabled, expected);
}

/// A running `chat` and a running `mcp` server honour `skills disable` and `skills enable` run
/// in another terminal from their next message, without a restart or a watch interval.
#[test]
fn running_sessions_follow_toggles_from_their_next_message() {
    use std::io::{BufRead, BufReader, Write};

    let s = Setup::new();
    let spawn = |args: &[&str]| {
        s.command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The watchers are off: what is seen is the per-message check, not a periodic one.
    let mut chat = spawn(&["chat", "--no-memory", "--watch", "0"]);
    let mut mcp = spawn(&["mcp", "--project", "/p", "--watch", "0"]);
    let (mut chat_in, mut mcp_in) = (chat.stdin.take().unwrap(), mcp.stdin.take().unwrap());
    let mut chat_out = BufReader::new(chat.stdout.take().unwrap()).lines();
    let mut mcp_out = BufReader::new(mcp.stdout.take().unwrap()).lines();
    let mut id = 0;
    // A request and its answer; a notification (no answer) when `method` is one.
    let mut rpc = |method: &str, params: Value| -> Value {
        if method.starts_with("notifications/") {
            writeln!(mcp_in, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
            return Value::Null;
        }
        id += 1;
        writeln!(
            mcp_in,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        loop {
            let line = mcp_out.next().expect("the server answers").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    rpc(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    rpc("notifications/initialized", Value::Null);
    let mut both = |expected: &str| {
        writeln!(chat_in, "deploy the docs").unwrap();
        let reply = chat_out.next().expect("chat answers").unwrap();
        assert!(reply.contains(&format!("Skills: {expected}.")), "chat: {reply}");
        let matched = rpc(
            "tools/call",
            json!({"name": "match_skills", "arguments": {"message": "deploy the docs"}}),
        );
        let names: Vec<String> = matched["result"]["structuredContent"]["skills"]
            .as_array()
            .unwrap_or_else(|| panic!("{matched}"))
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names.join(", "), expected, "mcp: {matched}");
    };
    both("alpha, beta, gamma");
    s.ok(&["skills", "disable", "beta"]);
    both("alpha, gamma");
    s.ok(&["skills", "enable", "beta"]);
    both("alpha, beta, gamma");
    // End of input ends both.
    drop(chat_in);
    drop(mcp_in);
    assert!(chat.wait().unwrap().success());
    assert!(mcp.wait().unwrap().success());
}

#[test]
fn the_project_config_wins_over_the_user_config_which_wins_over_defaults() {
    let s = Setup::new();
    // Defaults: three skills by triggers.
    assert_eq!(s.injected(&[], "deploy the docs").as_array().unwrap().len(), 3);
    write(
        &s.user_config(),
        "[skills]\nmax_skills = 1\ndisabled = [\"gamma\"]\n",
    );
    assert_eq!(s.injected(&[], "deploy the docs"), json!(["alpha"]));
    write(
        &s.project().join(".ctxkit/config.toml"),
        "[skills]\nmax_skills = 2\nenabled = [\"gamma\"]\n",
    );
    assert_eq!(s.injected(&[], "deploy the docs"), json!(["alpha", "beta"]));
    // The command line wins over both.
    assert_eq!(
        s.injected(&["--max-skills", "3"], "deploy the docs")
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // `skills disable --user` writes the user's file; the project may still turn it back on.
    s.ok(&["skills", "disable", "--user", "alpha"]);
    let user = std::fs::read_to_string(s.user_config()).unwrap();
    assert!(
        user.contains("max_skills = 1") && user.contains("\"alpha\""),
        "{user}"
    );
    assert_eq!(s.injected(&[], "deploy the docs"), json!(["beta", "gamma"]));
    s.ok(&["skills", "enable", "alpha"]);
    assert_eq!(s.injected(&[], "deploy the docs"), json!(["alpha", "beta"]));
}

#[test]
fn config_mode_budget_and_roots_with_tiers_apply() {
    let s = Setup::new();
    let team = s.dir.path().join("team");
    std::fs::create_dir_all(team.join("alpha")).unwrap();
    std::fs::write(
        team.join("alpha/SKILL.md"),
        "---\nname: alpha\ndescription: The team's alpha\ntriggers: [deploy]\n---\nTEAM-ALPHA\n",
    )
    .unwrap();
    write(
        &s.user_config(),
        &format!(
            "[skills]\nmode = \"triggered\"\n[[skills.roots]]\npath = {:?}\ntier = \"user\"\npriority = 120\n",
            team.to_str().unwrap()
        ),
    );
    let out = s.ok(&["context", "--no-memory", "--json", "deploy"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    // Triggered mode: no catalog, no read_skill; the project's alpha shadows the user's.
    assert_eq!(v["tools"], json!([]), "{v}");
    assert!(v["system"].as_str().unwrap().contains("alpha-BODY"));
    let list = s.ok(&["skills", "list", "--json"]);
    assert!(!list.contains("TEAM"), "{list}");

    // `--dir TIER:PATH` names the tier on the command line.
    let out = s.ok(&[
        "skills",
        "--dir",
        &format!("external:{}", team.display()),
        "list",
        "--json",
    ]);
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["source"], "external");
}

/// The example of seed 004 §5.4, with one more skill limited to planning.
const EXTERNAL_SKILLS: &str = r#"{
  "version": "1.1.0",
  "priority_ranges": {
    "builtin":   { "min": 1,   "max": 50  },
    "submodule": { "min": 51,  "max": 100 },
    "user":      { "min": 101, "max": 200 }
  },
  "sources": {
    "vercel": {
      "type": "submodule",
      "path": "external-skills/vercel",
      "repository": "https://github.com/vercel-labs/agent-skills"
    }
  },
  "skills": {
    "react-best-practices": {
      "source": "vercel",
      "skill_path": "skills/react-best-practices",
      "detect": {
        "files": ["package.json"],
        "patterns": ["\"react\"", "\"next\""]
      },
      "inject_into": ["planning", "implementation", "retry"],
      "priority": 100
    },
    "react-planning": {
      "source": "vercel",
      "skill_path": "skills/react-planning",
      "inject_into": ["planning"],
      "priority": 90
    }
  },
  "settings": {
    "max_skills_per_story": 3,
    "max_content_lines": 200,
    "cache_enabled": true
  }
}"#;

#[test]
fn external_skills_json_is_read_as_is() {
    let s = Setup::new();
    let vercel = s.project().join("external-skills/vercel/skills");
    write(
        &vercel.join("react-best-practices/SKILL.md"),
        "---\nname: react-best-practices\ndescription: React and Next.js performance\n---\nREACT-BODY\n",
    );
    write(
        &vercel.join("react-planning/SKILL.md"),
        "---\nname: react-planning\ndescription: Planning React work\ntriggers: [component]\n---\nPLANNING-BODY\n",
    );
    write(&s.project().join("external-skills.json"), EXTERNAL_SKILLS);
    write(
        &s.project().join(".ctxkit/config.toml"),
        "[skills]\nexternal = [\"external-skills.json\"]\n",
    );
    write(
        &s.project().join("package.json"),
        "{\"dependencies\": {\"react\": \"18\"}}",
    );

    let list = s.ok(&["skills", "list", "--json"]);
    let react: Value = list
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["name"] == "react-best-practices")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        (react["source"].as_str(), react["priority"].as_i64()),
        (Some("external"), Some(100))
    );
    assert_eq!(
        react["inject_into"],
        json!(["planning", "implementation", "retry"])
    );

    let detect = s.ok(&["skills", "detect", "--json"]);
    let d: Value = serde_json::from_str(detect.trim()).unwrap();
    assert_eq!(
        d,
        json!({"name": "react-best-practices", "files": ["package.json"], "patterns": ["\"react\""]})
    );
    let text = s.ok(&["skills", "detect"]);
    assert!(
        text.contains("react-best-practices") && text.contains("package.json"),
        "{text}"
    );
    // `--project DIR` reads another folder's files: one without a React dependency detects
    // nothing, one with it the same skill.
    let other = s.dir.path().join("other");
    write(
        &other.join("package.json"),
        "{\"dependencies\": {\"vue\": \"3\"}}",
    );
    let other = other.to_str().unwrap();
    assert_eq!(s.ok(&["skills", "detect", "--json", "--project", other]), "");
    assert_eq!(
        s.ok(&[
            "skills",
            "--project",
            s.project().to_str().unwrap(),
            "detect",
            "--json"
        ]),
        detect
    );

    let project = s.project();
    let args = ["--project", project.to_str().unwrap()];
    let out = s.ok(&[
        &["context", "--no-memory", "--json"],
        &args[..],
        &["add a component"],
    ]
    .concat());
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["detected"][0]["name"], "react-best-practices");
    assert_eq!(
        v["stats"]["skills"],
        json!(["react-best-practices", "react-planning"])
    );
    // Phases: react-planning is only for planning; no phase means every phase.
    let impl_phase = s.injected(
        &[&args[..], &["--phase", "implementation"]].concat(),
        "add a component",
    );
    assert_eq!(impl_phase, json!(["react-best-practices"]));
    let planning = s.injected(&[&args[..], &["--phase", "planning"]].concat(), "add a component");
    assert_eq!(planning, json!(["react-best-practices", "react-planning"]));
    let o = s.run(&["context", "--phase", "testing", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn hostile_config_files_fail_with_one_sentence() {
    let s = Setup::new();
    let project_config = s.project().join(".ctxkit/config.toml");
    for (path, text, expect) in [
        (
            &project_config,
            "[tools]\ntrust = [\"/\"]\n",
            "only the user config may set",
        ),
        (
            &project_config,
            "[[skills.roots]]\npath = \"../../etc\"\n",
            "not a folder inside the project",
        ),
        (&project_config, "[skills\n", "is not valid"),
        (
            &project_config,
            "[skills]\nmode = \"loud\"\n",
            "unknown skill mode",
        ),
        (
            &project_config,
            "[skills]\nexternal = [\"x.json\"]\n",
            "cannot read",
        ),
    ] {
        write(path, text);
        let o = s.run(&["skills", "list"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{text}: {err}");
        assert!(err.contains(expect) && err.lines().count() == 1, "{text}: {err}");
    }
    write(&project_config, &"#".repeat(300 * 1024));
    assert!(stderr(&s.run(&["skills", "list"])).contains("larger than"));
    std::fs::remove_file(&project_config).unwrap();

    // An external file out of bounds: too big, not JSON, paths leaving its folder.
    write(&project_config, "[skills]\nexternal = [\"ext.json\"]\n");
    let ext = s.project().join("ext.json");
    write(&ext, "{\"skills\": ");
    assert!(stderr(&s.run(&["skills", "list"])).contains("not a valid external-skills.json"));
    write(
        &ext,
        r#"{"sources": {"up": {"path": "../.."}}, "skills": {"x": {"source": "up", "skill_path": "etc"}}}"#,
    );
    let o = s.run(&["skills", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("etc"));
    #[cfg(unix)]
    {
        let outside = s.dir.path().join("outside.json");
        std::fs::write(&outside, "{}").unwrap();
        std::fs::remove_file(&ext).unwrap();
        std::os::unix::fs::symlink(&outside, &ext).unwrap();
        let err = stderr(&s.run(&["skills", "list"]));
        assert!(err.contains("leads out of the project"), "{err}");

        // A config that is a link is neither read nor written through.
        std::fs::remove_file(&project_config).unwrap();
        let target = s.dir.path().join("elsewhere.toml");
        std::fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, &project_config).unwrap();
        for args in [&["skills", "list"][..], &["skills", "disable", "beta"]] {
            let err = stderr(&s.run(args));
            assert!(
                err.contains("is a link") && err.lines().count() == 1,
                "{args:?}: {err}"
            );
        }
        std::fs::remove_file(&target).unwrap();
        let err = stderr(&s.run(&["skills", "disable", "beta"]));
        assert!(err.contains("is a link"), "a dangling link: {err}");
        assert!(!target.exists(), "nothing written through the link");

        // Nor through a linked `.ctxkit` folder, one level up.
        let elsewhere = s.dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::remove_dir_all(s.project().join(".ctxkit")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, s.project().join(".ctxkit")).unwrap();
        for args in [&["skills", "list"][..], &["skills", "disable", "beta"]] {
            let err = stderr(&s.run(args));
            assert!(
                err.contains("is a link") && err.lines().count() == 1,
                "{args:?}: {err}"
            );
        }
        assert!(
            !elsewhere.join("config.toml").exists(),
            "nothing created through the link"
        );
    }
}

#[test]
fn a_skill_that_is_not_user_invocable_is_not_selected_by_name_and_the_match_says_why() {
    let s = Setup::new();
    s.skill(
        "internal",
        "---\nname: internal\ndescription: Internal only\nuser-invocable: false\ntriggers: [internals]\n---\nBODY\n",
    );
    let out = s.ok(&["skills", "match", "use $internal now"]);
    assert!(out.contains("user-invocable: false"), "{out}");
    assert!(out.contains("no skill selected"), "{out}");
    let json_out = s.ok(&["skills", "match", "--json", "/internal please"]);
    let v: Value = serde_json::from_str(json_out.trim()).unwrap();
    assert_eq!(
        (v["skills"].clone(), v["not_invocable"].clone()),
        (json!([]), json!(["internal"]))
    );
    // Its triggers still fire.
    assert_eq!(s.injected(&[], "the internals"), json!(["internal"]));
}

#[test]
fn validate_warns_about_allowed_tools_no_registry_provides() {
    let s = Setup::new();
    s.skill(
        "strict",
        "---\nname: strict\ndescription: Strict\nallowed-tools: [Read, Grep, Teleport]\n---\nBODY\n",
    );
    let o = s.run(&["skills", "validate"]);
    assert!(o.status.success(), "warnings only: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("`Teleport`") && !out.contains("`Read`"), "{out}");
    assert!(out.contains("1 warnings"), "{out}");
}

#[test]
fn validate_warns_about_a_trigger_that_is_a_common_english_word() {
    let s = Setup::new();
    s.skill(
        "jira",
        "---\nname: jira\ndescription: Jira issues\ntriggers: [ticket, jira ticket, how to]\n---\nBODY\n",
    );
    s.skill(
        "k8s",
        "---\nname: k8s\ndescription: Clusters\ntriggers: [kubernetes, helm chart]\n---\nBODY\n",
    );
    let o = s.run(&["skills", "validate"]);
    assert!(o.status.success(), "warnings only: {}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("jira/SKILL.md: warning: trigger `ticket` is a common English word: it fires on everyday sentences such as \"my ticket to Lisbon is booked\", which are not about `jira`; use a phrase (`jira ticket`) instead"),
        "{out}"
    );
    assert!(
        out.contains("trigger `how to` is made of common English words only"),
        "{out}"
    );
    assert!(
        !out.contains("`jira ticket` is") && !out.contains("k8s/SKILL.md"),
        "{out}"
    );
    assert!(out.contains("2 warnings"), "{out}");
}

#[test]
fn skills_test_lists_fires_on_everyday_sentences_as_warnings() {
    let s = Setup::new();
    s.skill(
        "jira",
        "---\nname: jira\ndescription: Jira issues\ntriggers: [ticket]\nexamples:\n  fire: [\"open a ticket in jira\"]\n---\nBODY\n",
    );
    s.skill(
        "k8s",
        "---\nname: k8s\ndescription: Clusters\ntriggers: [kubernetes]\n---\nBODY\n",
    );
    let o = s.run(&["skills", "test", "--skill", "jira", "--skill", "k8s"]);
    assert!(o.status.success(), "a warning, not a failure: {}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("warn jira: 1 hits, 0 misses, 0 false fires, 0 cross-fires, 2 everyday fires"),
        "{out}"
    );
    assert!(
        out.contains("false fire on an everyday sentence: \"my ticket to Lisbon is booked\" fires it (triggers: ticket)"),
        "{out}"
    );
    assert!(!out.contains("k8s"), "{out}");
    assert!(
        out.contains("1 skills tested, 0 failed; 1 fire on everyday sentences"),
        "{out}"
    );
    let o = s.run(&[
        "skills",
        "test",
        "--skill",
        "jira",
        "--deny-everyday-fires",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["everyday_fires"][0]["triggers"], json!(["ticket"]), "{v}");
}

#[test]
fn skills_new_scaffolds_a_skill_that_validates_and_passes_its_examples() {
    let s = Setup::new();
    assert!(s
        .ok(&["skills", "new", "pdf-tools"])
        .contains("skills/pdf-tools/SKILL.md"));
    s.ok(&["skills", "validate"]);
    let out = s.ok(&["skills", "test", "--skill", "pdf-tools"]);
    assert!(out.contains("ok   pdf-tools: 2 hits, 0 misses"), "{out}");
    // It follows the specification to the letter, where the setup's skills (top-level
    // `triggers`) do not, and `--spec` says how to fix them.
    s.ok(&["skills", "new", "csv-tools", "--dir", "fresh"]);
    let spec = s.ok(&["skills", "validate", "--spec", "--dir", "fresh"]);
    assert_eq!(spec, "every SKILL.md follows the agentskills.io specification\n");
    let o = s.run(&["skills", "validate", "--spec"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("skills/alpha/SKILL.md:4: error: `triggers` is not a field of the specification")
            && stdout(&o)
                .contains("write `metadata: {triggers: \"deploy, docs\"}`, which ctxkit reads the same way"),
        "{}",
        stdout(&o)
    );
    let again = s.run(&["skills", "new", "pdf-tools"]);
    assert!(stderr(&again).contains("already exists"));
    let bad = s.run(&["skills", "new", "../escape"]);
    assert!(stderr(&bad).contains("is not a skill name"), "{}", stderr(&bad));
    assert!(!s.dir.path().join("escape").exists());
}

#[test]
fn skills_test_reports_hits_misses_false_and_cross_fires_and_exits_1_on_failure() {
    let s = Setup::new();
    s.skill(
        "greet",
        "---\nname: greet\ndescription: Greetings\ntriggers: [hello]\nexamples:\n  fire: [\"hello Bob\", \"bonjour Bob\"]\n  silent: [\"what is 2+2\", \"he helloed back\"]\n---\nBODY\n",
    );
    std::fs::write(
        s.project().join("skills/alpha/tests.jsonl"),
        "{\"text\": \"deploy now\", \"fires\": true}\n{\"text\": \"hello\", \"fires\": true}\n",
    )
    .unwrap();
    let o = s.run(&["skills", "test"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("FAIL greet: 2 hits, 1 misses, 1 false fires, 0 cross-fires"),
        "{out}"
    );
    assert!(out.contains("miss: \"bonjour Bob\""), "{out}");
    assert!(
        out.contains(
            "false fire: \"he helloed back\" should not fire it and does (triggers: hello (as helloed))"
        ),
        "{out}"
    );
    assert!(out.contains("FAIL alpha: 1 hits, 1 misses"), "{out}");
    assert!(
        out.contains("cross-fire: \"deploy now\" also fires `beta`"),
        "{out}"
    );
    assert!(out.contains("2 skills tested, 2 failed"), "{out}");

    // Passing examples exit 0; cross-fires count only when asked.
    let ok = s.run(&["skills", "test", "--skill", "greet", "--skill", "beta"]);
    assert_eq!(ok.status.code(), Some(1), "greet still misses");
    std::fs::write(
        s.project().join("skills/alpha/tests.jsonl"),
        "{\"text\": \"deploy now\", \"fires\": true}\n",
    )
    .unwrap();
    let o = s.run(&["skills", "test", "--skill", "alpha"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let o = s.run(&["skills", "test", "--skill", "alpha", "--deny-cross-fires"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn bundled_skills_pass_their_examples() {
    let s = Setup::new();
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
    let out = s.ok(&["skills", "--dir", skills.to_str().unwrap(), "test"]);
    assert!(out.contains("7 skills tested, 0 failed"), "{out}");
}

#[test]
fn chat_reloads_edited_broken_deleted_and_new_skills_while_it_runs() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::mpsc::{channel, Receiver};
    use std::time::Duration;
    let s = Setup::new();
    std::fs::remove_dir_all(s.project().join("skills/gamma")).unwrap();
    let mut chat = s
        .command()
        .args(["chat", "--no-memory", "--lazy", "--watch", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each pipe's lines arrive on a channel, so the test waits for what it needs.
    fn lines(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        rx
    }
    let replies = lines(chat.stdout.take().unwrap());
    let errors = lines(chat.stderr.take().unwrap());
    let mut stdin = chat.stdin.take().unwrap();
    // Send a message; the skills its reply says were injected.
    let mut say = |text: &str| -> String {
        writeln!(stdin, "{text}").unwrap();
        let reply = replies.recv_timeout(Duration::from_secs(60)).expect("a reply");
        reply
            .split("Skills: ")
            .nth(1)
            .unwrap_or("")
            .split('.')
            .next()
            .unwrap()
            .to_string()
    };
    // Wait for the watcher to report a reload; what it printed with it.
    let reloaded = || -> String {
        let mut said = vec![errors.recv_timeout(Duration::from_secs(30)).expect("a reload")];
        while let Ok(line) = errors.recv_timeout(Duration::from_millis(300)) {
            said.push(line);
        }
        assert!(said[0].starts_with("(skills reloaded"), "{said:?}");
        said.join("\n")
    };
    assert_eq!(say("deploy"), "alpha, beta");
    // An edit and a new skill.
    s.skill(
        "alpha",
        "---\nname: alpha\ndescription: Edited alpha\ntriggers: [ship]\n---\nALPHA2\n",
    );
    s.skill(
        "delta",
        "---\nname: delta\ndescription: New\ntriggers: [deploy]\n---\nDELTA\n",
    );
    reloaded();
    assert_eq!(say("deploy"), "beta, delta");
    // A broken edit keeps the last good alpha and says why.
    s.skill("alpha", "---\nname: alpha\ndescription: [broken\n---\nALPHA3\n");
    let said = reloaded();
    assert!(
        said.contains("cannot be parsed") && said.contains("last good version of skill `alpha`"),
        "{said}"
    );
    assert_eq!(say("ship it"), "alpha");
    // A deletion.
    std::fs::remove_dir_all(s.project().join("skills/beta")).unwrap();
    reloaded();
    assert_eq!(say("deploy"), "delta");
    drop(stdin);
    assert!(chat.wait().unwrap().success());
}

#[test]
fn the_mcp_server_honours_disabled_skills() {
    use std::io::{BufRead, BufReader, Write};
    let s = Setup::new();
    write(
        &s.project().join(".ctxkit/config.toml"),
        "[skills]\ndisabled = [\"beta\"]\n",
    );
    let mut child = s
        .command()
        .args(["mcp", "--watch", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        writeln!(
            input,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        if id == 1 {
            writeln!(
                input,
                "{}",
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            )
            .unwrap();
        }
        loop {
            let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let listed = ask(2, "tools/call", json!({"name": "list_skills", "arguments": {}}));
    let names: Vec<&str> = listed["result"]["structuredContent"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "gamma"], "{listed}");
    let read = ask(
        3,
        "tools/call",
        json!({"name": "read_skill", "arguments": {"name": "beta"}}),
    );
    assert_eq!(read["result"]["isError"], true, "{read}");
    drop(input);
    child.wait().unwrap();
}

/// One decision everywhere: for one project and message, `context`, the hook (session start,
/// then the prompt) and MCP `match_skills` name the same skills — a skill the project's files
/// detect, a trigger match, and not the skill the project turned off.
#[test]
fn context_the_hook_and_mcp_select_the_same_skills() {
    use std::io::{BufRead, BufReader, Write};
    let s = Setup {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(s.project()).unwrap();
    write(
        &s.project().join("Cargo.toml"),
        "[package]\nname = \"p\"\n[dependencies]\ntokio = \"1\"\n",
    );
    s.skill(
        "async-rust",
        "---\nname: async-rust\ndescription: Async Rust with tokio\ndetect:\n  files: [Cargo.toml]\n  patterns: [tokio]\n---\nASYNC-BODY\n",
    );
    s.skill(
        "greet",
        "---\nname: greet\ndescription: Greetings\ntriggers: [greet]\n---\nGREET-BODY\n",
    );
    s.skill(
        "zebra",
        "---\nname: zebra\ndescription: Zebra team rules\ntriggers: [zebra]\n---\nZEBRA-BODY\n",
    );
    s.ok(&["skills", "disable", "zebra"]);
    let message = "I greet the zebra team";
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let expected = ["async-rust", "greet"];

    // `context --json`.
    let context: Vec<String> = serde_json::from_value(s.injected(&[], message)).unwrap();
    assert_eq!(sorted(context), expected);

    // The hook: what the session start and the prompt send together.
    let project = s.project().canonicalize().unwrap();
    let mut sent = Vec::new();
    for event in [
        json!({"session_id": "one", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}),
        json!({"session_id": "one", "cwd": project, "hook_event_name": "UserPromptSubmit", "prompt": message}),
    ] {
        let o = support::run_with_stdin(
            s.command()
                .args(["hook", "claude-code", "--no-memory", "--strict"]),
            event.to_string().as_bytes(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        for (name, body) in [
            ("async-rust", "ASYNC-BODY"),
            ("greet", "GREET-BODY"),
            ("zebra", "ZEBRA-BODY"),
        ] {
            if out.contains(body) {
                sent.push(name.to_string());
            }
        }
    }
    assert_eq!(sorted(sent), expected);

    // MCP `match_skills`.
    let mut child = s
        .command()
        .args(["mcp", "--watch", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "match_skills", "arguments": {"message": message}}}),
    ] {
        writeln!(input, "{message}").unwrap();
    }
    let answer = loop {
        let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if v["id"] == 2 {
            break v;
        }
    };
    let matched: Vec<String> = answer["result"]["structuredContent"]["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sorted(matched), expected);
    drop(input);
    child.wait().unwrap();
}

/// A skill without triggers is selected by its description; `--explain` says what counted and
/// why the others were left out, and `context --json` carries the same evidence.
#[test]
fn skills_match_explains_the_ranking_and_its_near_misses() {
    let s = Setup::new();
    s.skill(
        "pdf-tools",
        "---\nname: pdf-tools\ndescription: Merge, split and rotate PDF documents.\n---\nBODY\n",
    );
    s.skill(
        "release-notes",
        "---\nname: release-notes\ndescription: Write release notes from the changelog of the app.\n---\nBODY\n",
    );
    let out = s.ok(&["skills", "match", "--explain", "rotate this pdf and merge it"]);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("pdf-tools") && first.contains("lexical"),
        "{out}"
    );
    assert!(
        out.contains("(floor 1.50)")
            && out.contains("name: pdf")
            && out.contains("description: rotate, merge"),
        "{out}"
    );

    let out = s.ok(&[
        "skills",
        "match",
        "--explain",
        "notes on the changelog would be nice",
    ]);
    assert!(out.starts_with("release-notes"), "{out}");
    let out = s.ok(&["skills", "match", "--explain", "what a nice app"]);
    assert!(out.contains("no skill selected"), "{out}");
    assert!(
        out.contains("release-notes") && out.contains("not selected: below the floor"),
        "{out}"
    );

    let v: Value =
        serde_json::from_str(s.ok(&["skills", "match", "--json", "what a nice app"]).trim()).unwrap();
    assert_eq!(v["near"][0]["name"], "release-notes");
    assert_eq!(v["near"][0]["why"], "below the floor");
    assert_eq!(v["near"][0]["evidence"]["description_words"], json!(["app"]));

    let v: Value =
        serde_json::from_str(&s.ok(&["context", "--json", "rotate this pdf and merge it"])).unwrap();
    assert_eq!(v["selected"][0]["name"], "pdf-tools");
    assert!(
        v["selected"][0]["evidence"]["score"].as_f64().unwrap() >= 1.5,
        "{}",
        v["selected"][0]
    );
}

/// A Cursor rule and a Copilot instructions file in the project load as skills: `skills list`
/// names their format, a rule whose globs match a project file is detected and injected, and
/// the repository-wide Copilot file is injected with every request.
#[test]
fn cursor_rules_and_copilot_instructions_are_listed_detected_and_injected() {
    let s = Setup::new();
    write(
        &s.project().join(".cursor/rules/react.mdc"),
        "---\ndescription: React components\nglobs: [\"**/*.tsx\"]\nalwaysApply: false\n---\nREACT-RULE-BODY\n",
    );
    write(
        &s.project().join(".github/copilot-instructions.md"),
        "# Repository rules\nCOPILOT-BODY\n",
    );
    let list = s.ok(&["skills", "list"]);
    let row = |name: &str| {
        list.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{list}"))
    };
    assert!(row("react ").contains(" cursor "), "{list}");
    assert!(row("copilot-instructions").contains(" copilot "), "{list}");
    assert!(row("alpha").contains(" skill "), "{list}");
    let json = s.ok(&["skills", "list", "--json"]);
    assert!(json.contains(r#""format":"cursor""#), "{json}");

    let names = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let injected = names(s.injected(&[], "hello there"));
    assert!(
        injected.contains(&"copilot-instructions".to_string()),
        "{injected:?}"
    );
    assert!(
        !injected.contains(&"react".to_string()),
        "no .tsx file yet: {injected:?}"
    );
    assert_eq!(s.ok(&["skills", "detect", "--json"]), "");

    write(&s.project().join("src/App.tsx"), "export {}\n");
    let detect: Value = serde_json::from_str(s.ok(&["skills", "detect", "--json"]).trim()).unwrap();
    assert_eq!(
        detect,
        json!({"name": "react", "files": ["src/App.tsx"], "patterns": []})
    );
    let injected = names(s.injected(&[], "hello there"));
    assert!(injected.contains(&"react".to_string()), "{injected:?}");

    // Always-on and detected skills count against the cap: with room for one, the
    // repository-wide file is sent and the detected rule is left out, in the JSON and in the
    // preview.
    let v: Value = serde_json::from_str(
        s.ok(&[
            "context",
            "--no-memory",
            "--max-skills",
            "1",
            "--json",
            "hello there",
        ])
        .trim(),
    )
    .unwrap();
    assert_eq!(v["stats"]["skills"], json!(["copilot-instructions"]));
    assert_eq!(
        v["left_out"],
        json!([{"kind": "skills", "name": "react", "why": "past the cap"}])
    );
    let preview = s.ok(&["context", "--no-memory", "--max-skills", "1", "hello there"]);
    assert!(
        preview.contains("left out skills react: past the cap"),
        "{preview}"
    );
}
