//! `ctxkit hook HOST` and `ctxkit hook install|uninstall`: the hosts' protocols as a host sees
//! them (stdin event → stdout answer, exit code), with every user folder (HOME, cache, memory
//! database, config) moved into a temporary folder.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::support;
use support::{isolated, run_with_stdin, stderr, stdout};

/// A user's machine in a temporary folder: a project with skills, a home with a user skill.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(m.project()).unwrap();
        m.skill(
            ".claude/skills/greet",
            "---\nname: greet\ndescription: Greetings in many languages\ntriggers: [bonjour, hello]\n---\n# Greet\nGREET-BODY: answer with the right greeting word.\n",
        );
        m.skill(
            "skills/house-style",
            "---\nname: house-style\ndescription: How this project writes\nalways: true\n---\nHOUSE-STYLE-BODY: short sentences.\n",
        );
        let user = m.home().join(".claude/skills/zebra");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            user.join("SKILL.md"),
            "---\nname: zebra\ndescription: Stripes\ntriggers: [zebra]\n---\nZEBRA-BODY\n",
        )
        .unwrap();
        m
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn project(&self) -> PathBuf {
        self.root().join("proj")
    }
    fn home(&self) -> PathBuf {
        self.root().join("home")
    }
    fn cache(&self) -> PathBuf {
        self.root().join("cache")
    }

    /// Write a skill file at `folder` (relative to the project).
    fn skill(&self, folder: &str, text: &str) {
        let dir = self.project().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        run_with_stdin(isolated(self.root()).args(args).current_dir(self.root()), stdin)
    }

    /// Run `ctxkit hook HOST` on an event with this machine's project as `cwd`.
    fn hook(&self, host: &str, extra: &[&str], event: Value) -> Output {
        let mut args = vec!["hook", host];
        args.extend_from_slice(extra);
        self.run(&args, event.to_string().as_bytes())
    }

    fn prompt(&self, host_event: &str, session: &str, prompt: &str) -> Value {
        json!({
            "session_id": session,
            "transcript_path": self.root().join("t.jsonl"),
            "cwd": self.project(),
            "hook_event_name": host_event,
            "prompt": prompt,
        })
    }

    fn start(&self, session: &str, source: &str) -> Value {
        json!({
            "session_id": session,
            "transcript_path": self.root().join("t.jsonl"),
            "cwd": self.project(),
            "hook_event_name": "SessionStart",
            "source": source,
        })
    }

    fn memories(&self) -> String {
        let project = self.project().canonicalize().unwrap();
        let o = self.run(&["memory", "--project", project.to_str().unwrap(), "list"], b"");
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    }
}

/// The answer's `additionalContext`, after checking the protocol's shape and event name.
fn context_of(o: &Output, event: &str) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(o));
    let answer: Value =
        serde_json::from_str(stdout(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)));
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], event, "{answer}");
    specific["additionalContext"].as_str().unwrap().to_string()
}

/// Nothing injected, exit 0, one line on stderr.
fn assert_quiet_refusal(o: &Output) {
    assert!(o.status.success(), "exit {:?}", o.status);
    assert_eq!(stdout(o), "");
    assert_eq!(stderr(o).lines().count(), 1, "{}", stderr(o));
}

#[test]
fn a_matching_prompt_gets_the_skill_body_in_claude_codes_shape() {
    let m = Machine::new();
    let o = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "Say bonjour to Alice"),
    );
    let context = context_of(&o, "UserPromptSubmit");
    assert!(context.contains("## greet\n"), "{context}");
    assert!(context.contains("GREET-BODY"), "{context}");
    let path = m
        .project()
        .canonicalize()
        .unwrap()
        .join(".claude/skills/greet/SKILL.md");
    assert!(context.contains(path.to_str().unwrap()), "{context}");
    assert!(!context.contains("ZEBRA-BODY"));
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_skill_with_supporting_files_names_them_beside_its_file() {
    let m = Machine::new();
    let folder = m.project().join(".claude/skills/greet");
    std::fs::create_dir_all(folder.join("references")).unwrap();
    std::fs::write(folder.join("references/phrases.md"), "Bonjour, hello").unwrap();
    std::fs::write(folder.join(".notes"), "hidden").unwrap();
    let o = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "Say bonjour to Alice"),
    );
    let context = context_of(&o, "UserPromptSubmit");
    let path = folder.canonicalize().unwrap().join("SKILL.md");
    let head = format!(
        "## greet\nGreetings in many languages\nFile: {}\nFiles beside it: references/phrases.md\n\n# Greet",
        path.display()
    );
    assert!(context.contains(&head), "{context}");
}

