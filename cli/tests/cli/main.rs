//! The `ctxkit` binary's behaviour, run as a user runs it, in one test binary: one module per
//! area.

#[path = "../../../providers/memory/tests/support/pg.rs"]
mod pg;
#[path = "../../../tests/support/suites.rs"]
mod suites;
#[path = "../support/mod.rs"]
mod support;

mod browser;
mod cli;
mod controls;
mod hook;
mod learn;
mod mcp;
mod mcp_external;
mod mcp_http;
mod meaning;
mod plugin;
mod postgres;
mod spec;
