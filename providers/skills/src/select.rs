//! Selection: one ranking over the evidence each skill offers, and the ways a skill is selected
//! outside it — explicit `$name` / `/name`, `always` and auto-detection.
//!
//! The ranking adds up, per skill, in units of a rare word of the library:
//! - each trigger that fired: [`TRIGGER_WEIGHT`], strong evidence: a trigger alone selects its
//!   skill, as it always did, whatever the floor and the cut say;
//! - the message's words found in the skill's name, description, `when_to_use`, tags and,
//!   weakest, its body (see `rank`), less its `when_not_to_use` words;
//! - with an embedding model, the message's nearness in meaning to the name and description
//!   ([`MEANING_WEIGHT`] per unit of cosine above [`MEANING_ZERO`]).
//!
//! Nothing is selected by words or meaning unless the best skill reaches the
//! [floor](SelectOptions::floor) (a higher [one](SelectOptions::meaning_floor) when meaning
//! takes part), so a message no skill serves selects nothing. Then a skill no trigger selected
//! needs a score within the [cut](SelectOptions::cut) of the best one's, so one clear winner is
//! sent alone; two of the message's words (or one rare word of its name); and one of them
//! outside its body (a body supports a selection but never makes one: in a small library
//! every body word is rare).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::index::SkillIndex;
use crate::matcher::Hit;
use crate::rank::SkillWords;
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
    /// The message's words are in its name, description, tags or body.
    Lexical,
    /// The message is near its name and description in meaning (with an embedding model):
    /// meaning gave more of its score than words did.
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
    /// Distinct triggers that fired (for a skill selected by words or meaning, its rounded
    /// [`Evidence::score`]).
    pub score: usize,
    /// The triggers that fired, as the skill declares them.
    pub triggers: Vec<String>,
    /// The triggers of [`triggers`](Self::triggers) that fired only as an inflected form, with
    /// the form the message holds (`greet` → `greeted`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub forms: BTreeMap<String, String>,
    /// What the ranking saw (empty for explicit, always and detected skills).
    pub evidence: Evidence,
}

/// What counted for a skill in the ranking: how every surface explains a selection or a
/// near miss.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// The skill's score: triggers, words and meaning together, in units of a rare word.
    pub score: f32,
    /// The floor the best skill had to reach for any skill to be selected by words or meaning.
    pub floor: f32,
    /// The message's words found in the skill's name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub name_words: Vec<String>,
    /// The message's words found in its description, `when_to_use` or tags.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub description_words: Vec<String>,
    /// The message's words found only in its body (the weakest evidence: a third of a
    /// description word, and less the longer the body).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub body_words: Vec<String>,
    /// The cosine of the message with the name and description (with an embedding model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meaning: Option<f32>,
    /// Words of its `when_not_to_use` the message holds: they lowered the score.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub against: Vec<String>,
}

/// A skill the ranking considered and left out, and why: what `--explain` shows beside the
/// selection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NearMiss {
    /// The skill's name.
    pub name: String,
    /// Why it was left out: `below the floor`, `far below the best`, `only its body's words`,
    /// `one common word`, or `past the cap`.
    pub why: &'static str,
    /// What counted.
    pub evidence: Evidence,
}

/// A selection with the skills that nearly made it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ranking {
    /// The selected skills, as [`SkillIndex::select`] returns them.
    pub selected: Vec<Selection>,
    /// The best-scored skills left out (at most five), best first.
    pub near: Vec<NearMiss>,
}