/// A memory store that never answers (here a PostgreSQL "server" that accepts the connection
/// and then says nothing) costs the prompt its memories, not its answer.
#[test]
fn a_memory_store_that_never_answers_is_given_up_and_the_skills_still_come() {
    let m = Machine::new();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("postgres://ann:s3cret-pw@{}/mem", silent.local_addr().unwrap());
    let o = m.hook(
        "claude-code",
        &["--memory", &url],
        m.prompt("UserPromptSubmit", "s1", "Say bonjour to Alice"),
    );
    let context = context_of(&o, "UserPromptSubmit");
    assert!(context.contains("GREET-BODY"), "{context}");
    let err = stderr(&o);
    assert!(
        err.contains("project memory skipped: the memory store did not answer within 2.0 s"),
        "{err}"
    );
    assert!(!err.contains("s3cret-pw"), "{err}");
    drop(silent);
}

/// A database the hook may only read (a read-only file in a read-only folder, as a shared or
/// archived database is) still gives its memories: they are read without counting their use,
/// and stderr says so in one line. Run as an unprivileged user when this is root.
#[cfg(unix)]
#[test]
fn a_read_only_database_still_gives_its_memories() {
    use std::os::unix::fs::PermissionsExt;
    let m = Machine::new();
    let folder = m.root().join("ro");
    std::fs::create_dir(&folder).unwrap();
    let db = folder.join("m.db");
    let project = m.project().canonicalize().unwrap();
    let o = m.run(
        &[
            "memory",
            "--db",
            db.to_str().unwrap(),
            "--project",
            project.to_str().unwrap(),
            "add",
            "We deploy on Fridays",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mode =
        |path: &Path, mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    // Everything else readable (and the cache writable) by the unprivileged user.
    mode(m.root(), 0o755);
    for dir in [m.cache(), m.home(), m.project()] {
        std::fs::create_dir_all(&dir).unwrap();
        mode(&dir, 0o777);
    }
    for file in std::fs::read_dir(&folder).unwrap() {
        mode(&file.unwrap().path(), 0o444);
    }
    mode(&folder, 0o555);
    let root = std::fs::OpenOptions::new().write(true).open(&db).is_ok();
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let mut command = match (root, setpriv) {
        (false, _) => isolated(m.root()),
        (true, Some(setpriv)) => {
            let mut c = std::process::Command::new(setpriv);
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_ctxkit"),
            ]);
            for (key, value) in isolated(m.root()).get_envs() {
                match value {
                    Some(value) => c.env(key, value),
                    None => c.env_remove(key),
                };
            }
            c
        }
        (true, None) => {
            crate::suites::skipped(
                "the read-only hook database test as an unprivileged user",
                "`setpriv` (this is root)",
            );
            return;
        }
    };
    let event = m.prompt("UserPromptSubmit", "s1", "when do we deploy?");
    let o = run_with_stdin(
        command
            .args(["hook", "claude-code", "--memory", db.to_str().unwrap()])
            .current_dir(m.root()),
        event.to_string().as_bytes(),
    );
    mode(&folder, 0o755);
    assert!(
        context_of(&o, "UserPromptSubmit").contains("We deploy on Fridays"),
        "{}",
        stderr(&o)
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("m.db is read-only") && err.contains("not counted"),
        "{err}"
    );
}

#[test]
fn user_skills_come_from_home_dot_claude() {
    let m = Machine::new();
    let o = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "draw a zebra"),
    );
    assert!(context_of(&o, "UserPromptSubmit").contains("ZEBRA-BODY"));
}

#[test]
fn a_prompt_that_matches_nothing_prints_nothing() {
    let m = Machine::new();
    for host in ["claude-code", "codex"] {
        let o = m.hook(host, &[], m.prompt("UserPromptSubmit", "s1", "What is 2+2?"));
        assert!(o.status.success());
        assert_eq!(stdout(&o), "", "{host}");
        assert_eq!(stderr(&o), "", "{host}");
    }
    let o = m.hook("gemini", &[], m.prompt("BeforeAgent", "s1", "What is 2+2?"));
    assert_eq!(stdout(&o), "");
}

