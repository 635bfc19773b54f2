//! Extraction: parsing model replies, the prompt, storing what is new, refusing secrets and
//! reporting failures.

use ctxkit::{ScriptedModel, ToolCall};

use super::*;
use crate::sqlite::SqliteMemoryStore;

const P: &str = "/work/alpha";

fn store() -> (tempfile::TempDir, Arc<SqliteMemoryStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    (dir, store)
}

const GOOD: &str = r#"[
  {"category": "preference", "content": "Use pnpm, not npm", "keywords": ["pnpm", "npm"], "importance": 0.95},
  {"category": "convention", "content": "Tests live in __tests__/ directories", "keywords": ["tests"], "importance": 0.6},
  {"category": "fact", "content": "The frontend uses Zustand", "importance": 0.4}
]"#;

#[test]
fn parses_a_bare_array() {
    let m = parse_extraction(GOOD).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].category, MemoryCategory::Preference);
    assert_eq!(m[0].keywords, ["pnpm", "npm"]);
    assert_eq!(m[1].importance, 0.6);
    assert!(m[2].keywords.is_empty(), "missing keywords are empty");
    assert!(parse_extraction("[]").unwrap().is_empty());
}

#[test]
fn parses_fenced_and_wrapped_replies() {
    let fenced = format!("Here is what I found:\n\n```json\n{GOOD}\n```\n\nLet me know if you need more.");
    assert_eq!(parse_extraction(&fenced).unwrap().len(), 3);
    let unlabelled = format!("```\n{GOOD}\n```");
    assert_eq!(parse_extraction(&unlabelled).unwrap().len(), 3);
    let prose = format!("Sure! [Note: 3 items] {GOOD} Hope this helps.");
    assert_eq!(parse_extraction(&prose).unwrap().len(), 3);
    let object = format!("{{\"memories\": {GOOD}}}");
    assert_eq!(parse_extraction(&object).unwrap().len(), 3);
    let out_of_range = r#"[{"category": "FACT", "content": "x y", "importance": 7}]"#;
    assert_eq!(parse_extraction(out_of_range).unwrap()[0].importance, 1.0);
}

