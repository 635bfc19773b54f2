//! The context provider: injection, budgets, explicit commands, episodes, `project:` state,
//! and the whole loop through an agent.

use std::sync::Arc;

use ctxkit::{
    Agent, ApproxCounter, Context, ContextProvider, Error, Message, Role, RunInfo, RunOutcome, ScriptedModel,
    SectionKind, State, Thread, TokenCounter, ToolCall,
};
use ctxkit_memory::records::RecordType;
use ctxkit_memory::*;

const P: &str = "/work/alpha";
/// The provider's default budget for the injected section, in characters.
const DEFAULT_MAX_CHARS: usize = 2000;
/// The importance of a memory the user asked for in so many words.
const EXPLICIT_IMPORTANCE: f32 = 0.95;

async fn store() -> (tempfile::TempDir, Arc<SqliteMemoryStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    (dir, store)
}

fn run(project: Option<&str>) -> RunInfo {
    RunInfo {
        thread_id: "thread-1".into(),
        project: project.map(str::to_string),
        ..RunInfo::default()
    }
}

async fn add(
    store: &SqliteMemoryStore,
    category: MemoryCategory,
    content: &str,
    importance: f32,
) -> MemoryEntry {
    store
        .add(NewMemoryEntry::new(P, category, content).importance(importance))
        .await
        .unwrap()
}

/// End a run whose user message is the last of `messages`, as the agent does once per run.
async fn finish(
    provider: &MemoryContextProvider,
    messages: &[Message],
    result: Result<&Message, &Error>,
    context: &Context,
    run: &RunInfo,
) {
    let input = messages.iter().rev().find(|m| m.role == Role::User).unwrap();
    let outcome = RunOutcome {
        messages,
        input,
        result,
        context,
        state: &run.state,
    };
    provider.run_finished(run, &outcome).await.unwrap();
}

/// The text of the context's per-message memory section.
fn per_message(ctx: &ctxkit::Context) -> String {
    ctx.sections
        .iter()
        .filter(|s| s.kind == SectionKind::MEMORIES)
        .map(|s| s.text.clone())
        .collect()
}

fn github_token() -> String {
    format!("ghp_{}", "Zx9Yw8Vu7T".repeat(4))
}

#[tokio::test]
async fn injects_project_memory_with_badges_ranked_by_relevance() {
    let (_dir, store) = store().await;
    let pref = add(
        &store,
        MemoryCategory::Preference,
        "Always use pnpm, not npm",
        0.9,
    )
    .await;
    let warn = add(
        &store,
        MemoryCategory::Correction,
        "Never run npm install in the workspace root",
        0.6,
    )
    .await;
    add(&store, MemoryCategory::Fact, "Deploys happen on Fridays", 1.0).await;
    // Per-message ranking alone: no essentials in the stable prefix.
    let provider = MemoryContextProvider::new(store.clone()).with_essential_chars(0);
    let request = [Message::user("Should I install lodash with npm?")];
    let ctx = provider.invoking(&request, &run(Some(P))).await.unwrap();
    assert_eq!(ctx.sections.len(), 1);
    let section = &ctx.sections[0];
    assert_eq!(section.kind, SectionKind::MEMORIES);
    assert_eq!(section.placement, ctxkit::Placement::PerMessage);
    let lines: Vec<&str> = section.text.lines().collect();
    assert_eq!(lines[0], "## Project Memory");
    assert_eq!(
        lines[1],
        "The following facts were learned from previous sessions:"
    );
    assert_eq!(lines[2], "");
    let rest: Vec<&str> = lines[3..].to_vec();
    assert_eq!(rest.len(), 2, "the unrelated memory stays out: {rest:?}");
    assert!(rest.contains(&"- [PREF] Always use pnpm, not npm"));
    assert!(rest.contains(&"- [WARN] Never run npm install in the workspace root"));
    let mut items = section.items.clone();
    items.sort();
    let mut want = vec![pref.id.clone(), warn.id.clone()];
    want.sort();
    assert_eq!(items, want);
    // Choosing is read-only; the end of the run counts the access.
    assert_eq!(store.get(&pref.id).await.unwrap().unwrap().access_count, 0);
    finish(
        &provider,
        &request,
        Ok(&Message::assistant("Use pnpm.")),
        &ctx,
        &run(Some(P)),
    )
    .await;
    assert_eq!(store.get(&pref.id).await.unwrap().unwrap().access_count, 1);
}

