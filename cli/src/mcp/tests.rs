//! An rmcp client talks to the server in-process, over `tokio::io::duplex`: every tool,
//! resource, prompt and Skills-extension call, and their error paths.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use ctxkit_memory::{MemoryCategory, MemoryStore, NewMemoryEntry, SqliteMemoryStore};
use ctxkit_skills::{
    Mode, SelectOptions, SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetSkillRequestParams,
    ReadResourceRequestParams, ResourceContents, SkillResources,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tower::ServiceExt as _;

use super::CtxkitServer;

const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

fn write_skill(root: &Path, name: &str, text: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

struct Fixture {
    _dir: tempfile::TempDir,
    skills: std::path::PathBuf,
    store: Arc<SqliteMemoryStore>,
    server: CtxkitServer,
}

fn fixture(mode: Mode) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(
        &skills,
        "deploy",
        "---\nname: deploy\ndescription: Ship the service\ntriggers: [deploy, release]\nuser-invocable: true\n---\nRun ./ship.sh and watch the logs.",
    );
    write_skill(
        &skills,
        "pdf",
        "---\nname: pdf\ndescription: Work with PDF files\ntriggers: [pdf]\n---\nUse pdftotext.",
    );
    std::fs::write(dir.path().join("outside.txt"), "TOP SECRET FILE").unwrap();
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(&skills, Source::Project)]));
    let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db")).unwrap());
    let config = SkillConfig {
        mode,
        select: SelectOptions {
            max_skills: 3,
            ..SelectOptions::default()
        },
        ..SkillConfig::default()
    };
    let server = CtxkitServer::new(
        SkillContextProvider::new(library, config),
        store.clone() as Arc<dyn MemoryStore>,
        "/repo".into(),
        None,
    );
    Fixture {
        _dir: dir,
        skills,
        store,
        server,
    }
}

async fn connect<C: ClientHandler>(server: CtxkitServer, client: C) -> RunningService<RoleClient, C> {
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    client.serve(client_end).await.expect("the client connects")
}

async fn call<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .expect("the call is answered")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.clone())
        .collect()
}

