//! `external-skills.json`, the skill configuration planning tools share: named sources (a
//! folder, often a git submodule), skills picked from them with their detection rules,
//! phases and priority, the tiers' priority ranges, and selection settings. Read as is; the
//! repository's `docs/controls.md` describes the format.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::discover::SkillRoot;
use crate::skill::{Detect, Overrides, Source};

/// The most bytes read from the file.
const MAX_BYTES: u64 = 1 << 20;
/// The most skills taken from it.
const MAX_SKILLS: usize = 1_000;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    priority_ranges: BTreeMap<String, Range>,
    #[serde(default)]
    sources: BTreeMap<String, SourceEntry>,
    #[serde(default)]
    skills: BTreeMap<String, SkillEntry>,
    #[serde(default)]
    settings: Settings,
}

#[derive(Clone, Copy, Deserialize)]
struct Range {
    min: i64,
    max: i64,
}

#[derive(Deserialize)]
struct SourceEntry {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    path: String,
}

#[derive(Deserialize)]
struct SkillEntry {
    #[serde(default)]
    source: Option<String>,
    skill_path: String,
    #[serde(default)]
    detect: Option<Detect>,
    #[serde(default)]
    inject_into: Option<Vec<String>>,
    #[serde(default)]
    priority: Option<i64>,
}

#[derive(Default, Deserialize)]
struct Settings {
    max_skills_per_story: Option<usize>,
    max_content_lines: Option<usize>,
}

/// What an `external-skills.json` adds: one root per skill it lists, and its settings.
#[derive(Debug, Default)]
pub struct ExternalSkills {
    /// One root per listed skill (its folder), with the tier of its source's type, its
    /// priority (clamped into the tier's range) and its detection rules and phases.
    pub roots: Vec<SkillRoot>,
    /// `settings.max_skills_per_story`: the most skills sent per request.
    pub max_skills: Option<usize>,
    /// `settings.max_content_lines`: body lines injected per skill.
    pub max_content_lines: Option<usize>,
    /// Entries ignored or adjusted, each a sentence.
    pub warnings: Vec<String>,
}

