//! Sessions kept between processes: a [`SessionStore`] saves a [`Thread`] after each run and
//! gives it back by id, so a host resumes a conversation where it stopped.

use async_trait::async_trait;
use serde::Serialize;

use super::thread::Thread;
use crate::error::Result;

/// A saved session, as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// The thread's id ([`Thread::id`]).
    pub id: String,
    /// Runs the session has had.
    pub turns: usize,
    /// Messages in its history.
    pub messages: usize,
    /// When it was last saved, in seconds since the Unix epoch.
    pub updated: u64,
}

/// Where sessions are kept. An agent built with
/// [`AgentBuilder::sessions`](crate::agent::AgentBuilder::sessions) saves its thread after
/// every run and [`Agent::session`](crate::agent::Agent::session) resumes one by id.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The session saved under `id`, if any.
    async fn load(&self, id: &str) -> Result<Option<Thread>>;
    /// Save `thread` under its id, replacing what was saved before.
    async fn save(&self, thread: &Thread) -> Result<()>;
    /// Every saved session, the most recently saved first.
    async fn list(&self) -> Result<Vec<SessionInfo>>;
    /// Forget the session saved under `id`; whether there was one.
    async fn delete(&self, id: &str) -> Result<bool>;
}