fn failed(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The one sentence of a failed call.
fn error_text(result: &CallToolResult) -> String {
    assert!(failed(result), "expected a tool error, got {result:?}");
    let t = text(result);
    assert!(!t.is_empty() && !t.contains('\n'), "one sentence: {t:?}");
    t
}

#[tokio::test]
async fn tools_are_listed_with_annotations_and_schemas() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in [
        "match_skills",
        "list_skills",
        "read_skill",
        "add_memory",
        "search_memories",
        "list_memories",
        "delete_memory",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for tool in &tools {
        let a = tool.annotations.as_ref().expect("annotated");
        let read_only = !matches!(tool.name.as_ref(), "add_memory" | "delete_memory");
        assert_eq!(a.read_only_hint, Some(read_only), "{}", tool.name);
        assert!(tool.output_schema.is_some(), "{} has an output schema", tool.name);
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
    }
    let by_name = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
    let delete = by_name("delete_memory").annotations.clone().unwrap();
    assert_eq!(delete.destructive_hint, Some(true));
    let add = by_name("add_memory").annotations.clone().unwrap();
    assert_eq!(
        (add.destructive_hint, add.idempotent_hint),
        (Some(false), Some(true))
    );
    let read = Value::Object((*by_name("read_skill").input_schema).clone());
    assert_eq!(read["required"], json!(["name"]));
}

#[tokio::test]
async fn match_skills_says_which_fire_and_why() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let result = call(
        &client,
        "match_skills",
        json!({"message": "please deploy the PDF viewer"}),
    )
    .await;
    assert!(!failed(&result));
    let answer = result.structured_content.expect("structured content");
    let skills = answer["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"deploy") && names.contains(&"pdf"));
    let deploy = skills.iter().find(|s| s["name"] == "deploy").unwrap();
    assert_eq!(deploy["reason"], "triggered");
    assert_eq!(deploy["triggers"], json!(["deploy"]));
    assert_eq!(deploy["body"], "Run ./ship.sh and watch the logs.");

    let capped = call(
        &client,
        "match_skills",
        json!({"message": "deploy the pdf", "max_skills": 1}),
    )
    .await;
    assert_eq!(
        capped.structured_content.unwrap()["skills"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let none = call(&client, "match_skills", json!({"message": "Othello"})).await;
    assert_eq!(none.structured_content.unwrap()["skills"], json!([]));

    // A trigger that fired as an inflected form says which.
    let inflected = call(&client, "match_skills", json!({"message": "we deployed it"})).await;
    let answer = inflected.structured_content.unwrap();
    assert_eq!(answer["skills"][0]["triggers"], json!(["deploy"]));
    assert_eq!(answer["skills"][0]["forms"], json!({"deploy": "deployed"}));
    assert_eq!(
        deploy.get("forms"),
        None,
        "absent when every trigger fired as written"
    );
}

#[tokio::test]
async fn on_demand_mode_matches_without_bodies() {
    let f = fixture(Mode::OnDemand);
    let client = connect(f.server, ()).await;
    let result = call(&client, "match_skills", json!({"message": "deploy"})).await;
    let skill = &result.structured_content.unwrap()["skills"][0];
    assert_eq!(skill["description"], "Ship the service");
    assert!(skill.get("body").is_none());
}

#[tokio::test]
async fn match_skills_bounds_its_arguments() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let long = "deploy ".repeat(super::tools::MAX_MESSAGE_CHARS / 7 + 1);
    let too_long = call(&client, "match_skills", json!({"message": long})).await;
    assert!(error_text(&too_long).contains("longer than"));
    let zero = call(
        &client,
        "match_skills",
        json!({"message": "deploy", "max_skills": 0}),
    )
    .await;
    assert!(error_text(&zero).contains("between 1 and 20"));
    let missing = call(&client, "match_skills", json!({})).await;
    assert!(error_text(&missing).contains("message"));
}

#[tokio::test]
async fn list_and_read_skills_by_name() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let listed = call(&client, "list_skills", json!({})).await;
    let skills = listed.structured_content.unwrap()["skills"].clone();
    assert_eq!(skills.as_array().unwrap().len(), 2);
    let deploy = skills
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "deploy")
        .unwrap();
    assert_eq!(deploy["triggers"], json!(["deploy", "release"]));
    assert_eq!(deploy["user_invocable"], true);

    let read = call(&client, "read_skill", json!({"name": "DEPLOY"})).await;
    assert!(!failed(&read));
    let skill = read.structured_content.unwrap();
    assert_eq!(skill["name"], "deploy");
    assert_eq!(skill["body"], "Run ./ship.sh and watch the logs.");
}

#[tokio::test]
async fn read_skill_never_reads_a_path() {
    let f = fixture(Mode::Hybrid);
    let outside = f.skills.parent().unwrap().join("outside.txt");
    let client = connect(f.server, ()).await;
    for name in [
        "../outside.txt",
        "../../outside.txt",
        outside.to_str().unwrap(),
        "deploy/../pdf",
        "deploy/SKILL.md",
        "nonexistent",
        &"x".repeat(10_000),
    ] {
        let result = call(&client, "read_skill", json!({ "name": name })).await;
        let error = error_text(&result);
        assert!(error.contains("no loaded skill has that name"), "{error}");
    }
}

