//! [`Op`]: one write as data — checked when it is made, run by a backend in one transaction.
//!
//! Every write of both backends begins the same way: check the input (secrets first, once),
//! compute the vectors of what it will store before the transaction, take the locks of the
//! projects it touches, then run the shared write over [`Rows`]. The checks and the choice of
//! write live here, so a backend only says how it runs an [`Op`] in a transaction.

use super::rows::{add_episode, change_learned, Key, Keyed, Rows};
use super::{import, maintenance, memories, undo};
use crate::error::{MemoryError, Result};
use crate::learned::{LearnedChange, LearnedSkill};
use crate::rules::{
    check_batch, check_episode, check_importance, check_new, check_project, check_state, check_update,
    Checked, CheckedUpdate,
};
use crate::sessions::SavedSession;
use crate::transfer::{ExportRecord, ImportPlan, ImportReport};
use crate::types::*;

/// A checked write, waiting for its transaction.
pub(crate) enum Op {
    Add(Checked, Vec<String>),
    AddMany(Vec<(Checked, Vec<String>)>),
    Upsert(Checked, Vec<String>),
    Update(String, CheckedUpdate),
    Delete(String),
    Forget(String, String),
    Undo(String, i64),
    Clear(String),
    Decay(String),
    Prune(String, f32),
    Compact(String),
    Import(ImportPlan),
    AddEpisode(NewEpisodicRecord, String),
    ChangeLearned(String, String, LearnedChange),
    SetState(String, String, Option<String>),
    FillTerms(String, usize),
    SetVectors(String, Vec<(i64, String)>),
    SetSession(String, Option<SavedSession>),
}

