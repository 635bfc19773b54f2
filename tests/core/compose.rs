//! Composition of providers: order, separators, concurrency, timeouts, isolation, `invoked`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ctxkit::{
    CatalogEntry, Context, ContextProvider, Error, Message, Outcome, ProviderExt, Result, RunInfo, Section,
    SectionKind, Tool,
};
use serde_json::Value;

/// A provider that waits, then answers with fixed instructions (or fails, or panics).
struct Fixed {
    name: &'static str,
    delay: Duration,
    behaviour: Behaviour,
    invoked: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone)]
enum Behaviour {
    Says(Context),
    Fails,
    Panics,
}

impl Fixed {
    fn says(name: &'static str, text: &str) -> Self {
        Self::new(name, Behaviour::Says(Context::new().with_instructions(text)))
    }
    fn new(name: &'static str, behaviour: Behaviour) -> Self {
        Fixed {
            name,
            delay: Duration::ZERO,
            behaviour,
            invoked: Arc::default(),
        }
    }
    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[async_trait]
impl ContextProvider for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
        tokio::time::sleep(self.delay).await;
        match &self.behaviour {
            Behaviour::Says(ctx) => Ok(ctx.clone()),
            Behaviour::Fails => Err(Error::provider(self.name, "backend unreachable")),
            Behaviour::Panics => panic!("provider bug"),
        }
    }
    async fn invoked(
        &self,
        _: &[Message],
        response: std::result::Result<&[Message], &Error>,
        _: &RunInfo,
    ) -> Result<()> {
        let what = match response {
            Ok(m) => format!("ok:{}", m[0].content),
            Err(e) => format!("err:{e}"),
        };
        self.invoked.lock().unwrap().push(what);
        Ok(())
    }
}

fn run() -> RunInfo {
    RunInfo::default()
}

#[tokio::test]
async fn merges_in_registration_order_with_blank_lines() {
    // The slow provider is registered first: order follows registration, not completion.
    let providers = vec![
        Fixed::says("first", "Alpha.").after(Duration::from_millis(20)),
        Fixed::says("second", "Beta."),
        Fixed::says("third", "  Gamma.\n"),
    ];
    let ctx = providers.invoking(&[Message::user("hi")], &run()).await.unwrap();
    assert_eq!(ctx.instructions().unwrap(), "Alpha.\n\nBeta.\n\nGamma.");
    let sources: Vec<&str> = ctx.sections.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(sources, ["first", "second", "third"]);
    let names: Vec<&str> = ctx.reports.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["first", "second", "third"]);
}

#[tokio::test]
async fn catalogs_are_shared_alone_and_joined_in_registration_order() {
    let catalog = |names: &[&str]| {
        Context::new().with_catalog(names.iter().map(|n| CatalogEntry::new(*n, format!("{n} things"))))
    };
    let alone = catalog(&["pdf", "git"]);
    let shared = alone.catalog.clone();
    let providers = vec![
        Fixed::new("skills", Behaviour::Says(alone)),
        Fixed::says("rules", "Be brief."),
    ];
    let ctx = providers.invoking(&[Message::user("hi")], &run()).await.unwrap();
    assert!(
        Arc::ptr_eq(&ctx.catalog, &shared),
        "one provider's catalog is passed on, not copied"
    );

    let providers = vec![
        Fixed::new("a", Behaviour::Says(catalog(&["pdf"]))),
        Fixed::says("rules", "Be brief."),
        Fixed::new("b", Behaviour::Says(catalog(&["git", "sql"]))),
    ];
    let ctx = providers.invoking(&[Message::user("hi")], &run()).await.unwrap();
    let names: Vec<&str> = ctx.catalog.iter().map(|e| &*e.name).collect();
    assert_eq!(names, ["pdf", "git", "sql"]);
}

#[tokio::test]
async fn stable_sections_come_before_per_message_ones() {
    let volatile = Context::new().with_section(Section::per_message(SectionKind::SKILLS, "Matched skill."));
    let providers: Vec<Box<dyn ContextProvider>> = vec![
        Box::new(Fixed::new("skills", Behaviour::Says(volatile))),
        Box::new(Fixed::says("style", "Be brief.")),
    ];
    let ctx = providers.invoking(&[], &run()).await.unwrap();
    assert_eq!(ctx.instructions().unwrap(), "Be brief.\n\nMatched skill.");
}

