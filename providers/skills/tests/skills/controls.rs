//! Controls that hold at run time: `allowed-tools` refuses other tools while its skill is
//! active, SKILL.md hooks run (trusted skills only) and a failing `PreToolUse` hook blocks the
//! call, `inject_into` phases, and hot reload keeping the last good version of a broken edit.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::{Agent, Message, Phase, Result, Role, RunInfo, ScriptedModel, Thread, Tool, ToolCall};
use ctxkit_skills::{
    ExecOptions, HookOptions, Mode, SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source,
    ToolTrust,
};
use serde_json::{json, Value};

/// A tool that counts its calls.
struct Counting(&'static str, Arc<AtomicUsize>);

#[async_trait]
impl Tool for Counting {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "counts"
    }
    async fn call(&self, _args: Value) -> Result<String> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{} ran", self.0))
    }
}

fn write_skill(root: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(root.join(name).join("SKILL.md"), text).unwrap();
}

/// One run where the model calls `tool` once and then answers; the tool message and the
/// number of times the tool really ran.
async fn call_once(
    root: &Path,
    trust: ToolTrust,
    hooks: HookOptions,
    message: &str,
    tool: &'static str,
) -> (String, usize) {
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(root, Source::Project)]));
    let config = SkillConfig {
        mode: Mode::Triggered,
        tools: ExecOptions {
            trust,
            ..ExecOptions::default()
        },
        ..SkillConfig::default()
    };
    let provider = SkillContextProvider::new(library, config);
    let hooks = provider.hooks(hooks);
    let ran = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new([
        Message::tool_calls(vec![ToolCall::new("c1", tool, &json!({}))]),
        Message::assistant("done"),
    ]));
    let agent = Agent::builder()
        .model(model)
        .provider(provider)
        .hook(hooks)
        .tool(Counting("Write", ran.clone()))
        .tool(Counting("Read", ran.clone()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, message).await.unwrap();
    let tool_msg = thread.history().iter().find(|m| m.role == Role::Tool).unwrap();
    (tool_msg.content.clone(), ran.load(Ordering::SeqCst))
}

#[tokio::test]
async fn allowed_tools_refuse_other_tools_while_the_skill_is_active() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "review",
        "---\nname: review\ndescription: Read-only review\ntriggers: [review]\nallowed-tools: [Read, Grep]\n---\nOnly read.\n",
    );
    let (out, ran) = call_once(
        dir.path(),
        ToolTrust::default(),
        HookOptions::default(),
        "review this",
        "Write",
    )
    .await;
    assert_eq!(ran, 0, "{out}");
    assert!(
        out.contains("skill `review`") && out.contains("Read, Grep"),
        "{out}"
    );
    let (out, ran) = call_once(
        dir.path(),
        ToolTrust::default(),
        HookOptions::default(),
        "review this",
        "Read",
    )
    .await;
    assert_eq!((out.as_str(), ran), ("Read ran", 1));
    // Not active: no restriction.
    let (out, ran) = call_once(
        dir.path(),
        ToolTrust::default(),
        HookOptions::default(),
        "hello",
        "Write",
    )
    .await;
    assert_eq!((out.as_str(), ran), ("Write ran", 1));
}

