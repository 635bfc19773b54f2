//! Finding skill files under roots: source tiers and priorities, the default project roots,
//! ignored directories, and a walk that never leaves its root (see [`crate::confined`]).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::confined::{Confined, ReadProblem};
use crate::diagnostic::Diagnostic;
use crate::skill::{Format, Source};

/// Directories never walked into: version control, build output, dependency and cache
/// folders, and a planning tool's working folder.
const IGNORED_DIRS: &[&str] = &[
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
pub(crate) enum RootKind {
    /// Folders with `SKILL.md` files, at any depth.
    Skills,
    /// Every regular file: a project's files, for detection by globs.
    Files,
    /// Instruction files other agents keep (`AGENTS.md`, `CLAUDE.md`, Cursor rules, Copilot
    /// instructions: every [`Format`] but `SKILL.md`) in a project and its first levels.
    Conventions,
    /// Every file a skill folder publishes: hidden and version-control entries, and names
    /// with a control character (which could forge a line wherever a list is shown), are not
    /// the author's skill.
    SkillFolder,
}

/// Version-control folders whose names do not start with a dot (those are hidden anyway).
const VCS_DIRS: &[&str] = &["CVS", "_darcs"];

/// Whether a skill folder publishes an entry of this name (see [`RootKind::SkillFolder`]).
fn publishable(name: &str) -> bool {
    !name.starts_with('.') && !VCS_DIRS.contains(&name) && !name.chars().any(char::is_control)
}

/// A place skills are loaded from, with its source tier and priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillRoot {
    /// The folder walked.
    pub path: PathBuf,
    /// Whether it holds skill folders or convention files.
    pub(crate) kind: RootKind,
    /// The tier of every skill found here, which wins name clashes first.
    pub source: Source,
    /// The priority of its skills that declare none; breaks name clashes within a tier and
    /// orders the catalog.
    pub priority: i64,
    /// A missing optional root is not a problem (the default project roots are optional).
    pub optional: bool,
    /// A folder the root itself must lie in, links resolved: a project's default roots are the
    /// project's choice, so `.claude/skills -> /` must not take the walk out of the project.
    pub(crate) within: Option<PathBuf>,
    /// What the operator's config sets for this root's skills.
    pub(crate) overrides: Option<std::sync::Arc<crate::skill::Overrides>>,
    /// Files of the root's own folder not loaded (see [`SkillRoot::leaving_out`]).
    pub(crate) left_out: &'static [&'static str],
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
            within: None,
            overrides: None,
            left_out: &[],
        }
    }

    /// A project whose instruction files are skills, looked for in the folder and its first
    /// three levels, at the tier's default priority; it must exist. They are the convention
    /// files (`AGENTS.md`, `CLAUDE.md`, `AGENT.md`, `SKILLS.md`, `COPILOT.md`, `GEMINI.md`),
    /// Cursor rules (`.cursor/rules/*.mdc`) and GitHub Copilot instructions
    /// (`.github/copilot-instructions.md`, `.github/instructions/*.instructions.md`).
    pub fn conventions(project: impl Into<PathBuf>, source: Source) -> Self {
        SkillRoot {
            kind: RootKind::Conventions,
            ..SkillRoot::new(project, source)
        }
    }

    /// The same root with another priority.
    pub fn with_priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    /// The same root, confined to `outer` (links resolved): a root a project's config names
    /// must not lead out of the project; one that does is skipped with a warning.
    pub fn within(mut self, outer: &Path) -> Self {
        self.within = Some(outer.to_path_buf());
        self
    }

    /// The same root without the convention files named `files` in the folder itself (those
    /// further down stay skills): what the agent already sends another way is not sent as a
    /// skill too. An agent that sends [`StandingInstructions`](crate::StandingInstructions)
    /// leaves out [`STANDING_FILES`](crate::STANDING_FILES); a hook, the file its host loads
    /// itself (`CLAUDE.md` for Claude Code). Only a conventions root holds such files.
    pub fn leaving_out(mut self, files: &'static [&'static str]) -> Self {
        self.left_out = files;
        self
    }

    /// The same root, skipped without a diagnostic when it does not exist.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// The default roots of a project: `skills/`, `.skills/`, `.agents/skills/`,
    /// `.claude/skills/` and the convention files, all optional, at project priority.
    pub fn project_defaults(project: &Path) -> Vec<SkillRoot> {
        let mut roots: Vec<SkillRoot> = ["skills", ".skills", ".agents/skills", ".claude/skills"]
            .iter()
            .map(|dir| SkillRoot {
                within: Some(project.to_path_buf()),
                ..SkillRoot::new(project.join(dir), Source::Project).optional()
            })
            .collect();
        roots.push(SkillRoot::conventions(project, Source::Project).optional());
        roots
    }
}

