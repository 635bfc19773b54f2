//! Discovery and indexing from disk: tiers, priorities, defaults, ignored folders, symlink
//! loops, size and encoding limits, dedup, reload — and the 650 real skills of the corpus.

use std::fs;
use std::path::{Path, PathBuf};

use ctxkit_skills::{Format, SkillIndex, SkillLibrary, SkillRoot, Source};

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn skill_md(name: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n{extra}---\nBody of {name}.\n")
}

#[test]
fn project_defaults_find_every_root_and_convention_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "skills/a/SKILL.md", &skill_md("a", ""));
    write(p, ".skills/b/SKILL.md", &skill_md("b", ""));
    write(p, ".agents/skills/c/SKILL.md", &skill_md("c", ""));
    write(p, ".claude/skills/d/SKILL.md", &skill_md("d", ""));
    write(p, "AGENTS.md", "# House rules\nUse tabs.");
    write(p, "docs/CLAUDE.md", "# Docs notes\n");
    write(p, "node_modules/pkg/CLAUDE.md", "# ignored\n");
    write(p, "skills/node_modules/e/SKILL.md", &skill_md("e", ""));
    write(p, "skills/target/f/SKILL.md", &skill_md("f", ""));
    let index = SkillIndex::load(&SkillRoot::project_defaults(p));
    let mut names: Vec<&str> = index.skills().iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["AGENTS", "CLAUDE", "a", "b", "c", "d"]);
    assert!(index.diagnostics().is_empty(), "{:?}", index.diagnostics());
    assert!(index
        .skills()
        .iter()
        .all(|s| s.source == Source::Project && s.priority == 250));
}

#[test]
fn same_name_resolved_by_tier_then_priority() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "builtin/x/SKILL.md", &skill_md("x", "priority: 999\n"));
    write(p, "user/x/SKILL.md", &skill_md("x", ""));
    write(p, "user/y/SKILL.md", &skill_md("y", ""));
    write(p, "user2/y/SKILL.md", &skill_md("y", "priority: 180\n"));
    let roots = [
        SkillRoot::new(p.join("builtin"), Source::Builtin),
        SkillRoot::new(p.join("user"), Source::User),
        SkillRoot::new(p.join("user2"), Source::User),
    ];
    let index = SkillIndex::load(&roots);
    assert_eq!(index.len(), 2);
    // The user tier beats builtin even though the builtin copy says priority 999.
    assert!(index.get("x").unwrap().path.starts_with(p.join("user")));
    // Same tier: the higher effective priority wins.
    assert!(index.get("y").unwrap().path.starts_with(p.join("user2")));
    let shadowed: Vec<String> = index.diagnostics().iter().map(|d| d.to_string()).collect();
    assert_eq!(shadowed.len(), 2, "{shadowed:?}");
    assert!(
        shadowed.iter().all(|d| d.contains("is shadowed by")),
        "{shadowed:?}"
    );
    assert!(!index.has_errors(), "shadowing is a warning");
}

#[test]
fn bad_files_are_diagnostics_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "good/SKILL.md", &skill_md("good", ""));
    let big = write(
        p,
        "big/SKILL.md",
        &format!("{}{}", skill_md("big", ""), "x".repeat(1 << 20)),
    );
    let latin1 = p.join("latin1/SKILL.md");
    fs::create_dir_all(latin1.parent().unwrap()).unwrap();
    fs::write(&latin1, b"---\nname: latin1\ndescription: caf\xe9\n---\n").unwrap();
    write(p, "broken/SKILL.md", "---\nname: broken\ndescription: [\n---\n");
    let index = SkillIndex::load(&[
        SkillRoot::new(p, Source::User),
        SkillRoot::new(p.join("missing"), Source::User),
    ]);
    assert_eq!(
        index.skills().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["good"]
    );
    let diags: Vec<String> = index.diagnostics().iter().map(|d| d.to_string()).collect();
    assert_eq!(diags.len(), 4, "{diags:?}");
    assert!(diags
        .iter()
        .any(|d| d.starts_with(&big.display().to_string()) && d.contains("over the 1 MiB limit")));
    assert!(
        diags
            .iter()
            .any(|d| d.contains("latin1/SKILL.md:3: error: the file is not valid UTF-8")),
        "{diags:?}"
    );
    assert!(diags
        .iter()
        .any(|d| d.contains("broken/SKILL.md") && d.contains("cannot be parsed")));
    assert!(diags
        .iter()
        .any(|d| d.contains("missing") && d.contains("does not exist")));
    assert!(index.has_errors());
}

