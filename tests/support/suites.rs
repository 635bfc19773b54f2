//! The external MCP suites' installs: `.ci/run` puts third-party clients and servers (pinned)
//! into `target/mcp-suites` and sets `CTXKIT_EXTERNAL_SUITES=1`, which turns a missing install
//! into a failure; elsewhere a suite is skipped with one line saying how to run it. Shared by
//! the core's and the CLI's tests (the CLI includes this file by path).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The workspace root: the nearest folder above this crate holding `Cargo.lock`.
pub(crate) fn workspace() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// Where `.ci/run` installs the suites' tools: `$CTXKIT_MCP_SUITES`, else `target/mcp-suites`.
pub(crate) fn suites_dir() -> PathBuf {
    std::env::var_os("CTXKIT_MCP_SUITES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/mcp-suites"))
}

/// The tool at `path`, or `None` after saying the suite was skipped (a failure under
/// `CTXKIT_EXTERNAL_SUITES=1`, where the tools must be there).
pub(crate) fn required(path: PathBuf, suite: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CTXKIT_EXTERNAL_SUITES").is_some_and(|v| v == "1") {
        panic!("{suite}: `{}` is missing; .ci/run installs it", path.display());
    }
    // Straight to stderr, past the test harness's capture, so the skip is seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {suite} (needs `{}`; run .ci/run)",
        path.display()
    );
    None
}
