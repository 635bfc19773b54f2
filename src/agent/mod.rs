//! The agent runner: one provider list, one model, tools and hooks around a bounded tool loop.

mod hooks;
mod request;
mod session;
mod thread;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tracing::Instrument;

use crate::context::Context;
use crate::context::Section;
use crate::context::SectionKind;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::model::{ChatModel, DryRunModel, ModelReply, ModelRequest, Usage};
use crate::provider::{ContextProvider, Phase, RunInfo, RunOutcome, ThreadInfo};
use crate::report::ProviderReport;
use crate::tokens::{default_counter, TokenCounter};
use crate::tool::{CancellationToken, Tool, ToolContext, ToolRegistry};

pub use hooks::{Hook, HookContext, SessionSummary};
pub use request::{Assembly, TokenReport};
pub use session::{SessionInfo, SessionStore};
pub use thread::Thread;

/// Bounds of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Model calls that may ask for tools in a row before the run fails (default 8).
    pub max_tool_rounds: usize,
    /// Time all providers together get to contribute (default: each provider's own timeout).
    pub context_deadline: Option<Duration>,
    /// Token budget for injected context, passed to providers (default: none).
    pub context_tokens: Option<usize>,
    /// Token budget for the conversation's history (default: none). Before each run, the
    /// oldest turns are dropped until the history fits, the latest user message always kept
    /// and tool calls kept with their results; the compaction hooks see what was dropped.
    pub history_tokens: Option<usize>,
    /// Time a whole run may take: every model call and tool call of every round (default:
    /// none, each model call bounded by its own backend's budget). When it runs out, what is
    /// under way is stopped and the run fails with
    /// [`Error::RunTimeBudget`](crate::Error::RunTimeBudget).
    pub run_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tool_rounds: 8,
            context_deadline: None,
            context_tokens: None,
            history_tokens: None,
            run_timeout: None,
        }
    }
}

/// The reply of one run and how it was produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The model's final answer (its first reply without tool calls), also the thread's last
    /// message.
    pub reply: Message,
    /// Providers, injected items, tokens and call counts of the run.
    pub report: RunReport,
}

/// What a run did: provider timings and outcomes, what was injected, tokens of the request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunReport {
    /// How each provider fared in `invoking` (time and outcome), leaves only, in registration
    /// order.
    pub providers: Vec<ProviderReport>,
    /// Items injected by section kind, e.g. skills → the selected skill names.
    pub injected: BTreeMap<SectionKind, Vec<String>>,
    /// Items providers chose but did not send (a skill past the cap or over the budget).
    pub left_out: Vec<crate::context::LeftOut>,
    /// Tokens of the first request of the run.
    pub tokens: TokenReport,
    /// Tokens the baseline would have sent for the same message — every skill in full, as the
    /// providers report it — when the agent was built with [`AgentBuilder::report_baseline`];
    /// `None` otherwise.
    pub tokens_full: Option<usize>,
    /// Model calls the run made: one per tool round plus the final answer.
    pub model_calls: usize,
    /// Tool calls the run carried out (or a `before_tool` hook answered), over all rounds.
    pub tool_calls: usize,
    /// Tokens as the server counted them, added up over the run's model calls, prompt-cache
    /// reads and writes included; `None` when the model reported none.
    pub usage: Option<Usage>,
}

/// An agent: base instructions, a model, context providers, tools and hooks.
///
/// ```
/// use ctxkit::{Agent, Context, ContextProvider, Message, Result, RunInfo, Thread};
///
/// struct Style;
/// #[async_trait::async_trait]
/// impl ContextProvider for Style {
///     fn name(&self) -> &str { "style" }
///     async fn invoking(&self, _: &[Message], _: &RunInfo) -> Result<Context> {
///         Ok(Context::new().with_instructions("Answer in one sentence."))
///     }
/// }
///
/// # #[tokio::main] async fn main() -> Result<()> {
/// let agent = Agent::builder().instructions("You are helpful.").provider(Style).build()?;
/// let mut thread = Thread::new();
/// let out = agent.run(&mut thread, "What is 2+2?").await?;
/// assert!(out.reply.content.starts_with("[dry-run]")); // the offline default model
/// assert_eq!(out.report.providers[0].name, "style");
/// # Ok(()) }
/// ```
pub struct Agent {
    base: Section,
    model: Arc<dyn ChatModel>,
    providers: Vec<Arc<dyn ContextProvider>>,
    tools: ToolRegistry,
    hooks: hooks::Hooks,
    limits: Limits,
    assembly: Assembly,
    counter: Arc<dyn TokenCounter>,
    project: Option<String>,
    report_baseline: bool,
    phase: Option<Phase>,
    sessions: Option<Arc<dyn SessionStore>>,
}

