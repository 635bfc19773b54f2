//! Memory search at 1,000 / 10,000 / 100,000 memories (The project's targets: p50 ≤ 2 ms at
//! 10,000 and ≤ 10 ms at 100,000).
//!
//! Memories are 6-14 words drawn from a 6,000-word vocabulary with Zipf-like frequencies (a
//! few words are in many memories, most in few), built by a seeded PRNG so every run searches
//! the same data. Queries are 4-9 words from the same distribution, like a user message. The
//! measured call is `SqliteMemoryStore::search` with default options (top 10, access counted),
//! i.e. one read transaction plus one small write on tokio's blocking pool, awaited from a
//! current-thread runtime:
//!
//! - `memory_search/N`: a long-running process, the project's in-memory index built;
//! - `memory_search/no_touch/N`: the same without counting the access (no write);
//! - `memory_search/on_disk/N`: a process without the in-memory index (`SearchIndex::Off`,
//!   e.g. a CLI command), ranking the best 200 candidates of the impact-ordered postings.
//!
//! Run: `cargo bench -p ctxkit-memory --bench search`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_memory::{MemorySearchRequest, MemoryStore, OpenOptions, SearchIndex, SqliteMemoryStore};

mod common;
use common::{build, queries, PROJECT};

fn search(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let queries = queries();
    let mut group = c.benchmark_group("memory_search");
    for n in [1_000, 10_000, 100_000] {
        let path = dir.path().join(format!("bench-{n}.db"));
        let db = build(&rt, n, &path);
        // Warm the vocabulary cache the way a long-running agent has it.
        rt.block_on(db.search(MemorySearchRequest::new(PROJECT, &queries[0])))
            .unwrap();
        let mut i = 0;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let hits = rt
                    .block_on(db.search(MemorySearchRequest::new(PROJECT, &queries[i])))
                    .expect("search");
                black_box(hits)
            })
        });
        let mut i = 0;
        group.bench_with_input(BenchmarkId::new("no_touch", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let hits = rt
                    .block_on(db.search(MemorySearchRequest::new(PROJECT, &queries[i]).without_touch()))
                    .expect("search");
                black_box(hits)
            })
        });
        let on_disk =
            SqliteMemoryStore::open_with(&path, OpenOptions::default().search_index(SearchIndex::Off))
                .expect("open the bench database again");
        rt.block_on(on_disk.search(MemorySearchRequest::new(PROJECT, &queries[0])))
            .unwrap();
        let mut i = 0;
        group.bench_with_input(BenchmarkId::new("on_disk", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let hits = rt
                    .block_on(on_disk.search(MemorySearchRequest::new(PROJECT, &queries[i])))
                    .expect("search");
                black_box(hits)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
