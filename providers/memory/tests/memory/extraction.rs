//! The hooks that run extraction at session end and compaction, and how they report failures.
//! (Parsing replies, the prompt and storing are unit tests of the extraction module.)

use std::sync::Arc;

use ctxkit::{Agent, Error, Message, ScriptedModel, Thread};
use ctxkit_memory::*;

const P: &str = "/work/alpha";

fn store() -> (tempfile::TempDir, Arc<SqliteMemoryStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    (dir, store)
}

/// An agent whose own scripted model answers two turns; the hook's extractor has its own model.
fn agent_with(hook: MemoryHook) -> Agent {
    Agent::builder()
        .project(P)
        .model(Arc::new(ScriptedModel::new([
            Message::assistant("Done."),
            Message::assistant("Done again."),
        ])))
        .hook(hook)
        .build()
        .unwrap()
}

#[tokio::test]
async fn session_end_and_compaction_hooks_extract() {
    let (_dir, store) = store();
    let model = Arc::new(ScriptedModel::new([
        Message::assistant(
            r#"[{"category": "convention", "content": "Migrations live in db/migrations", "importance": 0.7}]"#,
        ),
        Message::assistant(
            r#"[{"category": "pattern", "content": "Handlers return Result<Json, AppError>", "importance": 0.6}]"#,
        ),
    ]));
    let hook =
        MemoryHook::new(store.clone()).with_extractor(MemoryExtractor::new(model.clone(), store.clone()));
    let agent = agent_with(hook);
    let mut thread = Thread::new();
    agent.run(&mut thread, "Add a migration for users").await.unwrap();
    agent.run(&mut thread, "Now the handler").await.unwrap();
    assert_eq!(agent.compact(&mut thread, 2).await.unwrap(), 2);
    let prompt = &model.requests()[0].messages[0].content;
    assert!(
        prompt.contains("Add a migration for users") && !prompt.contains("Now the handler"),
        "compaction sees the removed part only"
    );
    agent.end_session(&mut thread).await.unwrap();
    let contents: Vec<String> = store
        .list(P, ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert!(contents.contains(&"Migrations live in db/migrations".to_string()));
    assert!(contents.contains(&"Handlers return Result<Json, AppError>".to_string()));
}

#[tokio::test]
async fn a_failing_extraction_is_reported_by_the_hook() {
    let (_dir, store) = store();
    let model = Arc::new(ScriptedModel::default());
    model.push_error("model overloaded");
    let hook =
        MemoryHook::new(store.clone()).with_extractor(MemoryExtractor::new(model.clone(), store.clone()));
    let agent = agent_with(hook);
    let mut thread = Thread::new();
    agent.run(&mut thread, "hello").await.unwrap();
    let err = agent.end_session(&mut thread).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Hook {
                point: "session_end",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("model overloaded"), "{err}");
}

#[tokio::test]
async fn background_extraction_hands_back_its_outcome() {
    let (_dir, store) = store();
    let model = Arc::new(ScriptedModel::new([Message::assistant(
        r#"[{"category": "fact", "content": "The service listens on port 8080", "importance": 0.5}]"#,
    )]));
    model.push_error("second call fails");
    let hook = Arc::new(
        MemoryHook::new(store.clone())
            .with_extractor(MemoryExtractor::new(model.clone(), store.clone()))
            .in_background(),
    );
    let agent = Agent::builder()
        .project(P)
        .model(Arc::new(ScriptedModel::new([
            Message::assistant("ok"),
            Message::assistant("ok"),
        ])))
        .hook(SharedHook(hook.clone()))
        .build()
        .unwrap();
    let mut a = Thread::new();
    agent.run(&mut a, "what port?").await.unwrap();
    agent.end_session(&mut a).await.unwrap();
    let first = hook.finish().await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].as_ref().unwrap().inserted.len(), 1);
    let mut b = Thread::new();
    agent.run(&mut b, "again").await.unwrap();
    // A background failure does not fail the session end; it comes back from `finish`.
    agent.end_session(&mut b).await.unwrap();
    let second = hook.finish().await;
    assert_eq!(second.len(), 1);
    assert!(second[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("second call fails"));
    assert!(hook.finish().await.is_empty());
    assert_eq!(store.count(P).await.unwrap(), 1);
}

/// Lets the test keep a handle on the hook the agent owns.
struct SharedHook(Arc<MemoryHook>);

#[async_trait::async_trait]
impl ctxkit::Hook for SharedHook {
    fn name(&self) -> &str {
        self.0.name()
    }
    async fn session_start(&self, ctx: &mut ctxkit::HookContext<'_>) -> Result<(), ctxkit::BoxError> {
        self.0.session_start(ctx).await
    }
    async fn session_end(
        &self,
        ctx: &mut ctxkit::HookContext<'_>,
        summary: &ctxkit::SessionSummary,
    ) -> Result<(), ctxkit::BoxError> {
        self.0.session_end(ctx, summary).await
    }
}
