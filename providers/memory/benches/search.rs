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
//! - `memory_search/fts/N`: a process without the in-memory index (`SearchIndex::Off`, e.g. a
//!   CLI command), ranking the best 200 full-text matches.
//!
//! Run: `cargo bench -p ctxkit-memory --bench search`

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_memory::{
    MemoryCategory, MemorySearchRequest, MemoryStore, NewMemoryEntry, OpenOptions, SearchIndex,
    SqliteMemoryStore,
};
use tokio::runtime::Runtime;

const PROJECT: &str = "/bench/project";
const VOCABULARY: usize = 6000;

/// xorshift64*: small, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Pronounceable pseudo-words, one per rank.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ne", "ru", "ta", "zo", "pi", "se", "du", "fa", "gi", "ho", "ju", "be", "co", "vi",
        "wa", "xe", "yo", "qua", "tri", "sto", "pla",
    ];
    let n = SYLLABLES.len();
    (0..VOCABULARY)
        .map(|i| {
            let (a, b, c) = (i % n, (i / n) % n, (i / n / n) % n);
            format!("{}{}{}", SYLLABLES[a], SYLLABLES[b], SYLLABLES[c])
        })
        .collect()
}

/// Samples word ranks with probability ∝ 1 / (rank + 10): Zipf-like with a flattened head.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Self {
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|r| {
                total += 1.0 / (r as f64 + 10.0);
                total
            })
            .collect::<Vec<_>>();
        let last = *cumulative.last().unwrap();
        Zipf {
            cumulative: cumulative.into_iter().map(|c| c / last).collect(),
        }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cumulative
            .partition_point(|&c| c < u)
            .min(self.cumulative.len() - 1)
    }
}

fn sentence(rng: &mut Rng, zipf: &Zipf, words: &[String], min: usize, max: usize) -> String {
    let n = min + rng.below(max - min + 1);
    (0..n)
        .map(|_| words[zipf.sample(rng)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn build(rt: &Runtime, n: usize, path: &std::path::Path) -> SqliteMemoryStore {
    let words = vocabulary();
    let zipf = Zipf::new(words.len());
    let mut rng = Rng(0x5EED_0000 + n as u64);
    let mut seen = std::collections::HashSet::new();
    let mut entries = Vec::with_capacity(n);
    while entries.len() < n {
        let content = sentence(&mut rng, &zipf, &words, 6, 14);
        if !seen.insert(content.clone()) {
            continue;
        }
        let category = MemoryCategory::ALL[rng.below(5)];
        let importance = 0.1 + 0.9 * rng.unit() as f32;
        entries.push(NewMemoryEntry::new(PROJECT, category, content).importance(importance));
    }
    let db = SqliteMemoryStore::open(path).expect("open the bench database");
    let start = Instant::now();
    rt.block_on(db.add_many(entries))
        .expect("load the bench database");
    eprintln!("built {n} memories in {:.2?}", start.elapsed());
    let start = Instant::now();
    rt.block_on(db.warm_up(PROJECT))
        .expect("build the in-memory index");
    eprintln!("indexed {n} memories in memory in {:.2?}", start.elapsed());
    db
}

fn queries() -> Vec<String> {
    let words = vocabulary();
    let zipf = Zipf::new(words.len());
    let mut rng = Rng(0xC0FFEE);
    (0..64)
        .map(|_| {
            format!(
                "how do we handle the {} here?",
                sentence(&mut rng, &zipf, &words, 4, 9)
            )
        })
        .collect()
}

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
        let fts = SqliteMemoryStore::open_with(&path, OpenOptions::default().search_index(SearchIndex::Off))
            .expect("open the bench database again");
        rt.block_on(fts.search(MemorySearchRequest::new(PROJECT, &queries[0])))
            .unwrap();
        let mut i = 0;
        group.bench_with_input(BenchmarkId::new("fts", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let hits = rt
                    .block_on(fts.search(MemorySearchRequest::new(PROJECT, &queries[i])))
                    .expect("search");
                black_box(hits)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
