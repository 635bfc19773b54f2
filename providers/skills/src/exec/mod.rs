//! Skill tools (seed 002 §3): a skill's `tools.json` declares commands; each becomes a
//! [`SkillTool`] that builds an argument vector from the declared parameters and runs an
//! allowlisted program (or, when allowed, one of the skill's `scripts/`) without a shell,
//! under a timeout and an output cap. See `docs/skill-tools.md` for the format.
//!
//! - `descriptor`: the file format, parsed and validated once at index time.
//! - `guard`: the refusals — option injection, shell metacharacters, paths leaving the roots.
//! - `argv`: JSON arguments → argument vector.
//! - `process`: spawning with a scrubbed environment, timeout, output cap.
//! - `trust`: what the user allows — whose tools, which interpreters, which variables.
//! - `tool`: the `ctxkit::Tool` that ties them together.

mod argv;
mod descriptor;
mod guard;
mod process;
mod tool;
mod trust;

pub(crate) use descriptor::load_descriptor;
pub use descriptor::{
    parse_descriptor, ParamKind, ParamSpec, ParamType, Program, ToolSpec, SCRIPTS_DIR, TOOLS_FILE,
};
pub use guard::SHELL_METACHARACTERS;
pub use tool::{ExecOptions, SkillTool};
pub use trust::ToolTrust;
