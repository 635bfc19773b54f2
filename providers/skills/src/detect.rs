//! Auto-detection by project files: a skill with `detect.files` applies to a project that has
//! one of those files at its root — and, when `detect.patterns` is set, one of the patterns
//! (plain substrings) appears in such a file.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::confined::Confined;
use crate::index::SkillIndex;

/// Most files and patterns of one skill's detect rules that are looked at.
const MAX_PER_SKILL: usize = 16;
/// Most text one detection scans, across every skill, file and pattern.
const MAX_SCAN_BYTES: usize = 64 << 20;

/// A detect file must be a plain relative path inside the project.
fn is_inside(file: &str) -> bool {
    let p = Path::new(file);
    !file.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Why a skill was auto-detected: the files of its `detect` rules present in the project and
/// the patterns found in them (none when presence is enough).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// The skill.
    pub name: String,
    /// The `detect.files` entries present, as the skill wrote them.
    pub files: Vec<String>,
    /// The `detect.patterns` found in those files.
    pub patterns: Vec<String>,
}

impl SkillIndex {
    /// Names of the skills whose detection rules match `project`, in rank order. Project files
    /// are read like skill files: never through a link out of the project,
    /// never a pipe or a device, never more than the size cap.
    pub fn detect(&self, project: &Path) -> Vec<String> {
        self.detect_report(project).into_iter().map(|d| d.name).collect()
    }

    /// The skills whose detection rules match `project`, in rank order, with the files and
    /// patterns that matched (read as [`detect`](Self::detect) reads them).
    pub fn detect_report(&self, project: &Path) -> Vec<Detection> {
        let Ok(project) = Confined::new(project) else {
            return Vec::new();
        };
        // Each project file is read once, and the whole call scans a bounded amount of text,
        // however many files and patterns the skills name.
        let mut texts: HashMap<PathBuf, String> = HashMap::new();
        let mut scan_left = MAX_SCAN_BYTES;
        let mut found = Vec::new();
        for skill in self.ranked().filter(|s| !s.disable_model_invocation) {
            let Some(detect) = &skill.detect else { continue };
            let mut present: Vec<(PathBuf, &String)> = detect
                .files
                .iter()
                .filter(|f| is_inside(f))
                .take(MAX_PER_SKILL)
                .filter_map(|f| Some((project.resolve(&project.real().join(f)).ok()?, f)))
                .filter(|(p, _)| p.is_file())
                .collect();
            present.sort();
            present.dedup_by(|a, b| a.0 == b.0);
            let mut patterns = Vec::new();
            if !detect.patterns.is_empty() {
                for (p, _) in &present {
                    let text = texts
                        .entry(p.clone())
                        .or_insert_with(|| project.read_text(p).unwrap_or_default());
                    for pattern in detect.patterns.iter().take(MAX_PER_SKILL) {
                        scan_left = scan_left.saturating_sub(text.len());
                        if scan_left > 0 && text.contains(pattern.as_str()) && !patterns.contains(pattern) {
                            patterns.push(pattern.clone());
                        }
                    }
                }
            }
            let matched = !present.is_empty() && (detect.patterns.is_empty() || !patterns.is_empty());
            if matched {
                found.push(Detection {
                    name: skill.name.clone(),
                    files: present.into_iter().map(|(_, f)| f.clone()).collect(),
                    patterns,
                });
            }
            if scan_left == 0 {
                tracing::warn!(
                    "auto-detection stopped: the skills' detect rules asked to scan too much text"
                );
                break;
            }
        }
        found
    }
}