#[cfg(unix)]
#[test]
fn symlink_loops_are_not_followed_forever() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "a/one/SKILL.md", &skill_md("one", ""));
    std::os::unix::fs::symlink(p.join("a"), p.join("a/one/back")).unwrap();
    std::os::unix::fs::symlink(p.join("a/one"), p.join("a/alias")).unwrap();
    let index = SkillIndex::load(&[SkillRoot::new(p.join("a"), Source::User)]);
    assert_eq!(index.len(), 1);
    assert!(
        index
            .diagnostics()
            .iter()
            .any(|d| d.message.contains("symlink loop")),
        "{:?}",
        index.diagnostics()
    );
}

#[test]
fn ids_are_normalized_name_plus_hash() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "My Skill/SKILL.md", &skill_md("My Skill", ""));
    let index = SkillIndex::load(&[SkillRoot::new(dir.path(), Source::User)]);
    let s = &index.skills()[0];
    assert_eq!(s.id, format!("my-skill-{}", &s.hash[..12]));
    assert_eq!(s.hash.len(), 64);
}

#[test]
fn reload_swaps_while_old_snapshots_stay_valid() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a/SKILL.md", &skill_md("a", "triggers: [alpha]\n"));
    let library = SkillLibrary::load(vec![SkillRoot::new(dir.path(), Source::User)]);
    let before = library.snapshot();
    write(dir.path(), "b/SKILL.md", &skill_md("b", "triggers: [beta]\n"));
    library.reload();
    let after = library.snapshot();
    assert_eq!((before.len(), after.len()), (1, 2));
    assert!(before.get("b").is_none(), "an old snapshot never changes");
    assert_eq!(after.select(&["beta"], &[], &Default::default())[0].name, "b");
}

#[test]
fn detection_by_project_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        p,
        "skills/rust/SKILL.md",
        &skill_md("rust", "detect:\n  files: [Cargo.toml]\n  patterns: [tokio]\n"),
    );
    write(
        p,
        "skills/react/SKILL.md",
        &skill_md("react", "detect:\n  files: [package.json]\n"),
    );
    write(
        p,
        "skills/sneaky/SKILL.md",
        &skill_md("sneaky", "detect:\n  files: [../outside, /etc/passwd]\n"),
    );
    let index = SkillIndex::load(&[SkillRoot::new(p.join("skills"), Source::Project)]);
    assert!(index.detect(p).is_empty());
    write(p, "Cargo.toml", "[dependencies]\nserde = \"1\"\n");
    assert!(index.detect(p).is_empty(), "the pattern must appear too");
    write(p, "Cargo.toml", "[dependencies]\ntokio = \"1\"\n");
    write(p, "package.json", "{}");
    assert_eq!(index.detect(p), ["react", "rust"]);
}

/// The done-when of issue 48: a Cursor rule with `globs: ["**/*.tsx"]` is detected in a
/// project with a `.tsx` file and absent in one without.
#[test]
fn a_cursor_rule_with_globs_is_detected_by_a_matching_file() {
    let rule = "---\ndescription: React components\nglobs: [\"**/*.tsx\"]\nalwaysApply: false\n---\n# React\nUse function components.\n";
    let with = tempfile::tempdir().unwrap();
    let without = tempfile::tempdir().unwrap();
    for p in [with.path(), without.path()] {
        write(p, ".cursor/rules/react.mdc", rule);
        write(p, "src/main.ts", "export {}\n");
        write(p, "node_modules/ui/Button.tsx", "ignored folders do not count\n");
    }
    write(with.path(), "src/ui/App.tsx", "export {}\n");
    for (p, expected) in [(with.path(), vec!["react"]), (without.path(), vec![])] {
        let index = SkillIndex::load(&SkillRoot::project_defaults(p));
        assert!(index.diagnostics().is_empty(), "{:?}", index.diagnostics());
        let rule = index.get("react").unwrap();
        assert_eq!(
            (rule.format, rule.description.as_str()),
            (Format::Cursor, "React components")
        );
        assert_eq!(index.detect(p), expected, "in {}", p.display());
    }
    let index = SkillIndex::load(&SkillRoot::project_defaults(with.path()));
    assert_eq!(index.detect_report(with.path())[0].files, ["src/ui/App.tsx"]);
}

