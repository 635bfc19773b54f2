//! The agent runner: hooks, the tool loop, lazy injection across compact/reset, reports.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxkit::{
    Agent, Assembly, BoxError, CatalogEntry, ChatModel, Context, ContextProvider, Error, Hook, HookContext,
    Limits, Message, ModelReply, ModelRequest, Result, Role, RunInfo, ScriptedModel, Section, SectionKind,
    SessionInfo, SessionStore, Thread, Tool, ToolCall, ToolContext, Usage,
};
use serde_json::{json, Value};

type Log = Arc<Mutex<Vec<String>>>;

/// A hook that logs every point it sees, under its own name.
struct Recorder {
    name: &'static str,
    log: Log,
    rewrite: Option<&'static str>,
    answer_tools: bool,
}

impl Recorder {
    fn new(name: &'static str, log: &Log) -> Self {
        Recorder {
            name,
            log: log.clone(),
            rewrite: None,
            answer_tools: false,
        }
    }
    fn note(&self, what: impl AsRef<str>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.name, what.as_ref()));
    }
}

#[async_trait]
impl Hook for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    async fn session_start(&self, _: &mut HookContext<'_>) -> std::result::Result<(), BoxError> {
        self.note("session_start");
        Ok(())
    }
    async fn user_message(
        &self,
        _: &mut HookContext<'_>,
        m: &str,
    ) -> std::result::Result<Option<String>, BoxError> {
        self.note(format!("user_message({m})"));
        Ok(self.rewrite.map(|r| format!("{m} {r}")))
    }
    async fn before_model(
        &self,
        _: &mut HookContext<'_>,
        _: &mut ModelRequest,
    ) -> std::result::Result<(), BoxError> {
        self.note("before_model");
        Ok(())
    }
    async fn after_model(&self, _: &mut HookContext<'_>, _: &Message) -> std::result::Result<(), BoxError> {
        self.note("after_model");
        Ok(())
    }
    async fn before_tool(
        &self,
        ctx: &mut HookContext<'_>,
        call: &ToolCall,
    ) -> std::result::Result<Option<String>, BoxError> {
        self.note(format!("before_tool({})", call.function.name));
        ctx.state
            .set("temp:last_tool", Value::from(call.function.name.clone()));
        Ok(self.answer_tools.then(|| "answered by hook".to_string()))
    }
    async fn after_tool(
        &self,
        ctx: &mut HookContext<'_>,
        _: &ToolCall,
        out: &str,
    ) -> std::result::Result<(), BoxError> {
        assert!(
            ctx.state.get("temp:last_tool").is_some(),
            "temp state lives through the round"
        );
        self.note(format!("after_tool({out})"));
        Ok(())
    }
    async fn session_end(
        &self,
        _: &mut HookContext<'_>,
        s: &ctxkit::SessionSummary,
    ) -> std::result::Result<(), BoxError> {
        self.note(format!("session_end(turns={})", s.turns));
        Ok(())
    }
    async fn compaction(
        &self,
        _: &mut HookContext<'_>,
        removed: &[Message],
    ) -> std::result::Result<(), BoxError> {
        self.note(format!("compaction({})", removed.len()));
        Ok(())
    }
}

struct Clock;
#[async_trait]
impl Tool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "Tell the time"
    }
    async fn call(&self, _: Value) -> Result<String> {
        Ok("12:00".into())
    }
}

fn call(id: &str, name: &str) -> Message {
    Message::tool_calls(vec![ToolCall::new(id, name, &json!({}))])
}

