//! The provider's injected text per mode, the token budget, and the skill tools.

use crate::common;

use std::sync::Arc;

use common::{skill, skill_with_body};
use ctxkit::{ApproxCounter, ContextProvider, Message, Placement, RunInfo, SectionKind, TokenCounter};
use ctxkit_skills::{Mode, RenderProfile, SkillConfig, SkillContextProvider, SkillLibrary};
use serde_json::json;

fn library() -> Arc<SkillLibrary> {
    Arc::new(SkillLibrary::from_index(common::index(vec![
        skill("greet", "[hello, bonjour]", ""),
        skill("git", "[git, rebase]", "priority: 300\n"),
        skill_with_body(
            "long",
            "[long]",
            "",
            &(1..=10)
                .map(|i| format!("line {i}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    ])))
}

fn provider(mode: Mode) -> SkillContextProvider {
    SkillContextProvider::new(
        library(),
        SkillConfig {
            mode,
            ..Default::default()
        },
    )
}

async fn invoke(p: &SkillContextProvider, text: &str) -> ctxkit::Context {
    p.invoking(&[Message::user(text)], &RunInfo::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn full_mode_injects_every_body_in_the_seed_002_shape() {
    let ctx = invoke(&provider(Mode::Full), "what is 2+2?").await;
    assert_eq!(ctx.sections.len(), 1);
    let s = &ctx.sections[0];
    assert_eq!(s.placement, Placement::Stable);
    assert_eq!(s.items, ["git", "greet", "long"], "priority first, then name");
    assert!(s.text.starts_with(
        "You have access to the following skills. Use them when relevant.\n\n## git\nThe git skill\n\nInstructions of git.\n\n## greet\n"
    ), "{}", s.text);
    assert!(ctx.tools.is_empty() && ctx.catalog.is_empty());
}

#[tokio::test]
async fn triggered_mode_injects_only_matches() {
    let p = provider(Mode::Triggered);
    assert!(invoke(&p, "What is 2+2?").await.is_empty());
    let ctx = invoke(&p, "Say bonjour to Alice").await;
    assert_eq!(
        ctx.instructions().unwrap(),
        "The following skills apply to this request. Follow them when relevant.\n\n## greet\nThe greet skill\n\nInstructions of greet."
    );
    assert_eq!(ctx.sections[0].placement, Placement::PerMessage);
    assert_eq!(ctx.sections[0].items, ["greet"]);
    assert!(ctx.tools.is_empty());
}

#[tokio::test]
async fn on_demand_mode_offers_a_catalog_and_tools() {
    let ctx = invoke(&provider(Mode::OnDemand), "Say bonjour").await;
    let names: Vec<&str> = ctx.catalog.iter().map(|e| &*e.name).collect();
    assert_eq!(names, ["git", "greet", "long"]);
    assert_eq!(ctx.sections.len(), 1);
    assert_eq!(ctx.sections[0].kind, SectionKind::CATALOG);
    assert!(ctx.sections[0].text.contains("`read_skill`"));
    let tools: Vec<&str> = ctx.tools.iter().map(|t| t.name()).collect();
    assert_eq!(tools, ["read_skill", "read_skills"]);
}

#[tokio::test]
async fn hybrid_mode_has_catalog_tools_and_matched_bodies() {
    let ctx = invoke(&provider(Mode::Hybrid), "git rebase, then say hello").await;
    assert_eq!(ctx.catalog.len(), 3);
    assert_eq!(ctx.tools.len(), 2);
    let skills = ctx
        .sections
        .iter()
        .find(|s| s.kind == SectionKind::SKILLS)
        .unwrap();
    assert_eq!(skills.items, ["git", "greet"], "score 2 before score 1");
}

#[tokio::test]
async fn bodies_are_cut_at_max_content_lines_with_a_marker() {
    let p = SkillContextProvider::new(
        library(),
        SkillConfig {
            mode: Mode::Triggered,
            max_content_lines: 3,
            ..Default::default()
        },
    );
    let text = invoke(&p, "long").await.instructions().unwrap();
    assert!(text.ends_with("line 1\nline 2\nline 3\n\n[… 7 more lines not shown; read_skill(\"long\") returns the full text]"), "{text}");
}

#[tokio::test]
async fn the_token_budget_cuts_lower_ranked_skills_first() {
    let lib = Arc::new(SkillLibrary::from_index(common::index(vec![
        skill_with_body("big", "[deploy, prod]", "", &"word ".repeat(400)),
        skill_with_body("small", "[deploy]", "", "Short."),
        skill_with_body("tiny", "[deploy]", "", "Tiny."),
    ])));
    let counter = Arc::new(ApproxCounter);
    let config = |budget| SkillConfig {
        mode: Mode::Triggered,
        token_budget: Some(budget),
        counter: counter.clone(),
        ..Default::default()
    };
    let items = |ctx: &ctxkit::Context| ctx.sections.first().map(|s| s.items.clone()).unwrap_or_default();
    // Everything fits.
    let p = SkillContextProvider::new(lib.clone(), config(10_000));
    assert_eq!(
        items(&invoke(&p, "deploy to prod").await),
        ["big", "small", "tiny"]
    );
    // The top-ranked body does not fit: it is skipped, the smaller ones still come.
    let p = SkillContextProvider::new(lib.clone(), config(60));
    let ctx = invoke(&p, "deploy to prod").await;
    assert_eq!(items(&ctx), ["small", "tiny"]);
    assert!(counter_tokens(&ctx) <= 60);
    let left = |ctx: &ctxkit::Context| {
        ctx.left_out
            .iter()
            .map(|l| (l.kind.to_string(), l.name.clone(), l.why.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        left(&ctx),
        [("skills".into(), "big".into(), "over the token budget".into())]
    );
    // Room for one: the best-ranked one that fits.
    let p = SkillContextProvider::new(lib.clone(), config(30));
    let ctx = invoke(&p, "deploy to prod").await;
    assert_eq!(items(&ctx), ["small"]);
    assert_eq!(left(&ctx).len(), 2);
    // The cap leaves out what ranks past it, and says so too.
    let capped = SkillConfig {
        select: ctxkit_skills::SelectOptions {
            max_skills: 2,
            ..Default::default()
        },
        ..config(10_000)
    };
    let ctx = invoke(&SkillContextProvider::new(lib.clone(), capped), "deploy to prod").await;
    assert_eq!(items(&ctx), ["big", "small"]);
    assert_eq!(
        left(&ctx),
        [("skills".into(), "tiny".into(), "past the cap".into())]
    );
    // The agent's budget applies when smaller.
    let p = SkillContextProvider::new(lib, config(10_000));
    let run = RunInfo {
        token_budget: Some(30),
        ..Default::default()
    };
    let ctx = p
        .invoking(&[Message::user("deploy to prod")], &run)
        .await
        .unwrap();
    assert_eq!(items(&ctx), ["small"]);
}

fn counter_tokens(ctx: &ctxkit::Context) -> usize {
    use ctxkit::TokenCounter;
    ctx.sections.iter().map(|s| ApproxCounter.count(&s.text)).sum()
}

#[tokio::test]
async fn the_catalog_respects_its_budget_in_rank_order() {
    let skills = (0..50).map(|i| skill(&format!("skill-{i:02}"), "", "")).collect();
    let lib = Arc::new(SkillLibrary::from_index(common::index(skills)));
    let p = SkillContextProvider::new(
        lib,
        SkillConfig {
            mode: Mode::OnDemand,
            catalog_tokens: 150,
            counter: Arc::new(ApproxCounter),
            ..Default::default()
        },
    );
    let ctx = invoke(&p, "hi").await;
    assert!(
        !ctx.catalog.is_empty() && ctx.catalog.len() < 50,
        "{}",
        ctx.catalog.len()
    );
    assert_eq!(&*ctx.catalog[0].name, "skill-00");
    // Stable across messages, so prompt caches keep hitting.
    assert_eq!(invoke(&p, "something else").await.catalog, ctx.catalog);
}

#[tokio::test]
async fn read_skill_refuses_anything_but_a_loaded_name() {
    let ctx = invoke(&provider(Mode::Hybrid), "hi").await;
    let read = ctx.tools.iter().find(|t| t.name() == "read_skill").unwrap();
    let body = read.call(json!({"name": "greet"})).await.unwrap();
    assert_eq!(body, "# greet\nThe greet skill\n\nInstructions of greet.");
    assert!(
        read.call(json!({"name": "GREET"})).await.is_ok(),
        "names are case-insensitive"
    );
    for bad in [
        "../greet",
        "/etc/passwd",
        "skills/greet/SKILL.md",
        "greet/../../x",
        "",
        "nope",
    ] {
        let err = read.call(json!({"name": bad})).await.unwrap_err().to_string();
        assert!(err.contains(&format!("no skill is named `{bad}`")), "{err}");
        assert!(err.contains("git, greet, long"), "{err}");
    }
    let list = ctx.tools.iter().find(|t| t.name() == "read_skills").unwrap();
    let listed: serde_json::Value = serde_json::from_str(&list.call(json!({})).await.unwrap()).unwrap();
    assert_eq!(
        listed[1],
        json!({"name": "greet", "description": "The greet skill"})
    );
}

#[tokio::test]
async fn detected_skills_are_injected_for_the_project_in_previews_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]").unwrap();
    let lib = Arc::new(SkillLibrary::from_index(common::index(vec![skill(
        "rust",
        "",
        "detect:\n  files: [Cargo.toml]\n",
    )])));
    let p = SkillContextProvider::new(
        lib,
        SkillConfig {
            mode: Mode::Triggered,
            ..Default::default()
        },
    );
    let project = dir.path().to_str().unwrap().to_string();
    for preview in [true, false] {
        let run = RunInfo {
            project: Some(project.clone()),
            preview,
            ..Default::default()
        };
        let ctx = p.invoking(&[Message::user("hi")], &run).await.unwrap();
        assert_eq!(ctx.sections[0].items, ["rust"], "preview: {preview}");
    }
    let elsewhere = tempfile::tempdir().unwrap();
    for project in [Some(elsewhere.path().to_str().unwrap().to_string()), None] {
        let run = RunInfo {
            project,
            ..Default::default()
        };
        assert!(p.invoking(&[Message::user("hi")], &run).await.unwrap().is_empty());
    }
}

#[test]
fn modes_parse_from_their_names() {
    for m in Mode::ALL {
        assert_eq!(m.as_str().parse::<Mode>().unwrap(), m);
    }
    assert_eq!(
        "x".parse::<Mode>().unwrap_err(),
        "unknown skill mode `x`; use full, triggered, on-demand or hybrid"
    );
}

#[tokio::test]
async fn a_body_of_one_enormous_line_is_cut_by_characters() {
    let lib = Arc::new(SkillLibrary::from_index(common::index(vec![skill_with_body(
        "wall",
        "[]",
        "always: true\n",
        &"x".repeat(900_000),
    )])));
    let p = SkillContextProvider::new(lib, SkillConfig::default());
    let text = invoke(&p, "anything").await.instructions().unwrap();
    assert!(
        text.contains(&format!(
            "{}\n\n[… 880000 more characters not shown",
            "x".repeat(100)
        )),
        "{}",
        &text[text.len() - 200..]
    );
    let tokens = ctxkit::BpeCounter.count(&text);
    assert!(
        tokens <= ctxkit_skills::SkillConfig::DEFAULT_TOKEN_BUDGET,
        "{tokens} tokens"
    );
}

#[tokio::test]
async fn a_skill_with_files_names_them_and_read_skill_reads_one_by_its_listed_path() {
    use ctxkit_skills::{SkillRoot, Source};
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("skills/pdf");
    std::fs::create_dir_all(folder.join("references")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDFs\ntriggers: [pdf]\n---\nSee references/forms.md.",
    )
    .unwrap();
    std::fs::write(folder.join("references/forms.md"), "FORMS-TEXT").unwrap();
    std::fs::write(folder.join("logo.png"), [0x89, b'P', 0xff]).unwrap();
    std::fs::write(dir.path().join("skills/secret.txt"), "TOP SECRET").unwrap();
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        dir.path().join("skills"),
        Source::Project,
    )]));
    let config = SkillConfig {
        mode: Mode::Hybrid,
        ..Default::default()
    };
    let ctx = invoke(&SkillContextProvider::new(library, config), "fill this pdf").await;
    assert!(
        ctx.instructions().unwrap().contains(
            "## pdf\nWork with PDFs\nFiles: logo.png, references/forms.md (read_skill(\"pdf\", file) returns one)\n\nSee references/forms.md."
        ),
        "{:?}",
        ctx.instructions()
    );
    let read = ctx.tools.iter().find(|t| t.name() == "read_skill").unwrap();
    let whole = read.call(json!({"name": "pdf"})).await.unwrap();
    assert!(
        whole.ends_with(
            "Files of this skill (read one with read_skill and `file`): logo.png, references/forms.md"
        ),
        "{whole}"
    );
    assert_eq!(
        read.call(json!({"name": "pdf", "file": "references/forms.md"}))
            .await
            .unwrap(),
        "FORMS-TEXT"
    );
    let binary = read
        .call(json!({"name": "pdf", "file": "logo.png"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(binary.contains("not text"), "{binary}");
    for bad in [
        "../secret.txt",
        "references/../../secret.txt",
        "/etc/passwd",
        "references",
        "SKILL.md/..",
    ] {
        let err = read
            .call(json!({"name": "pdf", "file": bad}))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("the skill has no file at that path"), "{bad}: {err}");
    }
}

/// What a host's hook gets: only the selected bodies, within the run's JSON characters, a
/// long body cut with the path of its file, `always` skills only at the session start (an
/// empty message), and nothing the conversation already holds in the same version.
#[tokio::test]
async fn the_host_profile_renders_for_a_transcript_within_characters() {
    let lib = Arc::new(SkillLibrary::from_index(common::index(vec![
        skill("greet", "[hello]", ""),
        skill("house", "[]", "always: true\n"),
        skill_with_body("wall", "[wall]", "", &"a \"quoted\" line\n".repeat(1_000)),
    ])));
    let p = SkillContextProvider::new(
        lib,
        SkillConfig {
            mode: Mode::Triggered,
            profile: RenderProfile::Host,
            ..Default::default()
        },
    );
    let host = |budget: usize| RunInfo {
        char_budget: Some(budget),
        ..Default::default()
    };
    let items = |ctx: &ctxkit::Context| ctx.sections.first().map(|s| s.items.clone()).unwrap_or_default();
    let at = |message: &str, run: RunInfo| {
        let p = &p;
        let message = message.to_string();
        async move { p.invoking(&[Message::user(message)], &run).await.unwrap() }
    };

    let start = at("", host(10_000)).await;
    assert_eq!(
        items(&start),
        ["house"],
        "always-on skills come at the session start"
    );
    let prompt = at("hello", host(10_000)).await;
    assert_eq!(items(&prompt), ["greet"], "and not with each prompt");
    assert!(
        prompt.tools.is_empty() && prompt.catalog.is_empty(),
        "the host lists and runs its own"
    );

    let wall = at("hello wall", host(3_000)).await;
    let text = wall.system_text().unwrap();
    assert!(ctxkit_skills::render::Measure::JsonChars.cost(&text) <= 3_000);
    assert!(
        text.contains("more characters not shown. The whole skill is in "),
        "{text}"
    );
    assert_eq!(items(&wall), ["wall"], "cut to the room it had");
    assert_eq!(wall.sections[0].versions.len(), 1, "each item with its version");
    let left: Vec<(&str, &str)> = wall
        .left_out
        .iter()
        .map(|l| (l.name.as_str(), l.why.as_str()))
        .collect();
    assert_eq!(left, [("greet", "over the character budget")]);

    // What the conversation holds in this version is left out before the budget is filled.
    let mut sent = ctxkit::Sent::default();
    sent.record(&prompt);
    let held = RunInfo {
        sent: Some(Arc::new(sent)),
        ..host(10_000)
    };
    assert_eq!(items(&at("hello wall", held).await), ["wall"]);
}