/// How much one trigger that fired counts, in units of a rare word (a trigger alone selects its
/// skill whatever the floor and the cut say).
pub const TRIGGER_WEIGHT: f32 = 2.0;
/// The score the best skill needs for any skill to be selected by words or meaning (see the
/// module docs). Calibrated with
/// `ctxkit bench select` (the figures are in the README): on the 650 public skills' labelled
/// set, every chit-chat message selects nothing; on BFCL's pooled functions, half of the
/// irrelevance requests select nothing, without a model.
pub const DEFAULT_FLOOR: f32 = 1.5;
/// The floor when an embedding model adds meaning: every skill then gets some evidence, so the
/// bar is higher. Calibrated the same way: with all-MiniLM-L6-v2, half of BFCL's irrelevance
/// requests select nothing, and so do 65 % of the labelled set's everyday sentences (52 % at
/// [`DEFAULT_FLOOR`]).
pub const DEFAULT_MEANING_FLOOR: f32 = 2.0;
/// A skill no trigger fired for must score this share of the best skill's score.
pub const DEFAULT_CUT: f32 = 0.75;
/// A skill matched by one word of the message needs it in its name, at least this rare.
const RARE_NAME_WORD: f32 = 0.7;
/// With an embedding model: a cosine at or below this adds nothing (all-MiniLM-L6-v2 gives
/// unrelated texts 0.0-0.3).
pub const MEANING_ZERO: f32 = 0.35;
/// With an embedding model: what each unit of cosine above [`MEANING_ZERO`] adds, so a
/// cosine of 0.5 adds the floor.
pub const MEANING_WEIGHT: f32 = 10.0;

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
    /// Cap on the skills sent: always-on and detected skills first, then those ranked by
    /// triggers, words or meaning. A skill the user named (`$name`, `/name`) is outside it.
    /// Those past it are listed as [`PAST_THE_CAP`]. Default 3.
    pub max_skills: usize,
    /// How many of the latest user messages are matched. Default 1: only the latest, so a
    /// skill is selected for what the user asks now, not for an earlier turn.
    pub window: usize,
    /// Whether a skill may be selected by its name, description and tags (and meaning), not
    /// only by its triggers. Default on.
    pub by_description: bool,
    /// The score the best skill needs for any skill to be selected by words or meaning.
    /// Default [`DEFAULT_FLOOR`].
    pub floor: f32,
    /// The same when meaning takes part (an embedding model gave cosines). Default
    /// [`DEFAULT_MEANING_FLOOR`].
    pub meaning_floor: f32,
    /// The share of the best score such a skill needs. Default [`DEFAULT_CUT`].
    pub cut: f32,
    /// The host's phase: skills whose `inject_into` leaves it out are not selected, not even
    /// by name. Default `None`, every phase.
    pub phase: Option<ctxkit::Phase>,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            max_skills: 3,
            window: 1,
            by_description: true,
            floor: DEFAULT_FLOOR,
            meaning_floor: DEFAULT_MEANING_FLOOR,
            cut: DEFAULT_CUT,
            phase: None,
        }
    }
}

/// How many skills left out a ranking shows.
pub(crate) const NEAR_MISSES: usize = 5;

/// Why a skill that would have been sent was not: the cap was full.
pub const PAST_THE_CAP: &str = "past the cap";

/// A skill the ranking weighs: its triggers that fired, what its words gave, what meaning gave.
struct Candidate {
    skill: usize,
    fired: Vec<Hit>,
    /// Triggers and words.
    score: f32,
    /// Meaning (0 without a model).
    meaning: f32,
}

impl Candidate {
    fn total(&self) -> f32 {
        self.score + self.meaning
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
        self.ranking(messages, detected, options, None, 0).selected
    }

    /// Select as [`select`](Self::select) does, with the message's cosine with each skill's
    /// name and description when an embedding model gave them (`meaning[i]` for skill `i`,
    /// NaN where unknown), and the skills that nearly made it.
    pub fn rank(
        &self,
        messages: &[&str],
        detected: &[usize],
        options: &SelectOptions,
        meaning: Option<&[f32]>,
    ) -> Ranking {
        self.ranking(messages, detected, options, meaning, NEAR_MISSES)
    }