#[tokio::test]
async fn hooks_fire_in_order_and_can_rewrite_and_intercept() {
    let log: Log = Arc::default();
    let mut first = Recorder::new("h1", &log);
    first.rewrite = Some("please");
    let mut second = Recorder::new("h2", &log);
    second.answer_tools = true;
    let model = Arc::new(ScriptedModel::new([
        call("c1", "clock"),
        Message::assistant("done"),
    ]));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(Clock)
        .hook(first)
        .hook(second)
        .build()
        .unwrap();
    let mut thread = Thread::new();
    let out = agent.run(&mut thread, "time?").await.unwrap();
    assert_eq!(out.reply.content, "done");
    assert_eq!(out.report.model_calls, 2);
    assert_eq!(out.report.tool_calls, 1);
    // h2 answered instead of the tool; the model saw its answer.
    let tool_msg = thread.history().iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_msg.content, "answered by hook");
    // The second hook saw the message as rewritten by the first.
    assert_eq!(thread.history()[0].content, "time? please");
    assert!(
        thread.state().get("temp:last_tool").is_none(),
        "temp: cleared after the round"
    );

    agent.compact(&mut thread, 100).await.unwrap();
    agent.end_session(&mut thread).await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "h1:session_start",
            "h2:session_start",
            "h1:user_message(time?)",
            "h2:user_message(time? please)",
            "h1:before_model",
            "h2:before_model",
            "h1:after_model",
            "h2:after_model",
            // h1 did not answer, so h2 was asked; h2 answered, the tool did not run.
            "h1:before_tool(clock)",
            "h2:before_tool(clock)",
            "h1:after_tool(answered by hook)",
            "h2:after_tool(answered by hook)",
            "h1:before_model",
            "h2:before_model",
            "h1:after_model",
            "h2:after_model",
            "h1:compaction(0)",
            "h2:compaction(0)",
            "h1:session_end(turns=1)",
            "h2:session_end(turns=1)",
        ]
    );
}

struct Failing;
#[async_trait]
impl Hook for Failing {
    fn name(&self) -> &str {
        "guard"
    }
    async fn user_message(
        &self,
        _: &mut HookContext<'_>,
        _: &str,
    ) -> std::result::Result<Option<String>, BoxError> {
        Err("message rejected".into())
    }
}

#[tokio::test]
async fn hook_errors_stop_the_run_as_typed_errors() {
    let agent = Agent::builder().hook(Failing).build().unwrap();
    let err = agent.run(&mut Thread::new(), "hi").await.unwrap_err();
    assert!(matches!(err, Error::Hook { ref hook, point: "user_message", .. } if hook == "guard"));
    assert_eq!(
        err.to_string(),
        "hook `guard` failed in user_message: message rejected"
    );
}

/// A session end that fails, or counts that it ran.
struct SessionEnd {
    name: &'static str,
    fails: bool,
    ran: Arc<Mutex<Vec<&'static str>>>,
}
#[async_trait]
impl Hook for SessionEnd {
    fn name(&self) -> &str {
        self.name
    }
    async fn session_end(
        &self,
        _: &mut HookContext<'_>,
        _: &ctxkit::SessionSummary,
    ) -> std::result::Result<(), BoxError> {
        self.ran.lock().unwrap().push(self.name);
        if self.fails {
            Err(format!("{} could not finish", self.name).into())
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn every_session_end_runs_and_the_first_failure_is_returned() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let hook = |name, fails| SessionEnd {
        name,
        fails,
        ran: ran.clone(),
    };
    let agent = Agent::builder()
        .hook(hook("first", true))
        .hook(hook("second", true))
        .hook(hook("third", false))
        .build()
        .unwrap();
    let err = agent.end_session(&mut Thread::new()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "hook `first` failed in session_end: first could not finish"
    );
    assert_eq!(*ran.lock().unwrap(), ["first", "second", "third"]);
}

#[tokio::test]
async fn the_tool_loop_is_bounded() {
    let model = Arc::new(ScriptedModel::new(
        (0..10).map(|i| call(&format!("c{i}"), "clock")),
    ));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(Clock)
        .max_tool_rounds(3)
        .build()
        .unwrap();
    let err = agent.run(&mut Thread::new(), "loop").await.unwrap_err();
    assert!(matches!(err, Error::ToolRounds(3)));
    assert_eq!(model.requests().len(), 3);
}

/// A tool that takes a second.
struct Slow;
#[async_trait]
impl Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Take a second"
    }
    async fn call(&self, _: Value) -> Result<String> {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        Ok("done".into())
    }
}

