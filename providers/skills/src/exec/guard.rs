//! Refusals: argument values that try to make a tool do more than its descriptor declares.
//!
//! Tools never run through a shell, so a metacharacter cannot chain commands by itself; the
//! checks are a second line of defence against a value that is plainly an attempt (`; rm -rf /`,
//! `$(id)`) and against programs that interpret their own arguments. Paths are judged twice:
//! lexically (`..` may not climb out of the roots) and then with every existing symlink
//! resolved, so a link inside an allowed folder cannot lead the program elsewhere.

use std::path::{Component, Path, PathBuf};

/// Characters a shell would interpret, plus line breaks and NUL.
const SHELL_METACHARACTERS: &[char] = &[
    ';', '|', '&', '$', '`', '<', '>', '(', ')', '{', '}', '!', '*', '?', '~', '\n', '\r', '\0',
];

/// Why a value is refused: completes "argument `x` …".
pub(crate) fn positional(value: &str) -> Result<(), String> {
    if value.starts_with('-') {
        return Err(format!(
            "is `{value}`, which starts with `-` and would be read as an option; positional values must not start with `-`"
        ));
    }
    no_metacharacters(value)
}

pub(crate) fn no_metacharacters(value: &str) -> Result<(), String> {
    match value.chars().find(|c| SHELL_METACHARACTERS.contains(c)) {
        Some(c) => Err(format!(
            "contains the shell metacharacter {c:?}, which is not allowed in a positional or path value"
        )),
        None => Ok(()),
    }
}

/// Where a tool runs and which folders its path arguments may name.
#[derive(Clone, Debug)]
pub(crate) struct PathPolicy {
    /// Working directory; relative paths are resolved against it.
    pub cwd: PathBuf,
    /// Normalised absolute folders a path may lead into.
    pub roots: Vec<PathBuf>,
}

impl PathPolicy {
    pub(super) fn new(cwd: &Path, roots: &[&Path]) -> Self {
        PathPolicy {
            cwd: absolute(cwd),
            roots: roots.iter().map(|r| absolute(r)).collect(),
        }
    }

    /// Accept a relative path that stays inside a root once resolved against the working
    /// directory; refuse absolute paths outright (they say nothing about intent but "elsewhere").
    pub(super) fn check(&self, value: &str) -> Result<(), String> {
        no_metacharacters(value)?;
        let path = Path::new(value);
        if path.is_absolute() || path.has_root() {
            return Err(format!(
                "is the absolute path `{value}`; give a path relative to the working folder"
            ));
        }
        let resolved = normalize(&self.cwd.join(path));
        if !self.roots.iter().any(|root| resolved.starts_with(root)) {
            return Err(format!(
                "is the path `{value}`, which leads outside the allowed folders (the skill folder and the workspace root)"
            ));
        }
        let outside = || {
            format!(
                "is the path `{value}`, which leads through a symlink outside the allowed folders (the skill folder and the workspace root)"
            )
        };
        let real = resolve_as_opened(&self.cwd, path).ok_or_else(outside)?;
        if self.roots.iter().any(|root| real.starts_with(real_prefix(root))) {
            Ok(())
        } else {
            Err(outside())
        }
    }
}

/// Where the program really ends up when it opens `relative` from `cwd`: components are
/// followed one by one as the kernel does, so a symlink is resolved before a `..` after it
/// (`link/../x` climbs from the link's target, not from `link`'s folder). A dangling symlink
/// is `None`: creating through it would write wherever it points.
fn resolve_as_opened(cwd: &Path, relative: &Path) -> Option<PathBuf> {
    let mut at = real_prefix(cwd);
    for component in relative.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                let next = at.join(name);
                at = match std::fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(&next).ok()?,
                    _ => next,
                };
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(at)
}

/// `path` made absolute against the current directory, then normalised, without touching the
/// file system beyond asking for the current directory.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    normalize(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// `path` with its longest existing prefix resolved (symlinks followed) and the rest, which
/// does not exist yet, appended: where the program would really end up.
fn real_prefix(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Remove `.` and resolve `..` against the components before it; `..` at the root stays at
/// the root, and a leading `..` of a relative path is kept (so it never matches a root).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(normalize(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
        assert_eq!(normalize(Path::new("/../../etc")), Path::new("/etc"));
        assert_eq!(normalize(Path::new("a/../../b")), Path::new("../b"));
    }

    #[test]
    fn paths_stay_inside_the_roots() {
        let policy = PathPolicy::new(
            Path::new("/w/skill"),
            &[Path::new("/w/skill"), Path::new("/w/ws")],
        );
        assert!(policy.check("notes/a.md").is_ok());
        assert!(policy.check("notes/../a.md").is_ok());
        assert!(
            policy.check("../ws/src").is_ok(),
            "the workspace root is allowed too"
        );
        assert!(policy.check("../other").is_err());
        assert!(policy.check("../../etc/passwd").is_err());
        assert!(policy.check("/etc/passwd").is_err());
        assert!(
            policy.check("../skill-evil/x").is_err(),
            "a sibling with a common prefix is outside"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_inside_a_root_cannot_lead_out() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("skill");
        std::fs::create_dir_all(skill.join("notes")).unwrap();
        std::os::unix::fs::symlink("/etc", skill.join("etc")).unwrap();
        std::os::unix::fs::symlink(skill.join("notes"), skill.join("alias")).unwrap();
        let policy = PathPolicy::new(&skill, &[&skill]);
        let refused = policy.check("etc/passwd").unwrap_err();
        assert!(refused.contains("through a symlink"), "{refused}");
        assert!(
            policy.check("alias/new-file.md").is_ok(),
            "a link that stays inside is fine"
        );
        assert!(policy.check("notes/not-yet/created.md").is_ok());
        // `up/..` climbs from the link's target, as the program's open would.
        std::os::unix::fs::symlink("..", skill.join("notes/up")).unwrap();
        assert!(policy.check("notes/up/../etc/passwd").is_err());
        assert!(
            policy.check("notes/up/skill/notes").is_ok(),
            "back inside through the link"
        );
        std::os::unix::fs::symlink(tmp.path().join("nowhere/keys"), skill.join("dangling")).unwrap();
        assert!(
            policy.check("dangling").is_err(),
            "a dangling link would write outside"
        );
    }
}
