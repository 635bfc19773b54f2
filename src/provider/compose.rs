//! A `Vec` of providers is a provider: concurrent calls, per-provider timeouts, merge in
//! registration order, fail-open unless a provider asks to fail closed.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::join_all;
use futures::FutureExt;
use tokio::time::Instant;
use tracing::Instrument;

use super::{ContextProvider, Policy, RunInfo, RunOutcome, ThreadInfo};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::report::{Outcome, ProviderReport};

/// Run one provider call under its policy and the run's deadline, containing panics.
async fn guarded<T>(
    name: &str,
    policy: Policy,
    deadline: Option<Instant>,
    call: impl Future<Output = Result<T>>,
) -> (Result<T>, Duration) {
    let start = Instant::now();
    let limit = match (policy.timeout, deadline) {
        (Some(t), Some(d)) => Some(t.min(d.saturating_duration_since(start))),
        (t, d) => t.or(d.map(|d| d.saturating_duration_since(start))),
    };
    let call = AssertUnwindSafe(call).catch_unwind();
    let result = match limit {
        Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
            Ok(Err(Error::Timeout {
                provider: name.to_string(),
                after: limit,
            }))
        }),
        None => call.await,
    };
    let result = result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Error::Panic {
            provider: name.to_string(),
            message,
        })
    });
    (result, start.elapsed())
}

fn outcome_of<T>(result: &Result<T>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(Error::Timeout { .. }) => Outcome::TimedOut,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Fail-closed: the error. Fail-open: log it and go on.
fn settle<T>(name: &str, policy: Policy, stage: &str, result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if policy.fail_closed => Err(e),
        Err(e) => {
            tracing::warn!(provider = name, stage, error = %e, "context provider skipped (fail-open)");
            Ok(None)
        }
    }
}

/// Run a side-effect hook (`thread_created`, `invoked`, `run_finished`) on every provider
/// concurrently.
async fn run_all<'a, P, F, Fut>(
    providers: &'a [P],
    stage: &'static str,
    timeout: impl Fn(&Policy) -> Option<Duration>,
    call: F,
) -> Result<()>
where
    P: ContextProvider,
    F: Fn(&'a P) -> Fut,
    Fut: Future<Output = Result<()>> + 'a,
{
    let calls = providers.iter().map(|p| {
        let span = tracing::debug_span!("provider", provider = p.name(), stage);
        let policy = Policy {
            timeout: timeout(&p.policy()),
            ..p.policy()
        };
        guarded(p.name(), policy, None, call(p)).instrument(span)
    });
    for (p, (result, _)) in providers.iter().zip(join_all(calls).await) {
        settle(p.name(), p.policy(), stage, result)?;
    }
    Ok(())
}

#[async_trait]
impl<P: ContextProvider> ContextProvider for Vec<P> {
    fn name(&self) -> &str {
        "providers"
    }

    /// Children handle their own timeouts and failures; an error from the list means a
    /// fail-closed child failed, so it propagates.
    fn policy(&self) -> Policy {
        Policy {
            timeout: None,
            fail_closed: true,
        }
    }

    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        run_all(
            self,
            "thread_created",
            |p| p.timeout,
            |p| p.thread_created(thread),
        )
        .await
    }

    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        let calls = self.iter().map(|p| {
            let span = tracing::info_span!(
                "provider",
                provider = p.name(),
                stage = "invoking",
                elapsed_us = tracing::field::Empty,
                outcome = tracing::field::Empty,
                items = tracing::field::Empty,
            );
            let call = guarded(p.name(), p.policy(), run.deadline, p.invoking(messages, run));
            async move {
                let (result, elapsed) = call.await;
                let span = tracing::Span::current();
                // Recording costs allocations; skip it when nobody listens (the hot path).
                if span.is_disabled() {
                    return (result, elapsed);
                }
                span.record("elapsed_us", elapsed.as_micros() as u64);
                span.record("outcome", tracing::field::display(outcome_of(&result)));
                if let Ok(ctx) = &result {
                    let items: Vec<&str> = ctx
                        .sections
                        .iter()
                        .flat_map(|s| s.items.iter().map(String::as_str))
                        .collect();
                    span.record("items", tracing::field::debug(&items));
                }
                (result, elapsed)
            }
            .instrument(span)
        });
        let results = join_all(calls).await;

        let mut merged = Context::new();
        let mut tool_owner: HashMap<String, String> = HashMap::new();
        for (p, (result, elapsed)) in self.iter().zip(results) {
            let outcome = outcome_of(&result);
            let Some(mut ctx) = settle(p.name(), p.policy(), "invoking", result)? else {
                merged.reports.push(ProviderReport {
                    name: p.name().to_string(),
                    elapsed,
                    outcome,
                });
                continue;
            };
            for tool in &ctx.tools {
                if let Some(first) = tool_owner.insert(tool.name().to_string(), p.name().to_string()) {
                    return Err(Error::DuplicateTool {
                        tool: tool.name().to_string(),
                        first,
                        second: p.name().to_string(),
                    });
                }
            }
            for section in ctx.sections.iter_mut().filter(|s| s.source.is_empty()) {
                section.source = p.name().to_string();
            }
            // A nested list reports on its own children; report leaves only.
            if ctx.reports.is_empty() {
                ctx.reports.push(ProviderReport {
                    name: p.name().to_string(),
                    elapsed,
                    outcome,
                });
            }
            merged.append(&mut ctx);
        }
        Ok(merged)
    }

    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        // The context deadline is usually past after a model call: each provider's own
        // timeout applies.
        run_all(
            self,
            "invoked",
            |p| p.timeout,
            |p| p.invoked(request, response, run),
        )
        .await
    }

    /// The context deadline is long past when a run ends; each provider's own timeout applies,
    /// but never less than 30 s, so a run's writes are not cut off by a timeout sized for
    /// reading context.
    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        run_all(self, "run_finished", Policy::finish_timeout, |p| {
            p.run_finished(run, outcome)
        })
        .await
    }
}