/// A project with many Cursor rules and a long file list: the list is walked and counted once
/// per detection, so every rule whose glob matches is detected (charged per rule, 100 rules
/// over a 1 MB list used to stop detection part way).
#[test]
fn many_glob_rules_over_a_large_project_are_all_detected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let long = "d".repeat(200);
    for i in 0..4_000 {
        write(p, &format!("src/{long}/{i:0>50}.ts"), "");
    }
    for i in 0..100 {
        write(
            p,
            &format!(".cursor/rules/rule-{i}.mdc"),
            &format!(
                "---\ndescription: Rule {i}\nglobs: [\"src/**/{:0>50}.ts\"]\n---\nRule {i}.\n",
                3_999 - i
            ),
        );
    }
    let index = SkillIndex::load(&SkillRoot::project_defaults(p));
    assert_eq!(index.len(), 100);
    assert_eq!(index.detect(p).len(), 100);
}

/// Cursor rules and Copilot instructions load as skills beside AGENTS.md: each activation
/// becomes ctxkit's (always, detection, selection, by name only).
#[test]
fn cursor_rules_and_copilot_instructions_load_with_their_activation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        p,
        ".cursor/rules/Core Rules.mdc",
        "---\ndescription:\nglobs:\nalwaysApply: true\n---\n# Core\nBe brief.\n",
    );
    write(
        p,
        ".cursor/rules/ts.mdc",
        "---\nglobs: **/*.ts, src/**/*.{js,jsx} # bare, as Cursor writes them\n---\nTypeScript rules.\n",
    );
    write(
        p,
        ".cursor/rules/migrations.mdc",
        "---\ndescription: Writing database migrations\n---\nOne change per migration.\n",
    );
    write(
        p,
        ".cursor/rules/manual.mdc",
        "---\nalwaysApply: false\n---\n# Release steps\n",
    );
    write(
        p,
        ".github/copilot-instructions.md",
        "# Repository rules\nRun the tests.\n",
    );
    write(
        p,
        ".github/instructions/api.instructions.md",
        "---\napplyTo: \"src/api/**/*.py,**/*.pyi\"\n---\nAPI rules.\n",
    );
    write(p, "notes/rules/other.mdc", "not under .cursor: not a rule\n");
    let index = SkillIndex::load(&SkillRoot::project_defaults(p));
    assert!(index.diagnostics().is_empty(), "{:?}", index.diagnostics());
    let mut names: Vec<&str> = index.skills().iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "api",
            "copilot-instructions",
            "core-rules",
            "manual",
            "migrations",
            "ts"
        ]
    );
    let core = index.get("core-rules").unwrap();
    assert!(core.always && core.description == "Core");
    let ts = index.get("ts").unwrap().detect.clone().unwrap();
    assert_eq!(ts.globs, ["**/*.ts", "src/**/*.{js,jsx}"]);
    let migrations = index.get("migrations").unwrap();
    assert!(!migrations.always && migrations.detect.is_none() && !migrations.disable_model_invocation);
    let picked = |message: &str| -> Vec<String> {
        let selected = index.select(&[message], &[], &Default::default());
        selected.into_iter().map(|s| s.name).collect()
    };
    let by_description = picked("how do I write the database migrations?");
    assert!(
        by_description.contains(&"migrations".to_string()),
        "{by_description:?}"
    );
    assert!(!picked("what is 2+2?").contains(&"migrations".to_string()));
    assert!(
        index.get("manual").unwrap().disable_model_invocation,
        "no activation: by name only"
    );
    let copilot = index.get("copilot-instructions").unwrap();
    assert!(copilot.always && copilot.format == Format::Copilot);
    assert_eq!(
        index.get("api").unwrap().detect.as_ref().unwrap().globs,
        ["src/api/**/*.py", "**/*.pyi"]
    );
    assert!(index.detect(p).is_empty());
    write(p, "lib/x.ts", "");
    write(p, "types/m.pyi", "");
    assert_eq!(index.detect(p), ["api", "ts"]);
}

/// Every real SKILL.md loads, none skipped, no panic: a corpus of 650 real skills kept beside
/// the repository, when present.
#[test]
fn all_corpus_skills_load() {
    let Some(corpus) = crate::suites::corpora("the corpus loading test") else {
        return;
    };
    let index = SkillIndex::load(&[SkillRoot::new(&corpus, Source::External)]);
    let errors: Vec<String> = index
        .diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{} skipped:\n{}",
        errors.len(),
        errors.join("\n")
    );
    let shadowed = index
        .diagnostics()
        .iter()
        .filter(|d| d.message.contains("shadowed"))
        .count();
    assert_eq!(
        index.len() + shadowed,
        650,
        "every file is either loaded or shadowed by a same-named one"
    );
    let with_triggers = index.skills().iter().filter(|s| !s.triggers.is_empty()).count();
    // 69 files declare triggers; two of them are both named `release-notes`.
    assert_eq!(with_triggers, 68);
}
