//! Skill tools (a skill's `tools.json`): parsing and its diagnostics, argv building, running
//! allowlisted programs and scripts under a timeout and an output cap, the refusals, and which
//! tools the provider offers in each mode.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxkit::{ContextProvider, Error, Message, RunInfo, Tool};
use ctxkit_skills::{
    ExecOptions, Mode, Skill, SkillConfig, SkillContextProvider, SkillIndex, SkillLibrary, SkillRoot,
    SkillTool, Source, ToolSpec, ToolTrust,
};
use serde_json::{json, Value};

/// The specs of a descriptor that must be valid.
fn specs(descriptor: &Value) -> Vec<ToolSpec> {
    let (specs, diags) = ToolSpec::parse(Path::new("s/tools.json"), &descriptor.to_string());
    assert!(diags.is_empty(), "{diags:?}");
    specs
}

/// A descriptor with one tool running `command` (allowlisted) with `args` and `params`.
fn one_tool(command: &str, args: Value, params: Value) -> Value {
    json!({
        "allowlist": [command],
        "tools": [{"name": "t", "description": "A test tool.", "command": command, "args": args, "parameters": params}]
    })
}

fn tool_in(dir: &Path, descriptor: &Value, options: ExecOptions) -> SkillTool {
    SkillTool::new(specs(descriptor).remove(0), dir, options)
}

fn refusal(result: ctxkit::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(Error::ToolArguments { tool, message }) => {
            assert_eq!(tool, "t");
            message
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn failure(result: ctxkit::Result<String>) -> String {
    match result {
        Err(Error::Tool { tool, message }) => {
            assert_eq!(tool, "t");
            message
        }
        other => panic!("expected a tool failure, got {other:?}"),
    }
}

#[test]
fn a_good_descriptor_becomes_specs_with_a_generated_schema() {
    let specs = specs(&json!({
        "allowlist": ["git"],
        "tools": [{
            "name": "git_log",
            "description": "Recent commits.",
            "command": "git",
            "args": ["log", "--oneline"],
            "parameters": [
                {"name": "count", "type": "integer", "kind": "flag", "flag": "-n", "required": true, "description": "How many."},
                {"name": "stat", "kind": "flagifboolean", "flag": "--stat"},
                {"name": "path", "path": true}
            ]
        }]
    }));
    assert_eq!(specs.len(), 1);
    let spec = &specs[0];
    assert_eq!((spec.name(), spec.description()), ("git_log", "Recent commits."));
    assert_eq!(spec.args(), ["log", "--oneline"]);
    assert_eq!(
        spec.schema(),
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How many."},
                "stat": {"type": "boolean"},
                "path": {"type": "string"}
            },
            "required": ["count"],
            "additionalProperties": false
        })
    );
    let tool = SkillTool::new(spec.clone(), "s", ExecOptions::default());
    assert_eq!(tool.definition().parameters, spec.schema());
}

#[test]
fn every_bad_descriptor_is_one_warning_and_no_tools() {
    let tool = |extra: Value| {
        let mut t = json!({"name": "t", "command": "ls"});
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        t
    };
    let cases: Vec<(String, &str, Option<usize>)> = vec![
        ("{\n  \"tools\": [\n    {\"name\": \"t\",}\n  ]\n}".into(), "not a valid tool descriptor", Some(3)),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "x", "kind": "flagz"}]}))]}).to_string(),
            "unknown variant `flagz`",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"requried": true}))]}).to_string(),
            "unknown field `requried`",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [{"name": "t", "command": "rm"}]}).to_string(),
            "command `rm` is not in this file's allowlist",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [{"name": "t", "command": "/bin/ls"}]}).to_string(),
            "must be a bare program name",
            Some(1),
        ),
        (
            json!({"allowlist": ["../bin/ls"], "tools": []}).to_string(),
            "allowlist entry `../bin/ls` is not a bare program name",
            None,
        ),
        (
            json!({"tools": [{"name": "t", "command": "scripts/../x"}]}).to_string(),
            "must be `scripts/FILE` with a plain file name",
            Some(1),
        ),
        (
            "{\"allowlist\": [\"ls\"], \"tools\": [\n  {\"name\": \"t\", \"command\": \"ls\"},\n  {\"name\": \"t\", \"command\": \"ls\"}\n]}".into(),
            "tool `t` is declared twice",
            Some(3),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [{"name": "read_skill", "command": "ls"}]}).to_string(),
            "`read_skill` is reserved",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [{"name": "t t", "command": "ls"}]}).to_string(),
            "must be 1 to 64 letters",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n", "kind": "flag"}]}))]}).to_string(),
            "parameter `n` needs a `flag`",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n", "kind": "flag", "flag": "n"}]}))]})
                .to_string(),
            "does not look like an option",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n", "flag": "-n"}]}))]}).to_string(),
            "is positional, so `flag` does not apply",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n", "type": "string", "kind": "flagifboolean", "flag": "-n"}]}))]})
                .to_string(),
            "its type must be boolean",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n", "type": "integer", "path": true}]}))]})
                .to_string(),
            "marked `path`, so its type must be string",
            Some(1),
        ),
        (
            json!({"allowlist": ["ls"], "tools": [tool(json!({"parameters": [{"name": "n"}, {"name": "n"}]}))]}).to_string(),
            "parameter `n` is declared twice",
            Some(1),
        ),
    ];
    for (text, expected, line) in cases {
        let (specs, diags) = ToolSpec::parse(Path::new("skills/x/tools.json"), &text);
        assert!(specs.is_empty(), "{text}");
        assert_eq!(diags.len(), 1, "{text}: {diags:?}");
        let d = &diags[0];
        assert!(!d.is_error(), "a bad descriptor is a warning: {d}");
        assert_eq!(d.path, Path::new("skills/x/tools.json"));
        assert!(d.message.contains(expected), "{text}: {d}");
        assert!(d.message.ends_with("the skill loads without its tools"), "{d}");
        assert_eq!(d.line, line, "{text}: {d}");
    }
}

