//! The on-disk index cache: a cached load equals a fresh one, sees every edit, survives a
//! broken cache file and concurrent writers.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ctxkit_skills::{SelectOptions, SkillIndex, SkillLibrary, SkillRoot, Source};

/// A copy of the bundled skills (one with a `tools.json`) plus a broken one, so diagnostics
/// and tools are part of what is compared.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills");
    for entry in fs::read_dir(&bundled).unwrap() {
        let from = entry.unwrap().path();
        let to = root.join(from.file_name().unwrap());
        fs::create_dir_all(&to).unwrap();
        for file in fs::read_dir(&from).unwrap() {
            let file = file.unwrap().path();
            fs::copy(&file, to.join(file.file_name().unwrap())).unwrap();
        }
    }
    write(&root, "broken/SKILL.md", "---\nname: broken\n---\nno description");
    (dir, root)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Wait until the files just written are old enough to be cached (a scan of files changed in
/// the last two seconds is used but not saved, as their timestamps may not show a next edit).
fn settle() {
    std::thread::sleep(Duration::from_millis(2100));
}

fn roots(root: &Path) -> Vec<SkillRoot> {
    vec![SkillRoot::new(root, Source::Project)]
}

/// Everything a user sees of an index, as text.
fn summary(index: &SkillIndex) -> String {
    let mut out = String::new();
    for s in index.ranked() {
        let tools: Vec<&str> = s.tools.iter().map(|t| t.name()).collect();
        out += &format!(
            "{} {:?} {:?} {:?} {}\n",
            s.name, s.triggers, tools, s.hash, s.body
        );
    }
    for d in index.diagnostics() {
        out += &format!("{d}\n");
    }
    out
}

fn cache_files(dir: &Path) -> Vec<(PathBuf, SystemTime)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .map(|p| {
                    let modified = fs::metadata(&p).unwrap().modified().unwrap();
                    (p, modified)
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn cached(root: &Path, cache: &Path) -> String {
    summary(&SkillLibrary::load_cached(roots(root), cache).snapshot())
}

#[test]
fn a_cached_load_equals_a_fresh_one_and_is_reused() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    let fresh = summary(&SkillIndex::load(&roots(&root)));
    assert!(
        fresh.contains("file-search") && fresh.contains("broken"),
        "{fresh}"
    );

    assert_eq!(cached(&root, &cache), fresh, "the load that writes the cache");
    let written = cache_files(&cache);
    assert_eq!(written.len(), 1, "one cache file per list of roots");
    assert_eq!(cached(&root, &cache), fresh, "the load that reads it");
    assert_eq!(
        cache_files(&cache),
        written,
        "a current cache is read, not rewritten"
    );
}

#[test]
fn edits_deletions_and_new_skills_are_seen() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    cached(&root, &cache);

    // Same size, modification time put back: only the change time tells.
    let git = root.join("git-workflow/SKILL.md");
    let before = fs::metadata(&git).unwrap().modified().unwrap();
    let text = fs::read_to_string(&git).unwrap();
    let edited = text.replacen("commit", "COMMIT", 1);
    assert_eq!(edited.len(), text.len());
    fs::write(&git, &edited).unwrap();
    fs::File::options()
        .write(true)
        .open(&git)
        .unwrap()
        .set_modified(before)
        .unwrap();
    assert!(cached(&root, &cache).contains("COMMIT"), "an edit in place");

    fs::remove_dir_all(root.join("sql-helper")).unwrap();
    write(
        &root,
        "brand-new/SKILL.md",
        "---\nname: brand-new\ndescription: New\ntriggers: [fresh]\n---\nNew body.",
    );
    let now = cached(&root, &cache);
    assert!(!now.contains("sql-helper"), "a deleted skill");
    assert!(now.contains("brand-new"), "a new skill");

    // Tools are read on every load, cached or not.
    write(&root, "file-search/tools.json", "{ not json");
    let now = cached(&root, &cache);
    assert!(
        now.contains("tools.json"),
        "the broken descriptor is reported: {now}"
    );
    assert_eq!(now, summary(&SkillIndex::load(&roots(&root))));
}

#[test]
fn a_default_root_created_later_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir(&project).unwrap();
    let cache = dir.path().join("cache");
    settle();
    let load =
        || summary(&SkillLibrary::load_cached(SkillRoot::project_defaults(&project), &cache).snapshot());
    assert_eq!(load(), "");
    write(
        &project,
        ".claude/skills/late/SKILL.md",
        "---\nname: late\ndescription: Late\n---\nLate body.",
    );
    assert!(load().contains("late"));
}

#[test]
fn a_truncated_or_garbage_cache_is_rebuilt_silently() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    let fresh = cached(&root, &cache);
    let (file, _) = cache_files(&cache).pop().unwrap();
    let bytes = fs::read(&file).unwrap();

    fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(cached(&root, &cache), fresh, "truncated");
    assert_eq!(fs::read(&file).unwrap(), bytes, "rewritten whole");

    fs::write(&file, b"\xff\x00garbage").unwrap();
    assert_eq!(cached(&root, &cache), fresh, "garbage");
    fs::write(&file, b"").unwrap();
    assert_eq!(cached(&root, &cache), fresh, "empty");
}

