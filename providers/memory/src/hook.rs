//! [`MemoryHook`]: the lifecycle side of memory, off the request path.
//!
//! - `session_start` loads the project's persisted `project:` state into the thread's state
//!   (keys the thread already has are left alone);
//! - `session_end` extracts memories from the conversation (the thread's `project:` state is
//!   persisted by [`MemoryContextProvider`](crate::provider::MemoryContextProvider) at the end of every
//!   run, so it survives a session that never ends cleanly);
//! - `compaction` extracts memories from the messages that were compacted away;
//! - `session_end` then keeps the project tidy (seed 004 §3.2): decay, then prune below
//!   [`MemoryHook::DEFAULT_PRUNE_BELOW`] ([`MemoryHook::with_maintenance`] sets it,
//!   [`MemoryHook::without_maintenance`] turns it off, e.g. for read-only use). A failed
//!   maintenance is logged and never fails the session's end.
//!
//! By default extraction runs inside the hook, so a failure comes back from
//! `Agent::end_session` / `Agent::compact` as a hook error (and is logged). With
//! [`MemoryHook::in_background`] it runs on a spawned task instead; failures are logged and
//! handed back by [`MemoryHook::finish`].

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxkit::{BoxError, Hook, HookContext, Message, SessionSummary};
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::extraction::{ExtractionInput, ExtractionReport, MemoryExtractor};
use crate::store::MemoryStore;

/// Loads `project:` state at session start, runs extraction at session end and compaction,
/// and decays and prunes at session end.
pub struct MemoryHook {
    store: Arc<dyn MemoryStore>,
    extractor: Option<Arc<MemoryExtractor>>,
    project: Option<String>,
    background: bool,
    /// Prune threshold of session-end maintenance; `None`: no maintenance.
    maintenance: Option<f32>,
    pending: Mutex<Vec<JoinHandle<Result<ExtractionReport>>>>,
}

impl std::fmt::Debug for MemoryHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryHook")
            .field("project", &self.project)
            .field("extracts", &self.extractor.is_some())
            .field("background", &self.background)
            .field("maintenance", &self.maintenance)
            .finish_non_exhaustive()
    }
}

impl MemoryHook {
    /// Memories whose importance decayed below this are deleted at session end (an importance
    /// of 0.5 gets there after about 45 weeks without use).
    pub const DEFAULT_PRUNE_BELOW: f32 = 0.05;

    /// A hook that loads `project:` state and maintains the project at session end.
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        MemoryHook {
            store,
            extractor: None,
            project: None,
            background: false,
            maintenance: Some(Self::DEFAULT_PRUNE_BELOW),
            pending: Mutex::default(),
        }
    }

    /// At session end, decay and then delete memories below `prune_below` (default
    /// [`MemoryHook::DEFAULT_PRUNE_BELOW`]).
    pub fn with_maintenance(mut self, prune_below: f32) -> Self {
        self.maintenance = Some(prune_below);
        self
    }

    /// No decay or prune at session end.
    pub fn without_maintenance(mut self) -> Self {
        self.maintenance = None;
        self
    }

    /// Also extract memories with this extractor at session end and compaction.
    pub fn with_extractor(mut self, extractor: MemoryExtractor) -> Self {
        self.extractor = Some(Arc::new(extractor));
        self
    }

    /// The project used when the agent does not name one.
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Run extraction on spawned tasks; collect their outcomes with [`finish`](Self::finish).
    pub fn in_background(mut self) -> Self {
        self.background = true;
        self
    }

    /// Wait for background extractions and return their outcomes, oldest first.
    pub async fn finish(&self) -> Vec<Result<ExtractionReport>> {
        let handles: Vec<_> = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            out.push(match h.await {
                Ok(r) => r,
                Err(e) => Err(crate::error::MemoryError::Task(e.to_string())),
            });
        }
        out
    }

    fn project_of(&self, ctx: &HookContext<'_>) -> Option<String> {
        ctx.project.map(str::to_string).or_else(|| self.project.clone())
    }

    async fn extract(
        &self,
        project: String,
        input: ExtractionInput,
        point: &'static str,
    ) -> std::result::Result<(), BoxError> {
        let Some(extractor) = self.extractor.clone() else {
            return Ok(());
        };
        if self.background {
            let handle = tokio::spawn(async move {
                let outcome = extractor.extract_and_store(&project, &input).await;
                // Nobody waits for this answer: a warning says what was not learned.
                if let Err(e) = &outcome {
                    tracing::warn!(project, point, error = %e, "memory extraction failed");
                }
                outcome
            });
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(handle);
            return Ok(());
        }
        // The caller reports a failure (the agent's session end, as a warning).
        extractor
            .extract_and_store(&project, &input)
            .await
            .map(|_| ())
            .map_err(|e| Box::new(e) as BoxError)
    }
}

#[async_trait]
impl Hook for MemoryHook {
    fn name(&self) -> &str {
        "memory"
    }

    async fn session_start(&self, ctx: &mut HookContext<'_>) -> std::result::Result<(), BoxError> {
        let Some(project) = self.project_of(ctx) else {
            return Ok(());
        };
        for (key, value) in self.store.state_entries(&project).await? {
            let key = format!("{}{key}", ctxkit::State::PROJECT);
            if ctx.state.get(&key).is_none() {
                ctx.state.set(key, value);
            }
        }
        Ok(())
    }

    async fn session_end(
        &self,
        ctx: &mut HookContext<'_>,
        summary: &SessionSummary,
    ) -> std::result::Result<(), BoxError> {
        let Some(project) = self.project_of(ctx) else {
            return Ok(());
        };
        if summary.messages.iter().all(|m| m.role == ctxkit::Role::System) {
            return Ok(());
        }
        let input = ExtractionInput::from_session(summary, ctx.state);
        let extracted = self.extract(project.clone(), input, "session_end").await;
        if let Some(prune_below) = self.maintenance {
            match self.store.maintain(&project, prune_below).await {
                Ok(r) => tracing::info!(
                    project,
                    decayed = r.decayed,
                    pruned = r.pruned,
                    "memory maintenance"
                ),
                Err(e) => tracing::warn!(project, error = %e, "memory maintenance failed"),
            }
        }
        extracted
    }

    async fn compaction(
        &self,
        ctx: &mut HookContext<'_>,
        removed: &[Message],
    ) -> std::result::Result<(), BoxError> {
        let Some(project) = self.project_of(ctx) else {
            return Ok(());
        };
        if removed.is_empty() {
            return Ok(());
        }
        let mut input = ExtractionInput::from_messages(removed);
        input.session_id = Some(ctx.thread_id.to_string()).filter(|s| !s.is_empty());
        self.extract(project, input, "compaction").await
    }
}
