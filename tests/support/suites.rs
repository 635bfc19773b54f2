//! What the suites that need something from outside the repository share: `.ci/run` puts
//! third-party clients and servers (pinned) into `target/mcp-suites`, has PostgreSQL and
//! Chromium installed and the skills corpus beside the repository, and sets
//! `CTXKIT_EXTERNAL_SUITES=1`, which turns anything missing into a failure; elsewhere a suite
//! is skipped with one line on stderr saying what it needs. Included by path by every crate's
//! tests.
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
    skipped(suite, &format!("`{}`", path.display()));
    None
}

/// Say on stderr that `suite` was skipped for want of `needs`; under
/// `CTXKIT_EXTERNAL_SUITES=1`, which `.ci/run` sets where everything is at hand, panic instead.
pub(crate) fn skipped(suite: &str, needs: &str) {
    if std::env::var_os("CTXKIT_EXTERNAL_SUITES").is_some_and(|v| v == "1") {
        panic!("{suite}: {needs} is missing; .ci/run provides it");
    }
    // Straight to stderr, past the test harness's capture, so the skip is seen.
    let _ = writeln!(std::io::stderr(), "skipped: {suite} (needs {needs}; run .ci/run)");
}

/// The 650 public SKILL.md files kept beside the repository (`../shared/corpora`, or
/// `$CTXKIT_CORPORA`), or `None` after saying `suite` was skipped.
pub(crate) fn corpora(suite: &str) -> Option<PathBuf> {
    let path = std::env::var_os("CTXKIT_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/corpora"));
    if path.is_dir() {
        return Some(path);
    }
    skipped(suite, &format!("the skills corpus at `{}`", path.display()));
    None
}
