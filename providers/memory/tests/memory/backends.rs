//! The store suite, run against every backend: SQLite, and PostgreSQL on a throwaway cluster
//! the suite starts itself (see `support/pg.rs`; skipped with one line when PostgreSQL is not
//! installed, a failure under `CTXKIT_EXTERNAL_SUITES=1`). Each case is one async function over
//! a [`Backend`]; the `suite!` macro instantiates every case for each backend, so both answer
//! to exactly the same assertions.

use crate::support;

use std::collections::BTreeSet;

use ctxkit_memory::records::{ExportRecord, HistoryAction, NewEpisodicRecord, RecordType};
use ctxkit_memory::{
    ListOptions, MemoryCategory, MemoryError, MemorySearchRequest, MemoryUpdate, NewMemoryEntry, UpsertResult,
};
use support::Backend;

const P: &str = "/work/alpha";
const Q: &str = "/work/beta";

fn fact(content: &str) -> NewMemoryEntry {
    NewMemoryEntry::new(P, MemoryCategory::Fact, content)
}

fn pref(content: &str) -> NewMemoryEntry {
    NewMemoryEntry::new(P, MemoryCategory::Preference, content).importance(0.95)
}

fn all() -> ListOptions {
    ListOptions {
        limit: usize::MAX,
        include_superseded: true,
        ..ListOptions::default()
    }
}

async fn writes_and_reads(b: Backend) {
    let s = &b.store;
    let a = s
        .add(fact("Deploys happen on Fridays").importance(0.7))
        .await
        .unwrap();
    assert_eq!(s.get(&a.id).await.unwrap(), Some(a.clone()));
    let many = s
        .add_many(vec![
            fact("The API lives in src/api"),
            fact("Tests live in tests/"),
        ])
        .await
        .unwrap();
    assert_eq!(many.len(), 2);
    assert_eq!(s.count(P).await.unwrap(), 3);
    assert_eq!(s.list(P, all()).await.unwrap().len(), 3);
    let dup = s.add(fact("Deploys happen on Fridays")).await.unwrap_err();
    assert!(
        matches!(dup, MemoryError::Duplicate { ref existing, .. } if *existing == a.id),
        "{dup:?}"
    );
    // All or nothing: a bad entry in a batch stores none of it.
    let bad = s
        .add_many(vec![fact("Queues run on Redis"), fact("  ")])
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("memory 2 of 2"), "{bad}");
    assert_eq!(s.count(P).await.unwrap(), 3);
    assert!(matches!(
        s.add(fact("x").importance(1.5)).await,
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        s.add(NewMemoryEntry::new(" ", MemoryCategory::Fact, "x")).await,
        Err(MemoryError::Invalid(_))
    ));
    let updated = s
        .update(
            &a.id,
            MemoryUpdate {
                content: Some("Deploys happen on Thursdays".into()),
                importance: Some(0.9),
                ..MemoryUpdate::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.content, "Deploys happen on Thursdays");
    assert_eq!(s.get(&a.id).await.unwrap().unwrap().importance, 0.9);
    let gone = s.delete(&many[0].id).await.unwrap();
    assert_eq!(gone.id, many[0].id);
    assert_eq!(s.get(&gone.id).await.unwrap(), None);
    assert!(matches!(s.delete(&gone.id).await, Err(MemoryError::NotFound(_))));
    assert!(matches!(
        s.update("nope", MemoryUpdate::default()).await,
        Err(MemoryError::NotFound(_))
    ));
}

async fn secrets_are_refused_on_every_write(b: Backend) {
    let s = &b.store;
    let key = "AKIAIOSFODNN7EXAMPLE";
    let secret = |r: ctxkit_memory::Result<_>| matches!(r, Err(MemoryError::Secret { .. }));
    assert!(secret(
        s.add(fact(&format!("deploy key {key}"))).await.map(|_| ())
    ));
    assert!(secret(
        s.upsert(fact(&format!("deploy key {key}"))).await.map(|_| ())
    ));
    assert!(secret(s.add(fact("plain").keywords([key])).await.map(|_| ())));
    let a = s.add(fact("Deploys happen on Fridays")).await.unwrap();
    let update = MemoryUpdate {
        content: Some(format!("use {key}")),
        ..MemoryUpdate::default()
    };
    assert!(secret(s.update(&a.id, update).await.map(|_| ())));
    assert!(secret(s.set_state(P, "aws", serde_json::json!(key)).await));
    let episode = NewEpisodicRecord {
        project_path: P.into(),
        session_id: "s".into(),
        record_type: RecordType::Success,
        task_summary: format!("rotated {key}"),
        approach_summary: "a".into(),
        outcome_summary: "b".into(),
        tools_used: vec![],
        keywords: vec![],
    };
    assert!(secret(s.add_episode(episode).await.map(|_| ())));
    let mut record = a.clone();
    record.content = format!("key {key}");
    let err = s
        .import(vec![ExportRecord::Memory(record)], Some(Q))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("line 1") && !err.to_string().contains(key),
        "{err}"
    );
    assert_eq!(s.count(P).await.unwrap(), 1);
    assert_eq!(s.count(Q).await.unwrap(), 0);
}