#[test]
fn bad_input_is_one_stderr_line_exit_0_and_exit_1_with_strict() {
    let m = Machine::new();
    let mut unknown = m.prompt("PreToolUse", "s1", "hello");
    unknown["tool_name"] = json!("Bash");
    let mut no_cwd = m.prompt("UserPromptSubmit", "s1", "hello");
    no_cwd.as_object_mut().unwrap().remove("cwd");
    let mut missing_cwd = m.prompt("UserPromptSubmit", "s1", "hello");
    missing_cwd["cwd"] = json!(m.root().join("nowhere"));
    let mut relative_cwd = m.prompt("UserPromptSubmit", "s1", "hello");
    relative_cwd["cwd"] = json!("proj");
    let mut no_prompt = m.prompt("UserPromptSubmit", "s1", "hello");
    no_prompt.as_object_mut().unwrap().remove("prompt");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("blank", b" \n".to_vec()),
        (
            "malformed",
            b"{\"hook_event_name\": \"UserPromptSubmit\", ".to_vec(),
        ),
        ("not an object", b"[1, 2]".to_vec()),
        ("not UTF-8", b"{\"prompt\": \"\xff\xfe\"}".to_vec()),
        ("unknown event", unknown.to_string().into_bytes()),
        ("no cwd", no_cwd.to_string().into_bytes()),
        ("cwd missing", missing_cwd.to_string().into_bytes()),
        ("relative cwd", relative_cwd.to_string().into_bytes()),
        ("no prompt", no_prompt.to_string().into_bytes()),
    ];
    for (what, input) in &cases {
        for host in ["claude-code", "codex", "gemini"] {
            let o = m.run(&["hook", host], input);
            assert_quiet_refusal(&o);
            let strict = m.run(&["hook", host, "--strict"], input);
            assert_eq!(strict.status.code(), Some(1), "{what} {host}");
            assert_eq!(stdout(&strict), "", "{what} {host}");
            assert_eq!(
                stderr(&strict).lines().count(),
                1,
                "{what} {host}: {}",
                stderr(&strict)
            );
        }
    }
}

#[test]
fn an_unknown_event_name_never_shows_a_token_glued_to_it() {
    let m = Machine::new();
    let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
    for name in [format!("Pre{token}"), format!("{}{token}", "X".repeat(30))] {
        let mut event = m.prompt("UserPromptSubmit", "s1", "hello");
        event["hook_event_name"] = json!(name);
        let o = m.hook("claude-code", &[], event);
        assert_quiet_refusal(&o);
        // Not the token, and no piece of it a cut could have left unredacted.
        assert!(!stderr(&o).contains(&token[..12]), "{}", stderr(&o));
    }
    // A long name with control characters is cut to its first 40 printable ones.
    let mut event = m.prompt("UserPromptSubmit", "s1", "hello");
    event["hook_event_name"] = json!(format!("Ev\u{1b}[2J{}", "n".repeat(10_000)));
    let o = m.hook("claude-code", &[], event);
    assert_quiet_refusal(&o);
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(
        err.contains(&format!("`Ev[2J{}…` is not an event", "n".repeat(34))),
        "{err}"
    );
    assert!(err.len() < 200, "{err}");
}

#[test]
fn an_oversized_event_is_refused_without_injecting_anything() {
    let m = Machine::new();
    let prompt = "bonjour ".repeat(140_000); // 1.1 MB
    let o = m.hook("claude-code", &[], m.prompt("UserPromptSubmit", "s1", &prompt));
    assert_quiet_refusal(&o);
    assert!(stderr(&o).contains("larger than 1024 KiB"), "{}", stderr(&o));
}

#[test]
fn remember_with_a_secret_is_refused_and_never_echoed() {
    let m = Machine::new();
    for secret in [
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        // A framework's key and a password on a command line.
        "SECRET_KEY=django-insecure-8f3k2j5h6g7f8d9s0a1b",
        "mysql -uroot -pHunter2Pass9 app",
    ] {
        let prompt = format!("remember that the deploy credential is {secret}");
        let o = m.hook("claude-code", &[], m.prompt("UserPromptSubmit", "s1", &prompt));
        let context = context_of(&o, "UserPromptSubmit");
        assert!(context.contains("It was not stored"), "{context}");
        for shown in [stdout(&o), stderr(&o)] {
            assert!(!shown.contains(secret), "echoed: {shown}");
            assert!(
                !shown.to_lowercase().contains(&secret.to_lowercase()[4..]),
                "echoed: {shown}"
            );
        }
    }
    assert!(!m.memories().contains("deploy credential"), "{}", m.memories());
}

#[test]
fn memory_commands_are_carried_out_and_pinned_memories_come_at_session_start() {
    let m = Machine::new();
    let o = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "remember that we deploy on Fridays"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(m.memories().contains("We deploy on Fridays"), "{}", m.memories());

    // A later prompt about deploys gets it as a relevant memory.
    let o = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "when do we deploy?"),
    );
    assert!(context_of(&o, "UserPromptSubmit").contains("We deploy on Fridays"));

    // A new session starts with it (explicit memories are pinned) and the always-on skill.
    let o = m.hook("claude-code", &[], m.start("s2", "startup"));
    let context = context_of(&o, "SessionStart");
    assert!(context.contains("We deploy on Fridays"), "{context}");
    assert!(context.contains("HOUSE-STYLE-BODY"), "{context}");
    assert!(
        !context.contains("GREET-BODY"),
        "no catalog, no triggered skills: {context}"
    );

    m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s1", "forget that we deploy on Fridays"),
    );
    assert!(!m.memories().contains("We deploy on Fridays"), "{}", m.memories());

    // --no-memory neither reads nor writes.
    let o = m.hook(
        "claude-code",
        &["--no-memory"],
        m.prompt("UserPromptSubmit", "s1", "remember that tabs are forbidden"),
    );
    assert_eq!(stdout(&o), "");
    assert!(!m.memories().contains("Tabs are forbidden"));
}

