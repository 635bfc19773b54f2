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
//!   preferences it may supersede (the in-memory index, above the rules' similarity floor).
//!
//! Run: `cargo bench -p ctxkit-memory --bench add`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_memory::{MemoryCategory, MemoryError, MemoryStore, NewMemoryEntry};

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
    group.finish();
}

criterion_group!(benches, add);
criterion_main!(benches);
