//! Every read of the store as data ([`Read`]), answered in one snapshot of a backend
//! ([`Reads`], which each backend implements on its read transaction with its SQL). The store's
//! read methods are written once, in [`crate::backend`], over these.

use crate::error::Result;
use crate::transfer::ExportRecord;
use crate::types::*;
use crate::write::{Done, Keyed};

/// One read, waiting for its snapshot.
pub(crate) enum Read {
    Get(String),
    List(String, ListOptions),
    Count(String),
    History(String, String),
    ProjectHistory(String, usize),
    HistoryEntry(String, i64),
    Episodes(String, usize),
    Keyed(Keyed, String),
    Export(Option<String>),
    Stats(String),
    MissingVectors(String, String, usize),
    Session(String),
    Sessions,
}

/// What a backend's read transaction answers, with its SQL.
#[allow(async_fn_in_trait)]
pub(crate) trait Reads {
    /// A memory by id.
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>>;
    /// Memories of a project, filtered and paged; superseded ones only when asked for.
    async fn list(&self, project: &str, options: &ListOptions) -> Result<Vec<MemoryEntry>>;
    /// How many current (not superseded) memories a project has.
    async fn count(&self, project: &str) -> Result<usize>;
    /// Every change to one memory of `project`, oldest first (nothing of another project).
    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>>;
    /// The latest changes in a project, newest first.
    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>>;
    /// One history entry of `project`; `None` when it does not exist or is another project's.
    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>>;
    /// The latest episodic records of a project, newest first.
    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>>;
    /// Every value of a project kept by key, by key; none in a database older than the table
    /// (a read-only store does not migrate).
    async fn keyed(&self, of: Keyed, project: &str) -> Result<Vec<(String, String)>>;
    /// Every memory (oldest first), episodic record and history entry (oldest first) of a
    /// project, or of all projects.
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>>;
    /// Counts for a project.
    async fn stats(&self, project: &str) -> Result<MemoryStats>;
    /// Up to `limit` rows (`num`, content) of a project, in row order, without a sound vector of
    /// `model` (absent, of another model, or damaged).
    async fn missing_vectors(&self, project: &str, model: &str, limit: usize) -> Result<Vec<(i64, String)>>;
    /// The stored form of the saved thread `id`.
    async fn session(&self, id: &str) -> Result<Option<String>>;
    /// Every saved thread, the most recently saved first.
    async fn sessions(&self) -> Result<Vec<ctxkit::SessionInfo>>;
}

impl Read {
    /// Answer the read in a backend's snapshot.
    pub(crate) async fn run(&self, r: &impl Reads) -> Result<Done> {
        Ok(match self {
            Read::Get(id) => Done::Maybe(r.get(id).await?),
            Read::List(p, options) => Done::Entries(r.list(p, options).await?),
            Read::Count(p) => Done::Count(r.count(p).await?),
            Read::History(p, id) => Done::History(r.history(p, id).await?),
            Read::ProjectHistory(p, limit) => Done::History(r.project_history(p, *limit).await?),
            Read::HistoryEntry(p, id) => Done::Change(r.history_entry(p, *id).await?.map(Box::new)),
            Read::Episodes(p, limit) => Done::Episodes(r.episodes(p, *limit).await?),
            Read::Keyed(of, p) => Done::Values(r.keyed(*of, p).await?),
            Read::Export(p) => Done::Records(r.export(p.as_deref()).await?),
            Read::Stats(p) => Done::Stats(r.stats(p).await?),
            Read::MissingVectors(p, model, limit) => {
                Done::Missing(r.missing_vectors(p, model, *limit).await?)
            }
            Read::Session(id) => Done::Saved(r.session(id).await?),
            Read::Sessions => Done::Sessions(r.sessions().await?),
        })
    }
}
