//! Selection: score, rank, cap, and the ways a skill is
//! selected without its triggers — explicit `$name` / `/name`, `always`, auto-detection and the
//! opt-in lexical fallback.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::index::SkillIndex;
use crate::matcher::Hit;
use ctxkit::text::is_word_char;

/// Why a skill was selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// `$name` or `/name` in the message.
    Explicit,
    /// `always: true`.
    Always,
    /// Its `detect` files were found in the project at session start.
    Detected,
    /// Its triggers fired.
    Triggered,
    /// The lexical fallback scored it (opt-in).
    Lexical,
    /// The message is near its description in meaning (the opt-in semantic fallback, with an
    /// embedding model).
    Semantic,
}

impl Reason {
    /// The name every surface shows (`triggered`, `explicit`, …), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Explicit => "explicit",
            Reason::Always => "always",
            Reason::Detected => "detected",
            Reason::Triggered => "triggered",
            Reason::Lexical => "lexical",
            Reason::Semantic => "semantic",
        }
    }
}

/// One selected skill and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    /// Index into [`SkillIndex::skills`].
    #[serde(skip)]
    pub skill: usize,
    /// The skill's name.
    pub name: String,
    /// Why it was selected.
    pub reason: Reason,
    /// Distinct triggers that fired (for lexical selections, the rounded lexical score).
    pub score: usize,
    /// The triggers that fired, as the skill declares them.
    pub triggers: Vec<String>,
    /// The triggers of [`triggers`](Self::triggers) that fired only as an inflected form, with
    /// the form the message holds (`greet` → `greeted`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub forms: BTreeMap<String, String>,
}

impl Selection {
    /// The triggers that fired, each with the form it fired as when not as written:
    /// `["greet (as greeted)", "french"]`. How every surface explains a selection.
    pub fn fired(&self) -> Vec<String> {
        self.triggers
            .iter()
            .map(|t| match self.forms.get(t) {
                Some(form) => format!("{t} (as {form})"),
                None => t.clone(),
            })
            .collect()
    }
}

/// Knobs of selection.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectOptions {
    /// Cap on trigger-matched (and lexical or semantic) skills; explicit, always and detected skills are
    /// outside it. Default 3.
    pub max_skills: usize,
    /// How many of the latest user messages are matched. Default 1: only the latest, so a
    /// skill is selected for what the user asks now, not for an earlier turn.
    pub window: usize,
    /// Score skills without triggers lexically when slots remain. Default off.
    pub lexical_fallback: bool,
    /// The host's phase: skills whose `inject_into` leaves it out are not selected, not even
    /// by name. Default `None`, every phase.
    pub phase: Option<ctxkit::Phase>,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            max_skills: 3,
            window: 1,
            lexical_fallback: false,
            phase: None,
        }
    }
}

/// Whether `trigger` is an inflected form of another of `fired` (a list that holds `webhook`
/// and `webhooks` counts "webhooks" once).
fn is_form_of_another(trigger: &str, fired: &[String]) -> bool {
    fired
        .iter()
        .any(|base| base != trigger && crate::inflect::is_form(base, trigger))
}

/// Unicode lowercasing, with a fast path for ASCII text (most messages).
fn lowercase(text: &str) -> String {
    if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    }
}