async fn search_ranks_and_counts_accesses(b: Backend) {
    let s = &b.store;
    s.add(pref("Always use pnpm, not npm").keywords(["pnpm"]))
        .await
        .unwrap();
    s.add(fact("The API lives in src/api")).await.unwrap();
    s.add(fact("Stripe webhooks arrive at /api/webhooks/stripe"))
        .await
        .unwrap();
    let hits = s
        .search(MemorySearchRequest::new(P, "how do I add a dependency with pnpm"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "only memories sharing a term: {hits:?}");
    assert!(hits[0].entry.content.contains("pnpm"));
    assert_eq!(hits[0].entry.access_count, 1);
    assert!(hits[0].keyword_overlap > 0.0 && hits[0].similarity > 0.0);
    let api = s
        .search(MemorySearchRequest::new(P, "api webhooks").without_touch())
        .await
        .unwrap();
    assert_eq!(api.len(), 2);
    assert!(api[0].relevance_score >= api[1].relevance_score);
    assert!(
        api.iter().all(|h| h.entry.access_count == 0),
        "without_touch counts nothing"
    );
    let none = s.search(MemorySearchRequest::new(Q, "pnpm")).await.unwrap();
    assert!(none.is_empty(), "another project sees nothing");
    let cats = MemorySearchRequest::new(P, "api webhooks pnpm").categories(vec![MemoryCategory::Preference]);
    let only = s.search(cats).await.unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].entry.category, MemoryCategory::Preference);
}

async fn upsert_merges_skips_and_inserts(b: Backend) {
    let s = &b.store;
    let first = match s
        .upsert(fact("Run the unit tests with cargo nextest run"))
        .await
        .unwrap()
    {
        UpsertResult::Inserted(e) => e,
        other => panic!("{other:?}"),
    };
    match s
        .upsert(fact("Run the unit tests with cargo nextest run"))
        .await
        .unwrap()
    {
        UpsertResult::Skipped { existing_id, .. } => assert_eq!(existing_id, Some(first.id.clone())),
        other => panic!("{other:?}"),
    }
    match s
        .upsert(fact("Run the unit tests with cargo nextest run --workspace").importance(0.8))
        .await
        .unwrap()
    {
        UpsertResult::Merged {
            original_id, merged, ..
        } => {
            assert_eq!(original_id, first.id);
            assert_eq!(merged.importance, 0.8);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.count(P).await.unwrap(), 1);
    let history = s.history(P, &first.id).await.unwrap();
    let actions: Vec<_> = history.iter().map(|h| h.action).collect();
    assert_eq!(actions, [HistoryAction::Insert, HistoryAction::Merge]);
}

async fn a_contradiction_supersedes_and_undo_restores(b: Backend) {
    let s = &b.store;
    let npm = s
        .add(pref("Always use npm for installing packages"))
        .await
        .unwrap();
    let pnpm = s
        .add(pref("Always use pnpm for installing packages"))
        .await
        .unwrap();
    let old = s.get(&npm.id).await.unwrap().unwrap();
    assert_eq!(old.superseded_by.as_deref(), Some(pnpm.id.as_str()), "{old:?}");
    assert_eq!(s.count(P).await.unwrap(), 1);
    let hits = s
        .search(MemorySearchRequest::new(P, "installing packages").without_touch())
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.entry.id.clone()).collect::<Vec<_>>(),
        std::slice::from_ref(&pnpm.id)
    );
    // Deleting the newer memory makes the older one current again.
    s.delete(&pnpm.id).await.unwrap();
    assert_eq!(s.get(&npm.id).await.unwrap().unwrap().superseded_by, None);
    let delete = s
        .project_history(P, 10)
        .await
        .unwrap()
        .into_iter()
        .find(|h| h.action == HistoryAction::Delete)
        .unwrap();
    let restored = s.undo(P, delete.id).await.unwrap().unwrap();
    assert_eq!(restored.id, pnpm.id);
    assert_eq!(s.get(&pnpm.id).await.unwrap().unwrap().content, pnpm.content);
}

