//! Skill matching + selection + injection (`SkillContextProvider::invoking`, hybrid mode) at
//! 10 to 10,000 skills, on 200-byte and 2 KB messages, with and without hits — beside two
//! baselines of the same selection rules, each given every trigger's inflected forms: the
//! straightforward loop (for each skill, for each trigger and form, search the message) and a
//! `RegexSet` of `\b`-wrapped alternations. `memchr-floor` is the floor under any matcher:
//! reading the message once at SIMD speed (looking for a byte it does not hold).
//!
//! The project's targets: p50 ≤ 20 µs at 1,000 skills and ≤ 100 µs at 10,000 on a 2 KB message.

mod support;

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxkit::{ContextProvider, Message, RunInfo};
use ctxkit_skills::inflect::forms;
use ctxkit_skills::{
    SelectOptions, Skill, SkillConfig, SkillContextProvider, SkillIndex, SkillLibrary, Source,
};
use regex::RegexSetBuilder;

fn build_index(n: usize) -> (SkillIndex, Vec<String>) {
    let files = support::skill_files(n);
    let hits: Vec<String> = {
        let mut h = support::triggers_of(&files[n / 2].1)[..2].to_vec();
        h.push(support::triggers_of(&files[n / 3].1)[8].clone());
        // One trigger fires as an inflected form.
        h.push(format!("{}s", support::triggers_of(&files[n / 4].1)[3]));
        h
    };
    let skills = files
        .iter()
        .map(|(name, text)| {
            let path = format!("skills/{name}/SKILL.md");
            let parsed = Skill::parse(path.as_ref(), text, Some(name))
                .0
                .expect("generated skills parse");
            parsed.with_root(Source::Project, 250)
        })
        .collect();
    (SkillIndex::build(skills, Vec::new()), hits)
}

/// Whether `text[start..end]` has no letter, digit or `_` on either side: the whole-word rule
/// for triggers that begin and end with a letter, as every generated trigger does.
fn whole_word(text: &str, start: usize, end: usize) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !word(text[..start].chars().next_back()) && !word(text[end..].chars().next())
}

/// A lowercased trigger and its inflected forms.
fn with_forms(trigger: &str) -> Vec<String> {
    let t = trigger.to_lowercase();
    let mut all = forms(&t);
    all.insert(0, t);
    all
}

/// The straightforward algorithm with the same rules: every trigger of every skill, and each
/// of its forms, searched in turn.
fn adr_loop(index: &SkillIndex, message: &str, max: usize) -> Vec<usize> {
    let lower = message.to_lowercase();
    let mut scored: Vec<(usize, usize)> = Vec::new();
    for (i, skill) in index.skills().iter().enumerate() {
        let mut score = 0;
        for trigger in skill.triggers.literals() {
            score += usize::from(with_forms(trigger).iter().any(|t| {
                lower
                    .match_indices(t.as_str())
                    .any(|(at, _)| whole_word(&lower, at, at + t.len()))
            }));
        }
        if score > 0 {
            scored.push((i, score));
        }
    }
    rank(index, scored, max)
}

fn rank(index: &SkillIndex, mut scored: Vec<(usize, usize)>, max: usize) -> Vec<usize> {
    let s = index.skills();
    scored.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(s[b.0].priority.cmp(&s[a.0].priority))
            .then(s[a.0].name.cmp(&s[b.0].name))
    });
    scored.into_iter().take(max).map(|(i, _)| i).collect()
}

/// A `RegexSet` of `\b`-wrapped triggers, each an alternation of the trigger and its forms,
/// built once; matches are mapped back to skills.
struct RegexBaseline {
    set: regex::RegexSet,
    owner: Vec<usize>,
}

