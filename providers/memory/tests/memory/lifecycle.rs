//! Memory that behaves like a colleague's notebook: superseded facts and their undo, episodes
//! used for similar tasks, maintenance at session end, minimal imports, redaction on recall,
//! and an in-memory index that stays equal to a full rebuild while it is updated in place.

use std::sync::Arc;

use ctxkit::{Agent, ContextProvider, Message, RunInfo, ScriptedModel, SectionKind, Thread};
use ctxkit_memory::records::{ExportRecord, HistoryAction, NewEpisodicRecord, RecordType};
use ctxkit_memory::{
    ListOptions, ManualClock, MemoryCategory, MemoryContextProvider, MemoryHook, MemorySearchRequest,
    MemoryStore, MemoryUpdate, NewMemoryEntry, OpenOptions, RunStore, SearchIndex, SqliteMemoryStore,
};
use proptest::prelude::*;

const P: &str = "/repo";
const START: i64 = 1_700_000_000_000;

fn open(path: &std::path::Path, clock: &ManualClock, mode: SearchIndex) -> SqliteMemoryStore {
    SqliteMemoryStore::open_with(
        path,
        OpenOptions::default().clock(clock.clone()).search_index(mode),
    )
    .unwrap()
}

fn pref(content: &str) -> NewMemoryEntry {
    NewMemoryEntry::new(P, MemoryCategory::Preference, content).importance(0.95)
}

#[tokio::test]
async fn a_contradicting_preference_supersedes_the_old_one_and_undo_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        &dir.path().join("m.db"),
        &ManualClock::new(START),
        SearchIndex::Off,
    );
    let pnpm = store.add(pref("Always use pnpm, not npm")).await.unwrap();
    let other = store
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Convention,
            "pnpm workspaces live in packages/",
        ))
        .await
        .unwrap();
    let bun = store.add(pref("Use bun instead of pnpm")).await.unwrap();

    let old = store.get(&pnpm.id).await.unwrap().unwrap();
    assert_eq!(old.superseded_by.as_deref(), Some(bun.id.as_str()));
    assert!(
        store
            .get(&other.id)
            .await
            .unwrap()
            .unwrap()
            .superseded_by
            .is_none(),
        "another category stays"
    );
    // Never found or listed again, except when asked for everything.
    let hits = store
        .search(MemorySearchRequest::new(P, "which package manager, pnpm?").without_touch())
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.entry.id != pnpm.id));
    let current = store.list(P, ListOptions::default()).await.unwrap();
    assert!(current.iter().all(|e| e.id != pnpm.id));
    let all = ListOptions {
        include_superseded: true,
        ..ListOptions::default()
    };
    assert!(store.list(P, all).await.unwrap().iter().any(|e| e.id == pnpm.id));

    // The history says so, and undo of that entry restores it.
    let history = store.history(P, &pnpm.id).await.unwrap();
    let entry = history.last().unwrap();
    assert_eq!(entry.action, HistoryAction::Supersede);
    assert_eq!(entry.related_id.as_deref(), Some(bun.id.as_str()));
    store.undo(P, entry.id).await.unwrap();
    assert!(store
        .get(&pnpm.id)
        .await
        .unwrap()
        .unwrap()
        .superseded_by
        .is_none());

    // Removing the successor makes the older memory current again, too.
    let yarn = store.add(pref("No longer use pnpm, use yarn")).await.unwrap();
    assert!(store
        .get(&pnpm.id)
        .await
        .unwrap()
        .unwrap()
        .superseded_by
        .is_some());
    store.delete(&yarn.id).await.unwrap();
    assert!(store
        .get(&pnpm.id)
        .await
        .unwrap()
        .unwrap()
        .superseded_by
        .is_none());
}

