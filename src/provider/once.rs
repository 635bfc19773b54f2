//! Send each item once per conversation: a layer for a host that keeps what was injected in
//! its transcript (an agent host's hook), so a skill or a memory the conversation already holds
//! is not sent again with every prompt.
//!
//! The layer acts while the provider chooses, not after it renders: [`SentOnce`] hands the
//! provider what the conversation was sent ([`RunInfo::sent`]), the provider leaves those items
//! out before it fills its budget, and the layer records the items the provider then sent, by
//! the versions its sections declare ([`Section::versions`]). An item whose version changed
//! (an edited skill) is sent again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{ContextProvider, Policy, RunInfo, RunOutcome, ThreadInfo};
use crate::context::{Context, SectionKind};
use crate::error::{Error, Result};
use crate::message::Message;

/// The most items of one kind a conversation's record keeps; past it that kind starts over
/// (sending again is harmless, an unbounded record is not).
const MAX_ITEMS: usize = 1024;
/// The most conversations a [`SentRecord`] keeps; past it, it starts over.
const MAX_THREADS: usize = 256;

/// What one conversation was sent: for each kind of section, each item with its version.
/// Serializable, so a host whose process ends with each event keeps it in a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sent(BTreeMap<SectionKind, BTreeMap<String, String>>);

impl Sent {
    /// Whether this version of `item` was sent in a section of `kind`.
    pub fn contains(&self, kind: &SectionKind, item: &str, version: &str) -> bool {
        self.0
            .get(kind)
            .and_then(|items| items.get(item))
            .is_some_and(|v| v == version)
    }

    /// Record every versioned item of `context`'s sections as sent.
    pub fn record(&mut self, context: &Context) {
        for section in context.sections.iter().filter(|s| !s.versions.is_empty()) {
            let items = self.0.entry(section.kind.clone()).or_default();
            for (item, version) in section.items.iter().zip(&section.versions) {
                if items.len() >= MAX_ITEMS && !items.contains_key(item) {
                    items.clear();
                }
                items.insert(item.clone(), version.clone());
            }
        }
    }

    /// Whether nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What each conversation was sent, by thread id: one record shared by every provider that
/// wears [`SentOnce`] with it (clones share it). Forget a thread when its model's context is
/// emptied (a compaction), restore one a host saved when its conversation resumes.
#[derive(Clone, Debug, Default)]
pub struct SentRecord(Arc<Mutex<HashMap<String, Sent>>>);

impl SentRecord {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    fn threads(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sent>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `thread_id` was sent (empty when nothing or unknown).
    pub fn get(&self, thread_id: &str) -> Sent {
        self.threads().get(thread_id).cloned().unwrap_or_default()
    }

    /// Set what `thread_id` was sent, e.g. as a host saved it.
    pub fn restore(&self, thread_id: &str, sent: Sent) {
        let mut threads = self.threads();
        if threads.len() >= MAX_THREADS && !threads.contains_key(thread_id) {
            threads.clear();
        }
        threads.insert(thread_id.to_string(), sent);
    }

    /// Forget what `thread_id` was sent: its model no longer sees it.
    pub fn forget(&self, thread_id: &str) {
        self.threads().remove(thread_id);
    }

    fn add(&self, thread_id: &str, context: &Context) {
        let mut sent = self.get(thread_id);
        sent.record(context);
        self.restore(thread_id, sent);
    }
}

/// A provider that sends each of its items once per conversation ([`ProviderExt::sent_once`](super::ProviderExt::sent_once)).
/// It works with a provider that honours [`RunInfo::sent`] and versions its items (the skills
/// and memory providers do); for another, it records nothing and changes nothing.
pub struct SentOnce<P> {
    inner: P,
    record: SentRecord,
}

impl<P> SentOnce<P> {
    /// `inner`, sending each item once per conversation of `record`.
    pub fn new(inner: P, record: SentRecord) -> Self {
        SentOnce { inner, record }
    }
}

#[async_trait]
impl<P: ContextProvider> ContextProvider for SentOnce<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn policy(&self) -> Policy {
        self.inner.policy()
    }

    /// A new conversation was sent nothing.
    async fn thread_created(&self, thread: &ThreadInfo) -> Result<()> {
        self.record.forget(&thread.thread_id);
        self.inner.thread_created(thread).await
    }

    /// The inner provider's context, chosen knowing what the conversation holds; what it sends
    /// is recorded unless the run is a preview.
    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        let run_here = RunInfo {
            sent: Some(Arc::new(self.record.get(&run.thread_id))),
            ..run.clone()
        };
        let context = self.inner.invoking(messages, &run_here).await?;
        if !run.preview {
            self.record.add(&run.thread_id, &context);
        }
        Ok(context)
    }

    async fn invoked(
        &self,
        request: &[Message],
        response: std::result::Result<&[Message], &Error>,
        run: &RunInfo,
    ) -> Result<()> {
        self.inner.invoked(request, response, run).await
    }

    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> Result<()> {
        self.inner.run_finished(run, outcome).await
    }
}