async fn history_and_undo_stay_in_their_project(b: Backend) {
    let s = &b.store;
    let a = s.add(fact("The cache is Redis 7")).await.unwrap();
    s.update(
        &a.id,
        MemoryUpdate {
            content: Some("The cache is Valkey 8".into()),
            ..MemoryUpdate::default()
        },
    )
    .await
    .unwrap();
    let h = s.history(P, &a.id).await.unwrap();
    assert_eq!(h.len(), 2);
    assert!(
        s.history(Q, &a.id).await.unwrap().is_empty(),
        "another project sees no history"
    );
    assert!(matches!(
        s.undo(Q, h[1].id).await,
        Err(MemoryError::HistoryNotFound { .. })
    ));
    assert_eq!(s.history_entry(Q, h[1].id).await.unwrap(), None);
    assert_eq!(s.history_entry(P, h[1].id).await.unwrap(), Some(h[1].clone()));
    let back = s.undo(P, h[1].id).await.unwrap().unwrap();
    assert_eq!(back.content, "The cache is Redis 7");
    // Undoing the insert deletes it; undoing that insert again has nothing to delete.
    assert_eq!(s.undo(P, h[0].id).await.unwrap(), None);
    assert_eq!(s.get(&a.id).await.unwrap(), None);
    assert!(matches!(s.undo(P, h[0].id).await, Err(MemoryError::Invalid(_))));
    assert_eq!(s.project_history(P, 2).await.unwrap().len(), 2);
    assert_eq!(s.project_history(P, 100).await.unwrap().len(), 4);
}

async fn forget_removes_the_best_matches_only(b: Backend) {
    let s = &b.store;
    s.add(fact("Deploys happen on Fridays after the standup"))
        .await
        .unwrap();
    s.add(fact("The API lives in src/api")).await.unwrap();
    s.add(NewMemoryEntry::new(
        Q,
        MemoryCategory::Fact,
        "Deploys happen on Fridays after the standup",
    ))
    .await
    .unwrap();
    let gone = s.forget(P, "deploys fridays standup").await.unwrap();
    assert_eq!(gone.len(), 1);
    assert_eq!(s.count(P).await.unwrap(), 1);
    assert_eq!(s.count(Q).await.unwrap(), 1, "another project keeps its memory");
    let h = s.history(P, &gone[0].id).await.unwrap();
    assert!(h
        .last()
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .starts_with("forgotten on request"));
}

async fn episodes_and_state(b: Backend) {
    let s = &b.store;
    let e = s
        .add_episode(NewEpisodicRecord {
            project_path: P.into(),
            session_id: "s-1".into(),
            record_type: RecordType::Failure,
            task_summary: "migrate the schema".into(),
            approach_summary: "ALTER TABLE".into(),
            outcome_summary: "locked the table".into(),
            tools_used: vec!["psql".into()],
            keywords: vec!["Migration".into()],
        })
        .await
        .unwrap();
    assert_eq!(s.episodes(P, 5).await.unwrap(), vec![e.clone()]);
    assert!(s.episodes(Q, 5).await.unwrap().is_empty());
    s.set_state(P, "package_manager", serde_json::json!("pnpm"))
        .await
        .unwrap();
    s.set_state(P, "Flags", serde_json::json!({"strict": true}))
        .await
        .unwrap();
    s.set_state(P, "package_manager", serde_json::json!("yarn"))
        .await
        .unwrap();
    assert_eq!(
        s.state_entries(P).await.unwrap(),
        vec![
            ("Flags".to_string(), serde_json::json!({"strict": true})),
            ("package_manager".to_string(), serde_json::json!("yarn")),
        ]
    );
    assert!(s.state_entries(Q).await.unwrap().is_empty());
    assert!(s.remove_state(P, "Flags").await.unwrap());
    assert!(!s.remove_state(P, "Flags").await.unwrap());
}

