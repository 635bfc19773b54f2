//! [`Backend`]: the seam between the one memory store and a database.
//!
//! What is the same for every database is written here once, in the [`MemoryStore`] every
//! backend gets: the input checks and the secret check (once per write, when its [`Op`] is
//! made), the redaction of what a write or the history hands back, [`Maintenance`], the rule of
//! learned skills and the check of `project:` state. A backend only runs an [`Op`] over its
//! [`Rows`](crate::write::Rows) in one transaction and answers the reads with its SQL, each in
//! a span naming the call (`memory.sqlite`, `memory.pg`). A third backend writes SQL, not
//! logic.

use async_trait::async_trait;

use crate::decide::{ReadRedactor, Redact};
use crate::error::{MemoryError, Result};
use crate::learned::{from_record, LearnedChange, LearnedSkill};
use crate::options::OpenOptions;
use crate::reads::Read;
use crate::retrieval::finds_nothing;
use crate::rules::{bumped, check_project, state_value};
use crate::search::Query;
use crate::store::{LearnedSkillStore, Maintenance, MemoryStore, RunStore};
use crate::text::terms;
use crate::transfer::{ExportRecord, ImportReport};
use crate::types::*;
use crate::vectors::no_model;
use crate::write::{Done, Keyed, Op};

/// What a database does for the memory store: run checked writes, answer reads.
#[async_trait]
pub(crate) trait Backend: Send + Sync {
    /// Whether writes are refused (then maintenance does nothing).
    fn is_read_only(&self) -> bool;
    /// Redacts secrets in what is read back, reporting each memory once.
    fn redactor(&self) -> &ReadRedactor;
    /// The options it was opened with.
    fn options(&self) -> &OpenOptions;
    /// Run a checked write in one transaction (vectors first, the projects' locks held).
    async fn write(&self, call: &'static str, op: Op) -> Result<Done>;

    /// Answer a read in one snapshot.
    async fn read(&self, call: &'static str, read: Read) -> Result<Done>;
    /// The current memories relevant to a query, best first ([`crate::search`]).
    async fn rank(&self, query: Query) -> Result<Vec<MemorySearchResult>>;
    /// Count an access to these memories (at least one), saturating.
    async fn touch(&self, ids: &[String]) -> Result<()>;
}

/// `ctxkit::SessionStore` over a backend's session rows, redacted (see the crate's threat
/// model). The trait is the core's, so it cannot be implemented for every backend at once:
/// each backend names itself here.
macro_rules! session_store {
    ($store:ty) => {
        /// Sessions in the memory database, redacted (see the crate's threat model).
        #[async_trait::async_trait]
        impl ctxkit::SessionStore for $store {
            async fn load(&self, id: &str) -> ctxkit::Result<Option<ctxkit::Thread>> {
                let read = $crate::reads::Read::Session(id.to_owned());
                let saved = $crate::backend::answer(self, "session.load", read).await;
                saved
                    .and_then(|saved| $crate::sessions::thread_from(id, saved))
                    .map_err(ctxkit::Error::other)
            }

            async fn save(&self, thread: &ctxkit::Thread) -> ctxkit::Result<()> {
                let saved = $crate::sessions::save_form(thread).map_err(ctxkit::Error::other)?;
                let op = $crate::write::Op::set_session(thread.id(), Some(saved));
                let saved = $crate::backend::write::<_, bool>(self, "session.save", op).await;
                saved.map(drop).map_err(ctxkit::Error::other)
            }

            async fn list(&self) -> ctxkit::Result<Vec<ctxkit::SessionInfo>> {
                let read = $crate::reads::Read::Sessions;
                $crate::backend::answer(self, "session.list", read)
                    .await
                    .map_err(ctxkit::Error::other)
            }

            async fn delete(&self, id: &str) -> ctxkit::Result<bool> {
                let op = $crate::write::Op::set_session(id, None);
                $crate::backend::write(self, "session.delete", op)
                    .await
                    .map_err(ctxkit::Error::other)
            }
        }
    };
}
pub(crate) use session_store;

/// Answer `read`, in the caller's type.
pub(crate) async fn answer<B: Backend + ?Sized, T: TryFrom<Done, Error = MemoryError>>(
    backend: &B,
    call: &'static str,
    read: Read,
) -> Result<T> {
    backend.read(call, read).await?.try_into()
}

/// Run `op` (the check's answer) and turn its answer into the caller's type.
pub(crate) async fn write<B: Backend + ?Sized, T: TryFrom<Done, Error = MemoryError>>(
    backend: &B,
    call: &'static str,
    op: Result<Op>,
) -> Result<T> {
    backend.write(call, op?).await?.try_into()
}

#[async_trait]
impl<B: Backend> Maintenance for B {
    fn is_read_only(&self) -> bool {
        Backend::is_read_only(self)
    }
    async fn clear(&self, project: &str) -> Result<usize> {
        write(self, "clear", Op::clear(project)).await
    }
    async fn decay(&self, project: &str) -> Result<usize> {
        write(self, "decay", Op::decay(project)).await
    }
    async fn prune(&self, project: &str, min_importance: f32) -> Result<usize> {
        write(self, "prune", Op::prune(project, min_importance)).await
    }
    async fn compact(&self, project: &str) -> Result<usize> {
        write(self, "compact", Op::compact(project)).await
    }
    async fn embed_missing(&self, project: &str, limit: usize) -> Result<usize> {
        let project = check_project(project)?;
        let semantic = self.options().semantic().ok_or_else(no_model)?;
        let read = Read::MissingVectors(project.clone(), semantic.model_id().to_owned(), limit);
        let missing: Vec<(i64, String)> = answer(self, "missing_vectors", read).await?;
        if missing.is_empty() {
            return Ok(0);
        }
        write(self, "embed_missing", Ok(Op::set_vectors(project, missing))).await
    }
    async fn fill_terms(&self, project: &str, limit: usize) -> Result<usize> {
        write(self, "fill_terms", Op::fill_terms(project, limit)).await
    }
    async fn stats(&self, project: &str) -> Result<MemoryStats> {
        answer(self, "stats", Read::Stats(project.to_owned())).await
    }
}

#[async_trait]
impl<B: Backend> RunStore for B {
    async fn add_episode(&self, record: NewEpisodicRecord) -> Result<EpisodicRecord> {
        write(self, "add_episode", Op::add_episode(record)).await
    }
    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        answer(self, "episodes", Read::Episodes(project.to_owned(), limit)).await
    }
    async fn set_state(&self, project: &str, key: &str, value: serde_json::Value) -> Result<()> {
        write::<_, bool>(self, "set_state", Op::set_state(project, key, &value))
            .await
            .map(drop)
    }
    async fn remove_state(&self, project: &str, key: &str) -> Result<bool> {
        write(self, "remove_state", Op::remove_state(project, key)).await
    }
    async fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
        let values: Vec<(String, String)> = answer(
            self,
            "state_entries",
            Read::Keyed(Keyed::State, project.to_owned()),
        )
        .await?;
        Ok(values.into_iter().map(|(k, v)| (k, state_value(v))).collect())
    }
}

