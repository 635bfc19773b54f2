//! Real third-party MCP clients against `ctxkit mcp`: the official Python SDK (pinned in
//! `tests/mcp/requirements.txt`), installed by `.ci/run` into `target/mcp-suites/venv`.

use std::process::Command;

use crate::suites;

use suites::{required, suites_dir, workspace};

#[test]
fn python_sdk_drives_the_server() {
    let Some(python) = required(suites_dir().join("venv/bin/python"), "the Python MCP SDK suite") else {
        return;
    };
    let output = Command::new(python)
        .arg(workspace().join("tests/mcp/test_server.py"))
        .env("CTXKIT_BIN", env!("CARGO_BIN_EXE_ctxkit"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the Python suite failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
