//! Skills as text under a budget: the one rendering every surface uses — the provider counts
//! tokens, an agent hook counts characters as its host's JSON does (Claude Code caps what a
//! hook adds at 10,000), MCP `match_skills` has no budget.
//!
//! A skill is sent as a block: `## name`, its description, (for a host that reads files) the
//! path of its `SKILL.md`, the supporting files of its folder when it has any, then its body. A body longer than the [`Limits`], or (when the
//! budget asks for it) one that does not fit whole, is cut at a line and ends with a note
//! saying where the rest is: the `read_skill` tool, or the file.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use ctxkit::TokenCounter;

use crate::skill::Skill;

/// How a budget counts text.
#[derive(Clone, Copy)]
pub enum Measure<'a> {
    /// Tokens, by this counter.
    Tokens(&'a dyn TokenCounter),
    /// Characters as they appear in a JSON string, escapes included: the whole answer of a
    /// hook, once serialized, fits a host's character cap.
    JsonChars,
}

impl Measure<'_> {
    /// What `text` costs.
    pub fn cost(&self, text: &str) -> usize {
        match self {
            Measure::Tokens(counter) => counter.count(text),
            Measure::JsonChars => text.chars().map(json_char_len).sum(),
        }
    }
}

/// Where the model finds the rest of a skill whose body was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// The `read_skill` tool (the provider and MCP offer it).
    ReadSkill,
    /// The skill's file, by its absolute path (an agent with a file-reading tool).
    File,
}

/// How much of a body is sent before it is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// At most this many lines…
    pub lines: usize,
    /// …and this many characters.
    pub chars: usize,
}

/// A skill is not started in less room than this many characters (or tokens): a stub of a
/// body would only send the model to read the rest.
const MIN_CUT: usize = 400;

/// Blocks joined by blank lines, never costing more than a budget.
pub struct Budgeted<'a> {
    measure: Measure<'a>,
    left: usize,
    /// What the blank line between two blocks costs, counted once.
    separator: usize,
    text: String,
}

const SEPARATOR: &str = "\n\n";

impl<'a> Budgeted<'a> {
    /// Room for `budget` by `measure` (`usize::MAX` for none).
    pub fn new(budget: usize, measure: Measure<'a>) -> Self {
        Budgeted {
            measure,
            left: budget,
            separator: measure.cost(SEPARATOR),
            text: String::new(),
        }
    }

    /// What the next block may cost.
    pub fn room(&self) -> usize {
        if self.text.is_empty() {
            self.left
        } else {
            self.left.saturating_sub(self.separator)
        }
    }

    /// What is left of the budget.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Add `block` if it fits; whether it was added.
    pub fn push(&mut self, block: &str) -> bool {
        let cost = self.measure.cost(block);
        self.push_costing(block, cost)
    }

    /// Add `block`, which costs `cost` (counted before, e.g. cached), if it fits.
    pub fn push_costing(&mut self, block: &str, cost: usize) -> bool {
        if block.is_empty() || cost > self.room() {
            return false;
        }
        self.left = self.room() - cost;
        if !self.text.is_empty() {
            self.text.push_str(SEPARATOR);
        }
        self.text.push_str(block);
        true
    }

    /// Add each of `skills` that fits, the first one led by `intro` (so an intro never stands
    /// alone); with `cut_to_fit`, a skill that does not fit whole is sent cut to the room left
    /// when that is at least a few hundred characters. Returns the names of the skills added.
    pub fn skills<'s>(
        &mut self,
        intro: &str,
        skills: impl IntoIterator<Item = &'s Skill>,
        limits: Limits,
        rest: Rest,
        cut_to_fit: bool,
    ) -> Vec<String> {
        let mut added = Vec::new();
        for skill in skills {
            let lead = if added.is_empty() {
                format!("{intro}{SEPARATOR}")
            } else {
                String::new()
            };
            if self.push(&format!("{lead}{}", skill_block(skill, limits, rest))) {
                added.push(skill.name.clone());
                continue;
            }
            let room = self.room().saturating_sub(self.measure.cost(&lead));
            let cut = cut_to_fit
                .then(|| cut_block(skill, limits, rest, room, self.measure))
                .flatten();
            match cut {
                Some(block) if self.push(&format!("{lead}{block}")) => added.push(skill.name.clone()),
                _ => tracing::debug!(skill = %skill.name, room, "skill left out by the budget"),
            }
        }
        added
    }

    /// The text, or `None` when nothing was added.
    pub fn finish(self) -> Option<String> {
        (!self.text.is_empty()).then_some(self.text)
    }
}

