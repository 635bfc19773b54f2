//! The immutable skill index: parsed skills, deduplicated by priority, with their compiled
//! triggers. Requests read an `Arc` snapshot; [`SkillLibrary::reload`] builds a new one and
//! swaps it in while requests run.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};

use crate::cache;
use crate::confined::Confined;
use crate::descriptor::{load_descriptor, TOOLS_FILE};
use crate::diagnostic::Diagnostic;
use crate::discover::SkillRoot;
use crate::matcher::Matcher;
use crate::rank::Ranker;
use crate::scan::{Scan, Scanned};
use crate::skill::Skill;

/// Every loaded skill and its compiled triggers.
#[derive(Debug)]
pub struct SkillIndex {
    pub(crate) skills: Vec<Skill>,
    pub(crate) matcher: Matcher,
    /// Lowercased name → skill.
    pub(crate) by_name: HashMap<String, usize>,
    /// Skills with `always: true`.
    pub(crate) always: Vec<usize>,
    /// Position of each skill when ordered by priority (high first), then name.
    pub(crate) rank: Vec<u32>,
    /// Skills in rank order (the catalog order).
    pub(crate) ranked: Vec<usize>,
    /// The library's words for the ranking: built on its first use, so
    /// an index that never uses it (the default) does not pay for indexing every body.
    ranker: OnceLock<Ranker>,
    /// The cache folder the index was loaded through, which keeps the ranker too.
    cache: Option<PathBuf>,
    diagnostics: Vec<Diagnostic>,
    /// Skills turned off by the user's or project's config: listed, never used.
    disabled: Vec<Skill>,
}

impl SkillIndex {
    /// Discover, parse and index every skill under `roots`. Never fails: every problem is a
    /// diagnostic (see [`SkillIndex::diagnostics`]) and the rest loads.
    pub fn load(roots: &[SkillRoot]) -> SkillIndex {
        Self::from_scan(roots, Scan::run(roots), &[])
    }

    /// Index a scan of `roots`: each skill folder's `tools.json` is read and validated here,
    /// never cached, so a cached scan offers exactly the tools a fresh one would.
    /// Skills named in `disabled` (case-insensitive) are set aside.
    fn from_scan(roots: &[SkillRoot], scan: Scan, disabled: &[String]) -> SkillIndex {
        let mut diagnostics = scan.diagnostics;
        let mut confined: Vec<Option<Option<Confined>>> = vec![None; roots.len()];
        let skills = scan
            .skills
            .into_iter()
            .map(
                |Scanned {
                     root,
                     mut skill,
                     tools_file,
                 }| {
                    if let Some(overrides) = &roots[root].overrides {
                        overrides.apply(&mut skill);
                    }
                    if tools_file {
                        let folder =
                            confined[root].get_or_insert_with(|| Confined::new(&roots[root].path).ok());
                        if let Some(folder) = folder {
                            let (tools, diags) = load_descriptor(folder, &skill.path);
                            skill.tools = tools;
                            diagnostics.extend(diags);
                        }
                    }
                    skill
                },
            )
            .collect();
        Self::build_enabled(skills, diagnostics, disabled)
    }

    /// Index skills already in memory. Two skills with one name: the higher source tier wins,
    /// then the higher priority, then the one listed first; the loser is a diagnostic. Two
    /// skills offering one tool name: the higher-ranked keeps it, the other loses that tool.
    pub fn build(skills: Vec<Skill>, diagnostics: Vec<Diagnostic>) -> SkillIndex {
        Self::build_enabled(skills, diagnostics, &[])
    }