#[tokio::test]
async fn memory_round_trip() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let added = call(
        &client,
        "add_memory",
        json!({"content": "Always use pnpm, not npm", "category": "preference", "importance": 0.9}),
    )
    .await;
    assert!(!failed(&added), "{}", text(&added));
    let added = added.structured_content.unwrap();
    assert_eq!(added["outcome"], "inserted");
    let id = added["id"].as_str().unwrap().to_string();

    // The store merges what it already holds: adding again changes nothing.
    let again = call(
        &client,
        "add_memory",
        json!({"content": "Always use pnpm, not npm", "category": "preference"}),
    )
    .await;
    let again = again.structured_content.unwrap();
    assert_ne!(again["outcome"], "inserted");
    assert_eq!(again["id"], json!(id));

    let before = f.store.get(&id).await.unwrap().unwrap();
    let found = call(
        &client,
        "search_memories",
        json!({"query": "which package manager, pnpm or npm?"}),
    )
    .await;
    let found = found.structured_content.unwrap();
    assert_eq!(found["memories"][0]["id"], json!(id));
    assert_eq!(found["memories"][0]["category"], "preference");
    // A search over MCP only reads: the memory's use is not counted.
    let read = f.store.get(&id).await.unwrap().unwrap();
    assert_eq!(read.access_count, before.access_count);
    assert_eq!(read.last_accessed_at, before.last_accessed_at);

    let listed = call(&client, "list_memories", json!({"category": "preference"})).await;
    assert_eq!(
        listed.structured_content.unwrap()["memories"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let facts = call(&client, "list_memories", json!({"category": "fact"})).await;
    assert_eq!(facts.structured_content.unwrap()["memories"], json!([]));

    let deleted = call(&client, "delete_memory", json!({ "id": id })).await;
    assert_eq!(deleted.structured_content.unwrap()["deleted"]["id"], json!(id));
    let listed = call(&client, "list_memories", json!({})).await;
    assert_eq!(listed.structured_content.unwrap()["memories"], json!([]));
    let twice = call(&client, "delete_memory", json!({ "id": id })).await;
    assert!(error_text(&twice).contains("no memory of this project has that id"));
}

#[tokio::test]
async fn memories_of_other_projects_are_out_of_reach() {
    let f = fixture(Mode::Hybrid);
    let other = f
        .store
        .add(NewMemoryEntry::new(
            "/elsewhere",
            MemoryCategory::Fact,
            "The elsewhere build uses make",
        ))
        .await
        .unwrap();
    let client = connect(f.server, ()).await;
    let deleted = call(&client, "delete_memory", json!({ "id": other.id })).await;
    assert!(error_text(&deleted).contains("no memory of this project"));
    let found = call(&client, "search_memories", json!({"query": "make build"})).await;
    assert_eq!(found.structured_content.unwrap()["memories"], json!([]));
    assert!(f.store.get(&other.id).await.unwrap().is_some());
}

#[tokio::test]
async fn secrets_are_refused_and_never_echoed() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let attempts = [
        json!({"content": format!("the deploy token is {SECRET}")}),
        json!({"content": "deploy with the token", "keywords": [SECRET]}),
        json!({"content": "deploy", "category": SECRET}),
        json!({"content": "deploy", "importance": SECRET}),
        json!({"content": SECRET, "importance": 7}),
    ];
    for args in attempts {
        let result = call(&client, "add_memory", args.clone()).await;
        let error = error_text(&result);
        assert!(!error.contains("ghp_0123"), "{error}");
    }
    let first = call(
        &client,
        "add_memory",
        json!({"content": format!("token {SECRET}")}),
    )
    .await;
    assert!(error_text(&first).contains("secrets are never stored"));
    assert_eq!(f.store.count("/repo").await.unwrap(), 0);
}

#[tokio::test]
async fn search_and_add_bound_their_arguments() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let k = call(&client, "search_memories", json!({"query": "x", "top_k": 51})).await;
    assert!(error_text(&k).contains("between 1 and 50"));
    let q = call(&client, "search_memories", json!({"query": "q".repeat(10_001)})).await;
    assert!(error_text(&q).contains("longer than"));
    let keywords: Vec<String> = (0..33).map(|i| format!("k{i}")).collect();
    let many = call(
        &client,
        "add_memory",
        json!({"content": "c", "keywords": keywords}),
    )
    .await;
    assert!(error_text(&many).contains("at most 32 keywords"));
    let long = call(&client, "add_memory", json!({"content": "x".repeat(5_000)})).await;
    assert!(failed(&long));
    let category = call(&client, "list_memories", json!({"category": "gossip"})).await;
    assert!(error_text(&category).contains("unknown memory category"));
}

