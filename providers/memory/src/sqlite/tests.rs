//! The store: every operation, scoring by hand, upsert, maintenance over simulated days,
//! history and undo, secrets, project isolation, export/import, concurrency.

use std::collections::BTreeSet;

use rusqlite::Connection;

use super::search::lock;
use super::*;
use crate::clock::{ManualClock, DAY_MS};
use crate::decide::decayed_importance;
use crate::options::SearchIndex;
use crate::reads::Reads;
use crate::retrieval::{compute_relevance_score, Vocabulary};
use crate::rules::{MAX_ACCESS_COUNT, MERGE_SIMILARITY};
use crate::search::Snapshot;
use crate::sqlite::SqliteMemoryStore;
use crate::store::{Maintenance, MemoryStore, RunStore};
use crate::text::terms;
use crate::transfer::{ExportRecord, ImportReport};
use crate::types::*;
use crate::write::Op;
use std::sync::Arc;

const P: &str = "/work/alpha";
const Q: &str = "/work/beta";
const START: i64 = 1_700_000_000_000;

/// The writes the tests call on the blocking core, each one checked [`Op`] run by
/// [`MemoryDb::run`] as the store runs it.
macro_rules! writes {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty $(= $op:expr)?;)*) => {
        impl MemoryDb {
            $(fn $name(&self, $($arg: $ty),*) -> Result<$out> {
                self.run(writes!(@op $name($($arg),*) $($op)?))
            })*
        }
    };
    (@op $name:ident($($arg:ident),*)) => { Op::$name($($arg),*) };
    (@op $name:ident($($arg:ident),*) $op:expr) => { $op };
}

writes! {
    add_many(entries: Vec<NewMemoryEntry>) -> Vec<MemoryEntry>;
    update(id: &str, update: MemoryUpdate) -> MemoryEntry;
    upsert(new: NewMemoryEntry) -> UpsertResult;
    delete(id: &str) -> MemoryEntry;
    forget(project: &str, query: &str) -> Vec<MemoryEntry>;
    clear(project: &str) -> usize;
    undo(project: &str, history_id: i64) -> Option<MemoryEntry>;
    decay(project: &str) -> usize;
    prune(project: &str, min_importance: f32) -> usize;
    compact(project: &str) -> usize;
    import(records: &[ExportRecord], project: Option<&str>) -> ImportReport =
        Op::import(records.to_vec(), project);
    add_episode(new: NewEpisodicRecord) -> EpisodicRecord;
    set_state(project: &str, key: &str, value: &serde_json::Value) -> bool;
    remove_state(project: &str, key: &str) -> bool;
    fill_terms(project: &str, limit: usize) -> usize;
}

/// The store's reads the tests call on the blocking core, each run on this thread.
macro_rules! reads {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        impl MemoryDb {
            $(fn $name(&self, $($arg: $ty),*) -> Result<$out> {
                writer::run_now(self.inline().$name($($arg),*))
            })*
        }
    };
}

reads! {
    list(project: &str, options: ListOptions) -> Vec<MemoryEntry>;
    count(project: &str) -> usize;
    history(project: &str, memory_id: &str) -> Vec<HistoryEntry>;
    project_history(project: &str, limit: usize) -> Vec<HistoryEntry>;
    history_entry(project: &str, history_id: i64) -> Option<HistoryEntry>;
    episodes(project: &str, limit: usize) -> Vec<EpisodicRecord>;
    state_entries(project: &str) -> Vec<(String, serde_json::Value)>;
    export(project: Option<&str>) -> Vec<ExportRecord>;
    stats(project: &str) -> MemoryStats;
}

fn open() -> (tempfile::TempDir, MemoryDb, ManualClock) {
    open_mode(SearchIndex::Off)
}

fn open_mode(mode: SearchIndex) -> (tempfile::TempDir, MemoryDb, ManualClock) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    let options = OpenOptions::default().clock(clock.clone()).search_index(mode);
    let db = MemoryDb::open_with(dir.path().join("memory.db"), options).unwrap();
    (dir, db, clock)
}

/// Search tests run against both the on-disk postings and the in-memory index.
const MODES: [SearchIndex; 2] = [SearchIndex::Off, SearchIndex::Eager];

fn new(content: &str) -> NewMemoryEntry {
    NewMemoryEntry::new(P, MemoryCategory::Fact, content)
}

fn github_token() -> String {
    format!("ghp_{}", "a1B2c3D4e5".repeat(4))
}