impl SkillIndex {
    /// Select skills for `messages` (the user messages to match, oldest first; usually just the
    /// latest). `detected` lists skills auto-detected for the session.
    pub fn select(&self, messages: &[&str], detected: &[usize], options: &SelectOptions) -> Vec<Selection> {
        let mut out: Vec<Selection> = Vec::new();
        // A skill out of phase counts as taken: nothing selects it.
        let taken = |out: &[Selection], i: usize| {
            !self.skills[i].serves(options.phase) || out.iter().any(|s| s.skill == i)
        };
        let lowered: Vec<String> = messages.iter().map(|m| lowercase(m)).collect();

        for i in lowered.iter().flat_map(|m| self.explicit_in(m)) {
            if !taken(&out, i) && self.skills[i].user_invocable != Some(false) {
                out.push(self.selection(i, Reason::Explicit, 0, Vec::new()));
            }
        }
        for &i in self.always.iter().chain(detected) {
            let reason = if self.skills[i].always {
                Reason::Always
            } else {
                Reason::Detected
            };
            if !taken(&out, i) && !self.skills[i].disable_model_invocation {
                out.push(self.selection(i, reason, 0, Vec::new()));
            }
        }

        let mut hits: Vec<Hit> = Vec::new();
        for m in &lowered {
            self.matcher.collect_hits(&self.skills, m, &mut hits);
        }
        // A trigger that fired as written and as a form is explained as written: `None` sorts
        // first, and dedup keeps the first hit of each trigger.
        hits.sort_unstable();
        hits.dedup_by(|a, b| a.trigger == b.trigger);
        let mut scored: Vec<(usize, Vec<Hit>)> = Vec::new();
        for hit in hits {
            match scored.last_mut() {
                Some((s, t)) if *s == hit.trigger.0 as usize => t.push(hit),
                _ => scored.push((hit.trigger.0 as usize, vec![hit])),
            }
        }
        scored.retain(|(i, _)| !taken(&out, *i) && !self.skills[*i].disable_model_invocation);
        for (i, fired) in &mut scored {
            if fired.len() > 1 {
                let texts: Vec<String> = fired
                    .iter()
                    .map(|h| self.trigger_text(*i, h.trigger.1 as usize).to_lowercase())
                    .collect();
                let mut k = 0;
                fired.retain(|_| {
                    k += 1;
                    !is_form_of_another(&texts[k - 1], &texts)
                });
            }
        }
        scored.sort_by_key(|(i, t)| (std::cmp::Reverse(t.len()), self.rank[*i]));
        for (i, fired) in scored.into_iter().take(options.max_skills) {
            let mut selection = self.selection(i, Reason::Triggered, fired.len(), Vec::new());
            for hit in fired {
                let trigger = self.trigger_text(i, hit.trigger.1 as usize).to_string();
                if let Some(form) = hit.form {
                    selection.forms.insert(trigger.clone(), form);
                }
                selection.triggers.push(trigger);
            }
            out.push(selection);
        }

        let triggered = out.iter().filter(|s| s.reason == Reason::Triggered).count();
        if options.lexical_fallback && triggered < options.max_skills {
            let query = lowered.last().map(String::as_str).unwrap_or("");
            for (i, score) in self
                .lexical()
                .scores(query, &self.rank)
                .into_iter()
                .take(options.max_skills - triggered)
            {
                if !taken(&out, i) {
                    out.push(self.selection(i, Reason::Lexical, score.round() as usize, Vec::new()));
                }
            }
        }
        out
    }