#[tokio::test(start_paused = true)]
async fn the_run_budget_covers_every_round_and_leaves_no_call_unanswered() {
    let model = Arc::new(ScriptedModel::new((0..5).map(|i| call(&format!("c{i}"), "slow"))));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(Slow)
        .limits(Limits {
            run_timeout: Some(std::time::Duration::from_millis(2_500)),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let mut thread = Thread::new();

    // Each call fits the budget alone; the third tool call is still running when it ends.
    let err = agent.run(&mut thread, "go").await.unwrap_err();

    match err {
        Error::RunTimeBudget {
            model_calls,
            tool_calls,
            ..
        } => assert_eq!((model_calls, tool_calls), (3, 2)),
        other => panic!("expected the run budget to end the run, got {other:?}"),
    }
    // The call that was cut off has a result, so the thread can still be sent.
    let last = thread.history().last().unwrap();
    assert_eq!(last.tool_call_id.as_deref(), Some("c2"));
    assert!(last.content.starts_with("error: not run"), "{}", last.content);
    model.push(Message::assistant("ok"));
    assert_eq!(agent.run(&mut thread, "again").await.unwrap().reply.content, "ok");
}

/// A tool that starts work in the background and notes what it was run within and whether
/// that work was told to stop.
struct Background {
    seen: Log,
}
#[async_trait]
impl Tool for Background {
    fn name(&self) -> &str {
        "background"
    }
    fn description(&self) -> &str {
        "Start a job and wait for it"
    }
    async fn call(&self, args: Value) -> Result<String> {
        self.call_in(args, &ToolContext::default()).await
    }
    async fn call_in(&self, _: Value, ctx: &ToolContext) -> Result<String> {
        self.seen.lock().unwrap().push(format!(
            "session={} project={:?} run={}",
            ctx.session, ctx.project, ctx.run
        ));
        let (cancel, seen) = (ctx.cancel.clone(), self.seen.clone());
        tokio::spawn(async move {
            cancel.cancelled().await;
            seen.lock().unwrap().push("job stopped".into());
        });
        tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        Ok("done".into())
    }
}

#[tokio::test(start_paused = true)]
async fn tools_know_their_run_and_are_cancelled_when_its_budget_runs_out() {
    let seen: Log = Arc::default();
    let model = Arc::new(ScriptedModel::new([call("c1", "background")]));
    let agent = Agent::builder()
        .model(model)
        .project("/work/app")
        .tool(Background { seen: seen.clone() })
        .limits(Limits {
            run_timeout: Some(std::time::Duration::from_secs(1)),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let mut thread = Thread::new();
    let err = agent.run(&mut thread, "go").await.unwrap_err();
    assert!(matches!(err, Error::RunTimeBudget { .. }), "{err:?}");
    tokio::task::yield_now().await;
    let id = thread.id().to_string();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            format!("session={id} project=Some(\"/work/app\") run={id}#1"),
            "job stopped".to_string(),
        ]
    );
}

/// Answers a tool call, then text, each time reporting usage as a server with a prompt cache.
struct Metered(Mutex<usize>);
#[async_trait]
impl ChatModel for Metered {
    fn name(&self) -> &str {
        "metered"
    }
    async fn complete(&self, _: &ModelRequest) -> Result<ModelReply> {
        let mut n = self.0.lock().unwrap();
        *n += 1;
        let message = if *n == 1 {
            call("c1", "clock")
        } else {
            Message::assistant("noon")
        };
        Ok(ModelReply {
            message,
            usage: Some(Usage {
                input_tokens: 10,
                cache_read_tokens: 100 * (*n as u64 - 1),
                cache_write_tokens: 100,
                output_tokens: 5,
            }),
        })
    }
}

#[tokio::test]
async fn the_report_adds_up_the_usage_of_every_model_call() {
    let agent = Agent::builder()
        .model(Arc::new(Metered(Mutex::new(0))))
        .tool(Clock)
        .build()
        .unwrap();
    let out = agent.run(&mut Thread::new(), "time?").await.unwrap();
    assert_eq!(out.report.model_calls, 2);
    assert_eq!(
        out.report.usage,
        Some(Usage {
            input_tokens: 20,
            cache_read_tokens: 100,
            cache_write_tokens: 200,
            output_tokens: 10
        })
    );
    let dry = Agent::builder().build().unwrap();
    assert_eq!(dry.run(&mut Thread::new(), "x").await.unwrap().report.usage, None);
}

#[tokio::test]
async fn a_history_budget_drops_the_oldest_turns_before_a_run() {
    let log: Log = Arc::default();
    let model = Arc::new(ScriptedModel::new([
        Message::assistant("first answer"),
        Message::assistant("second answer"),
        Message::assistant("third answer"),
    ]));
    let agent = Agent::builder()
        .model(model.clone())
        .hook(Recorder::new("h", &log))
        .limits(Limits {
            history_tokens: Some(40),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent
        .run(&mut thread, "a long first question ".repeat(8))
        .await
        .unwrap();
    agent.run(&mut thread, "second?").await.unwrap();
    agent.run(&mut thread, "third?").await.unwrap();
    // The long first turn does not fit beside the second question: it was dropped, with its
    // answer, before the second run (the compaction hook saw both); the later turns fit.
    let sent = |i: usize| -> Vec<String> {
        model.requests()[i]
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| m.content.clone())
            .collect()
    };
    assert_eq!(sent(1), ["second?"]);
    assert_eq!(sent(2), ["second?", "second answer", "third?"]);
    assert!(
        log.lock().unwrap().contains(&"h:compaction(2)".to_string()),
        "{log:?}"
    );
    assert_eq!(thread.history().len(), 4);
}

#[tokio::test]
async fn unknown_tools_are_reported_back_to_the_model() {
    let model = Arc::new(ScriptedModel::new([
        call("c1", "nope"),
        Message::assistant("sorry"),
    ]));
    let agent = Agent::builder().model(model.clone()).tool(Clock).build().unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "x").await.unwrap();
    let tool_msg = thread.history().iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(
        tool_msg.content,
        "error: unknown tool `nope`; available tools: clock"
    );
}

/// A provider with a stable catalog and per-message text, recording what `invoked` saw.
struct Skills {
    seen: Log,
}
#[async_trait]
impl ContextProvider for Skills {
    fn name(&self) -> &str {
        "skills"
    }
    async fn invoking(&self, messages: &[Message], _: &RunInfo) -> Result<Context> {
        let last = ctxkit::latest_user_message(messages)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(Context::new()
            .with_catalog([CatalogEntry {
                name: "greet".into(),
                description: "Greetings".into(),
            }])
            .with_section(
                Section::per_message(SectionKind::SKILLS, format!("Matched for: {last}"))
                    .with_items(["greet"]),
            ))
    }
    async fn invoked(
        &self,
        _: &[Message],
        r: std::result::Result<&[Message], &Error>,
        _: &RunInfo,
    ) -> Result<()> {
        self.seen
            .lock()
            .unwrap()
            .push(if r.is_ok() { "ok".into() } else { "err".into() });
        Ok(())
    }
}

/// The requests of a lazy conversation of three messages, with a compaction after the first
/// when `compact`, saved to JSON and resumed on a new agent after the first when `resume`.
async fn lazy_conversation(compact: bool, resume: bool) -> Vec<Vec<Message>> {
    let model = Arc::new(ScriptedModel::new(["a1", "a2", "a3"].map(Message::assistant)));
    let agent = || {
        Agent::builder()
            .instructions("You are helpful.")
            .model(model.clone())
            .tool(Clock)
            .provider(Skills { seen: Log::default() })
            .assembly(Assembly::Lazy)
            .build()
            .unwrap()
    };
    let first = agent();
    let mut thread = Thread::with_id("s-1");
    first.run(&mut thread, "one").await.unwrap();
    if compact {
        first.compact(&mut thread, 0).await.unwrap();
    }
    let (agent, mut thread) = if resume {
        let saved = serde_json::to_string(&thread).unwrap();
        drop((first, thread));
        (agent(), serde_json::from_str::<Thread>(&saved).unwrap())
    } else {
        (first, thread)
    };
    agent.run(&mut thread, "two").await.unwrap();
    agent.run(&mut thread, "three").await.unwrap();
    model.requests().into_iter().map(|r| r.messages).collect()
}

#[tokio::test]
async fn a_resumed_thread_sends_what_one_never_interrupted_sends() {
    for compact in [false, true] {
        let uninterrupted = lazy_conversation(compact, false).await;
        assert_eq!(
            lazy_conversation(compact, true).await,
            uninterrupted,
            "compact: {compact}"
        );
        // What lazy injection sent is remembered across the save: the full context once, again
        // only after a compaction dropped it.
        let full = |m: &Vec<Message>| system_count(m, "[System Prompt]");
        assert_eq!(uninterrupted.iter().map(full).collect::<Vec<_>>(), [1, 1, 1]);
        let stored: usize = uninterrupted[2]
            .iter()
            .filter(|m| m.content.starts_with("[System Prompt]"))
            .count();
        assert_eq!(stored, 1, "compact: {compact}");
    }
}

/// Sessions kept as JSON in memory, as a host's own store would keep them.
#[derive(Default)]
struct Kept(Mutex<std::collections::BTreeMap<String, String>>);
#[async_trait]
impl SessionStore for Kept {
    async fn load(&self, id: &str) -> Result<Option<Thread>> {
        let kept = self.0.lock().unwrap().get(id).cloned();
        kept.map(|json| serde_json::from_str(&json).map_err(Error::other))
            .transpose()
    }
    async fn save(&self, thread: &Thread) -> Result<()> {
        let json = serde_json::to_string(thread).map_err(Error::other)?;
        self.0.lock().unwrap().insert(thread.id().to_string(), json);
        Ok(())
    }
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        Ok(Vec::new())
    }
    async fn delete(&self, id: &str) -> Result<bool> {
        Ok(self.0.lock().unwrap().remove(id).is_some())
    }
}

#[tokio::test]
async fn an_agent_with_sessions_saves_every_run_and_resumes_by_id() {
    let store = Arc::new(Kept::default());
    let model = Arc::new(ScriptedModel::new([Message::assistant("a1")]));
    let agent = |model: Arc<ScriptedModel>| {
        Agent::builder()
            .model(model)
            .sessions(store.clone())
            .build()
            .unwrap()
    };
    let first = agent(model.clone());
    let mut thread = first.session("s-1").await.unwrap();
    assert!(thread.history().is_empty(), "a new session");
    first.run(&mut thread, "one").await.unwrap();
    // The script has no reply left: the run fails, and the thread it changed is saved too.
    assert!(first.run(&mut thread, "two").await.is_err());
    drop((first, thread));

    let again = Arc::new(ScriptedModel::new([Message::assistant("a3")]));
    let second = agent(again.clone());
    let mut thread = second.session("s-1").await.unwrap();
    assert_eq!((thread.id(), thread.turns()), ("s-1", 2));
    second.run(&mut thread, "three").await.unwrap();
    let sent: Vec<String> = again.requests()[0]
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(sent, ["one", "a1", "two", "three"]);
    assert!(store.delete("s-1").await.unwrap());
    assert!(second.session("s-1").await.unwrap().history().is_empty());
}

#[test]
fn a_saved_thread_of_another_version_is_refused_in_one_sentence() {
    let mut saved = serde_json::to_value(Thread::with_id("s-1")).unwrap();
    saved["version"] = json!(2);
    let err = serde_json::from_value::<Thread>(saved).unwrap_err().to_string();
    assert_eq!(err, "a saved thread of version 2 (this build reads version 1)");
}

fn system_count(messages: &[Message], prefix: &str) -> usize {
    messages
        .iter()
        .filter(|m| m.role == Role::System && m.content.starts_with(prefix))
        .count()
}

#[tokio::test]
async fn lazy_injection_reinjects_after_compact_and_reset() {
    let model = Arc::new(ScriptedModel::new(
        (0..5).map(|i| Message::assistant(format!("r{i}"))),
    ));
    let agent = Agent::builder()
        .instructions("You are helpful.")
        .model(model.clone())
        .tool(Clock)
        .provider(Skills { seen: Log::default() })
        .assembly(Assembly::Lazy)
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "one").await.unwrap();
    agent.run(&mut thread, "two").await.unwrap();
    let reqs = model.requests();
    let full = "[System Prompt]\nYou are helpful.\n\n[Available Tools]\n- clock: Tell the time\n\n[Available Skills]\n- greet: Greetings";
    assert_eq!(reqs[0].messages[0].content, full);
    assert_eq!(
        system_count(&reqs[1].messages, "[System Prompt]"),
        1,
        "not injected twice"
    );
    // The per-message context is sent with each request but not stored in the history.
    assert_eq!(
        reqs[1]
            .messages
            .iter()
            .filter(|m| m.content.starts_with("Matched for: two"))
            .count(),
        1
    );
    assert_eq!(system_count(thread.history(), "Matched for"), 0);

    agent.compact(&mut thread, 1).await.unwrap();
    agent.run(&mut thread, "three").await.unwrap();
    let req = &model.requests()[2];
    assert_eq!(
        system_count(&req.messages, "[System Prompt]"),
        1,
        "reinjected after compact"
    );

    thread.reset();
    agent.run(&mut thread, "four").await.unwrap();
    let req = &model.requests()[3];
    assert_eq!(req.messages[0].content, full, "reinjected after reset");
    assert_eq!(req.messages.len(), 3);
}