    fn build_enabled(
        skills: Vec<Skill>,
        mut diagnostics: Vec<Diagnostic>,
        disabled: &[String],
    ) -> SkillIndex {
        // Nothing disabled, the usual case: no pass over the skills.
        let (off, skills): (Vec<Skill>, Vec<Skill>) = if disabled.is_empty() {
            (Vec::new(), skills)
        } else {
            skills
                .into_iter()
                .partition(|s| disabled.iter().any(|d| d.eq_ignore_ascii_case(&s.name)))
        };
        let mut kept: Vec<Skill> = Vec::with_capacity(skills.len());
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for skill in skills {
            let key = skill.name.to_lowercase();
            match by_name.get(&key) {
                None => {
                    by_name.insert(key, kept.len());
                    kept.push(skill);
                }
                Some(&i) => {
                    let wins = (skill.source, skill.priority) > (kept[i].source, kept[i].priority);
                    let (winner, loser) = if wins {
                        (&skill, &kept[i])
                    } else {
                        (&kept[i], &skill)
                    };
                    diagnostics.push(Diagnostic::warning(
                        &loser.path,
                        None,
                        format!(
                            "skill `{}` is shadowed by {} ({:?} tier, priority {} vs {:?} tier, priority {})",
                            loser.name,
                            winner.path.display(),
                            winner.source,
                            winner.priority,
                            loser.source,
                            loser.priority
                        ),
                    ));
                    if wins {
                        kept[i] = skill;
                    }
                }
            }
        }
        let matcher = Matcher::build(&kept, &mut diagnostics);
        let mut ranked: Vec<usize> = (0..kept.len()).collect();
        ranked.sort_by(|&a, &b| {
            kept[b]
                .priority
                .cmp(&kept[a].priority)
                .then_with(|| kept[a].name.cmp(&kept[b].name))
        });
        drop_shadowed_tools(&mut kept, &ranked, &mut diagnostics);
        let mut rank = vec![0u32; kept.len()];
        for (pos, &i) in ranked.iter().enumerate() {
            rank[i] = pos as u32;
        }
        let always = ranked.iter().copied().filter(|&i| kept[i].always).collect();
        SkillIndex {
            skills: kept,
            matcher,
            by_name,
            always,
            rank,
            ranked,
            ranker: OnceLock::new(),
            cache: None,
            diagnostics,
            disabled: off,
        }
    }

    pub(crate) fn ranker(&self) -> &Ranker {
        self.ranker.get_or_init(|| match &self.cache {
            Some(dir) => cache::ranker(dir, &self.skills),
            None => Ranker::new(&self.skills),
        })
    }

    /// Every skill, in load order.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// Skills ordered by priority (high first), then name — the catalog order.
    pub fn ranked(&self) -> impl Iterator<Item = &Skill> {
        self.ranked.iter().map(|&i| &self.skills[i])
    }

    /// How many skills the index holds after name clashes are resolved.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether no skill loaded (the provider then offers no catalog and no `read_skill`).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// A skill by name (case-insensitive). Names only: this never touches the file system.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.position(name).map(|i| &self.skills[i])
    }

    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(&name.to_lowercase()).copied()
    }

    /// Every problem found while loading, warnings and errors.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Skills the config turned off (`ctxkit skills disable`): loaded so they can be listed,
    /// never selected, read, detected or offered.
    pub fn disabled(&self) -> &[Skill] {
        &self.disabled
    }

    /// Whether any file was skipped.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Tool names must be unique in a request: walking skills in rank order, a tool whose name a
/// higher-ranked skill already offers is dropped, with a warning on the loser's `tools.json`.
fn drop_shadowed_tools(skills: &mut [Skill], ranked: &[usize], diagnostics: &mut Vec<Diagnostic>) {
    let mut owners: HashMap<String, usize> = HashMap::new();
    for &i in ranked {
        let mut tools = std::mem::take(&mut skills[i].tools);
        tools.retain(|tool| match owners.get(tool.name()) {
            None => {
                owners.insert(tool.name().to_string(), i);
                true
            }
            Some(&owner) => {
                let loser = &skills[i];
                let winner = &skills[owner];
                diagnostics.push(Diagnostic::warning(
                    loser.path.with_file_name(TOOLS_FILE),
                    None,
                    format!(
                        "tool `{}` of skill `{}` is dropped: skill `{}` (priority {} vs {}) declares a tool with that name",
                        tool.name(),
                        loser.name,
                        winner.name,
                        winner.priority,
                        loser.priority
                    ),
                ));
                false
            }
        });
        skills[i].tools = tools;
    }
}