#[test]
fn one_bad_tool_drops_the_whole_descriptor() {
    let text = json!({"allowlist": ["ls"], "tools": [
        {"name": "good", "command": "ls"},
        {"name": "bad", "command": "rm"}
    ]})
    .to_string();
    let (specs, diags) = ToolSpec::parse(Path::new("tools.json"), &text);
    assert!(specs.is_empty());
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(diags[0].message.contains("tool `bad`"), "{}", diags[0]);
}

/// A skill folder with SKILL.md and, when given, tools.json.
fn write_skill(root: &Path, name: &str, triggers: &str, tools_json: Option<&[u8]>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill\ntriggers: {triggers}\n---\nUse {name}.\n"),
    )
    .unwrap();
    if let Some(tools) = tools_json {
        std::fs::write(dir.join("tools.json"), tools).unwrap();
    }
    dir
}

#[test]
fn loading_attaches_tools_and_a_bad_file_costs_only_the_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let good = one_tool("ls", json!([]), json!([])).to_string();
    write_skill(tmp.path(), "good", "[alpha]", Some(good.as_bytes()));
    write_skill(tmp.path(), "broken", "[beta]", Some(b"{\"tools\": [oops]}"));
    write_skill(tmp.path(), "binary", "[gamma]", Some(b"{\"tools\": [\xff]}"));
    write_skill(tmp.path(), "plain", "[delta]", None);
    let index = SkillIndex::load(&[SkillRoot::new(tmp.path(), Source::Project)]);
    assert_eq!(index.len(), 4, "every skill loads: {:?}", index.diagnostics());
    assert!(!index.has_errors());
    assert_eq!(index.get("good").unwrap().tools.len(), 1);
    for name in ["broken", "binary", "plain"] {
        assert!(index.get(name).unwrap().tools.is_empty(), "{name}");
    }
    let mut diags: Vec<(PathBuf, Option<usize>)> = index
        .diagnostics()
        .iter()
        .map(|d| (d.path.clone(), d.line))
        .collect();
    diags.sort();
    assert_eq!(
        diags,
        [
            (tmp.path().join("binary/tools.json"), Some(1)),
            (tmp.path().join("broken/tools.json"), Some(1)),
        ]
    );
    let binary = index
        .diagnostics()
        .iter()
        .find(|d| d.path.ends_with("binary/tools.json"))
        .unwrap();
    assert!(binary.message.contains("not valid UTF-8"), "{binary}");
}

#[test]
fn argv_follows_the_declared_order_and_kinds() {
    let tool = tool_in(
        Path::new("skill"),
        &one_tool(
            "git",
            json!(["log", "--oneline"]),
            json!([
                {"name": "count", "type": "integer", "kind": "flag", "flag": "-n"},
                {"name": "stat", "kind": "flagifboolean", "flag": "--stat"},
                {"name": "rev", "kind": "positional", "required": true},
                {"name": "ratio", "type": "number", "kind": "flag", "flag": "--ratio"}
            ]),
        ),
        ExecOptions::default(),
    );
    let argv = |args: Value| tool.argv(&args).unwrap();
    assert_eq!(
        argv(json!({"rev": "HEAD", "count": 5, "stat": true, "ratio": 0.5})),
        ["log", "--oneline", "-n", "5", "--stat", "HEAD", "--ratio", "0.5"]
    );
    assert_eq!(
        argv(json!({"rev": "main", "stat": false, "count": null})),
        ["log", "--oneline", "main"],
        "false booleans and missing or null optionals add nothing"
    );

    assert!(refusal(tool.argv(&json!({}))).contains("missing required argument `rev`"));
    let wrong = refusal(tool.argv(&json!({"rev": "x", "count": "five"})));
    assert!(wrong.contains("argument `count` must be a integer"), "{wrong}");
    let wrong = refusal(tool.argv(&json!({"rev": "x", "count": 1.5})));
    assert!(wrong.contains("argument `count` must be a integer"), "{wrong}");
    let unknown = refusal(tool.argv(&json!({"rev": "x", "force": true})));
    assert!(
        unknown.contains("unknown argument `force`; this tool takes count, stat, rev, ratio"),
        "{unknown}"
    );
}