impl RegexBaseline {
    fn new(index: &SkillIndex) -> Option<Self> {
        let mut patterns = Vec::new();
        let mut owner = Vec::new();
        for (i, skill) in index.skills().iter().enumerate() {
            for t in skill.triggers.literals() {
                let forms: Vec<String> = with_forms(t).iter().map(|f| regex::escape(f)).collect();
                patterns.push(format!(r"\b(?:{})\b", forms.join("|")));
                owner.push(i);
            }
        }
        let set = RegexSetBuilder::new(&patterns)
            .case_insensitive(true)
            .size_limit(1 << 30)
            .dfa_size_limit(1 << 30)
            .build()
            .ok()?;
        Some(RegexBaseline { set, owner })
    }

    fn select(&self, index: &SkillIndex, message: &str, max: usize) -> Vec<usize> {
        let mut scored: Vec<(usize, usize)> = Vec::new();
        for p in self.set.matches(message).iter() {
            match scored.last_mut() {
                Some((i, n)) if *i == self.owner[p] => *n += 1,
                _ => scored.push((self.owner[p], 1)),
            }
        }
        rank(index, scored, max)
    }
}

fn matching(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("matching");
    group.sample_size(30);
    for n in [10usize, 100, 1_000, 10_000] {
        let (index, hits) = build_index(n);
        let regex = if n <= 1_000 {
            RegexBaseline::new(&index)
        } else {
            None
        };
        let library = Arc::new(SkillLibrary::from_index(index));
        let provider = SkillContextProvider::new(library.clone(), SkillConfig::default());
        let index = library.snapshot();
        for (size, label) in [(200usize, "200B"), (2_048, "2KB")] {
            for hit in [false, true] {
                let text = support::message(size, if hit { &hits } else { &[] });
                let case = format!("{label}-{}/{n}", if hit { "hit" } else { "miss" });
                let messages = [Message::user(text.clone())];
                let run = RunInfo::default();
                // The provider and the baselines must agree before they are timed.
                let options = SelectOptions::default();
                let selected: Vec<usize> = index
                    .select(&[text.as_str()], &[], &options)
                    .iter()
                    .map(|s| s.skill)
                    .collect();
                assert_eq!(
                    adr_loop(&index, &text, 3),
                    selected,
                    "ADR baseline disagrees on {case}"
                );
                assert_eq!(selected.is_empty(), !hit, "{case}");
                group.throughput(Throughput::Bytes(text.len() as u64));
                if n == 10 && !hit {
                    // The floor depends on the message's size only.
                    let absent = (0..=255u8).find(|b| !text.as_bytes().contains(b)).unwrap_or(0);
                    group.bench_function(BenchmarkId::new("memchr-floor", label), |b| {
                        b.iter(|| memchr::memchr(absent, std::hint::black_box(text.as_bytes())))
                    });
                }
                group.bench_function(BenchmarkId::new("ctxkit-invoking", &case), |b| {
                    b.to_async(&rt).iter(|| provider.invoking(&messages, &run))
                });
                group.bench_function(BenchmarkId::new("ctxkit-select", &case), |b| {
                    b.iter(|| index.select(&[text.as_str()], &[], &options))
                });
                if n <= 1_000 {
                    group.bench_function(BenchmarkId::new("adr-loop", &case), |b| {
                        b.iter(|| adr_loop(&index, &text, 3))
                    });
                } else {
                    // One pass over 100,000 triggers takes milliseconds; sample it lightly.
                    group.sample_size(10);
                    group.bench_function(BenchmarkId::new("adr-loop", &case), |b| {
                        b.iter(|| adr_loop(&index, &text, 3))
                    });
                    group.sample_size(30);
                }
                if let Some(regex) = &regex {
                    assert_eq!(
                        regex.select(&index, &text.to_lowercase(), 3),
                        selected,
                        "regex baseline disagrees on {case}"
                    );
                    group.bench_function(BenchmarkId::new("regexset", &case), |b| {
                        b.iter(|| regex.select(&index, &text.to_lowercase(), 3))
                    });
                }
            }
        }
    }
    group.finish();
}

criterion_group!(benches, matching);
criterion_main!(benches);