#[tokio::test]
async fn a_similar_convention_with_another_claim_supersedes_and_facts_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        &dir.path().join("m.db"),
        &ManualClock::new(START),
        SearchIndex::Eager,
    );
    let conv = |c: &str| NewMemoryEntry::new(P, MemoryCategory::Convention, c);
    let monday = store
        .add(conv("Production deploys run every Monday morning"))
        .await
        .unwrap();
    let friday = store
        .add(conv("Production deploys run every Friday morning"))
        .await
        .unwrap();
    assert_eq!(
        store
            .get(&monday.id)
            .await
            .unwrap()
            .unwrap()
            .superseded_by
            .as_deref(),
        Some(friday.id.as_str())
    );
    let fact = |c: &str| NewMemoryEntry::new(P, MemoryCategory::Fact, c);
    let a = store
        .add(fact("Service alpha listens on port 8080"))
        .await
        .unwrap();
    store
        .add(fact("Service alpha listens on port 9090"))
        .await
        .unwrap();
    assert!(store.get(&a.id).await.unwrap().unwrap().superseded_by.is_none());
}

/// "No longer X" names what it replaces, but an older memory of the same category holding the
/// words of X is replaced only if it is also about the same thing: here both mention writing by
/// hand, and only the one about release notes is replaced.
#[tokio::test]
async fn an_explicit_replacement_passes_over_an_unrelated_memory_holding_its_words() {
    for mode in [SearchIndex::Off, SearchIndex::Eager] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("m.db"), &ManualClock::new(START), mode);
        let conv = |c: &str| NewMemoryEntry::new(P, MemoryCategory::Convention, c);
        let di = store
            .add(conv(
                "Dependency injection is Hilt on Android and a hand-written container on iOS, with no third-party DI framework.",
            ))
            .await
            .unwrap();
        let by_hand = store
            .add(conv("Release notes are written by hand in the Play Console."))
            .await
            .unwrap();
        let fastlane = store
            .add(conv(
                "Release notes are no longer written by hand; fastlane supply uploads them from metadata/ in the repository.",
            ))
            .await
            .unwrap();
        let superseded_by = |id: String| {
            let store = &store;
            async move { store.get(&id).await.unwrap().unwrap().superseded_by }
        };
        assert_eq!(superseded_by(di.id).await, None, "{mode:?}");
        assert_eq!(superseded_by(by_hand.id).await, Some(fastlane.id), "{mode:?}");
    }
}

#[tokio::test]
async fn the_extractions_supersedes_names_the_replaced_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        &dir.path().join("m.db"),
        &ManualClock::new(START),
        SearchIndex::Off,
    );
    let old = store
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Fact,
            "The API is served by Express",
        ))
        .await
        .unwrap();
    let new = store
        .upsert(
            NewMemoryEntry::new(P, MemoryCategory::Fact, "The API runs on Fastify")
                .supersedes([old.id.clone()]),
        )
        .await
        .unwrap();
    let old = store.get(&old.id).await.unwrap().unwrap();
    assert_eq!(old.superseded_by.as_deref(), new.id());
}

#[tokio::test]
async fn a_failed_episode_is_injected_for_a_similar_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(
        &dir.path().join("m.db"),
        &ManualClock::new(START),
        SearchIndex::Off,
    ));
    let episode = |kind, task: &str, outcome: &str, tools: Vec<String>| NewEpisodicRecord {
        project_path: P.into(),
        session_id: "s1".into(),
        record_type: kind,
        task_summary: task.into(),
        approach_summary: "used tools: run".into(),
        outcome_summary: outcome.into(),
        tools_used: tools,
        keywords: Vec::new(),
    };
    store
        .add_episode(episode(
            RecordType::Failure,
            "Run the database migrations on staging",
            "the run failed: psql is not installed",
            vec![],
        ))
        .await
        .unwrap();
    store
        .add_episode(episode(
            RecordType::Success,
            "Write a haiku about autumn",
            "a haiku",
            vec![],
        ))
        .await
        .unwrap();
    let provider = MemoryContextProvider::new(store.clone());
    let run = RunInfo {
        project: Some(P.into()),
        ..RunInfo::default()
    };
    let ctx = provider
        .invoking(
            &[Message::user("please run the migrations on staging again")],
            &run,
        )
        .await
        .unwrap();
    let section = ctx
        .sections
        .iter()
        .find(|s| s.kind == SectionKind::EPISODES)
        .expect("an episode");
    assert!(
        section.text.contains(
            "[AVOID] Run the database migrations on staging — failed: the run failed: psql is not installed"
        ),
        "{}",
        section.text
    );
    assert!(!section.text.contains("haiku"));
    let ctx = provider
        .invoking(&[Message::user("what is the capital of France?")], &run)
        .await
        .unwrap();
    assert!(ctx.sections.iter().all(|s| s.kind != SectionKind::EPISODES));
}

