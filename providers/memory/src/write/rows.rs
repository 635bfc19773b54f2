//! The seam every write is made of: [`Rows`], a backend's open write transaction seen as
//! rows, and the row-level changes (insert, replace, remove, each with its history entry)
//! the writes of the sibling modules compose.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::decide;
use crate::error::Result;
use crate::learned::{apply, from_record, to_record, LearnedChange, LearnedSkill};
use crate::postings::Filter;
use crate::retrieval::Vocabulary;
use crate::rules::episode_record;
use crate::search::{self, Snapshot};
use crate::sessions::SavedSession;

use crate::types::{
    EpisodicRecord, HistoryAction, HistoryEntry, MemoryCategory, MemoryEntry, NewEpisodicRecord,
};

/// A stored memory and the backend's number for its row.
pub(crate) type Row = (i64, MemoryEntry);

/// Which memories of a project a write reads, in the order they were stored.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Which<'a> {
    /// Every memory.
    All,
    /// Those whose importance is below this.
    ImportanceBelow(f32),
    /// Those superseded by this memory.
    SupersededBy(&'a str),
}

/// A search for the current memories most similar to some terms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Similar<'a> {
    /// The terms compared with each memory's content ([`crate::text::terms`]).
    pub(crate) terms: &'a [String],
    /// At most this many, most similar first.
    pub(crate) limit: usize,
    /// None less similar than this (TF-IDF cosine), and none at 0.
    pub(crate) floor: f32,
    /// Only of this category, when given.
    pub(crate) category: Option<MemoryCategory>,
}

impl Similar<'_> {
    /// Whether it can find nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty() || self.limit == 0
    }

    /// The search over a backend's snapshot: the candidates from its postings (at most
    /// `limit`), ranked.
    pub(crate) async fn search(
        &self,
        s: &impl Snapshot,
        project: &str,
        limit: usize,
    ) -> Result<Vec<(f32, Row)>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let only = self.category.map(|c| [c]);
        let filter = Filter {
            project,
            min_importance: 0.0,
            categories: only.as_ref().map(|c| c.as_slice()),
        };
        let (vocab, found) = search::candidates(s, &filter, self.terms, limit).await?;
        let qv = vocab.vector(self.terms);
        let mut scored: Vec<(f32, Row)> = found
            .into_iter()
            .filter(|c| self.category.is_none_or(|cat| c.entry.category == cat))
            .map(|c| (qv.cosine(&vocab.vector(c.terms.content())), (c.num, c.entry)))
            .filter(|(sim, _)| *sim > 0.0 && *sim >= self.floor)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1 .1.id.cmp(&b.1 .1.id)));
        scored.truncate(self.limit);
        Ok(scored)
    }
}

/// What a project keeps by key besides its memories: two tables of text values by project and
/// key, each value stamped with when it was written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keyed {
    /// `project:` state values (JSON), by key.
    State,
    /// Learned skills' stored forms ([`crate::learned::to_record`]), by name.
    Learned,
}

impl Keyed {
    /// Its table, key column and value column.
    pub(crate) fn columns(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Keyed::State => ("project_state", "key", "value"),
            Keyed::Learned => ("skill_library", "name", "record"),
        }
    }
}

/// Where a value kept by key lives: its table, its project and its key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key<'a> {
    pub(crate) of: Keyed,
    pub(crate) project: &'a str,
    pub(crate) key: &'a str,
}

/// One change to a memory, as its history entry keeps it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Change<'a> {
    pub(crate) action: HistoryAction,
    /// `None` for an insert.
    pub(crate) before: Option<&'a MemoryEntry>,
    /// `None` for a removal.
    pub(crate) after: Option<&'a MemoryEntry>,
    /// The other memory of a merge or supersession.
    pub(crate) related_id: Option<&'a str>,
    pub(crate) reason: &'a str,
    pub(crate) at: i64,
}

impl Change<'_> {
    /// The memory the change is about.
    pub(crate) fn memory(&self) -> &MemoryEntry {
        self.after
            .or(self.before)
            .expect("a change has a memory before or after it")
    }
}