/// Memories wear the same sent-once layer as skills: a session is sent a memory once (at its
/// start, or with the first prompt it is relevant to), again after a compaction. A session
/// start sends the important memories as the memory provider renders them for an agent.
#[test]
fn memories_are_sent_once_per_session_and_again_after_a_compaction() {
    let m = Machine::new();
    let remember = m.prompt("UserPromptSubmit", "s1", "remember that we deploy on Fridays");
    assert!(m.hook("claude-code", &[], remember).status.success());
    let ask = |session: &str| {
        m.hook(
            "claude-code",
            &[],
            m.prompt("UserPromptSubmit", session, "when do we deploy?"),
        )
    };
    assert!(context_of(&ask("s1"), "UserPromptSubmit").contains("We deploy on Fridays"));
    assert_eq!(stdout(&ask("s1")), "", "this session holds it already");
    assert!(context_of(&ask("s2"), "UserPromptSubmit").contains("We deploy on Fridays"));

    let start = context_of(
        &m.hook("claude-code", &[], m.start("s3", "startup")),
        "SessionStart",
    );
    assert!(
        start.starts_with(
            "## Project Memory\nThe following facts were learned from previous sessions:\n\n- [FACT] We deploy on Fridays\n\n"
        ),
        "{start}"
    );
    assert_eq!(stdout(&ask("s3")), "", "sent at the session start");
    let compacted = m.hook("claude-code", &[], m.start("s3", "compact"));
    assert!(context_of(&compacted, "SessionStart").contains("We deploy on Fridays"));
}

#[test]
fn the_answer_fits_the_budget_and_long_skills_point_to_their_file() {
    let m = Machine::new();
    for i in 0..20 {
        let body = format!("Step {i}: \"quoted\" text\twith tabs.\n").repeat(200); // ~7 KB
        m.skill(
            &format!("skills/widget-{i:02}"),
            &format!(
                "---\nname: widget-{i:02}\ndescription: Widgets part {i}\ntriggers: [widget]\n---\n{body}"
            ),
        );
    }
    for budget in ["10000", "3000"] {
        let o = m.hook(
            "claude-code",
            &["--budget", budget, "--max-skills", "20"],
            m.prompt("UserPromptSubmit", budget, "build a widget"),
        );
        let out = stdout(&o);
        let budget: usize = budget.parse().unwrap();
        assert!(
            out.trim_end().chars().count() <= budget,
            "{} > {budget}",
            out.chars().count()
        );
        let context = context_of(&o, "UserPromptSubmit");
        assert!(context.contains("## widget-"), "{context}");
        assert!(context.contains("more characters not shown"), "{context}");
        assert!(context.contains("/SKILL.md: read it"), "{context}");
    }
}

#[test]
fn a_skill_is_sent_once_per_session_until_it_changes_or_the_session_is_compacted() {
    let m = Machine::new();
    let ask = || {
        m.hook(
            "claude-code",
            &[],
            m.prompt("UserPromptSubmit", "s1", "hello there"),
        )
    };
    assert!(context_of(&ask(), "UserPromptSubmit").contains("GREET-BODY"));
    assert_eq!(stdout(&ask()), "", "already sent in this session");

    // Another session gets it.
    let other = m.hook(
        "claude-code",
        &[],
        m.prompt("UserPromptSubmit", "s2", "hello there"),
    );
    assert!(context_of(&other, "UserPromptSubmit").contains("GREET-BODY"));

    // Resuming keeps the record; compacting clears it and resends the always-on context.
    assert!(context_of(
        &m.hook("claude-code", &[], m.start("s1", "resume")),
        "SessionStart"
    )
    .contains("HOUSE-STYLE-BODY"));
    assert_eq!(stdout(&ask()), "");
    let compacted = m.hook("claude-code", &[], m.start("s1", "compact"));
    assert!(context_of(&compacted, "SessionStart").contains("HOUSE-STYLE-BODY"));
    assert!(context_of(&ask(), "UserPromptSubmit").contains("GREET-BODY"));

    // An edited skill is sent again.
    assert_eq!(stdout(&ask()), "");
    m.skill(
        ".claude/skills/greet",
        "---\nname: greet\ndescription: Greetings\ntriggers: [hello]\n---\nGREET-BODY-V2\n",
    );
    assert!(context_of(&ask(), "UserPromptSubmit").contains("GREET-BODY-V2"));
}

