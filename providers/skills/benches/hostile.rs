//! Hostile SKILL.md files just under the 1 MiB discovery cap: parse + index build of one skill
//! per case, once with a frontmatter filling the file (refused by the frontmatter cap) and once
//! with a frontmatter just under that cap (every other bound at work). Target: < 100 ms each.

#[path = "../tests/support/hostile.rs"]
mod hostile;

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ctxkit_skills::{Skill, SkillIndex};
use hostile::{AT_CAP, CASES, WHOLE_FILE};

fn load(text: &str) -> SkillIndex {
    let (skill, diags) = Skill::parse(Path::new("skills/hostile/SKILL.md"), text, Some("hostile"));
    SkillIndex::build(skill.into_iter().collect(), diags)
}

fn hostile(c: &mut Criterion) {
    let mut group = c.benchmark_group("hostile");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    for &case in CASES {
        for (size, frontmatter) in [("whole-file", WHOLE_FILE), ("at-cap", AT_CAP)] {
            let text = case.file(frontmatter);
            eprintln!("{}/{size}: {} bytes", case.name(), text.len());
            group.bench_with_input(BenchmarkId::new(case.name(), size), &text, |b, text| {
                b.iter(|| load(text))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, hostile);
criterion_main!(benches);