#[test]
fn free_text_belongs_in_a_flag_value() {
    let tool = tool_in(
        Path::new("skill"),
        &one_tool(
            "grep",
            json!([]),
            json!([{"name": "pattern", "kind": "flag", "flag": "-e"}, {"name": "word"}]),
        ),
        ExecOptions::default(),
    );
    assert_eq!(
        tool.argv(&json!({"pattern": "-a|b*$"})).unwrap(),
        ["-e", "-a|b*$"]
    );
    let refused = refusal(tool.argv(&json!({"word": "a|b"})));
    assert!(
        refused.contains("argument `word` contains the shell metacharacter '|'"),
        "{refused}"
    );
}

#[test]
fn every_escape_is_refused_with_the_argument_named() {
    let tmp = tempfile::tempdir().unwrap();
    let tool = tool_in(
        tmp.path(),
        &one_tool(
            "echo",
            json!([]),
            json!([{"name": "file", "path": true, "required": true}]),
        ),
        ExecOptions::default(),
    );
    for (value, reason) in [
        ("; rm -rf /", "contains the shell metacharacter ';'"),
        ("$(id)", "contains the shell metacharacter '$'"),
        ("`id`", "contains the shell metacharacter '`'"),
        ("a\nb", "contains the shell metacharacter '\\n'"),
        ("~/.ssh/id_rsa", "contains the shell metacharacter '~'"),
        ("-rf", "starts with `-`"),
        ("../../etc/passwd", "leads outside the allowed folders"),
        ("sub/../../x", "leads outside the allowed folders"),
        ("/etc/passwd", "is the absolute path `/etc/passwd`"),
        ("nul\0byte", "contains a NUL byte"),
    ] {
        let message = refusal(tool.argv(&json!({ "file": value })));
        assert!(message.starts_with("argument `file` "), "{value:?}: {message}");
        assert!(message.contains(reason), "{value:?}: {message}");
    }
    assert_eq!(
        tool.argv(&json!({"file": "sub/../notes.md"})).unwrap(),
        ["sub/../notes.md"]
    );
    assert_eq!(
        tool.argv(&json!({"file": "./a b.txt"})).unwrap(),
        ["./a b.txt"],
        "spaces are just characters"
    );
}

#[test]
fn the_workspace_root_is_the_working_folder_and_an_allowed_root() {
    let tmp = tempfile::tempdir().unwrap();
    let skill = tmp.path().join("skills/s");
    let workspace = tmp.path().join("project");
    let tool = tool_in(
        &skill,
        &one_tool("cat", json!([]), json!([{"name": "file", "path": true}])),
        ExecOptions {
            workspace_root: Some(workspace.clone()),
            ..Default::default()
        },
    );
    assert_eq!(tool.working_dir(), workspace);
    assert!(tool.argv(&json!({"file": "src/main.rs"})).is_ok());
    assert!(
        tool.argv(&json!({"file": "../skills/s/SKILL.md"})).is_ok(),
        "the skill folder too"
    );
    assert!(tool.argv(&json!({"file": "../skills/other/SKILL.md"})).is_err());

    let alone = tool_in(
        &skill,
        &one_tool("cat", json!([]), json!([{"name": "file", "path": true}])),
        ExecOptions::default(),
    );
    assert_eq!(
        alone.working_dir(),
        skill,
        "without a workspace root, tools run in their skill's folder"
    );
    assert!(alone.argv(&json!({"file": "../../project/x"})).is_err());
}

