//! ctxkit-memory's behaviour, in one test binary: one module per area.

#[path = "../../../../tests/support/suites.rs"]
mod suites;
#[path = "../support/mod.rs"]
mod support;

mod backends;
mod durability;
mod extraction;
mod lifecycle;
mod meaning;
mod provider;