async fn maintenance_decays_prunes_compacts_and_clears(b: Backend) {
    let s = &b.store;
    let a = s
        .add(fact("Deploys happen on Fridays").importance(0.8))
        .await
        .unwrap();
    s.add(fact("Logs go to Loki").importance(0.12)).await.unwrap();
    b.clock.advance_days(14.0);
    assert_eq!(b.decay(P).await.unwrap(), 2);
    let decayed = s.get(&a.id).await.unwrap().unwrap().importance;
    assert!((decayed - 0.8 * 0.9025).abs() < 1e-6, "{decayed}");
    assert_eq!(b.prune(P, 0.2).await.unwrap(), 1);
    assert!(matches!(b.prune(P, 2.0).await, Err(MemoryError::Invalid(_))));
    s.add(fact("The staging database is postgres on port 5433 in docker compose").importance(0.3))
        .await
        .unwrap();
    s.add_many(vec![fact(
        "The staging database is postgres on port 5433 in the docker compose",
    )
    .importance(0.6)])
        .await
        .unwrap();
    assert_eq!(b.compact(P).await.unwrap(), 1);
    let stats = b.stats(P).await.unwrap();
    assert_eq!(stats.total, 2);
    assert_eq!(stats.by_category["fact"], 2);
    assert!(stats.history_entries >= 7, "{stats:?}");
    assert_eq!(b.clear(P).await.unwrap(), 2);
    assert_eq!(s.count(P).await.unwrap(), 0);
    assert!(s
        .search(MemorySearchRequest::new(P, "staging"))
        .await
        .unwrap()
        .is_empty());
    let report = s.maintain(P, 0.1).await.unwrap();
    assert_eq!((report.decayed, report.pruned), (0, 0));
}

async fn export_import_round_trips_with_history(b: Backend, into: Backend) {
    let s = &b.store;
    let a = s
        .add(
            pref("Always use pnpm — «quoted» 日本語")
                .keywords(["pnpm"])
                .session("s-1")
                .context("said in chat"),
        )
        .await
        .unwrap();
    let t = s.add(fact("Tests live in tests/").importance(0.3)).await.unwrap();
    s.update(
        &t.id,
        MemoryUpdate {
            importance: Some(0.4),
            ..MemoryUpdate::default()
        },
    )
    .await
    .unwrap();
    let gone = s.add(fact("Temporary note about the release")).await.unwrap();
    s.delete(&gone.id).await.unwrap();
    s.add_episode(NewEpisodicRecord {
        project_path: P.into(),
        session_id: "s-1".into(),
        record_type: RecordType::Discovery,
        task_summary: "find the tests".into(),
        approach_summary: "grep".into(),
        outcome_summary: "found them".into(),
        tools_used: vec!["grep".into()],
        keywords: vec!["tests".into()],
    })
    .await
    .unwrap();
    s.add(NewMemoryEntry::new(Q, MemoryCategory::Fact, "not exported"))
        .await
        .unwrap();
    let records = s.export(Some(P)).await.unwrap();
    let history = s.project_history(P, usize::MAX).await.unwrap();
    assert_eq!(history.len(), 5);

    let report = into.store.import(records.clone(), None).await.unwrap();
    assert_eq!(
        (report.memories_added, report.episodes_added, report.history_added),
        (2, 1, 5)
    );
    assert_eq!(report.memories_renamed, 0);
    assert_eq!(
        into.store.export(Some(P)).await.unwrap(),
        records,
        "the same records, ids and all"
    );
    assert_eq!(into.store.project_history(P, usize::MAX).await.unwrap(), history);
    // The history works there: the update of `t` can be undone, and new entries follow on.
    let update = history
        .iter()
        .find(|h| h.action == HistoryAction::Update)
        .unwrap();
    let back = into.store.undo(P, update.id).await.unwrap().unwrap();
    assert_eq!(back.importance, 0.3);
    assert!(into.store.project_history(P, 1).await.unwrap()[0].id > history[0].id);
    let hits = into
        .store
        .search(MemorySearchRequest::new(P, "pnpm").without_touch())
        .await
        .unwrap();
    assert_eq!(hits[0].entry.id, a.id);
    // Importing again adds nothing.
    let again = into.store.import(records, None).await.unwrap();
    assert_eq!(
        (again.memories_added, again.history_added, again.episodes_added),
        (0, 0, 0)
    );
    // Moved into another project, ids another project's history names are re-minted.
    let moved = into
        .store
        .import(s.export(Some(P)).await.unwrap(), Some(Q))
        .await
        .unwrap();
    assert_eq!(moved.memories_added, 2);
    assert_eq!(moved.memories_renamed, 2);
    assert!(into.store.history(Q, &a.id).await.unwrap().is_empty());
}

