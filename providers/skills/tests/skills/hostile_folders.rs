//! A skill folder an attacker arranged: links out of the root, pipes and devices named like
//! skill files, a link to `/`. Each is a diagnostic naming the file; the rest loads, nothing
//! outside the root is read and nothing hangs.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use ctxkit_skills::{SkillIndex, SkillRoot, Source};

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\ntriggers: [{name}]\n---\nBody of {name}.\n")
}

/// A skills root with one honest skill, and a secret file outside it.
fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    write(&root, "good/SKILL.md", &skill_md("good"));
    let secret = write(
        dir.path(),
        "outside/credentials",
        "---\nname: leak\ndescription: OPENAI_API_KEY=sk-not-for-you\n---\nsecret body\n",
    );
    (dir, root, secret)
}

fn messages(index: &SkillIndex) -> String {
    index.diagnostics().iter().map(|d| format!("{d}\n")).collect()
}

fn assert_only_good(index: &SkillIndex) {
    let names: Vec<&str> = index.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"], "{}", messages(index));
    let everything = format!("{:?}{}", index.skills(), messages(index));
    assert!(!everything.contains("sk-not-for-you"), "{everything}");
}

#[test]
fn a_skill_file_linking_out_of_its_root_is_not_read() {
    let (_dir, root, secret) = fixture();
    fs::create_dir_all(root.join("leak")).unwrap();
    symlink(&secret, root.join("leak/SKILL.md")).unwrap();
    fs::create_dir_all(root.join("env")).unwrap();
    symlink("/proc/self/environ", root.join("env/SKILL.md")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    assert_only_good(&index);
    let text = messages(&index);
    assert!(
        text.contains("leak/SKILL.md") && text.contains("outside"),
        "{text}"
    );
    assert!(text.contains("env/SKILL.md"), "{text}");
}

#[test]
fn a_convention_file_linking_out_of_the_project_is_not_read() {
    let (dir, _root, secret) = fixture();
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    symlink(&secret, project.join("AGENTS.md")).unwrap();
    write(&project, "CLAUDE.md", "# Notes\nUse tabs.");
    let roots = [SkillRoot::conventions(&project, Source::Project)];
    let index = SkillIndex::load(&roots);
    let names: Vec<&str> = index.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["CLAUDE"], "{}", messages(&index));
    assert!(messages(&index).contains("AGENTS.md"));
}