#[tokio::test]
async fn per_request_assembly_keeps_a_stable_prefix_and_reports() {
    let seen = Log::default();
    let model = Arc::new(ScriptedModel::new([
        Message::assistant("a"),
        Message::assistant("b"),
    ]));
    let agent = Agent::builder()
        .instructions("Base.")
        .model(model.clone())
        .provider(Skills { seen: seen.clone() })
        .build()
        .unwrap();
    let mut thread = Thread::new();
    let out = agent.run(&mut thread, "hello").await.unwrap();
    agent.run(&mut thread, "again").await.unwrap();
    let reqs = model.requests();
    let prefix = "Base.\n\n## Available skills\n- greet: Greetings\n\n";
    assert_eq!(reqs[0].messages[0].content, format!("{prefix}Matched for: hello"));
    assert_eq!(reqs[1].messages[0].content, format!("{prefix}Matched for: again"));
    assert_eq!(reqs[1].messages.len(), 4, "system + history of three");
    // The part a prompt cache can keep: everything before the per-message section.
    let stable = prefix.trim_end();
    assert!(reqs.iter().all(|r| r.stable_prefix == stable.len()));
    assert!(reqs.iter().all(|r| r.messages[0].content.starts_with(stable)));
    assert_eq!(out.report.injected[&SectionKind::SKILLS], ["greet"]);
    assert_eq!(out.report.providers[0].name, "skills");
    let t = &out.report.tokens;
    assert_eq!(t.total, reqs[0].meta.tokens);
    assert!(
        t.by_section[&SectionKind::INSTRUCTIONS] > 0
            && t.by_section[&SectionKind::CATALOG] > 0
            && t.by_section[&SectionKind::SKILLS] > 0
    );
    assert_eq!(*seen.lock().unwrap(), ["ok", "ok"]);
}