#[tokio::test]
async fn maintenance_decays_and_prunes_at_session_end() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    let store = Arc::new(open(&dir.path().join("m.db"), &clock, SearchIndex::Off));
    let faded = store
        .add(NewMemoryEntry::new(P, MemoryCategory::Fact, "The old build used Grunt").importance(0.2))
        .await
        .unwrap();
    let kept = store
        .add(NewMemoryEntry::new(P, MemoryCategory::Fact, "The build uses Vite").importance(0.9))
        .await
        .unwrap();
    clock.advance_days(365.0);
    let agent = Agent::builder()
        .project(P)
        .model(Arc::new(ScriptedModel::new(vec![Message::assistant("ok")])))
        .hook(MemoryHook::new(store.clone()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "hello").await.unwrap();
    agent.end_session(&mut thread).await.unwrap();
    assert!(
        store.get(&faded.id).await.unwrap().is_none(),
        "0.2 × 0.95^52 is below 0.05"
    );
    let kept = store.get(&kept.id).await.unwrap().unwrap();
    assert!(
        kept.importance < 0.9 && kept.importance > 0.05,
        "{}",
        kept.importance
    );

    // Off: nothing changes.
    let quiet = store
        .add(NewMemoryEntry::new(P, MemoryCategory::Fact, "Docs are in docs/").importance(0.2))
        .await
        .unwrap();
    clock.advance_days(365.0);
    let agent = Agent::builder()
        .project(P)
        .model(Arc::new(ScriptedModel::new(vec![Message::assistant("ok")])))
        .hook(MemoryHook::new(store.clone()).without_maintenance())
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "hello").await.unwrap();
    agent.end_session(&mut thread).await.unwrap();
    assert_eq!(store.get(&quiet.id).await.unwrap().unwrap().importance, 0.2);
}

#[tokio::test]
async fn minimal_records_import_once_and_bad_ones_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        &dir.path().join("m.db"),
        &ManualClock::new(START),
        SearchIndex::Off,
    );
    let file = "{\"content\": \"Use pnpm\"}\n\n{\"content\": \"Tests live in tests/\", \"category\": \"convention\", \"importance\": 0.7, \"keywords\": [\"tests\"], \"created_at\": 1600000000000}\n";
    for round in 0..2 {
        let records = ExportRecord::read_jsonl(file.as_bytes()).unwrap();
        let report = store.import(records, Some(P)).await.unwrap();
        assert_eq!(report.memories_added, if round == 0 { 2 } else { 0 });
        assert_eq!(report.memories_renamed, 0);
    }
    let all = store.list(P, ListOptions::default()).await.unwrap();
    let tests = all.iter().find(|e| e.content == "Tests live in tests/").unwrap();
    assert_eq!(
        (tests.category, tests.importance, tests.created_at),
        (MemoryCategory::Convention, 0.7, 1_600_000_000_000)
    );
    let pnpm = all.iter().find(|e| e.content == "Use pnpm").unwrap();
    assert_eq!(
        (pnpm.category, pnpm.importance, pnpm.created_at),
        (MemoryCategory::Fact, 0.5, START)
    );

    for (line, why) in [
        ("{\"contnet\": \"x\"}", "unknown field `contnet`"),
        ("{\"content\": \"x\", \"category\": \"opinion\"}", "opinion"),
        ("{\"content\": \"x\", \"importance\": 7}", "outside 0.0-1.0"),
        ("{\"content\": \"x\", \"created_at\": -1}", "created_at"),
    ] {
        let err = ExportRecord::read_jsonl(format!("\n{line}\n").as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains(why), "{err}");
    }
    // A token where a category belongs: serde's "unknown variant" would quote it.
    let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
    for line in [
        format!("{{\"content\": \"x\", \"category\": \"{token}\"}}"),
        format!("{{\"kind\": \"memory\", \"category\": \"{token}\"}}"),
        format!("{{\"{token}\": 1}}"),
    ] {
        let err = ExportRecord::read_jsonl(line.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 1") && !err.contains(token), "{err}");
    }
    let no_project = ExportRecord::read_jsonl("{\"content\": \"x\"}".as_bytes()).unwrap();
    let err = store.import(no_project, None).await.unwrap_err().to_string();
    assert!(err.contains("needs a `project`"), "{err}");
}