#[cfg(unix)]
mod running {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_allowlisted_program_runs_without_a_shell() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool_in(
            tmp.path(),
            &one_tool(
                "echo",
                json!(["hello"]),
                json!([{"name": "word"}, {"name": "note", "kind": "flag", "flag": "--note"}]),
            ),
            ExecOptions::default(),
        );
        assert_eq!(
            tool.call(json!({"word": "world"})).await.unwrap(),
            "hello world\n"
        );
        // A flag value may hold anything but NUL, and no shell ever expands it.
        let out = tool.call(json!({"note": "$HOME; id"})).await.unwrap();
        assert_eq!(out, "hello --note $HOME; id\n");
    }

    #[tokio::test]
    async fn ls_lists_a_folder_and_a_failure_is_output_with_its_status() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub/b.txt"), "").unwrap();
        std::fs::write(tmp.path().join("sub/a.txt"), "").unwrap();
        let tool = tool_in(
            tmp.path(),
            &one_tool("ls", json!(["-1"]), json!([{"name": "dir", "path": true}])),
            ExecOptions::default(),
        );
        assert_eq!(tool.call(json!({"dir": "sub"})).await.unwrap(), "a.txt\nb.txt\n");
        let missing = tool.call(json!({"dir": "missing"})).await.unwrap();
        assert!(missing.contains("missing"), "{missing}");
        let status = missing.lines().last().unwrap();
        assert!(
            status.starts_with("[exit status ") && status != "[exit status 0]",
            "{missing}"
        );

        let root = tool.call(json!({"dir": "sub/../sub/.."})).await.unwrap();
        assert_eq!(root, "sub\n");
        std::fs::create_dir(tmp.path().join("void")).unwrap();
        assert_eq!(tool.call(json!({"dir": "void"})).await.unwrap(), "(no output)");
    }

    #[tokio::test]
    async fn refused_calls_run_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let workspace = tmp.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        let tool = tool_in(
            &workspace,
            &one_tool(
                "touch",
                json!([]),
                json!([{"name": "file", "path": true, "required": true}]),
            ),
            ExecOptions::default(),
        );
        for value in [
            "x; touch y",
            "$(touch y)",
            "../escaped",
            "sub/../../escaped",
            "-c",
        ] {
            refusal(tool.call(json!({ "file": value })).await);
        }
        assert_eq!(std::fs::read_dir(&workspace).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "nothing was created beside the workspace"
        );
        // The same tool, given a `..` that stays inside, does run.
        std::fs::create_dir(workspace.join("sub")).unwrap();
        assert_eq!(
            tool.call(json!({"file": "sub/../inside"})).await.unwrap(),
            "(no output)"
        );
        assert!(workspace.join("inside").exists());
    }

    fn script_skill(tmp: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmp.join("s");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        let script = dir.join("scripts/greet");
        std::fs::write(&script, "#!/bin/sh\ntouch ran\necho \"hi $1\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn script_descriptor() -> Value {
        json!({"tools": [{"name": "t", "command": "scripts/greet", "parameters": [{"name": "who", "required": true}]}]})
    }

    #[tokio::test]
    async fn scripts_run_only_when_allowed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = script_skill(tmp.path());
        let refused = tool_in(&dir, &script_descriptor(), ExecOptions::default());
        let message = failure(refused.call(json!({"who": "Alice"})).await);
        assert!(message.contains("skill scripts are disabled"), "{message}");
        assert!(!dir.join("ran").exists());

        let allowed = tool_in(
            &dir,
            &script_descriptor(),
            ExecOptions {
                allow_scripts: true,
                ..Default::default()
            },
        );
        assert_eq!(allowed.call(json!({"who": "Alice"})).await.unwrap(), "hi Alice\n");
        assert!(dir.join("ran").exists(), "the script ran in its skill's folder");
    }

    #[tokio::test]
    async fn a_script_linking_out_of_its_folder_never_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = script_skill(tmp.path());
        std::fs::remove_file(dir.join("scripts/greet")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", dir.join("scripts/greet")).unwrap();
        let tool = tool_in(
            &dir,
            &script_descriptor(),
            ExecOptions {
                allow_scripts: true,
                ..Default::default()
            },
        );
        let message = failure(tool.call(json!({"who": "x"})).await);
        assert!(message.contains("not a regular file inside"), "{message}");
    }

    #[tokio::test]
    async fn tools_see_no_secrets_in_their_environment() {
        // Set once for this test binary; no other test reads these names.
        std::env::set_var("CTXKIT_TEST_API_KEY", "sk-must-not-leak");
        std::env::set_var("CTXKIT_TEST_HARMLESS", "visible");
        let tmp = tempfile::tempdir().unwrap();
        let descriptor =
            json!({"allowlist": ["printenv"], "tools": [{"name": "env", "command": "printenv"}]});
        let options = ExecOptions {
            pass_env: vec!["CTXKIT_TEST_HARMLESS".into(), "CTXKIT_TEST_API_KEY".into()],
            ..Default::default()
        };
        let out = tool_in(tmp.path(), &descriptor, options)
            .call(json!({}))
            .await
            .unwrap();
        assert!(out.contains("CTXKIT_TEST_HARMLESS=visible"), "{out}");
        assert!(out.contains("PATH="), "{out}");
        assert!(!out.contains("sk-must-not-leak"), "{out}");
        let inherited = tool_in(tmp.path(), &descriptor, ExecOptions::default())
            .call(json!({}))
            .await
            .unwrap();
        assert!(
            !inherited.contains("CTXKIT_TEST_HARMLESS"),
            "nothing is inherited unless listed"
        );
    }

    #[tokio::test]
    async fn a_slow_command_is_stopped_at_the_timeout() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool_in(
            tmp.path(),
            &one_tool(
                "sleep",
                json!([]),
                json!([{"name": "seconds", "type": "integer", "required": true}]),
            ),
            ExecOptions {
                timeout: Duration::from_millis(100),
                ..Default::default()
            },
        );
        let message = failure(tool.call(json!({"seconds": 5})).await);
        assert_eq!(message, "`sleep` timed out after 100ms and was stopped");
    }

    #[tokio::test]
    async fn a_command_is_stopped_when_its_run_is_cancelled() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool_in(
            tmp.path(),
            &one_tool(
                "sleep",
                json!([]),
                json!([{"name": "seconds", "type": "integer", "required": true}]),
            ),
            ExecOptions::default(),
        );
        let ctx = ctxkit::ToolContext::default();
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let message = failure(tool.call_in(json!({"seconds": 30}), &ctx).await);
        assert_eq!(message, "`sleep` was stopped: the run it served ended");
    }

    #[tokio::test]
    async fn output_is_capped_and_marked() {
        let tmp = tempfile::tempdir().unwrap();
        let options = ExecOptions {
            output_cap: 16,
            ..Default::default()
        };
        let printf = tool_in(
            tmp.path(),
            &one_tool("printf", json!(["%s"]), json!([{"name": "text"}])),
            options.clone(),
        );
        let out = printf.call(json!({"text": "a".repeat(100)})).await.unwrap();
        assert_eq!(
            out,
            format!(
                "{}\n[… output truncated at 16 bytes; the command was stopped]",
                "a".repeat(16)
            )
        );
        let exact = printf.call(json!({"text": "b".repeat(16)})).await.unwrap();
        assert_eq!(
            exact,
            "b".repeat(16),
            "output of exactly the cap is not truncated"
        );
        // A cut never splits a character: 'é' is two bytes, the 16th byte starts the ninth.
        let accents = printf.call(json!({"text": "é".repeat(20)})).await.unwrap();
        assert!(
            accents.starts_with(&format!("{}\n[…", "é".repeat(8))),
            "{accents}"
        );

        // Endless output ends at the cap rather than at the timeout (which would be an error).
        let yes = tool_in(
            tmp.path(),
            &one_tool("yes", json!([]), json!([])),
            ExecOptions {
                output_cap: 1000,
                timeout: Duration::from_secs(20),
                ..Default::default()
            },
        );
        let out = yes.call(json!({})).await.unwrap();
        assert!(
            out.ends_with("[… output truncated at 1000 bytes; the command was stopped]"),
            "{out}"
        );
        assert_eq!(out.matches("y\n").count(), 500);
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool_in(
            tmp.path(),
            &one_tool("ctxkit-no-such-program", json!([]), json!([])),
            ExecOptions::default(),
        );
        let message = failure(tool.call(json!({})).await);
        assert!(
            message.starts_with("cannot start `ctxkit-no-such-program`"),
            "{message}"
        );
    }
}

