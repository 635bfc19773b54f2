//! Generators of hostile SKILL.md files, shared by `tests/hostile.rs` and `benches/hostile.rs`.
//! Each case is built in code at a given frontmatter size; the body pads the file to just under
//! the 1 MiB discovery cap.
#![allow(dead_code)]

use std::fmt::Write;

/// The discovery cap (`MAX_FILE_BYTES`); every generated file stays just under it.
pub(crate) const FILE_BYTES: usize = 1 << 20;
/// Just under the parser's 16 KiB frontmatter cap.
pub(crate) const AT_CAP: usize = (16 << 10) - 256;
/// A frontmatter that fills the file.
pub(crate) const WHOLE_FILE: usize = FILE_BYTES - 4096;

/// The worst cases of the security issue, and a few more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    /// Distinct trigger keywords (quadratic de-duplication).
    DistinctTriggers,
    /// One trigger repeated.
    DuplicateTriggers,
    /// Unknown top-level keys (per-key line lookup).
    UnknownKeys,
    /// `[` nested without end (YAML scanner cost grows with depth).
    NestedFlow,
    /// Mappings nested by indentation.
    NestedBlock,
    /// Patterns just over the per-pattern compiled-size limit.
    OverLimitPatterns,
    /// Valid patterns near the per-pattern limit.
    NearLimitPatterns,
    /// A description that is one long line.
    LongLine,
    /// YAML anchors and aliases expanding many times.
    AliasBomb,
}

pub(crate) const CASES: &[Case] = &[
    Case::DistinctTriggers,
    Case::DuplicateTriggers,
    Case::UnknownKeys,
    Case::NestedFlow,
    Case::NestedBlock,
    Case::OverLimitPatterns,
    Case::NearLimitPatterns,
    Case::LongLine,
    Case::AliasBomb,
];

impl Case {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::DistinctTriggers => "distinct-triggers",
            Case::DuplicateTriggers => "duplicate-triggers",
            Case::UnknownKeys => "unknown-keys",
            Case::NestedFlow => "nested-flow",
            Case::NestedBlock => "nested-block",
            Case::OverLimitPatterns => "over-limit-patterns",
            Case::NearLimitPatterns => "near-limit-patterns",
            Case::LongLine => "long-line",
            Case::AliasBomb => "alias-bomb",
        }
    }

    /// The frontmatter lines after `name` and `description`, about `bytes` long.
    fn frontmatter(self, bytes: usize) -> String {
        let mut f = String::new();
        let mut i = 0usize;
        match self {
            Case::DistinctTriggers => {
                f.push_str("triggers: [");
                while f.len() < bytes {
                    let _ = write!(f, "t{i}, ");
                    i += 1;
                }
                f.push_str("last]\n");
            }
            Case::DuplicateTriggers => {
                f.push_str("triggers: [");
                while f.len() < bytes {
                    f.push_str("deploy, ");
                }
                f.push_str("deploy]\n");
            }
            Case::UnknownKeys => {
                while f.len() < bytes {
                    let _ = writeln!(f, "k{i}: v");
                    i += 1;
                }
            }
            Case::NestedFlow => {
                f.push_str("x: ");
                f.push_str(&"[".repeat(bytes));
                f.push('\n');
            }
            Case::NestedBlock => {
                while f.len() + i + 3 < bytes {
                    f.push_str(&" ".repeat(i));
                    f.push_str("a:\n");
                    i += 1;
                }
            }
            Case::OverLimitPatterns | Case::NearLimitPatterns => {
                f.push_str("triggers:\n  patterns:\n");
                let body = if self == Case::OverLimitPatterns {
                    r"\w\w\w\w"
                } else {
                    r"\w\w"
                };
                while f.len() < bytes {
                    let _ = writeln!(f, "    - 'x{i}{body}'");
                    i += 1;
                }
            }
            Case::LongLine => {
                f.push_str("summary: ");
                f.push_str(&"lorem ipsum ".repeat(bytes / 12));
                f.push('\n');
            }
            Case::AliasBomb => {
                f.push_str("a: &a [");
                while f.len() < bytes / 2 {
                    f.push_str("x, ");
                }
                f.push_str("x]\nb: [");
                while f.len() < bytes {
                    f.push_str("*a, ");
                }
                f.push_str("*a]\n");
            }
        }
        f
    }

    /// The whole file: frontmatter of about `frontmatter_bytes`, body padding to just under
    /// 1 MiB. [`Case::LongLine`] pads with one line.
    pub(crate) fn file(self, frontmatter_bytes: usize) -> String {
        let mut text = format!(
            "---\nname: hostile\ndescription: A hostile {} skill\n{}---\n",
            self.name(),
            self.frontmatter(frontmatter_bytes)
        );
        let line = if self == Case::LongLine {
            "word ".to_string()
        } else {
            "Follow the steps and check the output.\n".to_string()
        };
        while text.len() + line.len() < FILE_BYTES {
            text.push_str(&line);
        }
        text
    }
}