#[test]
fn malformed_and_mistyped_replies_are_clear_errors() {
    let cases = [
        ("", "empty"),
        ("Nothing worth remembering here.", "no JSON array"),
        ("[{\"category\": \"fact\", \"content\": \"x\",}]", "malformed"),
        (
            "```json\n[{\"category\": \"fact\", \"content\": \"x\"\n```",
            "malformed",
        ),
        (
            "[{\"category\": 3, \"content\": \"x\"}]",
            "item 1: `category` must be a string, found a number",
        ),
        (
            "[{\"category\": \"opinion\", \"content\": \"x\"}]",
            "item 1: `category` is \"opinion\"",
        ),
        ("[{\"content\": \"x\"}]", "`category` is missing"),
        ("[{\"category\": \"fact\"}]", "`content` is missing"),
        (
            "[{\"category\": \"fact\", \"content\": \"  \"}]",
            "`content` is empty",
        ),
        (
            "[{\"category\": \"fact\", \"content\": \"x\", \"importance\": \"high\"}]",
            "`importance` must be a number, found a string",
        ),
        (
            "[{\"category\": \"fact\", \"content\": \"x\", \"keywords\": \"a,b\"}]",
            "`keywords` must be a list",
        ),
        (
            "[{\"category\": \"fact\", \"content\": \"x\", \"keywords\": [1]}]",
            "`keywords` must hold strings",
        ),
        (
            "[{\"category\": \"fact\", \"content\": \"ok\"}, \"oops\"]",
            "item 2: expected an object, found a string",
        ),
    ];
    for (reply, needle) in cases {
        let err = parse_extraction(reply).unwrap_err();
        assert!(matches!(err, MemoryError::ExtractionParse(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "{reply:?}: {err}");
    }
}

#[test]
fn the_prompt_is_the_seeds_with_the_secrets_rule() {
    let input = ExtractionInput {
        task_description: "Set up the monorepo".into(),
        files_read: vec!["package.json".into()],
        key_findings: vec!["uses pnpm workspaces".into()],
        conversation_summary: "User: set it up".into(),
        session_id: None,
    };
    let known = MemoryEntry {
        id: "k".into(),
        project_path: P.into(),
        category: MemoryCategory::Correction,
        content: "Never edit the lockfile by hand".into(),
        keywords: vec![],
        importance: 0.9,
        access_count: 0,
        source_session_id: None,
        source_context: None,
        created_at: 0,
        updated_at: 0,
        last_accessed_at: 0,
        decayed_at: None,
        superseded_by: None,
        superseded_at: None,
    };
    let prompt = build_prompt(&input, &[known]);
    for part in [
        "You are a memory extraction system.",
        "## Session Task\nSet up the monorepo",
        "## Files Read\n- package.json",
        "## Key Findings\n- uses pnpm workspaces",
        "## Conversation Summary\nUser: set it up",
        "## Already Known (DO NOT duplicate these)\n- [WARN] Never edit the lockfile by hand",
        "\"category\": \"preference|convention|pattern|correction|fact\"",
        "- Do NOT extract secrets, credentials, API keys, or passwords",
        "- Return empty array [] if nothing worth extracting",
    ] {
        assert!(prompt.contains(part), "missing {part:?} in\n{prompt}");
    }
}

#[test]
fn input_from_messages_lists_files_and_redacts_secrets() {
    let token = format!("xoxb-1234567890-{}", "AbCdEfGhIjKlMnOp");
    let messages = vec![
        Message::system("be brief"),
        Message::user("Fix the login bug"),
        Message::tool_calls(vec![
            ToolCall::new("1", "read_file", &serde_json::json!({"path": "src/login.rs"})),
            ToolCall::new("2", "grep", &serde_json::json!({"pattern": "login"})),
        ]),
        Message::tool_result("1", format!("const SLACK = \"{token}\";")),
        Message::assistant("Fixed it."),
    ];
    let input = ExtractionInput::from_messages(&messages);
    assert_eq!(input.task_description, "Fix the login bug");
    assert_eq!(input.files_read, ["src/login.rs"]);
    assert!(input
        .conversation_summary
        .contains("Assistant called: read_file, grep"));
    assert!(input.conversation_summary.contains("Assistant: Fixed it."));
    assert!(!input.conversation_summary.contains("be brief"));
    assert!(!input.conversation_summary.contains(&token));
    assert!(input.conversation_summary.contains("[REDACTED:slack-token]"));
}

#[tokio::test]
async fn extraction_stores_new_memories_dedupes_and_refuses_secrets() {
    let (_dir, store) = store();
    store
        .add(NewMemoryEntry::new(P, MemoryCategory::Fact, "The frontend uses Zustand").importance(0.4))
        .await
        .unwrap();
    let secret = format!("AKIA{}", "IOSFODNN7EXAMPLE");
    let reply = format!(
        "```json\n[{}, {{\"category\": \"fact\", \"content\": \"The CI key is {secret}\", \"importance\": 0.9}}]\n```",
        &GOOD.trim()[1..GOOD.trim().len() - 1]
    );
    let model = Arc::new(ScriptedModel::new([
        Message::assistant(reply.clone()),
        Message::assistant(reply),
    ]));
    let extractor = MemoryExtractor::new(model.clone(), store.clone());
    let input = ExtractionInput {
        task_description: "set up".into(),
        session_id: Some("s-9".into()),
        ..Default::default()
    };
    let report = extractor.extract_and_store(P, &input).await.unwrap();
    assert_eq!(report.proposed, 4);
    assert_eq!(report.inserted.len(), 2);
    assert_eq!(
        report.skipped.len(),
        1,
        "the Zustand fact is already known: {report:?}"
    );
    assert_eq!(report.refused, ["aws-access-key-id"]);
    assert_eq!(store.count(P).await.unwrap(), 3);
    let stored = store.get(&report.inserted[0]).await.unwrap().unwrap();
    assert_eq!(stored.content, "Use pnpm, not npm");
    assert_eq!(stored.importance, 0.95);
    assert_eq!(stored.source_session_id.as_deref(), Some("s-9"));
    let everything = store.export(Some(P)).await.unwrap();
    assert!(!format!("{everything:?}").contains(&secret));
    // The prompt showed the known memory.
    assert!(model.requests()[0].messages[0]
        .content
        .contains("- [FACT] The frontend uses Zustand"));
    // Backends with structured output are asked for `{"memories": [...]}`, which the reader
    // takes like the bare array above.
    let schema = model.requests()[0].reply_schema.clone().expect("a reply schema");
    assert_eq!(schema["required"], serde_json::json!(["memories"]));
    assert!(
        schema["properties"]["memories"]["items"]["properties"]["category"]["enum"]
            .as_array()
            .is_some_and(|c| c.contains(&"preference".into()))
    );
    let wrapped = format!("{{\"memories\": {}}}", GOOD.trim());
    assert_eq!(
        parse_extraction(&wrapped).unwrap(),
        parse_extraction(GOOD).unwrap()
    );

    // The same reply again adds nothing.
    let again = extractor.extract_and_store(P, &input).await.unwrap();
    assert!(again.inserted.is_empty() && again.merged.is_empty());
    assert_eq!(again.skipped.len(), 3);
    assert_eq!(store.count(P).await.unwrap(), 3);
}

#[tokio::test]
async fn a_failed_model_call_is_an_error() {
    let (_dir, store) = store();
    let model = Arc::new(ScriptedModel::default());
    model.push_error("connection refused");
    let extractor = MemoryExtractor::new(model, store.clone());
    let err = extractor
        .extract_and_store(P, &ExtractionInput::default())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::ExtractionModel(_)), "{err:?}");
    assert!(err.to_string().contains("connection refused"), "{err}");
    // A reply that is not JSON is an error too, not an empty extraction.
    let model = Arc::new(ScriptedModel::new([Message::assistant(
        "I could not find anything.",
    )]));
    let err = MemoryExtractor::new(model, store)
        .extract_and_store(P, &ExtractionInput::default())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::ExtractionParse(_)), "{err:?}");
}

