//! A skill as its author keeps it: the folder of its `SKILL.md`, every file in it. What MCP
//! publishes, what `read_skill` reads with `file` and what the injected text points to all
//! come from [`Skill::files`], and a file is read only as one of that list.
//!
//! The folder was cloned from somewhere, so the list is bounded and confined: it is walked
//! like a skills root ([`crate::discover`]: a link is followed only when it stays inside the
//! folder, no special files), hidden and version-control entries are left out, and the list
//! stops at [`MAX_SKILL_FILES`] files and [`MAX_SKILL_BYTES`] in all (the MCP Skills
//! extension's per-skill limits); a file over [`MAX_FILE_BYTES`] is left out. The folder is
//! the one discovery loaded the skill from: when its path leads elsewhere later (swapped for
//! a link), nothing in it is listed or read. Every read goes through [`Confined`], so a file
//! swapped for a link out or a FIFO after it was listed is still refused, and what is read
//! is counted as it arrives, never trusted from the listing.

use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::time::{Duration, SystemTime};

use crate::confined::{Confined, ReadProblem, MAX_FILE_BYTES};
use crate::discover::{list_files, Bounds, RootKind};
use crate::skill::Skill;

/// The most files listed for one skill, its `SKILL.md` included.
pub(crate) const MAX_SKILL_FILES: usize = 512;
/// The most bytes one skill's listed (and read) files add up to.
pub(crate) const MAX_SKILL_BYTES: u64 = 16 << 20;
/// How far below the skill's folder files are listed; a folder of a million files costs no
/// more than [`Bounds::entries`] looked at.
const BOUNDS: Bounds = Bounds {
    depth: 8,
    entries: 4096,
    time: Duration::from_secs(2),
};
/// The file a skill folder is named by.
const SKILL_MD: &str = "SKILL.md";

/// One file of a skill's folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    /// Its path inside the folder, `/`-separated: `SKILL.md`, `references/api.md`.
    pub path: String,
    /// Its size when it was listed.
    pub size: u64,
    /// When it was last modified, as listed: with the size, what tells a caller that keeps
    /// something derived from the file (a digest) that it changed.
    pub modified: Option<SystemTime>,
}

/// Why a skill file was not read.
#[derive(Debug)]
pub enum SkillFileError {
    /// No file of the skill's list has that path.
    NotListed,
    /// The file is binary (an image, a PDF), asked for as text.
    NotText,
    /// The file is listed but could not be read within the confinement; one sentence.
    Refused(String),
}

impl fmt::Display for SkillFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillFileError::NotListed => {
                f.write_str("the skill has no file at that path; its entry lists its files")
            }
            SkillFileError::NotText => {
                f.write_str("that file is not text (an image or other binary), so it cannot be shown as text")
            }
            SkillFileError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SkillFileError {}

impl Skill {
    /// The skill's folder, confined, when the skill is one (its file is a `SKILL.md`; a
    /// convention file such as `AGENTS.md` shares its folder with a project) and the folder
    /// still is the one it was loaded from.
    fn folder(&self) -> Option<Confined> {
        let dir = self
            .path
            .parent()
            .filter(|_| self.path.file_name() == Some(OsStr::new(SKILL_MD)))?;
        let root = Confined::new(dir).ok()?;
        match &self.real_folder {
            Some(loaded) if loaded != root.real() => {
                tracing::warn!(
                    skill = %self.name,
                    folder = %dir.display(),
                    "the skill's folder now leads elsewhere than when it was loaded; its files are not read until it is loaded again"
                );
                None
            }
            _ => Some(root),
        }
    }

    /// Every file of the skill's folder, `SKILL.md` included, sorted by path, within the
    /// bounds of this module; empty for a skill that is not a folder or cannot be read.
    pub fn files(&self) -> Vec<SkillFile> {
        self.folder().map(|root| listed(&root)).unwrap_or_default()
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
        let root = self.folder().ok_or(SkillFileError::NotListed)?;
        if !listed(&root).iter().any(|f| f.path == path) {
            return Err(SkillFileError::NotListed);
        }
        read(&root, path)
    }

    /// The file at `path` as text, as [`Skill::read_file`] reads it: what a model is shown.
    pub fn read_text_file(&self, path: &str) -> Result<String, SkillFileError> {
        String::from_utf8(self.read_file(path)?).map_err(|_| SkillFileError::NotText)
    }

