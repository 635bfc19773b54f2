//! [`OpenOptions`]: how a store is opened, the same builder for both backends, and
//! [`SearchIndex`], how the SQLite store finds its search candidates.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, ManualClock, SystemClock};

/// How to open a store ([`SqliteMemoryStore`](crate::sqlite::SqliteMemoryStore), or `PostgresStore` with
/// the `postgres` feature): built from the defaults with one method per setting, so new
/// settings never break callers.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    clock: Arc<dyn Clock>,
    busy_timeout: Duration,
    candidate_limit: usize,
    vector_candidate_limit: usize,
    search_index: SearchIndex,
    read_only: bool,
    cache_pages: Option<usize>,
    blocking_pool: bool,
    checkpoint_on_open: bool,
    /// The sentence-embedding model, when one is configured.
    pub(crate) semantic: Option<crate::vectors::Semantic>,
    /// Removed memories' slots an in-memory index keeps beyond its live ones before it is
    /// rebuilt rather than caught up (crate-private: a test lowers it to reach it).
    pub(crate) worn_slack: usize,
}

/// How searches find their candidates.
///
/// The on-disk index answers any search straight from disk: impact-ordered postings, of which
/// it reads a fixed number per query term, so its cost does not grow with the project, and
/// whose best [`OpenOptions::candidate_limit`] memories it ranks exactly (at 100,000 memories
/// they hold 98 % of the exhaustive ranking's top ten). The in-memory index of a project (an inverted index with each memory's
/// TF-IDF norm, a few dozen bytes per memory) ranks exactly over every memory sharing a term and
/// reads only the rows it returns, but has to be built first (reading every memory of the
/// project once) and again after any change to the project's memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchIndex {
    /// Search the on-disk index until an in-memory index, built on a background thread
    /// after the first search (and after changes), is ready. For long-running processes.
    #[default]
    Background,
    /// Build the in-memory index during the first search (and the first after a change).
    Eager,
    /// Always search the on-disk index. For one-shot processes such as a CLI command.
    Off,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            clock: Arc::new(SystemClock),
            busy_timeout: Duration::from_secs(5),
            candidate_limit: 200,
            vector_candidate_limit: crate::sketches::PICKED,
            search_index: SearchIndex::default(),
            read_only: false,
            cache_pages: None,
            blocking_pool: true,
            checkpoint_on_open: false,
            semantic: None,
            worn_slack: 1024,
        }
    }
}

impl OpenOptions {
    /// Now, by this options' clock.
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The most candidates the on-disk index hands to ranking.
    pub(crate) fn max_candidates(&self) -> usize {
        self.candidate_limit
    }

    /// The most memories the first pass over the vectors' sketches hands to the exact cosine.
    pub(crate) fn max_vector_candidates(&self) -> usize {
        self.vector_candidate_limit
    }

    /// How long a write waits for another writer.
    pub(crate) fn writer_wait(&self) -> Duration {
        self.busy_timeout
    }

    /// How searches find their candidates.
    pub(crate) fn index_mode(&self) -> SearchIndex {
        self.search_index
    }

    /// The sentence-embedding model and its blend, when one is configured.
    pub(crate) fn semantic(&self) -> Option<&crate::vectors::Semantic> {
        self.semantic.as_ref()
    }

    /// Whether writes are refused.
    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether SQLite calls run on tokio's blocking pool rather than the caller's thread.
    pub(crate) fn on_blocking_pool(&self) -> bool {
        self.blocking_pool
    }

    /// Whether the SQLite log is copied back when the store opens rather than when it closes.
    pub(crate) fn checkpoints_on_open(&self) -> bool {
        self.checkpoint_on_open
    }

    /// The pages a SQLite connection keeps in memory, when not SQLite's default.
    pub(crate) fn page_cache(&self) -> Option<usize> {
        self.cache_pages
    }

    /// Take "now" from this clock instead of the system's, to simulate days passing (decay,
    /// recency) in tests.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How long a write waits for another writer before failing (default 5 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How many candidates the on-disk index hands to ranking (default 200, at least 1): more
    /// agree better with the exhaustive ranking in big projects, fewer search faster.
    pub fn candidate_limit(mut self, limit: usize) -> Self {
        self.candidate_limit = limit.max(1);
        self
    }

