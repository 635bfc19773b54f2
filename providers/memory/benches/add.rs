//! One `add` at 100,000 memories in one project, the in-memory search index on (the project's
//! target: ≤ 1 ms per add).
//!
//! The store holds the seeded memories of `common` and its in-memory index is built, as in a
//! long-running agent. Each iteration adds one new memory through `SqliteMemoryStore::add` on
//! tokio's blocking pool: validation and secret checks, one `BEGIN IMMEDIATE` transaction
//! (row, history, postings, document frequencies, index log), then, once committed, the
//! in-memory index brought up to date in place from the log. So the figure is an honest add:
//! when it returns the index is current — postings, document frequencies and every memory's
//! norm data — and nothing is left for the next search to apply. (A heavy term's share of a
//! norm is added when the norm is read, at every search, which `benches/search.rs` measures;
//! see `sqlite/norms.rs`.) Two cases:
//!
//! - `memory_add/fact/N`: a fact, which never supersedes by similarity;
//! - `memory_add/preference/N`: a preference, which first looks up the similar current
//!   preferences it may supersede (the in-memory index, above the rules' similarity floor);
//! - `memory_add/fact, with the model/N`, when `CTXKIT_EMBEDDINGS` names a sentence-transformers
//!   folder: a fact added through a store that embeds what it writes (halved weights, as the
//!   CLI loads them), its vector and sketch stored in the same transaction (target: ≤ 10 ms).
//!   The model's cost grows with the text's tokens, so these are real project memories (the
//!   evaluation set's 217, 4–23 words, numbered to keep each new) rather than the seeded
//!   made-up words, which split into two or three tokens each.
//!
//! Run: `cargo bench -p ctxkit-memory --bench add` (with `CTXKIT_EMBEDDINGS=DIR` for the third)

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_memory::{
    Embedder, MemoryCategory, MemoryError, MemoryStore, NewMemoryEntry, OpenOptions, SqliteMemoryStore,
};

mod common;
use common::{build, sentence, vocabulary, Rng, Zipf, PROJECT};

const MEMORIES: usize = 100_000;

fn add(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let db = build(&rt, MEMORIES, &dir.path().join("bench-add.db"));
    let words = vocabulary();
    let zipf = Zipf::new(words.len());
    let mut rng = Rng(0xADD5);
    let mut group = c.benchmark_group("memory_add");
    for category in [MemoryCategory::Fact, MemoryCategory::Preference] {
        group.bench_with_input(
            BenchmarkId::new(category.as_str(), MEMORIES),
            &category,
            |b, &category| {
                b.iter(|| loop {
                    let content = sentence(&mut rng, &zipf, &words, 6, 14);
                    let new = NewMemoryEntry::new(PROJECT, category, content).importance(0.5);
                    match rt.block_on(db.add(new)) {
                        // A sentence drawn twice is refused before anything is written; draw again.
                        Err(MemoryError::Duplicate { .. }) => continue,
                        added => break black_box(added.expect("add")),
                    }
                })
            },
        );
    }
    match std::env::var_os("CTXKIT_EMBEDDINGS").map(PathBuf::from) {
        Some(model) => {
            let cache = dir.path().join("model-cache");
            let model = Embedder::load_cached(&model, &cache).expect("the model in CTXKIT_EMBEDDINGS loads");
            let options = OpenOptions::default().embeddings(Arc::new(model));
            let embedding = SqliteMemoryStore::open_with(dir.path().join("bench-add.db"), options)
                .expect("open the bench database with the model");
            rt.block_on(embedding.warm_up(PROJECT))
                .expect("build the in-memory index");
            let memories: Vec<String> = include_str!("../eval/memories.jsonl")
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter_map(|m| Some(m.get("content")?.as_str()?.to_owned()))
                .collect();
            let mut next = 0;
            group.bench_function(BenchmarkId::new("fact, with the model", MEMORIES), |b| {
                b.iter(|| {
                    let content = format!("{} (note {next})", memories[next % memories.len()]);
                    next += 1;
                    let new = NewMemoryEntry::new(PROJECT, MemoryCategory::Fact, content).importance(0.5);
                    black_box(rt.block_on(embedding.add(new)).expect("add"))
                })
            });
        }
        None => eprintln!("skipped: memory_add with the model (set CTXKIT_EMBEDDINGS to a model folder)"),
    }
    group.finish();
}

criterion_group!(benches, add);
criterion_main!(benches);
