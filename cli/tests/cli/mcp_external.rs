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

/// agentskills.io's provider conformance suite (48 checks) through an MCP client adapter, and
/// the Python SDK reading every skill of the OpenHands corpus as written
/// (`tests/mcp/test_skills_conformance.py`; its venv needs Python >= 3.12).
#[test]
fn skills_conformance_suite_and_the_corpus_travel_through_mcp() {
    let Some(python) = required(
        suites_dir().join("py312/bin/python"),
        "the Skills conformance suite",
    ) else {
        return;
    };
    let mut command = Command::new(python);
    command
        .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .args(["-o", "asyncio_default_fixture_loop_scope=function"])
        .arg(workspace().join("tests/mcp/test_skills_conformance.py"))
        .current_dir(workspace().join("tests/mcp"))
        .env("CTXKIT_BIN", env!("CARGO_BIN_EXE_ctxkit"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    if let Some(corpora) = suites::corpora("the OpenHands corpus read through MCP") {
        command.env("CTXKIT_CORPORA", corpora);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Skills suites failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
