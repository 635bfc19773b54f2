//! Seeded test data shared by the memory benches: memories of 6-14 words drawn from a
//! 6,000-word vocabulary with Zipf-like frequencies (a few words are in many memories, most in
//! few), and queries of 4-9 words from the same distribution, like a user message.

#![allow(dead_code)] // each bench uses part of it

use std::time::Instant;

use ctxkit_memory::{MemoryCategory, MemoryStore, NewMemoryEntry, SqliteMemoryStore};
use tokio::runtime::Runtime;

pub(crate) const PROJECT: &str = "/bench/project";
pub(crate) const VOCABULARY: usize = 6000;

/// xorshift64*: small, seeded, good enough for test data.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Pronounceable pseudo-words, one per rank.
pub(crate) fn vocabulary() -> Vec<String> {
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
pub(crate) struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub(crate) fn new(n: usize) -> Self {
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

    pub(crate) fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cumulative
            .partition_point(|&c| c < u)
            .min(self.cumulative.len() - 1)
    }
}

/// `min..=max` words drawn from `zipf`.
pub(crate) fn sentence(rng: &mut Rng, zipf: &Zipf, words: &[String], min: usize, max: usize) -> String {
    let n = min + rng.below(max - min + 1);
    (0..n)
        .map(|_| words[zipf.sample(rng)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A store at `path` holding `n` distinct memories of [`PROJECT`], its in-memory index built.
pub(crate) fn build(rt: &Runtime, n: usize, path: &std::path::Path) -> SqliteMemoryStore {
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

/// 64 user-message-like queries over the same vocabulary.
pub(crate) fn queries() -> Vec<String> {
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
