//! Every route through the whole router, guard included, with `tower::ServiceExt::oneshot`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use clap::Parser;
use tower::ServiceExt;

use super::router;
use super::served::Served;
use crate::setup::RequestOptions;

const ADDR: &str = "127.0.0.1:7878";

#[derive(Parser)]
struct Options {
    #[command(flatten)]
    request: RequestOptions,
}

/// A project with two skills (one with hostile Markdown) and a server over it, with no user
/// config and a cache of its own.
struct Project {
    dir: tempfile::TempDir,
    served: Arc<Served>,
}

fn project(extra: &[&str]) -> Project {
    let mut args = vec!["--no-memory"];
    args.extend(extra);
    project_with(&args)
}

/// A project served with `extra` options besides its skills and project name.
fn project_with(extra: &[&str]) -> Project {
    static ENV: std::sync::Once = std::sync::Once::new();
    ENV.call_once(|| {
        let home = tempfile::tempdir().unwrap().keep();
        std::env::set_var("CTXKIT_CONFIG", home.join("config.toml"));
        std::env::set_var("CTXKIT_CACHE_DIR", home.join("cache"));
    });
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    for (name, text) in [
        (
            "greet",
            "---\nname: greet\ndescription: Greet people\ntriggers: [greet, bonjour]\n---\n# Greeting\n\nSay hello.\n",
        ),
        (
            "painter",
            "---\nname: painter\ndescription: Paint things\ntriggers: [paint]\n---\n<script>alert(1)</script>\n\n[click](javascript:alert(2))\n",
        ),
    ] {
        std::fs::create_dir_all(skills.join(name)).unwrap();
        std::fs::write(skills.join(name).join("SKILL.md"), text).unwrap();
    }
    let skills = skills.to_str().unwrap().to_string();
    let mut args = vec!["serve", "--skills", &skills, "--project", "p"];
    args.extend(extra);
    let options = Options::parse_from(args).request;
    let addr: SocketAddr = ADDR.parse().unwrap();
    let served = Served::new(options, dir.path().to_path_buf(), addr).unwrap();
    Project { dir, served }
}

impl Project {
    fn router(&self) -> Router {
        router(self.served.clone())
    }

    async fn get(&self, uri: &str) -> (StatusCode, String) {
        let request = Request::get(uri)
            .header(header::HOST, ADDR)
            .body(Body::empty())
            .unwrap();
        send(self.router(), request).await
    }

    /// A form posted as the page posts it: same origin, with `form` as the body.
    async fn post(&self, uri: &str, form: &str, headers: &[(&str, &str)]) -> (StatusCode, String) {
        let mut request = Request::post(uri)
            .header(header::HOST, ADDR)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        send(self.router(), request.body(Body::from(form.to_string())).unwrap()).await
    }

    fn token(&self) -> String {
        format!("token={}", self.served.token)
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(".ctxkit/config.toml")).unwrap_or_default()
    }
}