#[test]
fn concurrent_writers_leave_one_whole_cache() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    let fresh = summary(&SkillIndex::load(&roots(&root)));
    std::thread::scope(|scope| {
        let loads: Vec<_> = (0..8).map(|_| scope.spawn(|| cached(&root, &cache))).collect();
        for load in loads {
            assert_eq!(load.join().unwrap(), fresh);
        }
    });
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1, "no temporary file is left behind: {files:?}");
    assert_eq!(cached(&root, &cache), fresh);
    assert_eq!(cache_files(&cache), files, "the file left is current");
}

#[test]
fn an_unwritable_cache_folder_only_costs_the_cache() {
    let (dir, root) = fixture();
    let not_a_folder = dir.path().join("file");
    fs::write(&not_a_folder, "x").unwrap();
    assert_eq!(
        cached(&root, &not_a_folder),
        summary(&SkillIndex::load(&roots(&root)))
    );
}

#[test]
fn bodies_read_later_come_from_the_version_loaded_even_after_a_rewrite() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    let fresh = summary(&SkillIndex::load(&roots(&root)));
    cached(&root, &cache);
    // Loaded from the cache: bodies stay in the file until read.
    let library = SkillLibrary::load_cached(roots(&root), &cache);
    let (file, _) = cache_files(&cache).pop().unwrap();
    let replacement = dir.path().join("replacement");
    fs::write(&replacement, vec![b'x'; 64]).unwrap();
    fs::rename(&replacement, &file).unwrap();
    assert_eq!(summary(&library.snapshot()), fresh);
}

/// A file whose modification time is in the future (tar and zip restore the archive's times)
/// does not keep its library out of the cache: the next load reads the cache, and an edit to
/// that file is still seen.
#[test]
fn a_future_modification_time_is_cached_and_edits_still_seen() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    let git = root.join("git-workflow/SKILL.md");
    let future = SystemTime::now() + Duration::from_secs(10 * 365 * 24 * 3600);
    for path in [git.clone(), root.join("git-workflow")] {
        fs::File::open(&path).unwrap().set_modified(future).unwrap();
    }
    settle();
    let fresh = cached(&root, &cache);
    let written = cache_files(&cache);
    assert_eq!(written.len(), 1, "the scan is saved");
    assert_eq!(cached(&root, &cache), fresh, "and read back");
    assert_eq!(cache_files(&cache), written, "not rewritten");

    let text = fs::read_to_string(&git).unwrap();
    let edited = text.replacen("commit", "COMMIT", 1);
    fs::write(&git, &edited).unwrap();
    fs::File::options()
        .write(true)
        .open(&git)
        .unwrap()
        .set_modified(future)
        .unwrap();
    assert!(
        cached(&root, &cache).contains("COMMIT"),
        "an edit that puts the future time back"
    );
}

/// What a message selects from a cached library, and why, as text.
fn ranked(root: &Path, cache: &Path, message: &str) -> String {
    let index = SkillLibrary::load_cached(roots(root), cache).snapshot();
    format!(
        "{:?}",
        index.rank(&[message], &[], &SelectOptions::default(), None)
    )
}

#[test]
fn the_words_ranker_is_kept_beside_the_index_and_a_damaged_one_is_rebuilt() {
    let (dir, root) = fixture();
    let cache = dir.path().join("cache");
    settle();
    let message = "find every TODO in the repository files";
    let fresh = format!(
        "{:?}",
        SkillIndex::load(&roots(&root)).rank(&[message], &[], &SelectOptions::default(), None)
    );
    assert!(fresh.contains("file-search"), "{fresh}");

    assert_eq!(
        ranked(&root, &cache, message),
        fresh,
        "the selection that builds it"
    );
    let rankers = || -> Vec<PathBuf> {
        cache_files(&cache)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ranker-"))
            .collect()
    };
    let [file] = &rankers()[..] else {
        panic!("one ranker file: {:?}", rankers())
    };
    let file = file.clone();
    let bytes = fs::read(&file).unwrap();
    assert_eq!(
        ranked(&root, &cache, message),
        fresh,
        "the selection that reads it"
    );

    fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
    assert_eq!(ranked(&root, &cache, message), fresh, "truncated");
    assert_eq!(fs::read(&file).unwrap(), bytes, "rewritten whole");

    // Another skill's text is another library: another file, never the old one's words.
    write(
        &root,
        "todo-finder/SKILL.md",
        "---\nname: todo-finder\ndescription: List TODO comments\n---\nFind every TODO and FIXME.",
    );
    assert!(ranked(&root, &cache, message).contains("todo-finder"));
    assert_eq!(rankers().len(), 2);
}