#[test]
fn a_hostile_session_id_stays_inside_the_cache() {
    let m = Machine::new();
    for id in ["../../x", "../escape", "/tmp/absolute", "a\\..\\b", ".."] {
        let o = m.hook("claude-code", &[], m.prompt("UserPromptSubmit", id, "hello"));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let sessions = m.cache().join("sessions");
    let names: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(
        names.iter().all(|n| n.ends_with(".json") && !n.contains('/')),
        "{names:?}"
    );
    // Nothing was written beside the cache or above it.
    for entry in std::fs::read_dir(m.root()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            ["cache", "home", "proj"].contains(&name.as_str()) || name.starts_with("memory.db"),
            "{name}"
        );
    }
    // In the cache: the session records, the index cache once the skill files are old
    // enough to be cached, and the words ranker of those skills.
    for entry in std::fs::read_dir(m.cache()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name == "sessions"
                || (name.starts_with("skills-") && name.ends_with(".idx"))
                || (name.starts_with("ranker-") && name.ends_with(".bin")),
            "{name}"
        );
    }
    assert!(!Path::new("/tmp/absolute.json").exists());
}

#[test]
fn codex_answers_like_claude_code_and_forgets_on_compaction() {
    let m = Machine::new();
    let o = m.hook("codex", &[], m.prompt("UserPromptSubmit", "c1", "Say hello"));
    assert!(context_of(&o, "UserPromptSubmit").contains("GREET-BODY"));
    let start = m.hook("codex", &[], m.start("c1", "startup"));
    assert!(context_of(&start, "SessionStart").contains("HOUSE-STYLE-BODY"));
    assert!(context_of(
        &m.hook("codex", &[], m.prompt("UserPromptSubmit", "c1", "Say hello")),
        "UserPromptSubmit"
    )
    .contains("GREET-BODY"));
    assert_eq!(
        stdout(&m.hook("codex", &[], m.prompt("UserPromptSubmit", "c1", "Say hello"))),
        ""
    );
    let compact =
        json!({"session_id": "c1", "cwd": m.project(), "hook_event_name": "PreCompact", "trigger": "auto"});
    let o = m.hook("codex", &[], compact);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "");
    assert!(context_of(
        &m.hook("codex", &[], m.prompt("UserPromptSubmit", "c1", "Say hello")),
        "UserPromptSubmit"
    )
    .contains("GREET-BODY"));
}

#[test]
fn gemini_answers_before_agent_and_session_start() {
    let m = Machine::new();
    let mut event = m.prompt("BeforeAgent", "g1", "Say bonjour");
    event["timestamp"] = json!("2026-01-01T00:00:00Z");
    let o = m.hook("gemini", &[], event.clone());
    assert!(context_of(&o, "BeforeAgent").contains("GREET-BODY"));
    assert_eq!(stdout(&m.hook("gemini", &[], event.clone())), "");
    let o = m.hook(
        "gemini",
        &[],
        json!({"session_id": "g1", "cwd": m.project(), "hook_event_name": "PreCompress", "trigger": "auto"}),
    );
    assert!(o.status.success());
    assert_eq!(stdout(&o), "");
    assert!(context_of(&m.hook("gemini", &[], event), "BeforeAgent").contains("GREET-BODY"));
    let start = m.hook("gemini", &[], m.start("g2", "startup"));
    assert!(context_of(&start, "SessionStart").contains("HOUSE-STYLE-BODY"));
    // Claude Code's prompt event is not Gemini's.
    assert_quiet_refusal(&m.hook("gemini", &[], m.prompt("UserPromptSubmit", "g1", "hello")));
}