#[tokio::test]
async fn providers_hear_about_failed_model_calls() {
    let seen = Log::default();
    let model = Arc::new(ScriptedModel::default());
    model.push_error("HTTP 503");
    let agent = Agent::builder()
        .model(model)
        .provider(Skills { seen: seen.clone() })
        .build()
        .unwrap();
    let err = agent.run(&mut Thread::new(), "hi").await.unwrap_err();
    assert_eq!(err.to_string(), "model `scripted` failed: HTTP 503");
    assert_eq!(*seen.lock().unwrap(), ["err"]);
}

#[tokio::test]
async fn dry_run_model_summarizes_the_request() {
    let agent = Agent::builder()
        .instructions("Base.")
        .provider(Skills { seen: Log::default() })
        .tool(Clock)
        .build()
        .unwrap();
    let out = agent.run(&mut Thread::new(), "hi").await.unwrap();
    let text = out.reply.content;
    assert!(text.starts_with("[dry-run] 2 messages, "), "{text}");
    assert!(
        text.contains("Instructions from: agent, catalog, skills."),
        "{text}"
    );
    assert!(text.contains("Skills: greet."), "{text}");
    assert!(text.contains("Tools: clock."), "{text}");
    assert!(
        text.contains(&format!("{} tokens", out.report.tokens.total)),
        "{text}"
    );
}