#[test]
fn a_link_to_a_file_inside_the_root_still_loads() {
    let (_dir, root, _secret) = fixture();
    write(&root, "shared/other.md", &skill_md("alias"));
    fs::create_dir_all(root.join("alias")).unwrap();
    symlink(root.join("shared/other.md"), root.join("alias/SKILL.md")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    assert!(index.get("alias").is_some(), "{}", messages(&index));
    assert!(index.diagnostics().is_empty(), "{}", messages(&index));
}

#[test]
fn devices_and_pipes_named_skill_md_are_refused_without_hanging() {
    let (_dir, root, _secret) = fixture();
    fs::create_dir_all(root.join("fifo")).unwrap();
    let status = Command::new("mkfifo")
        .arg(root.join("fifo/SKILL.md"))
        .status()
        .unwrap();
    assert!(status.success());
    fs::create_dir_all(root.join("zero")).unwrap();
    symlink("/dev/zero", root.join("zero/SKILL.md")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    assert_only_good(&index);
    let text = messages(&index);
    assert!(
        text.contains("fifo/SKILL.md") && text.contains("not a regular file"),
        "{text}"
    );
    assert!(text.contains("zero/SKILL.md"), "{text}");
}

#[test]
fn a_folder_link_out_of_the_root_is_not_walked() {
    let (dir, root, _secret) = fixture();
    symlink("/", root.join("everything")).unwrap();
    write(dir.path(), "elsewhere/x/SKILL.md", &skill_md("elsewhere"));
    symlink(dir.path().join("elsewhere"), root.join("more")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    assert_only_good(&index);
    let text = messages(&index);
    assert!(text.contains("everything") && text.contains("outside"), "{text}");
    assert!(text.contains("more"), "{text}");
}

#[test]
fn a_tools_file_linking_out_of_the_root_gives_no_tools() {
    let (dir, root, _secret) = fixture();
    let tools = write(
        dir.path(),
        "outside/tools.json",
        r#"{"allowlist": ["ls"], "tools": [{"name": "list", "command": "ls"}]}"#,
    );
    symlink(&tools, root.join("good/tools.json")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    let good = index.get("good").unwrap();
    assert!(good.tools.is_empty());
    let text = messages(&index);
    assert!(
        text.contains("good/tools.json") && text.contains("outside"),
        "{text}"
    );
}

#[test]
fn detection_never_reads_project_files_through_links_or_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    write(
        dir.path(),
        "outside/package.json",
        r#"{"dependencies": {"react": "18"}}"#,
    );
    symlink(
        dir.path().join("outside/package.json"),
        project.join("package.json"),
    )
    .unwrap();
    Command::new("mkfifo")
        .arg(project.join("Cargo.toml"))
        .status()
        .unwrap();
    let skills = [
        ("react", "detect:\n  files: [package.json]\n  patterns: [react]\n"),
        ("rust", "detect:\n  files: [Cargo.toml]\n  patterns: [tokio]\n"),
    ];
    let root = dir.path().join("skills");
    for (name, detect) in skills {
        write(
            &root,
            &format!("{name}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: The {name} skill\n{detect}---\nBody.\n"),
        );
    }
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    assert_eq!(index.len(), 2, "{}", messages(&index));
    assert!(index.detect(&project).is_empty());
}

/// Detection by globs sees only the project's own files: a link out of the project (to a file
/// or a folder) matches no glob, and a link loop ends the walk of that branch.
#[test]
fn a_glob_never_matches_through_a_link_out_of_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    write(dir.path(), "outside/App.tsx", "export {}\n");
    write(dir.path(), "outside/ui/Button.tsx", "export {}\n");
    write(
        &project,
        ".cursor/rules/react.mdc",
        "---\ndescription: React\nglobs: \"**/*.tsx\"\n---\nReact rules.\n",
    );
    fs::create_dir_all(project.join("src")).unwrap();
    symlink(dir.path().join("outside/App.tsx"), project.join("src/App.tsx")).unwrap();
    symlink(dir.path().join("outside/ui"), project.join("src/ui")).unwrap();
    symlink(&project, project.join("src/loop")).unwrap();
    let index = SkillIndex::load(&SkillRoot::project_defaults(&project));
    assert!(index.get("react").is_some(), "{}", messages(&index));
    assert!(index.detect(&project).is_empty());
    write(&project, "src/Own.tsx", "export {}\n");
    assert_eq!(index.detect(&project), ["react"]);
}

#[test]
fn a_default_skills_folder_linking_out_of_the_project_is_skipped() {
    let (dir, _root, _secret) = fixture();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    write(dir.path(), "elsewhere/x/SKILL.md", &skill_md("elsewhere"));
    symlink(dir.path().join("elsewhere"), project.join(".claude/skills")).unwrap();
    write(&project, "skills/good/SKILL.md", &skill_md("good"));
    let index = SkillIndex::load(&SkillRoot::project_defaults(&project));
    let names: Vec<&str> = index.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"], "{}", messages(&index));
    assert!(
        messages(&index).contains(".claude/skills"),
        "{}",
        messages(&index)
    );
}

/// A skill folder swapped for a link out after the skill was loaded: its files are neither
/// listed nor read (the folder is the one discovery loaded it from), until it is loaded again.
#[test]
fn a_skill_folder_swapped_for_a_link_out_after_loading_is_not_read() {
    let (dir, root, _) = fixture();
    write(&root, "good/references/api.md", "API notes");
    write(
        dir.path(),
        "outside/references/api.md",
        "OPENAI_API_KEY=sk-not-for-you",
    );
    write(dir.path(), "outside/SKILL.md", &skill_md("good"));
    let index = SkillIndex::load(&[SkillRoot::new(&root, Source::Project)]);
    let skill = index.get("good").unwrap();
    assert_eq!(skill.read_file("references/api.md").unwrap(), b"API notes");

    fs::rename(root.join("good"), dir.path().join("moved")).unwrap();
    symlink(dir.path().join("outside"), root.join("good")).unwrap();
    assert!(skill.files().is_empty());
    assert!(skill.read_file("references/api.md").is_err());
    assert_eq!(skill.read_files().count(), 0);
}
