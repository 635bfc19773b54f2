//! Parser fixtures: every frontmatter format the parser reads, and every diagnostic.

use std::path::Path;

use ctxkit_skills::{Diagnostic, Severity, Skill};

fn parse(path: &str, text: &str) -> (Option<Skill>, Vec<Diagnostic>) {
    let folder = Path::new(path)
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    Skill::parse(Path::new(path), text, folder)
}

fn ok(path: &str, text: &str) -> (Skill, Vec<Diagnostic>) {
    let (skill, diags) = parse(path, text);
    (skill.unwrap_or_else(|| panic!("skipped: {diags:?}")), diags)
}

fn messages(diags: &[Diagnostic]) -> Vec<String> {
    diags.iter().map(ToString::to_string).collect()
}

#[test]
fn agentskills_format() {
    let text = "---\nname: pdf\ndescription: Work with PDF files.\nlicense: MIT\ncompatibility: needs poppler\n\
                allowed-tools: Read Bash\nmetadata:\n  author: acme\n  version: \"1.2\"\nuser-invocable: true\n\
                x-custom: [1, 2]\n---\n# PDF\n\nDo things.\n";
    let (s, diags) = ok("skills/pdf/SKILL.md", text);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        (s.name.as_str(), s.description.as_str()),
        ("pdf", "Work with PDF files.")
    );
    assert_eq!(s.body, "# PDF\n\nDo things.");
    assert_eq!(s.license.as_deref(), Some("MIT"));
    assert_eq!(s.compatibility.as_deref(), Some("needs poppler"));
    assert_eq!(s.allowed_tools, ["Read", "Bash"]);
    assert_eq!(s.metadata["author"], "acme");
    assert_eq!(s.user_invocable, Some(true));
    assert_eq!(
        s.extra["x-custom"],
        serde_json::json!([1, 2]),
        "unknown keys are kept"
    );
    assert!(s.triggers.is_empty());
}

#[test]
fn adr_flat_trigger_list() {
    let text = "---\nname: hello-extended\ndescription: Multi-language greeting tool\n\
                triggers: [\"greet\", \"hello\", \"bonjour\", \"hola\", \"greeting\"]\n---\nbody";
    let (s, _) = ok("skills/hello-extended/SKILL.md", text);
    assert_eq!(
        s.triggers.keywords,
        ["greet", "hello", "bonjour", "hola", "greeting"]
    );
}

#[test]
fn agent_base_trigger_object() {
    let text = "---\nname: k8s\ndescription: Kubernetes help\ntriggers:\n  keywords: [kubectl, pod]\n  \
                verbs: [deploy]\n  patterns: ['helm\\s+install']\n---\n";
    let (s, diags) = ok("skills/k8s/SKILL.md", text);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(s.triggers.keywords, ["kubectl", "pod"]);
    assert_eq!(s.triggers.verbs, ["deploy"]);
    assert_eq!(s.triggers.patterns, ["helm\\s+install"]);
    assert_eq!(s.body, "");
}

#[test]
fn metadata_triggers_string() {
    let text = "---\nname: git\ndescription: Git help\nmetadata:\n  triggers: \"git, rebase , merge conflict\"\n---\nx";
    let (s, _) = ok("skills/git/SKILL.md", text);
    assert_eq!(s.triggers.keywords, ["git", "rebase", "merge conflict"]);
    assert_eq!(s.metadata["triggers"], "git, rebase , merge conflict");
}

#[test]
fn convention_file_without_frontmatter() {
    let (s, diags) = ok("project/AGENTS.md", "\n# Project rules\n\nUse pnpm.\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        (s.name.as_str(), s.description.as_str()),
        ("AGENTS", "Project rules")
    );
    assert_eq!(s.body, "# Project rules\n\nUse pnpm.");
}

#[test]
fn unquoted_colon_is_retried_with_a_warning() {
    let text = "---\nname: ssh\ndescription: Use when: the user mentions ssh\n---\nx";
    let (s, diags) = ok("skills/ssh/SKILL.md", text);
    assert_eq!(s.description, "Use when: the user mentions ssh");
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].severity, Severity::Warning);
    assert!(diags[0].message.contains("unquoted `: `"), "{}", diags[0]);
}

