//! [`SkillTool`]: one `tools.json` entry as a `ctxkit::Tool` — one generic executor that runs
//! whatever a skill declares, with no per-skill code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use ctxkit::{Error, Result, Tool, ToolContext};
use serde_json::Value;

use crate::descriptor::{Program, ToolSpec, SCRIPTS_DIR};

use super::argv::build_argv;
use super::guard::{absolute, PathPolicy};
use super::process::{run, Outcome, RunError};
use super::trust::{interpreter_in, script_inside, tool_env, Interpreter, ToolTrust};

/// Whether and how skill tools run: every decision here is the user's, none the skill's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecOptions {
    /// The skills whose tools are offered and run (default none).
    pub trust: ToolTrust,
    /// Shells, interpreters, launchers and programs with a shell escape (`sh`, `python3`, `env`,
    /// `sqlite3`, `git`, …) a trusted skill's tool may run, by program name (default none,
    /// whatever the skill's allowlist says).
    pub allow_interpreters: Vec<String>,
    /// Variables passed to tool processes on top of `PATH`, `HOME`, `LANG` and the like
    /// (default none). A name that looks like a credential (`*_KEY`, `*_TOKEN`, `*_SECRET`,
    /// `*PASSWORD`, `AWS_*`, …) is never passed.
    pub pass_env: Vec<String>,
    /// Run `scripts/FILE` commands (default false: a skill folder is content, and running its
    /// files is a decision the operator makes, not the skill author).
    pub allow_scripts: bool,
    /// Deadline of one call (default 30 s).
    pub timeout: Duration,
    /// Bytes of standard output and error returned, combined (default 64 KiB).
    pub output_cap: usize,
    /// Working folder of every call, and the second folder path arguments may name (default
    /// none: tools run in their skill's folder).
    pub workspace_root: Option<PathBuf>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            trust: ToolTrust::default(),
            allow_interpreters: Vec::new(),
            pass_env: Vec::new(),
            allow_scripts: false,
            timeout: Duration::from_secs(30),
            output_cap: 64 * 1024,
            workspace_root: None,
        }
    }
}

impl ExecOptions {
    /// Why the tool `spec` declares may not run under these options (its skill trusted), as
    /// the end of a sentence; `None` when it may. Checked when tools are offered and again
    /// when one is called, and shown where tools are listed.
    pub fn refusal(&self, spec: &ToolSpec) -> Option<String> {
        match spec.program() {
            Program::Binary(name) => interpreter_in(name, Path::new("."), &self.allow_interpreters)
                .map(|found| format!("it runs {found}; {}", only_by_name(&found))),
            Program::Script(file) if !self.allow_scripts => Some(format!(
                "it runs `{SCRIPTS_DIR}/{file}`, and skill scripts are disabled (allow_scripts is false)"
            )),
            _ => None,
        }
    }
}

/// The end of a refusal of `found`: who may allow it, and how.
fn only_by_name(found: &Interpreter) -> String {
    format!(
        "such a program runs only when the user allows it by name (`--allow-interpreter {0}` or `[tools] interpreters = [\"{0}\"]`)",
        found.name
    )
}

/// A skill's declared command, callable by the model. Constructing one is the user's
/// decision to let it run: the skill provider builds them only for skills in
/// [`ExecOptions::trust`].
///
/// A call either refuses (`Error::ToolArguments` naming the argument, nothing run), fails to
/// run (`Error::Tool`: scripts disabled, program missing, timeout) or returns the output. A
/// non-zero exit is output, not an error — the model should read what the command said — and
/// ends with an `[exit status N]` line.
///
/// Refused before anything runs: unknown, missing or mistyped arguments; a NUL byte; a
/// positional value starting with `-` (option injection); a shell metacharacter
/// (``; | & $ ` < > ( ) { } ! * ? ~``, a line break or NUL) in a positional or path value; and, for `path`
/// parameters, an absolute path or one whose `..` components leave the skill folder and the
/// workspace root (judged lexically). Free text such as a regular expression belongs in a
/// `flag` parameter, whose value is passed as one argument and never interpreted.
///
/// The process runs in the workspace root (or the skill folder) with standard input closed;
/// only the started process is killed at the timeout or the cap, not processes it left in
/// the background.
pub struct SkillTool {
    spec: ToolSpec,
    skill_dir: PathBuf,
    options: ExecOptions,
    paths: PathPolicy,
    schema: Value,
}