#[tokio::test]
async fn skills_are_resources_prompts_and_extension_entries() {
    let f = fixture(Mode::Hybrid);
    let client = connect(f.server, ()).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["skill://deploy/SKILL.md", "skill://pdf/SKILL.md"]);
    let read = client
        .read_resource(ReadResourceRequestParams::new("skill://deploy/SKILL.md"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, mime_type, .. } = &read.contents[0] else {
        panic!("text contents");
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    let file = std::fs::read_to_string(f.skills.join("deploy/SKILL.md")).unwrap();
    assert_eq!(text, &file, "the file as written");
    for uri in [
        "skill://../outside.txt/SKILL.md",
        "file:///etc/passwd",
        "skill://nope/SKILL.md",
    ] {
        let error = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("no skill resource has that URI"),
            "{error}"
        );
    }

    let prompts = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["deploy"], "only user-invocable skills are prompts");
    let mut params = GetPromptRequestParams::new("deploy");
    params.arguments = Some(json!({"request": "ship v2"}).as_object().unwrap().clone());
    let prompt = client.get_prompt(params).await.unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    let body = message["content"]["text"].as_str().unwrap();
    assert!(
        body.contains("Run ./ship.sh") && body.ends_with("## Request\nship v2"),
        "{body}"
    );
    assert!(client
        .get_prompt(GetPromptRequestParams::new("pdf"))
        .await
        .is_err());

    let listed = client.list_skills(None).await.unwrap();
    let entries = serde_json::to_value(&listed).unwrap();
    assert_eq!(entries["skills"][0]["uri"], "skill://deploy/SKILL.md");
    assert_eq!(
        entries["skills"][0]["frontmatter"],
        json!({"name": "deploy", "description": "Ship the service", "triggers": ["deploy", "release"], "user-invocable": true}),
        "every field the author wrote"
    );
    rmcp::model::validate_skills(&listed.skills).unwrap();
    let got = client
        .get_skill(GetSkillRequestParams::new("skill://pdf/SKILL.md"))
        .await
        .unwrap();
    assert_eq!(got.skill.frontmatter.description, "Work with PDF files");
    assert!(client
        .get_skill(GetSkillRequestParams::new("skill://x/SKILL.md"))
        .await
        .is_err());
}

/// The `bytes` of a resource read, whether it came as text or as a base64 blob.
fn bytes_of(contents: &ResourceContents) -> Vec<u8> {
    use base64::Engine;
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text.as_bytes().to_vec(),
        ResourceContents::BlobResourceContents { blob, .. } => {
            base64::engine::general_purpose::STANDARD.decode(blob).unwrap()
        }
        other => panic!("unexpected contents {other:?}"),
    }
}

/// `skills/list` keeps each entry until its skill or a file of it changes: an edited file has
/// its new digest at the next listing, and a name the author padded or left empty is served as
/// the name the skill's URI ends in, so every entry validates.
#[tokio::test]
async fn skill_entries_follow_their_files_and_always_validate() {
    let f = fixture(Mode::Hybrid);
    let deploy = f.skills.join("deploy");
    std::fs::create_dir_all(deploy.join("references")).unwrap();
    std::fs::write(deploy.join("references/api.md"), "v1").unwrap();
    write_skill(
        &f.skills,
        "padded",
        "---\nname: \"  padded \"\ndescription: Padded name\n---\nBody.",
    );
    write_skill(
        &f.skills,
        "unnamed",
        "---\nname: \"\"\ndescription: Empty name\n---\nBody.",
    );
    f.server.skills.library().reload();
    let client = connect(f.server, ()).await;
    let digest_of_api = |listed: &rmcp::model::ListSkillsResult| {
        listed
            .skills
            .iter()
            .find(|s| s.frontmatter.name == "deploy")
            .and_then(|s| match &s.resources {
                SkillResources::Files(files) => files
                    .iter()
                    .find(|r| r.uri.ends_with("references/api.md"))
                    .map(|r| r.digest.clone()),
                _ => None,
            })
            .unwrap()
    };

    let first = client.list_skills(None).await.unwrap();
    for skill in &first.skills {
        skill.validate().unwrap();
    }
    let names: Vec<&str> = first.skills.iter().map(|s| s.frontmatter.name.as_str()).collect();
    assert!(
        names.contains(&"padded") && names.contains(&"unnamed"),
        "{names:?}"
    );
    assert_eq!(
        digest_of_api(&client.list_skills(None).await.unwrap()),
        digest_of_api(&first)
    );

    std::fs::write(deploy.join("references/api.md"), "version 2").unwrap();
    let edited = client.list_skills(None).await.unwrap();
    let read = client
        .read_resource(ReadResourceRequestParams::new("skill://deploy/references/api.md"))
        .await
        .unwrap();
    let entry = edited
        .skills
        .iter()
        .find(|s| s.frontmatter.name == "deploy")
        .unwrap();
    let SkillResources::Files(files) = &entry.resources else {
        panic!("a folder has a manifest");
    };
    let api = files
        .iter()
        .find(|r| r.uri.ends_with("references/api.md"))
        .unwrap();
    assert_ne!(api.digest, digest_of_api(&first));
    api.verify(&bytes_of(&read.contents[0])).unwrap();
}

