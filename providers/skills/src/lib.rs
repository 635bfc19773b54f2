//! Skills for ctxkit: SKILL.md discovery and parsing, trigger matching by whole words and their
//! regular English [`inflect`]ions, and a [`SkillContextProvider`] that injects the few skills
//! that fit a message.
//!
//! ```
//! use std::sync::Arc;
//! use ctxkit_skills::{SkillIndex, SkillLibrary, SkillContextProvider, SkillConfig, Skill, Source};
//!
//! let text = "---\nname: greet\ndescription: Greetings in many languages\ntriggers: [hello, bonjour]\n---\nSay hello.";
//! let (parsed, diagnostics) = Skill::parse("skills/greet/SKILL.md".as_ref(), text, Some("greet"));
//! assert!(diagnostics.is_empty());
//! let skill = parsed.unwrap().with_root(Source::Project, 250);
//! let index = SkillIndex::build(vec![skill], Vec::new());
//!
//! let picked = index.select(&["Say bonjour to Alice"], &[], &Default::default());
//! assert_eq!(picked[0].name, "greet");
//! assert_eq!(picked[0].triggers, ["bonjour"]);
//! assert!(index.select(&["Othello"], &[], &Default::default()).is_empty());
//!
//! // A trigger also fires as its inflected forms, and the selection says which one.
//! let picked = index.select(&["They helloed back"], &[], &Default::default());
//! assert_eq!(picked[0].forms["hello"], "helloed");
//!
//! let provider = SkillContextProvider::new(Arc::new(SkillLibrary::from_index(index)), SkillConfig::default());
//! ```
//!
//! A skill folder may also hold a `tools.json` declaring commands the skill brings as tools
//! ([`ToolSpec`], [`SkillTool`]): allowlisted programs run without a shell, under a timeout and
//! an output cap, offered with the skill (see `docs/skill-tools.md` in this crate).
//!
//! # Layering
//!
//! Each module uses only modules on lower lines, so any of them can be read (and tested)
//! without the ones above it:
//!
//! ```text
//! eval                          routing quality: labelled requests through selection, scored
//! provider                      inject skills into each request, within a token budget
//! render, meaning               skills as text under a budget (tokens or a host's characters);
//!                               skills by meaning, with an embedding model (opt-in)
//! select, detect, exec, tools   pick skills; detect projects; run skill tools and hooks;
//!                               read_skill
//! external                      external-skills.json -> roots with overrides
//! watch                         hot reload: swap in a changed index
//! index                         one deduplicated, ranked, compiled snapshot; the library
//! cache                         the on-disk index cache: a scan reused while nothing changed,
//!                               and the words ranker of exactly those skills
//! scan                          find, read and parse every skill file under the roots
//! parse, files                  SKILL.md, Cursor and Copilot text -> Skill; spec checks; a skill's
//!                               folder: its files, listed and read confined
//! discover, matcher, rank       walk a folder, never out of it; compile triggers; weigh the
//!                               words skills offer, body included
//! skill                         the data model: Skill, Source, Triggers, Detect
//! body, descriptor, standing    a skill's text, read from the cache when used; tools.json ->
//!                               ToolSpec; a project's AGENTS.md and CLAUDE.md, read confined
//!                               and cut to a budget: standing instructions, not skills
//! diagnostic, confined, inflect problems for authors; reads that never leave a folder; the
//!                               forms a trigger also matches
//! ```

#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod body;
mod cache;
mod confined;
mod descriptor;
mod detect;
mod diagnostic;
mod discover;
pub mod eval;
mod exec;
mod external;
mod files;
mod index;
pub mod inflect;
mod matcher;
mod meaning;
mod parse;
mod provider;
mod rank;
pub mod render;
mod scan;
mod select;
mod skill;
mod standing;
mod tools;
mod watch;

pub use body::Body;
pub use descriptor::ToolSpec;
pub use detect::Detection;
pub use diagnostic::{Diagnostic, Severity};
pub use discover::SkillRoot;
pub use exec::{ExecOptions, HookOptions, SkillHooks, SkillTool, ToolTrust};
pub use external::ExternalSkills;
pub use files::{SkillFile, SkillFileError};
pub use index::{LoadOptions, SkillIndex, SkillLibrary};
pub use meaning::SkillMeaning;
pub use provider::{Mode, RenderProfile, SkillConfig, SkillContextProvider};
pub use select::{
    Evidence, NearMiss, Ranking, Reason, SelectOptions, Selection, DEFAULT_CUT, DEFAULT_FLOOR,
    DEFAULT_MEANING_FLOOR, MEANING_WEIGHT, MEANING_ZERO, PAST_THE_CAP, TRIGGER_WEIGHT,
};
pub use skill::{Detect, Format, Skill, Source, Triggers};
pub use standing::{StandingInstructions, STANDING_FILES};

/// Every public type can be shared across threads: a library is reloaded while requests run,
/// and an agent holds the provider behind an `Arc`. Checked at compile time.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Detect>();
    send_sync::<Detection>();
    send_sync::<LoadOptions>();
    send_sync::<Diagnostic>();
    send_sync::<ExecOptions>();
    send_sync::<ExternalSkills>();
    send_sync::<HookOptions>();
    send_sync::<SkillHooks>();
    send_sync::<Mode>();
    send_sync::<Evidence>();
    send_sync::<Format>();
    send_sync::<NearMiss>();
    send_sync::<Ranking>();
    send_sync::<Reason>();
    send_sync::<RenderProfile>();
    send_sync::<SelectOptions>();
    send_sync::<Selection>();
    send_sync::<Severity>();
    send_sync::<Skill>();
    send_sync::<SkillConfig>();
    send_sync::<SkillContextProvider>();
    send_sync::<SkillFile>();
    send_sync::<SkillIndex>();
    send_sync::<SkillLibrary>();
    send_sync::<SkillRoot>();
    send_sync::<SkillTool>();
    send_sync::<Source>();
    send_sync::<StandingInstructions>();
    send_sync::<ToolSpec>();
    send_sync::<ToolTrust>();
    send_sync::<Triggers>();
};
