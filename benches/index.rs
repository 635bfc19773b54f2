//! Index build from disk: discovery + parse + dedup + automaton, for 100 and 1,000 generated
//! skills and for a corpus of 650 real skills kept beside the repository, when present.
//! The project's target: ≤ 100 ms for 1,000 skills.

mod support;

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_skills::{SkillIndex, SkillRoot, Source};

fn index(c: &mut Criterion) {
    let mut group = c.benchmark_group("index");
    group.sample_size(20);
    let dir = tempfile::tempdir().unwrap();
    for n in [100usize, 1_000] {
        let root = dir.path().join(n.to_string());
        support::write_skill_files(&root, n);
        let roots = [SkillRoot::new(&root, Source::Project)];
        assert_eq!(SkillIndex::load(&roots).len(), n);
        group.bench_function(BenchmarkId::new("load", n), |b| {
            b.iter(|| SkillIndex::load(&roots))
        });
    }
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora");
    if corpus.is_dir() {
        let roots = [SkillRoot::new(&corpus, Source::External)];
        group.bench_function(BenchmarkId::new("load", "corpus-650"), |b| {
            b.iter(|| SkillIndex::load(&roots))
        });
    } else {
        eprintln!("skipping the corpus bench: {} is absent", corpus.display());
    }
    group.finish();
}

criterion_group!(benches, index);
criterion_main!(benches);
