//! Hostile frontmatter: every worst case of the security issue yields one clear diagnostic and
//! never a panic; random hostile mixes never panic and always name the file; the caps are
//! above anything the real corpus uses. (Speed is proven by `benches/hostile.rs`.)

use crate::hostile_inputs as hostile;

use std::path::Path;

use ctxkit_skills::{Diagnostic, Severity, Skill, SkillIndex, Source};
use hostile::{Case, AT_CAP, CASES, FILE_BYTES, WHOLE_FILE};
use proptest::prelude::*;

const PATH: &str = "skills/hostile/SKILL.md";

fn parse(text: &str) -> (Option<Skill>, Vec<Diagnostic>) {
    Skill::parse(Path::new(PATH), text, Some("hostile"))
}

fn with(diags: &[Diagnostic], needle: &str) -> Vec<String> {
    diags
        .iter()
        .filter(|d| d.message.contains(needle))
        .map(ToString::to_string)
        .collect()
}

/// Exactly one diagnostic contains `needle`; it names the file and a line.
fn one(diags: &[Diagnostic], needle: &str, severity: Severity) -> Diagnostic {
    let hits: Vec<&Diagnostic> = diags.iter().filter(|d| d.message.contains(needle)).collect();
    assert_eq!(hits.len(), 1, "`{needle}` once in {diags:#?}");
    let d = hits[0].clone();
    assert_eq!(d.severity, severity, "{d}");
    assert!(d.to_string().starts_with(&format!("{PATH}:")), "{d}");
    assert!(d.line.is_some(), "{d} names a line");
    d
}

#[test]
fn every_whole_file_frontmatter_is_refused_by_size() {
    for &case in CASES {
        let text = case.file(WHOLE_FILE);
        assert!(text.len() < FILE_BYTES, "{}: {}", case.name(), text.len());
        let (skill, diags) = parse(&text);
        assert!(skill.is_none(), "{}", case.name());
        let d = one(&diags, "more than the 16 KiB limit", Severity::Error);
        assert_eq!(d.line, Some(1));
        assert_eq!(diags.len(), 1, "{diags:#?}");
    }
}

#[test]
fn distinct_triggers_are_capped() {
    let (skill, diags) = parse(&Case::DistinctTriggers.file(AT_CAP));
    let skill = skill.expect("the skill loads");
    let d = one(&diags, "more than 256; the first 256 are kept", Severity::Warning);
    assert_eq!(d.line, Some(4), "the `triggers` line");
    assert_eq!(skill.triggers.keywords.len(), 256);
    assert_eq!(skill.triggers.keywords[..3], ["t0", "t1", "t2"]);
    let index = SkillIndex::build(vec![skill], Vec::new());
    assert_eq!(
        index.select(&["run t7 now"], &[], &Default::default())[0].name,
        "hostile"
    );
}

#[test]
fn duplicate_triggers_collapse_without_warning() {
    let (skill, diags) = parse(&Case::DuplicateTriggers.file(AT_CAP));
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(skill.unwrap().triggers.keywords, ["deploy"]);
}

#[test]
fn case_variants_of_a_trigger_are_one_trigger() {
    let text = "---\nname: hostile\ndescription: d\ntriggers: [Deploy, deploy, DEPLOY, ship]\n---\n";
    let (skill, _) = parse(text);
    assert_eq!(skill.unwrap().triggers.keywords, ["Deploy", "ship"]);
}

#[test]
fn unknown_keys_load_and_lines_stay_right() {
    let mut text = Case::UnknownKeys.file(AT_CAP);
    // A bad value after thousands of keys is reported on its own line.
    let at = text.find("\n---\n").unwrap();
    text.insert_str(at, "\npriority: high");
    let line = text[..at].lines().count() + 1;
    let (skill, diags) = parse(&text);
    let skill = skill.expect("the skill loads");
    assert!(skill.extra.len() > 1500, "{}", skill.extra.len());
    let d = one(&diags, "`priority` must be an integer", Severity::Warning);
    assert_eq!(d.line, Some(line));
}

