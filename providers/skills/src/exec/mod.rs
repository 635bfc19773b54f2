//! Running skill tools, the tools a skill brings for the model to call: each
//! [`ToolSpec`](crate::descriptor::ToolSpec) a skill's `tools.json` declared (parsed and validated at index
//! time by `crate::descriptor`) becomes a [`SkillTool`] that builds an argument vector from the
//! declared parameters and runs an allowlisted program (or, when allowed, one of the skill's
//! `scripts/`) without a shell, under a timeout and an output cap. See `docs/skill-tools.md`
//! for the format.
//!
//! - `guard`: the refusals — option injection, shell metacharacters, paths leaving the roots.
//! - `argv`: JSON arguments → argument vector.
//! - `process`: spawning with a scrubbed environment, timeout, output cap.
//! - `trust`: what the user allows — whose tools, which interpreters, which variables.
//! - `tool`: the `ctxkit::Tool` that ties them together.
//! - `hook`: SKILL.md `hooks`, run around tool calls with the same process rules.

mod argv;
mod guard;
mod hook;
mod process;
mod tool;
mod trust;

pub(crate) use hook::{ActiveHooks, ActiveSkill};
pub use hook::{HookOptions, SkillHooks};
pub use tool::{ExecOptions, SkillTool};
pub use trust::ToolTrust;
