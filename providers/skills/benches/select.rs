//! Warm `SkillContextProvider::select` — the selection every surface uses, default config, no
//! model — on 1,000 generated skills that carry only a name, a description and a body of about
//! 6 KB (no triggers, as 88 % of the public corpus), for a 2 KB message that names nothing and
//! one that uses a skill's words. Through the public API, so it measures whatever selection is the default.
//!
//! The project's target (issue 47): ≤ 20 µs per message.

mod support;

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxkit::Message;
use ctxkit_skills::{Skill, SkillConfig, SkillContextProvider, SkillIndex, SkillLibrary, Source};

fn select(c: &mut Criterion) {
    let files = support::described_skills(1_000);
    let skills: Vec<Skill> = files
        .iter()
        .map(|(name, text)| {
            let path = format!("skills/{name}/SKILL.md");
            Skill::parse(path.as_ref(), text, Some(name))
                .0
                .expect("generated skills parse")
                .with_root(Source::Project, 250)
        })
        .collect();
    assert!(skills
        .iter()
        .all(|s| s.triggers.is_empty() && !s.description.is_empty()));
    // The words of one skill's description, mixed into the message.
    let wanted = &skills[500];
    let hits: Vec<String> = wanted
        .description
        .trim_end_matches('.')
        .split(' ')
        .skip(4)
        .map(String::from)
        .collect();
    let library = Arc::new(SkillLibrary::from_index(SkillIndex::build(skills, Vec::new())));
    let provider = SkillContextProvider::new(library.clone(), SkillConfig::default());
    let index = library.snapshot();
    let mut group = c.benchmark_group("select");
    group.sample_size(30);
    for (case, hits) in [("2KB-plain", &[][..]), ("2KB-described", &hits[..])] {
        let messages = [Message::user(support::message(2_048, hits))];
        // Warm: whatever selection builds on first use is built before timing.
        provider.select(&index, &messages, None, None, None);
        group.throughput(Throughput::Bytes(messages[0].content.len() as u64));
        group.bench_function(BenchmarkId::new(case, 1_000), |b| {
            b.iter(|| provider.select(&index, &messages, None, None, None))
        });
    }
    group.finish();
}

criterion_group!(benches, select);
criterion_main!(benches);