/// Start `ctxkit hook claude-code EXTRA…` with `input` written to its standard input, which is
/// then left open (a host or a stuck pipe that never closes it); its output once it exits.
fn hook_with_open_stdin(m: &Machine, extra: &[&str], input: &[u8]) -> Output {
    let mut child = isolated(m.root())
        .args(["hook", "claude-code"])
        .args(extra)
        .current_dir(m.root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut pipe, input).unwrap();
    // A guard against a hang, not a timing: the hook must exit with the pipe still open.
    for _ in 0..600 {
        if child.try_wait().unwrap().is_some() {
            drop(pipe);
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("the hook waited for the end of its standard input");
}

#[test]
fn the_event_is_read_to_its_last_byte_not_to_the_end_of_the_stream() {
    let m = Machine::new();
    let event = format!("{}\n", m.prompt("UserPromptSubmit", "s1", "bonjour Alice"));
    let o = hook_with_open_stdin(&m, &["--no-memory"], event.as_bytes());
    assert!(context_of(&o, "UserPromptSubmit").contains("GREET-BODY"));

    // An event that never ends is given up at the deadline: one line, nothing injected.
    let o = hook_with_open_stdin(
        &m,
        &["--no-memory", "--deadline", "0.5"],
        b"{\"hook_event_name\": \"UserPr",
    );
    assert_quiet_refusal(&o);
    assert!(stderr(&o).contains("no complete event arrived"), "{}", stderr(&o));
}

#[test]
fn skills_not_loaded_by_the_deadline_are_finished_in_the_background_for_the_next_prompt() {
    let m = Machine::new();
    // Skills whose patterns each compile close to the size cap: slow to parse the first time.
    for i in 0..20 {
        let patterns: String = (0..16)
            .map(|j| format!("    - 'w{i}x{j}[a-z]{{500}}'\n"))
            .collect();
        m.skill(
            &format!(".claude/skills/slow{i}"),
            &format!("---\nname: slow{i}\ndescription: Slow {i}\ntriggers:\n  keywords: [slowword{i}]\n  patterns:\n{patterns}---\nSLOW-BODY-{i}\n"),
        );
    }
    let o = m.hook(
        "claude-code",
        &["--no-memory", "--deadline", "0.3"],
        m.prompt("UserPromptSubmit", "s1", "slowword3"),
    );
    assert_quiet_refusal(&o);
    assert!(
        stderr(&o).contains("not loaded within the deadline"),
        "{}",
        stderr(&o)
    );
    // The background load saves the index cache; then a prompt under the same short deadline
    // answers in full, from the cache (a fresh parse could not). Polled, with a guard against
    // a hang; how long it takes is the benches' business.
    for _ in 0..300 {
        let o = m.hook(
            "claude-code",
            &["--no-memory", "--deadline", "0.6"],
            m.prompt("UserPromptSubmit", "s2", "slowword3"),
        );
        if stdout(&o).contains("SLOW-BODY-3") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("the skills were never finished loading in the background");
}

// ---- hook install / uninstall ----

fn settings(m: &Machine) -> PathBuf {
    m.project().join(".claude/settings.json")
}

fn install(m: &Machine, verb: &str) -> Output {
    let project = m.project();
    m.run(
        &[
            "hook",
            verb,
            "claude-code",
            "--project",
            project.to_str().unwrap(),
        ],
        b"",
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// ctxkit's commands under `event`.
fn ours(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(String::from))
        .filter(|c| c.ends_with(" hook claude-code"))
        .collect()
}

#[test]
fn install_creates_settings_with_both_events_and_the_absolute_binary() {
    let m = Machine::new();
    let o = install(&m, "install");
    assert!(o.status.success(), "{}", stderr(&o));
    let s = read_json(&settings(&m));
    let exe = Path::new(env!("CARGO_BIN_EXE_ctxkit")).canonicalize().unwrap();
    for event in ["UserPromptSubmit", "SessionStart"] {
        let commands = ours(&s, event);
        assert_eq!(commands.len(), 1, "{s}");
        let program = commands[0]
            .trim_end_matches(" hook claude-code")
            .trim_matches('\'');
        assert_eq!(Path::new(program), exe);
        assert!(Path::new(program).is_absolute());
        assert_eq!(s["hooks"][event][0]["hooks"][0]["type"], "command");
    }
}

#[test]
fn install_keeps_other_settings_and_hooks_and_replaces_a_previous_entry() {
    let m = Machine::new();
    std::fs::create_dir_all(settings(&m).parent().unwrap()).unwrap();
    let before = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [
                    {"type": "command", "command": "/old/place/ctxkit hook claude-code", "timeout": 5},
                    {"type": "command", "command": "/usr/bin/notify-send prompt"}
                ]}
            ],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]
        }
    });
    std::fs::write(settings(&m), serde_json::to_string_pretty(&before).unwrap()).unwrap();
    // A user who made the file private keeps it private.
    #[cfg(unix)]
    let private = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(settings(&m), std::fs::Permissions::from_mode(0o600)).unwrap();
        || std::fs::metadata(settings(&m)).unwrap().permissions().mode() & 0o777
    };
    assert!(install(&m, "install").status.success());
    #[cfg(unix)]
    assert_eq!(private(), 0o600, "the settings file's permissions are kept");
    let once = std::fs::read(settings(&m)).unwrap();
    assert!(install(&m, "install").status.success());
    assert_eq!(
        std::fs::read(settings(&m)).unwrap(),
        once,
        "installing twice changes nothing"
    );

    let s = read_json(&settings(&m));
    assert_eq!(s["model"], "opus");
    assert_eq!(s["permissions"], before["permissions"]);
    assert_eq!(s["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    let prompt_commands: Vec<&str> = s["hooks"]["UserPromptSubmit"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .map(|h| h["command"].as_str().unwrap())
        .collect();
    assert!(prompt_commands.contains(&"/usr/bin/notify-send prompt"), "{s}");
    assert!(
        !prompt_commands.contains(&"/old/place/ctxkit hook claude-code"),
        "{s}"
    );
    assert_eq!(ours(&s, "UserPromptSubmit").len(), 1, "{s}");
    assert_eq!(ours(&s, "SessionStart").len(), 1, "{s}");

    // Uninstall removes only ctxkit's entries.
    let o = install(&m, "uninstall");
    assert!(o.status.success(), "{}", stderr(&o));
    let s = read_json(&settings(&m));
    assert!(
        ours(&s, "UserPromptSubmit").is_empty() && ours(&s, "SessionStart").is_empty(),
        "{s}"
    );
    assert!(
        s["hooks"].get("SessionStart").is_none(),
        "an emptied event is removed: {s}"
    );
    assert_eq!(s["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    assert_eq!(
        s["hooks"]["UserPromptSubmit"][0]["hooks"],
        json!([{"type": "command", "command": "/usr/bin/notify-send prompt"}])
    );
    assert_eq!(s["model"], "opus");
}

#[test]
fn install_refuses_an_invalid_settings_file_and_leaves_it_untouched() {
    let m = Machine::new();
    std::fs::create_dir_all(settings(&m).parent().unwrap()).unwrap();
    for bad in ["{\"model\": \"opus\",, }", "[1, 2]", "{\"hooks\": []}"] {
        std::fs::write(settings(&m), bad).unwrap();
        for verb in ["install", "uninstall"] {
            let o = install(&m, verb);
            assert_eq!(o.status.code(), Some(1), "{bad} {verb}");
            assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
            assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
            assert_eq!(std::fs::read_to_string(settings(&m)).unwrap(), bad);
        }
    }
    let mut leftovers: Vec<String> = std::fs::read_dir(settings(&m).parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    leftovers.sort();
    assert_eq!(
        leftovers,
        ["settings.json", "skills"],
        "no temporary file left behind"
    );
}

#[test]
fn install_user_writes_home_dot_claude() {
    let m = Machine::new();
    let o = m.run(&["hook", "install", "claude-code", "--user"], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    let s = read_json(&m.home().join(".claude/settings.json"));
    assert_eq!(ours(&s, "UserPromptSubmit").len(), 1);
    let o = m.run(&["hook", "uninstall", "claude-code", "--user"], b"");
    assert!(o.status.success());
    let s = read_json(&m.home().join(".claude/settings.json"));
    assert_eq!(s, json!({}));
}

#[test]
fn uninstall_removes_only_what_install_wrote_and_keeps_the_file_as_written() {
    let m = Machine::new();
    std::fs::create_dir_all(settings(&m).parent().unwrap()).unwrap();
    // The user's own hooks that mention ctxkit, a number no f64 holds, a duplicate key, and a
    // key order that is not sorted.
    let before = r#"{
  "zeta": 12345678901234567890123,
  "alpha": {"x": 1, "x": 2},
  "hooks": {
    "UserPromptSubmit": [
      {"hooks": [
        {"type": "command", "command": "my-wrapper --log /var/log/ctxkit hook claude-code"},
        {"type": "command", "command": "cd /srv && /opt/tools/ctxkit hook claude-code"}
      ]}
    ]
  },
  "model": "opus"
}
"#;
    std::fs::write(settings(&m), before).unwrap();
    assert!(install(&m, "install").status.success());
    let installed = std::fs::read_to_string(settings(&m)).unwrap();
    assert!(installed.contains("12345678901234567890123"), "{installed}");
    assert!(installed.contains(r#""x": 1, "x": 2"#), "{installed}");
    let order: Vec<usize> = ["\"zeta\"", "\"alpha\"", "\"hooks\"", "\"model\""]
        .iter()
        .map(|k| installed.find(k).unwrap())
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "key order kept: {installed}"
    );

    let o = install(&m, "uninstall");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Removed 2 ctxkit hook entries"),
        "{}",
        stdout(&o)
    );
    let after = std::fs::read_to_string(settings(&m)).unwrap();
    for kept in [
        "my-wrapper --log /var/log/ctxkit hook claude-code",
        "cd /srv && /opt/tools/ctxkit hook claude-code",
        "12345678901234567890123",
        r#""x": 1, "x": 2"#,
    ] {
        assert!(after.contains(kept), "{kept} kept: {after}");
    }
    let again = install(&m, "uninstall");
    assert!(stdout(&again).contains("Removed 0"), "{}", stdout(&again));
    assert_eq!(
        std::fs::read_to_string(settings(&m)).unwrap(),
        after,
        "nothing to remove, nothing written"
    );
}

#[cfg(unix)]
#[test]
fn install_never_writes_through_a_link() {
    let m = Machine::new();
    let outside = m.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = r#"{"env": {"API_TOKEN": "tok-123"}}"#;
    std::fs::write(outside.join("settings.json"), secret).unwrap();

    // `.claude` a link to another folder.
    std::fs::remove_dir_all(m.project().join(".claude")).unwrap();
    std::os::unix::fs::symlink(&outside, m.project().join(".claude")).unwrap();
    for verb in ["install", "uninstall"] {
        let o = install(&m, verb);
        assert_eq!(o.status.code(), Some(1), "{verb}");
        assert!(
            stderr(&o).contains("is a link") && stderr(&o).lines().count() == 1,
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("settings.json")).unwrap(),
        secret
    );

    // `.claude/settings.json` a link to a file elsewhere: not read into the repository.
    std::fs::remove_file(m.project().join(".claude")).unwrap();
    std::fs::create_dir(m.project().join(".claude")).unwrap();
    std::os::unix::fs::symlink(outside.join("settings.json"), settings(&m)).unwrap();
    let o = install(&m, "install");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is a link"), "{}", stderr(&o));
    assert!(settings(&m).is_symlink(), "the link is left as it was");
    assert_eq!(
        std::fs::read_to_string(outside.join("settings.json")).unwrap(),
        secret
    );
}

#[test]
fn a_skill_the_project_config_disables_is_not_injected_by_the_hook() {
    let m = Machine::new();
    let config = m.project().join(".ctxkit/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[skills]\ndisabled = [\"greet\"]\n").unwrap();
    let o = m.hook(
        "claude-code",
        &["--no-memory"],
        m.prompt("UserPromptSubmit", "s1", "bonjour Alice"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("GREET-BODY"), "{}", stdout(&o));
    std::fs::write(&config, "[skills]\ndisabled = []\n").unwrap();
    let o = m.hook(
        "claude-code",
        &["--no-memory"],
        m.prompt("UserPromptSubmit", "s2", "bonjour Alice"),
    );
    assert!(context_of(&o, "UserPromptSubmit").contains("GREET-BODY"));
}

#[test]
fn the_hook_never_adds_the_standing_instructions_its_host_loads_itself() {
    let m = Machine::new();
    std::fs::write(
        m.project().join("AGENTS.md"),
        "# Agent notes\nAGENTS-STANDING-TEXT\n",
    )
    .unwrap();
    std::fs::write(
        m.project().join("CLAUDE.md"),
        "# Claude notes\nCLAUDE-STANDING-TEXT\n",
    )
    .unwrap();
    let start = context_of(
        &m.hook("claude-code", &[], m.start("s1", "startup")),
        "SessionStart",
    );
    let prompt = context_of(
        &m.hook(
            "claude-code",
            &[],
            m.prompt("UserPromptSubmit", "s1", "Say bonjour to Alice"),
        ),
        "UserPromptSubmit",
    );
    assert!(start.contains("HOUSE-STYLE-BODY") && prompt.contains("GREET-BODY"));
    for context in [start, prompt] {
        assert!(!context.contains("STANDING-TEXT"), "{context}");
    }
}

/// Each host loads one instruction file itself (Claude Code `CLAUDE.md`, Codex `AGENTS.md`):
/// the hook never sends that one again as a skill, while the other stays a skill its words
/// can select.
#[test]
fn the_hook_leaves_out_the_instruction_file_its_host_loads_itself() {
    let m = Machine::new();
    std::fs::write(
        m.project().join("CLAUDE.md"),
        "# Deployment checklist\nRun fly deploy with the staging flag first.\n",
    )
    .unwrap();
    std::fs::write(
        m.project().join("AGENTS.md"),
        "# Deployment checklist for agents\nRun fly deploy with the staging flag first.\n",
    )
    .unwrap();
    for (host, own, other) in [
        ("claude-code", "CLAUDE.md", "AGENTS.md"),
        ("codex", "AGENTS.md", "CLAUDE.md"),
    ] {
        let context = context_of(
            &m.hook(
                host,
                &["--no-memory"],
                m.prompt(
                    "UserPromptSubmit",
                    host,
                    "walk me through the deployment checklist",
                ),
            ),
            "UserPromptSubmit",
        );
        assert!(context.contains(&format!("/{other}")), "{host}: {context}");
        assert!(!context.contains(&format!("/{own}")), "{host}: {context}");
    }
}