#[cfg(unix)]
#[tokio::test]
async fn hooks_of_trusted_skills_run_and_a_failing_pre_tool_use_hook_blocks_the_call() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "guard",
        "---\nname: guard\ndescription: Guards writes\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - matcher: \"Write|Edit\"\n      hooks:\n        - type: command\n          command: \"false\"\n  PostToolUse:\n    - matcher: \"Read\"\n      hooks:\n        - type: command\n          command: \"touch post-ran\"\n---\nBe careful.\n",
    );
    let trusted = ToolTrust::default().root(dir.path());
    let (out, ran) = call_once(
        dir.path(),
        trusted.clone(),
        HookOptions::default(),
        "deploy it",
        "Write",
    )
    .await;
    assert_eq!(ran, 0, "blocked: {out}");
    assert!(
        out.contains("blocked by skill `guard`'s PreToolUse hook") && out.contains("exit status 1"),
        "{out}"
    );
    // The matcher is a regex on tool names: Read is not matched, and PostToolUse runs for it.
    let (out, ran) = call_once(dir.path(), trusted, HookOptions::default(), "deploy it", "Read").await;
    assert_eq!((out.as_str(), ran), ("Read ran", 1));
    assert!(
        dir.path().join("guard/post-ran").exists(),
        "PostToolUse ran in the skill's folder"
    );
    // Untrusted: the hooks never run.
    std::fs::remove_file(dir.path().join("guard/post-ran")).unwrap();
    let (out, ran) = call_once(
        dir.path(),
        ToolTrust::default(),
        HookOptions::default(),
        "deploy it",
        "Write",
    )
    .await;
    assert_eq!((out.as_str(), ran), ("Write ran", 1));
}

#[cfg(unix)]
#[tokio::test]
async fn a_hook_needing_a_shell_blocks_unless_the_user_allows_one_and_times_out() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "shelly",
        "---\nname: shelly\ndescription: Uses a shell\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - matcher: \"*\"\n      hooks:\n        - type: command\n          command: \"test \\\"$CTXKIT_TOOL_NAME\\\" = Read || { echo no writes; exit 2; }\"\n---\nBody.\n",
    );
    let trusted = ToolTrust::default().root(dir.path());
    let (out, ran) = call_once(
        dir.path(),
        trusted.clone(),
        HookOptions::default(),
        "deploy",
        "Read",
    )
    .await;
    assert_eq!(ran, 0);
    assert!(out.contains("needs a shell"), "{out}");
    // A shell, an interpreter, a launcher or a program with a shell escape named as the program
    // is refused the same way, and so is one under another name (a `scripts/` link to `/bin/sh`).
    std::fs::create_dir_all(dir.path().join("shelly/scripts")).unwrap();
    std::os::unix::fs::symlink("/bin/sh", dir.path().join("shelly/scripts/run")).unwrap();
    for command in [
        "sh -c 'exit 0'",
        "/usr/bin/python3 -c pass",
        "bash.exe x",
        "taskset -c 0 sh -c 'exit 0'",
        "chrt -o 0 sh -c 'exit 0'",
        "prlimit sh -c 'exit 0'",
        "setpriv sh -c 'exit 0'",
        "/lib64/ld-linux-x86-64.so.2 /bin/sh -c 'exit 0'",
        "scripts/run -c 'exit 0'",
        "sqlite3 :memory: '.shell true'",
        "git -c core.pager=true log",
    ] {
        write_skill(
            dir.path(),
            "shelly",
            &format!("---\nname: shelly\ndescription: Uses a shell\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - hooks:\n        - command: \"{command}\"\n---\nBody.\n"),
        );
        let (out, ran) = call_once(
            dir.path(),
            trusted.clone(),
            HookOptions::default(),
            "deploy",
            "Read",
        )
        .await;
        assert_eq!(ran, 0, "{command}");
        assert!(
            out.contains("`, which ") && out.contains("[hooks] shell = true"),
            "{command}: {out}"
        );
    }
    // A relative program is the skill's own file, never one a link leads to outside it.
    std::os::unix::fs::symlink("/bin/true", dir.path().join("shelly/scripts/ok")).unwrap();
    write_skill(
        dir.path(),
        "shelly",
        "---\nname: shelly\ndescription: Uses a shell\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - hooks:\n        - command: \"scripts/ok\"\n---\nBody.\n",
    );
    let (out, ran) = call_once(
        dir.path(),
        trusted.clone(),
        HookOptions::default(),
        "deploy",
        "Read",
    )
    .await;
    assert_eq!(ran, 0);
    assert!(out.contains("not a file inside the skill's folder"), "{out}");
    write_skill(
        dir.path(),
        "shelly",
        "---\nname: shelly\ndescription: Uses a shell\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - matcher: \"*\"\n      hooks:\n        - type: command\n          command: \"test \\\"$CTXKIT_TOOL_NAME\\\" = Read || { echo no writes; exit 2; }\"\n---\nBody.\n",
    );
    let shell = HookOptions {
        allow_shell: true,
        ..HookOptions::default()
    };
    let (out, ran) = call_once(dir.path(), trusted.clone(), shell.clone(), "deploy", "Read").await;
    assert_eq!((out.as_str(), ran), ("Read ran", 1));
    let (out, ran) = call_once(dir.path(), trusted.clone(), shell, "deploy", "Write").await;
    assert_eq!(ran, 0);
    assert!(out.contains("no writes (exit status 2)"), "{out}");

    write_skill(
        dir.path(),
        "shelly",
        "---\nname: shelly\ndescription: Slow\ntriggers: [deploy]\nhooks:\n  PreToolUse:\n    - hooks:\n        - command: \"sleep 5\"\n---\nBody.\n",
    );
    let quick = HookOptions {
        timeout: std::time::Duration::from_millis(200),
        ..HookOptions::default()
    };
    let (out, ran) = call_once(dir.path(), trusted, quick, "deploy", "Read").await;
    assert_eq!(ran, 0);
    assert!(out.contains("timed out"), "{out}");
}