/// Builds an [`Agent`]; every part has a default (no instructions, the dry-run model, no
/// providers, tools or hooks, [`Limits::default`], per-request assembly, BPE token counts).
#[derive(Default)]
pub struct AgentBuilder {
    instructions: String,
    model: Option<Arc<dyn ChatModel>>,
    providers: Vec<Arc<dyn ContextProvider>>,
    tools: Vec<Arc<dyn Tool>>,
    hooks: Vec<Arc<dyn Hook>>,
    limits: Limits,
    assembly: Assembly,
    counter: Option<Arc<dyn TokenCounter>>,
    project: Option<String>,
    report_baseline: bool,
    phase: Option<Phase>,
    sessions: Option<Arc<dyn SessionStore>>,
}

impl AgentBuilder {
    /// The agent's own standing instructions: the first section of every request, with
    /// source `agent`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = text.into();
        self
    }
    /// The model to call (default: [`DryRunModel`], which answers offline with a summary of
    /// the request).
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }
    /// Add a provider; providers merge in the order they are added.
    pub fn provider(mut self, provider: impl ContextProvider + 'static) -> Self {
        self.providers.push(Arc::new(provider));
        self
    }
    /// Add a tool of the agent's own, offered on every request; [`build`](Self::build) fails
    /// when two tools share a name.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }
    /// Add every tool of a mounted MCP server (see [`McpServer`](crate::mcp::McpServer));
    /// [`build`](Self::build) fails when two tools share a name, e.g. two servers with the same
    /// name.
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, server: crate::mcp::McpTools) -> Self {
        for tool in server.into_tools() {
            self.tools.push(Arc::new(tool));
        }
        self
    }
    /// Add a hook; hooks fire in the order they are added.
    pub fn hook(mut self, hook: impl Hook + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }
    /// Replace every bound of a run at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Set [`Limits::max_tool_rounds`] alone, keeping the other bounds.
    pub fn max_tool_rounds(mut self, rounds: usize) -> Self {
        self.limits.max_tool_rounds = rounds;
        self
    }
    /// How context reaches the model: a fresh system message per request (the default) or
    /// lazily, in full once and then as deltas.
    pub fn assembly(mut self, assembly: Assembly) -> Self {
        self.assembly = assembly;
        self
    }
    /// The counter behind token reports and [`RequestMeta::tokens`](crate::model::RequestMeta::tokens)
    /// (default: exact BPE, [`BpeCounter`](crate::tokens::BpeCounter));
    /// [`ApproxCounter`](crate::tokens::ApproxCounter) trades accuracy for speed.
    pub fn token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = Some(counter);
        self
    }
    /// The project the agent works in; providers scope memories by it.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Keep sessions in `store`: the thread is saved after every run (whether it succeeded or
    /// failed) and every compaction that dropped something, and [`Agent::session`] resumes one
    /// by id.
    pub fn sessions(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.sessions = Some(store);
        self
    }

    /// The phase every run of this agent serves ([`RunInfo::phase`]); default none, which
    /// providers read as every phase.
    pub fn phase(mut self, phase: Phase) -> Self {
        self.phase = Some(phase);
        self
    }

    /// Report [`RunReport::tokens_full`]: what sending everything (every skill in full) would
    /// have cost. Providers compute their part from what they have indexed, once per snapshot
    /// (the first time costs a count of every skill body), so it is off unless asked for.
    pub fn report_baseline(mut self) -> Self {
        self.report_baseline = true;
        self
    }

    /// Fails only when two tools share a name.
    pub fn build(self) -> Result<Agent> {
        let mut tools = ToolRegistry::new();
        for tool in self.tools {
            tools.register(tool)?;
        }
        Ok(Agent {
            base: Section {
                source: "agent".into(),
                ..Section::stable(SectionKind::INSTRUCTIONS, self.instructions)
            },
            model: self.model.unwrap_or_else(|| Arc::new(DryRunModel)),
            providers: self.providers,
            tools,
            hooks: hooks::Hooks(self.hooks),
            limits: self.limits,
            assembly: self.assembly,
            counter: self.counter.unwrap_or_else(default_counter),
            project: self.project,
            report_baseline: self.report_baseline,
            phase: self.phase,
            sessions: self.sessions,
        })
    }
}