#[async_trait]
impl<B: Backend> LearnedSkillStore for B {
    async fn learned_skills(&self, project: &str) -> Result<Vec<LearnedSkill>> {
        let records: Vec<(String, String)> = answer(
            self,
            "learned_skills",
            Read::Keyed(Keyed::Learned, project.to_owned()),
        )
        .await?;
        records.iter().map(|(_, r)| from_record(r)).collect()
    }
    async fn change_learned_skill(
        &self,
        project: &str,
        name: &str,
        change: LearnedChange,
    ) -> Result<Option<LearnedSkill>> {
        let op = Op::change_learned(project, name, change);
        write(self, "change_learned_skill", op).await
    }
}

#[async_trait]
impl<B: Backend> MemoryStore for B {
    async fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        write(self, "add_many", Op::add_many(entries)).await
    }
    async fn upsert(&self, entry: NewMemoryEntry) -> Result<UpsertResult> {
        write(self, "upsert", Op::upsert(entry)).await
    }
    async fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        let updated = write(self, "update", Op::update(id, update)).await;
        updated.map(|e| self.redactor().redacted(e))
    }
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        let entry = answer::<_, Option<MemoryEntry>>(self, "get", Read::Get(id.to_owned())).await;
        entry.map(|e| self.redactor().redacted(e))
    }
    async fn list(&self, project: &str, options: ListOptions) -> Result<Vec<MemoryEntry>> {
        let entries =
            answer::<_, Vec<MemoryEntry>>(self, "list", Read::List(project.to_owned(), options)).await;
        entries.map(|e| self.redactor().redacted(e))
    }
    async fn search(&self, request: MemorySearchRequest) -> Result<Vec<MemorySearchResult>> {
        let project = check_project(&request.project_path)?;
        let terms = terms(&request.query);
        let semantic = self.options().semantic();
        if finds_nothing(&request, &terms, semantic.is_some()) {
            return Ok(Vec::new());
        }
        let vector = semantic.map(|s| s.start_query(&request.query)).transpose()?;
        let query = Query {
            project,
            terms,
            min_importance: request.min_importance,
            categories: request.categories,
            top_k: request.top_k,
            vector,
            now: self.options().now_ms(),
        };
        let mut results = self.rank(query).await?;
        for r in &mut results {
            self.redactor().redact(&mut r.entry);
        }
        // A read-only database answers searches without counting them.
        if request.touch && !results.is_empty() && !Backend::is_read_only(self) {
            let ids: Vec<String> = results.iter().map(|r| r.entry.id.clone()).collect();
            Backend::touch(self, &ids).await?;
            let now = self.options().now_ms();
            for r in &mut results {
                r.entry.access_count = bumped(r.entry.access_count);
                r.entry.last_accessed_at = now;
            }
        }
        Ok(results)
    }
    async fn touch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        Backend::touch(self, ids).await
    }
    async fn delete(&self, id: &str) -> Result<MemoryEntry> {
        let deleted = write(self, "delete", Op::delete(id)).await;
        deleted.map(|e| self.redactor().redacted(e))
    }
    async fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let forgotten = write(self, "forget", Op::forget(project, query)).await;
        forgotten.map(|e| self.redactor().redacted(e))
    }
    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
        let read = Read::History(project.to_owned(), memory_id.to_owned());
        let history = answer::<_, Vec<HistoryEntry>>(self, "history", read).await;
        history.map(|h| self.redactor().redacted(h))
    }
    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
        let read = Read::ProjectHistory(project.to_owned(), limit);
        let history = answer::<_, Vec<HistoryEntry>>(self, "project_history", read).await;
        history.map(|h| self.redactor().redacted(h))
    }
    async fn undo(&self, project: &str, history_id: i64) -> Result<Option<MemoryEntry>> {
        let undone = write(self, "undo", Op::undo(project, history_id)).await;
        undone.map(|e| self.redactor().redacted(e))
    }
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        let read = Read::Export(project.map(str::to_owned));
        let records = answer::<_, Vec<ExportRecord>>(self, "export", read).await;
        records.map(|r| self.redactor().redacted(r))
    }
    async fn import(&self, records: Vec<ExportRecord>, project: Option<&str>) -> Result<ImportReport> {
        write(self, "import", Op::import(records, project)).await
    }

    /// Decay then prune; nothing on a store that cannot be written.
    async fn maintain(&self, project: &str, prune_below: f32) -> Result<MaintenanceReport> {
        if Backend::is_read_only(self) {
            return Ok(MaintenanceReport::default());
        }
        let decayed = Maintenance::decay(self, project).await?;
        let pruned = Maintenance::prune(self, project, prune_below).await?;
        Ok(MaintenanceReport { decayed, pruned })
    }

    // A single add compares with its neighbours (what it supersedes) and words its errors
    // for one memory; the others are one query each instead of a whole list or history.
    async fn add(&self, entry: NewMemoryEntry) -> Result<MemoryEntry> {
        write(self, "add", Op::add(entry)).await
    }
    async fn count(&self, project: &str) -> Result<usize> {
        answer(self, "count", Read::Count(project.to_owned())).await
    }
    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        let read = Read::HistoryEntry(project.to_owned(), history_id);
        let entry = answer::<_, Option<Box<HistoryEntry>>>(self, "history_entry", read).await;
        entry.map(|h| self.redactor().redacted(h.map(|h| *h)))
    }
}

impl Redact for ExportRecord {
    fn redact_with(&mut self, redactor: &ReadRedactor) {
        match self {
            ExportRecord::Memory(e) => e.redact_with(redactor),
            ExportRecord::History(h) => h.redact_with(redactor),
            ExportRecord::Episode(_) => {}
        }
    }
}