#[tokio::test]
async fn the_character_and_token_budgets_hold() {
    let (_dir, store) = store().await;
    for i in 0..30 {
        let content = format!(
            "Rule {i}: the build {} must pass before merging",
            "really ".repeat(20)
        );
        add(&store, MemoryCategory::Convention, &content, 0.5).await;
    }
    let provider = MemoryContextProvider::new(store.clone()).with_max_memories(30);
    let msg = [Message::user("does the build need to pass before merging?")];
    let ctx = provider.invoking(&msg, &run(Some(P))).await.unwrap();
    let text = &ctx.sections[0].text;
    assert!(
        text.chars().count() <= DEFAULT_MAX_CHARS,
        "{}",
        text.chars().count()
    );
    assert!(ctx.sections[0].items.len() >= 5 && ctx.sections[0].items.len() < 30);

    let counter = Arc::new(ApproxCounter);
    let small = MemoryContextProvider::new(store.clone())
        .with_max_memories(30)
        .with_token_counter(counter.clone());
    let budgeted = RunInfo {
        token_budget: Some(120),
        ..run(Some(P))
    };
    let ctx = small.invoking(&msg, &budgeted).await.unwrap();
    assert!(counter.count(&ctx.sections[0].text) <= 120);
    assert!(!ctx.sections[0].items.is_empty());
    let none = RunInfo {
        token_budget: Some(5),
        ..run(Some(P))
    };
    assert!(
        small.invoking(&msg, &none).await.unwrap().is_empty(),
        "nothing fits in 5 tokens"
    );

    let tiny = MemoryContextProvider::new(store).with_max_chars(100);
    assert!(tiny.invoking(&msg, &run(Some(P))).await.unwrap().is_empty());
}

/// The essentials are the project's most important preferences and corrections, however
/// many more important memories of other kinds it holds.
#[tokio::test]
async fn essentials_are_not_crowded_out_by_other_memories() {
    let (_dir, store) = store().await;
    let facts: Vec<NewMemoryEntry> = (0..80)
        .map(|i| {
            NewMemoryEntry::new(
                P,
                MemoryCategory::Fact,
                format!("service s{i} listens on port {}", 8000 + i),
            )
            .importance(0.99)
        })
        .collect();
    store.add_many(facts).await.unwrap();
    add(
        &store,
        MemoryCategory::Correction,
        "Never force-push to main",
        0.85,
    )
    .await;
    add(
        &store,
        MemoryCategory::Preference,
        "Always use pnpm for packages",
        0.9,
    )
    .await;
    add(
        &store,
        MemoryCategory::Preference,
        "Tabs are fine in Makefiles",
        0.5,
    )
    .await;
    let provider = MemoryContextProvider::new(store.clone());
    let ctx = provider
        .invoking(&[Message::user("hello there")], &run(Some(P)))
        .await
        .unwrap();
    let text = ctx.instructions().unwrap();
    let essentials = text.split("## Project Memory").next().unwrap();
    let pnpm = essentials.find("- [PREF] Always use pnpm for packages");
    let force = essentials.find("- [WARN] Never force-push to main");
    assert!(pnpm.is_some() && force.is_some() && pnpm < force, "{text}");
    assert!(
        !essentials.contains("Makefiles") && !essentials.contains("[FACT]"),
        "{text}"
    );
}