#[tokio::test]
async fn a_skill_folder_travels_whole_and_nothing_else_does() {
    let f = fixture(Mode::Hybrid);
    let deploy = f.skills.join("deploy");
    let outside = f.skills.parent().unwrap().join("outside.txt");
    std::fs::create_dir_all(deploy.join("references")).unwrap();
    std::fs::create_dir_all(deploy.join("assets")).unwrap();
    std::fs::write(deploy.join("references/notes v2.md"), "# Notes\r\n\u{feff}é\n").unwrap();
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00];
    std::fs::write(deploy.join("assets/logo.png"), png).unwrap();
    std::fs::write(deploy.join(".env"), "TOKEN=1").unwrap();
    std::fs::write(deploy.join("huge.bin"), vec![b'x'; (1 << 20) + 1]).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, deploy.join("linked.txt")).unwrap();
        let fifo = deploy.join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
    }
    let client = connect(f.server, ()).await;

    let got = client
        .get_skill(GetSkillRequestParams::new("skill://deploy/SKILL.md"))
        .await
        .unwrap();
    got.skill.validate().unwrap();
    let SkillResources::Files(files) = &got.skill.resources else {
        panic!("a folder has a manifest");
    };
    let uris: Vec<&str> = files.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://deploy/SKILL.md",
            "skill://deploy/assets/logo.png",
            "skill://deploy/references/notes%20v2.md"
        ],
        "hidden files, links out, FIFOs and files over the cap are left out"
    );
    for (resource, path) in files
        .iter()
        .zip(["SKILL.md", "assets/logo.png", "references/notes v2.md"])
    {
        let read = client
            .read_resource(ReadResourceRequestParams::new(resource.uri.clone()))
            .await
            .unwrap();
        let bytes = bytes_of(&read.contents[0]);
        assert_eq!(
            bytes,
            std::fs::read(deploy.join(path)).unwrap(),
            "{path} byte-exact"
        );
        resource.verify(&bytes).unwrap();
    }
    let logo = client
        .read_resource(ReadResourceRequestParams::new("skill://deploy/assets/logo.png"))
        .await
        .unwrap();
    assert!(
        matches!(&logo.contents[0], ResourceContents::BlobResourceContents { mime_type: Some(m), .. } if m == "image/png")
    );

    for uri in [
        "skill://deploy/../outside.txt",
        "skill://deploy/%2e%2e/outside.txt",
        "skill://deploy/references/../../outside.txt",
        "skill://deploy//etc/passwd",
        "skill://deploy/linked.txt",
        "skill://deploy/pipe",
        "skill://deploy/huge.bin",
        "skill://deploy/.env",
        "skill://deploy/references",
    ] {
        let error = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("no skill file has that URI"), "{uri}: {error}");
    }

    // The tool reads the same files, by the paths its answer lists.
    let whole = call(&client, "read_skill", json!({"name": "deploy"})).await;
    let whole = whole.structured_content.unwrap();
    assert_eq!(
        whole["files"],
        json!(["assets/logo.png", "references/notes v2.md"])
    );
    let notes = call(
        &client,
        "read_skill",
        json!({"name": "deploy", "file": "references/notes v2.md"}),
    )
    .await;
    assert_eq!(
        notes.structured_content.unwrap()["body"],
        "# Notes\r\n\u{feff}é\n"
    );
    let logo = call(
        &client,
        "read_skill",
        json!({"name": "deploy", "file": "assets/logo.png"}),
    )
    .await;
    assert!(error_text(&logo).contains("not text"));
    for file in [
        "../outside.txt",
        "linked.txt",
        "pipe",
        "huge.bin",
        ".env",
        "/etc/passwd",
    ] {
        let refused = call(&client, "read_skill", json!({"name": "deploy", "file": file})).await;
        let error = error_text(&refused);
        assert!(
            error.contains("the skill has no file at that path"),
            "{file}: {error}"
        );
    }
}

