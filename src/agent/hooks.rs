//! Lifecycle hooks: observe or steer the agentic loop at eight points (session start and end,
//! each user message, before and after each model call and each tool call, and compaction).
//!
//! Hooks fire in registration order. An error stops the run and comes back as
//! [`Error::Hook`] naming the hook and the point.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::{BoxError, Error, Result};
use crate::message::{Message, ToolCall};
use crate::model::ModelRequest;
use crate::state::State;

/// What every hook can see, and the thread's scoped state it may change.
pub struct HookContext<'a> {
    /// The thread being run, as [`Thread::id`](crate::agent::Thread::id) gives it.
    pub thread_id: &'a str,
    /// The agent's project ([`AgentBuilder::project`](crate::agent::AgentBuilder::project)), if set.
    pub project: Option<&'a str>,
    /// `backend:model` of the agent's model.
    pub model: &'a str,
    /// The thread's scoped state; what a hook changes here stays with the thread (a `temp:`
    /// key until the tool round ends).
    pub state: &'a mut State,
}

/// A finished conversation, handed to `session_end` (memory extraction reads it).
#[derive(Clone, Debug, Default)]
pub struct SessionSummary {
    /// The thread that ended, to key whatever is kept from it.
    pub thread_id: String,
    /// User turns run on the thread.
    pub turns: usize,
    /// Calls per tool name.
    pub tool_usage: BTreeMap<String, usize>,
    /// Runs that ended in an error.
    pub failed_turns: usize,
    /// Tool calls whose tool failed (the model saw the error).
    pub failed_tool_calls: usize,
    /// The conversation as it stands.
    pub messages: Vec<Message>,
}

type HookResult<T = ()> = std::result::Result<T, BoxError>;

/// Implement the points you need; every method defaults to doing nothing.
#[async_trait]
pub trait Hook: Send + Sync {
    /// A short name that says which hook failed in [`Error::Hook`].
    fn name(&self) -> &str;
    /// Before the first run of a thread.
    async fn session_start(&self, _ctx: &mut HookContext<'_>) -> HookResult {
        Ok(())
    }
    /// A new user message; return `Some` to rewrite it.
    async fn user_message(&self, _ctx: &mut HookContext<'_>, _message: &str) -> HookResult<Option<String>> {
        Ok(None)
    }
    /// Before each model call; may edit the request.
    async fn before_model(&self, _ctx: &mut HookContext<'_>, _request: &mut ModelRequest) -> HookResult {
        Ok(())
    }
    /// After each successful model call.
    async fn after_model(&self, _ctx: &mut HookContext<'_>, _response: &Message) -> HookResult {
        Ok(())
    }
    /// Before a tool runs; return `Some(output)` to answer instead of the tool.
    async fn before_tool(&self, _ctx: &mut HookContext<'_>, _call: &ToolCall) -> HookResult<Option<String>> {
        Ok(None)
    }
    /// After a tool ran (or was answered by a hook).
    async fn after_tool(&self, _ctx: &mut HookContext<'_>, _call: &ToolCall, _output: &str) -> HookResult {
        Ok(())
    }
    /// When the conversation ends.
    async fn session_end(&self, _ctx: &mut HookContext<'_>, _summary: &SessionSummary) -> HookResult {
        Ok(())
    }
    /// After a compaction, with the messages that were removed.
    async fn compaction(&self, _ctx: &mut HookContext<'_>, _removed: &[Message]) -> HookResult {
        Ok(())
    }
}

/// The registered hooks, fired in order.
#[derive(Clone, Default)]
pub(crate) struct Hooks(pub(crate) Vec<Arc<dyn Hook>>);

fn hook_error<'a>(hook: &'a dyn Hook, point: &'static str) -> impl FnOnce(BoxError) -> Error + 'a {
    move |source| Error::Hook {
        hook: hook.name().to_string(),
        point,
        source,
    }
}

impl Hooks {
    pub(crate) async fn session_start(&self, ctx: &mut HookContext<'_>) -> Result<()> {
        for h in &self.0 {
            h.session_start(ctx)
                .await
                .map_err(hook_error(&**h, "session_start"))?;
        }
        Ok(())
    }

    /// Each hook sees the message as rewritten by the hooks before it.
    pub(crate) async fn user_message(
        &self,
        ctx: &mut HookContext<'_>,
        mut message: String,
    ) -> Result<String> {
        for h in &self.0 {
            if let Some(rewritten) = h
                .user_message(ctx, &message)
                .await
                .map_err(hook_error(&**h, "user_message"))?
            {
                message = rewritten;
            }
        }
        Ok(message)
    }

    pub(crate) async fn before_model(
        &self,
        ctx: &mut HookContext<'_>,
        request: &mut ModelRequest,
    ) -> Result<()> {
        for h in &self.0 {
            h.before_model(ctx, request)
                .await
                .map_err(hook_error(&**h, "before_model"))?;
        }
        Ok(())
    }

    pub(crate) async fn after_model(&self, ctx: &mut HookContext<'_>, response: &Message) -> Result<()> {
        for h in &self.0 {
            h.after_model(ctx, response)
                .await
                .map_err(hook_error(&**h, "after_model"))?;
        }
        Ok(())
    }

    /// The first hook that answers wins; later hooks are not asked.
    pub(crate) async fn before_tool(
        &self,
        ctx: &mut HookContext<'_>,
        call: &ToolCall,
    ) -> Result<Option<String>> {
        for h in &self.0 {
            if let Some(answer) = h
                .before_tool(ctx, call)
                .await
                .map_err(hook_error(&**h, "before_tool"))?
            {
                return Ok(Some(answer));
            }
        }
        Ok(None)
    }

    pub(crate) async fn after_tool(
        &self,
        ctx: &mut HookContext<'_>,
        call: &ToolCall,
        output: &str,
    ) -> Result<()> {
        for h in &self.0 {
            h.after_tool(ctx, call, output)
                .await
                .map_err(hook_error(&**h, "after_tool"))?;
        }
        Ok(())
    }

    /// Every hook's session end runs, whatever an earlier one did: the first failure is
    /// returned, later ones are logged as warnings.
    pub(crate) async fn session_end(
        &self,
        ctx: &mut HookContext<'_>,
        summary: &SessionSummary,
    ) -> Result<()> {
        let mut first = Ok(());
        for h in &self.0 {
            if let Err(e) = h
                .session_end(ctx, summary)
                .await
                .map_err(hook_error(&**h, "session_end"))
            {
                if first.is_ok() {
                    first = Err(e);
                } else {
                    tracing::warn!(error = %e, "a session-end hook failed");
                }
            }
        }
        first
    }

    pub(crate) async fn compaction(&self, ctx: &mut HookContext<'_>, removed: &[Message]) -> Result<()> {
        for h in &self.0 {
            h.compaction(ctx, removed)
                .await
                .map_err(hook_error(&**h, "compaction"))?;
        }
        Ok(())
    }
}