/// The essentials come most important first across both categories, within their own
/// character budget (whole lines), and the per-message retrieval never repeats one of them —
/// unless the budget left it out.
#[tokio::test]
async fn essentials_keep_their_order_and_budget_and_are_not_repeated_per_message() {
    use MemoryCategory::{Correction, Fact, Preference};
    let (_dir, store) = store().await;
    add(&store, Correction, "Never edit the files in dist by hand", 0.95).await;
    add(&store, Preference, "Use pnpm for packages", 0.9).await;
    add(&store, Correction, "Do not commit the local env file", 0.85).await;
    add(&store, Preference, "Prefer small pull requests", 0.8).await;
    add(&store, Fact, "The pnpm store lives in the home folder", 0.5).await;
    let message = &[Message::user("which pnpm store do the packages use?")];
    let with_budget = |chars: usize| {
        let provider = MemoryContextProvider::new(store.clone()).with_essential_chars(chars);
        async move { provider.invoking(message, &run(Some(P))).await.unwrap() }
    };
    let essentials_of = |ctx: &Context| -> String {
        ctx.sections
            .iter()
            .filter(|s| s.kind == SectionKind::ESSENTIALS)
            .map(|s| s.text.clone())
            .collect()
    };

    let all = with_budget(1000).await;
    let full = essentials_of(&all);
    let lines: Vec<&str> = full.lines().skip(3).collect();
    assert_eq!(
        lines,
        [
            "- [WARN] Never edit the files in dist by hand",
            "- [PREF] Use pnpm for packages",
            "- [WARN] Do not commit the local env file",
            "- [PREF] Prefer small pull requests",
        ],
        "{full}"
    );
    let memories = per_message(&all);
    assert!(
        memories.contains("- [FACT] The pnpm store lives in the home folder")
            && !memories.contains("Use pnpm for packages"),
        "{memories}"
    );

    // A budget that ends before the third line keeps the first two, whole.
    let two = full.find("\n- [WARN] Do not commit").unwrap();
    let cut = with_budget(two).await;
    assert_eq!(essentials_of(&cut), full[..two]);
    assert!(!per_message(&cut).contains("Use pnpm for packages"));

    // One that ends before the pnpm preference leaves it to the per-message retrieval.
    let one = full.find("\n- [PREF] Use pnpm").unwrap();
    let cut = with_budget(one).await;
    assert_eq!(essentials_of(&cut), full[..one]);
    assert!(
        per_message(&cut).contains("- [PREF] Use pnpm for packages"),
        "{}",
        per_message(&cut)
    );
}

#[tokio::test]
async fn without_a_project_or_a_user_message_nothing_happens() {
    let (_dir, store) = store().await;
    add(&store, MemoryCategory::Fact, "The API lives in src/api", 0.9).await;
    let provider = MemoryContextProvider::new(store.clone());
    let msg = [Message::user("where is the API?")];
    assert!(provider.invoking(&msg, &run(None)).await.unwrap().is_empty());
    assert!(provider.invoking(&[], &run(Some(P))).await.unwrap().is_empty());
    let ok = Message::assistant("ok");
    let request = [Message::user("remember that the API moved")];
    finish(&provider, &request, Ok(&ok), &Context::new(), &run(None)).await;
    assert_eq!(store.count(P).await.unwrap(), 1);
    // The provider's own project applies when the run has none.
    let scoped = MemoryContextProvider::new(store).with_project(P);
    assert!(!scoped.invoking(&msg, &run(None)).await.unwrap().is_empty());
}

#[tokio::test]
async fn another_projects_memories_never_appear() {
    let (_dir, store) = store().await;
    add(&store, MemoryCategory::Fact, "The API lives in src/api", 0.9).await;
    let provider = MemoryContextProvider::new(store);
    let ctx = provider
        .invoking(
            &[Message::user("where does the API live?")],
            &run(Some("/work/beta")),
        )
        .await
        .unwrap();
    assert!(ctx.is_empty());
}

