//! Auto-detection by project files: a skill with `detect.files` applies to a project that has
//! one of those files at its root, or with `detect.globs` one with a file the globs match —
//! and, when `detect.patterns` is set, one of the patterns (plain substrings) appears in such
//! a file.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use regex::RegexSet;

use crate::confined::Confined;
use crate::discover::project_files;
use crate::index::SkillIndex;

/// Most files, globs and patterns of one skill's detect rules that are looked at.
const MAX_PER_SKILL: usize = 16;
/// Longest glob compiled; a longer one is ignored.
const MAX_GLOB_CHARS: usize = 256;
/// Compiled size one skill's globs may take.
const MAX_GLOB_BYTES: usize = 256 << 10;
/// Most text one detection scans, across every skill, file and pattern (the project's file
/// list counts once).
const MAX_SCAN_BYTES: usize = 64 << 20;
/// Most skills whose globs one detection matches against the project's files, in rank order:
/// each costs a pass over the file list.
const MAX_GLOB_SKILLS: usize = 256;

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
    /// The `detect.files` entries present, as the skill wrote them, then the first project
    /// file its `detect.globs` matched.
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
        // The project's file list, walked once, and only when a skill has globs.
        let mut listed: Option<Vec<String>> = None;
        let mut glob_skills = 0;
        for skill in self.ranked().filter(|s| !s.disable_model_invocation) {
            let Some(detect) = &skill.detect else { continue };
            let mut present: Vec<(PathBuf, String)> = detect
                .files
                .iter()
                .filter(|f| is_inside(f))
                .take(MAX_PER_SKILL)
                .filter_map(|f| Some((project.resolve(&project.real().join(f)).ok()?, f.clone())))
                .filter(|(p, _)| p.is_file())
                .collect();
            present.sort();
            present.dedup_by(|a, b| a.0 == b.0);
            if !detect.globs.is_empty() {
                glob_skills += 1;
                if glob_skills == MAX_GLOB_SKILLS + 1 {
                    tracing::warn!("auto-detection matches the globs of the first {MAX_GLOB_SKILLS} skills that have them; later ones are detected by files only");
                }
            }
            let globs = (glob_skills <= MAX_GLOB_SKILLS)
                .then(|| glob_set(&detect.globs))
                .flatten();
            if let Some(globs) = globs {
                let files = listed.get_or_insert_with(|| {
                    let files = project_files(&project);
                    scan_left = scan_left.saturating_sub(files.iter().map(String::len).sum());
                    files
                });
                if let Some(file) = files.iter().find(|f| globs.is_match(f)) {
                    present.push((project.real().join(file), file.clone()));
                }
            }
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
                    files: present.into_iter().map(|(_, f)| f).collect(),
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

/// A skill's globs as one set (of the first [`MAX_PER_SKILL`], those that compile); `None` when none
/// does.
fn glob_set(globs: &[String]) -> Option<RegexSet> {
    let patterns: Vec<String> = globs
        .iter()
        .take(MAX_PER_SKILL)
        .filter_map(|g| glob_regex(g))
        // One that does not compile (`[z-a]`) is dropped alone, not with the rest.
        .filter(|p| {
            regex::RegexBuilder::new(p)
                .size_limit(MAX_GLOB_BYTES)
                .build()
                .is_ok()
        })
        .collect();
    if patterns.is_empty() {
        return None;
    }
    regex::RegexSetBuilder::new(patterns)
        .size_limit(MAX_GLOB_BYTES)
        .build()
        .ok()
}

/// The regular expression of a glob over `/`-separated paths relative to the project: `*` and
/// `?` stay within a folder, `**` crosses folders (`**/` also matches none), `{a,b}` is either,
/// `[a-z]` and `[!a]` are classes. A glob without a `/` matches a file name at any depth, one
/// ending in `/` everything below the folder. `None` for an empty or overlong glob, one that
/// climbs out with `..`, or unbalanced braces.
fn glob_regex(glob: &str) -> Option<String> {
    let glob = glob.trim();
    let glob = glob.strip_prefix("./").unwrap_or(glob);
    if glob.is_empty() || glob.chars().count() > MAX_GLOB_CHARS || glob.split('/').any(|c| c == "..") {
        return None;
    }
    let mut re = String::from("^");
    if !glob.contains('/') {
        re.push_str("(?:.*/)?");
    }
    let glob = glob.trim_start_matches('/');
    let chars: Vec<char> = glob.chars().collect();
    let (mut i, mut braces) = (0, 0usize);
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                let folders = chars.get(i + 2) == Some(&'/');
                re.push_str(if folders { "(?:.*/)?" } else { ".*" });
                i += if folders { 3 } else { 2 };
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '{' => {
                braces += 1;
                re.push_str("(?:");
            }
            '}' if braces > 0 => {
                braces -= 1;
                re.push(')');
            }
            ',' if braces > 0 => re.push('|'),
            '[' => match chars[i + 1..].iter().skip(1).position(|&c| c == ']') {
                Some(len) => {
                    let class = &chars[i + 1..i + 2 + len];
                    let (negated, class) = match class.split_first() {
                        Some(('!' | '^', rest)) => (true, rest),
                        _ => (false, class),
                    };
                    re.push_str(if negated { "[^/" } else { "[" });
                    for &c in class {
                        if c == '-' {
                            re.push('-');
                        } else {
                            re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
                        }
                    }
                    re.push(']');
                    i += len + 3;
                    continue;
                }
                None => re.push_str(r"\["),
            },
            c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    if glob.ends_with('/') {
        re.push_str(".*");
    }
    (braces == 0).then(|| re + "$")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(glob: &str, path: &str) -> bool {
        regex::Regex::new(&glob_regex(glob).unwrap())
            .unwrap()
            .is_match(path)
    }

    #[test]
    fn globs_match_as_cursor_and_copilot_write_them() {
        assert!(matches("**/*.tsx", "App.tsx") && matches("**/*.tsx", "src/ui/App.tsx"));
        assert!(!matches("**/*.tsx", "App.ts") && !matches("src/*.ts", "src/a/b.ts"));
        assert!(
            matches("*.tsx", "src/App.tsx"),
            "no slash: a file name at any depth"
        );
        assert!(matches("src/**/*.{ts,js}", "src/a/b.js") && !matches("src/**/*.{ts,js}", "lib/b.js"));
        assert!(matches("docs/", "docs/a/b.md") && matches("**", "a/b"));
        assert!(matches("f[a-c]?.[!x]s", "fb1.js") && !matches("f[a-c]?.[!x]s", "fb1.xs"));
        assert!(matches("a+b(1).md", "a+b(1).md"), "regex characters are literal");
        for bad in ["", "../x/*.ts", "a/../../b", "{a,b", &"x".repeat(300)] {
            assert_eq!(glob_regex(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_glob_that_does_not_compile_leaves_the_others_working() {
        let set = glob_set(&["[z-a].ts".to_string(), "**/*.tsx".to_string()]).unwrap();
        assert!(set.is_match("src/App.tsx"));
    }
}
