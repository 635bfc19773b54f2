//! ctxkit-skills' behaviour, in one test binary: one module per area.

mod common;
#[path = "../support/hostile.rs"]
mod hostile_inputs;
#[path = "../../../../tests/support/suites.rs"]
mod suites;

mod agreement;
mod controls;
mod discovery;
mod hostile;
mod hostile_folders;
mod index_cache;
mod matching;
mod meaning;
mod parse;
mod property;
mod provider;
mod skill_tools;
mod standing;