#[tokio::test]
async fn remember_forget_and_query_commands() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let r = run(Some(P));
    let reply = Message::assistant("Noted.");
    let none = Context::new();

    let request = [Message::user(
        "Remember that integration tests need Docker running",
    )];
    // Choosing context never carries out a command (previews call it too).
    provider.invoking(&request, &r).await.unwrap();
    assert_eq!(store.count(P).await.unwrap(), 0);
    finish(&provider, &request, Ok(&reply), &none, &r).await;
    let all = store.list(P, ListOptions::default()).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].content, "Integration tests need Docker running");
    assert_eq!(all[0].importance, EXPLICIT_IMPORTANCE);
    assert_eq!(all[0].source_session_id.as_deref(), Some("thread-1"));

    store.delete(&all[0].id).await.unwrap();

    let request = [Message::user("always use pnpm")];
    finish(&provider, &request, Ok(&reply), &none, &r).await;
    let pref = store.list(P, ListOptions::default()).await.unwrap();
    assert_eq!(pref[0].category, MemoryCategory::Preference);
    add(&store, MemoryCategory::Fact, "Staging runs on fly.io", 0.5).await;

    // Query: what matches the query, not the whole message.
    let ctx = provider
        .invoking(&[Message::user("What do you remember about staging?")], &r)
        .await
        .unwrap();
    // The per-message section answers the query; the essentials stay in the stable prefix.
    let text = per_message(&ctx);
    assert!(
        text.contains("- [FACT] Staging runs on fly.io") && !text.contains("pnpm"),
        "{text}"
    );
    assert!(ctx.instructions().unwrap().starts_with("## Project Essentials"));
    let ctx = provider
        .invoking(&[Message::user("what are my preferences?")], &r)
        .await
        .unwrap();
    let text = ctx.instructions().unwrap();
    assert!(
        text.contains("- [PREF] Always use pnpm") && !text.contains("Staging"),
        "{text}"
    );
    let ctx = provider
        .invoking(&[Message::user("what do you remember about kubernetes?")], &r)
        .await
        .unwrap();
    assert!(ctx
        .instructions()
        .unwrap()
        .contains("Nothing is remembered about \"kubernetes\""));

    // Forget.
    let request = [Message::user("Please forget about the staging server on fly.io")];
    finish(&provider, &request, Ok(&reply), &none, &r).await;
    let left: Vec<String> = store
        .list(P, ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(left, ["Always use pnpm"]);

    // Commands can be turned off.
    let quiet = MemoryContextProvider::new(store.clone()).without_commands();
    let request = [Message::user("remember that nothing is stored")];
    finish(&quiet, &request, Ok(&reply), &none, &r).await;
    assert_eq!(store.count(P).await.unwrap(), 1);
}

#[tokio::test]
async fn a_secret_in_a_remember_command_is_refused_and_explained() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let token = github_token();
    let msg = [Message::user(format!(
        "remember that the deploy token is {token}"
    ))];
    let ctx = provider.invoking(&msg, &run(Some(P))).await.unwrap();
    let text = ctx.instructions().unwrap();
    assert!(
        text.contains("github-token") && text.contains("never stored"),
        "{text}"
    );
    assert!(!text.contains(&token));
    let reply = Message::assistant("I won't store that.");
    finish(&provider, &msg, Ok(&reply), &ctx, &run(Some(P))).await;
    assert_eq!(store.count(P).await.unwrap(), 0);
    // The episode of the run is stored with the secret redacted.
    let episodes = store.episodes(P, 10).await.unwrap();
    assert_eq!(episodes.len(), 1);
    assert!(!episodes[0].task_summary.contains(&token));
    assert!(episodes[0].task_summary.contains("[REDACTED:github-token]"));
}

