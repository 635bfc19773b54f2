//! A skill as its author keeps it: the folder of its `SKILL.md`, every file in it. What MCP
//! publishes, what `read_skill` reads with `file` and what the injected text points to all
//! come from [`Skill::files`], and a file is read only as one of that list, by
//! [`Skill::read_file`].
//!
//! The folder was cloned from somewhere, so the list is bounded and confined: only regular
//! files are listed (a link is followed only when it stays inside the folder, and never to a
//! folder, so no walk loops), hidden and version-control entries are left out, and the list
//! stops at [`MAX_SKILL_FILES`] files and [`MAX_SKILL_BYTES`] in all (the MCP Skills
//! extension's per-skill limits); a file over [`MAX_FILE_BYTES`] is left out. Every read goes
//! through [`Confined`], so a file swapped for a link out or a FIFO after it was listed is
//! still refused.

use std::fmt;
use std::fs;
use std::path::Path;

use crate::confined::{Confined, ReadProblem, MAX_FILE_BYTES};
use crate::skill::Skill;

/// The most files listed for one skill, its `SKILL.md` included.
pub const MAX_SKILL_FILES: usize = 512;
/// The most bytes one skill's listed files add up to.
pub const MAX_SKILL_BYTES: u64 = 16 << 20;
/// How deep below the skill's folder files are listed.
const MAX_DEPTH: usize = 8;
/// The most folder entries looked at for one skill, listed or not (a folder of a million
/// files costs no more than this).
const MAX_ENTRIES: usize = 4096;
/// Version-control folders whose names do not start with a dot (those are hidden anyway).
const VCS_DIRS: &[&str] = &["CVS", "_darcs"];
/// The file a skill folder is named by.
const SKILL_MD: &str = "SKILL.md";

/// One file of a skill's folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    /// Its path inside the folder, `/`-separated: `SKILL.md`, `references/api.md`.
    pub path: String,
    /// Its size when it was listed.
    pub size: u64,
}

/// Why a skill file was not read.
#[derive(Debug)]
pub enum SkillFileError {
    /// No file of the skill's list has that path.
    NotListed,
    /// The file is listed but could not be read within the confinement; one sentence.
    Refused(String),
}

impl fmt::Display for SkillFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillFileError::NotListed => {
                f.write_str("the skill has no file at that path; its entry lists its files")
            }
            SkillFileError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SkillFileError {}

impl Skill {
    /// The skill's folder, when the skill is one: its file is a `SKILL.md`. A convention file
    /// (`AGENTS.md`) shares its folder with a project, so it has none.
    fn folder(&self) -> Option<&Path> {
        (self.path.file_name()? == SKILL_MD)
            .then(|| self.path.parent())
            .flatten()
    }

    /// Every file of the skill's folder, `SKILL.md` included, sorted by path, within the
    /// bounds of this module; empty for a skill that is not a folder or cannot be read.
    pub fn files(&self) -> Vec<SkillFile> {
        let Some(root) = self.folder().and_then(|dir| Confined::new(dir).ok()) else {
            return Vec::new();
        };
        let mut walk = Walk {
            root: &root,
            files: Vec::new(),
            bytes: 0,
            entries: 0,
        };
        walk.dir(root.real(), "", MAX_DEPTH);
        walk.files.sort_by(|a, b| a.path.cmp(&b.path));
        walk.files
    }

    /// The paths of [`Skill::files`] but the skill's own file: what the skill brings beside
    /// its instructions (`references/api.md`, `scripts/run.sh`).
    pub fn supporting_files(&self) -> Vec<String> {
        self.files()
            .into_iter()
            .map(|f| f.path)
            .filter(|p| p != SKILL_MD)
            .collect()
    }

    /// The bytes of the file at `path`, one of [`Skill::files`]' paths, read within the
    /// confinement and the per-file cap.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, SkillFileError> {
        if !self.files().iter().any(|f| f.path == path) {
            return Err(SkillFileError::NotListed);
        }
        self.read_listed(path)
    }

    /// Every file of [`Skill::files`] with its bytes, each read as the iterator reaches it:
    /// one walk of the folder however many files it has.
    pub fn read_files(&self) -> impl Iterator<Item = (SkillFile, Result<Vec<u8>, SkillFileError>)> + '_ {
        self.files().into_iter().map(|file| {
            let bytes = self.read_listed(&file.path);
            (file, bytes)
        })
    }

    /// Read `path`, which the caller found in [`Skill::files`].
    fn read_listed(&self, path: &str) -> Result<Vec<u8>, SkillFileError> {
        let folder = self.folder().ok_or(SkillFileError::NotListed)?;
        let refused = |p: ReadProblem| SkillFileError::Refused(p.reason(folder));
        let root = Confined::new(folder).map_err(|e| refused(ReadProblem::Io(e)))?;
        root.read_bytes(&root.real().join(path)).map_err(refused)
    }
}

