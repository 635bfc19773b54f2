//! The cost of reporting a baseline (`tokens_full`: what sending every skill in full would
//! cost) on top of a preview, with a corpus of 650 real skills kept beside the repository, when
//! present (or 1,000 generated ones when it is absent). Target: at most 10 % over a preview
//! without it.
//!
//! Two cases, because the provider counts every body once per index snapshot: `first/…` is the
//! first request a fresh provider answers (what a one-shot `ctxkit context` pays every
//! process), `later/…` a request after that (a long-running agent).

mod support;

use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ctxkit::{Agent, Thread};
use ctxkit_skills::{SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source};

fn library() -> Arc<SkillLibrary> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora");
    if corpus.is_dir() {
        return Arc::new(SkillLibrary::load(vec![SkillRoot::new(corpus, Source::Project)]));
    }
    let dir = tempfile::tempdir().unwrap();
    support::write_skill_files(dir.path(), 1_000);
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        dir.path(),
        Source::Project,
    )]));
    drop(dir);
    library
}

fn baseline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let library = library();
    let agent = |baseline: bool| {
        let builder = Agent::builder()
            .instructions("You are helpful.")
            .provider(SkillContextProvider::new(library.clone(), SkillConfig::default()));
        if baseline {
            builder.report_baseline()
        } else {
            builder
        }
        .build()
        .unwrap()
    };
    let (plain, with_baseline) = (agent(false), agent(true));
    let thread = &Thread::new();
    let message = "Review this pull request and write tests for the API";
    // Warm both for the later requests.
    rt.block_on(plain.preview(thread, message)).unwrap();
    let (_, report) = rt.block_on(with_baseline.preview(thread, message)).unwrap();
    assert!(report.tokens_full.unwrap() > report.tokens.total);

    let mut group = c.benchmark_group("baseline");
    group.sample_size(20);
    for (name, baseline) in [("preview", false), ("preview+tokens_full", true)] {
        group.bench_function(format!("first/{name}"), |b| {
            b.to_async(&rt).iter_batched(
                || agent(baseline),
                // The agent is handed back, so dropping it is not timed.
                |fresh| async move {
                    let answer = fresh.preview(thread, message).await;
                    (fresh, answer)
                },
                BatchSize::PerIteration,
            )
        });
        let warm = if baseline { &with_baseline } else { &plain };
        group.bench_function(format!("later/{name}"), |b| {
            b.to_async(&rt).iter(|| warm.preview(thread, message))
        });
    }
    group.finish();
}

criterion_group!(benches, baseline);
criterion_main!(benches);
