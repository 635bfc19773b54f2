//! Auto-detection by project files: a skill with `detect.files` applies to a project that has
//! one of those files at its root — and, when `detect.patterns` is set, one of the patterns
//! (plain substrings) appears in such a file.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

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

impl SkillIndex {
    /// Names of the skills whose detection rules match `project`, in rank order. Project files
    /// are read like skill files: never through a link out of the project,
    /// never a pipe or a device, never more than the size cap.
    pub fn detect(&self, project: &Path) -> Vec<String> {
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
            let mut present: Vec<PathBuf> = detect
                .files
                .iter()
                .filter(|f| is_inside(f))
                .take(MAX_PER_SKILL)
                .filter_map(|f| project.resolve(&project.real().join(f)).ok())
                .filter(|p| p.is_file())
                .collect();
            present.sort();
            present.dedup();
            let matched = if detect.patterns.is_empty() {
                !present.is_empty()
            } else {
                present.iter().any(|p| {
                    let text = texts
                        .entry(p.clone())
                        .or_insert_with(|| project.read_text(p).unwrap_or_default());
                    detect.patterns.iter().take(MAX_PER_SKILL).any(|pattern| {
                        scan_left = scan_left.saturating_sub(text.len());
                        scan_left > 0 && text.contains(pattern.as_str())
                    })
                })
            };
            if matched {
                found.push(skill.name.clone());
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