#[test]
fn broken_yaml_skips_with_a_line() {
    let text = "---\nname: bad\ndescription: ok\ntriggers: [unclosed\n---\nx";
    let (s, diags) = parse("skills/bad/SKILL.md", text);
    assert!(s.is_none());
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert!(d.is_error());
    assert!(d.line.is_some_and(|l| (4..=6).contains(&l)), "{d}");
    assert!(d.to_string().starts_with("skills/bad/SKILL.md:"), "{d}");
    assert!(d.message.contains("cannot be parsed"), "{d}");
}

#[test]
fn missing_description_skips() {
    let (s, diags) = parse("skills/x/SKILL.md", "---\nname: x\n---\nbody");
    assert!(s.is_none());
    assert!(
        diags[0].is_error() && diags[0].message.contains("no `description`"),
        "{:?}",
        diags
    );
    let (s, _) = parse(
        "skills/x/SKILL.md",
        "---\nname: x\ndescription: \"  \"\n---\nbody",
    );
    assert!(s.is_none(), "a blank description is no description");
}

#[test]
fn frontmatter_that_is_not_a_mapping_skips() {
    let (s, diags) = parse("skills/x/SKILL.md", "---\n- a\n- b\n---\nbody");
    assert!(s.is_none());
    assert!(diags[0].message.contains("not a mapping"), "{diags:?}");
}

#[test]
fn name_rules_are_warnings() {
    let (s, diags) = ok(
        "skills/my-skill/SKILL.md",
        "---\nname: My_Skill\ndescription: d\n---\n",
    );
    assert_eq!(s.name, "My_Skill");
    let m = messages(&diags);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(
        m[0].contains("skills/my-skill/SKILL.md:2: warning: name `My_Skill` should be 1-64"),
        "{m:?}"
    );
    assert!(m[1].contains("does not match its folder `my-skill`"), "{m:?}");
    let (_, diags) = ok("skills/a--b/SKILL.md", "---\nname: a--b\ndescription: d\n---\n");
    assert_eq!(diags.len(), 1);
    let long = "a".repeat(65);
    let (_, diags) = ok(
        &format!("skills/{long}/SKILL.md"),
        &format!("---\nname: {long}\ndescription: d\n---\n"),
    );
    assert_eq!(diags.len(), 1);
}

#[test]
fn missing_name_uses_the_folder() {
    let (s, diags) = ok("skills/tidy/SKILL.md", "---\ndescription: d\n---\n");
    assert_eq!(s.name, "tidy");
    assert!(diags[0].message.contains("no `name`"), "{diags:?}");
}

#[test]
fn empty_and_punctuation_triggers_are_diagnosed() {
    let (s, diags) = ok(
        "skills/t/SKILL.md",
        "---\nname: t\ndescription: d\ntriggers: ['', '  ', '!!', go, GO]\n---\n",
    );
    assert_eq!(
        s.triggers.keywords,
        ["go"],
        "duplicates differing in case count once"
    );
    let m = messages(&diags);
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(
        m.iter()
            .all(|d| d.contains(":4: warning: trigger") && d.contains("no letters or digits")),
        "{m:?}"
    );
}

#[test]
fn invalid_regex_is_a_warning() {
    let (s, diags) = ok(
        "skills/t/SKILL.md",
        "---\nname: t\ndescription: d\ntriggers:\n  patterns: ['(open', 'ok+']\n---\n",
    );
    assert_eq!(s.triggers.patterns, ["ok+"]);
    assert!(
        diags[0].message.contains("`(open` is not a valid regex"),
        "{diags:?}"
    );
}

#[test]
fn bad_field_types_are_warnings() {
    let text = "---\nname: t\ndescription: d\npriority: high\nalways: maybe\ntags: {a: 1}\n---\n";
    let (s, diags) = ok("skills/t/SKILL.md", text);
    assert_eq!(s.declared_priority, None);
    assert!(!s.always);
    let m = messages(&diags);
    assert!(
        m[0].contains(":4: warning: `priority` must be an integer"),
        "{m:?}"
    );
    assert!(
        m[1].contains(":5: warning: `always` must be true or false"),
        "{m:?}"
    );
    assert!(m[2].contains(":6: warning: `tags` must be a list"), "{m:?}");
}