/// A client that tells the test, by its number, when it hears `resources/list_changed`.
struct Listener(usize, tokio::sync::mpsc::UnboundedSender<usize>);

impl ClientHandler for Listener {
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.1.send(self.0);
    }
}

fn add_lint_skill(f: &Fixture) {
    write_skill(
        &f.skills,
        "lint",
        "---\nname: lint\ndescription: Lint the code\ntriggers: [lint]\n---\nRun the linter.",
    );
}

/// Wait until each of `clients` listeners has heard of a change. A bound on a hang, not a
/// timing assertion: the watcher looks every 20 ms and lets a change settle for 300 ms.
async fn heard(rx: &mut tokio::sync::mpsc::UnboundedReceiver<usize>, clients: usize) {
    let mut heard = std::collections::BTreeSet::new();
    while heard.len() < clients {
        let client = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("the change is announced")
            .expect("the listener is alive");
        heard.insert(client);
    }
}

#[tokio::test]
async fn a_new_skill_is_announced() {
    let f = fixture(Mode::Hybrid);
    assert!(!f.server.listing_changed(), "nothing changed yet");
    let server = f.server.clone().watching(Duration::from_millis(20));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = connect(server.session(), Listener(0, tx)).await;
    add_lint_skill(&f);
    heard(&mut rx, 1).await;
    let resources = client.list_all_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "skill://lint/SKILL.md"));
}

#[tokio::test]
async fn every_http_session_hears_of_a_new_skill() {
    use rmcp::transport::StreamableHttpClientTransport;

    let f = fixture(Mode::Hybrid);
    let server = f.server.clone().watching(Duration::from_millis(20));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let router = super::http::router(server, bound);
    tokio::spawn(async move { axum::serve(listener, router).await });
    let url = format!("http://{bound}{}", super::http::PATH);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut clients = Vec::new();
    for n in 0..2 {
        let transport = StreamableHttpClientTransport::from_uri(url.as_str());
        clients.push(Listener(n, tx.clone()).serve(transport).await.unwrap());
    }
    add_lint_skill(&f);
    heard(&mut rx, 2).await;
    for client in &clients {
        let resources = client.list_all_resources().await.unwrap();
        assert!(resources.iter().any(|r| r.uri == "skill://lint/SKILL.md"));
    }
}

/// The client side: our own server's tools mounted in an agent driven by a scripted model;
/// the server dies mid-run, the call becomes a tool error and the run completes.
#[tokio::test]
async fn mounted_tools_run_in_the_agent_and_a_dead_server_is_a_tool_error() {
    use ctxkit::{Agent, Message, Role, ScriptedModel, Thread, ToolCall};

    let f = fixture(Mode::Hybrid);
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let server = f.server.clone();
    let serving = tokio::spawn(async move {
        let running = server.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    let mounted = ctxkit::mcp::McpServer::stdio("unused", [""; 0])
        .connect_transport(client_end, "fallback")
        .await
        .unwrap();
    assert_eq!(mounted.name(), "ctxkit", "named after the server's own name");
    let names: Vec<&str> = mounted.tools().iter().map(ctxkit::Tool::name).collect();
    assert!(names.contains(&"ctxkit__read_skill"), "{names:?}");

    let call = |id: &str| {
        Message::tool_calls(vec![ToolCall::new(
            id,
            "ctxkit__read_skill",
            &json!({"name": "deploy"}),
        )])
    };
    let model = Arc::new(ScriptedModel::new([
        call("1"),
        Message::assistant("first answer"),
        call("2"),
        Message::assistant("second answer"),
    ]));
    let agent = Agent::builder().model(model).mcp(mounted).build().unwrap();
    let mut thread = Thread::new();
    let tool_output = |thread: &Thread| {
        let last_tool = thread
            .history()
            .iter()
            .rev()
            .find(|m| m.role == Role::Tool)
            .unwrap();
        last_tool.content.clone()
    };

    let out = agent.run(&mut thread, "how do we deploy?").await.unwrap();
    assert_eq!(out.reply.content, "first answer");
    assert!(
        tool_output(&thread).contains("Run ./ship.sh"),
        "{}",
        tool_output(&thread)
    );

    serving.abort();
    let _ = serving.await;
    let out = agent.run(&mut thread, "and again?").await.unwrap();
    assert_eq!(out.reply.content, "second answer", "the run completes");
    let error = tool_output(&thread);
    assert!(
        error.starts_with("error:") && error.contains("MCP server `ctxkit`"),
        "{error}"
    );
}

// Over streamable HTTP: the router, sent requests in-process.

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}})
}

