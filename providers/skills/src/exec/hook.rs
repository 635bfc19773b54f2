//! SKILL.md `hooks`: commands a skill runs around tool calls while it is active —
//! `PreToolUse` (a failure blocks the call, with the hook's message), `PostToolUse` and `Stop`
//! (when the model answers without asking for a tool). `matcher` is a regular expression on
//! tool names (empty or `*`: every tool).
//!
//! They run only for skills the user trusts (the same [`ToolTrust`](crate::ToolTrust) as skill tools), like
//! skill tools: without a shell unless the user allows one ([`HookOptions::allow_shell`]),
//! under a timeout, with standard input closed and the scrubbed environment of
//! [`tool_env`] plus `CTXKIT_TOOL_NAME` and `CTXKIT_TOOL_INPUT` (the call's JSON arguments).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ctxkit::{BoxError, Hook, HookContext, Message, ToolCall};
use regex::{Regex, RegexBuilder};
use serde_json::Value;
use tracing::Instrument;

use super::process::{run, RunError};
use super::trust::{interpreter_in, real_program, tool_env};
use crate::skill::Skill;

/// How SKILL.md hooks run; every field is the user's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookOptions {
    /// Run a command through `sh -c` (default false: a command is split into words and run
    /// directly, and one that needs a shell — a pipe, `;`, `$`, a redirection — does not run).
    pub allow_shell: bool,
    /// Deadline of one command (default 10 s).
    pub timeout: Duration,
    /// Variables passed on top of `PATH`, `HOME`, `LANG` and the like; credentials never are.
    pub pass_env: Vec<String>,
}

impl Default for HookOptions {
    fn default() -> Self {
        HookOptions {
            allow_shell: false,
            timeout: Duration::from_secs(10),
            pass_env: Vec::new(),
        }
    }
}

/// The hook points a skill may declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    PreToolUse,
    PostToolUse,
    Stop,
}

impl Point {
    fn key(self) -> &'static str {
        match self {
            Point::PreToolUse => "PreToolUse",
            Point::PostToolUse => "PostToolUse",
            Point::Stop => "Stop",
        }
    }
}

/// One `{matcher, hooks: [{type: command, command}]}` entry.
#[derive(Debug)]
struct Rule {
    point: Point,
    matcher: Option<Regex>,
    commands: Vec<String>,
}

/// The hooks of one active, trusted skill.
#[derive(Debug)]
pub(crate) struct ActiveSkill {
    name: String,
    dir: PathBuf,
    rules: Vec<Rule>,
}

/// Most rules and commands read from one skill's `hooks`.
const MAX_RULES: usize = 32;
/// Largest compiled matcher.
const MAX_MATCHER_BYTES: usize = 1 << 16;
/// Bytes of a hook's output kept for its message.
const OUTPUT_CAP: usize = 4 * 1024;
/// Most threads whose active skills are remembered.
const MAX_THREADS: usize = 256;

impl ActiveSkill {
    /// The hooks of `skill`, or `None` when it declares none that ctxkit can run.
    pub(crate) fn of(skill: &Skill) -> Option<ActiveSkill> {
        let hooks = skill.hooks.as_ref()?.as_object()?;
        let mut rules = Vec::new();
        for point in [Point::PreToolUse, Point::PostToolUse, Point::Stop] {
            for entry in hooks
                .get(point.key())
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let matcher = match entry.get("matcher").and_then(Value::as_str).map(str::trim) {
                    None | Some("") | Some("*") => None,
                    Some(pattern) => match RegexBuilder::new(&format!("^(?:{pattern})$"))
                        .size_limit(MAX_MATCHER_BYTES)
                        .build()
                    {
                        Ok(re) => Some(re),
                        Err(e) => {
                            tracing::warn!(skill = %skill.name, "hook matcher `{pattern}` is not a valid regex ({e}); rule ignored");
                            continue;
                        }
                    },
                };
                // Claude's shape nests commands under `hooks`; a bare action is accepted too.
                let actions = entry
                    .get("hooks")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_else(|| vec![entry.clone()]);
                let commands: Vec<String> = actions
                    .iter()
                    .filter(|a| {
                        a.get("type")
                            .and_then(Value::as_str)
                            .is_none_or(|t| t == "command")
                    })
                    .filter_map(|a| a.get("command").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                if !commands.is_empty() && rules.len() < MAX_RULES {
                    rules.push(Rule {
                        point,
                        matcher,
                        commands,
                    });
                }
            }
        }
        (!rules.is_empty()).then(|| ActiveSkill {
            name: skill.name.clone(),
            dir: skill.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            rules,
        })
    }
}

/// Which skills with hooks are active in each thread: the skill provider records its
/// selection here on every run, and [`SkillHooks`] reads it when tools are called.
#[derive(Debug, Default)]
pub(crate) struct ActiveHooks {
    threads: Mutex<HashMap<String, Arc<Vec<ActiveSkill>>>>,
}

impl ActiveHooks {
    pub(crate) fn set(&self, thread: &str, skills: Vec<ActiveSkill>) {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if skills.is_empty() {
            threads.remove(thread);
            return;
        }
        if threads.len() >= MAX_THREADS && !threads.contains_key(thread) {
            threads.clear();
        }
        threads.insert(thread.to_string(), Arc::new(skills));
    }

    fn get(&self, thread: &str) -> Option<Arc<Vec<ActiveSkill>>> {
        self.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(thread)
            .cloned()
    }
}

/// Runs the hooks of the skills a [`SkillContextProvider`](crate::provider::SkillContextProvider)
/// selected for the run (see its `hooks` method); add it to the agent with
/// `AgentBuilder::hook`.
pub struct SkillHooks {
    active: Arc<ActiveHooks>,
    options: HookOptions,
}

