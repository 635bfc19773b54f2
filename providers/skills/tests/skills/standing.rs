//! A project's standing instructions: its own AGENTS.md and CLAUDE.md, read confined, cut to a
//! budget with a marker, and left out of the skills when an agent sends them as instructions.

use std::fs;
use std::path::{Path, PathBuf};

use ctxkit::{ApproxCounter, TokenCounter};
use ctxkit_skills::{SkillIndex, SkillRoot, Source, StandingInstructions, STANDING_FILES};

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn agents_then_claude_in_order_and_nothing_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let none = StandingInstructions::read(p, 8_000, &ApproxCounter);
    assert_eq!(none, StandingInstructions::default());
    write(p, "CLAUDE.md", "# Claude\nRun the tests.\n");
    write(p, "AGENTS.md", "\n# House rules\nUse tabs.\n");
    write(p, "docs/AGENTS.md", "# Docs only\n");
    let standing = StandingInstructions::read(p, 8_000, &ApproxCounter);
    assert_eq!(
        standing.text,
        "# House rules\nUse tabs.\n\n# Claude\nRun the tests."
    );
    assert_eq!(standing.files, [p.join("AGENTS.md"), p.join("CLAUDE.md")]);
    assert!(!standing.cut && standing.diagnostics.is_empty());
    assert!(
        StandingInstructions::read(p, 0, &ApproxCounter).text.is_empty(),
        "0 sends nothing"
    );
}

#[test]
fn over_the_budget_the_start_is_kept_with_a_marker_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let rules: String = (0..400)
        .map(|i| format!("Rule {i}: keep the code tidy.\n"))
        .collect();
    write(p, "AGENTS.md", &rules);
    write(p, "CLAUDE.md", "# Claude\nRun the tests.\n");
    let counter = ApproxCounter;
    let standing = StandingInstructions::read(p, 300, &counter);
    assert!(standing.cut);
    assert!(
        counter.count(&standing.text) <= 300 + 60,
        "{}",
        counter.count(&standing.text)
    );
    assert!(
        standing.text.starts_with("Rule 0: keep the code tidy.\n"),
        "{}",
        standing.text
    );
    assert!(
        standing.text.contains("more lines of AGENTS.md left out: standing instructions are cut at 300 tokens; read AGENTS.md for the rest]"),
        "{}",
        standing.text
    );
    assert!(!standing.text.contains("Rule 399"), "the end is left out");
    // The budget is spent: CLAUDE.md is named, not sent.
    assert!(
        standing.text.ends_with("read CLAUDE.md for the rest]"),
        "{}",
        standing.text
    );
    assert!(!standing.text.contains("Run the tests"), "{}", standing.text);
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_project_is_not_read_and_a_link_to_agents_counts_once() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let secret = write(
        dir.path(),
        "outside/credentials",
        "OPENAI_API_KEY=sk-not-for-you\n",
    );
    let p = dir.path().join("project");
    fs::create_dir_all(&p).unwrap();
    symlink(&secret, p.join("AGENTS.md")).unwrap();
    let standing = StandingInstructions::read(&p, 8_000, &ApproxCounter);
    assert!(standing.text.is_empty(), "{}", standing.text);
    assert_eq!(standing.diagnostics.len(), 1);
    let said = standing.diagnostics[0].to_string();
    assert!(said.contains("AGENTS.md") && said.contains("outside"), "{said}");
    assert!(!said.contains("sk-not-for-you"), "{said}");

    // CLAUDE.md a link to AGENTS.md (a common setup): sent once.
    fs::remove_file(p.join("AGENTS.md")).unwrap();
    write(&p, "AGENTS.md", "Use tabs.");
    symlink("AGENTS.md", p.join("CLAUDE.md")).unwrap();
    let standing = StandingInstructions::read(&p, 8_000, &ApproxCounter);
    assert_eq!(standing.text, "Use tabs.");
    assert_eq!(standing.files, [p.join("AGENTS.md")]);
}

#[test]
fn a_root_without_standing_files_keeps_every_other_convention_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "AGENTS.md", "# House rules\nUse tabs.");
    write(p, "CLAUDE.md", "# Claude\nRun the tests.");
    write(p, "GEMINI.md", "# Gemini\nBe brief.");
    write(p, "docs/AGENTS.md", "# Docs notes\n");
    let names = |roots: &[SkillRoot]| {
        let index = SkillIndex::load(roots);
        let mut names: Vec<String> = index
            .skills()
            .iter()
            .map(|s| s.path.display().to_string())
            .collect();
        names.sort();
        names
    };
    let paths =
        |files: &[&str]| -> Vec<String> { files.iter().map(|f| p.join(f).display().to_string()).collect() };
    // The project's AGENTS.md wins the name over the one in docs/.
    let all = names(&[SkillRoot::conventions(p, Source::Project)]);
    assert_eq!(all, paths(&["AGENTS.md", "CLAUDE.md", "GEMINI.md"]));
    let left = names(&[SkillRoot::conventions(p, Source::Project).leaving_out(&STANDING_FILES)]);
    assert_eq!(left, paths(&["GEMINI.md", "docs/AGENTS.md"]));
}
