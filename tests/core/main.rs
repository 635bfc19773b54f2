//! ctxkit's behaviour across crates, in one test binary: one module per area.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod compose;
mod e2e;
mod http_models;
#[cfg(feature = "mcp")]
mod mcp_npm;
mod once;