#[tokio::test]
async fn a_secret_stored_before_its_rule_is_redacted_on_recall() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let store = Arc::new(open(&path, &ManualClock::new(START), SearchIndex::Off));
    let e = store
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Fact,
            "The staging deploy token is kept in the vault",
        ))
        .await
        .unwrap();
    // Written by an older version, before a rule caught it.
    let token = format!("ghp_{}", "Zx9Yw8Vu7T".repeat(4));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE project_memories SET content = ?1 WHERE id = ?2",
        rusqlite::params![format!("The staging deploy token is {token}"), e.id],
    )
    .unwrap();
    let hits = store
        .search(MemorySearchRequest::new(P, "staging deploy token").without_touch())
        .await
        .unwrap();
    assert!(hits[0].entry.content.contains("[REDACTED:") && !hits[0].entry.content.contains(&token));
    let exported = store.export(Some(P)).await.unwrap();
    assert!(!format!("{exported:?}").contains(&token));
    let provider = MemoryContextProvider::new(store.clone());
    let run = RunInfo {
        project: Some(P.into()),
        ..RunInfo::default()
    };
    let ctx = provider
        .invoking(&[Message::user("where is the staging deploy token?")], &run)
        .await
        .unwrap();
    let text = ctx.instructions().unwrap();
    assert!(text.contains("[REDACTED:") && !text.contains(&token), "{text}");
}

/// An old secret never comes back through history, an update's answer, a deletion's answer
/// or an undo: history and answers are redacted, and an undo that would write the secret
/// back is refused.
#[tokio::test]
async fn a_secret_stored_before_its_rule_does_not_resurface_through_history_or_undo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let store = open(&path, &ManualClock::new(START), SearchIndex::Off);
    let first = store
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Fact,
            "The staging deploy token is kept in the vault",
        ))
        .await
        .unwrap();
    let second = store
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Fact,
            "The billing service key is kept in the vault",
        ))
        .await
        .unwrap();
    // Written by an older version, before a rule caught them.
    let token = format!("ghp_{}", "Zx9Yw8Vu7T".repeat(4));
    let conn = rusqlite::Connection::open(&path).unwrap();
    for e in [&first, &second] {
        conn.execute(
            "UPDATE project_memories SET content = ?1 WHERE id = ?2",
            rusqlite::params![format!("{} {token}", e.content), e.id],
        )
        .unwrap();
    }
    let replaced = store
        .update(
            &first.id,
            MemoryUpdate {
                content: Some("The staging deploy token was rotated".into()),
                ..MemoryUpdate::default()
            },
        )
        .await
        .unwrap();
    let retagged = store
        .update(
            &second.id,
            MemoryUpdate {
                keywords: Some(vec!["billing".into()]),
                ..MemoryUpdate::default()
            },
        )
        .await
        .unwrap();
    assert!(!retagged.content.contains(&token) && retagged.content.contains("[REDACTED:"));
    let history = store.history(P, &first.id).await.unwrap();
    let latest = store.project_history(P, 10).await.unwrap();
    let entry = store.history_entry(P, history[1].id).await.unwrap();
    for shown in [
        format!("{history:?}"),
        format!("{latest:?}"),
        format!("{entry:?}"),
    ] {
        assert!(!shown.contains(&token), "{shown}");
    }
    // Undoing the update would put the secret back: refused, and nothing changes.
    let err = store.undo(P, history[1].id).await.unwrap_err();
    assert!(matches!(err, ctxkit_memory::MemoryError::Secret { .. }), "{err}");
    assert!(!err.to_string().contains(&token));
    assert_eq!(
        store.get(&first.id).await.unwrap().unwrap().content,
        replaced.content
    );
    let deleted = store.delete(&second.id).await.unwrap();
    assert!(!deleted.content.contains(&token));
}

#[derive(Clone, Debug)]
enum Op {
    Add(usize, usize, usize),
    Delete(usize),
    Update(usize, usize, usize),
    Recategorize(usize, usize),
}

