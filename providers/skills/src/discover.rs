//! Finding skill files under roots: source tiers and priorities, the default project roots,
//! ignored directories, symlink-loop safety and the 1 MiB cap.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::parse::CONVENTION_FILES;
use crate::skill::Source;

/// Files larger than this are skipped with a diagnostic.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Directories never walked into (seed 004 §5.6.3).
pub const IGNORED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "target",
    "node_modules",
    ".next",
    "dist",
    "build",
    "coverage",
    "__pycache__",
    ".plan-cascade",
];

/// How deep a walk goes below its root.
const MAX_DEPTH: usize = 12;
/// How deep convention files are looked for below a project root.
const CONVENTION_DEPTH: usize = 3;

/// What a root holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootKind {
    /// Folders with `SKILL.md` files, at any depth.
    Skills,
    /// Convention files (`AGENTS.md`, `CLAUDE.md`, …) in a project and its first levels.
    Conventions,
}

/// A place skills are loaded from, with its source tier and priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillRoot {
    pub path: PathBuf,
    pub kind: RootKind,
    pub source: Source,
    pub priority: i64,
    /// A missing optional root is not a problem (the default project roots are optional).
    pub optional: bool,
}

impl SkillRoot {
    /// A folder of skills of `source`, at the tier's default priority; it must exist.
    pub fn new(path: impl Into<PathBuf>, source: Source) -> Self {
        SkillRoot {
            path: path.into(),
            kind: RootKind::Skills,
            source,
            priority: source.default_priority(),
            optional: false,
        }
    }

    pub fn with_priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// The default roots of a project: `skills/`, `.skills/`, `.agents/skills/`,
    /// `.claude/skills/` and the convention files, all optional, at project priority.
    pub fn project_defaults(project: &Path) -> Vec<SkillRoot> {
        let mut roots: Vec<SkillRoot> = ["skills", ".skills", ".agents/skills", ".claude/skills"]
            .iter()
            .map(|dir| SkillRoot::new(project.join(dir), Source::Project).optional())
            .collect();
        roots.push(SkillRoot {
            kind: RootKind::Conventions,
            ..SkillRoot::new(project, Source::Project).optional()
        });
        roots
    }
}

/// A skill file found under a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// Index of its root in the list given to [`discover`].
    pub root: usize,
}

/// Walk every root and list the skill files, with a diagnostic for every problem on the way.
pub fn discover(roots: &[SkillRoot]) -> (Vec<Found>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut diags = Vec::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    for (r, root) in roots.iter().enumerate() {
        if !root.path.is_dir() {
            if !root.optional {
                diags.push(Diagnostic::error(
                    &root.path,
                    None,
                    "the skills folder does not exist or is not a folder",
                ));
            }
            continue;
        }
        let mut walk = Walk {
            visited: HashSet::new(),
            diags: &mut diags,
            files: Vec::new(),
            kind: root.kind,
        };
        let depth = if root.kind == RootKind::Conventions {
            CONVENTION_DEPTH
        } else {
            MAX_DEPTH
        };
        walk.dir(&root.path, depth);
        for path in walk.files {
            // The same file reached through two roots (or a symlink) loads once.
            let key = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen_files.insert(key) {
                found.push(Found { path, root: r });
            }
        }
    }
    (found, diags)
}

struct Walk<'a> {
    visited: HashSet<PathBuf>,
    diags: &'a mut Vec<Diagnostic>,
    files: Vec<PathBuf>,
    kind: RootKind,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, depth_left: usize) {
        let canonical = match fs::canonicalize(dir) {
            Ok(c) => c,
            Err(e) => {
                self.diags.push(Diagnostic::warning(
                    dir,
                    None,
                    format!("cannot resolve this folder ({e}); skipped"),
                ));
                return;
            }
        };
        if !self.visited.insert(canonical.clone()) {
            self.diags.push(Diagnostic::warning(
                dir,
                None,
                format!(
                    "this folder leads back to {} (a symlink loop); not followed again",
                    canonical.display()
                ),
            ));
            return;
        }
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.diags.push(Diagnostic::warning(
                    dir,
                    None,
                    format!("cannot read this folder ({e}); skipped"),
                ));
                return;
            }
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if depth_left > 0 && !IGNORED_DIRS.contains(&name) {
                    self.dir(&path, depth_left - 1);
                }
            } else if self.wants(name) {
                self.files.push(path);
            }
        }
    }

    fn wants(&self, file_name: &str) -> bool {
        match self.kind {
            RootKind::Skills => file_name == "SKILL.md",
            RootKind::Conventions => CONVENTION_FILES.contains(&file_name),
        }
    }
}

/// Why a text file could not be read; callers word it for their file kind.
#[derive(Debug)]
pub(crate) enum ReadProblem {
    Io(std::io::Error),
    /// The file's size in bytes, over [`MAX_FILE_BYTES`].
    TooLarge(u64),
    /// Byte offset and 1-based line of the first invalid byte.
    NotUtf8 {
        offset: usize,
        line: usize,
    },
}

/// Read a file as UTF-8 text, refusing files over [`MAX_FILE_BYTES`] before reading them.
pub(crate) fn read_capped_text(path: &Path) -> Result<String, ReadProblem> {
    let size = fs::metadata(path).map_err(ReadProblem::Io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(ReadProblem::TooLarge(size));
    }
    let bytes = fs::read(path).map_err(ReadProblem::Io)?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count();
        ReadProblem::NotUtf8 { offset, line }
    })
}

/// Read a skill file as UTF-8 text, refusing files over [`MAX_FILE_BYTES`].
pub fn read_skill_file(path: &Path) -> Result<String, Diagnostic> {
    read_capped_text(path).map_err(|problem| match problem {
        ReadProblem::Io(e) => Diagnostic::error(path, None, format!("cannot read the file ({e})")),
        ReadProblem::TooLarge(size) => Diagnostic::error(
            path,
            None,
            format!("the file is {size} bytes, over the 1 MiB limit for a skill; skipped"),
        ),
        ReadProblem::NotUtf8 { offset, line } => Diagnostic::error(
            path,
            Some(line),
            format!("the file is not valid UTF-8 (bad byte at offset {offset}); skipped"),
        ),
    })
}