async fn send(router: Router, request: Request<Body>) -> (StatusCode, String) {
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn the_home_page_lists_the_skills_with_a_switch_named_after_each() {
    let p = project(&[]);
    let (status, html) = p.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("2 skills · 2 active · 0 detected"), "{html}");
    for name in ["greet", "painter"] {
        assert!(
            html.contains(&format!(
                r#"role="switch" aria-checked="true" aria-label="{name} enabled""#
            )),
            "{html}"
        );
    }
    assert!(html.contains(r#"aria-label="Try a message""#));
    let (_, filtered) = p.get("/?filter=paint").await;
    assert!(
        filtered.contains("painter") && !filtered.contains("Greet people"),
        "{filtered}"
    );
}

#[tokio::test]
async fn every_answer_forbids_scripts_and_other_hosts() {
    let p = project(&[]);
    let request = Request::get("/")
        .header(header::HOST, ADDR)
        .body(Body::empty())
        .unwrap();
    let response = p.router().oneshot(request).await.unwrap();
    let csp = response.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    // DNS rebinding: the same port reached under another name.
    let rebound = Request::get("/")
        .header(header::HOST, "evil.example:7878")
        .body(Body::empty())
        .unwrap();
    let (status, text) = send(p.router(), rebound).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(text, "this server answers only at 127.0.0.1:7878");
    let (status, _) = p.get("/style.css").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_skill_page_shows_its_facts_and_a_defused_body() {
    let p = project(&[]);
    let (status, html) = p.get("/skills/greet").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<h1>Greeting</h1>"), "{html}");
    let triggers = &html[html.find("<dt>Triggers</dt>").unwrap()..];
    assert!(
        triggers.starts_with("<dt>Triggers</dt><dd>greet (greets, "),
        "{triggers}"
    );
    assert!(
        triggers.contains("greeted") && triggers.contains("bonjour ("),
        "{triggers}"
    );
    let (_, hostile) = p.get("/skills/painter").await;
    assert!(
        !hostile.contains("<script>") && hostile.contains("&lt;script&gt;"),
        "{hostile}"
    );
    assert!(!hostile.contains("javascript:"), "{hostile}");
    let (status, _) = p.get("/skills/nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A trusted skill's tool that runs a program the user did not allow (a shell escape) is
/// listed as not offered, with the reason.
#[tokio::test]
async fn a_skill_page_says_why_a_trusted_tool_is_not_offered() {
    let p = project(&["--trust-tools", "painter"]);
    std::fs::write(
        p.dir.path().join("skills/painter/tools.json"),
        r#"{"allowlist": ["sqlite3", "ls"], "tools": [{"name": "query", "command": "sqlite3"}, {"name": "list", "command": "ls"}]}"#,
    )
    .unwrap();
    p.served.reload().unwrap();
    let (_, html) = p.get("/skills/painter").await;
    assert!(html.contains("query, list (trusted)"), "{html}");
    assert!(
        html.contains("<li>query is not offered: it runs `sqlite3`, which can run a shell"),
        "{html}"
    );
    assert!(!html.contains("list is not offered"), "{html}");
}

#[tokio::test]
async fn a_switch_writes_the_project_config_and_the_page_follows() {
    let p = project(&[]);
    let form = format!("{}&enabled=false", p.token());
    let (status, _) = p
        .post("/skills/greet", &form, &[("sec-fetch-site", "same-origin")])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(p.config().contains("disabled = [\"greet\"]"), "{}", p.config());
    let (_, html) = p.get("/").await;
    assert!(
        html.contains(r#"aria-checked="false" aria-label="greet enabled""#),
        "{html}"
    );
    assert!(p.served.loaded().library.snapshot().get("greet").is_none());
    let form = format!("{}&enabled=true", p.token());
    p.post("/skills/greet", &form, &[]).await;
    assert!(p.served.loaded().library.snapshot().get("greet").is_some());

    // A toggle made in a terminal (`ctxkit skills disable`) shows on the next page.
    std::fs::write(
        p.dir.path().join(".ctxkit/config.toml"),
        "[skills]\ndisabled = [\"painter\"]\n",
    )
    .unwrap();
    let (_, html) = p.get("/").await;
    assert!(
        html.contains(r#"aria-checked="false" aria-label="painter enabled""#),
        "{html}"
    );
}

#[tokio::test]
async fn writes_from_elsewhere_are_refused() {
    let p = project(&[]);
    let forged = "token=0123&enabled=false";
    let good = format!("{}&enabled=false", p.token());
    for (form, headers) in [
        (forged, vec![]),
        (good.as_str(), vec![("sec-fetch-site", "cross-site")]),
        (good.as_str(), vec![("origin", "http://evil.example")]),
    ] {
        let (status, _) = p.post("/skills/greet", form, &headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{form} {headers:?}");
    }
    assert_eq!(p.config(), "", "nothing was written");
    let read_only = project(&["--read-only"]);
    let good = format!("{}&enabled=false", read_only.token());
    let (status, text) = read_only.post("/skills/greet", &good, &[]).await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::FORBIDDEN, "this server is read-only (--read-only)")
    );
}

#[tokio::test]
async fn trying_a_message_explains_the_decision_of_ctxkit_context() {
    let p = project(&[]);
    let (status, html) = p.get("/try?message=say+bonjour+to+Alice").await;
    assert_eq!(status, StatusCode::OK);
    let region = &html[html.find(r#"aria-label="Would inject""#).expect("the region")..];
    assert!(
        region.contains("<strong>greet</strong> — triggered by bonjour"),
        "{region}"
    );
    assert!(!region.contains("painter"), "{region}");
    assert!(region.contains("in full mode"), "{region}");
    let (_, empty) = p.get("/try").await;
    assert!(!empty.contains("Would inject"));
}

// ---------------------------------------------------------------------------------------------
// The memory page.

const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

/// A project whose memory is a fresh SQLite file of its own.
fn with_memory() -> Project {
    let db = tempfile::tempdir().unwrap().keep().join("memory.db");
    let db = db.to_str().unwrap().to_string();
    project_with(&["--memory", &db])
}

impl Project {
    async fn memories(&self) -> Vec<ctxkit_memory::MemoryEntry> {
        use ctxkit_memory::ListOptions;
        let store = self.served.memory.as_ref().unwrap().shared();
        let all = ListOptions {
            limit: 100_000,
            ..ListOptions::default()
        };
        store.list("p", all).await.unwrap()
    }
}

#[tokio::test]
async fn memories_are_added_searched_edited_and_a_secret_is_refused_without_being_shown() {
    let p = with_memory();
    let add = |content: &str| format!("{}&content={content}&category=preference", p.token());
    let (status, _) = p.post("/memory", &add("Use+pnpm%2C+not+npm"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, html) = p
        .post("/memory", &add(&format!("the+token+is+{SECRET}")), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(!html.contains(SECRET) && html.contains("secret"), "{html}");
    assert_eq!(p.memories().await.len(), 1, "the secret was not stored");
    // The refusal is said on the memory page itself: the list and the controls stay, the
    // input is empty.
    assert!(html.contains(r#"role="alert""#), "{html}");
    assert!(
        html.contains("Use pnpm, not npm") && html.contains(">Add memory</button>"),
        "{html}"
    );
    assert!(
        html.contains(
            r#"<input type="text" name="content" aria-label="New memory" placeholder="New memory" required>"#
        ),
        "{html}"
    );
    // An edit that would store a secret is refused on the memory's own page, the same way.
    let id = p.memories().await[0].id.clone();
    let form = format!("{}&content=token+{SECRET}&importance=0.5", p.token());
    let (status, html) = p.post(&format!("/memory/{id}"), &form, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        !html.contains(SECRET) && html.contains(r#"role="alert""#),
        "{html}"
    );
    assert!(
        html.contains("Use pnpm, not npm") && html.contains(">Save</button>"),
        "{html}"
    );

    let (_, html) = p.get("/memory").await;
    assert!(html.contains("1 memories · 1 preference"), "{html}");
    assert!(html.contains("Use pnpm, not npm"), "{html}");
    let (_, found) = p.get("/memory?q=pnpm").await;
    assert!(found.contains("Use pnpm, not npm"), "{found}");
    let (_, missed) = p.get("/memory?q=docker").await;
    assert!(missed.contains("No memories here."), "{missed}");

    let id = p.memories().await[0].id.clone();
    let form = format!("{}&content=Use+pnpm+everywhere&importance=0.9", p.token());
    let (status, _) = p.post(&format!("/memory/{id}"), &form, &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, detail) = p.get(&format!("/memory/{id}")).await;
    assert!(
        detail.contains("Use pnpm everywhere") && detail.contains("0.90"),
        "{detail}"
    );
}

/// "Try a message" uses the store the page opened, not one of its own: with the database file
/// gone from its folder the page still answers from the store it holds (a second open would
/// make a new, empty database there).
#[tokio::test]
async fn trying_a_message_reuses_the_store_the_page_opened() {
    let db = tempfile::tempdir().unwrap().keep().join("memory.db");
    let p = project_with(&["--memory", db.to_str().unwrap()]);
    let add = format!("{}&content=Use+pnpm%2C+not+npm&category=preference", p.token());
    let (status, _) = p.post("/memory", &add, &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let id = p.memories().await[0].id.clone();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let (status, html) = p.get("/try?message=install+the+packages+with+pnpm").await;
    assert_eq!(status, StatusCode::OK);
    let region = &html[html.find(r#"aria-label="Would inject""#).expect("the region")..];
    // The page names a memory it would inject by the start of its id.
    assert!(region.contains(&id[..12]), "{region}");
    assert!(!db.exists(), "no second database was created");
}

#[tokio::test]
async fn a_delete_can_be_undone_and_a_cross_site_one_is_refused() {
    let p = with_memory();
    let form = format!("{}&content=Tests+live+in+tests%2F&category=convention", p.token());
    p.post("/memory", &form, &[]).await;
    let id = p.memories().await[0].id.clone();
    let (status, _) = p
        .post(
            &format!("/memory/{id}/delete"),
            &p.token(),
            &[("sec-fetch-site", "cross-site")],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(p.memories().await.len(), 1);

    let request = Request::post(format!("/memory/{id}/delete"))
        .header(header::HOST, ADDR)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(p.token()))
        .unwrap();
    let response = p.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()[header::LOCATION].to_str().unwrap().to_string();
    assert!(p.memories().await.is_empty());
    let (_, html) = p.get(&location).await;
    assert!(html.contains(">Undo</button>"), "{html}");
    let history = location.rsplit('=').next().unwrap();
    let (status, _) = p
        .post("/memory/undo", &format!("{}&history={history}", p.token()), &[])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(p.memories().await[0].content, "Tests live in tests/");
}

#[tokio::test]
async fn ten_thousand_memories_come_in_pages() {
    use ctxkit_memory::{MemoryCategory, NewMemoryEntry};
    let p = with_memory();
    let store = p.served.memory.as_ref().unwrap().shared();
    let entries = (0..10_000)
        .map(|i| {
            NewMemoryEntry::new(
                "p",
                MemoryCategory::Fact,
                format!("fact number {i} about module m{i}"),
            )
        })
        .collect();
    store.add_many(entries).await.unwrap();
    let (status, first) = p.get("/memory").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        first.contains("10000 memories"),
        "{}",
        &first[..2000.min(first.len())]
    );
    assert_eq!(first.matches(">Delete</button>").count(), 50);
    assert!(first.contains(">Next</a>") && !first.contains(">Previous</a>"));
    let (_, last) = p.get("/memory?page=199").await;
    assert_eq!(last.matches(">Delete</button>").count(), 50);
    assert!(last.contains(">Previous</a>") && !last.contains(">Next</a>"));
}

/// `--read-only` opens nothing for writing: a database that does not exist is not created,
/// and the page says memory is off.
#[tokio::test]
async fn read_only_never_creates_the_database() {
    let db = tempfile::tempdir().unwrap().keep().join("new.db");
    let p = project_with(&["--read-only", "--memory", db.to_str().unwrap()]);
    assert!(!db.exists(), "the database was created");
    let (status, html) = p.get("/memory").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("memory is off"), "{html}");
    assert!(!db.exists(), "the database was created");
}

#[tokio::test]
async fn without_memory_the_page_says_so() {
    let p = project(&[]);
    let (status, html) = p.get("/memory").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("memory is off"), "{html}");
}

// ---------------------------------------------------------------------------------------------
// Learned skills waiting for review.

#[tokio::test]
async fn a_proposed_learned_skill_is_reviewed_on_the_page_and_accepted_it_loads() {
    use ctxkit_memory::{LearnedChange, LearnedSkill, LearnedStatus};
    let p = with_memory();
    let store = p.served.memory.as_ref().unwrap().shared();
    for name in ["release-app", "lint-all"] {
        let text =
            format!("---\nname: {name}\ndescription: The {name} steps\ntriggers: [{name}]\n---\nDo it.\n");
        let proposal = LearnedSkill::proposed(
            "p",
            name,
            &format!("The {name} steps"),
            vec![name.into()],
            &text,
            "s1",
        );
        store
            .change_learned_skill("p", name, LearnedChange::Propose(Box::new(proposal)))
            .await
            .unwrap();
    }
    let (_, html) = p.get("/").await;
    assert!(html.contains("Learned, to review (2)"), "{html}");
    assert!(html.contains(r#"aria-label="Accept release-app""#), "{html}");

    let decide = |decision: &str| format!("{}&decision={decision}", p.token());
    let (status, _) = p
        .post(
            "/learned/release-app",
            &decide("accept"),
            &[("sec-fetch-site", "cross-site")],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "not from another site");
    let (status, _) = p.post("/learned/release-app", &decide("accept"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _) = p.post("/learned/lint-all", &decide("reject"), &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _) = p.post("/learned/lint-all", &decide("accept"), &[]).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "only a proposed skill is reviewed here"
    );

    let statuses: Vec<LearnedStatus> = store
        .learned_skills("p")
        .await
        .unwrap()
        .iter()
        .map(|s| s.status)
        .collect();
    assert_eq!(
        statuses,
        [LearnedStatus::Rejected, LearnedStatus::Accepted],
        "by name"
    );
    let index = p.served.loaded().library.snapshot();
    assert_eq!(
        index.get("release-app").map(|s| s.source),
        Some(ctxkit_skills::Source::Learned)
    );
    assert!(index.get("lint-all").is_none());
    let (_, html) = p.get("/").await;
    assert!(
        !html.contains("Learned, to review") && html.contains("Learned (1)"),
        "{html}"
    );
}