/// A skill built in memory, with the tools of `descriptor`.
fn skill_with_tools(name: &str, triggers: &str, extra: &str, descriptor: &Value) -> Skill {
    let mut skill = common::skill(name, triggers, extra);
    skill.tools = specs(descriptor);
    skill
}

fn named_tool(name: &str, command: &str) -> Value {
    json!({"allowlist": ["ls"], "tools": [{"name": name, "command": command}]})
}

fn tool_library() -> Arc<SkillLibrary> {
    Arc::new(SkillLibrary::from_index(common::index(vec![
        skill_with_tools("files", "[grep]", "", &named_tool("list_files", "ls")),
        skill_with_tools(
            "scripted",
            "[deploy]",
            "",
            &json!({"tools": [{"name": "deploy_now", "command": "scripts/deploy"}]}),
        ),
        common::skill("greet", "[hello]", ""),
    ])))
}

/// Tools that trust every skill of [`tool_library`].
fn trusting(allow_scripts: bool) -> ExecOptions {
    ExecOptions {
        trust: ToolTrust::default().skill("files").skill("scripted"),
        allow_scripts,
        ..Default::default()
    }
}

async fn offered_with(mode: Mode, tools: ExecOptions, message: &str) -> Vec<String> {
    let provider = SkillContextProvider::new(
        tool_library(),
        SkillConfig {
            mode,
            tools,
            ..Default::default()
        },
    );
    let ctx = provider
        .invoking(&[Message::user(message)], &RunInfo::default())
        .await
        .unwrap();
    ctx.tools.iter().map(|t| t.name().to_string()).collect()
}

async fn offered(mode: Mode, allow_scripts: bool, message: &str) -> Vec<String> {
    offered_with(mode, trusting(allow_scripts), message).await
}

