//! Index build from disk: discovery + parse + dedup + trigger table, for 100 and 1,000 generated
//! skills and for a corpus of 650 real skills kept beside the repository, when present; and
//! the same through a warm index cache (`load_cached`), which a process started per prompt
//! pays instead, up to 10,000 generated skills. The project's targets: ≤ 100 ms for 1,000
//! skills from disk; a hook's whole process ≤ 15 ms at 650 skills and ≤ 100 ms at 10,000.

mod support;

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_skills::{SkillIndex, SkillLibrary, SkillRoot, Source};

fn index(c: &mut Criterion) {
    let mut group = c.benchmark_group("index");
    group.sample_size(20);
    let dir = tempfile::tempdir().unwrap();
    let mut cached = Vec::new();
    for n in [100usize, 1_000, 10_000] {
        let root = dir.path().join(n.to_string());
        support::write_skill_files(&root, n);
        let roots = vec![SkillRoot::new(&root, Source::Project)];
        if n <= 1_000 {
            assert_eq!(SkillIndex::load(&roots).len(), n);
            group.bench_function(BenchmarkId::new("load", n), |b| {
                b.iter(|| SkillIndex::load(&roots))
            });
        }
        cached.push((n.to_string(), roots));
    }
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora");
    if corpus.is_dir() {
        let roots = vec![SkillRoot::new(&corpus, Source::External)];
        group.bench_function(BenchmarkId::new("load", "corpus-650"), |b| {
            b.iter(|| SkillIndex::load(&roots))
        });
        cached.push(("corpus-650".to_string(), roots));
    } else {
        eprintln!("skipping the corpus bench: {} is absent", corpus.display());
    }

    // What a new process does with a warm cache: load it, then match one message.
    std::thread::sleep(Duration::from_millis(2100)); // files this new are not cached yet
    let cache = dir.path().join("cache");
    for (name, roots) in cached {
        let warm = SkillLibrary::load_cached(roots.clone(), &cache);
        let n = warm.snapshot().len();
        assert!(n > 0);
        group.bench_function(BenchmarkId::new("load_cached+match", name), |b| {
            b.iter(|| {
                let library = SkillLibrary::load_cached(roots.clone(), &cache);
                let index = library.snapshot();
                index.select(&["please review the deployment"], &[], &Default::default())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, index);
criterion_main!(benches);