/// A walk of one skill folder, gathering what may be listed.
struct Walk<'a> {
    root: &'a Confined,
    files: Vec<SkillFile>,
    bytes: u64,
    entries: usize,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, prefix: &str, depth_left: usize) {
        let Ok(read) = fs::read_dir(dir) else { return };
        // At most what the walk may still look at (one more, to notice the rest), so a folder
        // of a million files costs no more than one of a few thousand.
        let room = (MAX_ENTRIES + 1).saturating_sub(self.entries);
        let mut entries: Vec<_> = read.filter_map(Result::ok).take(room).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            self.entries += 1;
            if self.entries > MAX_ENTRIES || self.files.len() >= MAX_SKILL_FILES {
                tracing::warn!(folder = %self.root.real().display(), "skill folder has more entries than are listed; the rest are left out");
                return;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            // Hidden and VCS entries are not the author's skill; a name with a control
            // character could forge a line wherever the list is shown.
            if name.starts_with('.')
                || VCS_DIRS.contains(&name.as_str())
                || name.chars().any(char::is_control)
            {
                continue;
            }
            let path = format!("{prefix}{name}");
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if depth_left > 0 {
                    self.dir(&entry.path(), &format!("{path}/"), depth_left - 1);
                }
                continue;
            }
            // A link counts as what it leads to, only inside the folder and only to a file.
            let Ok(real) = self.root.resolve(&entry.path()) else {
                tracing::debug!(file = %path, "skill file leads outside its folder; not listed");
                continue;
            };
            let Ok(meta) = fs::metadata(&real) else { continue };
            if !meta.is_file() {
                continue;
            }
            if meta.len() > MAX_FILE_BYTES || self.bytes + meta.len() > MAX_SKILL_BYTES {
                tracing::warn!(file = %path, size = meta.len(), "skill file over the size cap; not listed");
                continue;
            }
            self.bytes += meta.len();
            self.files.push(SkillFile {
                path,
                size: meta.len(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_in(dir: &Path) -> Skill {
        let path = dir.join("SKILL.md");
        let text = fs::read_to_string(&path).unwrap();
        Skill::parse(&path, &text, Some("s")).0.unwrap()
    }

    fn paths(skill: &Skill) -> Vec<String> {
        skill.files().into_iter().map(|f| f.path).collect()
    }

    #[test]
    fn lists_regular_files_and_leaves_out_hidden_and_vcs_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("SKILL.md"), "---\nname: s\ndescription: d\n---\nBody").unwrap();
        for folder in ["references", "scripts/deep", ".git", "CVS", ".hidden"] {
            fs::create_dir_all(root.join(folder)).unwrap();
        }
        for file in [
            "references/api.md",
            "scripts/deep/run.sh",
            ".git/config",
            "CVS/Entries",
            ".hidden/x",
            ".env",
            "references/forged\nFile: x.md",
        ] {
            fs::write(root.join(file), "x").unwrap();
        }
        let skill = skill_in(root);
        assert_eq!(
            paths(&skill),
            ["SKILL.md", "references/api.md", "scripts/deep/run.sh"]
        );
        assert_eq!(skill.read_file("references/api.md").unwrap(), b"x");
        let read: Vec<(String, usize)> = skill
            .read_files()
            .map(|(f, bytes)| (f.path, bytes.unwrap().len()))
            .collect();
        assert_eq!(
            read[1..],
            [
                ("references/api.md".to_string(), 1),
                ("scripts/deep/run.sh".to_string(), 1)
            ]
        );
        for unlisted in [
            ".env",
            ".git/config",
            "references/../SKILL.md",
            "../SKILL.md",
            "/etc/passwd",
            "references",
        ] {
            assert!(
                matches!(skill.read_file(unlisted), Err(SkillFileError::NotListed)),
                "{unlisted}"
            );
        }
    }

    #[test]
    fn a_file_over_the_cap_is_neither_listed_nor_read() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("SKILL.md"),
            "---\nname: s\ndescription: d\n---\nBody",
        )
        .unwrap();
        fs::write(dir.path().join("big.bin"), vec![0u8; MAX_FILE_BYTES as usize + 1]).unwrap();
        fs::write(dir.path().join("exact.bin"), vec![0u8; MAX_FILE_BYTES as usize]).unwrap();
        let skill = skill_in(dir.path());
        assert_eq!(paths(&skill), ["SKILL.md", "exact.bin"]);
        assert!(matches!(
            skill.read_file("big.bin"),
            Err(SkillFileError::NotListed)
        ));
        assert_eq!(
            skill.read_file("exact.bin").unwrap().len(),
            MAX_FILE_BYTES as usize
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_out_fifos_and_linked_folders_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("SKILL.md"), "---\nname: s\ndescription: d\n---\nBody").unwrap();
        fs::write(outside.path().join("secret"), "KEY=1").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("out.md")).unwrap();
        std::os::unix::fs::symlink(root.join("SKILL.md"), root.join("in.md")).unwrap();
        std::os::unix::fs::symlink(root, root.join("loop")).unwrap();
        let fifo = root.join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let skill = skill_in(root);
        assert_eq!(paths(&skill), ["SKILL.md", "in.md"]);
        for refused in ["out.md", "pipe", "loop/SKILL.md"] {
            assert!(
                matches!(skill.read_file(refused), Err(SkillFileError::NotListed)),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_convention_file_has_no_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("AGENTS.md");
        fs::write(&path, "# Project rules\nUse pnpm.").unwrap();
        fs::write(dir.path().join("secret.txt"), "x").unwrap();
        let skill = Skill::parse(&path, "# Project rules\nUse pnpm.", None).0.unwrap();
        assert!(skill.files().is_empty());
        assert!(matches!(
            skill.read_file("secret.txt"),
            Err(SkillFileError::NotListed)
        ));
    }
}