/// A POST of `message` to `/mcp`, as a client reaching `host` sends it.
fn post(host: &str, origin: Option<&str>, session: Option<&str>, message: &Value) -> Request<Body> {
    let mut request = Request::post(super::http::PATH)
        .header("host", host)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.body(Body::from(message.to_string())).unwrap()
}

async fn send(router: &axum::Router, request: Request<Body>) -> Response<Body> {
    router.clone().oneshot(request).await.unwrap()
}

#[tokio::test]
async fn http_refuses_a_foreign_origin() {
    let f = fixture(Mode::Hybrid);
    let bound: std::net::SocketAddr = "127.0.0.1:8765".parse().unwrap();
    let router = super::http::router(f.server.clone(), bound);
    let host = "127.0.0.1:8765";
    for origin in [
        "http://evil.example",
        "null",
        "http://127.0.0.1:9999",
        "https://127.0.0.1:8765",
        "http://localhost.evil.example:8765",
    ] {
        let response = send(&router, post(host, Some(origin), None, &initialize())).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
    }
    for origin in [None, Some("http://127.0.0.1:8765"), Some("http://localhost:8765")] {
        let response = send(&router, post(host, origin, None, &initialize())).await;
        assert_eq!(response.status(), StatusCode::OK, "{origin:?}");
    }

    // With --allow-remote any Host is served, but a browser page elsewhere still is not.
    let remote = super::http::router(f.server, "0.0.0.0:8765".parse().unwrap());
    let host = "192.168.1.5:8765";
    let foreign = post(host, Some("http://evil.example"), None, &initialize());
    assert_eq!(send(&remote, foreign).await.status(), StatusCode::FORBIDDEN);
    let program = post(host, None, None, &initialize());
    assert_eq!(send(&remote, program).await.status(), StatusCode::OK);
}

/// A JSON-RPC conversation in raw lines with a server over the stdio transport, after the
/// handshake.
struct Raw {
    input: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    output: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Raw {
    async fn start(server: CtxkitServer) -> Raw {
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let (read, write) = tokio::io::split(server_end);
            let transport = super::stdio::LineTransport::new(read, write);
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let (read, input) = tokio::io::split(client_end);
        let mut raw = Raw {
            input,
            output: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read)),
        };
        raw.ask(initialize()).await;
        raw.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .await;
        raw
    }

    async fn send_line(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    /// The next message the server prints (waiting a minute at most: a bound on a hang).
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.output.next_line())
            .await
            .expect("an answer within a minute")
            .unwrap()
            .expect("an answer");
        serde_json::from_str(&line).unwrap()
    }

    /// Send `message` and return the answer with its id.
    async fn ask(&mut self, message: Value) -> Value {
        self.send_line(&message.to_string()).await;
        loop {
            let answer = self.next().await;
            if answer.get("id") == message.get("id") {
                return answer;
            }
        }
    }
}

