//! ctxkit-memory's behaviour, in one test binary: one module per area.

#[path = "../support/mod.rs"]
mod support;
#[path = "../../../../tests/support/suites.rs"]
mod suites;

mod backends;
mod durability;
mod extraction;
mod lifecycle;
mod provider;