#[tokio::test]
async fn one_episode_per_run_with_the_tools_it_used() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let r = run(Some(P));
    let none = Context::new();
    let call = ToolCall::new("c1", "read_file", &serde_json::json!({"path": "src/main.rs"}));
    let reply = Message::assistant("Fixed the missing semicolon.");
    let thread = [
        Message::user("an earlier question"),
        Message::tool_calls(vec![ToolCall::new("c0", "earlier_tool", &serde_json::json!({}))]),
        Message::user("fix the failing build"),
        Message::tool_calls(vec![call]),
        Message::tool_result("c1", "fn main() {}"),
        reply.clone(),
    ];
    finish(&provider, &thread, Ok(&reply), &none, &r).await;
    let episodes = store.episodes(P, 10).await.unwrap();
    assert_eq!(episodes.len(), 1);
    let e = &episodes[0];
    assert_eq!(e.record_type, RecordType::Success);
    assert_eq!(e.task_summary, "fix the failing build");
    assert_eq!(e.tools_used, ["read_file"], "only this run's tools");
    assert_eq!(e.approach_summary, "used tools: read_file");
    assert_eq!(e.outcome_summary, "Fixed the missing semicolon.");
    assert_eq!(e.session_id, "thread-1");

    let failed = Error::Model {
        model: "m".into(),
        message: "rate limited".into(),
        retryable: true,
    };
    finish(&provider, &[Message::user("try again")], Err(&failed), &none, &r).await;
    let episodes = store.episodes(P, 10).await.unwrap();
    assert_eq!(episodes.len(), 2);
    assert!(episodes
        .iter()
        .any(|e| e.record_type == RecordType::Failure && e.outcome_summary.contains("rate limited")));

    let silent = MemoryContextProvider::new(store.clone()).without_episodes();
    finish(
        &silent,
        &[Message::user("again")],
        Ok(&Message::assistant("ok")),
        &none,
        &r,
    )
    .await;
    assert_eq!(store.episodes(P, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_run_with_tool_rounds_records_once_and_a_preview_records_nothing() {
    let (_dir, store) = store().await;
    let memory = add(&store, MemoryCategory::Fact, "The build uses cargo", 0.9).await;
    let call = ToolCall::new("c1", "clock", &serde_json::json!({}));
    let model = Arc::new(ScriptedModel::new([
        Message::tool_calls(vec![call.clone()]),
        Message::tool_calls(vec![call]),
        Message::assistant("The build is fixed."),
    ]));
    let agent = Agent::builder()
        .project(P)
        .model(model)
        .provider(MemoryContextProvider::new(store.clone()))
        .tool(Clock)
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent
        .preview(&thread, "remember that the build uses cargo nightly")
        .await
        .unwrap();
    agent.preview(&thread, "how does the build work?").await.unwrap();
    assert_eq!(
        store.count(P).await.unwrap(),
        1,
        "a preview carries out no command"
    );
    assert_eq!(store.get(&memory.id).await.unwrap().unwrap().access_count, 0);
    assert!(store.episodes(P, 10).await.unwrap().is_empty());

    agent.run(&mut thread, "fix the build with cargo").await.unwrap();
    assert_eq!(
        store.get(&memory.id).await.unwrap().unwrap().access_count,
        1,
        "once per run"
    );
    let episodes = store.episodes(P, 10).await.unwrap();
    assert_eq!(episodes.len(), 1, "three model calls, one run, one episode");
    assert_eq!(episodes[0].tools_used, ["clock"]);
}

/// A tool that answers with the time of day.
struct Clock;

#[async_trait::async_trait]
impl ctxkit::Tool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "The time of day."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _: serde_json::Value) -> ctxkit::Result<String> {
        Ok("noon".into())
    }
}

#[tokio::test]
async fn project_state_is_persisted_and_loaded() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let mut state = State::default();
    state.set("project:package_manager", serde_json::json!("pnpm"));
    state.set("session:goal", serde_json::json!("fix"));
    state.set(
        "project:api_key",
        serde_json::json!(format!("sk-proj-{}", "Ab1Cd2Ef3G".repeat(3))),
    );
    let r = RunInfo {
        state,
        ..run(Some(P))
    };
    let hello = Message::assistant("hello");
    finish(&provider, &[Message::user("hi")], Ok(&hello), &Context::new(), &r).await;
    assert_eq!(
        store.state_entries(P).await.unwrap(),
        [("package_manager".to_string(), serde_json::json!("pnpm"))],
        "session keys stay out and the secret is refused"
    );

    // A new thread starts with it, through the hook.
    let agent = Agent::builder()
        .project(P)
        .model(Arc::new(ScriptedModel::new([Message::assistant("ok")])))
        .hook(MemoryHook::new(store.clone()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "hello").await.unwrap();
    assert_eq!(
        thread.state().get("project:package_manager"),
        Some(&serde_json::json!("pnpm"))
    );
}