/// A skill file found under a root.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    /// The path as found, which names the file in diagnostics and `Skill::path`.
    pub path: PathBuf,
    /// Its real path, inside `root`.
    pub real: PathBuf,
    /// The root it was found under; every read of this skill's files stays inside it.
    pub root: Confined,
    /// Index of its root in the list given to [`discover`].
    pub root_index: usize,
}

impl Found {
    /// The file's text, or the diagnostic that skips it.
    pub(crate) fn read(&self) -> Result<String, Diagnostic> {
        self.root.read_text(&self.real).map_err(|problem| {
            let message = format!("{}; skipped", problem.reason(self.root.real()));
            Diagnostic::error(&self.path, problem.line(), message)
        })
    }
}

/// How far a walk may go: its depth, entries looked at (listed or not) and time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub depth: usize,
    pub entries: usize,
    pub time: Duration,
}

/// A skills root: a folder of millions of files (or a symlink to a huge tree inside the root)
/// costs a bounded time; past the time, what was found so far is kept.
const ROOT_BOUNDS: Bounds = Bounds {
    depth: MAX_DEPTH,
    entries: 100_000,
    time: Duration::from_secs(10),
};

/// Walk every root and list the skill files, with a diagnostic for every problem on the way.
///
/// A walk never leaves its root: a symlink (to a folder or a file) whose real path lies
/// outside the root's real path is a diagnostic, not followed; anything but a folder or a
/// regular file is skipped; depth, entries and time are bounded.
pub(crate) fn discover(roots: &[SkillRoot]) -> Discovery {
    let mut found = Vec::new();
    let mut diags = Vec::new();
    let mut folders = Vec::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    for (r, root) in roots.iter().enumerate() {
        if let Some(outer) = &root.within {
            let inside = Confined::new(outer).map(|outer| outer.resolve(&root.path));
            if let Ok(Err(problem @ ReadProblem::Outside)) = inside {
                let message = format!("{}; this default skills folder is skipped", problem.reason(outer));
                diags.push(Diagnostic::warning(&root.path, None, message));
                continue;
            }
        }
        let confined = match Confined::new(&root.path) {
            Ok(c) if c.real().is_dir() => c,
            _ => {
                if !root.optional {
                    diags.push(Diagnostic::error(
                        &root.path,
                        None,
                        "the skills folder does not exist or is not a folder",
                    ));
                }
                continue;
            }
        };
        let bounds = match root.kind {
            RootKind::Conventions => Bounds {
                depth: CONVENTION_DEPTH,
                ..ROOT_BOUNDS
            },
            _ => ROOT_BOUNDS,
        };
        let mut walk = Walk::new(&confined, root.kind, bounds, &mut diags);
        walk.left_out = (root.path.as_path(), root.left_out);
        walk.dir(&root.path, bounds.depth);
        folders.extend(walk.visited);
        for (path, real) in walk.files {
            // The same file reached through two roots (or a symlink) loads once.
            if seen_files.insert(real.clone()) {
                found.push(Found {
                    path,
                    real,
                    root: confined.clone(),
                    root_index: r,
                });
            }
        }
    }
    folders.sort();
    Discovery {
        found,
        diagnostics: diags,
        folders,
    }
}

/// A project, walked for detection by globs before a thread's first answer.
const PROJECT_BOUNDS: Bounds = Bounds {
    depth: MAX_DEPTH,
    entries: 20_000,
    time: Duration::from_secs(2),
};