impl SkillTool {
    /// The tool of `spec`, declared by the skill in `skill_dir`.
    pub fn new(spec: ToolSpec, skill_dir: impl Into<PathBuf>, options: ExecOptions) -> Self {
        let skill_dir = absolute(&skill_dir.into());
        let paths = match &options.workspace_root {
            Some(root) => PathPolicy::new(root, &[&skill_dir, root]),
            None => PathPolicy::new(&skill_dir, &[&skill_dir]),
        };
        let schema = spec.schema();
        SkillTool {
            spec,
            skill_dir,
            options,
            paths,
            schema,
        }
    }

    /// The declaration this tool runs.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The folder the command runs in.
    pub fn working_dir(&self) -> &Path {
        &self.paths.cwd
    }

    /// The arguments a call with `args` would pass after the program, or the refusal.
    pub fn argv(&self, args: &Value) -> Result<Vec<String>> {
        build_argv(&self.spec, args, &self.paths).map_err(|message| Error::ToolArguments {
            tool: self.spec.name().to_string(),
            message,
        })
    }

    /// The program to start: an allowlisted name (found through `PATH`) or a script's
    /// absolute path, so `current_dir` cannot change which file runs.
    fn program(&self) -> Result<PathBuf> {
        if let Some(reason) = self.options.refusal(&self.spec) {
            return Err(self.failure(reason));
        }
        match self.spec.program() {
            Program::Binary(name) => Ok(PathBuf::from(name)),
            Program::Script(file) => {
                let scripts = self.skill_dir.join(SCRIPTS_DIR);
                let path = scripts.join(file);
                if !script_inside(&scripts, &path) {
                    Err(self.failure(format!(
                        "`{SCRIPTS_DIR}/{file}` is not a regular file inside the skill's {SCRIPTS_DIR}/ folder (a link out of it is never run)"
                    )))
                } else if let Some(found) = interpreter_in(
                    &path.to_string_lossy(),
                    &scripts,
                    &self.options.allow_interpreters,
                ) {
                    Err(self.failure(format!(
                        "`{SCRIPTS_DIR}/{file}` is {found}; {}",
                        only_by_name(&found)
                    )))
                } else {
                    Ok(path)
                }
            }
        }
    }

    fn command_label(&self) -> String {
        match self.spec.program() {
            Program::Binary(name) => name.clone(),
            Program::Script(file) => format!("{SCRIPTS_DIR}/{file}"),
        }
    }

    fn failure(&self, message: String) -> Error {
        Error::Tool {
            tool: self.spec.name().to_string(),
            message,
        }
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        self.spec.name()
    }

    fn description(&self) -> &str {
        self.spec.description()
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    async fn call(&self, args: Value) -> Result<String> {
        self.call_in(args, &ToolContext::default()).await
    }

    /// Runs the command until it ends, its timeout passes or the run is cancelled; either way
    /// a command stopped early is killed (the process is dropped with `kill_on_drop`).
    async fn call_in(&self, args: Value, ctx: &ToolContext) -> Result<String> {
        let program = self.program()?;
        let argv = self.argv(&args)?;
        let env = tool_env(&self.options.pass_env);
        let running = run(
            &program,
            &argv,
            &env,
            &self.paths.cwd,
            self.options.timeout,
            self.options.output_cap,
        );
        let outcome = tokio::select! {
            outcome = running => outcome,
            () = ctx.cancel.cancelled() => {
                return Err(self.failure(format!(
                    "`{}` was stopped: the run it served ended",
                    self.command_label()
                )));
            }
        }
        .map_err(|e| match e {
            RunError::Spawn(e) => self.failure(format!("cannot start `{}` ({e})", self.command_label())),
            RunError::Io(e) => self.failure(format!(
                "reading the output of `{}` failed ({e})",
                self.command_label()
            )),
            RunError::TimedOut => self.failure(format!(
                "`{}` timed out after {:?} and was stopped",
                self.command_label(),
                self.options.timeout
            )),
        })?;
        Ok(render(outcome, self.options.output_cap))
    }
}

/// The text the model reads: the output, then a marker line when it was cut or the command
/// failed, so neither is mistaken for the command's own words.
fn render(outcome: Outcome, cap: usize) -> String {
    let mut bytes = outcome.output;
    if outcome.truncated {
        // Do not end on half a character.
        if let Err(e) = std::str::from_utf8(&bytes) {
            if e.error_len().is_none() {
                bytes.truncate(e.valid_up_to());
            }
        }
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    let marker = if outcome.truncated {
        Some(format!(
            "[… output truncated at {cap} bytes; the command was stopped]"
        ))
    } else {
        match outcome.status {
            Some(status) if !status.success() => Some(match status.code() {
                Some(code) => format!("[exit status {code}]"),
                None => format!("[{status}]"),
            }),
            _ => None,
        }
    };
    match marker {
        Some(marker) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&marker);
        }
        None if text.is_empty() => text.push_str("(no output)"),
        None => {}
    }
    text
}