    /// With a model ([`embeddings`](Self::embeddings)), how many memories a search compares
    /// with the query by their exact vectors (default 300, at least 1). A first pass scores
    /// every memory's compact sketch of its vector (two bits per dimension) and hands on this
    /// many best, beside the lexical candidates: more agree better with comparing every vector
    /// (`usize::MAX` does that), fewer search faster. At 100,000 memories the default keeps the
    /// exact ten nearest 99.9 % of the time.
    pub fn vector_candidate_limit(mut self, limit: usize) -> Self {
        self.vector_candidate_limit = limit.max(1);
        self
    }

    /// Whether searches use an in-memory index of the project (default:
    /// [`SearchIndex::Background`]).
    pub fn search_index(mut self, mode: SearchIndex) -> Self {
        self.search_index = mode;
        self
    }

    /// Give every memory a sentence vector from this model (computed when it is written,
    /// stored in its row with the model's identity) and rank searches by meaning as well as
    /// words: the nearest memories by vector join the lexical candidates, and each result's
    /// score blends its lexical score with its cosine. A memory written without the model, or
    /// by another one, has no vector until `reindex`; it is still found by its words.
    pub fn embeddings(mut self, model: Arc<ctxkit_embed::Embedder>) -> Self {
        self.semantic = Some(crate::vectors::Semantic::new(model));
        self
    }

    /// How many database pages each SQLite connection keeps in memory (default: SQLite's
    /// own, 2 MiB worth; from 10 to `i32::MAX`, SQLite's range). A process that reads each
    /// page about once, such as a command or a hook, is faster with a few dozen: a page read
    /// then reuses a buffer instead of allocating a new one. Measured at 100,000 memories: a hook's whole process
    /// 18.6 → 15.6 ms with 32 pages, an import of 30,000 memories 4.0 → 3.0 s. A
    /// long-running process that writes again and again keeps its hot pages with the
    /// default (an add at 100,000 memories takes 0.85 ms with it, 1.03 ms with 32 pages). A
    /// write's changed pages are kept up to 2 MiB either way. PostgreSQL ignores it.
    pub fn cache_pages(mut self, pages: usize) -> Self {
        self.cache_pages = Some(pages.clamp(10, i32::MAX as usize));
        self
    }

    /// Whether each SQLite call runs on tokio's blocking pool (default `true`), so the async
    /// runtime never waits on disk, or on the thread that awaits it (`false`). The latter
    /// suits a runtime with nothing else to do meanwhile, such as a command's own: it saves
    /// starting a pool thread and handing every call to it (measured at 100,000 memories: a
    /// hook's whole process 15.0 → 14.2 ms). Never on a runtime other tasks share: a call
    /// holds the thread for as long as it reads, and waits up to the busy timeout for
    /// another writer. PostgreSQL ignores it.
    pub fn blocking_pool(mut self, on_pool: bool) -> Self {
        self.blocking_pool = on_pool;
        self
    }

    /// Copy SQLite's write-ahead log back into the database file on a thread of its own as
    /// the store opens, and not when its last connection closes (default `false`: as it
    /// closes). For a process that opens the store for one short task and ends, such as a
    /// hook per prompt: a write then leaves its pages in the log for the next process, and
    /// closing waits for no `fsync` (measured at 100,000 memories: the hook's whole process
    /// 17.3 → 15.5 ms). What stays in the log survives a crash of the process, as any commit
    /// does; a power loss may lose it until the next open (or SQLite's own checkpoint, at
    /// 1,000 pages) has copied it, as it may lose the last transactions of any process (the
    /// store runs with `synchronous=NORMAL`). PostgreSQL ignores it.
    pub fn checkpoint_on_open(mut self, on_open: bool) -> Self {
        self.checkpoint_on_open = on_open;
        self
    }

    /// Open for reading only: reads work, writes fail with [`MemoryError::ReadOnly`](crate::error::MemoryError::ReadOnly), searches
    /// do not count accesses, nothing is created or migrated (default: only when the database
    /// cannot be written).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }
}