/// Whose locks a write takes: the projects it names, or the project of the memory it changes
/// (which a backend that locks by project reads first; a memory never changes project).
#[cfg(feature = "postgres")]
pub(crate) enum Locks<'a> {
    Projects(Vec<&'a str>),
    OfMemory(&'a str),
    /// A saved thread's, by its id.
    Session(&'a str),
}

impl Op {
    /// Add a memory, marking the older memories it contradicts as superseded.
    pub(crate) fn add(new: NewMemoryEntry) -> Result<Self> {
        Ok(Op::Add(check_new(&new)?, new.supersedes))
    }
    /// Add several memories: all or none.
    pub(crate) fn add_many(entries: Vec<NewMemoryEntry>) -> Result<Self> {
        Ok(Op::AddMany(check_batch(entries)?))
    }
    /// Insert, merge into a memory more than 0.85 similar, or skip an identical one.
    pub(crate) fn upsert(new: NewMemoryEntry) -> Result<Self> {
        Ok(Op::Upsert(check_new(&new)?, new.supersedes))
    }
    /// Change fields of a memory.
    pub(crate) fn update(id: &str, update: MemoryUpdate) -> Result<Self> {
        Ok(Op::Update(id.to_owned(), check_update(update)?))
    }
    /// Delete a memory.
    pub(crate) fn delete(id: &str) -> Result<Self> {
        Ok(Op::Delete(id.to_owned()))
    }
    /// Delete the memories of a project that best match `query`.
    pub(crate) fn forget(project: &str, query: &str) -> Result<Self> {
        Ok(Op::Forget(check_project(project)?, query.to_owned()))
    }
    /// Put a memory of `project` back as it was before a history entry.
    pub(crate) fn undo(project: &str, history_id: i64) -> Result<Self> {
        Ok(Op::Undo(project.to_owned(), history_id))
    }
    /// Delete every memory of a project.
    pub(crate) fn clear(project: &str) -> Result<Self> {
        Ok(Op::Clear(check_project(project)?))
    }
    /// Lower the importance of memories not accessed lately.
    pub(crate) fn decay(project: &str) -> Result<Self> {
        Ok(Op::Decay(check_project(project)?))
    }
    /// Delete the memories of a project below an importance (which must lie in 0.0-1.0).
    pub(crate) fn prune(project: &str, min_importance: f32) -> Result<Self> {
        Ok(Op::Prune(
            check_project(project)?,
            check_importance(min_importance)?,
        ))
    }
    /// Merge memories of a project more than 0.90 similar.
    pub(crate) fn compact(project: &str) -> Result<Self> {
        Ok(Op::Compact(check_project(project)?))
    }
    /// Import records, optionally moving them into one project.
    pub(crate) fn import(records: Vec<ExportRecord>, project: Option<&str>) -> Result<Self> {
        Ok(Op::Import(ImportPlan::new(records, project)?))
    }
    /// Record what happened in a run.
    pub(crate) fn add_episode(new: NewEpisodicRecord) -> Result<Self> {
        let project = check_episode(&new)?;
        Ok(Op::AddEpisode(new, project))
    }
    /// Change one learned skill of a project by the rule of [`crate::learned::apply`].
    pub(crate) fn change_learned(project: &str, name: &str, change: LearnedChange) -> Result<Self> {
        Ok(Op::ChangeLearned(project.to_owned(), name.to_owned(), change))
    }
    /// Persist a `project:` state value, checked like any write.
    pub(crate) fn set_state(project: &str, key: &str, value: &serde_json::Value) -> Result<Self> {
        let (project, json) = check_state(project, key, value)?;
        Ok(Op::SetState(project, key.to_owned(), Some(json)))
    }
    /// Remove a persisted `project:` state value.
    pub(crate) fn remove_state(project: &str, key: &str) -> Result<Self> {
        Ok(Op::SetState(project.to_owned(), key.to_owned(), None))
    }
    /// Store the terms of up to `limit` memories of a project written without them.
    pub(crate) fn fill_terms(project: &str, limit: usize) -> Result<Self> {
        Ok(Op::FillTerms(check_project(project)?, limit))
    }
    /// Give rows of a project (`num`, content) the vectors of their contents, computed before
    /// the transaction like any write's.
    pub(crate) fn set_vectors(project: String, missing: Vec<(i64, String)>) -> Self {
        Op::SetVectors(project, missing)
    }
    /// Save a thread's stored form (redacted, [`crate::sessions::save_form`]) under its id, or
    /// (`None`) delete it.
    pub(crate) fn set_session(id: &str, saved: Option<SavedSession>) -> Result<Self> {
        Ok(Op::SetSession(id.to_owned(), saved))
    }

    /// What the write will store, to embed before its transaction.
    pub(crate) fn contents(&self) -> Vec<&str> {
        match self {
            Op::Add(c, _) | Op::Upsert(c, _) => vec![c.content.as_str()],
            Op::AddMany(batch) => batch.iter().map(|(c, _)| c.content.as_str()).collect(),
            Op::Update(_, u) => u.content().into_iter().collect(),
            Op::Import(plan) => plan.memories.iter().map(|m| m.content.as_str()).collect(),
            Op::SetVectors(_, missing) => missing.iter().map(|(_, c)| c.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    /// Whose locks the write takes.
    #[cfg(feature = "postgres")]
    pub(crate) fn locks(&self) -> Locks<'_> {
        match self {
            Op::Add(c, _) | Op::Upsert(c, _) => Locks::Projects(vec![c.project_path.as_str()]),
            Op::AddMany(batch) => {
                Locks::Projects(batch.iter().map(|(c, _)| c.project_path.as_str()).collect())
            }
            Op::Update(id, _) | Op::Delete(id) => Locks::OfMemory(id),
            Op::SetSession(id, _) => Locks::Session(id),
            Op::Forget(p, _)
            | Op::Undo(p, _)
            | Op::Clear(p)
            | Op::Decay(p)
            | Op::Prune(p, _)
            | Op::Compact(p)
            | Op::AddEpisode(_, p)
            | Op::ChangeLearned(p, ..)
            | Op::SetState(p, ..)
            | Op::FillTerms(p, _)
            | Op::SetVectors(p, _) => Locks::Projects(vec![p.as_str()]),
            Op::Import(plan) => Locks::Projects(
                plan.memories
                    .iter()
                    .map(|m| m.project_path.as_str())
                    .chain(plan.episodes.iter().map(|e| e.project_path.as_str()))
                    .chain(plan.history.iter().map(|h| h.project_path.as_str()))
                    .collect(),
            ),
        }
    }

    /// Run the shared write over a backend's open transaction. It may run more than once (a
    /// backend retries a transaction that lost a race), so it reads the op without using it up.
    pub(crate) async fn run(&self, rows: &mut impl Rows, now: i64) -> Result<Done> {
        Ok(match self {
            Op::Add(c, named) => Done::Entry(memories::add(rows, c.clone(), named, now).await?),
            Op::AddMany(batch) => Done::Entries(memories::add_many(rows, batch.clone(), now).await?),
            Op::Upsert(c, named) => Done::Upserted(memories::upsert(rows, c.clone(), named, now).await?),
            Op::Update(id, u) => Done::Entry(memories::update(rows, id, u.clone(), now).await?),
            Op::Delete(id) => Done::Entry(memories::delete(rows, id, now).await?),
            Op::Forget(p, query) => Done::Entries(memories::forget(rows, p, query, now).await?),
            Op::Undo(p, history_id) => Done::Maybe(undo::undo(rows, p, *history_id, now).await?),
            Op::Clear(p) => Done::Count(maintenance::clear(rows, p, now).await?),
            Op::Decay(p) => Done::Count(maintenance::decay(rows, p, now).await?),
            Op::Prune(p, below) => Done::Count(maintenance::prune(rows, p, *below, now).await?),
            Op::Compact(p) => Done::Count(maintenance::compact(rows, p, now).await?),
            Op::Import(plan) => Done::Imported(import::import(rows, plan, now).await?),
            Op::AddEpisode(new, p) => Done::Episode(add_episode(rows, new.clone(), p.clone(), now).await?),
            Op::ChangeLearned(p, name, change) => {
                Done::Learned(change_learned(rows, p, name, change.clone(), now).await?)
            }
            Op::SetState(p, key, json) => {
                let at = Key {
                    of: Keyed::State,
                    project: p,
                    key,
                };
                Done::Flag(rows.set_keyed(at, json.as_deref(), now).await?)
            }
            Op::FillTerms(p, limit) => Done::Count(rows.fill_terms(p, *limit).await?),
            Op::SetVectors(p, missing) => {
                for (num, content) in missing {
                    rows.set_vector(p, *num, content).await?;
                }
                Done::Count(missing.len())
            }
            Op::SetSession(id, saved) => Done::Flag(rows.set_session(id, saved.as_ref(), now).await?),
        })
    }
}

/// What an [`Op`] or a [`Read`](crate::reads::Read) returns, one variant per answer type, and
/// `TryFrom<Done>` for each: each always answers with its own kind, so the error only guards
/// the match.
macro_rules! answers {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// What an [`Op`] or a read returns; turned back into the caller's type with `try_into`.
        pub(crate) enum Done {
            $($variant($ty)),*
        }
        $(
            impl TryFrom<Done> for $ty {
                type Error = MemoryError;
                fn try_from(done: Done) -> Result<$ty> {
                    match done {
                        Done::$variant(v) => Ok(v),
                        _ => Err(MemoryError::Invalid("the store answered with another kind".into())),
                    }
                }
            }
        )*
    };
}

answers!(
    Entry(MemoryEntry),
    Entries(Vec<MemoryEntry>),
    Upserted(UpsertResult),
    Maybe(Option<MemoryEntry>),
    Count(usize),
    Imported(ImportReport),
    Episode(EpisodicRecord),
    Learned(Option<LearnedSkill>),
    Flag(bool),
    History(Vec<HistoryEntry>),
    // Boxed: a history entry holds two memories, twice the size of any other answer.
    Change(Option<Box<HistoryEntry>>),
    Episodes(Vec<EpisodicRecord>),
    Values(Vec<(String, String)>),
    Records(Vec<ExportRecord>),
    Stats(MemoryStats),
    Missing(Vec<(i64, String)>),
    Saved(Option<String>),
    Sessions(Vec<ctxkit::SessionInfo>),
);