#[test]
fn deep_flow_nesting_is_refused() {
    let (skill, diags) = parse(&Case::NestedFlow.file(AT_CAP));
    assert!(skill.is_none());
    let d = one(&diags, "too deeply nested (more than 64 levels", Severity::Error);
    assert_eq!(d.line, Some(4));
    assert_eq!(diags.len(), 1);
}

#[test]
fn deep_block_nesting_is_refused() {
    let (skill, diags) = parse(&Case::NestedBlock.file(AT_CAP));
    assert!(skill.is_none());
    let d = one(&diags, "too deeply nested", Severity::Error);
    assert!(d.line.unwrap() > 60 && d.line.unwrap() < 70, "{d}");
}

#[test]
fn brackets_are_capped_even_when_quoted() {
    let text = format!(
        "---\nname: hostile\ndescription: d\nx: '{}'\n---\n",
        "[".repeat(257)
    );
    let (skill, diags) = parse(&text);
    assert!(skill.is_none());
    one(&diags, "has 257 `[` and `{`, more than 256", Severity::Error);
}

#[test]
fn nesting_within_the_limit_still_parses() {
    let nested = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    let text = format!("---\nname: hostile\ndescription: d\nx-deep: {nested}\n---\n");
    let (skill, diags) = parse(&text);
    assert!(diags.is_empty(), "{diags:#?}");
    assert!(skill.unwrap().extra.contains_key("x-deep"));
}

#[test]
fn over_limit_patterns_are_capped_and_rejected() {
    let (skill, diags) = parse(&Case::OverLimitPatterns.file(AT_CAP));
    let skill = skill.expect("the skill loads");
    one(
        &diags,
        "patterns, more than 16; the first 16 are kept",
        Severity::Warning,
    );
    let too_big = with(&diags, "compiles to more than 128 KiB");
    assert_eq!(too_big.len(), 16, "{too_big:#?}");
    assert!(skill.triggers.patterns.is_empty());
}

#[test]
fn near_limit_patterns_are_kept_within_the_index_budget() {
    let (skill, diags) = parse(&Case::NearLimitPatterns.file(AT_CAP));
    let skill = skill.expect("the skill loads");
    one(
        &diags,
        "patterns, more than 16; the first 16 are kept",
        Severity::Warning,
    );
    assert_eq!(skill.triggers.patterns.len(), 16);
    let index = SkillIndex::build(vec![skill], Vec::new());
    assert!(
        with(index.diagnostics(), "dropped").is_empty(),
        "{:#?}",
        index.diagnostics()
    );
    let hit = index.select(&["see x3abc"], &[], &Default::default());
    assert_eq!(hit[0].triggers, [r"x3\w\w"]);
}

#[test]
fn the_index_pattern_budget_drops_low_priority_patterns() {
    let skills: Vec<Skill> = (0..12)
        .map(|i| {
            let text = Case::NearLimitPatterns
                .file(AT_CAP)
                .replace("name: hostile", &format!("name: s{i}"));
            let path = format!("skills/s{i}/SKILL.md");
            let (skill, _) = Skill::parse(Path::new(&path), &text, None);
            skill.unwrap().with_root(Source::Project, 100 + i)
        })
        .collect();
    let index = SkillIndex::build(skills, Vec::new());
    let dropped = with(index.diagnostics(), "are dropped: the index's patterns together");
    assert!(!dropped.is_empty() && dropped.len() < 12, "{dropped:#?}");
    assert!(dropped.iter().all(|d| d.starts_with("skills/s")), "{dropped:#?}");
    // The highest priority skill keeps its patterns.
    assert!(dropped.iter().all(|d| !d.contains("`s11`")), "{dropped:#?}");
    assert_eq!(index.select(&["x0abc"], &[], &Default::default())[0].name, "s11");
}