#[tokio::test]
async fn a_server_refusing_the_reply_schema_is_asked_without_it() {
    let (_dir, store) = store();
    let model = Arc::new(ScriptedModel::default());
    model.push_error("HTTP 400: `response_format` json_schema is not supported by this model");
    model.push(Message::assistant(format!("Here you go: {GOOD}")));
    let report = MemoryExtractor::new(model.clone(), store)
        .extract_and_store(P, &ExtractionInput::default())
        .await
        .unwrap();
    assert_eq!(report.proposed, 3);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].reply_schema.is_some() && requests[1].reply_schema.is_none());
    assert_eq!(requests[0].messages, requests[1].messages);
}

/// Extracted keywords used to be lowercased before the check (`AKIA…` stored as `akia…`).
#[tokio::test]
async fn extracted_keywords_are_checked_before_they_are_lowercased() {
    let (_dir, store) = store();
    let secret = format!("AKIA{}", "IOSFODNN7EXAMPLE");
    let reply = format!(
        "[{{\"category\": \"fact\", \"content\": \"CI uploads artifacts to S3\", \"keywords\": [\"s3\", \"{secret}\"], \"importance\": 0.6}}]"
    );
    let model = Arc::new(ScriptedModel::new([Message::assistant(reply)]));
    let report = MemoryExtractor::new(model, store.clone())
        .extract_and_store(P, &ExtractionInput::default())
        .await
        .unwrap();
    assert_eq!(report.refused, ["aws-access-key-id"]);
    assert_eq!(store.count(P).await.unwrap(), 0);
    let all = format!("{:?}", store.export(None).await.unwrap()).to_lowercase();
    assert!(!all.contains(&secret.to_lowercase()));
}
