//! A project's standing instructions: its own `AGENTS.md` and `CLAUDE.md`, which an agent sends
//! at the start of every request (in the stable prefix, so prompt caches keep them) rather
//! than as skills chosen per message.
//!
//! The files are the project's text, so they are read like every project file: through the
//! project folder's [`Confined`] reader (no link out of it, only a regular file, at most
//! 1 MiB, UTF-8), then cut to a token budget with a marker saying what was left out.

use std::path::{Path, PathBuf};

use ctxkit::TokenCounter;

use crate::confined::{Confined, ReadProblem};
use crate::diagnostic::Diagnostic;

/// The files read as standing instructions, in the order they are sent. A conventions root
/// whose standing files are left out ([`SkillRoot::leaving_out`](crate::SkillRoot::leaving_out))
/// does not load these two as skills.
pub const STANDING_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// A project's standing instructions, read and cut to a budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StandingInstructions {
    /// Each file's text in [`STANDING_FILES`] order, separated by a blank line; a file cut to
    /// the budget ends with a marker naming it. Empty when the project has neither file.
    pub text: String,
    /// The files read (a link to a file already read counts once).
    pub files: Vec<PathBuf>,
    /// Whether the budget cut something.
    pub cut: bool,
    /// Files that exist but were not read (a link out of the project, not a regular file,
    /// over 1 MiB, not UTF-8), one sentence each.
    pub diagnostics: Vec<Diagnostic>,
}

impl StandingInstructions {
    /// The default budget: room for a long `AGENTS.md` (about 32 KiB of English), a bound on
    /// what a cloned project's files cost every request.
    pub const DEFAULT_TOKENS: usize = 8_000;

    /// Read `project`'s standing files, within `max_tokens` by `counter` (0 sends nothing).
    pub fn read(project: &Path, max_tokens: usize, counter: &dyn TokenCounter) -> Self {
        let mut standing = StandingInstructions::default();
        if max_tokens == 0 {
            return standing;
        }
        let Ok(folder) = Confined::new(project) else {
            return standing;
        };
        let mut left = max_tokens;
        let mut read: Vec<PathBuf> = Vec::new();
        for name in STANDING_FILES {
            let path = project.join(name);
            let found = folder
                .resolve(&path)
                .and_then(|real| Ok((folder.read_text(&real)?, real)));
            let text = match found {
                Ok((_, real)) if read.contains(&real) => continue,
                Ok((text, real)) => {
                    read.push(real);
                    text
                }
                Err(ReadProblem::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(problem) => {
                    let message = format!(
                        "{}; it is not sent as standing instructions",
                        problem.reason(folder.real())
                    );
                    standing
                        .diagnostics
                        .push(Diagnostic::warning(&path, problem.line(), message));
                    continue;
                }
            };
            standing.files.push(path);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let block = within(text, name, left, max_tokens, counter);
            standing.cut |= block != text;
            left = left.saturating_sub(counter.count(&block));
            if !standing.text.is_empty() {
                standing.text.push_str("\n\n");
            }
            standing.text.push_str(&block);
        }
        standing
    }
}

/// `text` whole when it costs at most `room` tokens, else its longest start (ended at a line
/// when one is in its second half) that fits with the marker naming `name`.
fn within(text: &str, name: &str, room: usize, budget: usize, counter: &dyn TokenCounter) -> String {
    let total = counter.count(text);
    if total <= room {
        return text.to_string();
    }
    let marker = |rest: &str| {
        let lines = rest.lines().filter(|l| !l.trim().is_empty()).count().max(1);
        let plural = if lines == 1 { "" } else { "s" };
        format!(
            "[… {lines} more line{plural} of {name} left out: standing instructions are cut at {budget} tokens; read {name} for the rest]"
        )
    };
    let room = room.saturating_sub(counter.count(&marker(text)) + 2);
    // Shrink by the ratio of cost to room until the start fits: one or two counts.
    let mut end = text.len();
    let mut cost = total;
    while end > 0 && cost > room {
        let keep = (end as u128 * room as u128 / cost.max(1) as u128) as usize;
        end = floor_char(text, keep.min(end - 1));
        cost = counter.count(&text[..end]);
    }
    let kept = match text[..end].rfind('\n') {
        Some(nl) if nl >= end / 2 => &text[..nl],
        _ => &text[..end],
    };
    let kept = kept.trim_end();
    let rest = &text[kept.len()..];
    if kept.is_empty() {
        marker(rest)
    } else {
        format!("{kept}\n\n{}", marker(rest))
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