impl ExternalSkills {
    /// Read `path`. Folders are relative to the file's folder and never leave it (no
    /// absolute path, no `..`, no link out). An unreadable, oversized or malformed file is
    /// an error of one sentence naming it.
    pub fn read(path: &Path) -> Result<ExternalSkills, String> {
        let mut text = String::new();
        let read = std::fs::File::open(path).and_then(|f| f.take(MAX_BYTES + 1).read_to_string(&mut text));
        if let Err(e) = read {
            return Err(format!("cannot read `{}`: {e}", path.display()));
        }
        if text.len() as u64 > MAX_BYTES {
            return Err(format!(
                "`{}` is larger than {} KiB",
                path.display(),
                MAX_BYTES >> 10
            ));
        }
        let file: File = serde_json::from_str(&text)
            .map_err(|e| format!("`{}` is not a valid external-skills.json: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        Ok(file.resolve(&base, path))
    }
}

impl File {
    fn resolve(self, base: &Path, path: &Path) -> ExternalSkills {
        let mut out = ExternalSkills {
            max_skills: self.settings.max_skills_per_story,
            max_content_lines: self.settings.max_content_lines,
            ..ExternalSkills::default()
        };
        let mut warn = |message: String| out.warnings.push(format!("{}: {message}", path.display()));
        for (name, skill) in self.skills.into_iter().take(MAX_SKILLS) {
            let (folder, kind) = match &skill.source {
                None => (base.to_path_buf(), "user".to_string()),
                Some(source) => match self.sources.get(source) {
                    Some(s) if is_plain(&s.path) => (
                        base.join(&s.path),
                        s.kind.clone().unwrap_or_else(|| "submodule".into()),
                    ),
                    Some(s) => {
                        warn(format!("source `{source}` has path `{}`, which leaves the file's folder; skill `{name}` ignored", s.path));
                        continue;
                    }
                    None => {
                        warn(format!("skill `{name}` names source `{source}`, which `sources` does not define; ignored"));
                        continue;
                    }
                },
            };
            if !is_plain(&skill.skill_path) {
                warn(format!(
                    "skill `{name}` has skill_path `{}`, which leaves its source; ignored",
                    skill.skill_path
                ));
                continue;
            }
            let tier = tier(&kind);
            let range = self.priority_ranges.get(&kind).copied();
            let priority = match (skill.priority, range) {
                (Some(p), Some(r)) if p < r.min || p > r.max => {
                    warn(format!(
                        "skill `{name}` has priority {p}, outside the `{kind}` range {}-{}; clamped",
                        r.min, r.max
                    ));
                    Some(p.clamp(r.min, r.max.max(r.min)))
                }
                (p, _) => p,
            };
            let mut inject_into = Vec::new();
            let mut always = false;
            for phase in skill.inject_into.iter().flatten() {
                match phase.parse() {
                    Ok(p) => inject_into.push(p),
                    Err(_) if phase.eq_ignore_ascii_case("always") => always = true,
                    Err(e) => warn(format!("skill `{name}`: {e} (or always); ignored")),
                }
            }
            if always {
                inject_into.clear();
            }
            let root_priority = priority
                .or(range.map(|r| r.min))
                .unwrap_or_else(|| tier.default_priority());
            let mut root = SkillRoot::new(folder.join(&skill.skill_path), tier)
                .with_priority(root_priority)
                .within(base);
            root.overrides = Some(Arc::new(Overrides {
                priority,
                detect: skill.detect,
                inject_into: skill.inject_into.is_some().then_some(inject_into),
            }));
            out.roots.push(root);
        }
        out
    }
}

/// The tier of a source `type`: `builtin`, `user`, `project` (or `local`); anything else
/// (`submodule`, `external`, `remote`) is external.
fn tier(kind: &str) -> Source {
    match kind {
        "builtin" => Source::Builtin,
        "user" => Source::User,
        "project" | "local" => Source::Project,
        _ => Source::External,
    }
}

/// A non-empty relative path of plain components.
fn is_plain(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> ExternalSkills {
        let file: File = serde_json::from_str(json).unwrap();
        file.resolve(Path::new("/cfg"), Path::new("/cfg/external-skills.json"))
    }

    #[test]
    fn skills_become_roots_with_their_tier_priority_and_rules() {
        let out = resolve(
            r#"{"priority_ranges": {"submodule": {"min": 51, "max": 100}},
                "sources": {"vercel": {"type": "submodule", "path": "external-skills/vercel"}},
                "skills": {"react": {"source": "vercel", "skill_path": "skills/react",
                    "detect": {"files": ["package.json"], "patterns": ["\"react\""]},
                    "inject_into": ["planning", "implementation"], "priority": 300}},
                "settings": {"max_skills_per_story": 2, "max_content_lines": 50}}"#,
        );
        let root = &out.roots[0];
        assert_eq!(root.path, Path::new("/cfg/external-skills/vercel/skills/react"));
        assert_eq!((root.source, root.priority), (Source::External, 100));
        let o = root.overrides.as_ref().unwrap();
        assert_eq!(o.detect.as_ref().unwrap().files, ["package.json"]);
        assert_eq!(o.inject_into.as_ref().unwrap().len(), 2);
        assert_eq!((out.max_skills, out.max_content_lines), (Some(2), Some(50)));
        assert!(out.warnings[0].contains("clamped"), "{:?}", out.warnings);
    }

    #[test]
    fn paths_out_of_the_folder_and_unknown_sources_are_ignored_with_a_warning() {
        let out = resolve(
            r#"{"sources": {"up": {"path": "../elsewhere"}, "abs": {"path": "/etc"}},
                "skills": {"a": {"source": "up", "skill_path": "x"},
                           "b": {"source": "abs", "skill_path": "x"},
                           "c": {"source": "none", "skill_path": "x"},
                           "d": {"skill_path": "../../x"}}}"#,
        );
        assert!(out.roots.is_empty());
        assert_eq!(out.warnings.len(), 4, "{:?}", out.warnings);
    }
}
