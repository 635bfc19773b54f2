//! The `ctxkit` binary's behaviour, run as a user runs it, in one test binary: one module per
//! area.

#[path = "../support/mod.rs"]
mod support;
#[path = "../../../tests/support/suites.rs"]
mod suites;
#[path = "../../../providers/memory/tests/support/pg.rs"]
mod pg;

mod cli;
mod controls;
mod hook;
mod mcp;
mod mcp_external;
mod mcp_http;
mod postgres;
