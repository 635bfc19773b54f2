//! The expensive, cacheable part of loading: find every skill file under the roots, read it
//! and parse it. What follows (each skill's `tools.json`, name clashes, the trigger table) is built
//! from a scan every time, so a scan from the cache and a fresh one give the same index.

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::descriptor::TOOLS_FILE;
use crate::diagnostic::Diagnostic;
use crate::discover::{discover, Discovery, SkillRoot};
use crate::parse::{parse_skill, PatternBudget};
use crate::skill::Skill;

/// Every skill parsed under a list of roots, with the problems met on the way.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Scan {
    /// Problems of discovery, reading and parsing, in the order they were met.
    pub diagnostics: Vec<Diagnostic>,
    /// Each parsed skill, in discovery order, with its root's tier and priority applied.
    pub skills: Vec<Scanned>,
    /// Every path whose change could change the scan: each folder walked and each file read.
    #[serde(skip)]
    pub watched: Vec<PathBuf>,
}

/// One parsed skill and the root it was found under.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Scanned {
    /// Index of its root in the list scanned.
    pub root: usize,
    /// The skill, without tools (they are read from `tools.json` when the index is built).
    pub skill: Skill,
    /// Its folder has a `tools.json` (only skill folders do; a convention file's folder is a
    /// project). Creating or deleting one changes the folder, so a cached scan knows too.
    pub tools_file: bool,
}

impl Scan {
    /// Walk, read and parse everything under `roots` now.
    pub(crate) fn run(roots: &[SkillRoot]) -> Scan {
        let Discovery {
            found,
            mut diagnostics,
            folders,
        } = discover(roots);
        let mut watched = folders;
        let mut skills = Vec::with_capacity(found.len());
        let mut budget = PatternBudget::library();
        for f in found {
            watched.push(f.real.clone());
            let content = match f.read() {
                Ok(c) => c,
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            };
            let folder = f
                .path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str());
            let (parsed, diags) = parse_skill(&f.path, &content, folder, &mut budget);
            diagnostics.extend(diags);
            if let Some(parsed) = parsed {
                let root = &roots[f.root_index];
                let skill_folder = f.path.file_name().is_some_and(|n| n == "SKILL.md");
                let tools_file =
                    skill_folder && fs::symlink_metadata(f.path.with_file_name(TOOLS_FILE)).is_ok();
                let mut skill = parsed.with_root(root.source, root.priority);
                if skill_folder {
                    // Where its files are read from from now on (see `Skill::files`).
                    skill.real_folder = f.path.parent().and_then(|dir| f.root.resolve(dir).ok());
                }
                skills.push(Scanned {
                    root: f.root_index,
                    skill,
                    tools_file,
                });
            }
        }
        Scan {
            diagnostics,
            skills,
            watched,
        }
    }
}
