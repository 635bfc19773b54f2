//! Composition overhead: a list of 2 or 8 no-op providers against calling them directly.
//! The project's target: ≤ 5 µs of overhead for 2 providers.

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit::{Context, ContextProvider, Message, Result, RunInfo, Section, SectionKind};

struct Noop(&'static str);

#[async_trait]
impl ContextProvider for Noop {
    fn name(&self) -> &str {
        self.0
    }
    async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
        Ok(Context::new().with_section(Section::stable(SectionKind::INSTRUCTIONS, "Be brief.")))
    }
}

const NAMES: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];

fn compose(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let messages = [Message::user("What is 2+2?")];
    let run = RunInfo::default();
    let mut group = c.benchmark_group("compose");
    for n in [2usize, 8] {
        let providers: Vec<Noop> = NAMES[..n].iter().map(|&name| Noop(name)).collect();
        group.bench_with_input(BenchmarkId::new("direct", n), &providers, |b, ps| {
            b.to_async(&rt).iter(|| async {
                let mut out = Vec::with_capacity(ps.len());
                for p in ps {
                    out.push(p.invoking(&messages, &run).await.unwrap());
                }
                out
            })
        });
        group.bench_with_input(BenchmarkId::new("composed", n), &providers, |b, ps| {
            b.to_async(&rt).iter(|| ps.invoking(&messages, &run))
        });
    }
    group.finish();
}

criterion_group!(benches, compose);
criterion_main!(benches);