/// Reports, when asked for a baseline, that sending everything would cost 500 more tokens.
struct Frugal;

#[async_trait::async_trait]
impl ContextProvider for Frugal {
    fn name(&self) -> &str {
        "frugal"
    }
    async fn invoking(&self, _: &[Message], run: &RunInfo) -> ctxkit::Result<Context> {
        let mut ctx = Context::new().with_instructions("A little.");
        if run.baseline {
            ctx.baseline_delta = 500;
        }
        Ok(ctx)
    }
}

#[tokio::test]
async fn a_baseline_is_the_request_plus_what_providers_would_add() {
    let agent = Agent::builder()
        .provider(Frugal)
        .report_baseline()
        .build()
        .unwrap();
    let out = agent.run(&mut Thread::new(), "hi").await.unwrap();
    assert_eq!(out.report.tokens_full, Some(out.report.tokens.total + 500));
    let (_, preview) = agent.preview(&Thread::new(), "hi").await.unwrap();
    assert_eq!(preview.tokens_full, Some(preview.tokens.total + 500));

    let plain = Agent::builder().provider(Frugal).build().unwrap();
    let out = plain.run(&mut Thread::new(), "hi").await.unwrap();
    assert_eq!(out.report.tokens_full, None, "no baseline unless asked for");
}

