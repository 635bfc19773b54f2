//! `ctxkit serve` in a real browser: Debian's Chromium driven by Playwright
//! (`cli/tests/browser/test_serve.py`, pinned in `cli/tests/browser/requirements.txt`), both
//! installed by `.ci/run`. Set `CTXKIT_SHOTS=DIR` (relative to the workspace) to keep a
//! screenshot of each page, as the README's are.

use std::path::PathBuf;
use std::process::Command;

use crate::suites;

use suites::{required, suites_dir, workspace};

#[test]
fn the_manager_page_works_in_a_real_browser() {
    let chromium =
        std::env::var_os("CTXKIT_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let Some(chromium) = required(chromium, "the browser suite") else {
        return;
    };
    let Some(_) = required(suites_dir().join("venv/bin/playwright"), "the browser suite") else {
        return;
    };
    let mut suite = Command::new(suites_dir().join("venv/bin/python"));
    suite
        .arg(workspace().join("cli/tests/browser/test_serve.py"))
        .env("CTXKIT_BIN", env!("CARGO_BIN_EXE_ctxkit"))
        .env("CTXKIT_CHROMIUM", chromium);
    if let Some(shots) = std::env::var_os("CTXKIT_SHOTS") {
        // Relative to the workspace, not to this crate's folder where tests run.
        suite.env("CTXKIT_SHOTS", workspace().join(shots));
    }
    let output = suite.output().unwrap();
    assert!(
        output.status.success(),
        "the browser suite failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