impl Agent {
    /// Start building an agent; see [`AgentBuilder`] for the defaults.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// `backend:model` of the agent's model, as logs and errors name it.
    pub fn model_name(&self) -> &str {
        self.model.name()
    }

    fn run_info(&self, thread: &Thread, preview: bool) -> RunInfo {
        RunInfo {
            preview,
            baseline: self.report_baseline,
            thread_id: thread.id().to_string(),
            project: self.project.clone(),
            deadline: self
                .limits
                .context_deadline
                .map(|d| tokio::time::Instant::now() + d),
            state: thread.state.clone(),
            token_budget: self.limits.context_tokens,
            phase: self.phase,
            ..RunInfo::default()
        }
    }

    fn hook_context<'a>(&'a self, thread_id: &'a str, state: &'a mut crate::state::State) -> HookContext<'a> {
        HookContext {
            thread_id,
            project: self.project.as_deref(),
            model: self.model.name(),
            state,
        }
    }

    /// Agent tools plus the tools providers offered for this run.
    /// Under restrictions (see [`ToolRestriction`](crate::restrict::ToolRestriction)), every tool is
    /// wrapped so that a call they do not allow is refused, whoever offered the tool.
    fn tools_for(&self, ctx: &Context) -> Result<ToolRegistry> {
        if ctx.tools.is_empty() && ctx.restrictions.is_empty() {
            return Ok(self.tools.clone());
        }
        let mut tools = self.tools.clone();
        for tool in &ctx.tools {
            tools.register_from(tool.clone(), "a context provider", |_| "agent".into())?;
        }
        if ctx.restrictions.is_empty() {
            return Ok(tools);
        }
        let rules: Arc<[crate::restrict::ToolRestriction]> = ctx.restrictions.clone().into();
        let mut restricted = ToolRegistry::new();
        for tool in tools.iter() {
            restricted.register(Arc::new(crate::restrict::Restricted::new(
                tool.clone(),
                rules.clone(),
            )))?;
        }
        Ok(restricted)
    }

    fn report(&self, ctx: &Context, tokens: TokenReport) -> RunReport {
        let mut injected: BTreeMap<SectionKind, Vec<String>> = BTreeMap::new();
        for s in ctx.sections.iter().filter(|s| !s.items.is_empty()) {
            injected
                .entry(s.kind.clone())
                .or_default()
                .extend(s.items.iter().cloned());
        }
        let tokens_full = self
            .report_baseline
            .then(|| (tokens.total as i64 + ctx.baseline_delta).max(0) as usize);
        RunReport {
            providers: ctx.reports.clone(),
            injected,
            left_out: ctx.left_out.clone(),
            tokens,
            tokens_full,
            model_calls: 0,
            tool_calls: 0,
            usage: None,
        }
    }

    /// The request the agent would send for `input` on `thread`, without calling the model,
    /// firing hooks or changing the thread. Providers see a run with [`RunInfo::preview`] set
    /// and make the same choices as for a real run; nothing is recorded.
    pub async fn preview(&self, thread: &Thread, input: &str) -> Result<(ModelRequest, RunReport)> {
        let mut thread = thread.clone();
        thread.history_mut().push(Message::user(input));
        let run = self.run_info(&thread, true);
        let ctx = self.providers.invoking(thread.history(), &run).await?;
        let tools = self.tools_for(&ctx)?;
        let (request, tokens) = request::assemble(
            &self.base,
            &ctx,
            &tools,
            &mut thread,
            self.assembly,
            &*self.counter,
        );
        let report = self.report(&ctx, tokens);
        Ok((request, report))
    }

    /// Send `input` on `thread`: gather context, call the model, run the tools it asks for, and
    /// return its final reply with a report. Whatever the outcome, providers hear once, in
    /// [`ContextProvider::run_finished`], how the run ended.
    pub async fn run(&self, thread: &mut Thread, input: impl Into<String>) -> Result<RunOutput> {
        let span = tracing::info_span!("run", thread = thread.id(), model = self.model.name());
        let output = self
            .run_inner(thread, input.into())
            .instrument(span.clone())
            .await;
        if let Some(store) = &self.sessions {
            // A run that failed changed the thread too (its message, its open calls answered):
            // the saved session is the one in memory. A failed save is the run's error, after
            // the thread was updated, so the reply is still in its history.
            store.save(thread).instrument(span).await?;
        }
        output
    }

    /// The session saved under `id` in the agent's [`SessionStore`], or a new thread of that
    /// id when there is none (or the agent keeps no sessions).
    pub async fn session(&self, id: &str) -> Result<Thread> {
        let saved = match &self.sessions {
            Some(store) => store.load(id).await?,
            None => None,
        };
        Ok(saved.unwrap_or_else(|| Thread::with_id(id)))
    }

    async fn run_inner(&self, thread: &mut Thread, input: String) -> Result<RunOutput> {
        let thread_id = thread.id().to_string();
        if !thread.started {
            let info = ThreadInfo {
                thread_id: thread_id.clone(),
                project: self.project.clone(),
            };
            self.providers.thread_created(&info).await?;
            self.hooks
                .session_start(&mut self.hook_context(&thread_id, &mut thread.state))
                .await?;
            thread.started = true;
        }
        let input = self
            .hooks
            .user_message(&mut self.hook_context(&thread_id, &mut thread.state), input)
            .await?;
        // Kept aside: lazy assembly may insert a context message before it, moving its index.
        let input = Message::user(input);
        thread.history_mut().push(input.clone());
        thread.turns += 1;
        if let Some(budget) = self.limits.history_tokens {
            let keep = thread.fitting(budget, &*self.counter);
            if keep < thread.history().len() {
                self.compact(thread, keep).await?;
            }
        }

        let run = self.run_info(thread, false);
        let ctx = self.providers.invoking(thread.history(), &run).await?;
        // Cancelled however the run ends: its budget, its caller dropping it, or its end.
        let tool_ctx = ToolContext {
            session: thread_id.clone(),
            project: self.project.clone(),
            run: format!("{thread_id}#{}", thread.turns),
            cancel: CancellationToken::new(),
        };
        let _cancel_on_end = tool_ctx.cancel.clone().drop_guard();
        let mut report = None;
        let result = match self.limits.run_timeout {
            None => self.tool_loop(thread, &ctx, &run, &tool_ctx, &mut report).await,
            Some(budget) => {
                tokio::time::timeout(budget, self.tool_loop(thread, &ctx, &run, &tool_ctx, &mut report))
                    .await
                    .unwrap_or_else(|_| {
                        let (model_calls, tool_calls) =
                            report.as_ref().map_or((0, 0), |r| (r.model_calls, r.tool_calls));
                        Err(Error::RunTimeBudget {
                            budget,
                            model_calls,
                            tool_calls,
                        })
                    })
            }
        };
        if result.is_err() {
            thread.failed_turns += 1;
            thread.answer_open_calls("error: not run, because the run stopped before this call");
        }
        let outcome = RunOutcome {
            messages: thread.history(),
            input: &input,
            result: result.as_ref().map(|out| &out.reply),
            context: &ctx,
            state: &thread.state,
        };
        self.providers.run_finished(&run, &outcome).await?;
        result
    }

    /// Call the model and the tools it asks for until it answers without tool calls. The
    /// report is kept in `report`, so a run stopped by its time budget can still say how far
    /// it got.
    async fn tool_loop(
        &self,
        thread: &mut Thread,
        ctx: &Context,
        run: &RunInfo,
        tool_ctx: &ToolContext,
        report: &mut Option<RunReport>,
    ) -> Result<RunOutput> {
        let thread_id = thread.id().to_string();
        let tools = self.tools_for(ctx)?;
        let mut round = 0;
        loop {
            let (mut request, tokens) =
                request::assemble(&self.base, ctx, &tools, thread, self.assembly, &*self.counter);
            let report = report.get_or_insert_with(|| self.report(ctx, tokens));
            self.hooks
                .before_model(
                    &mut self.hook_context(&thread_id, &mut thread.state),
                    &mut request,
                )
                .await?;
            let ModelReply {
                message: reply,
                usage,
            } = self.call_model(&request, run).await?;
            report.model_calls += 1;
            if let Some(usage) = usage {
                *report.usage.get_or_insert_with(Usage::default) += usage;
            }
            self.hooks
                .after_model(&mut self.hook_context(&thread_id, &mut thread.state), &reply)
                .await?;
            thread.history_mut().push(reply.clone());
            if reply.tool_calls.is_empty() {
                return Ok(RunOutput {
                    reply,
                    report: report.clone(),
                });
            }
            if round + 1 >= self.limits.max_tool_rounds {
                return Err(Error::ToolRounds(self.limits.max_tool_rounds));
            }
            for call in &reply.tool_calls {
                let output = self.call_tool(&tools, thread, call, tool_ctx).await?;
                thread.history_mut().push(Message::tool_result(&call.id, output));
                report.tool_calls += 1;
            }
            thread.state.clear_temp();
            round += 1;
        }
    }

    /// One model call; providers hear about it whether it worked or not.
    async fn call_model(&self, request: &ModelRequest, run: &RunInfo) -> Result<ModelReply> {
        let span = tracing::info_span!(
            "model",
            model = self.model.name(),
            tokens = request.meta.tokens,
            elapsed_us = tracing::field::Empty,
            tool_calls = tracing::field::Empty,
            cache_read_tokens = tracing::field::Empty,
            cache_write_tokens = tracing::field::Empty,
        );
        let start = std::time::Instant::now();
        let result = self.model.complete(request).instrument(span.clone()).await;
        span.record("elapsed_us", start.elapsed().as_micros() as u64);
        match &result {
            Ok(reply) => {
                span.record("tool_calls", reply.message.tool_calls.len());
                if let Some(usage) = &reply.usage {
                    span.record("cache_read_tokens", usage.cache_read_tokens);
                    span.record("cache_write_tokens", usage.cache_write_tokens);
                }
                self.providers
                    .invoked(&request.messages, Ok(std::slice::from_ref(&reply.message)), run)
                    .await?;
            }
            Err(e) => {
                tracing::warn!(parent: &span, error = %e, "model call failed");
                self.providers.invoked(&request.messages, Err(e), run).await?;
            }
        }
        result
    }

    /// A before-tool hook may answer instead of the tool; a failing tool's error goes back to
    /// the model as its output, so the model can correct itself.
    async fn call_tool(
        &self,
        tools: &ToolRegistry,
        thread: &mut Thread,
        call: &crate::message::ToolCall,
        tool_ctx: &ToolContext,
    ) -> Result<String> {
        let name = call.function.name.as_str();
        let thread_id = thread.id().to_string();
        *thread.tool_usage.entry(name.to_string()).or_default() += 1;
        let mut failed = false;
        let mut hctx = self.hook_context(&thread_id, &mut thread.state);
        let output = match self.hooks.before_tool(&mut hctx, call).await? {
            Some(answer) => answer,
            None => {
                let span = tracing::info_span!("tool", tool = name, elapsed_us = tracing::field::Empty);
                let start = std::time::Instant::now();
                let result = tools
                    .execute_in(name, &call.function.arguments, tool_ctx)
                    .instrument(span.clone())
                    .await;
                span.record("elapsed_us", start.elapsed().as_micros() as u64);
                result.unwrap_or_else(|e| {
                    tracing::warn!(parent: &span, error = %e, "tool call failed");
                    failed = true;
                    format!("error: {e}")
                })
            }
        };
        self.hooks.after_tool(&mut hctx, call, &output).await?;
        thread.failed_tool_calls += usize::from(failed);
        Ok(output)
    }

    /// Compact the thread to its last `keep_last` messages and fire the compaction hooks with
    /// what was removed. Returns how many messages were removed.
    pub async fn compact(&self, thread: &mut Thread, keep_last: usize) -> Result<usize> {
        let removed = thread.compact(keep_last);
        let thread_id = thread.id().to_string();
        self.hooks
            .compaction(&mut self.hook_context(&thread_id, &mut thread.state), &removed)
            .await?;
        if let (Some(store), false) = (&self.sessions, removed.is_empty()) {
            store.save(thread).await?;
        }
        Ok(removed.len())
    }

    /// End the conversation: fire the session-end hooks with a summary of the thread. Every
    /// hook runs, whatever an earlier one did; the first failure is returned (later ones are
    /// logged as warnings). The conversation was answered by then: a caller such as `ctxkit
    /// chat` reports the failure as a warning, not as a failed session.
    pub async fn end_session(&self, thread: &mut Thread) -> Result<()> {
        let summary = SessionSummary {
            thread_id: thread.id().to_string(),
            turns: thread.turns,
            tool_usage: thread.tool_usage.clone(),
            failed_turns: thread.failed_turns,
            failed_tool_calls: thread.failed_tool_calls,
            messages: thread.history().to_vec(),
        };
        let thread_id = summary.thread_id.clone();
        self.hooks
            .session_end(&mut self.hook_context(&thread_id, &mut thread.state), &summary)
            .await
    }
}