#[tokio::test]
async fn untrusted_skills_offer_no_tools() {
    let untrusted = ExecOptions {
        allow_scripts: true,
        ..Default::default()
    };
    assert!(offered_with(Mode::Full, untrusted.clone(), "grep and deploy")
        .await
        .is_empty());
    assert_eq!(
        offered_with(Mode::Hybrid, untrusted, "grep and deploy").await,
        ["read_skill", "read_skills"]
    );
    let only_files = ExecOptions {
        trust: ToolTrust::default().skill("FILES"),
        allow_scripts: true,
        ..Default::default()
    };
    assert_eq!(
        offered_with(Mode::Full, only_files, "x").await,
        ["list_files"],
        "trust names one skill (case-insensitively), not every skill"
    );
}

#[tokio::test]
async fn trusting_a_root_trusts_the_skills_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    let trusted = tmp.path().join("trusted");
    let other = tmp.path().join("other");
    let descriptor = br#"{"allowlist": ["ls"], "tools": [{"name": "ls_a", "command": "ls"}]}"#;
    write_skill(&trusted, "a", "[grep]", Some(descriptor));
    let descriptor = br#"{"allowlist": ["ls"], "tools": [{"name": "ls_b", "command": "ls"}]}"#;
    write_skill(&other, "b", "[grep]", Some(descriptor));
    let library = Arc::new(SkillLibrary::load(vec![
        SkillRoot::new(&trusted, Source::Project),
        SkillRoot::new(&other, Source::Project),
    ]));
    let provider = SkillContextProvider::new(
        library,
        SkillConfig {
            mode: Mode::Full,
            tools: ExecOptions {
                trust: ToolTrust::default().root(tmp.path().join("trusted/../trusted")),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let ctx = provider
        .invoking(&[Message::user("grep")], &RunInfo::default())
        .await
        .unwrap();
    let names: Vec<&str> = ctx.tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["ls_a"]);
}

#[test]
fn a_huge_descriptor_is_one_warning_not_a_flood() {
    let allowlist: Vec<String> = (0..20_000).map(|i| format!("p{i}")).collect();
    let tools: Vec<Value> = (0..100)
        .map(|i| json!({"name": format!("t{i}"), "command": "nope"}))
        .collect();
    let text = json!({"allowlist": allowlist, "tools": tools}).to_string();
    let (specs, diags) = ToolSpec::parse(Path::new("s/tools.json"), &text);
    assert!(specs.is_empty());
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(
        diags[0].message.contains("100 tools, more than the 64 allowed"),
        "{}",
        diags[0]
    );

    let tools: Vec<Value> = (0..60)
        .map(|i| json!({"name": format!("t{i}"), "command": "nope"}))
        .collect();
    let text = json!({"allowlist": ["ls"], "tools": tools}).to_string();
    let (_, diags) = ToolSpec::parse(Path::new("s/tools.json"), &text);
    assert_eq!(diags.len(), 17, "16 problems and a count");
    assert_eq!(diags[16].message, "44 more problems not shown");
}

#[cfg(unix)]
#[tokio::test]
async fn trust_follows_the_folder_a_skill_was_found_in_not_where_its_file_links() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    write_skill(&skills.join("reviewed"), "x", "[grep]", None);
    let descriptor = br#"{"allowlist": ["ls"], "tools": [{"name": "smuggled", "command": "ls"}]}"#;
    let aaa = write_skill(&skills, "aaa", "[grep]", Some(descriptor));
    std::fs::remove_file(aaa.join("SKILL.md")).unwrap();
    std::os::unix::fs::symlink(skills.join("reviewed/x/SKILL.md"), aaa.join("SKILL.md")).unwrap();
    let provider = SkillContextProvider::new(
        Arc::new(SkillLibrary::load(vec![SkillRoot::new(&skills, Source::Project)])),
        SkillConfig {
            mode: Mode::Full,
            tools: ExecOptions {
                trust: ToolTrust::default().root(skills.join("reviewed")),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let ctx = provider
        .invoking(&[Message::user("grep")], &RunInfo::default())
        .await
        .unwrap();
    assert!(
        ctx.tools.is_empty(),
        "the tools.json of an untrusted folder stays off"
    );
}

#[tokio::test]
async fn interpreters_run_only_when_the_user_names_them() {
    let library = Arc::new(SkillLibrary::from_index(common::index(vec![skill_with_tools(
        "evil",
        "[run]",
        "",
        &json!({"allowlist": ["sh"], "tools": [{"name": "t", "command": "sh", "parameters": [{"name": "script", "kind": "flag", "flag": "-c"}]}]}),
    )])));
    let provider = |allow: &[&str]| {
        SkillContextProvider::new(
            library.clone(),
            SkillConfig {
                mode: Mode::Full,
                tools: ExecOptions {
                    trust: ToolTrust::default().skill("evil"),
                    allow_interpreters: allow.iter().map(|s| s.to_string()).collect(),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
    };
    let run = RunInfo::default();
    let refused = provider(&[])
        .invoking(&[Message::user("run")], &run)
        .await
        .unwrap();
    assert!(
        refused.tools.is_empty(),
        "the skill's own allowlist is not enough"
    );
    let allowed = provider(&["sh"])
        .invoking(&[Message::user("run")], &run)
        .await
        .unwrap();
    assert_eq!(allowed.tools.len(), 1);

    // Built by hand without the user's allowance, the tool still refuses to start `sh`.
    let spec = library.snapshot().get("evil").unwrap().tools[0].clone();
    let tool = SkillTool::new(spec, ".", ExecOptions::default());
    let message = failure(tool.call(json!({"script": "echo pwned"})).await);
    assert!(message.contains("`sh`, which is a shell"), "{message}");
    assert!(message.contains("`--allow-interpreter sh`"), "{message}");

    // A launcher is an interpreter by another name (`taskset -c 0 sh -c …`).
    let spec =
        specs(&json!({"allowlist": ["taskset"], "tools": [{"name": "t", "command": "taskset"}]}))[0].clone();
    let message = failure(
        SkillTool::new(spec, ".", ExecOptions::default())
            .call(json!({}))
            .await,
    );
    assert!(message.contains("`taskset`, which is a launcher"), "{message}");
}

/// A program with a shell escape is an interpreter too: a trusted `sqlite3` tool with a free
/// SQL argument would run `.shell` or write any file with `.once`. It is not offered until the
/// user names it, and a call says why.
#[tokio::test]
async fn programs_with_a_shell_escape_run_only_when_the_user_names_them() {
    let descriptor = json!({"allowlist": ["sqlite3"], "tools": [{"name": "t", "command": "sqlite3",
        "args": ["data.db"], "parameters": [{"name": "sql", "kind": "flag", "flag": "-cmd"}]}]});
    let library = Arc::new(SkillLibrary::from_index(common::index(vec![skill_with_tools(
        "db",
        "[query]",
        "",
        &descriptor,
    )])));
    let offered = |allow: &[&str]| {
        let provider = SkillContextProvider::new(
            library.clone(),
            SkillConfig {
                mode: Mode::Full,
                tools: ExecOptions {
                    trust: ToolTrust::default().skill("db"),
                    allow_interpreters: allow.iter().map(|s| s.to_string()).collect(),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        async move {
            provider
                .invoking(&[Message::user("query")], &RunInfo::default())
                .await
                .unwrap()
                .tools
                .len()
        }
    };
    assert_eq!(offered(&[]).await, 0, "trusting the skill is not enough");
    assert_eq!(offered(&["sqlite3"]).await, 1);

    let spec = specs(&descriptor)[0].clone();
    let message = failure(
        SkillTool::new(spec, ".", ExecOptions::default())
            .call(json!({"sql": ".shell touch pwned"}))
            .await,
    );
    assert!(
        message.contains("`sqlite3`, which can run a shell (`.shell`, `.system`)"),
        "{message}"
    );
    assert!(message.contains("`--allow-interpreter sqlite3`"), "{message}");
}

#[tokio::test]
async fn a_skills_tools_come_with_its_selection() {
    assert!(offered(Mode::Triggered, false, "What is 2+2?").await.is_empty());
    assert!(
        offered(Mode::Triggered, false, "hello there").await.is_empty(),
        "greet has no tools"
    );
    assert_eq!(
        offered(Mode::Triggered, false, "grep for it").await,
        ["list_files"]
    );
    assert_eq!(offered(Mode::Triggered, true, "deploy it").await, ["deploy_now"]);
    assert!(
        offered(Mode::Triggered, false, "deploy it").await.is_empty(),
        "script tools are not offered while scripts are disabled"
    );

    assert_eq!(
        offered(Mode::Hybrid, false, "What is 2+2?").await,
        ["read_skill", "read_skills"]
    );
    assert_eq!(
        offered(Mode::Hybrid, false, "grep for it").await,
        ["read_skill", "read_skills", "list_files"]
    );
    assert_eq!(
        offered(Mode::OnDemand, true, "grep and deploy").await,
        ["read_skill", "read_skills"]
    );
}

#[tokio::test]
async fn full_mode_offers_every_skills_tools() {
    assert_eq!(offered(Mode::Full, false, "What is 2+2?").await, ["list_files"]);
    let mut all = offered(Mode::Full, true, "What is 2+2?").await;
    all.sort();
    assert_eq!(all, ["deploy_now", "list_files"]);
}

#[tokio::test]
async fn offered_tools_are_built_once_per_snapshot() {
    let library = tool_library();
    let provider = SkillContextProvider::new(
        library.clone(),
        SkillConfig {
            mode: Mode::Full,
            tools: trusting(false),
            ..Default::default()
        },
    );
    let run = RunInfo::default();
    let first = provider.invoking(&[Message::user("a")], &run).await.unwrap();
    let second = provider.invoking(&[Message::user("b")], &run).await.unwrap();
    assert!(Arc::ptr_eq(&first.tools[0], &second.tools[0]));
    library.swap(Arc::new(common::index(vec![skill_with_tools(
        "files",
        "[grep]",
        "",
        &named_tool("list_files", "ls"),
    )])));
    let third = provider.invoking(&[Message::user("c")], &run).await.unwrap();
    assert!(
        !Arc::ptr_eq(&first.tools[0], &third.tools[0]),
        "a new snapshot builds its own tools"
    );
}

#[tokio::test]
async fn a_tool_name_two_skills_declare_stays_with_the_higher_priority() {
    let index = common::index(vec![
        skill_with_tools(
            "low",
            "[grep]",
            "priority: 100\n",
            &named_tool("list_files", "ls"),
        ),
        skill_with_tools(
            "high",
            "[grep]",
            "priority: 300\n",
            &named_tool("list_files", "ls"),
        ),
    ]);
    assert!(index.get("low").unwrap().tools.is_empty());
    assert_eq!(index.get("high").unwrap().tools.len(), 1);
    let diags = index.diagnostics();
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].path, Path::new("skills/low/tools.json"));
    assert!(
        diags[0]
            .message
            .contains("tool `list_files` of skill `low` is dropped: skill `high`"),
        "{}",
        diags[0]
    );

    let provider = SkillContextProvider::new(
        Arc::new(SkillLibrary::from_index(index)),
        SkillConfig {
            mode: Mode::Triggered,
            tools: ExecOptions {
                trust: ToolTrust::default().skill("low").skill("high"),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let ctx = provider
        .invoking(&[Message::user("grep")], &RunInfo::default())
        .await
        .unwrap();
    let names: Vec<&str> = ctx.tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["list_files"], "both skills selected, one tool");
}

#[test]
fn config_defaults_keep_tools_safe() {
    let tools = SkillConfig::default().tools;
    assert_eq!(tools.trust, ToolTrust::default(), "no skill is trusted");
    assert!(tools.allow_interpreters.is_empty());
    assert!(tools.pass_env.is_empty());
    assert!(!tools.allow_scripts);
    assert_eq!(tools.timeout, std::time::Duration::from_secs(30));
    assert_eq!(tools.output_cap, 64 * 1024);
    assert_eq!(tools.workspace_root, None);
    assert_eq!(tools, ExecOptions::default());
}

mod shipped {
    use super::*;

    fn library() -> SkillIndex {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills");
        SkillIndex::load(&[SkillRoot::new(dir, Source::Project)])
    }

    #[test]
    fn the_file_search_example_loads_its_tools_and_stays_out_of_the_adr_requests() {
        let index = library();
        let tools_warnings: Vec<_> = index
            .diagnostics()
            .iter()
            .filter(|d| d.path.ends_with("tools.json"))
            .collect();
        assert!(tools_warnings.is_empty(), "{tools_warnings:?}");
        let skill = index.get("file-search").expect("skills/file-search loads");
        let names: Vec<&str> = skill.tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["search_files", "list_files"]);
        for query in ["What is 2+2?", "Calculate pi", "Say bonjour to Alice"] {
            let picked = common::pick(&index, query);
            assert!(
                !picked.contains(&"file-search".to_string()),
                "{query}: {picked:?}"
            );
        }
        assert_eq!(
            common::pick(&index, "grep the logs for timeouts"),
            ["file-search"]
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_file_search_tools_run() {
        let index = library();
        let skill = index.get("file-search").unwrap();
        let dir = skill.path.parent().unwrap();
        let tool = |name: &str| {
            let spec = skill.tools.iter().find(|t| t.name() == name).unwrap().clone();
            SkillTool::new(spec, dir, ExecOptions::default())
        };
        let listing = tool("list_files").call(json!({})).await.unwrap();
        assert_eq!(listing, "SKILL.md\ntools.json\n");
        let found = tool("search_files")
            .call(json!({"pattern": "\"name\": \"list_files\"", "path": "."}))
            .await
            .unwrap();
        assert!(found.starts_with("./tools.json:"), "{found}");
        let none = tool("search_files")
            .call(json!({"pattern": "no such text anywhere, ctxkit", "path": "."}))
            .await
            .unwrap();
        assert_eq!(none, "[exit status 1]");
        assert!(tool("search_files")
            .call(json!({"pattern": "root", "path": "../../../etc"}))
            .await
            .is_err());
    }
}