#[tokio::test]
async fn the_agent_loop_remembers_and_injects_across_threads() {
    let (_dir, store) = store().await;
    let model = Arc::new(ScriptedModel::new([
        Message::assistant("I'll remember that."),
        Message::assistant("Use pnpm add lodash."),
    ]));
    let agent = Agent::builder()
        .project(P)
        .model(model.clone())
        .provider(MemoryContextProvider::new(store.clone()))
        .build()
        .unwrap();
    let mut first = Thread::new();
    agent
        .run(&mut first, "Remember that we always use pnpm, not npm")
        .await
        .unwrap();
    let mut second = Thread::new();
    let out = agent
        .run(&mut second, "How do I add lodash with npm?")
        .await
        .unwrap();
    // An explicit preference is an essential: in the stable prefix, not repeated per message.
    let essentials = out
        .report
        .injected
        .get(&SectionKind::ESSENTIALS)
        .cloned()
        .unwrap_or_default();
    assert_eq!(essentials.len(), 1);
    assert!(!out.report.injected.contains_key(&SectionKind::MEMORIES));
    let requests = model.requests();
    let system = &requests[1].messages[0];
    assert_eq!(system.role, ctxkit::Role::System);
    assert!(
        system.content.contains("## Project Essentials"),
        "{}",
        system.content
    );
    assert!(
        system.content.contains("- [PREF] We always use pnpm, not npm"),
        "{}",
        system.content
    );
    assert_eq!(store.episodes(P, 10).await.unwrap().len(), 2);
}

/// "remember that ghp_…" used to be recased to "Ghp_…" by the command parser and stored: the
/// line as typed is what is checked.
#[tokio::test]
async fn a_remember_command_is_checked_as_typed_before_it_is_recased() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let token = github_token();
    for msg in [
        format!("remember that {token} is the deploy token"),
        format!("remember: {token}"),
    ] {
        let msg = [Message::user(msg)];
        let ctx = provider.invoking(&msg, &run(Some(P))).await.unwrap();
        if let Some(text) = ctx.instructions() {
            assert!(!text.contains(&token[4..]), "{text}");
        }
        provider
            .invoked(&msg, Ok(&[Message::assistant("ok")]), &run(Some(P)))
            .await
            .unwrap();
    }
    let all = format!("{:?}", store.export(Some(P)).await.unwrap());
    assert!(!all.contains(&token[4..]), "the token was stored: {all}");
    assert_eq!(store.count(P).await.unwrap(), 0);
}

#[tokio::test]
async fn a_secret_across_the_summary_cut_is_redacted_whole() {
    let (_dir, store) = store().await;
    let provider = MemoryContextProvider::new(store.clone());
    let token = github_token();
    let task = format!("{} then use {token}", "x".repeat(290));
    let reply = Message::assistant("done");
    finish(
        &provider,
        &[Message::user(task)],
        Ok(&reply),
        &Context::new(),
        &run(Some(P)),
    )
    .await;
    let episodes = store.episodes(P, 10).await.unwrap();
    assert!(
        !episodes[0].task_summary.contains("ghp_"),
        "{}",
        episodes[0].task_summary
    );
}

#[tokio::test]
async fn a_command_is_carried_out_under_lazy_assembly_too() {
    // Lazy assembly inserts its context message before the user's: the run's end must still
    // read the user's message.
    let (_dir, store) = store().await;
    let agent = Agent::builder()
        .project(P)
        .instructions("Be brief.")
        .assembly(ctxkit::Assembly::Lazy)
        .model(Arc::new(ScriptedModel::new([Message::assistant("Noted.")])))
        .provider(MemoryContextProvider::new(store.clone()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent
        .run(&mut thread, "remember that we deploy on Fridays")
        .await
        .unwrap();
    let all = store.list(P, ListOptions::default()).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].content, "We deploy on Fridays");
}