/// A library of many skills whose every pattern compiles to the per-pattern limit costs a
/// bounded number of compilations: the library's patterns share one budget, and once it is
/// spent every further pattern is refused uncompiled, one warning per skill.
#[test]
fn a_hostile_library_spends_one_pattern_budget() {
    let dir = tempfile::tempdir().unwrap();
    let skills = 40;
    for s in 0..skills {
        let patterns: Vec<String> = (0..16).map(|p| format!("'\\w{{200}}[a-z]{{100}}q{p}'")).collect();
        let folder = dir.path().join(format!("s{s:02}"));
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: s{s:02}\ndescription: d\ntriggers:\n  patterns: [{}]\n---\nbody",
                patterns.join(", ")
            ),
        )
        .unwrap();
    }
    let index = SkillIndex::load(&[ctxkit_skills::SkillRoot::new(dir.path(), Source::Project)]);
    let compiled = with(index.diagnostics(), "compiles to more than 128 KiB");
    assert!(
        compiled.len() <= 32,
        "at most the budget over the per-pattern limit is compiled: {}",
        compiled.len()
    );
    let refused = with(index.diagnostics(), "the library's trigger patterns");
    assert!(
        refused.len() >= skills - 3 && refused.len() < skills,
        "one warning per skill past the budget: {refused:#?}"
    );
    assert!(refused[0].contains("ignored"), "{}", refused[0]);
}

#[test]
fn a_long_line_loads() {
    let (skill, diags) = parse(&Case::LongLine.file(AT_CAP));
    assert!(diags.is_empty(), "{diags:#?}");
    let skill = skill.unwrap();
    assert_eq!(skill.body.lines().count(), 1);
    assert!(skill.body.len() > 1_000_000);
}

#[test]
fn alias_bombs_are_refused() {
    let (skill, diags) = parse(&Case::AliasBomb.file(AT_CAP));
    assert!(skill.is_none());
    one(
        &diags,
        "aliases expand to more than 16384 values",
        Severity::Error,
    );

    let mut laughs = String::from(
        "---\nname: hostile\ndescription: d\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..9 {
        let p = format!("*l{}", i - 1);
        laughs.push_str(&format!("l{i}: &l{i} [{}]\n", [p.as_str(); 9].join(", ")));
    }
    laughs.push_str("---\n");
    let (skill, diags) = parse(&laughs);
    assert!(skill.is_none());
    one(&diags, "aliases expand to more than", Severity::Error);
}

#[test]
fn modest_aliases_still_work() {
    let text = "---\nname: hostile\ndescription: &d Deploy things\ntags: [*d, ops]\n---\n";
    let (skill, diags) = parse(text);
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(skill.unwrap().tags, ["Deploy things", "ops"]);
}

#[test]
fn warnings_per_file_are_capped() {
    let junk = vec!["'!!'"; 500].join(", ");
    let text = format!("---\nname: hostile\ndescription: d\ntriggers: [{junk}, ok]\n---\n");
    let (skill, diags) = parse(&text);
    assert_eq!(skill.unwrap().triggers.keywords, ["ok"]);
    assert_eq!(diags.len(), 33, "{diags:#?}");
    let last = diags.last().unwrap().to_string();
    assert_eq!(
        last,
        format!("{PATH}: warning: 468 more warnings for this file are not shown (at most 32 are)")
    );
}