    /// [`rank`](Self::rank) with at most `near_misses` near misses (none: selection alone
    /// builds no evidence it would throw away).
    pub(crate) fn ranking(
        &self,
        messages: &[&str],
        detected: &[usize],
        options: &SelectOptions,
        meaning: Option<&[f32]>,
        near_misses: usize,
    ) -> Ranking {
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
        // Always-on and detected skills count against the cap (a skill the user named does
        // not: they asked for it); those past it are left out, and said so.
        let mut near: Vec<NearMiss> = Vec::new();
        let mut ranked = 0;
        for &i in self.always.iter().chain(detected) {
            let reason = if self.skills[i].always {
                Reason::Always
            } else {
                Reason::Detected
            };
            if taken(&out, i) || self.skills[i].disable_model_invocation {
                continue;
            }
            if ranked >= options.max_skills {
                near.push(NearMiss {
                    name: self.skills[i].name.clone(),
                    why: PAST_THE_CAP,
                    evidence: Evidence::default(),
                });
                continue;
            }
            out.push(self.selection(i, reason, 0, Vec::new()));
            ranked += 1;
        }

        // Every skill some evidence reached: triggers, words, meaning.
        let words = options.by_description.then(|| {
            let ranker = self.ranker();
            (
                ranker,
                ranker.score(&self.words_text(messages, &lowered), self.skills.len()),
            )
        });
        let mut fired = self.fired(&lowered);
        let meaning = meaning.filter(|_| options.by_description);
        let floor = if meaning.is_some() {
            options.meaning_floor
        } else {
            options.floor
        };
        let n = self.skills.len();
        let meaning_of = |i: usize| {
            meaning
                .and_then(|m| m.get(i))
                .map_or(0.0, |&cosine| (MEANING_WEIGHT * (cosine - MEANING_ZERO)).max(0.0))
        };
        let trigger_weight = |hits: &[Hit]| TRIGGER_WEIGHT * hits.len() as f32;
        // Each skill's total, in one pass per kind of evidence; none reached it: -∞.
        let mut totals = words
            .as_ref()
            .map_or_else(|| vec![f32::NEG_INFINITY; n], |(_, scores)| scores.skills.clone());
        let add = |total: &mut f32, x: f32| {
            *total = if *total == f32::NEG_INFINITY {
                x
            } else {
                *total + x
            };
        };
        for (i, hits) in &fired {
            add(&mut totals[*i], trigger_weight(hits));
        }
        if meaning.is_some() {
            for (i, total) in totals.iter_mut().enumerate() {
                let m = meaning_of(i);
                if m > 0.0 {
                    add(total, m);
                }
            }
        }
        // Only the best few can be selected or shown as near misses: as many as the cap and
        // the near misses allow, beside every triggered skill. They are kept in order as the
        // skills go by, so most skills cost one comparison.
        let triggered = fired.iter().filter(|(i, _)| !taken(&out, *i)).count();
        let keep = triggered
            .saturating_add(options.max_skills)
            .saturating_add(NEAR_MISSES);
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0).then(self.rank[a.1].cmp(&self.rank[b.1]))
        };
        let mut pool: Vec<(f32, usize)> = Vec::with_capacity(keep.min(n) + 1);
        // The last kept score once the pool is full: most skills fall below it.
        let mut bar = f32::NEG_INFINITY;
        for (i, &total) in totals.iter().enumerate() {
            if total < bar || total == f32::NEG_INFINITY {
                continue;
            }
            let entry = (total, i);
            if let Some(last) = pool.last().filter(|_| pool.len() == keep) {
                if order(last, &entry).is_le() {
                    continue;
                }
            }
            let at = pool.partition_point(|kept| order(kept, &entry).is_lt());
            if at < keep && !taken(&out, i) && !self.skills[i].disable_model_invocation {
                pool.insert(at, entry);
                pool.truncate(keep);
                if pool.len() == keep {
                    bar = pool[keep - 1].0;
                }
            }
        }
        let best = pool.first().map_or(0.0, |&(t, _)| t.max(0.0));
        let candidates = pool.into_iter().map(|(_, i)| {
            let score = words.as_ref().map_or(0.0, |(_, s)| s.score_of(i));
            let hits = fired
                .iter_mut()
                .find(|(s, _)| *s == i)
                .map(|(_, hits)| std::mem::take(hits))
                .unwrap_or_default();
            Candidate {
                skill: i,
                score: trigger_weight(&hits) + score,
                meaning: meaning_of(i),
                fired: hits,
            }
        });

        for c in candidates {
            let why = if !c.fired.is_empty() {
                None
            } else if best < floor {
                // The floor decides whether anything is sent; the cut, what comes with the best.
                Some("below the floor")
            } else if c.total() < options.cut * best {
                Some("far below the best")
            } else if c.meaning >= floor / 2.0 {
                None
            } else {
                // Counted only for a skill that got this far.
                let w = words
                    .as_ref()
                    .map_or(SkillWords::default(), |(ranker, s)| ranker.evidence(s, c.skill));
                if w.described == 0 {
                    // A body supports a selection but never makes one.
                    Some("only its body's words")
                } else if !(w.matched >= 2 || w.rare_name >= RARE_NAME_WORD) {
                    Some("one common word")
                } else {
                    None
                }
            };
            let why = why.or((ranked >= options.max_skills).then_some(PAST_THE_CAP));
            // A skill past the cap is always listed: it would have been sent.
            if why.is_some_and(|w| w != PAST_THE_CAP) && near.len() >= near_misses {
                continue;
            }
            let found = match &words {
                Some((ranker, scores)) => ranker.words_of(scores, c.skill),
                None => Default::default(),
            };
            let evidence = Evidence {
                score: c.total(),
                floor,
                name_words: found.name,
                description_words: found.description,
                body_words: found.body,
                meaning: meaning
                    .and_then(|m| m.get(c.skill))
                    .copied()
                    .filter(|m| !m.is_nan()),
                against: found.against,
            };
            if let Some(why) = why {
                near.push(NearMiss {
                    name: self.skills[c.skill].name.clone(),
                    why,
                    evidence,
                });
                continue;
            }
            ranked += 1;
            let reason = if !c.fired.is_empty() {
                Reason::Triggered
            } else if c.meaning > c.score {
                Reason::Semantic
            } else {
                Reason::Lexical
            };
            let score = if c.fired.is_empty() {
                c.total().round() as usize
            } else {
                c.fired.len()
            };
            let mut selection = self.selection(c.skill, reason, score, Vec::new());
            for hit in c.fired {
                let trigger = self.trigger_text(c.skill, hit.trigger.1 as usize).to_string();
                if let Some(form) = hit.form {
                    selection.forms.insert(trigger.clone(), form);
                }
                selection.triggers.push(trigger);
            }
            selection.evidence = evidence;
            out.push(selection);
        }
        Ranking { selected: out, near }
    }

    /// The skills whose triggers fired on the `lowered` messages, each with its distinct hits
    /// (a trigger listed with its own inflected form counts once).
    fn fired(&self, lowered: &[String]) -> Vec<(usize, Vec<Hit>)> {
        let mut hits: Vec<Hit> = Vec::new();
        for m in lowered {
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
        scored
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
            evidence: Evidence::default(),
        }
    }

    /// The text of trigger `t` of skill `i` (literals first, then patterns).
    fn trigger_text(&self, i: usize, t: usize) -> &str {
        self.skills[i].triggers.get(t).unwrap_or_default()
    }

    /// Skills invoked as `$name` or `/name` tokens in a lowercased message, in order.
    fn explicit_in<'a>(&'a self, lowered: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.invocations_in(lowered).map(|(_, skill)| skill)
    }

    /// The `$name` / `/name` tokens of a lowercased message that name a skill: each token's
    /// byte range and the skill.
    fn invocations_in<'a>(
        &'a self,
        lowered: &'a str,
    ) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> + 'a {
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
            let name = rest[..len].trim_end_matches('-');
            let skill = self.by_name.get(name).copied()?;
            Some((at..at + 1 + name.len(), skill))
        })
    }

    /// The messages as the ranking reads their words: one text, without the
    /// `$name` / `/name` tokens, which invoke a skill by name (or, for a skill that may not be
    /// invoked, refuse to) rather than describe a task.
    fn words_text(&self, messages: &[&str], lowered: &[String]) -> String {
        let mut text = String::new();
        for (&m, low) in messages.iter().zip(lowered) {
            // The words are read from the message as written where lowercasing kept every
            // offset (ASCII), so `innerHTML` splits as the library's words do.
            let m = if m.is_ascii() { m } else { low.as_str() };
            let mut at = 0;
            for (token, _) in self.invocations_in(low) {
                text.push_str(&m[at..token.start]);
                at = token.end;
            }
            text.push_str(&m[at..]);
            text.push('\n');
        }
        text
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
