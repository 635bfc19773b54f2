//! Auto-detection by project files: a skill with `detect.files` applies to a project that has
//! one of those files at its root — and, when `detect.patterns` is set, one of the patterns
//! (plain substrings) appears in such a file.

use std::path::{Component, Path};

use crate::confined::Confined;
use crate::index::SkillIndex;

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
        self.ranked()
            .filter(|s| !s.disable_model_invocation)
            .filter(|s| {
                let Some(detect) = &s.detect else { return false };
                let present: Vec<_> = detect
                    .files
                    .iter()
                    .filter(|f| is_inside(f))
                    .filter_map(|f| project.resolve(&project.real().join(f)).ok())
                    .filter(|p| p.is_file())
                    .collect();
                if detect.patterns.is_empty() {
                    return !present.is_empty();
                }
                present.iter().any(|p| {
                    let text = project.read_text(p).unwrap_or_default();
                    detect.patterns.iter().any(|pat| text.contains(pat.as_str()))
                })
            })
            .map(|s| s.name.clone())
            .collect()
    }
}