async fn concurrent_upserts_lose_and_duplicate_nothing(b: Backend) {
    let contents: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "Service number {i} listens on port {} and logs to file{i}.log",
                8000 + i
            )
        })
        .collect();
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = b.reopen().await;
        let contents = contents.clone();
        tasks.push(tokio::spawn(async move {
            for (i, c) in contents.iter().enumerate() {
                store.upsert(fact(c)).await.unwrap();
                if i % 4 == w % 4 {
                    store
                        .add(fact(&format!("writer {w} note {i} about queue{w}x{i}")))
                        .await
                        .unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let list = b.store.list(P, all()).await.unwrap();
    let distinct: BTreeSet<&str> = list.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(distinct.len(), list.len(), "no duplicates");
    assert_eq!(list.len(), 12 + 8 * 3);
    let inserts = b
        .store
        .project_history(P, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .filter(|h| h.action == HistoryAction::Insert)
        .count();
    assert_eq!(inserts, list.len(), "one insert entry per memory");
}

async fn learned_skills_are_proposed_refined_reviewed_and_counted_without_losing_a_use(b: Backend) {
    use ctxkit_memory::{LearnedChange, LearnedOrigin, LearnedSkill, LearnedStatus};
    let s = &b.store;
    let proposal = |session: &str| {
        LearnedChange::Propose(Box::new(LearnedSkill::proposed(
            P,
            "ship-it",
            "Ship the service",
            vec!["ship".into()],
            "---\nname: ship-it\ndescription: Ship the service\ntriggers: [ship]\n---\nRun ./ship.sh\n",
            session,
        )))
    };
    assert!(s.learned_skills(P).await.unwrap().is_empty());
    let first = s
        .change_learned_skill(P, "ship-it", proposal("s1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status, LearnedStatus::Proposed);
    let again = s
        .change_learned_skill(P, "ship-it", proposal("s2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (again.origin, again.sessions.clone()),
        (LearnedOrigin::Refined, vec!["s1".to_string(), "s2".to_string()])
    );
    s.change_learned_skill(P, "ship-it", LearnedChange::Review(LearnedStatus::Accepted))
        .await
        .unwrap();
    assert!(
        s.learned_skills(Q).await.unwrap().is_empty(),
        "scoped to its project"
    );

    // A secret, a name that is a path: refused, nothing stored.
    let mut secret = LearnedSkill::proposed(
        P,
        "leaky",
        "d",
        vec![],
        "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
        "s",
    );
    secret.text.push('\n');
    let err = s
        .change_learned_skill(P, "leaky", LearnedChange::Propose(Box::new(secret)))
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Secret { .. }), "{err:?}");
    let climbing = LearnedSkill::proposed(P, "../x", "d", vec![], "body", "s");
    assert!(s
        .change_learned_skill(P, "../x", LearnedChange::Propose(Box::new(climbing)))
        .await
        .is_err());
    assert_eq!(s.learned_skills(P).await.unwrap().len(), 1);

    // Uses counted by 4 writers at once: none lost.
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = b.reopen().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                store
                    .change_learned_skill(
                        P,
                        "ship-it",
                        LearnedChange::Used {
                            success: (i + w) % 4 != 0,
                        },
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let kept = s.learned_skills(P).await.unwrap().remove(0);
    // 5 failures in 20: never under half after 10 uses, whatever the order, so it stays accepted.
    assert_eq!(
        (kept.status, kept.uses, kept.successes),
        (LearnedStatus::Accepted, 20, 15)
    );
    assert_eq!(
        s.change_learned_skill(P, "ship-it", LearnedChange::Remove)
            .await
            .unwrap(),
        None
    );
    assert!(s.learned_skills(P).await.unwrap().is_empty());
}

/// Instantiate every case for every backend.
/// An agent resumes a session kept in the memory database from another store on it (as
/// another process would); a secret typed into the conversation was redacted before it was
/// kept; sessions are listed and deleted.
async fn sessions_resume_from_another_store_without_their_secrets(b: Backend) {
    use ctxkit::{Agent, Message, Role, ScriptedModel};
    let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let first = Agent::builder()
        .model(std::sync::Arc::new(ScriptedModel::new([Message::assistant(
            "noted",
        )])))
        .sessions(b.sessions())
        .build()
        .unwrap();
    let mut thread = first.session("s-1").await.unwrap();
    first
        .run(&mut thread, format!("my token is {key}, keep it safe"))
        .await
        .unwrap();

    let other = b.reopen_with(ctxkit_memory::OpenOptions::default()).await;
    let model = std::sync::Arc::new(ScriptedModel::new([Message::assistant("ok")]));
    let agent = Agent::builder()
        .model(model.clone())
        .sessions(other.sessions())
        .build()
        .unwrap();
    let mut thread = agent.session("s-1").await.unwrap();
    assert_eq!(thread.turns(), 1);
    agent.run(&mut thread, "and now?").await.unwrap();
    let sent: Vec<String> = model.requests()[0]
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(
        sent[0].starts_with("my token is ") && !sent[0].contains(key),
        "the key was redacted before it was kept: {sent:?}"
    );
    assert_eq!(sent[1..], ["noted", "and now?"]);

    let store = other.sessions();
    let listed = store.list().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.id.as_str(), s.turns, s.messages))
            .collect::<Vec<_>>(),
        [("s-1", 2, 4)]
    );
    assert!(store.delete("s-1").await.unwrap());
    assert!(!store.delete("s-1").await.unwrap());
    assert!(store.load("s-1").await.unwrap().is_none());

    // A compaction is kept too: the resumed session starts from what it left.
    let mut thread = agent.session("s-2").await.unwrap();
    model.push(Message::assistant("a1"));
    agent.run(&mut thread, "one").await.unwrap();
    assert_eq!(agent.compact(&mut thread, 0).await.unwrap(), 2);
    let resumed = first.session("s-2").await.unwrap();
    assert!(
        resumed.history().is_empty() && resumed.turns() == 1,
        "{resumed:?}"
    );
}

macro_rules! suite {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::$case(super::Backend::sqlite()).await;
                }
            )*

            #[tokio::test]
            async fn export_import_round_trips_with_history() {
                super::export_import_round_trips_with_history(super::Backend::sqlite(), super::Backend::sqlite()).await;
            }
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(b) = super::Backend::postgres().await else { return };
                    super::$case(b).await;
                }
            )*

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn export_import_round_trips_with_history() {
                let (Some(from), Some(into)) = (super::Backend::postgres().await, super::Backend::postgres().await) else {
                    return;
                };
                super::export_import_round_trips_with_history(from, into).await;
            }

            /// A SQLite export imports into PostgreSQL exactly: the same ids, counts and history.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_sqlite_export_moves_to_postgres_exactly() {
                let Some(into) = super::Backend::postgres().await else { return };
                super::export_import_round_trips_with_history(super::Backend::sqlite(), into).await;
            }
        }
    };
}