#[test]
fn crud_round_trip() {
    let (_dir, db, clock) = open();
    let e = db
        .add(
            NewMemoryEntry::new(P, MemoryCategory::Preference, "  Always use pnpm, not npm  ")
                .importance(0.9)
                .keywords(["PNPM", "package manager", "pnpm"])
                .session("s1")
                .context("user said so"),
        )
        .unwrap();
    assert_eq!(e.content, "Always use pnpm, not npm");
    assert_eq!(e.keywords, ["pnpm", "package manager"]);
    assert_eq!((e.importance, e.access_count, e.created_at), (0.9, 0, START));
    assert_eq!(e.source_session_id.as_deref(), Some("s1"));
    assert_eq!(db.get(&e.id).unwrap().as_ref(), Some(&e));
    assert_eq!(db.count(P).unwrap(), 1);

    // Keywords are derived when none are given.
    let f = db.add(new("Frontend state lives in Zustand stores")).unwrap();
    assert_eq!(f.keywords, ["frontend", "state", "lives", "zustand", "stores"]);

    clock.advance_days(1.0);
    let u = db
        .update(
            &e.id,
            MemoryUpdate {
                content: Some("Always use pnpm 9, never npm".into()),
                importance: Some(0.95),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(u.content, "Always use pnpm 9, never npm");
    assert_eq!(u.keywords, e.keywords, "keywords stay unless given");
    assert_eq!(u.updated_at, START + DAY_MS);
    assert_eq!(u.created_at, START);
    assert_eq!(db.get(&e.id).unwrap().unwrap(), u);

    // Updating into an existing content is a duplicate naming the other id.
    let err = db
        .update(
            &e.id,
            MemoryUpdate {
                content: Some(f.content.clone()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Duplicate { existing, .. } if *existing == f.id),
        "{err}"
    );

    // Adding the same content twice is a duplicate.
    let err = db.add(new("Frontend state lives in Zustand stores")).unwrap_err();
    assert!(err.to_string().contains(&f.id), "{err}");

    let gone = db.delete(&e.id).unwrap();
    assert_eq!(gone.id, e.id);
    assert_eq!(db.get(&e.id).unwrap(), None);
    assert!(matches!(db.delete(&e.id).unwrap_err(), MemoryError::NotFound(id) if id == e.id));
    assert!(matches!(
        db.update("nope", MemoryUpdate::default()).unwrap_err(),
        MemoryError::NotFound(_)
    ));
    assert_eq!(db.count(P).unwrap(), 1);
    assert_eq!(db.clear(P).unwrap(), 1);
    assert_eq!(db.count(P).unwrap(), 0);
    assert!(db
        .search(&MemorySearchRequest::new(P, "zustand"))
        .unwrap()
        .is_empty());
}

#[test]
fn invalid_input_is_an_error_not_a_panic() {
    let (_dir, db, _) = open();
    for (entry, needle) in [
        (new("   "), "empty"),
        (new("x").importance(1.5), "outside"),
        (new("x").importance(f32::NAN), "outside"),
        (NewMemoryEntry::new(" ", MemoryCategory::Fact, "x"), "project"),
        (new(&"long ".repeat(500)), "limit is 2000"),
    ] {
        let err = db.add(entry).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
    assert_eq!(db.count(P).unwrap(), 0);
}

#[test]
fn add_many_is_all_or_nothing() {
    let (_dir, db, _) = open();
    let ok = db.add_many(vec![new("one fact"), new("two facts")]).unwrap();
    assert_eq!(ok.len(), 2);
    let err = db
        .add_many(vec![new("three facts"), new("one fact")])
        .unwrap_err();
    assert!(matches!(err, MemoryError::Duplicate { .. }), "{err}");
    assert_eq!(db.count(P).unwrap(), 2, "the batch was rolled back");
    let err = db
        .add_many(vec![new("four facts"), new("")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("memory 2 of 2"), "{err}");
}

#[test]
fn list_filters_pages_and_orders() {
    let (_dir, db, clock) = open();
    for i in 0..7 {
        let cat = if i % 2 == 0 {
            MemoryCategory::Preference
        } else {
            MemoryCategory::Fact
        };
        db.add(NewMemoryEntry::new(P, cat, format!("memory number {i}")).importance(i as f32 / 10.0))
            .unwrap();
        clock.advance_ms(1000);
    }
    db.add(NewMemoryEntry::new(
        Q,
        MemoryCategory::Preference,
        "other project",
    ))
    .unwrap();
    let all = db.list(P, ListOptions::default()).unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(all[0].content, "memory number 6", "newest first");
    let prefs = db
        .list(
            P,
            ListOptions {
                category: Some(MemoryCategory::Preference),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(prefs.len(), 4);
    assert!(prefs.iter().all(|e| e.category == MemoryCategory::Preference));
    let page = db
        .list(
            P,
            ListOptions {
                offset: 2,
                limit: 3,
                ..Default::default()
            },
        )
        .unwrap();
    let names: Vec<&str> = page.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(names, ["memory number 4", "memory number 3", "memory number 2"]);
    let by_importance = db
        .list(
            P,
            ListOptions {
                order: ListOrder::Importance,
                limit: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(by_importance[0].importance, 0.6);
}

#[test]
fn a_category_listing_reads_the_category_index() {
    // The essentials are two such listings on every request: the plan goes straight to the
    // category's most important memories, whatever the project's size (it used to walk the
    // project's memories by importance and skip the other categories').
    let (_dir, db, _clock) = open();
    let options = ListOptions {
        category: Some(MemoryCategory::Correction),
        order: ListOrder::Importance,
        limit: 25,
        ..Default::default()
    };
    let plan: Vec<String> = db
        .read(|tx| {
            let sql = format!("EXPLAIN QUERY PLAN {}", super::reads::list_statement(&options));
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params![P, "correction", 25, 0, false], |r| {
                r.get::<_, String>(3)
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap();
    assert!(
        plan.iter()
            .any(|step| step.contains("idx_project_memories_category")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|step| step.contains("TEMP B-TREE")),
        "no sort: {plan:?}"
    );
}

#[test]
fn a_one_project_export_reads_that_project_by_its_index() {
    // Exporting one project of a shared database reads that project's rows, never the others'.
    let (_dir, db, _clock) = open();
    let scope = super::equal_if_given("project_path", "?1", true);
    for (table, index) in [
        ("project_memories", "project_path"),
        ("episodic_records", "idx_episodic_records_project"),
        ("memory_history", "idx_memory_history_project"),
    ] {
        let plan: Vec<String> = db
            .read(|tx| {
                let sql = format!("EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE {scope}");
                let mut stmt = tx.prepare(&sql)?;
                let rows = stmt.query_map(rusqlite::params![P], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap();
        assert!(
            plan.iter().all(|step| !step.starts_with("SCAN")) && plan.iter().any(|step| step.contains(index)),
            "{table}: {plan:?}"
        );
    }
}

#[test]
fn scores_follow_the_seed_formula_by_hand() {
    for mode in MODES {
        scores_follow_the_seed_formula_by_hand_in(mode);
    }
}

fn scores_follow_the_seed_formula_by_hand_in(mode: SearchIndex) {
    let (_dir, db, clock) = open_mode(mode);
    let a = db
        .add(new("pnpm workspaces").importance(0.8).keywords(["pnpm"]))
        .unwrap();
    db.add(new("pnpm lockfile").importance(0.3).keywords(["lockfile"]))
        .unwrap();
    db.add(new("cargo build").importance(0.5)).unwrap();

    // N = 3, df(pnpm) = 2, df(workspaces) = 1.
    let idf_p = (4.0f32 / 3.0).ln() + 1.0;
    let idf_w = (4.0f32 / 2.0).ln() + 1.0;
    let cosine = idf_p / (idf_p * idf_p + idf_w * idf_w).sqrt();
    // Query terms {pnpm}; A's keyword terms {pnpm}: Jaccard 1. Accessed 0 days ago.
    let expected_now = 0.40 * cosine + 0.25 * 1.0 + 0.20 * 0.8 + 0.15 * 1.0;
    let hits = db
        .search(&MemorySearchRequest::new(P, "pnpm").without_touch())
        .unwrap();
    assert_eq!(hits[0].entry.id, a.id);
    assert!(
        (hits[0].similarity - cosine).abs() < 1e-5,
        "{} vs {cosine}",
        hits[0].similarity
    );
    assert_eq!(hits[0].keyword_overlap, 1.0);
    assert!(
        (hits[0].relevance_score - expected_now).abs() < 1e-5,
        "{}",
        hits[0].relevance_score
    );
    assert!((hits[0].relevance_score - compute_relevance_score(cosine, 1.0, 0.8, 0.0)).abs() < 1e-6);

    // Ten days later, recency is 1 / (1 + 10 · 0.1) = 0.5.
    clock.advance_days(10.0);
    let expected_later = 0.40 * cosine + 0.25 + 0.20 * 0.8 + 0.15 * 0.5;
    let hits = db
        .search(&MemorySearchRequest::new(P, "pnpm").without_touch())
        .unwrap();
    assert!((hits[0].relevance_score - expected_later).abs() < 1e-5);

    // The second pnpm memory: cosine by the same vocabulary, keywords {lockfile}: Jaccard 0.
    let v = Vocabulary::from_texts(["pnpm workspaces", "pnpm lockfile", "cargo build"]);
    let cos_b = v
        .vector(&terms("pnpm"))
        .cosine(&v.vector(&terms("pnpm lockfile")));
    let expected_b = 0.40 * cos_b + 0.20 * 0.3 + 0.15 * 0.5;
    assert_eq!(hits.len(), 2, "cargo build shares nothing with the query");
    assert!((hits[1].relevance_score - expected_b).abs() < 1e-5);
    assert_eq!(hits[1].keyword_overlap, 0.0);
}

#[test]
fn the_similarity_gate_keeps_unrelated_memories_out() {
    for mode in MODES {
        the_similarity_gate_keeps_unrelated_memories_out_in(mode);
    }
}

fn the_similarity_gate_keeps_unrelated_memories_out_in(mode: SearchIndex) {
    let (_dir, db, _) = open_mode(mode);
    db.add(new("Deploys happen on Friday afternoons").importance(1.0))
        .unwrap();
    db.add(new("The release checklist lives in docs").importance(1.0))
        .unwrap();
    let related = db
        .add(new("Use pnpm to install dependencies").importance(0.1))
        .unwrap();
    let hits = db
        .search(
            &MemorySearchRequest::new(P, "how do I install dependencies?")
                .top_k(10)
                .min_importance(0.0),
        )
        .unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.entry.id.as_str()).collect();
    assert_eq!(ids, [related.id.as_str()]);
    assert!(db
        .search(&MemorySearchRequest::new(P, "kubernetes helm"))
        .unwrap()
        .is_empty());
    // A query of stop words only finds nothing.
    assert!(db
        .search(&MemorySearchRequest::new(P, "what is it about"))
        .unwrap()
        .is_empty());
}

#[test]
fn keyword_overlap_alone_passes_the_gate() {
    for mode in MODES {
        keyword_overlap_alone_passes_the_gate_in(mode);
    }
}

fn keyword_overlap_alone_passes_the_gate_in(mode: SearchIndex) {
    let (_dir, db, _) = open_mode(mode);
    let e = db
        .add(new("Use the faster package manager").keywords(["pnpm"]))
        .unwrap();
    let hits = db.search(&MemorySearchRequest::new(P, "pnpm")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.id, e.id);
    assert_eq!(hits[0].similarity, 0.0);
    assert_eq!(hits[0].keyword_overlap, 1.0);
}

#[test]
fn search_filters_and_counts_access() {
    for mode in MODES {
        search_filters_and_counts_access_in(mode);
    }
}

fn search_filters_and_counts_access_in(mode: SearchIndex) {
    let (_dir, db, clock) = open_mode(mode);
    let pref = db
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Preference,
            "Prefer tabs in Rust code",
        ))
        .unwrap();
    let fact = db.add(new("Rust code is formatted by rustfmt")).unwrap();
    db.add(new("Rust nightly is not used").importance(0.05)).unwrap();

    let hits = db.search(&MemorySearchRequest::new(P, "rust code")).unwrap();
    assert_eq!(hits.len(), 2, "the memory below min_importance 0.1 is left out");
    let prefs = db
        .search(
            &MemorySearchRequest::new(P, "rust code")
                .categories([MemoryCategory::Preference])
                .without_touch(),
        )
        .unwrap();
    assert_eq!(prefs.len(), 1);
    assert_eq!(prefs[0].entry.id, pref.id);
    assert_eq!(
        db.search(&MemorySearchRequest::new(P, "rust code").top_k(1).without_touch())
            .unwrap()
            .len(),
        1
    );

    clock.advance_days(2.0);
    let hits = db.search(&MemorySearchRequest::new(P, "rustfmt")).unwrap();
    assert_eq!(hits[0].entry.access_count, 2);
    let stored = db.get(&fact.id).unwrap().unwrap();
    assert_eq!(stored.access_count, 2, "two searches returned it");
    assert_eq!(stored.last_accessed_at, START + 2 * DAY_MS);
    db.search(&MemorySearchRequest::new(P, "rustfmt").without_touch())
        .unwrap();
    assert_eq!(db.get(&fact.id).unwrap().unwrap().access_count, 2);
}

#[test]
fn memories_without_stored_terms_rank_the_same_until_reindex_stores_them() {
    let (dir, db, _clock) = open();
    let mut ids = Vec::new();
    for text in [
        "Use pnpm workspaces for the monorepo",
        "The deploy script runs pnpm install twice",
        "Workspaces share one lockfile",
    ] {
        ids.push(db.add(new(text)).unwrap().id);
    }
    let search = || {
        db.search(&MemorySearchRequest::new(P, "pnpm workspaces").without_touch())
            .unwrap()
    };
    let conn = Connection::open(dir.path().join("memory.db")).unwrap();
    let stored = || -> Vec<(Option<String>, Option<String>)> {
        conn.prepare("SELECT content_terms, keyword_terms FROM project_memories ORDER BY num")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    // Written with the row: the content's terms in order, the keywords' terms sorted.
    let written = stored();
    assert_eq!(
        written[0],
        (
            Some("use pnpm workspac monorepo".to_string()),
            Some("monorepo pnpm use workspac".to_string())
        )
    );
    let ranked = search();
    assert_eq!(ranked.len(), 3);

    // Rows as an older version wrote them rank the same, tokenized when read.
    conn.execute(
        "UPDATE project_memories SET content_terms = NULL, keyword_terms = NULL",
        [],
    )
    .unwrap();
    assert_eq!(search(), ranked);
    assert_eq!(db.fill_terms(P, 2).unwrap(), 2);
    assert_eq!(db.fill_terms(P, 2).unwrap(), 1);
    assert_eq!(db.fill_terms(P, 2).unwrap(), 0);
    assert_eq!(stored(), written);
    assert_eq!(search(), ranked);

    // A changed content stores its own terms.
    let update = MemoryUpdate {
        content: Some("Use yarn berry for the monorepo".into()),
        ..MemoryUpdate::default()
    };
    db.update(&ids[0], update).unwrap();
    assert_eq!(stored()[0].0.as_deref(), Some("use yarn berri monorepo"));
    let yarn = db
        .search(&MemorySearchRequest::new(P, "yarn").without_touch())
        .unwrap();
    assert_eq!(yarn[0].entry.id, ids[0]);
}

#[test]
fn unicode_text_is_searchable() {
    for mode in MODES {
        unicode_text_is_searchable_in(mode);
    }
}

fn unicode_text_is_searchable_in(mode: SearchIndex) {
    let (_dir, db, _) = open_mode(mode);
    let ja = db.add(new("日本語のドキュメントは docs/ja にある")).unwrap();
    let de = db.add(new("Die Straßenkarte liegt im Ordner Karten")).unwrap();
    assert_eq!(
        db.search(&MemorySearchRequest::new(P, "日本語")).unwrap()[0]
            .entry
            .id,
        ja.id
    );
    assert_eq!(
        db.search(&MemorySearchRequest::new(P, "STRASSENKARTE straßenkarte"))
            .unwrap()[0]
            .entry
            .id,
        de.id
    );
}

#[test]
fn upsert_inserts_merges_and_skips() {
    let (_dir, db, _) = open();
    db.add(new("Deploys happen on Friday afternoons")).unwrap();
    db.add(new("Frontend state lives in Zustand stores")).unwrap();
    let base = "Always run cargo fmt before committing code changes in this repository";
    let first = match db.upsert(new(base).importance(0.6)).unwrap() {
        UpsertResult::Inserted(e) => e,
        other => panic!("expected an insert, got {other:?}"),
    };
    // Identical content: skipped, naming the existing memory.
    match db.upsert(new(base)).unwrap() {
        UpsertResult::Skipped { reason, existing_id } => {
            assert_eq!(existing_id.as_deref(), Some(first.id.as_str()));
            assert!(reason.contains("identical"), "{reason}");
        }
        other => panic!("expected a skip, got {other:?}"),
    }
    // One more term: similar above 0.85, merged into the same memory.
    let richer = format!("{base} workspace");
    match db
        .upsert(new(&richer).importance(0.9).keywords(["fmt", "git"]))
        .unwrap()
    {
        UpsertResult::Merged {
            original_id,
            merged,
            similarity,
        } => {
            assert_eq!(original_id, first.id);
            assert_eq!(merged.id, first.id);
            assert!(similarity > MERGE_SIMILARITY, "{similarity}");
            assert_eq!(merged.content, richer, "the more informative content wins");
            assert_eq!(merged.importance, 0.9);
            assert!(
                merged.keywords.contains(&"git".to_string())
                    && merged.keywords.contains(&"cargo".to_string())
            );
        }
        other => panic!("expected a merge, got {other:?}"),
    }
    assert_eq!(db.count(P).unwrap(), 3);
    // The shorter version adds nothing to the merged memory: skipped with a reason.
    match db.upsert(new(base).importance(0.2)).unwrap() {
        UpsertResult::Skipped { reason, existing_id } => {
            assert_eq!(existing_id.as_deref(), Some(first.id.as_str()));
            assert!(reason.contains("already says as much"), "{reason}");
        }
        other => panic!("expected a skip, got {other:?}"),
    }
    // Something different: inserted.
    assert!(matches!(
        db.upsert(new("Releases are tagged vX.Y.Z")).unwrap(),
        UpsertResult::Inserted(_)
    ));
    assert_eq!(db.count(P).unwrap(), 4);
    // The merge is in the history with the memory as it was.
    let history = db.history(P, &first.id).unwrap();
    let actions: Vec<HistoryAction> = history.iter().map(|h| h.action).collect();
    assert_eq!(actions, [HistoryAction::Insert, HistoryAction::Merge]);
    assert_eq!(history[1].before.as_ref().unwrap().content, base);
}

#[test]
fn decay_follows_the_formula_over_simulated_days() {
    let (_dir, db, clock) = open();
    let a = db.add(new("memory decayed weekly").importance(0.8)).unwrap();
    let b = db.add(new("memory decayed once").importance(0.8)).unwrap();
    assert_eq!(db.decay(P).unwrap(), 0, "nothing decays at day 0");

    clock.advance_days(7.0);
    // Touch b so that only a decays now.
    db.touch(std::slice::from_ref(&b.id)).unwrap();
    assert_eq!(db.decay(P).unwrap(), 1);
    let a7 = db.get(&a.id).unwrap().unwrap().importance;
    assert!((a7 - 0.8 * 0.95).abs() < 1e-6, "{a7}");

    clock.advance_days(7.0);
    assert_eq!(db.decay(P).unwrap(), 2);
    let a14 = db.get(&a.id).unwrap().unwrap().importance;
    assert!(
        (a14 - 0.8 * 0.95f32.powi(2)).abs() < 1e-6,
        "decaying weekly compounds to 0.95^2: {a14}"
    );
    let b14 = db.get(&b.id).unwrap().unwrap().importance;
    assert!((b14 - 0.8 * 0.95).abs() < 1e-6, "7 days since the access: {b14}");

    // Half a week: 0.95^(3.5/7).
    clock.advance_days(3.5);
    db.decay(P).unwrap();
    let a_half = db.get(&a.id).unwrap().unwrap().importance;
    assert!((a_half - 0.8 * 0.95f32.powf(2.5)).abs() < 1e-6, "{a_half}");
    // Decaying twice at the same moment changes nothing.
    assert_eq!(db.decay(P).unwrap(), 0);
    assert_eq!(
        db.history(P, &a.id)
            .unwrap()
            .iter()
            .filter(|h| h.action == HistoryAction::Decay)
            .count(),
        3
    );
    assert!((decayed_importance(0.8, 14.0) - 0.8 * 0.9025).abs() < 1e-6);
}

#[test]
fn prune_removes_what_fell_below_the_threshold() {
    let (_dir, db, _) = open();
    db.add(new("barely important").importance(0.05)).unwrap();
    let keep = db.add(new("quite important").importance(0.2)).unwrap();
    db.add(NewMemoryEntry::new(Q, MemoryCategory::Fact, "other project, low").importance(0.01))
        .unwrap();
    assert_eq!(db.prune(P, 0.1).unwrap(), 1);
    let left = db.list(P, ListOptions::default()).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, keep.id);
    assert_eq!(db.count(Q).unwrap(), 1, "prune stays in its project");
    let deletes = db.project_history(P, 10).unwrap();
    assert!(deletes
        .iter()
        .any(|h| h.action == HistoryAction::Delete && h.reason.as_deref().unwrap().starts_with("pruned")));
}

#[test]
fn compact_merges_near_duplicates_only() {
    let (_dir, db, _) = open();
    let strong = db
        .add(
            new("Always use pnpm for installing packages")
                .importance(0.9)
                .keywords(["pnpm"]),
        )
        .unwrap();
    let weak = db
        .add(
            new("always use PNPM for installing packages!")
                .importance(0.4)
                .keywords(["installing"]),
        )
        .unwrap();
    db.touch(std::slice::from_ref(&weak.id)).unwrap();
    let other = db.add(new("Use cargo nextest for running the tests")).unwrap();
    let close = db
        .add(new("Always use pnpm for installing packages and tools"))
        .unwrap();
    assert_eq!(db.compact(P).unwrap(), 1);
    assert_eq!(db.get(&weak.id).unwrap(), None);
    let survivor = db.get(&strong.id).unwrap().unwrap();
    assert_eq!(survivor.content, strong.content);
    assert_eq!(survivor.importance, 0.9);
    assert_eq!(survivor.access_count, 1);
    assert_eq!(survivor.keywords, ["pnpm", "installing"]);
    assert!(db.get(&other.id).unwrap().is_some());
    assert!(
        db.get(&close.id).unwrap().is_some(),
        "similar but not above 0.90 stays"
    );
    let merged = db.history(P, &weak.id).unwrap();
    assert_eq!(merged.last().unwrap().action, HistoryAction::Merge);
    assert_eq!(
        merged.last().unwrap().related_id.as_deref(),
        Some(strong.id.as_str())
    );
    assert_eq!(db.compact(P).unwrap(), 0, "nothing left to merge");
    // The search index followed the merge.
    let hits = db.search(&MemorySearchRequest::new(P, "pnpm packages")).unwrap();
    assert!(hits.iter().all(|h| h.entry.id != weak.id));
}

#[test]
fn history_records_changes_and_undo_restores_them() {
    let (_dir, db, _) = open();
    let e = db.add(new("The API lives in src/api")).unwrap();
    db.update(
        &e.id,
        MemoryUpdate {
            content: Some("The API lives in src/routes".into()),
            ..Default::default()
        },
    )
    .unwrap();
    db.delete(&e.id).unwrap();
    let h = db.history(P, &e.id).unwrap();
    let actions: Vec<HistoryAction> = h.iter().map(|h| h.action).collect();
    assert_eq!(
        actions,
        [
            HistoryAction::Insert,
            HistoryAction::Update,
            HistoryAction::Delete
        ]
    );
    assert_eq!(h[1].before.as_ref().unwrap().content, "The API lives in src/api");
    assert_eq!(
        h[1].after.as_ref().unwrap().content,
        "The API lives in src/routes"
    );
    assert!(h[2].after.is_none());

    // Undo the delete: back under its id, and searchable again.
    let restored = db.undo(P, h[2].id).unwrap().unwrap();
    assert_eq!(restored.id, e.id);
    assert_eq!(restored.content, "The API lives in src/routes");
    assert_eq!(
        db.search(&MemorySearchRequest::new(P, "routes")).unwrap()[0]
            .entry
            .id,
        e.id
    );
    // Undo the update: the old content.
    assert_eq!(
        db.undo(P, h[1].id).unwrap().unwrap().content,
        "The API lives in src/api"
    );
    assert!(db
        .search(&MemorySearchRequest::new(P, "routes"))
        .unwrap()
        .is_empty());
    // Undo the insert: gone.
    assert_eq!(db.undo(P, h[0].id).unwrap(), None);
    assert_eq!(db.get(&e.id).unwrap(), None);
    assert!(matches!(
        db.undo(P, 999_999).unwrap_err(),
        MemoryError::HistoryNotFound { id: 999_999, .. }
    ));
    assert_eq!(
        db.history(P, &e.id).unwrap().last().unwrap().action,
        HistoryAction::Delete
    );
}

#[test]
fn forget_removes_the_best_matches() {
    for mode in MODES {
        forget_removes_the_best_matches_in(mode);
    }
}

fn forget_removes_the_best_matches_in(mode: SearchIndex) {
    let (_dir, db, _) = open_mode(mode);
    let npm = db.add(new("The project uses npm scripts for builds")).unwrap();
    let keep = db.add(new("Deploys happen on Fridays")).unwrap();
    let gone = db.forget(P, "npm scripts").unwrap();
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].id, npm.id);
    assert!(db.get(&keep.id).unwrap().is_some());
    assert!(db.forget(P, "kubernetes").unwrap().is_empty());
    assert!(
        db.forget(Q, "deploys fridays").unwrap().is_empty(),
        "another project's memory is not forgotten"
    );
}

#[test]
fn secrets_are_refused_on_every_store_write() {
    let (_dir, db, _) = open();
    let token = github_token();
    let existing = db.add(new("a harmless fact")).unwrap();
    let errors = vec![
        db.add(new(&format!("use token {token}"))).unwrap_err(),
        db.add(new("harmless").keywords([token.as_str()])).unwrap_err(),
        db.add(new("harmless 2").context(format!("from {token}")))
            .unwrap_err(),
        db.add_many(vec![new("fine"), new(&format!("password={}", "hunter22"))])
            .unwrap_err(),
        db.upsert(new(&format!("key {token}"))).unwrap_err(),
        db.update(
            &existing.id,
            MemoryUpdate {
                content: Some(format!("now {token}")),
                ..Default::default()
            },
        )
        .unwrap_err(),
        db.add_episode(NewEpisodicRecord {
            project_path: P.into(),
            session_id: "s".into(),
            record_type: RecordType::Success,
            task_summary: format!("configured {token}"),
            approach_summary: "a".into(),
            outcome_summary: "b".into(),
            tools_used: vec![],
            keywords: vec![],
        })
        .unwrap_err(),
        db.set_state(P, "token", &serde_json::json!(token)).unwrap_err(),
        db.import(
            &[ExportRecord::Memory(MemoryEntry {
                content: format!("old {token}"),
                id: "zz".into(),
                ..existing.clone()
            })],
            None,
        )
        .unwrap_err(),
    ];
    for err in errors {
        let msg = err.to_string();
        assert!(msg.contains("secrets are never stored"), "{msg}");
        assert!(msg.contains("rule `"), "{msg}");
        assert!(
            !msg.contains(&token) && !msg.contains("hunter22"),
            "the refusal echoes the secret: {msg}"
        );
    }
    assert_eq!(db.count(P).unwrap(), 1);
    assert_eq!(db.get(&existing.id).unwrap().unwrap().content, "a harmless fact");
    assert!(db.episodes(P, 10).unwrap().is_empty());
    assert!(db.state_entries(P).unwrap().is_empty());
}

#[test]
fn projects_are_isolated() {
    for mode in MODES {
        projects_are_isolated_in(mode);
    }
}

fn projects_are_isolated_in(mode: SearchIndex) {
    let (_dir, db, _) = open_mode(mode);
    let a = db
        .add(NewMemoryEntry::new(
            P,
            MemoryCategory::Fact,
            "The database is Postgres 16",
        ))
        .unwrap();
    let b = db
        .add(NewMemoryEntry::new(
            Q,
            MemoryCategory::Fact,
            "The database is SQLite",
        ))
        .unwrap();
    // The same content may exist once per project.
    db.add(NewMemoryEntry::new(
        Q,
        MemoryCategory::Fact,
        "The database is Postgres 16",
    ))
    .unwrap();
    let hits = db
        .search(&MemorySearchRequest::new(P, "database postgres sqlite"))
        .unwrap();
    assert!(hits.iter().all(|h| h.entry.project_path == P), "{hits:?}");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.id, a.id);
    assert!(db
        .list(P, ListOptions::default())
        .unwrap()
        .iter()
        .all(|e| e.project_path == P));
    assert_eq!(db.count(P).unwrap(), 1);
    assert_eq!(db.count(Q).unwrap(), 2);
    assert_eq!(db.stats(P).unwrap().total, 1);
    db.clear(P).unwrap();
    assert_eq!(db.get(&b.id).unwrap().unwrap().project_path, Q);
    assert_eq!(db.count(Q).unwrap(), 2);
    assert_eq!(
        db.search(&MemorySearchRequest::new(Q, "sqlite")).unwrap()[0]
            .entry
            .id,
        b.id
    );
    assert!(db
        .search(&MemorySearchRequest::new("/work/gamma", "database"))
        .unwrap()
        .is_empty());
}

#[test]
fn stats_count_by_category() {
    let (_dir, db, _) = open();
    db.add(NewMemoryEntry::new(P, MemoryCategory::Preference, "pref one").importance(0.4))
        .unwrap();
    db.add(NewMemoryEntry::new(P, MemoryCategory::Preference, "pref two").importance(0.8))
        .unwrap();
    db.add(NewMemoryEntry::new(P, MemoryCategory::Correction, "never this").importance(0.6))
        .unwrap();
    let s = db.stats(P).unwrap();
    assert_eq!(s.total, 3);
    assert_eq!(s.by_category["preference"], 2);
    assert_eq!(s.by_category["correction"], 1);
    assert_eq!(s.by_category["fact"], 0);
    assert_eq!(s.by_category.len(), 5);
    assert!((s.average_importance - 0.6).abs() < 1e-6);
    assert_eq!(s.history_entries, 3);
    assert_eq!(db.stats(Q).unwrap().total, 0);
}

#[test]
fn state_values_persist_per_project() {
    let (_dir, db, _) = open();
    db.set_state(P, "package_manager", &serde_json::json!("pnpm"))
        .unwrap();
    db.set_state(P, "package_manager", &serde_json::json!("yarn"))
        .unwrap();
    db.set_state(P, "flags", &serde_json::json!({"strict": true}))
        .unwrap();
    assert_eq!(
        db.state_entries(P).unwrap(),
        [
            ("flags".to_string(), serde_json::json!({"strict": true})),
            ("package_manager".to_string(), serde_json::json!("yarn")),
        ]
    );
    assert!(db.state_entries(Q).unwrap().is_empty());
    assert!(db.remove_state(P, "flags").unwrap());
    assert!(!db.remove_state(P, "flags").unwrap());
}

#[test]
fn export_import_round_trips_losslessly() {
    let (_dir, db, clock) = open();
    db.add(
        NewMemoryEntry::new(P, MemoryCategory::Preference, "Always use pnpm — «quoted» 日本語")
            .importance(0.95)
            .keywords(["pnpm"])
            .session("s-1")
            .context("said in chat"),
    )
    .unwrap();
    let b = db.add(new("Tests live in tests/").importance(0.3)).unwrap();
    clock.advance_days(9.0);
    db.touch(std::slice::from_ref(&b.id)).unwrap();
    clock.advance_days(30.0);
    db.decay(P).unwrap();
    db.add_episode(NewEpisodicRecord {
        project_path: P.into(),
        session_id: "s-1".into(),
        record_type: RecordType::Discovery,
        task_summary: "find the tests".into(),
        approach_summary: "grep".into(),
        outcome_summary: "found them".into(),
        tools_used: vec!["grep".into()],
        keywords: vec!["tests".into()],
    })
    .unwrap();
    db.add(NewMemoryEntry::new(Q, MemoryCategory::Fact, "not exported"))
        .unwrap();

    let records = db.export(Some(P)).unwrap();
    let history = db.project_history(P, usize::MAX).unwrap();
    let carried = |r: &&ExportRecord| matches!(r, ExportRecord::History(_));
    assert_eq!(records.iter().filter(|r| !carried(r)).count(), 3);
    assert_eq!(records.iter().filter(carried).count(), history.len());
    let mut jsonl = Vec::new();
    ExportRecord::write_jsonl(&records, &mut jsonl).unwrap();
    let text = String::from_utf8(jsonl.clone()).unwrap();
    assert_eq!(text.lines().count(), records.len());
    assert!(text
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));

    let (_dir2, other, _) = open();
    let read = ExportRecord::read_jsonl(&jsonl[..]).unwrap();
    assert_eq!(read, records);
    let report = other.import(&read, None).unwrap();
    assert_eq!(
        (
            report.memories_added,
            report.episodes_added,
            report.memories_renamed
        ),
        (2, 1, 0)
    );
    assert_eq!(report.history_added, history.len());
    assert_eq!(other.export(Some(P)).unwrap(), records, "every field survives");
    assert_eq!(
        other.project_history(P, usize::MAX).unwrap(),
        history,
        "the same history, ids and all"
    );
    let mut again = Vec::new();
    ExportRecord::write_jsonl(&other.export(Some(P)).unwrap(), &mut again).unwrap();
    assert_eq!(again, jsonl, "byte for byte");
    // The imported memories are searchable.
    assert_eq!(
        other.search(&MemorySearchRequest::new(P, "pnpm")).unwrap().len(),
        1
    );

    // Importing the same file twice adds nothing.
    let twice = other.import(&read, None).unwrap();
    assert_eq!(
        (twice.memories_added, twice.memories_skipped, twice.episodes_added),
        (0, 2, 0)
    );
    assert_eq!(other.count(P).unwrap(), 2);

    // Into another project of the same database: new ids, same content.
    let moved = db.import(&read, Some("/work/copy")).unwrap();
    assert_eq!((moved.memories_added, moved.memories_renamed), (2, 2));
    assert_eq!(db.count("/work/copy").unwrap(), 2);
    assert_eq!(db.count(P).unwrap(), 2);

    // A bad line is named.
    let err = ExportRecord::read_jsonl(&b"{\"kind\":\"memory\"}\n"[..])
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
}

#[test]
fn both_search_paths_rank_alike_on_a_larger_corpus() {
    let words: Vec<String> = (0..60).map(|i| format!("w{i:02}")).collect();
    let mut seed = 0x9E37_79B9_u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut entries = Vec::new();
    for i in 0..400 {
        // Skewed: low word numbers are common.
        let len = 3 + next(6);
        let text: Vec<&str> = (0..len)
            .map(|_| {
                let spread = 1 + next(60);
                words[next(spread)].as_str()
            })
            .collect();
        let kw = vec![words[next(60)].clone()];
        entries.push(
            new(&format!("{} n{i}", text.join(" ")))
                .keywords(kw)
                .importance(next(100) as f32 / 100.0),
        );
    }
    let queries: Vec<String> = (0..25)
        .map(|_| {
            (0..1 + next(5))
                .map(|_| words[next(60)].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    let fts = MemoryDb::open_with(
        dir.path().join("m.db"),
        OpenOptions::default()
            .clock(clock.clone())
            .search_index(SearchIndex::Off)
            .candidate_limit(10_000),
    )
    .unwrap();
    fts.add_many(entries).unwrap();
    let mem = MemoryDb::open_with(
        dir.path().join("m.db"),
        OpenOptions::default()
            .clock(clock.clone())
            .search_index(SearchIndex::Eager),
    )
    .unwrap();
    clock.advance_days(3.0);
    let mut compared = 0;
    for q in &queries {
        let a = fts
            .search(&MemorySearchRequest::new(P, q).top_k(10).without_touch())
            .unwrap();
        let b = mem
            .search(&MemorySearchRequest::new(P, q).top_k(10).without_touch())
            .unwrap();
        let ids = |r: &[MemorySearchResult]| r.iter().map(|h| h.entry.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&b), "query {q:?}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x.relevance_score - y.relevance_score).abs() < 1e-5,
                "query {q:?}"
            );
        }
        compared += a.len();
    }
    assert!(compared > 100, "the queries found something: {compared}");
}

#[test]
fn a_small_page_cache_stores_and_finds_what_the_default_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START);
    // Both search the on-disk index, which the page cache serves. (By default a background
    // in-memory index takes over once built; it ranks every match rather than the on-disk
    // path's bounded candidates, so the two stores would differ by when theirs was ready.)
    let open = |name: &str, options: OpenOptions| {
        let options = options.clock(clock.clone()).search_index(SearchIndex::Off);
        MemoryDb::open_with(dir.path().join(name), options).unwrap()
    };
    let default = open("default.db", OpenOptions::default());
    let small = open("small.db", OpenOptions::default().cache_pages(10));
    let cache_size = |db: &MemoryDb| {
        db.with_conn(|c| Ok(c.query_row("PRAGMA cache_size", [], |r| r.get::<_, i64>(0))?))
            .unwrap()
    };
    assert_eq!(cache_size(&small), 10);
    assert_ne!(cache_size(&default), 10);
    // Thousands of memories in one transaction change far more pages than ten: they are
    // kept, then spilled to the log before the commit, and a failure still undoes them all.
    let batch: Vec<NewMemoryEntry> = (0..3_000)
        .map(|i| new(&format!("memory w{} w{} n{i}", i % 97, i % 13)).keywords(vec![format!("k{}", i % 7)]))
        .collect();
    let mut failing = batch.clone();
    failing.push(batch[0].clone());
    assert!(matches!(
        small.add_many(failing).unwrap_err(),
        MemoryError::Duplicate { .. }
    ));
    assert_eq!(small.count(P).unwrap(), 0, "the batch was rolled back");
    for db in [&default, &small] {
        assert_eq!(db.add_many(batch.clone()).unwrap().len(), 3_000);
    }
    for query in ["w5 w7", "memory w42", "k3 w11 n17"] {
        // Every result, by content: the two files' ids differ, and ids break ties.
        let found = |db: &MemoryDb| {
            let mut found: Vec<(String, f32)> = db
                .search(&MemorySearchRequest::new(P, query).top_k(1_000).without_touch())
                .unwrap()
                .into_iter()
                .map(|r| (r.entry.content, r.relevance_score))
                .collect();
            found.sort_by(|a, b| a.0.cmp(&b.0));
            found
        };
        let expected = found(&default);
        assert!(expected.len() >= 10, "{query}: {}", expected.len());
        assert_eq!(found(&small), expected, "{query}");
    }
}

#[test]
fn a_store_off_the_blocking_pool_answers_where_it_is_awaited() {
    // No tokio runtime at all: every call completes on this thread the first time it is
    // polled (on the pool, the first call would need a runtime to hand itself to).
    let dir = tempfile::tempdir().unwrap();
    let options = OpenOptions::default().blocking_pool(false);
    let store = SqliteMemoryStore::open_with(dir.path().join("m.db"), options).unwrap();
    let added = super::writer::run_now(store.add(new("the deploy script needs qoxel"))).unwrap();
    let found = super::writer::run_now(store.search(MemorySearchRequest::new(P, "qoxel deploy"))).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].entry.id, added.id);
    let again = super::writer::run_now(store.get(&added.id)).unwrap().unwrap();
    assert_eq!(again.access_count, 1, "the search counted its access");
}

#[test]
fn a_store_that_checkpoints_on_open_leaves_its_writes_in_the_log_for_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let log = dir.path().join("m.db-wal");
    MemoryDb::open(&path)
        .unwrap()
        .add(new("the schema is written"))
        .unwrap();
    assert!(
        !log.exists(),
        "by default the last connection copies the log back and removes it"
    );
    let on_open = || OpenOptions::default().checkpoint_on_open(true);
    // The database file alone, as a copy of it without its log would see it.
    let file_alone = |name: &str| {
        let copy = dir.path().join(name);
        std::fs::copy(&path, &copy).unwrap();
        MemoryDb::open(&copy).unwrap().count(P).unwrap()
    };

    let first = MemoryDb::open_with(&path, on_open()).unwrap();
    first.wait_for_checkpoint();
    first.add(new("the deploy script needs qoxel")).unwrap();
    drop(first);
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "the write is still in the log"
    );
    assert_eq!(file_alone("before.db"), 1);

    let next = MemoryDb::open_with(&path, on_open()).unwrap();
    assert_eq!(next.count(P).unwrap(), 2, "read through the log all along");
    next.wait_for_checkpoint();
    assert_eq!(file_alone("after.db"), 2, "the next open copied the log back");
    let found = next
        .search(&MemorySearchRequest::new(P, "qoxel").without_touch())
        .unwrap();
    assert_eq!(found.len(), 1);
}

#[test]
fn stores_that_checkpoint_on_open_side_by_side_lose_nothing() {
    // Hooks of several sessions at once: each opens, adds, closes; each open copies what the
    // others left in the log while they write.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    MemoryDb::open(&path)
        .unwrap()
        .add(new("the schema is written"))
        .unwrap();
    std::thread::scope(|scope| {
        for writer in 0..4 {
            let path = &path;
            scope.spawn(move || {
                for i in 0..25 {
                    let options = OpenOptions::default().checkpoint_on_open(true);
                    let db = MemoryDb::open_with(path, options).unwrap();
                    db.add(new(&format!("writer {writer} wrote memory {i}"))).unwrap();
                }
            });
        }
    });
    let db = MemoryDb::open(&path).unwrap();
    assert_eq!(db.count(P).unwrap(), 101);
    let check: String = db
        .with_conn(|c| Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn a_background_index_answers_like_the_full_text_index() {
    let (_dir, db, _) = open_mode(SearchIndex::Background);
    db.add(new("Use pnpm to install dependencies")).unwrap();
    db.add(new("Deploys happen on Fridays")).unwrap();
    let before = db
        .search(&MemorySearchRequest::new(P, "install with pnpm").without_touch())
        .unwrap();
    db.warm_up(P).unwrap();
    let after = db
        .search(&MemorySearchRequest::new(P, "install with pnpm").without_touch())
        .unwrap();
    assert_eq!(before, after);
    assert_eq!(after.len(), 1);
    // A change makes the index stale; searches stay correct.
    let more = db.add(new("pnpm workspaces hold the packages")).unwrap();
    let hits = db
        .search(&MemorySearchRequest::new(P, "pnpm").without_touch())
        .unwrap();
    assert!(hits.iter().any(|h| h.entry.id == more.id));
}

#[test]
fn a_write_brings_the_loaded_index_up_to_date_in_place() {
    let (_dir, db, _) = open_mode(SearchIndex::Eager);
    db.add(new("Use pnpm to install dependencies")).unwrap();
    db.warm_up(P).unwrap();
    let loaded = lock(&db.inner.indexes).get(P).cloned().unwrap();
    let current = || db.read(|tx| index::project_version(tx, P)).unwrap();
    let indexed = || loaded.read().unwrap().version;

    let added = db.add(new("pnpm workspaces hold the packages")).unwrap();
    assert_eq!(indexed(), current(), "after an add, before any search");
    db.update(
        &added.id,
        MemoryUpdate {
            content: Some("pnpm workspaces live in packages/".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(indexed(), current(), "after an update");
    db.delete(&added.id).unwrap();
    assert_eq!(indexed(), current(), "after a delete");
    assert!(
        Arc::ptr_eq(&loaded, lock(&db.inner.indexes).get(P).unwrap()),
        "updated, not rebuilt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("concurrent.db");
    SqliteMemoryStore::open(&path).unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let path = path.clone();
        tasks.push(tokio::spawn(async move {
            // Each task has its own store (its own connections), like separate processes.
            let store = SqliteMemoryStore::open(&path).unwrap();
            for i in 0..500 {
                store
                    .add(NewMemoryEntry::new(
                        P,
                        MemoryCategory::Fact,
                        format!("writer {t} note {i} about topic{}", i % 37),
                    ))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let store = SqliteMemoryStore::open(&path).unwrap();
    assert_eq!(store.count(P).await.unwrap(), 4000);
    let all = store
        .list(
            P,
            ListOptions {
                limit: 10_000,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let contents: BTreeSet<String> = all.into_iter().map(|e| e.content).collect();
    for t in 0..8 {
        for i in 0..500 {
            assert!(
                contents.contains(&format!("writer {t} note {i} about topic{}", i % 37)),
                "lost {t}/{i}"
            );
        }
    }
    // The index saw every write too.
    let hits = store
        .search(MemorySearchRequest::new(P, "topic5").top_k(1000).without_touch())
        .await
        .unwrap();
    assert_eq!(
        hits.len(),
        8 * 14,
        "topic5 appears for i = 5, 42, … < 500 in each writer"
    );
    let integrity: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

// ----- regression tests of the security review ---------------------------------------------

fn aws_key_id() -> String {
    format!("AKIA{}", "IOSFODNN7EXAMPLE")
}

/// A forgets X; B imports A's export (same id); an undo in A must never touch B's memory.
#[test]
fn undo_and_history_never_cross_projects_after_an_import() {
    let (_dir, db, _) = open();
    let x = db.add(new("Staging runs on port 8443")).unwrap();
    db.delete(&x.id).unwrap();
    let a_history = db.history(P, &x.id).unwrap();
    assert_eq!(a_history.len(), 2, "insert and delete in A");
    let export = vec![ExportRecord::Memory(x.clone())];

    // B imports A's export: the id is taken by A's history, so B's copy gets a new one.
    let report = db.import(&export, Some(Q)).unwrap();
    assert_eq!((report.memories_added, report.memories_renamed), (1, 1));
    let b = db.list(Q, ListOptions::default()).unwrap().remove(0);
    assert_ne!(
        b.id, x.id,
        "an imported id never aliases another project's memory"
    );
    // Keeping the records' own project (an export naming B with A's id) re-mints too.
    let named_b = vec![ExportRecord::Memory(MemoryEntry {
        project_path: "/work/gamma".into(),
        ..x.clone()
    })];
    assert_eq!(db.import(&named_b, None).unwrap().memories_renamed, 1);

    // A's entries are invisible from B, and B cannot undo them.
    assert!(db.history(Q, &x.id).unwrap().is_empty());
    assert_eq!(db.history_entry(Q, a_history[1].id).unwrap(), None);
    assert!(matches!(
        db.undo(Q, a_history[1].id).unwrap_err(),
        MemoryError::HistoryNotFound { .. }
    ));

    // Undo in A restores A's memory and leaves B's alone.
    let restored = db.undo(P, a_history[1].id).unwrap().unwrap();
    assert_eq!(
        (restored.id.as_str(), restored.project_path.as_str()),
        (x.id.as_str(), P)
    );
    assert_eq!(
        db.undo(P, a_history[0].id).unwrap(),
        None,
        "undoing A's insert removes A's row"
    );
    assert_eq!(db.get(&b.id).unwrap().unwrap(), b, "B's memory is untouched");
    assert_eq!(db.count(Q).unwrap(), 1);

    // Re-importing into A its own export keeps the id (A's own lineage).
    assert_eq!(db.import(&export, Some(P)).unwrap().memories_renamed, 0);
    assert_eq!(db.get(&x.id).unwrap().unwrap().project_path, P);
}

/// Even if a database already holds an aliased id (written before ids were kept unique), an
/// undo refuses rather than rewriting the other project's memory.
#[test]
fn undo_refuses_a_memory_id_now_held_by_another_project() {
    let (dir, db, _) = open();
    let x = db.add(new("Logs go to /var/log/app")).unwrap();
    db.delete(&x.id).unwrap();
    let h = db.history(P, &x.id).unwrap();
    {
        let conn = rusqlite::Connection::open(dir.path().join("memory.db")).unwrap();
        conn.execute(
            "INSERT INTO project_memories (id, project_path, category, content, created_at, updated_at, last_accessed_at)
             VALUES (?1, ?2, 'fact', 'B owns this row', 1, 1, 1)",
            rusqlite::params![x.id, Q],
        )
        .unwrap();
    }
    for entry in &h {
        let err = db.undo(P, entry.id).unwrap_err().to_string();
        assert!(err.contains("not a memory of project"), "{err}");
    }
    let row = db.get(&x.id).unwrap().unwrap();
    assert_eq!(
        (row.project_path.as_str(), row.content.as_str()),
        (Q, "B owns this row")
    );
}

/// Every field is checked as given: keywords are not lowercased first, the project path,
/// ids and update fields are checked too, on every write path.
#[test]
fn secrets_are_checked_before_any_normalisation() {
    let (_dir, db, _) = open();
    let key = aws_key_id();
    let existing = db.add(new("a harmless fact")).unwrap();
    let bad_episode = |f: &dyn Fn(&mut NewEpisodicRecord)| {
        let mut e = NewEpisodicRecord {
            project_path: P.into(),
            session_id: "s".into(),
            record_type: RecordType::Success,
            task_summary: "t".into(),
            approach_summary: "a".into(),
            outcome_summary: "o".into(),
            tools_used: vec![],
            keywords: vec![],
        };
        f(&mut e);
        db.add_episode(e).unwrap_err()
    };
    let imported = |f: &dyn Fn(&mut MemoryEntry)| {
        let mut m = MemoryEntry {
            id: "imp1".into(),
            content: "imported fact".into(),
            ..existing.clone()
        };
        f(&mut m);
        db.import(&[ExportRecord::Memory(m)], None).unwrap_err()
    };
    let errors = vec![
        db.add(new("harmless").keywords([key.as_str()])).unwrap_err(),
        db.add(new("harmless").keywords(["  ".to_string() + &key]))
            .unwrap_err(),
        db.add(NewMemoryEntry::new(
            format!("/work/{key}"),
            MemoryCategory::Fact,
            "x",
        ))
        .unwrap_err(),
        db.upsert(new("harmless").keywords([key.as_str()])).unwrap_err(),
        db.update(
            &existing.id,
            MemoryUpdate {
                keywords: Some(vec![key.clone()]),
                ..Default::default()
            },
        )
        .unwrap_err(),
        bad_episode(&|e| e.project_path = format!("/work/{key}")),
        bad_episode(&|e| e.keywords = vec![key.clone()]),
        imported(&|m| m.keywords = vec![key.clone()]),
        imported(&|m| m.id = key.clone()),
        imported(&|m| m.project_path = format!("/work/{key}")),
        db.import(
            &[ExportRecord::Memory(MemoryEntry {
                id: "imp2".into(),
                content: "imported".into(),
                ..existing.clone()
            })],
            Some(&format!("/work/{key}")),
        )
        .unwrap_err(),
        db.set_state(P, "ci", &serde_json::json!({"keys": [key.clone()]}))
            .unwrap_err(),
        // Hidden by a zero-width space, or written in full-width letters.
        db.add(new(&format!("AKIA\u{200b}{}", "IOSFODNN7EXAMPLE")))
            .unwrap_err(),
    ];
    for err in errors {
        let msg = err.to_string();
        assert!(msg.contains("aws-access-key-id"), "{msg}");
        assert!(
            !msg.contains(&key) && !msg.to_lowercase().contains(&key.to_lowercase()),
            "{msg}"
        );
    }
    let everything = format!("{:?}", db.export(None).unwrap()).to_lowercase();
    assert!(
        !everything.contains(&key.to_lowercase()),
        "nothing of the key was stored"
    );
    assert_eq!(db.count(P).unwrap(), 1);
}

/// `"access_count": 9223372036854775807` then a search used to overflow into a REAL and break
/// every later command.
#[test]
fn imported_counters_and_timestamps_are_range_checked() {
    let (_dir, db, _) = open();
    let base = db.add(new("The queue is RabbitMQ")).unwrap();
    let record = |f: &dyn Fn(&mut MemoryEntry)| {
        let mut m = MemoryEntry {
            id: "crafted".into(),
            content: "Workers poll the queue".into(),
            ..base.clone()
        };
        f(&mut m);
        vec![ExportRecord::Memory(m)]
    };
    for (field, bad) in [
        ("access_count", record(&|m| m.access_count = i64::MAX)),
        ("access_count", record(&|m| m.access_count = -1)),
        ("created_at", record(&|m| m.created_at = i64::MIN)),
        ("updated_at", record(&|m| m.updated_at = i64::MAX)),
        ("last_accessed_at", record(&|m| m.last_accessed_at = -5)),
        ("decayed_at", record(&|m| m.decayed_at = Some(i64::MAX))),
    ] {
        let err = db.import(&bad, None).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains(field), "{err}");
    }
    assert_eq!(db.count(P).unwrap(), 1, "nothing of a refused import is stored");

    // History: an id that would exhaust the id sequence, and a snapshot an `undo` would make a
    // memory again, are checked like memories.
    let history = db
        .export(None)
        .unwrap()
        .into_iter()
        .find_map(|r| match r {
            ExportRecord::History(h) => Some(h),
            _ => None,
        })
        .unwrap();
    let entry = |f: &dyn Fn(&mut HistoryEntry)| {
        let mut h = history.clone();
        h.id = 9_000;
        f(&mut h);
        vec![ExportRecord::History(h)]
    };
    for (what, bad) in [
        ("no valid id", entry(&|h| h.id = i64::MAX)),
        (
            "importance",
            entry(&|h| h.after.as_mut().unwrap().importance = 7.0),
        ),
        (
            "valid id",
            entry(&|h| h.after.as_mut().unwrap().id = "../x".into()),
        ),
        (
            "access_count",
            entry(&|h| h.after.as_mut().unwrap().access_count = i64::MAX),
        ),
    ] {
        let err = db.import(&bad, None).unwrap_err().to_string();
        assert!(err.contains(what), "{what}: {err}");
    }
    db.import(&entry(&|_| {}), None).unwrap();

    // The highest count accepted saturates when searched, and everything keeps working.
    db.import(&record(&|m| m.access_count = MAX_ACCESS_COUNT), None)
        .unwrap();
    for _ in 0..3 {
        let hits = db
            .search(&MemorySearchRequest::new(P, "workers poll queue"))
            .unwrap();
        assert_eq!(hits[0].entry.access_count, MAX_ACCESS_COUNT);
    }
    assert_eq!(db.get("crafted").unwrap().unwrap().access_count, MAX_ACCESS_COUNT);
    assert!(db.stats(P).unwrap().total_accesses >= MAX_ACCESS_COUNT);
    assert_eq!(db.list(P, ListOptions::default()).unwrap().len(), 2);
    assert_eq!(db.compact(P).unwrap(), 0);
}

/// A database where the old code already overflowed a counter into a REAL stays usable.
#[test]
fn an_overflowed_counter_in_an_old_database_reads_back_saturated() {
    let (dir, db, _) = open();
    let e = db.add(new("Cache entries expire after an hour")).unwrap();
    rusqlite::Connection::open(dir.path().join("memory.db"))
        .unwrap()
        .execute(
            "UPDATE project_memories SET access_count = 9.3e18 WHERE id = ?1",
            [&e.id],
        )
        .unwrap();
    assert_eq!(db.get(&e.id).unwrap().unwrap().access_count, MAX_ACCESS_COUNT);
    let hits = db.search(&MemorySearchRequest::new(P, "cache expire")).unwrap();
    assert_eq!(hits[0].entry.access_count, MAX_ACCESS_COUNT);
    assert_eq!(db.get(&e.id).unwrap().unwrap().access_count, MAX_ACCESS_COUNT);
    assert!(db.stats(P).is_ok() && db.export(Some(P)).is_ok());
}

/// `prune --min-importance 2` deleted everything while `add --importance 2` was refused.
#[test]
fn prune_validates_its_threshold_like_add_validates_importance() {
    let (_dir, db, _) = open();
    db.add(new("keep me").importance(0.9)).unwrap();
    let add_err = db
        .add(new("too important").importance(2.0))
        .unwrap_err()
        .to_string();
    for bad in [2.0, 1.0001, -0.1, f32::NAN, f32::INFINITY] {
        let err = db.prune(P, bad).unwrap_err();
        assert!(matches!(err, MemoryError::Invalid(_)), "{err:?}");
        assert!(err.to_string().contains("outside 0.0-1.0"), "{err}");
    }
    assert!(add_err.contains("outside 0.0-1.0"), "{add_err}");
    assert_eq!(db.count(P).unwrap(), 1, "a refused prune deletes nothing");
    assert_eq!(db.prune(P, 1.0).unwrap(), 1, "the range's ends are valid");
}

/// A read-only database opens for reading: every read works, a search does not count, and a
/// write fails with one sentence.
#[test]
fn a_read_only_database_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let e = {
        let db = MemoryDb::open(&path).unwrap();
        let e = db.add(new("Docs are built with mdBook")).unwrap();
        db.add_episode(NewEpisodicRecord {
            project_path: P.into(),
            session_id: "s".into(),
            record_type: RecordType::Success,
            task_summary: "build docs".into(),
            approach_summary: "a".into(),
            outcome_summary: "o".into(),
            tools_used: vec![],
            keywords: vec![],
        })
        .unwrap();
        e
    };
    let db = MemoryDb::open_with(
        &path,
        OpenOptions::default()
            .read_only(true)
            .search_index(SearchIndex::Eager),
    )
    .unwrap();
    assert!(db.is_read_only());
    let hits = db.search(&MemorySearchRequest::new(P, "docs mdbook")).unwrap();
    assert_eq!(hits[0].entry.id, e.id);
    assert_eq!(hits[0].entry.access_count, 0, "a read-only search counts nothing");
    assert_eq!(db.list(P, ListOptions::default()).unwrap().len(), 1);
    assert_eq!(db.get(&e.id).unwrap().unwrap().content, e.content);
    assert_eq!(db.stats(P).unwrap().total, 1);
    assert_eq!(
        db.export(Some(P)).unwrap().len(),
        3,
        "the memory, its episode and its history"
    );
    assert_eq!(db.history(P, &e.id).unwrap().len(), 1);
    assert_eq!(db.project_history(P, 5).unwrap().len(), 1);
    let errors = [
        db.add(new("another")).unwrap_err(),
        db.delete(&e.id).unwrap_err(),
        db.prune(P, 0.5).unwrap_err(),
        db.touch(std::slice::from_ref(&e.id)).unwrap_err(),
    ];
    for err in errors {
        assert!(matches!(err, MemoryError::ReadOnly { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("memory.db") && msg.contains("read-only") && !msg.contains('\n'),
            "{msg}"
        );
    }
    // A database that does not exist yet cannot be opened read-only.
    assert!(MemoryDb::open_with(dir.path().join("none.db"), OpenOptions::default().read_only(true)).is_err());
}

/// Without `read_only`, a file the process may not write is opened read-only by itself. Root
/// writes through file modes, so there the check needs an unprivileged user (the CLI test runs
/// the binary as one).
#[cfg(unix)]
#[test]
fn a_write_protected_database_file_opens_read_only_by_itself() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    MemoryDb::open(&path)
        .unwrap()
        .add(new("Docs are built with mdBook"))
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
        // Past the harness's capture, so the skip is seen. The CLI's
        // `memory_read_only_database_answers_reads_and_refuses_writes` runs as an
        // unprivileged user under root, so CI covers this.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: a write-protected database opening read-only (root writes through file modes)\n",
        );
        return;
    }
    let db = MemoryDb::open(&path).unwrap();
    assert!(db.is_read_only());
    assert_eq!(db.count(P).unwrap(), 1);
    assert!(matches!(
        db.add(new("x")).unwrap_err(),
        MemoryError::ReadOnly { .. }
    ));
}

// ----- opening and migrating ------------------------------------------------------------

#[test]
fn opening_a_current_database_does_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let db = MemoryDb::open(&path).unwrap();
    db.add(NewMemoryEntry::new(
        "/p",
        MemoryCategory::Fact,
        "Deploys run on Mondays",
    ))
    .unwrap();
    drop(db);
    // Another process is in the middle of a long write (an import).
    let writer = Connection::open(&path).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let options = OpenOptions::default().busy_timeout(std::time::Duration::from_millis(50));
    let db = MemoryDb::open_with(&path, options).expect("opened without the write lock");
    let found = db
        .search(&MemorySearchRequest::new("/p", "when do deploys run").without_touch())
        .unwrap();
    assert_eq!(found.len(), 1, "and read beside the writer");
    writer.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn a_version_1_database_migrates_forward_keeping_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        assert!(matches!(
            schema::migrate_to(&mut conn, 1).unwrap(),
            schema::Migrated::Ok
        ));
        assert_eq!(schema::user_version(&conn).unwrap(), 1);
        let missing = conn.query_row("SELECT count(*) FROM project_state", [], |r| r.get::<_, i64>(0));
        assert!(missing.is_err(), "version 1 has no project_state table");
    }
    // Write a memory with a version-1 database (the current code only uses v1 tables here).
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO project_memories (id, project_path, category, content, created_at, updated_at, last_accessed_at)
             VALUES ('old1', '/p', 'fact', 'legacy row', 1, 1, 1)",
            [],
        )
        .unwrap();
    }
    let db = MemoryDb::open(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    assert_eq!(schema::user_version(&conn).unwrap(), schema::LATEST);
    assert_eq!(db.get("old1").unwrap().unwrap().content, "legacy row");
    db.set_state("/p", "pm", &serde_json::json!("pnpm")).unwrap();
    assert_eq!(
        db.state_entries("/p").unwrap(),
        [("pm".to_string(), serde_json::json!("pnpm"))]
    );
    // Opening again migrates nothing and keeps everything.
    drop(db);
    let db = MemoryDb::open(&path).unwrap();
    assert_eq!(db.count("/p").unwrap(), 1);
}

#[test]
fn a_version_8_database_gets_the_sketches_of_its_current_vectors_and_a_damaged_pack_heals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v8.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        schema::migrate_to(&mut conn, 8).unwrap();
        let vector = crate::vectors::encode(&[0.5, -0.25, 0.0, 1.0]);
        let mut insert = conn
            .prepare(
                "INSERT INTO project_memories (num, id, project_path, category, content, created_at, updated_at,
                     last_accessed_at, superseded_by, embedding_model, embedding)
                 VALUES (?1, ?2, ?3, 'fact', ?2, 1, 1, 1, ?4, 'm', ?5)",
            )
            .unwrap();
        // Three current vectors in two packs of /p, one superseded, one in /q.
        for (num, id, project, superseded) in [
            (3, "0000000000a1", "/p", None),
            (6, "0000000000e5", "/p", None),
            (300, "0000000000b2", "/p", None),
            (4, "0000000000c3", "/p", Some("0000000000a1")),
            (5, "0000000000d4", "/q", None),
        ] {
            insert
                .execute(rusqlite::params![num, id, project, superseded, vector])
                .unwrap();
        }
    }
    let db = MemoryDb::open(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let packs = || -> Vec<(String, i64, Vec<u8>)> {
        conn.prepare("SELECT project_path, pack, slots FROM memory_sketches ORDER BY project_path, pack")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(
        packs(),
        [
            ("/p".to_string(), 0, vec![3, 6]),
            ("/p".to_string(), 1, vec![44]),
            ("/q".to_string(), 0, vec![5])
        ]
    );
    // A damaged pack is rebuilt from its rows by the next write touching it (row 6 is not
    // touched): deleting row 3 makes row 4, which it superseded, current again.
    conn.execute(
        "UPDATE memory_sketches SET sketches = x'00' WHERE project_path = '/p' AND pack = 0",
        [],
    )
    .unwrap();
    db.delete("0000000000a1").unwrap();
    assert_eq!(packs()[0], ("/p".to_string(), 0, vec![4, 6]));
}

/// A database as version 2 of the schema left it: unstemmed index terms, history entries
/// without the v3 fields, an update that can be undone.
fn write_version_2_database(path: &std::path::Path) {
    let mut conn = Connection::open(path).unwrap();
    assert!(matches!(
        schema::migrate_to(&mut conn, 2).unwrap(),
        schema::Migrated::Ok
    ));
    let v2_entry = |content: &str, updated: i64| {
        serde_json::json!({
            "id": "0000000000a1", "project_path": "/p", "category": "convention", "content": content,
            "keywords": ["stripe", "webhooks"], "importance": 0.7, "access_count": 2,
            "source_session_id": null, "source_context": null, "created_at": 1000,
            "updated_at": updated, "last_accessed_at": 2000, "decayed_at": null
        })
        .to_string()
    };
    let (old, new) = (
        "Stripe webhooks are verified",
        "Stripe webhooks are verified with constructEvent",
    );
    conn.execute_batch(&format!(
        "INSERT INTO project_memories (num, id, project_path, category, content, keywords, importance,
             access_count, created_at, updated_at, last_accessed_at)
         VALUES (1, '0000000000a1', '/p', 'convention', '{new}', '[\"stripe\",\"webhooks\"]', 0.7, 2, 1000, 3000, 2000),
                (2, '0000000000b2', '/p', 'fact', 'Deploys run on Mondays', '[]', 0.5, 0, 1000, 1000, 1000);
         INSERT INTO memory_fts(rowid, project, terms) VALUES
             (1, '{p}', 'stripe webhooks verified constructevent stripe webhooks'),
             (2, '{p}', 'deploys run mondays');
         INSERT INTO memory_terms(project_path, term, df) VALUES
             ('/p', 'stripe', 1), ('/p', 'webhooks', 1), ('/p', 'verified', 1), ('/p', 'constructevent', 1),
             ('/p', 'deploys', 1), ('/p', 'run', 1), ('/p', 'mondays', 1);
         INSERT INTO memory_projects(project_path, docs, generation) VALUES ('/p', 2, 3);
         INSERT INTO project_state(project_path, key, value, updated_at) VALUES ('/p', 'pm', '\"pnpm\"', 1000);",
        p = "p0123456789abcdef",
    ))
    .unwrap();
    let mut history = conn
        .prepare(
            "INSERT INTO memory_history (memory_id, project_path, action, before, after, reason, at)
             VALUES (?1, '/p', ?2, ?3, ?4, ?5, ?6)",
        )
        .unwrap();
    history
        .execute(rusqlite::params![
            "0000000000a1",
            "insert",
            None::<String>,
            v2_entry(old, 1000),
            "added",
            1000
        ])
        .unwrap();
    history
        .execute(rusqlite::params![
            "0000000000a1",
            "update",
            v2_entry(old, 1000),
            v2_entry(new, 3000),
            "updated",
            3000
        ])
        .unwrap();
}

#[test]
fn a_version_2_database_migrates_to_3_keeping_rows_history_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    write_version_2_database(&path);
    for mode in MODES {
        let copy = dir.path().join(format!("{mode:?}.db"));
        std::fs::copy(&path, &copy).unwrap();
        let db = MemoryDb::open_with(&copy, OpenOptions::default().search_index(mode)).unwrap();
        let conn = Connection::open(&copy).unwrap();
        assert_eq!(schema::user_version(&conn).unwrap(), schema::LATEST);

        // Rows, with the v3 columns empty.
        let a = db.get("0000000000a1").unwrap().unwrap();
        assert_eq!(a.content, "Stripe webhooks are verified with constructEvent");
        assert_eq!((a.access_count, a.importance), (2, 0.7));
        assert_eq!(a.superseded_by, None);
        assert_eq!(db.count("/p").unwrap(), 2);
        assert_eq!(
            db.state_entries("/p").unwrap(),
            [("pm".to_string(), serde_json::json!("pnpm"))]
        );

        // History written before v3 reads back and can still be undone.
        let history = db.history("/p", "0000000000a1").unwrap();
        let actions: Vec<HistoryAction> = history.iter().map(|h| h.action).collect();
        assert!(actions.contains(&HistoryAction::Insert) && actions.contains(&HistoryAction::Update));
        let update = history
            .iter()
            .find(|h| h.action == HistoryAction::Update)
            .unwrap();
        assert_eq!(
            update.before.as_ref().unwrap().content,
            "Stripe webhooks are verified"
        );

        // The index was rebuilt with stemmed terms: another inflection finds the memory.
        let hits = db
            .search(&MemorySearchRequest::new("/p", "verify a webhook").without_touch())
            .unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].entry.id, "0000000000a1");
        let hits = db
            .search(&MemorySearchRequest::new("/p", "when does it deploy?").without_touch())
            .unwrap();
        assert_eq!(hits[0].entry.id, "0000000000b2");

        // New writes work on the migrated file, and undo restores the v2 content.
        db.add(NewMemoryEntry::new(
            "/p",
            MemoryCategory::Fact,
            "Releases are tagged on main",
        ))
        .unwrap();
        db.undo("/p", update.id).unwrap();
        assert_eq!(
            db.get("0000000000a1").unwrap().unwrap().content,
            "Stripe webhooks are verified"
        );
        assert_eq!(
            db.search(&MemorySearchRequest::new("/p", "webhook").without_touch())
                .unwrap()
                .len(),
            1
        );
    }
}

#[test]
fn a_newer_schema_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    MemoryDb::open(&path).unwrap();
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let err = MemoryDb::open(&path).unwrap_err();
    assert!(
        matches!(err, MemoryError::SchemaTooNew { found: 99, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("future.db"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0x42u8; 8192]).unwrap();
    let err = MemoryDb::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("garbage.db") && msg.contains("not a database"),
        "{msg}"
    );
}

/// Changing a memory's content leaves its old slot behind in the in-memory index; once removed
/// memories' slots outnumber the live ones the index is rebuilt, not grown further, and
/// searches find the same as before.
#[test]
fn an_index_mostly_of_removed_memories_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let slack = 16;
    let mut options = OpenOptions::default().search_index(SearchIndex::Eager);
    options.worn_slack = slack;
    let db = MemoryDb::open_with(dir.path().join("memory.db"), options).unwrap();
    let kept = db
        .add_many(
            (0..20)
                .map(|i| new(&format!("kept fact {i} about deploys")))
                .collect(),
        )
        .unwrap();
    let request = MemorySearchRequest::new(P, "deploys version");
    db.search(&request).unwrap();
    let slots = |db: &MemoryDb| {
        let ix = lock(&db.inner.indexes).get(P).cloned().unwrap();
        let guard = ix.read().unwrap();
        guard.slots()
    };
    assert_eq!(slots(&db), 20);
    let mut most = 0;
    for version in 0..80 {
        let update = MemoryUpdate {
            content: Some(format!("kept fact 0 about deploys, version {version}")),
            ..MemoryUpdate::default()
        };
        db.update(&kept[0].id, update).unwrap();
        db.search(&request).unwrap();
        most = most.max(slots(&db));
    }
    // Caught up while removed slots stay within the slack, rebuilt (back to 20) beyond it.
    assert!(
        most > 20 + slack / 2,
        "the index was rebuilt at {most} slots, not caught up"
    );
    assert!(most <= 2 * 20 + slack + 1, "the index grew to {most} slots");
    let hits = db.search(&request).unwrap();
    assert_eq!(hits[0].entry.content, "kept fact 0 about deploys, version 79");
    assert_eq!(hits.len(), 10);
}

/// A stored vector a model could not have made (a NaN scale) counts as missing, so
/// `embed_missing` recomputes it; a value of the wrong type in the vector column (text) is
/// skipped by every read, never an error, and counts as missing too.
#[test]
fn damaged_and_wrongly_typed_vectors_are_missing_and_never_fail_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let db = MemoryDb::open(&path).unwrap();
    for content in [
        "Deploys run from main",
        "The cache is Redis",
        "Docs are built with mdBook",
        "Tests live in the tests folder",
    ] {
        db.add(new(content)).unwrap();
    }
    let sound = crate::vectors::encode(&[0.6, 0.8]);
    let mut nan = sound.clone();
    nan[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    let conn = Connection::open(&path).unwrap();
    let set = "UPDATE project_memories SET embedding_model = 'm', embedding = ?2 WHERE content = ?1";
    conn.execute(set, rusqlite::params!["Deploys run from main", sound])
        .unwrap();
    conn.execute(set, rusqlite::params!["The cache is Redis", nan])
        .unwrap();
    conn.execute(
        set,
        rusqlite::params!["Docs are built with mdBook", "not a vector"],
    )
    .unwrap();
    let nums: Vec<i64> = conn
        .prepare("SELECT num FROM project_memories ORDER BY num")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();

    let missing = db
        .read(|tx| writer::run_now(tx.missing_vectors(P, "m", 10)))
        .unwrap();
    let missing: Vec<&str> = missing.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        missing,
        [
            "The cache is Redis",
            "Docs are built with mdBook",
            "Tests live in the tests folder"
        ]
    );
    assert_eq!(
        db.read(|tx| writer::run_now(tx.missing_vectors(P, "m", 1)))
            .unwrap()
            .len(),
        1
    );

    let mut stored = crate::vectors::Stored::default();
    let of = crate::search::ByMeaning {
        project: P,
        model: "m",
        limit: 0,
    };
    db.read(|tx| writer::run_now(tx.vectors(of, &nums, &mut stored)))
        .expect("a text value fails no read");
    let near = crate::vectors::nearest(&[0.6, 0.8], &stored, 10);
    assert_eq!(near.best, [nums[0]], "only the sound vector is compared");
    db.write(|tx, _| super::sketches::build_all(tx))
        .expect("a text value fails no write");
}
