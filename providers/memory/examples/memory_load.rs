//! Load figures for the README: memory search at N memories, and writes per second with
//! several writer processes, on SQLite or PostgreSQL (the same data, queries and code path).
//!
//! ```text
//! cargo run --release -p ctxkit-memory --features postgres --example memory_load -- \
//!     --db DB --memories 100000 [--import] [--no-agreement] [--candidates N] [--embeddings DIR] \
//!     [--writers 8 --writes 100]
//! ```
//!
//! `DB` is a SQLite file or a `postgres://` URL (use an empty database). The memories are the
//! benches' seeded data (6-14 words from a 6,000-word Zipf vocabulary, `benches/common`),
//! loaded in transactions of 10,000: through `add_many`, which checks each new memory against
//! similar ones, or with `--import` as minimal import records (what `ctxkit memory import`
//! reads), which only skips exact duplicates and so loads a million in minutes; then 64 user-message-like queries are searched 3 times
//! each (without counting accesses; `--candidates` sets `OpenOptions::candidate_limit`) and the median and 95th percentile reported, with (on
//! SQLite, unless `--no-agreement`) how many of the exhaustive ranking's results the same searches returned (it builds the in-memory index: minutes at a million). With
//! `--writers`, that many processes each add `--writes` memories one command at a time, as
//! agents do, and the total rate is reported.
//!
//! With `--embeddings DIR` (a sentence-transformers folder) searches rank by meaning and words;
//! the first round, which embeds each query, is reported apart from the repeats, whose queries
//! the model remembers (what the store itself costs); the agreement is then with comparing
//! every stored vector exactly (`OpenOptions::vector_candidate_limit(usize::MAX)`) instead of
//! the first pass over the sketches. The memories need their vectors first: `ctxkit --embeddings DIR memory --db DB
//! --project /bench/project reindex`.

#[path = "../benches/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{queries, sentence, vocabulary, Rng, Zipf, PROJECT};
use ctxkit_memory::{
    is_postgres_url, records::ExportRecord, Embedder, MemoryCategory, MemorySearchRequest, MemoryStore,
    NewMemoryEntry, OpenOptions, PostgresStore, SearchIndex, SqliteMemoryStore,
};

const BATCH: usize = 10_000;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

async fn open(db: &str, candidates: Option<usize>, model: Option<&Arc<Embedder>>) -> Arc<dyn MemoryStore> {
    // One-shot processes search the on-disk index, as the CLI does.
    let mut options = OpenOptions::default().search_index(SearchIndex::Off);
    if let Some(n) = candidates {
        options = options.candidate_limit(n);
    }
    if let Some(model) = model {
        options = options.embeddings(model.clone());
    }
    open_with(db, options).await
}

async fn open_with(db: &str, options: OpenOptions) -> Arc<dyn MemoryStore> {
    if is_postgres_url(db) {
        Arc::new(PostgresStore::connect_with(db, options).await.expect("connect"))
    } else {
        Arc::new(SqliteMemoryStore::open_with(db, options).expect("open"))
    }
}

fn shown(db: &str) -> String {
    ctxkit_secrets::redact_url(db)
}

/// How memories are loaded.
#[derive(Clone, Copy)]
enum Loader {
    AddMany,
    Import,
}