/// How a [`SkillLibrary`] loads, on every load and reload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The folder of the on-disk index cache (see [`SkillLibrary::load_cached`]); `None` to
    /// parse every file on every load.
    pub cache: Option<PathBuf>,
    /// Names of skills turned off (case-insensitive): loaded and listed by
    /// [`SkillIndex::disabled`], never selected, read, detected or offered.
    pub disabled: Vec<String>,
}

/// A reloadable handle on the current index, shared by the provider and its tools.
#[derive(Debug)]
pub struct SkillLibrary {
    roots: Vec<SkillRoot>,
    options: RwLock<LoadOptions>,
    current: RwLock<Arc<SkillIndex>>,
}

impl SkillLibrary {
    /// Load `roots` now.
    pub fn load(roots: Vec<SkillRoot>) -> Self {
        Self::load_with(roots, LoadOptions::default())
    }

    /// Load `roots` now through an on-disk cache kept in `cache_dir` (created if missing),
    /// and every later [`reload`](Self::reload) too.
    ///
    /// The cache holds the parsed skills of these roots and the size and modification times
    /// of every folder walked and file read. A load that finds them all unchanged skips the
    /// walk, the reads and the parsing (650 real skills: about 2 ms instead of 80 ms); any
    /// difference, a missing, truncated or foreign cache file, or one written by another
    /// version rebuilds it silently. Each skill's `tools.json` is read and validated on every
    /// load, cached or not. The cache never changes what loads: a cached index equals a fresh
    /// one, diagnostics included.
    pub fn load_cached(roots: Vec<SkillRoot>, cache_dir: impl Into<PathBuf>) -> Self {
        Self::load_with(
            roots,
            LoadOptions {
                cache: Some(cache_dir.into()),
                ..LoadOptions::default()
            },
        )
    }

    /// Load `roots` now with `options`, and every later reload the same way.
    pub fn load_with(roots: Vec<SkillRoot>, options: LoadOptions) -> Self {
        let index = load_index(&roots, &options, None);
        SkillLibrary {
            roots,
            options: RwLock::new(options),
            current: RwLock::new(Arc::new(index)),
        }
    }

    /// Wrap an index built elsewhere (reload then rebuilds from no roots, so prefer `load`).
    pub fn from_index(index: SkillIndex) -> Self {
        SkillLibrary {
            roots: Vec::new(),
            options: RwLock::default(),
            current: RwLock::new(Arc::new(index)),
        }
    }

    /// The current snapshot; it stays valid (and unchanged) while a reload swaps in a new one.
    pub fn snapshot(&self) -> Arc<SkillIndex> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Rebuild from the roots and swap the new index in; returns it. A skill that loaded
    /// before and whose file now fails to load keeps its last good version, with a warning
    /// beside the error: a broken edit in a running session does not lose the skill.
    pub fn reload(&self) -> Arc<SkillIndex> {
        let index = Arc::new(load_index(&self.roots, &self.options(), Some(&self.snapshot())));
        self.swap(index.clone());
        index
    }

    /// Rebuild and swap only when something a request could see changed (a skill added,
    /// removed, edited, turned off, or a new problem); returns the new index then. An
    /// unchanged snapshot keeps its identity, so what providers cached for it stays.
    pub fn reload_if_changed(&self) -> Option<Arc<SkillIndex>> {
        let index = Arc::new(self.load_if_changed()?);
        self.swap(index.clone());
        Some(index)
    }

    /// A fresh index when it differs from the current one, without swapping it in.
    pub(crate) fn load_if_changed(&self) -> Option<SkillIndex> {
        let current = self.snapshot();
        let index = load_index(&self.roots, &self.options(), Some(&current));
        (fingerprint(&index) != fingerprint(&current)).then_some(index)
    }