/// No cap is hit by any real skill: a corpus of 650 real skills kept beside the repository,
/// when present.
#[test]
fn the_corpus_hits_no_cap() {
    let Some(corpus) = crate::suites::corpora("the corpus caps test") else {
        return;
    };
    let mut files = Vec::new();
    let mut dirs = vec![corpus];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
                files.push(path);
            }
        }
    }
    assert_eq!(files.len(), 650);
    let caps = [
        "KiB limit",
        "too deeply nested",
        "aliases expand",
        "more than 256",
        "more than 16;",
        "compiles to more than",
        "are not shown",
        "are dropped",
    ];
    let mut skills = Vec::new();
    let mut hit = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let folder = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .map(String::from);
        let (skill, diags) = Skill::parse(&path, &text, folder.as_deref());
        hit.extend(
            diags
                .iter()
                .filter(|d| caps.iter().any(|c| d.message.contains(c)))
                .map(ToString::to_string),
        );
        skills.extend(skill);
    }
    let index = SkillIndex::build(skills, Vec::new());
    hit.extend(
        index
            .diagnostics()
            .iter()
            .filter(|d| caps.iter().any(|c| d.message.contains(c)))
            .map(ToString::to_string),
    );
    assert!(hit.is_empty(), "{hit:#?}");
}

/// Pieces of hostile frontmatter.
fn fragment() -> impl Strategy<Value = String> {
    let weird = prop::sample::select(vec![
        "\u{202e}",
        "\u{0301}",
        "\u{feff}",
        "\u{200b}",
        "😀",
        "日本語",
        "\t",
        "\r",
        "\0",
        "\\",
        "'",
        "\"",
        "[",
        "]",
        "{",
        "}",
        ":",
        ": ",
        "- ",
        "? ",
        "#",
        "&a ",
        "*a",
        "!!str ",
        "|",
        ">",
        "---",
        "...",
        "%YAML",
        ",",
        "\n",
        "  ",
    ]);
    prop_oneof![
        (1usize..200, prop::sample::select(vec!["[", "{", "- ", "[{"])).prop_map(|(n, s)| s.repeat(n)),
        (1usize..120).prop_map(|n| (0..n).map(|i| format!("{}k: v\n", " ".repeat(i))).collect()),
        (1usize..400).prop_map(|n| (0..n).map(|i| format!("key{i}: x\n")).collect()),
        (1usize..300).prop_map(|n| format!(
            "triggers: [{}]\n",
            (0..n)
                .map(|i| format!("t{}", i % 50))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (1usize..40).prop_map(|n| format!(
            "triggers:\n  patterns: [{}]\n",
            (0..n)
                .map(|i| format!("'p{i}\\w{{{}}}'", i * 3))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (1usize..6, 2usize..8).prop_map(|(levels, width)| {
            let mut s = String::from("l0: &l0 [x, x]\n");
            for i in 1..=levels {
                let alias = format!("*l{}", i - 1);
                s.push_str(&format!(
                    "l{i}: &l{i} [{}]\n",
                    vec![alias.as_str(); width].join(", ")
                ));
            }
            s
        }),
        prop::collection::vec(weird, 1..60).prop_map(|v| v.concat()),
        "\\PC{0,80}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random hostile frontmatter never panics; every diagnostic names the file; a skipped
    /// skill always says why.
    #[test]
    fn hostile_frontmatter_never_panics(parts in prop::collection::vec(fragment(), 1..8), body in "\\PC{0,40}") {
        let text = format!("---\nname: hostile\ndescription: d\n{}\n---\n{body}", parts.concat());
        let (skill, diags) = parse(&text);
        for d in &diags {
            prop_assert_eq!(d.path.as_path(), Path::new(PATH));
            prop_assert!(d.to_string().starts_with(PATH), "{}", d);
            prop_assert!(!d.message.is_empty());
        }
        prop_assert!(diags.len() <= 34, "{} diagnostics", diags.len());
        match skill {
            None => prop_assert!(diags.iter().any(Diagnostic::is_error), "skipped without an error: {:?}", diags),
            Some(skill) => {
                prop_assert!(skill.triggers.keywords.len() + skill.triggers.verbs.len() <= 256);
                prop_assert!(skill.triggers.patterns.len() <= 16);
                let index = SkillIndex::build(vec![skill], Vec::new());
                let _ = index.select(&["t1 p2 hostile"], &[], &Default::default());
            }
        }
    }
}