#[tokio::test(start_paused = true)]
async fn providers_run_concurrently() {
    let providers = vec![
        Fixed::says("a", "A").after(Duration::from_secs(2)),
        Fixed::says("b", "B").after(Duration::from_secs(2)),
    ];
    let start = tokio::time::Instant::now();
    providers.invoking(&[], &run()).await.unwrap();
    // Sequential calls would take 4 s of (virtual) time.
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_slow_provider_times_out_and_is_skipped_when_fail_open() {
    let providers: Vec<Box<dyn ContextProvider>> = vec![
        Box::new(
            Fixed::says("slow", "never")
                .after(Duration::from_secs(60))
                .with_timeout(Duration::from_secs(1)),
        ),
        Box::new(Fixed::says("fast", "Fast.")),
    ];
    let start = tokio::time::Instant::now();
    let ctx = providers.invoking(&[], &run()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(ctx.instructions().unwrap(), "Fast.");
    assert_eq!(ctx.reports[0].outcome, Outcome::TimedOut);
    assert_eq!(ctx.reports[1].outcome, Outcome::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_fails_the_run_when_fail_closed() {
    let providers: Vec<Box<dyn ContextProvider>> = vec![
        Box::new(
            Fixed::says("slow", "never")
                .after(Duration::from_secs(60))
                .with_timeout(Duration::from_secs(1))
                .fail_closed(),
        ),
        Box::new(Fixed::says("fast", "Fast.")),
    ];
    let err = providers.invoking(&[], &run()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Timeout { provider, .. } if provider == "slow"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_run_deadline_cuts_providers_off() {
    let providers = vec![Fixed::says("slow", "never").after(Duration::from_secs(3))];
    let run = RunInfo {
        deadline: Some(tokio::time::Instant::now() + Duration::from_millis(500)),
        ..run()
    };
    let ctx = providers.invoking(&[], &run).await.unwrap();
    assert!(ctx.is_empty());
    assert_eq!(ctx.reports[0].outcome, Outcome::TimedOut);
}

#[tokio::test]
async fn errors_and_panics_are_isolated_when_fail_open() {
    let providers: Vec<Box<dyn ContextProvider>> = vec![
        Box::new(Fixed::new("broken", Behaviour::Fails)),
        Box::new(Fixed::new("buggy", Behaviour::Panics)),
        Box::new(Fixed::says("fine", "Still here.")),
    ];
    let ctx = providers.invoking(&[], &run()).await.unwrap();
    assert_eq!(ctx.instructions().unwrap(), "Still here.");
    assert!(matches!(&ctx.reports[0].outcome, Outcome::Failed(e) if e.contains("backend unreachable")));
    assert!(matches!(&ctx.reports[1].outcome, Outcome::Failed(e) if e.contains("panicked: provider bug")));
}

#[tokio::test]
async fn errors_and_panics_fail_the_run_when_fail_closed() {
    let failing = vec![Fixed::new("broken", Behaviour::Fails).fail_closed()];
    let err = failing.invoking(&[], &run()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "context provider `broken` failed: backend unreachable"
    );

    let panicking = vec![Fixed::new("buggy", Behaviour::Panics).fail_closed()];
    let err = panicking.invoking(&[], &run()).await.unwrap_err();
    assert_eq!(err.to_string(), "context provider `buggy` panicked: provider bug");
}

struct Named(&'static str);
#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test tool"
    }
    async fn call(&self, _: Value) -> Result<String> {
        Ok(String::new())
    }
}

#[tokio::test]
async fn duplicate_tool_names_are_an_error_naming_both_providers() {
    let with_tool = |n| Behaviour::Says(Context::new().with_tool(Arc::new(Named(n))));
    let providers = vec![
        Fixed::new("skills", with_tool("read_skill")),
        Fixed::new("other", with_tool("read_skill")),
    ];
    let err = providers.invoking(&[], &run()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `read_skill` is offered by both `skills` and `other`; tool names must be unique"
    );
}

#[tokio::test]
async fn option_arc_and_nested_vec_are_providers() {
    let nested = vec![Fixed::says("inner-a", "A."), Fixed::says("inner-b", "B.")];
    let providers: Vec<Box<dyn ContextProvider>> = vec![
        Box::new(None::<Fixed>),
        Box::new(Some(Fixed::says("some", "S."))),
        Box::new(Arc::new(Fixed::says("shared", "X."))),
        Box::new(nested),
    ];
    let ctx = providers.invoking(&[], &run()).await.unwrap();
    assert_eq!(ctx.instructions().unwrap(), "S.\n\nX.\n\nA.\n\nB.");
    let names: Vec<&str> = ctx.reports.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["none", "some", "shared", "inner-a", "inner-b"]);
}

#[tokio::test]
async fn invoked_reaches_every_provider_on_success_and_failure() {
    let a = Fixed::says("a", "A");
    let seen = a.invoked.clone();
    let providers = vec![a];
    providers
        .invoked(&[], Ok(&[Message::assistant("4")]), &run())
        .await
        .unwrap();
    let err = Error::Model {
        model: "m".into(),
        message: "down".into(),
        retryable: true,
    };
    providers.invoked(&[], Err(&err), &run()).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["ok:4", "err:model `m` failed: down"]);
}

/// Writes at the end of a run, slower than its context timeout.
struct SlowFinisher(Arc<Mutex<bool>>);

#[async_trait]
impl ContextProvider for SlowFinisher {
    fn name(&self) -> &str {
        "slow-finisher"
    }
    async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
        Ok(Context::new())
    }
    async fn run_finished(&self, _: &RunInfo, _: &ctxkit::RunOutcome<'_>) -> Result<()> {
        tokio::time::sleep(Duration::from_secs(10)).await;
        *self.0.lock().unwrap() = true;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_runs_end_is_not_cut_off_by_a_timeout_sized_for_context() {
    let finished = Arc::new(Mutex::new(false));
    let agent = ctxkit::Agent::builder()
        .provider(
            SlowFinisher(finished.clone())
                .with_timeout(Duration::from_secs(1))
                .fail_closed(),
        )
        .build()
        .unwrap();
    agent.run(&mut ctxkit::Thread::new(), "hi").await.unwrap();
    assert!(*finished.lock().unwrap(), "10 s of writes fit the 30 s floor");
}

/// `run_once`: one run outside an agent — the provider is asked for context for the one user
/// message, then hears the run end with an empty reply, carrying the context it gave.
#[tokio::test]
async fn run_once_invokes_then_finishes_the_run_with_what_was_contributed() {
    struct Recorder(Arc<Mutex<Vec<String>>>);
    #[async_trait]
    impl ContextProvider for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }
        async fn invoking(&self, messages: &[Message], _: &RunInfo) -> Result<Context> {
            self.0
                .lock()
                .unwrap()
                .push(format!("invoking {}", messages[0].content));
            Ok(Context::new().with_instructions("remembered"))
        }
        async fn run_finished(&self, run: &RunInfo, outcome: &ctxkit::RunOutcome<'_>) -> Result<()> {
            let reply = outcome.result.map(|m| m.content.clone()).unwrap_or_default();
            self.0.lock().unwrap().push(format!(
                "finished {} in {} with {:?} after {:?}",
                outcome.input.content,
                run.thread_id,
                reply,
                outcome.context.instructions()
            ));
            Ok(())
        }
    }
    let calls = Arc::new(Mutex::new(Vec::new()));
    let run = RunInfo {
        thread_id: "session-1".into(),
        ..RunInfo::default()
    };
    let context = ctxkit::run_once(&Recorder(calls.clone()), "remember that we use pnpm", &run)
        .await
        .unwrap();
    assert_eq!(context.instructions().as_deref(), Some("remembered"));
    assert_eq!(
        *calls.lock().unwrap(),
        [
            "invoking remember that we use pnpm".to_string(),
            "finished remember that we use pnpm in session-1 with \"\" after Some(\"remembered\")"
                .to_string(),
        ]
    );
}

#[test]
fn system_text_puts_the_catalog_between_stable_and_per_message_sections() {
    let ctx = Context::new()
        .with_section(Section::per_message(SectionKind::SKILLS, "Matched skill."))
        .with_section(Section::stable(SectionKind::new("rules"), "Be brief."))
        .with_catalog([CatalogEntry::new("pdf", "PDF things")]);
    let catalog = ctx.catalog_section().unwrap().text;
    assert!(catalog.starts_with(CatalogEntry::HEADING));
    assert!(catalog.contains("pdf"));
    assert_eq!(
        ctx.system_text().unwrap(),
        format!("Be brief.\n\n{catalog}\n\nMatched skill.")
    );
    assert_eq!(Context::new().system_text(), None);
    assert_eq!(Context::new().catalog_section(), None);
}
