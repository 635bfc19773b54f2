//! Scratch calibration harness (not committed).
use ctxkit_skills::{SelectOptions, Skill, SkillIndex, SkillRoot, Source};
use serde_json::Value;
use std::collections::HashMap;

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn cos_file(path: &str, n: usize) -> Vec<Vec<f32>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v = vec![f32::NAN; n];
            for p in l.split(',') {
                let (i, c) = p.split_once(':').unwrap();
                v[i.parse::<usize>().unwrap()] = c.parse().unwrap();
            }
            v
        })
        .collect()
}

fn run(
    name: &str,
    index: &SkillIndex,
    queries: &[Value],
    cos: Option<&[Vec<f32>]>,
    opts: &SelectOptions,
    order: &[usize],
) {
    let (mut n, mut h1, mut r3, mut sel, mut good) = (0, 0, 0, 0, 0);
    let mut silent: HashMap<String, (usize, usize)> = HashMap::new();
    let t = std::time::Instant::now();
    for (qi, q) in queries.iter().enumerate() {
        let text = q["query"].as_str().unwrap();
        let expect: Vec<String> = q["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_lowercase())
            .collect();
        // cosines are per pool order; map to index order
        let m: Option<Vec<f32>> = cos.map(|c| {
            let mut v = vec![f32::NAN; index.len()];
            for (pi, &ii) in order.iter().enumerate() {
                if ii != usize::MAX {
                    v[ii] = c[qi][pi];
                }
            }
            v
        });
        let picked = index.rank(&[text], &[], opts, m.as_deref()).selected;
        let got: Vec<String> = picked.iter().map(|s| s.name.to_lowercase()).collect();
        if std::env::var("SHOW").is_ok()
            && name == "corpus"
            && (expect.is_empty() != got.is_empty()
                || (!expect.is_empty() && !got.first().is_some_and(|g| expect.contains(g))))
        {
            println!(
                "  {:?} exp {:?} got {:?}",
                &text[..text.len().min(70)],
                expect,
                picked
                    .iter()
                    .map(|s| format!("{}({:?},{:.1})", s.name, s.reason, s.evidence.score))
                    .collect::<Vec<_>>()
            );
        }
        if expect.is_empty() {
            let e = silent.entry(q["kind"].as_str().unwrap().to_string()).or_default();
            e.1 += 1;
            if got.is_empty() {
                e.0 += 1;
            }
        } else {
            n += 1;
            if got.first().is_some_and(|g| expect.contains(g)) {
                h1 += 1;
            }
            if got.iter().take(3).any(|g| expect.contains(g)) {
                r3 += 1;
            }
            sel += got.len();
            good += got.iter().filter(|g| expect.contains(g)).count();
        }
    }
    let us = t.elapsed().as_micros() as f64 / queries.len() as f64;
    let mut s: Vec<_> = silent
        .into_iter()
        .map(|(k, (a, b))| format!("{k} {:.2}", a as f64 / b as f64))
        .collect();
    s.sort();
    println!(
        "{name}: h1 {:.3} r3 {:.3} prec {:.3} per {:.2} | silent {} | {us:.0} us",
        h1 as f64 / n as f64,
        r3 as f64 / n as f64,
        good as f64 / sel.max(1) as f64,
        sel as f64 / n as f64,
        s.join(", ")
    );
}

fn main() {
    let floor: f32 = std::env::var("FLOOR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ctxkit_skills::DEFAULT_FLOOR);
    let cut: f32 = std::env::var("CUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ctxkit_skills::DEFAULT_CUT);
    let opts = SelectOptions {
        floor,
        cut,
        ..SelectOptions::default()
    };
    let with_cos = std::env::var("COS").is_ok();
    // BFCL
    let pool = lines("/work/proto/bfcl_pool.jsonl");
    let skills: Vec<Skill> = pool
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            let text = format!(
                "---\nname: {}\ndescription: {}\n---\nx",
                serde_json::to_string(name).unwrap(),
                serde_json::to_string(p["description"].as_str().unwrap()).unwrap()
            );
            let (s, d) = Skill::parse(format!("bfcl/{name}/SKILL.md").as_ref(), &text, Some(name));
            s.unwrap_or_else(|| panic!("{name}: {d:?}"))
                .with_root(Source::Project, 0)
        })
        .collect();
    let index = SkillIndex::build(skills, Vec::new());
    let order: Vec<usize> = pool
        .iter()
        .map(|p| {
            index
                .skills()
                .iter()
                .position(|s| s.name == p["name"].as_str().unwrap())
                .unwrap_or(usize::MAX)
        })
        .collect();
    let cos = with_cos.then(|| cos_file("/work/proto/bfcl_cos.txt", pool.len()));
    run(
        "bfcl",
        &index,
        &lines("/work/proto/bfcl_q.jsonl"),
        cos.as_deref(),
        &opts,
        &order,
    );
    // corpus
    let roots = vec![SkillRoot::new("/work/shared/corpora", Source::Project)];
    let index = SkillIndex::load(&roots);
    let names: Vec<String> = std::fs::read_to_string("/work/proto/corpus_skills.txt")
        .unwrap()
        .lines()
        .map(|l| l.split(": ").next().unwrap().to_string())
        .collect();
    let order: Vec<usize> = names
        .iter()
        .map(|n| {
            index
                .skills()
                .iter()
                .position(|s| &s.name == n)
                .unwrap_or(usize::MAX)
        })
        .collect();
    let cos = with_cos.then(|| cos_file("/work/proto/corpus_cos.txt", names.len()));
    run(
        "corpus",
        &index,
        &lines("/work/data47/corpus_set.jsonl"),
        cos.as_deref(),
        &opts,
        &order,
    );
}
#[allow(dead_code)]
pub fn dump() {}