/// The project's files, as `/`-separated paths relative to it, for detection by globs: walked
/// like a skills root (never through a link out, ignored folders skipped) within tighter
/// bounds; what lies past them is not listed.
pub(crate) fn project_files(project: &Confined) -> Vec<String> {
    list_files(project, RootKind::Files, PROJECT_BOUNDS)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// Every regular file `kind` lists under `root` within `bounds`, as its `/`-separated path
/// relative to the root and its real path (inside the root), in walk order.
pub(crate) fn list_files(root: &Confined, kind: RootKind, bounds: Bounds) -> Vec<(String, PathBuf)> {
    let mut diags = Vec::new();
    let mut walk = Walk::new(root, kind, bounds, &mut diags);
    walk.dir(root.real(), bounds.depth);
    if walk.stopped {
        tracing::debug!(folder = %root.real().display(), "a walk within bounds saw part of the folder");
    }
    let files = std::mem::take(&mut walk.files);
    files
        .into_iter()
        .filter_map(|(path, real)| {
            let relative = path.strip_prefix(root.real()).ok()?;
            let parts: Option<Vec<&str>> = relative.iter().map(|c| c.to_str()).collect();
            Some((parts?.join("/"), real))
        })
        .collect()
}

/// What a walk of every root found.
pub(crate) struct Discovery {
    /// The skill files, in root order and then path order.
    pub found: Vec<Found>,
    /// Every problem met on the way.
    pub diagnostics: Vec<Diagnostic>,
    /// The real path of every folder walked: a file added or removed changes one of them.
    pub folders: Vec<PathBuf>,
}

struct Walk<'a> {
    root: &'a Confined,
    visited: HashSet<PathBuf>,
    diags: &'a mut Vec<Diagnostic>,
    /// Each file's path as found, and its real path (inside the root).
    files: Vec<(PathBuf, PathBuf)>,
    kind: RootKind,
    bounds: Bounds,
    /// A folder, and the files of its own not wanted.
    left_out: (&'a Path, &'static [&'static str]),
    entries_left: usize,
    deadline: Instant,
    /// A bound was hit and reported; the walk unwinds.
    stopped: bool,
}

impl<'a> Walk<'a> {
    fn new(root: &'a Confined, kind: RootKind, bounds: Bounds, diags: &'a mut Vec<Diagnostic>) -> Self {
        Walk {
            root,
            visited: HashSet::new(),
            diags,
            files: Vec::new(),
            kind,
            bounds,
            left_out: (root.real(), &[]),
            entries_left: bounds.entries,
            deadline: Instant::now() + bounds.time,
            stopped: false,
        }
    }

    fn dir(&mut self, dir: &Path, depth_left: usize) {
        let real = match self.root.resolve(dir) {
            Ok(real) => real,
            Err(problem) => return self.skip(dir, problem),
        };
        if !self.visited.insert(real.clone()) {
            self.diags.push(Diagnostic::warning(
                dir,
                None,
                format!(
                    "this folder leads back to {} (a symlink loop); not followed again",
                    real.display()
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
        // A folder of millions of entries costs no more than the walk has left (plus one, so
        // the bound is still hit and reported).
        let mut entries: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .take(self.entries_left.saturating_add(1))
            .collect();
        entries.sort();
        for path in entries {
            if self.out_of_bounds(&path) {
                return;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if self.kind == RootKind::SkillFolder && !publishable(name) {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            let is_link = meta.file_type().is_symlink();
            let wanted = self.wants(&path, name);
            if !(meta.is_dir() || is_link || wanted) {
                continue;
            }
            // Resolve links (and wanted files) before looking further: a link out of the root
            // is reported and never followed, whatever it points at.
            let real = match self.root.resolve(&path) {
                Ok(real) => real,
                Err(problem) => {
                    // A dangling link that names nothing we want is not worth a word.
                    if wanted || matches!(problem, ReadProblem::Outside) {
                        self.skip(&path, problem);
                    }
                    continue;
                }
            };
            if real.is_dir() {
                let ignored = self.kind != RootKind::SkillFolder && IGNORED_DIRS.contains(&name);
                if depth_left > 0 && !ignored {
                    self.dir(&path, depth_left - 1);
                }
            } else if wanted {
                if real.is_file() {
                    self.files.push((path, real));
                } else {
                    self.skip(&path, ReadProblem::NotRegular);
                }
            }
            if self.stopped {
                return;
            }
        }
    }

    /// Count one entry against the walk's bounds; report the first bound hit.
    fn out_of_bounds(&mut self, at: &Path) -> bool {
        if self.stopped {
            return true;
        }
        let bound = if self.entries_left == 0 {
            format!("more than {} entries", self.bounds.entries)
        } else if Instant::now() > self.deadline {
            format!("more than {} s", self.bounds.time.as_secs())
        } else {
            self.entries_left -= 1;
            return false;
        };
        self.stopped = true;
        self.diags.push(Diagnostic::warning(
            at,
            None,
            format!(
                "stopped walking {} here after {bound}; skills further on are not loaded",
                self.root.real().display()
            ),
        ));
        true
    }

    fn skip(&mut self, path: &Path, problem: ReadProblem) {
        let message = format!("{}; skipped", problem.reason(self.root.real()));
        self.diags.push(Diagnostic::warning(path, None, message));
    }

    fn wants(&self, path: &Path, file_name: &str) -> bool {
        match self.kind {
            RootKind::Skills => file_name == "SKILL.md",
            RootKind::Conventions => {
                Format::of(path) != Format::Skill
                    && !(path.parent() == Some(self.left_out.0) && self.left_out.1.contains(&file_name))
            }
            RootKind::Files | RootKind::SkillFolder => true,
        }
    }
}