    /// Turn off exactly the skills named in `disabled` (case-insensitive), in this index and
    /// every later reload; returns the new index when that changed which skills are off.
    ///
    /// For long-running hosts whose settings change under them: ctxkit's own commands call it
    /// before each message with the names their config file holds then, so a skill turned
    /// off elsewhere (another terminal, the `serve` page) is not selected from the next one.
    /// Through the index cache this costs a few `stat` calls when nothing changed on disk.
    pub fn set_disabled(&self, disabled: Vec<String>) -> Option<Arc<SkillIndex>> {
        {
            let mut options = self.options.write().unwrap_or_else(|e| e.into_inner());
            if options.disabled == disabled {
                return None;
            }
            options.disabled = disabled;
        }
        self.reload_if_changed()
    }

    /// The options every (re)load uses now.
    fn options(&self) -> LoadOptions {
        self.options.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replace the current index.
    pub fn swap(&self, index: Arc<SkillIndex>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = index;
    }

    /// The roots every reload walks.
    pub fn roots(&self) -> &[SkillRoot] {
        &self.roots
    }

    /// Check every `SKILL.md` under the roots against the agentskills.io specification, to
    /// the letter ([`Skill::check_spec`]): found and read as loading finds and reads them (a
    /// file that cannot be read is an error too); other formats are not skills of the
    /// specification and are left out.
    pub fn check_spec(&self) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        for file in crate::discover::discover(&self.roots).found {
            if crate::skill::Format::of(&file.path) != crate::skill::Format::Skill {
                continue;
            }
            match file.read() {
                Ok(text) => found.extend(Skill::check_spec(&file.path, &text)),
                Err(d) => found.push(d),
            }
        }
        found
    }
}

/// Per skill (id, tools, phases, priority); disabled ids; diagnostics.
type Fingerprint<'a> = (
    Vec<(&'a str, usize, &'a [ctxkit::Phase], i64)>,
    Vec<&'a str>,
    Vec<String>,
);

/// What tells two indexes apart for a request: each skill's id (its content hash), tools and
/// phases, the disabled names, and the diagnostics.
fn fingerprint(index: &SkillIndex) -> Fingerprint<'_> {
    (
        index
            .skills
            .iter()
            .map(|s| (s.id.as_str(), s.tools.len(), s.inject_into.as_slice(), s.priority))
            .collect(),
        index.disabled.iter().map(|s| s.id.as_str()).collect(),
        index.diagnostics.iter().map(|d| d.to_string()).collect(),
    )
}

/// An index of `roots`, through the cache when there is one; skills of `previous` whose file
/// no longer loads are kept (see [`SkillLibrary::reload`]).
fn load_index(roots: &[SkillRoot], options: &LoadOptions, previous: Option<&SkillIndex>) -> SkillIndex {
    let build = |mut scan: Scan| {
        if let Some(previous) = previous {
            keep_last_good(&mut scan, roots, previous);
        }
        SkillIndex::from_scan(roots, scan, &options.disabled)
    };
    match &options.cache {
        Some(dir) => SkillIndex {
            cache: Some(dir.clone()),
            ..cache::load(dir, roots, build)
        },
        None => build(Scan::run(roots)),
    }
}

/// Put back each skill of `previous` whose file is now skipped with an error.
fn keep_last_good(scan: &mut Scan, roots: &[SkillRoot], previous: &SkillIndex) {
    let broken: Vec<PathBuf> = scan
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.path.clone())
        .collect();
    if broken.is_empty() {
        return;
    }
    for old in previous.skills.iter().chain(&previous.disabled) {
        let Some(root) = roots.iter().position(|r| old.path.starts_with(&r.path)) else {
            continue;
        };
        if !broken.contains(&old.path)
            || scan
                .skills
                .iter()
                .any(|s| s.skill.name.eq_ignore_ascii_case(&old.name))
        {
            continue;
        }
        scan.diagnostics.push(Diagnostic::warning(
            &old.path,
            None,
            format!(
                "the last good version of skill `{}` stays in use until this file loads again",
                old.name
            ),
        ));
        scan.skills.push(Scanned {
            root,
            skill: old.clone(),
            tools_file: false,
        });
    }
}