#[tokio::test]
async fn inject_into_limits_a_skill_to_its_phases() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "planner",
        "---\nname: planner\ndescription: Plans\ntriggers: [feature]\ninject_into: [planning]\n---\nPLAN\n",
    );
    write_skill(
        dir.path(),
        "coder",
        "---\nname: coder\ndescription: Codes\ntriggers: [feature]\n---\nCODE\n",
    );
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        dir.path(),
        Source::Project,
    )]));
    let provider = SkillContextProvider::new(library, SkillConfig::default());
    let names = |phase: Option<Phase>| {
        let run = RunInfo {
            phase,
            ..RunInfo::default()
        };
        let (_, selected) = provider.context_for(&[Message::user("a new feature")], &run);
        selected.into_iter().map(|s| s.name).collect::<Vec<_>>()
    };
    assert_eq!(names(None), ["coder", "planner"]);
    assert_eq!(names(Some(Phase::Planning)), ["coder", "planner"]);
    assert_eq!(names(Some(Phase::Implementation)), ["coder"]);
}

#[test]
fn reload_follows_edits_deletions_and_new_skills_and_keeps_the_last_good_version_of_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_skill(
        root,
        "a",
        "---\nname: a\ndescription: A\ntriggers: [alpha]\n---\nA1\n",
    );
    write_skill(
        root,
        "b",
        "---\nname: b\ndescription: B\ntriggers: [beta]\n---\nB1\n",
    );
    let library = SkillLibrary::load(vec![SkillRoot::new(root, Source::Project)]);
    assert!(library.reload_if_changed().is_none(), "nothing changed");
    let before = library.snapshot();

    // An edit.
    write_skill(
        root,
        "a",
        "---\nname: a\ndescription: A\ntriggers: [alpha]\n---\nA2\n",
    );
    let index = library.reload_if_changed().expect("an edit is a change");
    assert_eq!(index.get("a").unwrap().body.as_str().trim(), "A2");
    assert!(Arc::ptr_eq(&index, &library.snapshot()));
    assert_eq!(
        before.get("a").unwrap().body.as_str().trim(),
        "A1",
        "an old snapshot stays as it was"
    );

    // A broken edit: the last good version stays, with the error and a warning.
    write_skill(root, "a", "---\nname: a\ndescription: [unclosed\n---\nA3\n");
    let index = library.reload_if_changed().expect("a new diagnostic is a change");
    assert_eq!(index.get("a").unwrap().body.as_str().trim(), "A2");
    assert!(index.has_errors());
    assert!(
        index
            .diagnostics()
            .iter()
            .any(|d| d.message.contains("last good version")),
        "{:?}",
        index.diagnostics()
    );
    assert_eq!(index.select(&["alpha"], &[], &Default::default())[0].name, "a");

    // A deletion, and a new skill.
    std::fs::remove_dir_all(root.join("b")).unwrap();
    write_skill(
        root,
        "c",
        "---\nname: c\ndescription: C\ntriggers: [gamma]\n---\nC1\n",
    );
    let index = library.reload_if_changed().expect("changed");
    assert!(index.get("b").is_none());
    assert_eq!(index.get("c").unwrap().body.as_str().trim(), "C1");
    assert_eq!(
        index.get("a").unwrap().body.as_str().trim(),
        "A2",
        "still the last good a"
    );

    // Fixed: the new version loads, the warning goes.
    write_skill(
        root,
        "a",
        "---\nname: a\ndescription: A\ntriggers: [alpha]\n---\nA4\n",
    );
    let index = library.reload_if_changed().expect("changed");
    assert_eq!(index.get("a").unwrap().body.as_str().trim(), "A4");
    assert!(index.diagnostics().is_empty(), "{:?}", index.diagnostics());
}