    /// Skills named as `$name` / `/name` in `messages` that declare `user-invocable: false`,
    /// so the name selected nothing: what a match explanation says about them.
    pub fn refused_invocations(&self, messages: &[&str]) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for m in messages {
            let lowered = lowercase(m);
            for i in self.explicit_in(&lowered) {
                let name = self.skills[i].name.as_str();
                if self.skills[i].user_invocable == Some(false) && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    fn selection(&self, skill: usize, reason: Reason, score: usize, triggers: Vec<String>) -> Selection {
        Selection {
            skill,
            name: self.skills[skill].name.clone(),
            reason,
            score,
            triggers,
            forms: BTreeMap::new(),
        }
    }

    /// The text of trigger `t` of skill `i` (literals first, then patterns).
    fn trigger_text(&self, i: usize, t: usize) -> &str {
        self.skills[i].triggers.get(t).unwrap_or_default()
    }

    /// Skills invoked as `$name` or `/name` tokens in a lowercased message, in order.
    fn explicit_in<'a>(&'a self, lowered: &'a str) -> impl Iterator<Item = usize> + 'a {
        memchr::memchr2_iter(b'$', b'/', lowered.as_bytes()).filter_map(move |at| {
            if lowered[..at]
                .chars()
                .next_back()
                .is_some_and(|c| is_word_char(c) || c == '/' || c == '$')
            {
                return None;
            }
            let rest = &lowered[at + 1..];
            let len = rest
                .find(|c: char| !(is_word_char(c) || c == '-'))
                .unwrap_or(rest.len());
            self.by_name.get(rest[..len].trim_end_matches('-')).copied()
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::skill::{Skill, Source};

    const VOCAB: &[&str] = &[
        "hello",
        "hell",
        "othello",
        "c++",
        "c#",
        ".net",
        "docker",
        "docker compose",
        "compose",
        "pod",
        "podcast",
        "sed",
        "used",
        "日本語",
        "語",
        "привет",
        "größe",
        "known_hosts",
        "a",
        "ab",
        "std::vector",
        // Inflections, and words that only look like them.
        "greet",
        "greeted",
        "plot",
        "plotted",
        "plotter",
        "query",
        "queries",
        "translate",
        "translating",
        "translator's",
        "git",
        "digit",
        "test",
        "tests",
        "slow query",
        "slow queries",
        "composes",
        "nets",
        "e",
        "ing",
        "rock'n'roll",
        "rolls",
    ];
    const GLUE: &[&str] = &[" ", "", ", ", "-", "_", "!", "\n", "日", "x", "ПРИ", "."];

    /// A project skill named `name` with the literal `triggers` at `priority`.
    fn skill(name: &str, triggers: &[&str], priority: i64) -> Skill {
        let list: Vec<String> = triggers.iter().map(|t| format!("{t:?}")).collect();
        let text = format!(
            "---\nname: {name}\ndescription: The {name} skill\ntriggers: [{}]\npriority: {priority}\n---\nInstructions of {name}.",
            list.join(", ")
        );
        let (parsed, diags) = Skill::parse(format!("skills/{name}/SKILL.md").as_ref(), &text, Some(name));
        let parsed = parsed.unwrap_or_else(|| panic!("{name} did not parse: {diags:?}"));
        parsed.with_root(Source::Project, 250)
    }

    /// The whole-word rule, written apart from the matcher's: an end of the trigger `t` found at
    /// `i` that is a letter, digit or `_` of a script written with spaces (the test alphabet's
    /// only other script is Han) must not touch a letter, digit or `_` of any script.
    fn stands_alone(text: &str, i: usize, t: &str) -> bool {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let spaced = |c: char| word(c) && !('\u{4e00}'..='\u{9fff}').contains(&c);
        let touches_before =
            t.chars().next().is_some_and(spaced) && text[..i].chars().next_back().is_some_and(word);
        let touches_after =
            t.chars().next_back().is_some_and(spaced) && text[i + t.len()..].chars().next().is_some_and(word);
        !touches_before && !touches_after
    }

    /// Reference: for each skill, for each trigger and each of its inflected forms, scan every
    /// occurrence with `starts_with` and apply the whole-word rule; score = distinct triggers;
    /// rank by score, priority, name.
    fn naive(index: &SkillIndex, message: &str, max: usize) -> Vec<(String, usize)> {
        let lower = message.to_lowercase();
        let mut scored: Vec<(i64, String, usize)> = Vec::new();
        for skill in index.skills() {
            let mut fired_texts: Vec<String> = Vec::new();
            for trigger in skill.triggers.literals() {
                let t = trigger.to_lowercase();
                let text = t.clone();
                let mut forms = crate::inflect::forms(&t);
                forms.push(t);
                let hit = forms.iter().any(|t| {
                    // match_indices skips overlaps of the same needle; check every start instead.
                    (0..lower.len())
                        .filter(|&i| lower.is_char_boundary(i) && lower[i..].starts_with(t.as_str()))
                        .any(|i| stands_alone(&lower, i, t))
                });
                if hit && !fired_texts.contains(&text) {
                    fired_texts.push(text);
                }
            }
            // Listed forms of one another count once.
            let fired = fired_texts
                .iter()
                .filter(|t| {
                    !fired_texts
                        .iter()
                        .any(|b| b != *t && crate::inflect::forms(b).contains(t))
                })
                .count();
            if fired > 0 {
                scored.push((skill.priority, skill.name.clone(), fired));
            }
        }
        scored.sort_by(|a, b| b.2.cmp(&a.2).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)));
        scored.into_iter().take(max).map(|(_, n, s)| (n, s)).collect()
    }

    fn skills_strategy() -> impl Strategy<Value = Vec<(Vec<usize>, i64)>> {
        prop::collection::vec((prop::collection::vec(0..VOCAB.len(), 1..4), 200i64..203), 1..8)
    }

    fn message_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec((0..VOCAB.len(), 0..GLUE.len(), any::<bool>()), 0..12).prop_map(|parts| {
            parts
                .into_iter()
                .map(|(w, g, upper)| {
                    let w = if upper {
                        VOCAB[w].to_uppercase()
                    } else {
                        VOCAB[w].to_string()
                    };
                    format!("{w}{}", GLUE[g])
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The word table agrees with a naive reference implementation of the same rules.
        #[test]
        fn matching_agrees_with_reference(skills in skills_strategy(), message in message_strategy(), max in 1usize..5) {
            let built = skills
                .iter()
                .enumerate()
                .map(|(i, (triggers, priority))| {
                    let words: Vec<&str> = triggers.iter().map(|&t| VOCAB[t]).collect();
                    skill(&format!("s{i}"), &words, *priority)
                })
                .collect();
            let index = SkillIndex::build(built, Vec::new());
            let options = SelectOptions { max_skills: max, ..Default::default() };
            let fast: Vec<(String, usize)> =
                index.select(&[message.as_str()], &[], &options).into_iter().map(|s| (s.name, s.score)).collect();
            let reference = naive(&index, &message, max);
            prop_assert_eq!(fast, reference, "message {:?}", message);
        }
    }
}