async fn load(store: &dyn MemoryStore, n: usize, loader: Loader) {
    let words = vocabulary();
    let zipf = Zipf::new(words.len());
    let mut rng = Rng(0x5EED_0000 + n as u64);
    let mut seen = std::collections::HashSet::new();
    let start = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    let mut loaded = 0;
    while loaded < n {
        let content = sentence(&mut rng, &zipf, &words, 6, 14);
        if !seen.insert(content.clone()) {
            continue;
        }
        let category = MemoryCategory::ALL[rng.below(5)];
        let importance = 0.1 + 0.9 * rng.unit() as f32;
        batch.push((category, content, importance));
        loaded += 1;
        if batch.len() == BATCH || loaded == n {
            let batch = std::mem::take(&mut batch);
            match loader {
                Loader::AddMany => {
                    let entries = batch.into_iter().map(|(category, content, importance)| {
                        NewMemoryEntry::new(PROJECT, category, content).importance(importance)
                    });
                    store.add_many(entries.collect()).await.expect("load a batch");
                }
                Loader::Import => {
                    let lines: String = batch
                        .into_iter()
                        .map(|(category, content, importance)| {
                            let record = serde_json::json!({
                                "content": content,
                                "category": category.as_str(),
                                "importance": importance,
                            });
                            format!("{record}\n")
                        })
                        .collect();
                    let records = ExportRecord::read_jsonl(lines.as_bytes()).expect("records");
                    store
                        .import(records, Some(PROJECT))
                        .await
                        .expect("import a batch");
                }
            }
            eprint!("\rloaded {loaded} of {n}");
        }
    }
    eprintln!("\rloaded {n} memories in {:.1?}", start.elapsed());
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The ids a search returns for each query.
type Found = Vec<Vec<String>>;

/// Search each query three times; with a model the first round, which embeds each query, is
/// reported apart from the repeats, whose queries the model remembers (the store's own cost).
async fn search(store: &dyn MemoryStore, with_model: bool) -> Found {
    let queries = queries();
    let mut rounds = Vec::new();
    let mut found = vec![Vec::new(); queries.len()];
    for _ in 0..3 {
        let mut times = Vec::new();
        for (q, ids) in queries.iter().zip(&mut found) {
            let start = Instant::now();
            let hits = store
                .search(MemorySearchRequest::new(PROJECT, q).without_touch())
                .await
                .expect("search");
            times.push(start.elapsed());
            *ids = hits.into_iter().map(|h| h.entry.id).collect();
        }
        rounds.push(times);
    }
    let results = found.iter().map(Vec::len).sum::<usize>();
    let report = |what: &str, mut times: Vec<Duration>| {
        times.sort();
        println!(
            "{what}: median {:.2?}, p95 {:.2?} over {} searches ({results} results)",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            times.len(),
        );
    };
    if with_model {
        report("search, each query embedded", rounds.remove(0));
        report("search, queries remembered", rounds.concat());
    } else {
        report("search", rounds.concat());
    }
    found
}

/// How much of the exhaustive ranking the search returns: the share of its results found, and
/// the queries whose results are the same, in the same order. Without a model the exhaustive
/// ranking is SQLite's in-memory index (it scores every memory sharing a term with the query);
/// with one, the same store comparing every stored vector with the query.
async fn agreement(db: &str, found: &Found, model: Option<&Arc<Embedder>>) {
    let exhaustive = match model {
        None => open_with(db, OpenOptions::default().search_index(SearchIndex::Eager)).await,
        Some(model) => {
            let options = OpenOptions::default()
                .search_index(SearchIndex::Off)
                .embeddings(model.clone())
                .vector_candidate_limit(usize::MAX);
            open_with(db, options).await
        }
    };
    let queries = queries();
    let (mut shared, mut total, mut same) = (0, 0, 0);
    for (q, ids) in queries.iter().zip(found) {
        let best: Vec<String> = exhaustive
            .search(MemorySearchRequest::new(PROJECT, q).without_touch())
            .await
            .expect("search")
            .into_iter()
            .map(|h| h.entry.id)
            .collect();
        shared += best.iter().filter(|id| ids.contains(id)).count();
        total += best.len();
        same += usize::from(&best == ids);
    }
    let what = if model.is_some() {
        "comparing every vector"
    } else {
        "the exhaustive ranking"
    };
    println!(
        "agreement with {what}: {shared} of its {total} results found ({:.1} %), {same} of {} queries identical",
        100.0 * shared as f64 / total.max(1) as f64,
        queries.len()
    );
}

async fn write_as(store: &dyn MemoryStore, writer: usize, writes: usize) {
    for i in 0..writes {
        let content = format!("writer {writer} records decision {i} about component c{writer}x{i}");
        store
            .add(NewMemoryEntry::new(PROJECT, MemoryCategory::Fact, content))
            .await
            .expect("add");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let db = arg(&args, "--db").expect("--db FILE|URL");
    if let Some(writer) = arg(&args, "--writer-child") {
        let writes = arg(&args, "--writes").and_then(|w| w.parse().ok()).unwrap_or(100);
        let store = open(&db, None, None).await;
        write_as(store.as_ref(), writer.parse().expect("a writer number"), writes).await;
        return;
    }
    let candidates = arg(&args, "--candidates").and_then(|n| n.parse().ok());
    let model = arg(&args, "--embeddings").map(|dir| {
        // Halved weights kept beside the build, as the CLI keeps them in its cache folder.
        let cache = std::env::temp_dir().join("ctxkit-memory-load");
        Arc::new(Embedder::load_cached(std::path::Path::new(&dir), &cache).expect("load the model"))
    });
    let store = open(&db, candidates, model.as_ref()).await;
    if let Some(n) = arg(&args, "--memories").and_then(|n| n.parse().ok()) {
        let before = store.count(PROJECT).await.expect("count");
        if before < n {
            let loader = if args.iter().any(|a| a == "--import") {
                Loader::Import
            } else {
                Loader::AddMany
            };
            load(store.as_ref(), n - before, loader).await;
        }
        println!(
            "{}: {} memories",
            shown(&db),
            store.count(PROJECT).await.expect("count")
        );
        let found = search(store.as_ref(), model.is_some()).await;
        let exhaustive_here = model.is_some() || !is_postgres_url(&db);
        if exhaustive_here && !args.iter().any(|a| a == "--no-agreement") {
            agreement(&db, &found, model.as_ref()).await;
        }
    }
    if let Some(writers) = arg(&args, "--writers").and_then(|w| w.parse::<usize>().ok()) {
        let writes = arg(&args, "--writes").unwrap_or_else(|| "100".into());
        let exe = std::env::current_exe().expect("the example's path");
        let start = Instant::now();
        let children: Vec<_> = (0..writers)
            .map(|w| {
                Command::new(&exe)
                    .args(["--db", &db, "--writer-child", &w.to_string(), "--writes", &writes])
                    .spawn()
                    .expect("start a writer")
            })
            .collect();
        for mut c in children {
            assert!(c.wait().expect("a writer").success(), "a writer failed");
        }
        let total = writers * writes.parse::<usize>().unwrap_or(100);
        let secs = start.elapsed().as_secs_f64();
        println!(
            "writes: {writers} processes × {writes} adds: {total} in {secs:.2} s = {:.0} writes/s",
            total as f64 / secs
        );
    }
}
