//! Real third-party MCP clients against `ctxkit mcp`: the official Python SDK (pinned in
//! `tests/mcp/requirements.txt`). `.ci/run` installs it into `target/mcp-suites/venv` and sets
//! `CTXKIT_EXTERNAL_SUITES=1`, which turns a missing install into a failure; elsewhere the
//! suite is skipped with one line saying how to run it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Where `.ci/run` installs the suites' tools: `$CTXKIT_MCP_SUITES`, else `target/mcp-suites`.
fn suites_dir() -> PathBuf {
    std::env::var_os("CTXKIT_MCP_SUITES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/mcp-suites"))
}

/// The tool at `path`, or `None` after saying the suite was skipped (a failure under
/// `CTXKIT_EXTERNAL_SUITES=1`, where the tools must be there).
fn required(path: PathBuf, suite: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CTXKIT_EXTERNAL_SUITES").is_some_and(|v| v == "1") {
        panic!("{suite}: `{}` is missing; .ci/run installs it", path.display());
    }
    eprintln!("skipped: {suite} (needs `{}`; run .ci/run)", path.display());
    None
}

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