    /// Every file of [`Skill::files`] with its bytes, each read as the iterator reaches it:
    /// one walk of the folder however many files it has. What is read counts against
    /// the 16 MiB a skill may publish as it arrives, so files that grew after the listing are refused
    /// past it.
    pub fn read_files(&self) -> impl Iterator<Item = (SkillFile, Result<Vec<u8>, SkillFileError>)> + '_ {
        let root = self.folder();
        let files = root.as_ref().map(listed).unwrap_or_default();
        let mut left = MAX_SKILL_BYTES;
        files.into_iter().map(move |file| {
            let bytes = root
                .as_ref()
                .ok_or(SkillFileError::NotListed)
                .and_then(|root| read(root, &file.path))
                .and_then(|bytes| match left.checked_sub(bytes.len() as u64) {
                    Some(rest) => {
                        left = rest;
                        Ok(bytes)
                    }
                    None => Err(SkillFileError::Refused(format!(
                        "the skill's files have grown past the {} MiB a skill may publish",
                        MAX_SKILL_BYTES >> 20
                    ))),
                });
            (file, bytes)
        })
    }
}

/// The files of a confined skill folder: walked within [`BOUNDS`], sorted by path, capped in
/// number and bytes.
fn listed(root: &Confined) -> Vec<SkillFile> {
    let mut found = list_files(root, RootKind::SkillFolder, BOUNDS);
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut files = Vec::new();
    let mut bytes = 0;
    for (path, real) in found {
        if files.len() == MAX_SKILL_FILES {
            tracing::warn!(folder = %root.real().display(), "skill folder has more files than are listed; the rest are left out");
            break;
        }
        let Ok(meta) = fs::metadata(&real) else { continue };
        if meta.len() > MAX_FILE_BYTES || bytes + meta.len() > MAX_SKILL_BYTES {
            tracing::warn!(file = %path, size = meta.len(), "skill file over the size cap; not listed");
            continue;
        }
        bytes += meta.len();
        files.push(SkillFile {
            path,
            size: meta.len(),
            modified: meta.modified().ok(),
        });
    }
    files
}

/// Read `path`, which the caller found in [`listed`].
fn read(root: &Confined, path: &str) -> Result<Vec<u8>, SkillFileError> {
    root.read_bytes(&root.real().join(path))
        .map_err(|p: ReadProblem| SkillFileError::Refused(p.reason(root.real())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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

    /// A folder with `n` files of `size` bytes beside its `SKILL.md`.
    fn folder_of(n: usize, size: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("SKILL.md"),
            "---\nname: s\ndescription: d\n---\nBody",
        )
        .unwrap();
        for i in 0..n {
            fs::write(dir.path().join(format!("f{i:04}")), vec![b'x'; size]).unwrap();
        }
        dir
    }

    #[test]
    fn a_skill_lists_at_most_its_cap_of_files_and_bytes() {
        let many = folder_of(MAX_SKILL_FILES + 10, 1);
        let listed = skill_in(many.path()).files();
        assert_eq!(listed.len(), MAX_SKILL_FILES);
        assert_eq!(listed[0].path, "SKILL.md");

        let heavy = folder_of(20, MAX_FILE_BYTES as usize);
        let listed = skill_in(heavy.path()).files();
        let bytes: u64 = listed.iter().map(|f| f.size).sum();
        assert!(bytes <= MAX_SKILL_BYTES, "{bytes}");
        assert_eq!(listed.len(), 16, "SKILL.md and the 15 files that fit");
    }

    #[test]
    fn files_that_grow_after_the_listing_are_read_no_further_than_the_cap() {
        let dir = folder_of(20, 1);
        let skill = skill_in(dir.path());
        let reads = skill.read_files();
        for i in 0..20 {
            fs::write(
                dir.path().join(format!("f{i:04}")),
                vec![b'x'; MAX_FILE_BYTES as usize],
            )
            .unwrap();
        }
        let results: Vec<_> = reads.map(|(_, bytes)| bytes).collect();
        assert_eq!(results.len(), 21);
        let read: usize = results.iter().flatten().map(Vec::len).sum();
        assert!(read as u64 <= MAX_SKILL_BYTES, "{read}");
        assert!(
            matches!(results.last(), Some(Err(SkillFileError::Refused(why))) if why.contains("grown past"))
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_swapped_for_a_link_out_after_the_listing_is_refused() {
        let dir = folder_of(1, 1);
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "KEY=1").unwrap();
        let skill = skill_in(dir.path());
        let reads = skill.read_files();
        fs::remove_file(dir.path().join("f0000")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("f0000")).unwrap();
        let swapped: Vec<_> = reads.filter(|(f, _)| f.path == "f0000").collect();
        assert!(matches!(swapped[0].1, Err(SkillFileError::Refused(_))));
        assert!(matches!(skill.read_file("f0000"), Err(SkillFileError::NotListed)));
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