/// A skill as sent whole, but for a body longer than `limits`, which is cut (see [`body`]).
pub fn skill_block(skill: &Skill, limits: Limits, rest: Rest) -> String {
    format!("{}{}", head(skill, rest), body(skill, limits, rest))
}

/// A skill's body cut after `limits.lines` lines or `limits.chars` characters, whichever comes
/// first, with a note saying how much was left out and where it is.
pub fn body(skill: &Skill, limits: Limits, rest: Rest) -> Cow<'_, str> {
    let body = skill.body.trim();
    let line_end = match limits.lines {
        0 => 0,
        n => body.match_indices('\n').nth(n - 1).map_or(body.len(), |(i, _)| i),
    };
    let char_end = body
        .char_indices()
        .nth(limits.chars)
        .map_or(body.len(), |(i, _)| i);
    let (kept, cut) = body.split_at(line_end.min(char_end));
    if cut.trim().is_empty() {
        return body.into();
    }
    let left_out = if line_end <= char_end {
        format!(
            "{} more lines",
            cut.strip_prefix('\n').unwrap_or(cut).lines().count()
        )
    } else {
        format!("{} more characters", cut.chars().count())
    };
    format!("{}{}", kept.trim_end(), note(skill, rest, &left_out)).into()
}

/// A skill cut to cost at most `room`, its body ending at a line with a note saying where the
/// rest is; `None` when `room` is too small to start it.
fn cut_block(skill: &Skill, limits: Limits, rest: Rest, room: usize, measure: Measure<'_>) -> Option<String> {
    if room < MIN_CUT {
        return None;
    }
    let head = head(skill, rest);
    let body = skill.body.trim();
    let total = body.chars().count();
    // Room for the body's start: what the head and the longest possible note leave.
    let fixed = measure.cost(&head) + measure.cost(&note(skill, rest, &format!("{total} more characters")));
    let mut allowed = room.saturating_sub(fixed).min(limits.chars);
    // Tokens are counted on whole text: halve the start until it fits.
    let mut end = prefix_within(body, allowed, measure);
    while end > 0 && measure.cost(&body[..end]) > allowed {
        allowed /= 2;
        end = prefix_within(body, allowed, measure);
    }
    // End at a line when one is in the second half of what fits, so no line is cut in two.
    let kept = match body[..end].rfind('\n') {
        Some(nl) if nl >= end / 2 => &body[..nl],
        _ => &body[..end],
    };
    if kept.trim().is_empty() {
        return None;
    }
    let left_out = format!("{} more characters", body[kept.len()..].chars().count());
    Some(format!(
        "{head}{}{}",
        kept.trim_end(),
        note(skill, rest, &left_out)
    ))
}

/// The byte length of the longest start of `body` that costs at most `allowed`, counting each
/// character as JSON does (for tokens, an estimate the caller checks: a token is at least one
/// character).
fn prefix_within(body: &str, mut allowed: usize, measure: Measure<'_>) -> usize {
    let mut end = 0;
    for (i, c) in body.char_indices() {
        let cost = match measure {
            Measure::JsonChars => json_char_len(c),
            Measure::Tokens(_) => 1,
        };
        if cost > allowed {
            break;
        }
        allowed -= cost;
        end = i + c.len_utf8();
    }
    end
}

fn head(skill: &Skill, rest: Rest) -> String {
    let mut head = format!("## {}\n", skill.name);
    let description = skill.description.trim();
    if !description.is_empty() {
        head.push_str(description);
        head.push('\n');
    }
    if rest == Rest::File {
        head.push_str(&format!("File: {}\n", display_path(&skill.path).display()));
    }
    if let Some(files) = files_line(skill, rest) {
        head.push_str(&files);
        head.push('\n');
    }
    head.push('\n');
    head
}