/// What a backend's write transaction offers the writes: row-level reads and writes, and its
/// own search. Row writes keep the backend's indexes in step; history is written only through
/// [`record`](Rows::record).
///
/// A backend that can wait (PostgreSQL) awaits in these; one that blocks (SQLite) answers at
/// once, and drives the writes with a poll that never waits.
#[allow(async_fn_in_trait)]
pub(crate) trait Rows {
    /// The memory with this id, in any project.
    async fn load(&mut self, id: &str) -> Result<Option<Row>>;
    /// The id of the memory of `project` with exactly this content.
    async fn find_by_content(&mut self, project: &str, content: &str) -> Result<Option<String>>;
    /// Which of these `(project, content)` pairs are stored.
    async fn stored_contents(&mut self, pairs: &[(String, String)]) -> Result<BTreeSet<(String, String)>> {
        let mut found = BTreeSet::new();
        for (project, content) in pairs {
            if self.find_by_content(project, content).await?.is_some() {
                found.insert((project.clone(), content.clone()));
            }
        }
        Ok(found)
    }
    /// Memories of a project, oldest row first.
    async fn select(&mut self, project: &str, which: Which<'_>) -> Result<Vec<Row>>;
    /// The current memories of `project` most similar to `query.terms`, with their cosine:
    /// the backend's own search.
    async fn similar(&mut self, project: &str, query: Similar<'_>) -> Result<Vec<(f32, Row)>>;
    /// Document frequencies of a project, for at least the `needed` terms.
    async fn vocabulary(&mut self, project: &str, needed: &BTreeSet<String>) -> Result<Arc<Vocabulary>>;
    /// Whether a memory may take `id`: no memory has it, and no history entry has it except
    /// (when `project` is given) history of that same project. A memory id names one memory
    /// of one project for the life of the database.
    async fn id_is_free(&mut self, id: &str, project: Option<&str>) -> Result<bool>;
    /// A fresh memory id ([`id_is_free`](Self::id_is_free)).
    async fn new_memory_id(&mut self) -> Result<String> {
        loop {
            let id = crate::ids::new_id();
            if self.id_is_free(&id, None).await? {
                return Ok(id);
            }
        }
    }
    /// A fresh episodic record id.
    async fn new_episode_id(&mut self) -> Result<String> {
        loop {
            let id = crate::ids::new_id();
            if self.episode_project(&id).await?.is_none() {
                return Ok(id);
            }
        }
    }
    /// The project of the episodic record with this id.
    async fn episode_project(&mut self, id: &str) -> Result<Option<String>>;
    /// The history entry with this id.
    async fn history_entry(&mut self, id: i64) -> Result<Option<HistoryEntry>>;

    /// Store a new memory.
    async fn insert(&mut self, entry: &MemoryEntry) -> Result<()>;
    /// Write `new` over row `num`, which holds `old`.
    async fn store(&mut self, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()>;
    /// Delete row `num`, which holds `old`.
    async fn delete(&mut self, num: i64, old: &MemoryEntry) -> Result<()>;
    /// Delete every memory of a project.
    async fn delete_project(&mut self, project: &str) -> Result<()>;
    /// Append a history entry.
    async fn record(&mut self, change: Change<'_>) -> Result<()>;
    /// Store an imported history entry under its own id when that id is free, else under a
    /// new one.
    async fn insert_history(&mut self, entry: &HistoryEntry) -> Result<()>;
    /// Store an episodic record.
    async fn insert_episode(&mut self, record: &EpisodicRecord) -> Result<()>;

    /// One value kept by key.
    async fn keyed(&mut self, at: Key<'_>) -> Result<Option<String>>;
    /// Store a value kept by key at `now`, or (`None`) delete it; whether a row changed.
    async fn set_keyed(&mut self, at: Key<'_>, value: Option<&str>, now: i64) -> Result<bool>;
    /// Store the terms of up to `limit` memories of a project written without them; how many.
    async fn fill_terms(&mut self, project: &str, limit: usize) -> Result<usize>;
    /// Give row `num` of `project` the vector of `content` computed before the transaction, if
    /// the row still holds that content.
    async fn set_vector(&mut self, project: &str, num: i64, content: &str) -> Result<()>;
    /// Save a thread's stored form under its id at `now`, or (`None`) delete it; whether a row
    /// changed.
    async fn set_session(&mut self, id: &str, saved: Option<&SavedSession>, now: i64) -> Result<bool>;
}

/// Insert `change.after` and record it.
pub(super) async fn insert(rows: &mut impl Rows, change: Change<'_>) -> Result<()> {
    rows.insert(change.memory()).await?;
    rows.record(change).await
}

/// Write `change.after` over row `num` (which holds `change.before`) and record it.
pub(super) async fn replace(rows: &mut impl Rows, num: i64, change: Change<'_>) -> Result<()> {
    if let (Some(old), Some(new)) = (change.before, change.after) {
        rows.store(num, old, new).await?;
    }
    rows.record(change).await
}

/// Delete row `num` (which holds `change.before`) and record it. The memories it had
/// superseded become current again: with the newer statement gone, the older one is the best
/// the project knows.
pub(super) async fn remove(rows: &mut impl Rows, num: i64, change: Change<'_>) -> Result<()> {
    let old = change.memory();
    rows.delete(num, old).await?;
    rows.record(change).await?;
    let at = change.at;
    for (pnum, before) in rows
        .select(&old.project_path, Which::SupersededBy(&old.id))
        .await?
    {
        let after = decide::current_again(&before, at);
        let again = Change {
            action: HistoryAction::Supersede,
            before: Some(&before),
            after: Some(&after),
            related_id: Some(&old.id),
            reason: decide::CURRENT_AGAIN_REASON,
            at,
        };
        replace(rows, pnum, again).await?;
    }
    Ok(())
}

/// A plain removal of `old` for `reason`.
pub(super) fn deletion<'a>(old: &'a MemoryEntry, reason: &'a str, at: i64) -> Change<'a> {
    Change {
        action: HistoryAction::Delete,
        before: Some(old),
        after: None,
        related_id: None,
        reason,
        at,
    }
}

/// Store an episodic record (checked by the caller, for `project`) under a fresh id.
pub(super) async fn add_episode(
    rows: &mut impl Rows,
    new: NewEpisodicRecord,
    project: String,
    now: i64,
) -> Result<EpisodicRecord> {
    let record = episode_record(new, project, rows.new_episode_id().await?, now);
    rows.insert_episode(&record).await?;
    Ok(record)
}

/// Apply `change` to one learned skill of `project` by the one rule of learned skills
/// ([`apply`]), storing or deleting what it returns.
pub(super) async fn change_learned(
    rows: &mut impl Rows,
    project: &str,
    name: &str,
    change: LearnedChange,
    now: i64,
) -> Result<Option<LearnedSkill>> {
    let at = Key {
        of: Keyed::Learned,
        project,
        key: name,
    };
    let current = rows.keyed(at).await?;
    let after = apply(
        project,
        name,
        current.as_deref().map(from_record).transpose()?,
        change,
        now,
    )?;
    let record = after.as_ref().map(to_record).transpose()?;
    rows.set_keyed(at, record.as_deref(), now).await?;
    Ok(after)
}
