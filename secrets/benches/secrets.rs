//! Secret checks, which every memory write and every redaction runs: one ordinary field, and
//! 280 KB of long near misses (every rule is a `regex` automaton, so the cost stays linear).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxkit_secrets::{find_secret, redact};

fn secrets(c: &mut Criterion) {
    let mut group = c.benchmark_group("secrets");
    let field = "Always run the integration tests with pnpm before pushing to main";
    group.throughput(Throughput::Bytes(field.len() as u64));
    group.bench_function("find/field", |b| b.iter(|| find_secret(black_box(field))));
    let hostile = format!(
        "{} {} {}",
        "password ".repeat(20_000),
        "aws ".repeat(20_000),
        "A".repeat(100_000)
    );
    group.throughput(Throughput::Bytes(hostile.len() as u64));
    group.sample_size(10);
    group.bench_function("find/hostile-280KB", |b| {
        b.iter(|| find_secret(black_box(&hostile)))
    });
    group.bench_function("redact/hostile-280KB", |b| b.iter(|| redact(black_box(&hostile))));
    group.finish();
}

criterion_group!(benches, secrets);
criterion_main!(benches);