/// Keeps the summary its session end was given.
struct Summaries(Arc<Mutex<Vec<ctxkit::SessionSummary>>>);
#[async_trait]
impl Hook for Summaries {
    fn name(&self) -> &str {
        "summaries"
    }
    async fn session_end(
        &self,
        _: &mut HookContext<'_>,
        s: &ctxkit::SessionSummary,
    ) -> std::result::Result<(), BoxError> {
        self.0.lock().unwrap().push(s.clone());
        Ok(())
    }
}

struct Broken;
#[async_trait]
impl Tool for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn description(&self) -> &str {
        "Always fails"
    }
    async fn call(&self, _: Value) -> Result<String> {
        Err(Error::Tool {
            tool: "broken".into(),
            message: "the disk is full".into(),
        })
    }
}

/// What learning from a session reads: how its runs and tool calls went.
#[tokio::test]
async fn the_session_summary_counts_failed_runs_and_failed_tool_calls() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = Arc::new(ScriptedModel::new([
        Message::tool_calls(vec![
            ToolCall::new("1", "clock", &json!({})),
            ToolCall::new("2", "broken", &json!({})),
            ToolCall::new("3", "clock", &json!({})),
        ]),
        Message::assistant("done"),
        // The script ends here: the second run fails.
    ]));
    let agent = Agent::builder()
        .model(model)
        .tool(Clock)
        .tool(Broken)
        .hook(Summaries(seen.clone()))
        .build()
        .unwrap();
    let mut thread = Thread::new();
    agent.run(&mut thread, "what time is it?").await.unwrap();
    agent.run(&mut thread, "and now?").await.unwrap_err();
    agent.end_session(&mut thread).await.unwrap();
    let summary = seen.lock().unwrap().pop().unwrap();
    assert_eq!(summary.tool_usage.values().sum::<usize>(), 3);
    assert_eq!(summary.failed_tool_calls, 1);
    assert_eq!(summary.failed_turns, 1);
    assert_eq!(summary.turns, 2);
}
