//! The evaluation set's checks and scoring, on small hand-made sets.

use super::*;

fn memory(id: &str, project: &str, content: &str) -> String {
    serde_json::json!({"id": id, "project": project, "category": "fact", "content": content}).to_string()
}

#[test]
fn the_embedded_set_is_valid_and_large_enough() {
    let set = EvalSet::embedded();
    assert!(set.memories.len() >= 200, "{}", set.memories.len());
    assert!(set.queries.len() >= 100, "{}", set.queries.len());
    let projects: HashSet<&str> = set.memories.iter().map(|m| m.project.as_str()).collect();
    assert!(projects.len() >= 3);
    assert!(set.memories.iter().any(|m| !m.supersedes.is_empty()));
}

#[test]
fn ids_named_must_be_memories_of_the_same_project() {
    let mems = [memory("a1", "/a", "Use pnpm"), memory("b1", "/b", "Use yarn")].join("\n");
    let ok = r#"{"project": "/a", "text": "package manager", "relevant": ["a1"]}"#;
    assert!(EvalSet::parse(&mems, ok).is_ok());
    let other = r#"{"project": "/a", "text": "package manager", "relevant": ["b1"]}"#;
    let err = EvalSet::parse(&mems, other).unwrap_err().to_string();
    assert!(err.contains("not a memory of its project"), "{err}");
    let unknown = r#"{"project": "/a", "text": "x", "relevant": ["zz"]}"#;
    assert!(EvalSet::parse(&mems, unknown).is_err());
    let bad = EvalSet::parse("{\"id\": 1}", ok).unwrap_err().to_string();
    assert!(bad.contains("memories.jsonl line 1"), "{bad}");
}

#[test]
fn superseded_answers_and_other_projects_do_not_count() {
    let mems = [
        memory("a1", "/a", "Deploys run on Mondays"),
        serde_json::json!({"id": "a2", "project": "/a", "category": "fact",
            "content": "Deploys moved to Tuesdays", "supersedes": ["a1"]})
        .to_string(),
        memory("b1", "/b", "Deploys run on Fridays"),
    ]
    .join("\n");
    // The old memory is labelled too: it must not count even so.
    let queries = r#"{"project": "/a", "text": "when do deploys run", "relevant": ["a1", "a2"]}"#;
    let set = EvalSet::parse(&mems, queries).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = set.run(&dir.path().join("eval.db")).unwrap();
    assert_eq!(
        (
            report.memories,
            report.superseded,
            report.projects,
            report.queries
        ),
        (3, 1, 2, 1)
    );
    assert_eq!(report.ctxkit.other_project, 0);
    assert_eq!(report.ctxkit.superseded_in_top_5, 0);
    // Plain full text returns the superseded row; only the current one is an answer.
    assert_eq!(report.baseline.superseded_in_top_5, 1);
    assert_eq!(report.ctxkit.recall_at_5, 1.0);
    assert_eq!(report.baseline.recall_at_5, 1.0);
    for s in [&report.ctxkit, &report.baseline] {
        assert!((0.0..=1.0).contains(&s.mrr));
    }
    // A database that exists is refused rather than mixed with the set.
    assert!(set.run(&dir.path().join("eval.db")).is_err());
}