impl SkillHooks {
    pub(crate) fn new(active: Arc<ActiveHooks>, options: HookOptions) -> Self {
        SkillHooks { active, options }
    }

    /// Run the commands of `point` matching `tool` in every active skill of `thread`; the
    /// first failure's message, naming the skill.
    async fn fire(&self, thread: &str, point: Point, tool: Option<&ToolCall>) -> Option<String> {
        let skills = self.active.get(thread)?;
        let name = tool.map(|c| c.function.name.as_str());
        let mut failure = None;
        for skill in skills.iter() {
            let rules =
                skill
                    .rules
                    .iter()
                    .filter(|r| r.point == point)
                    .filter(|r| match (&r.matcher, name) {
                        (Some(re), Some(name)) => re.is_match(name),
                        _ => true,
                    });
            for command in rules.flat_map(|r| &r.commands) {
                let span = tracing::info_span!("skill_hook", skill = %skill.name, point = point.key(), tool = name.unwrap_or(""), outcome = tracing::field::Empty);
                let result = self.run_one(skill, command, tool).instrument(span.clone()).await;
                span.record("outcome", if result.is_ok() { "ok" } else { "failed" });
                if let Err(message) = result {
                    let message = format!("skill `{}`'s {} hook: {message}", skill.name, point.key());
                    tracing::warn!("{message}");
                    failure.get_or_insert(message);
                }
            }
        }
        failure
    }

    async fn run_one(
        &self,
        skill: &ActiveSkill,
        command: &str,
        tool: Option<&ToolCall>,
    ) -> Result<(), String> {
        let (program, args) = if self.options.allow_shell {
            ("sh".to_string(), vec!["-c".to_string(), command.to_string()])
        } else {
            if command.contains(['|', '&', ';', '$', '`', '<', '>', '\n', '(', ')', '*', '?']) {
                return Err("the command needs a shell, and the user's config does not allow hooks one ([hooks] shell = true)".into());
            }
            let mut words = shell_words::split(command)
                .map_err(|e| format!("the command cannot be split into words ({e})"))?;
            if words.is_empty() {
                return Err("the command is empty".into());
            }
            let program = words.remove(0);
            // `sh -c …`, `python3 x`, `taskset -c 0 sh -c …`, `sqlite3 db .shell` or a link to
            // `/bin/sh` is a shell by another name.
            if let Some(found) = interpreter_in(&program, &skill.dir, &[]) {
                return Err(format!("the command runs {found}; hooks run such a program only when the user's config says `[hooks] shell = true`"));
            }
            // A relative path (`scripts/check`) is the skill's own file: never one a link
            // leads to outside the skill's folder.
            if Path::new(&program).is_relative() && program.contains('/') && !inside(&skill.dir, &program) {
                return Err(format!(
                    "`{program}` is not a file inside the skill's folder (a link out of it is never run)"
                ));
            }
            (program, words)
        };
        let mut env = tool_env(&self.options.pass_env);
        if let Some(call) = tool {
            env.push(("CTXKIT_TOOL_NAME".into(), call.function.name.clone()));
            env.push(("CTXKIT_TOOL_INPUT".into(), call.function.arguments.clone()));
        }
        match run(
            Path::new(&program),
            &args,
            &env,
            &skill.dir,
            self.options.timeout,
            OUTPUT_CAP,
        )
        .await
        {
            Ok(outcome) => match outcome.status {
                Some(status) if status.success() => Ok(()),
                status => {
                    let said = String::from_utf8_lossy(&outcome.output).trim().to_string();
                    let code = status
                        .and_then(|s| s.code())
                        .map_or("stopped".to_string(), |c| format!("exit status {c}"));
                    Err(if said.is_empty() {
                        code
                    } else {
                        format!("{said} ({code})")
                    })
                }
            },
            Err(RunError::Spawn(e)) => Err(format!("`{program}` could not start ({e})")),
            Err(RunError::Io(e)) => Err(format!("reading its output failed ({e})")),
            Err(RunError::TimedOut) => Err(format!("timed out after {} s", self.options.timeout.as_secs())),
        }
    }
}

/// Whether `program`, relative to the skill's folder `dir`, is a file whose real path stays in
/// that folder.
fn inside(dir: &Path, program: &str) -> bool {
    match (std::fs::canonicalize(dir), real_program(program, dir)) {
        (Ok(dir), Some(real)) => real.starts_with(dir) && real.is_file(),
        _ => false,
    }
}

#[async_trait]
impl Hook for SkillHooks {
    fn name(&self) -> &str {
        "skill-hooks"
    }

    /// A failing `PreToolUse` hook answers instead of the tool: the call is blocked and the
    /// model reads why.
    async fn before_tool(
        &self,
        ctx: &mut HookContext<'_>,
        call: &ToolCall,
    ) -> Result<Option<String>, BoxError> {
        Ok(self
            .fire(ctx.thread_id, Point::PreToolUse, Some(call))
            .await
            .map(|message| format!("error: the call was blocked by {message}")))
    }

    async fn after_tool(
        &self,
        ctx: &mut HookContext<'_>,
        call: &ToolCall,
        _output: &str,
    ) -> Result<(), BoxError> {
        self.fire(ctx.thread_id, Point::PostToolUse, Some(call)).await;
        Ok(())
    }

    /// `Stop`: the model answered without asking for a tool.
    async fn after_model(&self, ctx: &mut HookContext<'_>, response: &Message) -> Result<(), BoxError> {
        if response.tool_calls.is_empty() {
            self.fire(ctx.thread_id, Point::Stop, None).await;
        }
        Ok(())
    }
}
