//! The Python package's own suite (`python/tests`, pytest) against Microsoft Agent Framework,
//! run from `cargo test` in the venv `.ci/run` builds: `pip install './python[maf,test]'` into
//! `target/mcp-suites/venv`, with `agent-framework-core` pinned. Skipped, saying so, elsewhere.
//! The suite tests the package as installed there: after changing the Rust code, run `.ci/run`
//! (or its `pip install … ./python` line) before `cargo test` to test the change.

#[path = "../../tests/support/suites.rs"]
mod suites;

use std::process::Command;

#[test]
fn the_python_package_passes_its_suite() {
    let Some(python) = suites::required(
        suites::suites_dir().join("venv/bin/python"),
        "the Python package suite",
    ) else {
        return;
    };
    // From the workspace root, so the source folder `python/ctxkit` does not shadow the
    // installed package.
    let root = suites::workspace();
    let ready = Command::new(&python)
        .args(["-c", "import ctxkit, ctxkit.maf, pytest"])
        .current_dir(&root)
        .output()
        .expect("run the suites' Python");
    if !ready.status.success() {
        suites::skipped(
            "the Python package suite",
            "ctxkit, agent-framework-core and pytest in the suites' venv",
        );
        return;
    }
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
        .current_dir(&root)
        .status()
        .expect("run pytest");
    assert!(status.success(), "the Python package's pytest suite failed");
}