const WORDS: [&str; 12] = [
    "deploy", "staging", "webhooks", "stripe", "cents", "price", "tests", "docker", "pnpm", "routes",
    "cache", "queue",
];

fn text(a: usize, b: usize, c: usize) -> String {
    format!("{} {} {} note", WORDS[a % 12], WORDS[b % 12], WORDS[c % 12])
}

/// A write the random operations may make: it succeeds, or it would store a content the
/// project already holds (an update onto another memory's content); anything else fails.
fn written<T>(result: Result<T, ctxkit_memory::MemoryError>) {
    match result {
        Ok(_) | Err(ctxkit_memory::MemoryError::Duplicate { .. }) => {}
        Err(e) => panic!("a write failed: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Writes update the in-memory index in place; searches through it answer exactly what an
    /// index built from scratch answers.
    #[test]
    fn the_incremental_index_equals_a_full_rebuild(ops in proptest::collection::vec(
        prop_oneof![
            (0..12usize, 0..12usize, 0..12usize).prop_map(|(a, b, c)| Op::Add(a, b, c)),
            (0..64usize).prop_map(Op::Delete),
            (0..64usize, 0..12usize, 0..12usize).prop_map(|(k, a, b)| Op::Update(k, a, b)),
            (0..64usize, 0..5usize).prop_map(|(k, c)| Op::Recategorize(k, c)),
        ],
        1..40,
    )) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.db");
            let clock = ManualClock::new(START);
            let live = open(&path, &clock, SearchIndex::Eager);
            live.add(NewMemoryEntry::new(P, MemoryCategory::Fact, "seed note")).await.unwrap();
            live.warm_up(P).await.unwrap();
            let query = |q: &str| MemorySearchRequest::new(P, q).top_k(20).min_importance(0.0).without_touch();
            for op in ops {
                let ids: Vec<String> = live.list(P, ListOptions::default()).await.unwrap().into_iter().map(|e| e.id).collect();
                match op {
                    Op::Add(a, b, c) => {
                        // Of every category: preferences and conventions supersede through the index.
                        let category = MemoryCategory::ALL[(a + b + c) % 5];
                        written(live.add(NewMemoryEntry::new(P, category, text(a, b, c))).await);
                    }
                    Op::Delete(k) if !ids.is_empty() => { live.delete(&ids[k % ids.len()]).await.unwrap(); }
                    Op::Update(k, a, b) if !ids.is_empty() => {
                        let update = ctxkit_memory::MemoryUpdate { content: Some(text(a, b, k)), ..Default::default() };
                        written(live.update(&ids[k % ids.len()], update).await);
                    }
                    Op::Recategorize(k, c) if !ids.is_empty() => {
                        let update = ctxkit_memory::MemoryUpdate { category: Some(MemoryCategory::ALL[c]), ..Default::default() };
                        live.update(&ids[k % ids.len()], update).await.unwrap();
                    }
                    _ => {}
                }
                // Every search catches the live index up.
                live.search(query("deploy")).await.unwrap();
            }
            // Something to find, whatever the operations left.
            live.add(NewMemoryEntry::new(P, MemoryCategory::Preference, "deploy staging with pnpm")).await.unwrap();
            let rebuilt = open(&path, &clock, SearchIndex::Eager);
            let key = |r: &Vec<ctxkit_memory::MemorySearchResult>| {
                r.iter().map(|h| (h.entry.id.clone(), (h.relevance_score * 1e5).round() as i64)).collect::<Vec<_>>()
            };
            let preferences = [MemoryCategory::Preference, MemoryCategory::Convention];
            for q in ["deploy staging", "stripe webhook price", "docker tests note", "queue cache routes pnpm"] {
                let a = live.search(query(q)).await.unwrap();
                let b = rebuilt.search(query(q)).await.unwrap();
                assert_eq!(key(&a), key(&b), "query {q:?}");
                if q == "deploy staging" {
                    assert!(!a.is_empty(), "the last memory is found");
                }
                let a = live.search(query(q).categories(preferences)).await.unwrap();
                let b = rebuilt.search(query(q).categories(preferences)).await.unwrap();
                assert_eq!(key(&a), key(&b), "query {q:?} in preferences and conventions");
            }
        });
    }
}