suite!(
    writes_and_reads,
    secrets_are_refused_on_every_write,
    search_ranks_and_counts_accesses,
    upsert_merges_skips_and_inserts,
    a_contradiction_supersedes_and_undo_restores,
    history_and_undo_stay_in_their_project,
    forget_removes_the_best_matches_only,
    episodes_and_state,
    maintenance_decays_prunes_compacts_and_clears,
    concurrent_upserts_lose_and_duplicate_nothing,
    learned_skills_are_proposed_refined_reviewed_and_counted_without_losing_a_use,
    sessions_resume_from_another_store_without_their_secrets,
);

/// PostgreSQL only: the same ranking as SQLite, and failures that say what is wrong in one
/// sentence without the password.
#[cfg(feature = "postgres")]
mod postgres_only {
    use super::support::{pg, Backend};
    use ctxkit_memory::eval::EvalSet;
    use ctxkit_memory::{
        Maintenance, MemoryCategory, MemorySearchRequest, MemoryStore, NewMemoryEntry, PostgresStore,
    };

    /// Every query of the labelled evaluation set returns the same memories, in the same
    /// order, with the same scores, on both backends, and on PostgreSQL after moving the
    /// SQLite memories there by export and import (which counts terms once per import).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn both_backends_rank_the_evaluation_set_identically() {
        let (Some(pg), Some(moved)) = (Backend::postgres().await, Backend::postgres().await) else {
            return;
        };
        let lite = Backend::sqlite();
        let set = EvalSet::embedded();
        for b in [&lite, &pg] {
            let entries: Vec<NewMemoryEntry> = set
                .memories
                .iter()
                .map(|m| NewMemoryEntry::new(&m.project, m.category, &m.content).importance(m.importance))
                .collect();
            b.store.add_many(entries).await.unwrap();
        }
        let exported = lite.store.export(None).await.unwrap();
        moved.store.import(exported, None).await.unwrap();
        let mut compared = 0;
        for (q, other) in set.queries.iter().flat_map(|q| [(q, &pg), (q, &moved)]) {
            let ask = || {
                MemorySearchRequest::new(&q.project, &q.text)
                    .top_k(10)
                    .without_touch()
            };
            let (a, b) = (
                lite.store.search(ask()).await.unwrap(),
                other.store.search(ask()).await.unwrap(),
            );
            // The same memories with the same scores at every rank (SQLite's in-memory index sums
            // norms in fixed point, so scores agree to float noise; ties are broken by ids, which
            // differ between the two databases).
            assert_eq!(a.len(), b.len(), "query {:?}", q.text);
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x.relevance_score - y.relevance_score).abs() < 1e-6,
                    "query {:?}: {x:?} {y:?}",
                    q.text
                );
                let twin = b.iter().find(|h| h.entry.content == x.entry.content);
                let twin =
                    twin.unwrap_or_else(|| panic!("query {:?}: {:?} missing", q.text, x.entry.content));
                assert!(
                    (twin.relevance_score - x.relevance_score).abs() < 1e-6,
                    "query {:?}",
                    q.text
                );
            }
            compared += a.len();
        }
        assert!(compared > 100, "the set exercises ranking ({compared} results)");
    }

    async fn failure(url: &str) -> String {
        PostgresStore::connect(url).await.unwrap_err().to_string()
    }

    /// A "server" that accepts the connection and then says nothing: tokio-postgres bounds only
    /// the socket's connection, so this hung every caller until the store bounded the rest.
    #[tokio::test]
    async fn a_server_that_never_answers_is_given_up_in_one_sentence() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "postgres://ctxkit:Wr0ng-pw@{}/memory?connect_timeout=1",
            silent.local_addr().unwrap()
        );
        let msg = failure(&url).await;
        assert!(
            msg.contains("the server did not answer within 1 s") && !msg.contains("Wr0ng-pw"),
            "{msg}"
        );
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }

    #[tokio::test]
    async fn a_version_3_database_gets_the_postings_of_its_memories() {
        let Some(cluster) = pg::cluster() else { return };
        let url = cluster.database();
        let store = PostgresStore::connect(&url).await.unwrap();
        let kept = store
            .add(NewMemoryEntry::new(
                "/p",
                MemoryCategory::Preference,
                "Always use pnpm for packages",
            ))
            .await
            .unwrap();
        drop(store);
        // Back to version 3's search index: a tsvector column, no postings (and no v5 index,
        // no v6 vectors).
        cluster.psql(
            pg::Cluster::name_of(&url),
            "DROP TABLE memory_postings;
             DROP INDEX project_memories_category;
             DROP INDEX project_memories_vectors;
             DROP TABLE memory_sketches;
             DROP TABLE sessions;
             ALTER TABLE project_memories DROP COLUMN embedding_model, DROP COLUMN embedding,
                 DROP COLUMN content_terms, DROP COLUMN keyword_terms;
             ALTER TABLE project_memories ADD COLUMN terms TSVECTOR NOT NULL DEFAULT ''::tsvector;
             CREATE INDEX project_memories_terms ON project_memories USING GIN (terms);
             UPDATE ctxkit_schema_version SET version = 3;",
        );
        let store = PostgresStore::connect(&url).await.unwrap();
        let found = store
            .search(MemorySearchRequest::new("/p", "which packages tool").without_touch())
            .await
            .unwrap();
        assert_eq!(
            found.iter().map(|r| r.entry.id.as_str()).collect::<Vec<_>>(),
            [kept.id.as_str()]
        );
    }

    /// Memories of a version 7 database have no stored terms: they rank as before, tokenized
    /// when read, until `fill_terms` stores theirs.
    #[tokio::test]
    async fn a_version_7_database_ranks_the_same_and_gets_its_terms_filled() {
        let Some(cluster) = pg::cluster() else { return };
        let url = cluster.database();
        let store = PostgresStore::connect(&url).await.unwrap();
        for text in [
            "Use pnpm workspaces for the monorepo",
            "Workspaces share one lockfile",
        ] {
            store
                .add(NewMemoryEntry::new("/p", MemoryCategory::Fact, text))
                .await
                .unwrap();
        }
        // What ranks them (the scores' recency part moves with the clock).
        let search = |store: PostgresStore| async move {
            let found = store
                .search(MemorySearchRequest::new("/p", "pnpm workspaces").without_touch())
                .await
                .unwrap();
            let ranked: Vec<(String, f32, f32)> = found
                .into_iter()
                .map(|r| (r.entry.id, r.similarity, r.keyword_overlap))
                .collect();
            ranked
        };
        let ranked = search(store.clone()).await;
        assert_eq!(ranked.len(), 2);
        drop(store);
        cluster.psql(
            pg::Cluster::name_of(&url),
            "ALTER TABLE project_memories DROP COLUMN content_terms, DROP COLUMN keyword_terms;
             DROP TABLE sessions;
             UPDATE ctxkit_schema_version SET version = 7;",
        );
        let store = PostgresStore::connect(&url).await.unwrap();
        assert_eq!(search(store.clone()).await, ranked);
        assert_eq!(store.fill_terms("/p", 1).await.unwrap(), 1);
        assert_eq!(store.fill_terms("/p", 5).await.unwrap(), 1);
        assert_eq!(store.fill_terms("/p", 5).await.unwrap(), 0);
        let stored = cluster.psql(
            pg::Cluster::name_of(&url),
            "SELECT content_terms || '|' || keyword_terms FROM project_memories ORDER BY num LIMIT 1",
        );
        assert_eq!(
            stored.trim(),
            "use pnpm workspac monorepo|monorepo pnpm use workspac"
        );
        assert_eq!(search(store).await, ranked);
    }

    /// A large import brings the planner's statistics up to date itself: a search right after
    /// it is not planned blind (before autovacuum's first pass, `reltuples` is -1).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_import_leaves_fresh_statistics() {
        let Some(cluster) = pg::cluster() else { return };
        let url = cluster.database();
        let store = PostgresStore::connect(&url).await.unwrap();
        let reltuples = || {
            cluster.psql(
                pg::Cluster::name_of(&url),
                "SELECT reltuples::bigint FROM pg_class WHERE relname = 'project_memories'",
            )
        };
        assert_eq!(reltuples().trim(), "-1", "never analysed yet");
        let lines: String = (0..1_000)
            .map(|i| {
                format!(
                    "{{\"content\": \"Service {i} keeps its records in shard {}\"}}\n",
                    i % 7
                )
            })
            .collect();
        let records = ctxkit_memory::records::ExportRecord::read_jsonl(lines.as_bytes()).unwrap();
        let report = store.import(records, Some("/p")).await.unwrap();
        assert_eq!(report.memories_added, 1_000);
        assert_eq!(reltuples().trim(), "1000");
    }

    /// `sslmode=require` checks the server's certificate against the Mozilla roots: one that
    /// no authority signed is refused, in one sentence, where `disable` connects.
    #[tokio::test]
    async fn a_self_signed_server_certificate_is_refused_under_sslmode_require() {
        let Some(cluster) = pg::cluster() else { return };
        if crate::suites::required(pg::openssl(), "the PostgreSQL TLS test").is_none() {
            return;
        }
        let url = cluster.database();
        PostgresStore::connect(&url).await.unwrap();
        let msg = failure(&url.replace("sslmode=disable", "sslmode=require")).await;
        assert!(
            msg.starts_with("cannot connect to memory database postgres://ctxkit:***@127.0.0.1"),
            "{msg}"
        );
        assert!(msg.contains("invalid peer certificate: UnknownIssuer"), "{msg}");
        assert!(!msg.contains(pg::PASSWORD), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }

    #[tokio::test]
    async fn connection_failures_are_one_sentence_without_the_password() {
        let Some(cluster) = pg::cluster() else { return };
        let url = cluster.database();
        let name = pg::Cluster::name_of(&url);
        // A `/` in a password is legal (PostgreSQL's URLs end it at the `@`) and must not
        // end the redaction early.
        let wrong = "Wr0ng/Secret-9921";
        let msg = failure(&cluster.url(name, wrong)).await;
        assert!(msg.contains("password authentication failed"), "{msg}");
        assert!(!msg.contains(wrong) && !msg.contains(pg::PASSWORD), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");

        let port = pg::free_port();
        let unreachable = format!("postgres://ctxkit:{wrong}@127.0.0.1:{port}/memory?connect_timeout=2");
        let msg = failure(&unreachable).await;
        assert!(
            msg.starts_with("cannot connect to memory database postgres://ctxkit:***@127.0.0.1"),
            "{msg}"
        );
        assert!(msg.contains("refused") && !msg.contains(wrong), "{msg}");

        let newer = cluster.database();
        PostgresStore::connect(&newer).await.unwrap();
        cluster.psql(
            pg::Cluster::name_of(&newer),
            "UPDATE ctxkit_schema_version SET version = 99",
        );
        let msg = failure(&newer).await;
        assert!(
            msg.contains("has schema version 99, newer than version 9"),
            "{msg}"
        );
        assert!(!msg.contains(pg::PASSWORD) && msg.contains(":***@"), "{msg}");
    }
}