#[test]
fn skills_turned_off_while_a_library_runs_stop_being_selected_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "greet",
        "---\nname: greet\ndescription: Greets\ntriggers: [hello]\n---\nSay hi.\n",
    );
    let library = SkillLibrary::load(vec![SkillRoot::new(dir.path(), Source::Project)]);
    let selected = |index: &ctxkit_skills::SkillIndex| -> Vec<String> {
        index
            .select(&["hello there"], &[], &Default::default())
            .iter()
            .map(|s| s.name.clone())
            .collect()
    };
    assert_eq!(selected(&library.snapshot()), ["greet"]);
    let before = library.snapshot();

    let index = library
        .set_disabled(vec!["GREET".into()])
        .expect("turning a skill off is a change");
    assert!(selected(&index).is_empty());
    assert_eq!(index.disabled()[0].name, "greet", "still listed, as disabled");
    assert!(Arc::ptr_eq(&index, &library.snapshot()));
    assert_eq!(selected(&before), ["greet"], "an old snapshot stays as it was");
    assert!(
        library.set_disabled(vec!["GREET".into()]).is_none(),
        "the same list is no change"
    );
    assert!(
        library.reload_if_changed().is_none(),
        "a reload keeps the skill off"
    );

    let index = library
        .set_disabled(Vec::new())
        .expect("turning it back on is a change");
    assert_eq!(selected(&index), ["greet"]);
    assert!(
        library.set_disabled(vec!["no-such-skill".into()]).is_none(),
        "naming a skill that is not there changes nothing a request sees"
    );
}

#[tokio::test]
async fn a_reloaded_skill_reaches_a_lazy_conversation_as_a_context_update() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "a",
        "---\nname: a\ndescription: A\ntriggers: [alpha]\n---\nA1\n",
    );
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        dir.path(),
        Source::Project,
    )]));
    let model = Arc::new(ScriptedModel::new([
        Message::assistant("one"),
        Message::assistant("two"),
    ]));
    let agent = Agent::builder()
        .model(model.clone())
        .assembly(ctxkit::Assembly::Lazy)
        .provider(SkillContextProvider::new(library.clone(), SkillConfig::default()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "hi").await.unwrap();
    write_skill(dir.path(), "b", "---\nname: b\ndescription: The new B\n---\nB1\n");
    assert!(library.reload_if_changed().is_some());
    agent.run(&mut thread, "hi again").await.unwrap();
    let last = model.requests().pop().unwrap();
    let update = last
        .messages
        .iter()
        .find(|m| m.content.starts_with("[Context Update]"))
        .unwrap_or_else(|| panic!("{:?}", last.messages));
    assert!(
        update.content.contains("ADDED: b: The new B"),
        "{}",
        update.content
    );
}