#[test]
fn unclosed_frontmatter_is_read_as_markdown() {
    let (s, diags) = ok("skills/u/SKILL.md", "---\nname: u\ndescription: d\n# Title\n");
    assert_eq!(s.name, "u");
    assert!(diags[0].message.contains("never closed"), "{diags:?}");
}

#[test]
fn disable_model_invocation_with_triggers_warns() {
    let (s, diags) = ok(
        "skills/d/SKILL.md",
        "---\nname: d\ndescription: d\ndisable-model-invocation: true\ntriggers: [x1]\n---\n",
    );
    assert!(s.disable_model_invocation);
    assert!(diags[0].message.contains("triggers never fire"), "{diags:?}");
}

#[test]
fn priority_and_detect_are_read() {
    let text = "---\nname: r\ndescription: d\npriority: 120\ndetect:\n  files: [Cargo.toml]\n  patterns: [tokio]\n---\n";
    let (s, _) = ok("skills/r/SKILL.md", text);
    assert_eq!(s.declared_priority, Some(120));
    assert_eq!(s.priority, 120);
    let d = s.detect.unwrap();
    assert_eq!(
        (d.files, d.patterns),
        (vec!["Cargo.toml".to_string()], vec!["tokio".to_string()])
    );
}

#[test]
fn remaining_diagnostics_name_the_field() {
    let text = "---\nname: t\ndescription: d\nversion: [1, 2]\nmetadata: plain\ntags: [ok, {a: 1}]\n\
                triggers:\n  keywords: [go]\n  nouns: [x]\ndetect: [Cargo.toml]\n---\n";
    let (s, diags) = ok("skills/t/SKILL.md", text);
    assert_eq!(
        (s.version, s.tags, s.triggers.keywords),
        (None, vec!["ok".to_string()], vec!["go".to_string()])
    );
    let m = messages(&diags);
    let expect = [
        ":4: warning: `version` must be a single value",
        ":5: warning: `metadata` must be a mapping",
        ":6: warning: an item of `tags` is not a plain value",
        ":7: warning: unknown trigger kind `nouns`",
        ":10: warning: `detect` must be a mapping",
    ];
    assert_eq!(m.len(), expect.len(), "{m:?}");
    for (got, want) in m.iter().zip(expect) {
        assert!(got.contains(want), "{got} lacks {want}");
    }
}

#[test]
fn skill_md_without_frontmatter_and_empty_files() {
    let (s, diags) = ok("skills/notes/SKILL.md", "# Release notes helper\n\nSteps.");
    assert_eq!(
        (s.name.as_str(), s.description.as_str()),
        ("notes", "Release notes helper")
    );
    assert!(diags[0].message.contains("no YAML frontmatter"), "{diags:?}");
    let (s, diags) = parse("skills/empty/SKILL.md", "  \n\n");
    assert!(s.is_none());
    assert!(
        diags
            .iter()
            .any(|d| d.is_error() && d.message.contains("the file is empty")),
        "{diags:?}"
    );
}

#[test]
fn overlong_descriptions_warn() {
    let text = format!("---\nname: t\ndescription: {}\n---\n", "word ".repeat(300));
    let (_, diags) = ok("skills/t/SKILL.md", &text);
    assert!(
        diags[0].message.contains("longer than 1024 characters"),
        "{diags:?}"
    );
}

#[test]
fn a_listed_form_of_another_trigger_is_a_warning() {
    let (skill, diags) = ok(
        "skills/hi/SKILL.md",
        "---\nname: hi\ndescription: Greetings\ntriggers: [greet, greeting, queries, slow query, hello]\n---\nSay hi.",
    );
    // The skill keeps every trigger: the warning only says which ones the rule already covers.
    assert_eq!(skill.triggers.literals().count(), 5);
    let text = messages(&diags);
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(
        text[0].contains("trigger `greeting` is a form of `greet`"),
        "{text:?}"
    );
    assert_eq!(diags[0].severity, Severity::Warning);
    assert_eq!(diags[0].line, Some(4));
}