#[tokio::test]
async fn params_that_do_not_fit_a_method_are_invalid_params() {
    let f = fixture(Mode::Hybrid);
    let mut raw = Raw::start(f.server).await;
    let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
    for (id, (method, params)) in [
        ("tools/call", None),
        ("tools/call", Some(json!({"arguments": {}}))),
        ("tools/call", Some(json!({"name": 7}))),
        ("resources/read", Some(json!({"url": token}))),
        ("prompts/get", Some(json!({"arguments": token}))),
        ("skills/get", None),
    ]
    .into_iter()
    .enumerate()
    {
        let mut message = json!({"jsonrpc": "2.0", "id": 10 + id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let answer = raw.ask(message).await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
        assert!(!answer.to_string().contains(token), "{answer}");
        assert!(!answer.to_string().contains(method), "{answer}");
    }
    let unknown = raw
        .ask(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/calls", "params": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
}

#[tokio::test]
async fn a_cursor_the_server_never_gave_is_invalid_params() {
    let f = fixture(Mode::Hybrid);
    let mut raw = Raw::start(f.server).await;
    for (id, method) in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "skills/list",
    ]
    .into_iter()
    .enumerate()
    {
        let whole = raw
            .ask(json!({"jsonrpc": "2.0", "id": 100 + id, "method": method}))
            .await;
        assert!(whole.get("result").is_some(), "{method}: {whole}");
        let paged = raw
            .ask(json!({"jsonrpc": "2.0", "id": 200 + id, "method": method,
                "params": {"cursor": "bogus"}}))
            .await;
        assert_eq!(paged["error"]["code"], -32602, "{method}: {paged}");
        assert!(!paged.to_string().contains("bogus"), "{paged}");
    }
}

#[tokio::test]
async fn a_line_that_is_no_message_is_answered_and_the_session_goes_on() {
    let f = fixture(Mode::Hybrid);
    let mut raw = Raw::start(f.server).await;
    let token = "ghp_R4nd0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsTu12";
    raw.send_line(&format!("{{\"jsonrpc\": \"2.0\", \"id\": 3, {token}"))
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");
    assert!(!answer.to_string().contains(token), "{answer}");
    raw.send_line(&format!("[\"{token}\"]")).await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");
    // A request that is no message of the protocol, answered with its id when it has one.
    let params = json!({"jsonrpc": "2.0", "id": "q", "method": "prompts/get", "params": [token]});
    raw.send_line(&params.to_string()).await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], "q", "{answer}");
    assert!(!answer.to_string().contains(token), "{answer}");
    // A notification is never answered, even one the server cannot read.
    raw.send_line(r#"{"jsonrpc": "2.0", "method": "notifications/progress", "params": 5}"#)
        .await;
    let tools = raw
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        .await;
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 7, "{tools}");
}

#[tokio::test]
async fn a_line_over_16_mib_is_answered_and_skipped() {
    let f = fixture(Mode::Hybrid);
    let mut raw = Raw::start(f.server).await;
    let message = "deploy ".repeat(super::stdio::MAX_LINE / 7 + 1);
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "match_skills", "arguments": {"message": message}}});
    raw.send_line(&call.to_string()).await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("16 MiB"));
    let tools = raw
        .ask(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}))
        .await;
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 7, "{tools}");
}

/// Read `response` until `done` holds for what has arrived (a minute at most: a bound on a
/// hang), and return it.
async fn read_until(mut response: reqwest::Response, done: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    let read = async {
        while !done(&text) {
            match response.chunk().await.unwrap() {
                Some(chunk) => text.push_str(&String::from_utf8_lossy(&chunk)),
                None => break,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(60), read).await;
    text
}

#[tokio::test]
async fn a_resumed_sse_stream_replays_the_tool_answer() {
    let f = fixture(Mode::Hybrid);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let router = super::http::router(f.server.clone(), bound);
    tokio::spawn(async move { axum::serve(listener, router).await });
    let url = format!("http://{bound}{}", super::http::PATH);
    let http = reqwest::Client::new();
    let post = |session: Option<&str>, message: Value| {
        let mut request = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send()
    };
    let init = post(None, initialize()).await.unwrap();
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    read_until(init, |_| false).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(Some(&session), initialized).await.unwrap();

    // The client reads the stream's first event, then loses the connection.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_skills", "arguments": {}}});
    let stream = post(Some(&session), call).await.unwrap();
    let first = read_until(stream, |t| t.contains("\n\n")).await;
    let last_event_id = first
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .expect("the stream's events have ids")
        .trim()
        .to_string();

    let resumed = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .header("last-event-id", &last_event_id)
        .send()
        .await
        .unwrap();
    let replayed = read_until(resumed, |t| t.contains("\"id\":2")).await;
    assert!(
        replayed.contains("\"id\":2") && replayed.contains("deploy"),
        "after {last_event_id}: {replayed:?}"
    );
}
