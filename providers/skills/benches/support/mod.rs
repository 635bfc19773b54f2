//! Deterministic skill and message generators shared by the benches.
#![allow(dead_code)]

use std::fmt::Write;

/// A tiny deterministic PRNG (SplitMix64), so every run benches the same data.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "qua", "bri", "dex", "fon", "gul", "hra",
    "jin", "kor", "lum", "mar", "nix", "ost", "pel", "rin", "sol", "tur", "ulm", "vor", "wex", "yar",
];

/// A pseudo-word of 3-4 syllables: plenty of distinct triggers, none an English word.
pub(crate) fn word(rng: &mut Rng) -> String {
    let n = 3 + rng.below(2);
    (0..n).map(|_| SYLLABLES[rng.below(SYLLABLES.len())]).collect()
}

/// Write `n` generated skills (see [`skill_files`]) as folders under `root`.
pub(crate) fn write_skill_files(root: &std::path::Path, n: usize) {
    for (name, text) in skill_files(n) {
        let folder = root.join(&name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
    }
}

/// `n` skills with 10 triggers each (8 keywords, 2 two-word phrases), as SKILL.md texts.
pub(crate) fn skill_files(n: usize) -> Vec<(String, String)> {
    let mut rng = Rng::new(42);
    (0..n)
        .map(|i| {
            let name = format!("skill-{i:05}");
            let mut triggers: Vec<String> = (0..8).map(|_| word(&mut rng)).collect();
            triggers.push(format!("{} {}", word(&mut rng), word(&mut rng)));
            triggers.push(format!("{} {}", word(&mut rng), word(&mut rng)));
            let mut body = format!("# {name}\n\n");
            for line in 0..40 {
                let _ = writeln!(body, "{line}. Follow step {line} carefully and check the output before going on.");
            }
            let text = format!(
                "---\nname: {name}\ndescription: Generated skill {i} for benchmarks\ntriggers: [{}]\n---\n{body}",
                triggers.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")
            );
            (name, text)
        })
        .collect()
}

/// The triggers of the generated skill `i` (to build messages that hit).
pub(crate) fn triggers_of(text: &str) -> Vec<String> {
    let line = text.lines().find(|l| l.starts_with("triggers:")).unwrap_or("");
    line.trim_start_matches("triggers: [")
        .trim_end_matches(']')
        .split(", ")
        .map(|t| t.trim_matches('"').to_string())
        .collect()
}

const FILLER: &[&str] = &[
    "please", "review", "the", "change", "and", "tell", "me", "whether", "it", "handles", "errors", "in",
    "a", "way", "that", "our", "users", "would", "expect", "from", "this", "library", "today", "with",
    "care",
];

/// A message of about `bytes` bytes of ordinary words; with `hits`, trigger phrases are mixed in.
pub(crate) fn message(bytes: usize, hits: &[String]) -> String {
    let mut rng = Rng::new(7);
    let mut out = String::with_capacity(bytes + 64);
    let mut next_hit = 0;
    while out.len() < bytes {
        if !hits.is_empty() && next_hit < hits.len() && rng.below(12) == 0 {
            out.push_str(&hits[next_hit]);
            next_hit += 1;
        } else {
            out.push_str(FILLER[rng.below(FILLER.len())]);
        }
        out.push(if rng.below(10) == 0 { ',' } else { ' ' });
    }
    // Make sure every hit made it in.
    for h in &hits[next_hit.min(hits.len())..] {
        out.push_str(h);
        out.push(' ');
    }
    out
}

const TOPICS: &[&str] = &[
    "deploy",
    "database",
    "migration",
    "invoice",
    "review",
    "testing",
    "docker",
    "kubernetes",
    "payment",
    "schema",
    "security",
    "audit",
    "report",
    "chart",
    "email",
    "calendar",
    "search",
    "cache",
    "queue",
    "upload",
    "image",
    "video",
    "translate",
    "summarize",
    "refactor",
    "debug",
    "profile",
    "monitor",
];

/// `n` skills as agentskills.io writes most of them: a name and a one-sentence description
/// (ordinary words, a few topic words, two pseudo-words), no triggers, and a body of about
/// 6 KB (the public corpus's mean).
pub(crate) fn described_skills(n: usize) -> Vec<(String, String)> {
    let mut rng = Rng::new(47);
    (0..n)
        .map(|i| {
            let name = format!("{}-{}", TOPICS[rng.below(TOPICS.len())], word(&mut rng));
            let mut words: Vec<String> = vec!["Use".into(), "when".into(), "the".into(), "user".into()];
            for _ in 0..12 {
                words.push(match rng.below(4) {
                    0 => TOPICS[rng.below(TOPICS.len())].to_string(),
                    1 => word(&mut rng),
                    _ => FILLER[rng.below(FILLER.len())].to_string(),
                });
            }
            let text = format!(
                "---\nname: {name}-{i}\ndescription: \"{}.\"\n---\n{}",
                words.join(" "),
                body(&name, &mut rng)
            );
            (format!("{name}-{i}"), text)
        })
        .collect()
}

/// A skill's Markdown body of about 6 KB: headings and lines of ordinary, topic and
/// pseudo-words, as a body mixes everyday words with the few its skill is about.
fn body(name: &str, rng: &mut Rng) -> String {
    let mut out = format!("# {name}\n");
    for line in 0..60 {
        if line % 10 == 0 {
            let _ = write!(out, "\n## {} {}\n\n", TOPICS[rng.below(TOPICS.len())], word(rng));
        }
        let words: Vec<String> = (0..14)
            .map(|_| match rng.below(4) {
                0 => TOPICS[rng.below(TOPICS.len())].to_string(),
                1 => word(rng),
                _ => FILLER[rng.below(FILLER.len())].to_string(),
            })
            .collect();
        let _ = writeln!(out, "{}.", words.join(" "));
    }
    out
}