/// The most supporting files a pointer names; the rest are counted.
const MAX_NAMED_FILES: usize = 20;

/// The line naming a skill's supporting files and how to read one; `None` when it has none.
fn files_line(skill: &Skill, rest: Rest) -> Option<String> {
    let files = skill.supporting_files();
    if files.is_empty() {
        return None;
    }
    let mut named = files
        .iter()
        .take(MAX_NAMED_FILES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > MAX_NAMED_FILES {
        named.push_str(&format!(" and {} more", files.len() - MAX_NAMED_FILES));
    }
    Some(match rest {
        Rest::ReadSkill => format!(
            "Files: {named} (read_skill(\"{}\", file) returns one)",
            skill.name
        ),
        Rest::File => format!("Files beside it: {named}"),
    })
}

fn note(skill: &Skill, rest: Rest, left_out: &str) -> String {
    match rest {
        Rest::ReadSkill => format!(
            "\n\n[… {left_out} not shown; read_skill(\"{}\") returns the full text]",
            skill.name
        ),
        Rest::File => format!(
            "\n\n[… {left_out} not shown. The whole skill is in {}: read it with your file-reading tool before following it.]",
            display_path(&skill.path).display()
        ),
    }
}

/// The skill file's absolute path when it can be resolved, so the agent can open it from
/// anywhere.
fn display_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Characters `c` takes in a JSON string (serde_json escapes quotes, backslashes and controls).
fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxkit::ApproxCounter;

    fn with_body(body: &str) -> Skill {
        let text = format!("---\nname: s\ndescription: d\n---\n{body}");
        Skill::parse(Path::new("s/SKILL.md"), &text, Some("s")).0.unwrap()
    }

    fn limits(lines: usize, chars: usize) -> Limits {
        Limits { lines, chars }
    }

    #[test]
    fn bodies_are_cut_by_lines_or_characters_on_char_boundaries() {
        let skill = with_body("éa\nb\nc\n");
        let cut = |l, c| body(&skill, limits(l, c), Rest::ReadSkill).into_owned();
        assert_eq!(cut(3, 100), skill.body.trim(), "three lines fit");
        assert!(cut(1, 100).starts_with("éa\n\n[… 2 more lines not shown; read_skill(\"s\")"));
        assert!(cut(0, 100).starts_with("\n\n[… 3 more lines not shown"));
        let wide = with_body(&"日本語".repeat(10));
        let cut = body(&wide, limits(200, 4), Rest::File);
        assert!(
            cut.starts_with("日本語日\n\n[… 26 more characters not shown. The whole skill is in "),
            "{cut}"
        );
    }

    #[test]
    fn json_costs_match_serde() {
        for text in [
            "plain",
            "a \"quoted\" line\n",
            "tab\tand\\slash",
            "\u{1}\u{1f}é日",
        ] {
            let json = serde_json::to_string(text).unwrap();
            assert_eq!(
                Measure::JsonChars.cost(text),
                json.chars().count() - 2,
                "{text:?}"
            );
        }
    }

    #[test]
    fn nothing_rendered_costs_more_than_its_budget() {
        let long = with_body(&"a line of the skill's instructions \"quoted\"\n".repeat(400));
        let counter = ApproxCounter;
        for measure in [Measure::JsonChars, Measure::Tokens(&counter)] {
            for budget in [0, 100, 399, 400, 1_000, 5_000, 50_000] {
                let mut text = Budgeted::new(budget, measure);
                let added = text.skills(
                    "Intro.",
                    [&long, &long],
                    limits(10_000, 100_000),
                    Rest::File,
                    true,
                );
                let out = text.finish().unwrap_or_default();
                assert!(measure.cost(&out) <= budget, "{budget}: {}", measure.cost(&out));
                assert_eq!(added.is_empty(), out.is_empty());
                if !out.is_empty() {
                    assert!(out.starts_with("Intro.\n\n## s\n"), "{out}");
                }
            }
        }
    }
}
