//! Skills for ctxkit: SKILL.md discovery and parsing, trigger matching with one Aho-Corasick
//! automaton, and a [`SkillContextProvider`] that injects the few skills that fit a message.
//!
//! ```
//! use std::sync::Arc;
//! use ctxkit_skills::{SkillIndex, SkillLibrary, SkillContextProvider, SkillConfig, Skill, Source, parse_skill};
//!
//! let text = "---\nname: greet\ndescription: Greetings in many languages\ntriggers: [hello, bonjour]\n---\nSay hello.";
//! let (parsed, diagnostics) = parse_skill("skills/greet/SKILL.md".as_ref(), text, Some("greet"));
//! assert!(diagnostics.is_empty());
//! let skill = parsed.unwrap().with_root(Source::Project, 250);
//! let index = SkillIndex::build(vec![skill], Vec::new());
//!
//! let picked = index.select(&["Say bonjour to Alice"], &[], &Default::default());
//! assert_eq!(picked[0].name, "greet");
//! assert_eq!(picked[0].triggers, ["bonjour"]);
//! assert!(index.select(&["Othello"], &[], &Default::default()).is_empty());
//!
//! let provider = SkillContextProvider::new(Arc::new(SkillLibrary::from_index(index)), SkillConfig::default());
//! ```
//!
//! A skill folder may also hold a `tools.json` declaring commands the skill brings as tools
//! ([`ToolSpec`], [`SkillTool`]): allowlisted programs run without a shell, under a timeout and
//! an output cap, offered with the skill (see `docs/skill-tools.md` in this crate).

mod confined;
mod descriptor;
mod detect;
mod diagnostic;
mod discover;
mod exec;
mod index;
mod lexical;
mod matcher;
mod parse;
mod provider;
mod select;
mod skill;
mod tools;

pub use descriptor::ToolSpec;
pub use diagnostic::{Diagnostic, Severity};
pub use discover::SkillRoot;
pub use exec::{ExecOptions, SkillTool, ToolTrust};
pub use index::{SkillIndex, SkillLibrary};
pub use parse::parse_skill;
pub use provider::{Mode, SkillConfig, SkillContextProvider, DEFAULT_TOKEN_BUDGET};
pub use select::{Reason, SelectOptions, Selection};
pub use skill::{Detect, Skill, Source, Triggers};
