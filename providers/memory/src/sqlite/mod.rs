//! [`MemoryDb`]: the blocking SQLite core of the store.
//!
//! One database file in WAL mode (readers never wait for the writer), `synchronous=NORMAL`
//! (a committed write survives a crash of the process; a power loss may lose the last
//! transactions but never corrupts the file), a busy timeout, and `BEGIN IMMEDIATE` for every
//! write so concurrent writers queue instead of failing half-way. Connections are pooled behind
//! a mutex; every call takes one for its duration, so a `MemoryDb` can be shared across threads
//! and several processes can use one file.
//!
//! Every method blocks; from async code use [`SqliteMemoryStore`](crate::SqliteMemoryStore),
//! which runs them on tokio's blocking pool.

mod history;
pub(crate) mod index;
mod maintenance;
mod memindex;
pub(crate) mod schema;
mod transfer;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};

use crate::clock::{days_between, Clock, SystemClock};
use crate::error::{MemoryError, Result};
use crate::retrieval::{compute_relevance_score, jaccard, Vocabulary};
use crate::text::{self, keyword_terms, terms};
use crate::types::*;
use crate::{secrets, HistoryAction};

pub use maintenance::decayed_importance;
pub use transfer::{ExportRecord, ImportReport};

/// Upsert merges into an existing memory above this cosine similarity (seed 004 §4.3.1).
pub const MERGE_SIMILARITY: f32 = 0.85;
/// Compaction merges memories above this cosine similarity.
pub const COMPACT_SIMILARITY: f32 = 0.90;
/// The longest memory content accepted, in characters (the whole injection budget is 2,000).
pub const MAX_CONTENT_CHARS: usize = 2000;
/// Longest `source_context` kept, in characters (longer ones are cut).
const MAX_SOURCE_CONTEXT_CHARS: usize = 500;
/// `forget` removes matches at least this similar to the query…
const FORGET_MIN_SIMILARITY: f32 = 0.3;
/// …and within this fraction of the best match, at most this many.
const FORGET_RELATIVE: f32 = 0.8;
const FORGET_MAX: usize = 5;
/// At most this many query terms go into the full-text query (the rarest ones).
const MAX_QUERY_TERMS: usize = 24;

const COLS: &str = "num, id, project_path, category, content, keywords, importance, access_count, \
                    source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at";

impl From<rusqlite::Error> for MemoryError {
    /// The path is filled in by [`MemoryDb`] before the error leaves it.
    fn from(source: rusqlite::Error) -> Self {
        MemoryError::Sqlite {
            path: PathBuf::new(),
            source,
        }
    }
}

/// How to open a [`MemoryDb`].
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Where "now" comes from (default: the system clock).
    pub clock: Arc<dyn Clock>,
    /// How long a write waits for another writer before failing (default 5 s).
    pub busy_timeout: Duration,
    /// How many candidates the full-text index hands to ranking (default 200).
    pub candidate_limit: usize,
    /// Connections kept open for reuse (default 4).
    pub pool_size: usize,
    /// Whether searches use an in-memory index of the project (default: built in the
    /// background after the first search).
    pub search_index: SearchIndex,
}

/// How searches find their candidates.
///
/// The full-text index answers any search straight from disk, best BM25 matches first (at most
/// [`OpenOptions::candidate_limit`]); its cost grows with the number of memories that share a
/// term with the query. The in-memory index of a project (an inverted index with each memory's
/// TF-IDF norm, a few dozen bytes per memory) ranks exactly over every memory sharing a term and
/// reads only the rows it returns, but has to be built first (reading every memory of the
/// project once) and again after any change to the project's memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchIndex {
    /// Search the full-text index until an in-memory index, built on a background thread
    /// after the first search (and after changes), is ready. For long-running processes.
    #[default]
    Background,
    /// Build the in-memory index during the first search (and the first after a change).
    Eager,
    /// Always search the full-text index. For one-shot processes such as a CLI command.
    Off,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            clock: Arc::new(SystemClock),
            busy_timeout: Duration::from_secs(5),
            candidate_limit: 200,
            pool_size: 4,
            search_index: SearchIndex::default(),
        }
    }
}

impl OpenOptions {
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    pub fn candidate_limit(mut self, limit: usize) -> Self {
        self.candidate_limit = limit.max(1);
        self
    }

    pub fn search_index(mut self, mode: SearchIndex) -> Self {
        self.search_index = mode;
        self
    }

    /// Open (creating and migrating when needed) the database at `path`.
    pub fn open(self, path: impl AsRef<Path>) -> Result<MemoryDb> {
        MemoryDb::open_with(path, self)
    }
}

struct Inner {
    path: PathBuf,
    options: OpenOptions,
    pool: Mutex<Vec<Connection>>,
    vocab: index::VocabularyCache,
    /// In-memory indexes by project.
    indexes: Mutex<HashMap<String, Arc<memindex::ProjectIndex>>>,
    /// Projects whose index is being built in the background.
    building: Mutex<HashSet<String>>,
}

/// At most this many projects keep an in-memory index.
const MAX_INDEXED_PROJECTS: usize = 8;

/// The blocking SQLite memory store; cheap to clone (clones share connections and caches).
///
/// ```
/// use ctxkit_memory::{MemoryCategory, MemoryDb, MemorySearchRequest, NewMemoryEntry};
/// let dir = tempfile::tempdir()?;
/// let db = MemoryDb::open(dir.path().join("memory.db"))?;
/// db.add(NewMemoryEntry::new("/repo", MemoryCategory::Preference, "Always use pnpm, not npm").importance(0.9))?;
/// let hits = db.search(&MemorySearchRequest::new("/repo", "which package manager, npm?"))?;
/// assert_eq!(hits[0].entry.content, "Always use pnpm, not npm");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MemoryDb {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryDb")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// A validated memory ready to store.
struct Checked {
    project_path: String,
    category: MemoryCategory,
    content: String,
    keywords: Vec<String>,
    importance: f32,
    source_session_id: Option<String>,
    source_context: Option<String>,
}

impl MemoryDb {
    /// Open with default [`OpenOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, OpenOptions::default())
    }

    /// Open with these options, creating the file and migrating the schema when needed.
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let db = MemoryDb {
            inner: Arc::new(Inner {
                path: path.clone(),
                options,
                pool: Mutex::new(Vec::new()),
                vocab: index::VocabularyCache::default(),
                indexes: Mutex::default(),
                building: Mutex::default(),
            }),
        };
        let mut conn = db.connect()?;
        let open_err = |source| MemoryError::Open {
            path: path.clone(),
            source,
        };
        match schema::migrate(&mut conn).map_err(open_err)? {
            schema::Migrated::Ok => {}
            schema::Migrated::TooNew(found) => {
                return Err(MemoryError::SchemaTooNew {
                    path,
                    found,
                    supported: schema::LATEST,
                })
            }
        }
        db.release(conn);
        Ok(db)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The clock the store uses.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.options.clock
    }

    fn now(&self) -> i64 {
        self.inner.options.clock.now_ms()
    }

    fn connect(&self) -> Result<Connection> {
        let path = &self.inner.path;
        let open_err = |source| MemoryError::Open {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(self.inner.options.busy_timeout)
            .map_err(open_err)?;
        // The first statement reads the header: a file that is not a database fails here.
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(open_err)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(open_err)?;
        Ok(conn)
    }

    fn release(&self, conn: Connection) {
        let mut pool = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < self.inner.options.pool_size {
            pool.push(conn);
        }
    }

    /// Fill in this database's path on errors raised without it.
    fn attach_path(&self, err: MemoryError) -> MemoryError {
        match err {
            MemoryError::Sqlite { path, source } if path.as_os_str().is_empty() => MemoryError::Sqlite {
                path: self.inner.path.clone(),
                source,
            },
            other => other,
        }
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let pooled = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.connect()?,
        };
        let out = f(&mut conn).map_err(|e| self.attach_path(e));
        self.release(conn);
        out
    }

    /// Run `f` in a `BEGIN IMMEDIATE` transaction and commit it when `f` succeeds.
    fn write<T>(&self, f: impl FnOnce(&Transaction, i64) -> Result<T>) -> Result<T> {
        self.with_conn(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx, self.now())?;
            tx.commit()?;
            Ok(out)
        })
    }

    /// Run `f` in a read transaction (one consistent snapshot).
    fn read<T>(&self, f: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
        self.with_conn(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            f(&tx)
        })
    }

    // ----- validation -------------------------------------------------------------------

    fn check_new(&self, new: &NewMemoryEntry) -> Result<Checked> {
        let project_path = check_project(&new.project_path)?;
        let content = check_content(&new.content)?;
        let importance = check_importance(new.importance)?;
        let keywords = if new.keywords.iter().all(|k| k.trim().is_empty()) {
            text::derive_keywords(&content)
        } else {
            text::normalize_keywords(&new.keywords)
        };
        let source_context = new
            .source_context
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| text::truncate_chars(s, MAX_SOURCE_CONTEXT_CHARS));
        let source_session_id = new.source_session_id.clone().filter(|s| !s.trim().is_empty());
        check_secrets(
            &content,
            &keywords,
            source_context.as_deref(),
            source_session_id.as_deref(),
        )?;
        Ok(Checked {
            project_path,
            category: new.category,
            content,
            keywords,
            importance,
            source_session_id,
            source_context,
        })
    }

    // ----- writes -----------------------------------------------------------------------

    /// Add a memory. An identical content in the same project is [`MemoryError::Duplicate`].
    pub fn add(&self, new: NewMemoryEntry) -> Result<MemoryEntry> {
        let checked = self.check_new(&new)?;
        self.write(|tx, now| insert_checked(tx, checked, now, "added"))
    }

    /// Add several memories in one transaction: all are stored or none.
    pub fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        let checked = entries
            .iter()
            .enumerate()
            .map(|(i, e)| self.check_new(e).map_err(|err| numbered(i, entries.len(), err)))
            .collect::<Result<Vec<_>>>()?;
        self.write(|tx, now| {
            let total = checked.len();
            checked
                .into_iter()
                .enumerate()
                .map(|(i, c)| insert_checked(tx, c, now, "added").map_err(|err| numbered(i, total, err)))
                .collect()
        })
    }

    /// Change fields of a memory. Changing the content keeps the keywords unless new ones are
    /// given; an empty keyword list derives them from the content.
    pub fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        let content = update.content.as_deref().map(check_content).transpose()?;
        let importance = update.importance.map(check_importance).transpose()?;
        let keywords = update.keywords.as_ref().map(|k| text::normalize_keywords(k));
        if let Some(c) = &content {
            secrets::check("memory", c)?;
        }
        if let Some(k) = &keywords {
            secrets::check("memory", &k.join(" "))?;
        }
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            let mut new = old.clone();
            if let Some(c) = content {
                new.content = c;
            }
            if let Some(c) = update.category {
                new.category = c;
            }
            if let Some(i) = importance {
                new.importance = i;
            }
            if let Some(k) = keywords {
                new.keywords = if k.is_empty() {
                    text::derive_keywords(&new.content)
                } else {
                    k
                };
            }
            if new == old {
                return Ok(old);
            }
            if new.content != old.content {
                if let Some(existing) = find_by_content(tx, &new.project_path, &new.content)? {
                    return Err(MemoryError::Duplicate {
                        project: new.project_path,
                        existing,
                    });
                }
            }
            new.updated_at = now;
            store_row(tx, num, &old, &new)?;
            history::record(
                tx,
                HistoryAction::Update,
                &new.id,
                &new.project_path,
                Some(&old),
                Some(&new),
                None,
                Some("updated"),
                now,
            )?;
            Ok(new)
        })
    }

    /// Insert, or merge into a memory more than 0.85 similar, or skip an identical one.
    ///
    /// A merge keeps the more informative content (the new one when it has at least as many
    /// distinct terms), the union of the keywords and the higher importance; the history keeps
    /// the memory as it was.
    pub fn upsert(&self, new: NewMemoryEntry) -> Result<UpsertResult> {
        let checked = self.check_new(&new)?;
        self.write(|tx, now| {
            if let Some(existing) = find_by_content(tx, &checked.project_path, &checked.content)? {
                return Ok(UpsertResult::Skipped {
                    reason: format!("an identical memory already exists (id `{existing}`)"),
                    existing_id: Some(existing),
                });
            }
            let vocab = self.inner.vocab.get(tx, &checked.project_path)?;
            let new_terms = terms(&checked.content);
            let new_vec = vocab.vector(&new_terms);
            let filter = Filter {
                project: &checked.project_path,
                min_importance: 0.0,
                categories: None,
            };
            let mut best: Option<(f32, i64, MemoryEntry)> = None;
            for (num, e) in self.candidates(tx, &filter, &new_terms, &vocab)? {
                let sim = new_vec.cosine(&vocab.vector(&terms(&e.content)));
                if best
                    .as_ref()
                    .is_none_or(|(s, _, b)| sim > *s || (sim == *s && e.id < b.id))
                {
                    best = Some((sim, num, e));
                }
            }
            match best {
                Some((sim, num, old)) if sim > MERGE_SIMILARITY => {
                    let merged = merge_into(&old, &checked, now);
                    if merged.content == old.content
                        && merged.keywords == old.keywords
                        && merged.importance == old.importance
                    {
                        return Ok(UpsertResult::Skipped {
                            reason: format!("memory `{}` already says as much (similarity {sim:.2})", old.id),
                            existing_id: Some(old.id),
                        });
                    }
                    store_row(tx, num, &old, &merged)?;
                    let reason = format!("merged a similar memory (similarity {sim:.2})");
                    history::record(
                        tx,
                        HistoryAction::Merge,
                        &merged.id,
                        &merged.project_path,
                        Some(&old),
                        Some(&merged),
                        None,
                        Some(&reason),
                        now,
                    )?;
                    Ok(UpsertResult::Merged {
                        original_id: old.id,
                        merged,
                        similarity: sim,
                    })
                }
                _ => Ok(UpsertResult::Inserted(insert_checked(tx, checked, now, "added")?)),
            }
        })
    }

    /// Delete a memory, returning it.
    pub fn delete(&self, id: &str) -> Result<MemoryEntry> {
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            delete_row(tx, num, &old, "deleted", now)?;
            Ok(old)
        })
    }

    /// Delete the memories of a project that best match `query` (those at least 0.3 similar and
    /// within 80 % of the best match, at most five), returning them.
    pub fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let project = check_project(project)?;
        let q_terms = terms(query);
        if q_terms.is_empty() {
            return Ok(Vec::new());
        }
        let reason = format!(
            "forgotten on request: {}",
            secrets::redact(&text::truncate_chars(query, 200))
        );
        self.write(|tx, now| {
            let vocab = self.inner.vocab.get(tx, &project)?;
            let filter = Filter {
                project: &project,
                min_importance: 0.0,
                categories: None,
            };
            let qv = vocab.vector(&q_terms);
            let mut scored: Vec<(f32, i64, MemoryEntry)> = self
                .candidates(tx, &filter, &q_terms, &vocab)?
                .into_iter()
                .map(|(num, e)| (qv.cosine(&vocab.vector(&terms(&e.content))), num, e))
                .filter(|(s, _, _)| *s >= FORGET_MIN_SIMILARITY)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.id.cmp(&b.2.id)));
            let best = scored.first().map_or(0.0, |s| s.0);
            let mut out = Vec::new();
            for (sim, num, e) in scored.into_iter().take(FORGET_MAX) {
                if sim < best * FORGET_RELATIVE {
                    break;
                }
                delete_row(tx, num, &e, &reason, now)?;
                out.push(e);
            }
            Ok(out)
        })
    }

    /// Delete every memory of a project, returning how many there were.
    pub fn clear(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1"),
                params![project],
            )?;
            for (_, e) in &rows {
                history::record(
                    tx,
                    HistoryAction::Delete,
                    &e.id,
                    &project,
                    Some(e),
                    None,
                    None,
                    Some("cleared"),
                    now,
                )?;
            }
            let nums: Vec<i64> = rows.iter().map(|(n, _)| *n).collect();
            index::clear_project(tx, &project, &nums)?;
            tx.prepare_cached("DELETE FROM project_memories WHERE project_path = ?1")?
                .execute(params![project])?;
            Ok(rows.len())
        })
    }

    /// Bump access counts and last-access times (what a search does to what it returns).
    pub fn touch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.write(|tx, now| {
            let mut stmt = tx.prepare_cached(
                "UPDATE project_memories SET access_count = access_count + 1, last_accessed_at = ?1 WHERE id = ?2",
            )?;
            for id in ids {
                stmt.execute(params![now, id])?;
            }
            Ok(())
        })
    }

    // ----- reads ------------------------------------------------------------------------

    /// A memory by id.
    pub fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        self.read(|tx| Ok(load(tx, id)?.map(|(_, e)| e)))
    }

    /// Memories of a project, filtered by category and paged.
    pub fn list(&self, project: &str, options: &ListOptions) -> Result<Vec<MemoryEntry>> {
        let order = match options.order {
            ListOrder::Newest => "created_at DESC, id",
            ListOrder::Importance => "importance DESC, created_at DESC, id",
        };
        let category = options.category.map(|c| c.as_str());
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE project_path = ?1 AND (?2 IS NULL OR category = ?2)
             ORDER BY {order} LIMIT ?3 OFFSET ?4"
        );
        let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(options.offset).unwrap_or(i64::MAX);
        self.read(|tx| {
            Ok(
                select_entries(tx, &sql, params![project, category, limit, offset])?
                    .into_iter()
                    .map(|(_, e)| e)
                    .collect(),
            )
        })
    }

    /// How many memories a project has.
    pub fn count(&self, project: &str) -> Result<usize> {
        self.read(|tx| {
            let n: i64 = tx
                .prepare_cached("SELECT COUNT(*) FROM project_memories WHERE project_path = ?1")?
                .query_row(params![project], |r| r.get(0))?;
            Ok(n as usize)
        })
    }

    /// Find the memories of a project relevant to a query, best first (seed 004 §4.3.2).
    ///
    /// Candidates come from the full-text index (the query's rarest terms, OR'ed, best BM25
    /// first, at most [`OpenOptions::candidate_limit`]); each is scored with
    /// [`compute_relevance_score`] and only those with a cosine or keyword overlap above zero
    /// are kept. Returned memories have their access counted unless the request says not to.
    pub fn search(&self, req: &MemorySearchRequest) -> Result<Vec<MemorySearchResult>> {
        let project = check_project(&req.project_path)?;
        let q_terms = terms(&req.query);
        if q_terms.is_empty() || req.top_k == 0 {
            return Ok(Vec::new());
        }
        let now = self.now();
        let mut results = self.read(|tx| {
            let version = index::project_version(tx, &project)?;
            let cached = lock(&self.inner.indexes)
                .get(&project)
                .filter(|ix| ix.version == version)
                .cloned();
            let ready = match (cached, self.inner.options.search_index) {
                (Some(ix), _) => Some(ix),
                (None, SearchIndex::Eager) => Some(self.install_index(tx, &project, version)?),
                (None, SearchIndex::Background) => {
                    self.build_index_in_background(&project);
                    None
                }
                (None, SearchIndex::Off) => None,
            };
            if let Some(ix) = ready {
                return ix.search(
                    tx,
                    &q_terms,
                    req.min_importance,
                    req.categories.as_deref(),
                    now,
                    req.top_k,
                );
            }
            let vocab = self.inner.vocab.get(tx, &project)?;
            let filter = Filter {
                project: &project,
                min_importance: req.min_importance,
                categories: req.categories.as_deref(),
            };
            let candidates = self.candidates(tx, &filter, &q_terms, &vocab)?;
            Ok(rank(&q_terms, &vocab, candidates, now, req.top_k))
        })?;
        if req.touch && !results.is_empty() {
            let ids: Vec<String> = results.iter().map(|r| r.entry.id.clone()).collect();
            self.touch(&ids)?;
            let now = self.now();
            for r in &mut results {
                r.entry.access_count += 1;
                r.entry.last_accessed_at = now;
            }
        }
        Ok(results)
    }

    /// Build the in-memory index of `project` as of `tx` and keep it.
    fn install_index(
        &self,
        tx: &Transaction,
        project: &str,
        version: index::Version,
    ) -> Result<Arc<memindex::ProjectIndex>> {
        let ix = Arc::new(memindex::ProjectIndex::build(tx, project, version)?);
        self.inner.vocab.put(project, version, Arc::new(ix.vocab.clone()));
        let mut indexes = lock(&self.inner.indexes);
        if indexes.len() >= MAX_INDEXED_PROJECTS && !indexes.contains_key(project) {
            indexes.clear();
        }
        indexes.insert(project.to_string(), ix.clone());
        tracing::debug!(
            project,
            docs = ix.version.1,
            bytes = ix.weight(),
            "memory search index built"
        );
        Ok(ix)
    }

    fn build_index_in_background(&self, project: &str) {
        if !lock(&self.inner.building).insert(project.to_string()) {
            return;
        }
        let db = self.clone();
        let owned = project.to_string();
        let spawned = std::thread::Builder::new()
            .name("ctxkit-memory-index".into())
            .spawn(move || {
                let built = db.read(|tx| {
                    let version = index::project_version(tx, &owned)?;
                    db.install_index(tx, &owned, version).map(|_| ())
                });
                if let Err(e) = built {
                    tracing::warn!(project = owned, error = %e, "building the memory search index failed");
                }
                lock(&db.inner.building).remove(&owned);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the memory index thread");
            lock(&self.inner.building).remove(project);
        }
    }

    /// Build the in-memory search index of a project now (whatever [`SearchIndex`] says), so
    /// the next search is fast.
    pub fn warm_up(&self, project: &str) -> Result<()> {
        self.read(|tx| {
            let version = index::project_version(tx, project)?;
            self.install_index(tx, project, version).map(|_| ())
        })
    }

    /// Candidate rows for `q_terms`: the full-text index, confined to the project and filters.
    fn candidates(
        &self,
        tx: &Transaction,
        filter: &Filter,
        q_terms: &[String],
        vocab: &Vocabulary,
    ) -> Result<Vec<(i64, MemoryEntry)>> {
        let mut distinct: Vec<&str> = q_terms
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if distinct.is_empty() {
            return Ok(Vec::new());
        }
        // The rarest terms say the most; common ones mostly cost time.
        distinct.sort_by_key(|t| (vocab.df(t), *t));
        distinct.truncate(MAX_QUERY_TERMS);
        let expr = format!(
            "project : {} AND terms : ({})",
            index::fts_quote(&index::project_token(filter.project)),
            distinct
                .iter()
                .map(|t| index::fts_quote(t))
                .collect::<Vec<_>>()
                .join(" OR ")
        );
        let categories = match filter.categories {
            Some([]) => return Ok(Vec::new()),
            Some(cats) => format!(
                " AND m.category IN ({})",
                cats.iter()
                    .map(|c| format!("'{}'", c.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        };
        let cols = COLS
            .split(", ")
            .map(|c| format!("m.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            // CROSS JOIN keeps the full-text index as the outer loop: SQLite must not run the
            // MATCH once per row of the project.
            "SELECT {cols} FROM memory_fts CROSS JOIN project_memories m ON m.num = memory_fts.rowid
             WHERE memory_fts MATCH ?1 AND m.project_path = ?2 AND m.importance >= ?3{categories}
             ORDER BY bm25(memory_fts, 0.0, 1.0) LIMIT ?4"
        );
        let limit = i64::try_from(self.inner.options.candidate_limit).unwrap_or(i64::MAX);
        select_entries(
            tx,
            &sql,
            params![expr, filter.project, f64::from(filter.min_importance), limit],
        )
    }

    /// Counts for a project.
    pub fn stats(&self, project: &str) -> Result<MemoryStats> {
        self.read(|tx| {
            let mut stats = MemoryStats {
                project_path: project.to_string(),
                by_category: MemoryCategory::ALL
                    .iter()
                    .map(|c| (c.as_str().to_string(), 0))
                    .collect(),
                ..Default::default()
            };
            let mut importance = 0.0f64;
            let mut stmt = tx.prepare_cached(
                "SELECT category, COUNT(*), SUM(importance), SUM(access_count), MIN(created_at), MAX(updated_at)
                 FROM project_memories WHERE project_path = ?1 GROUP BY category",
            )?;
            let rows = stmt.query_map(params![project], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, f64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?;
            for row in rows {
                let (category, n, imp, acc, oldest, newest) = row?;
                stats.by_category.insert(category, n as usize);
                stats.total += n as usize;
                importance += imp;
                stats.total_accesses += acc;
                stats.oldest_created_at = Some(stats.oldest_created_at.map_or(oldest, |o| o.min(oldest)));
                stats.newest_updated_at = Some(stats.newest_updated_at.map_or(newest, |o| o.max(newest)));
            }
            if stats.total > 0 {
                // Rounded to 4 decimals: an average of f32 values has no more precision.
                stats.average_importance = ((importance / stats.total as f64) * 1e4).round() as f32 / 1e4;
            }
            let count = |sql: &str| -> Result<usize> {
                let n: i64 = tx.prepare_cached(sql)?.query_row(params![project], |r| r.get(0))?;
                Ok(n as usize)
            };
            stats.episodes = count("SELECT COUNT(*) FROM episodic_records WHERE project_path = ?1")?;
            stats.history_entries = count("SELECT COUNT(*) FROM memory_history WHERE project_path = ?1")?;
            Ok(stats)
        })
    }

    // ----- episodic records -------------------------------------------------------------

    /// Record what happened in a run. Secrets are refused like in memories; redact first
    /// ([`secrets::redact`]) when the text comes from a conversation.
    pub fn add_episode(&self, new: NewEpisodicRecord) -> Result<EpisodicRecord> {
        let project_path = check_project(&new.project_path)?;
        for text in [
            &new.task_summary,
            &new.approach_summary,
            &new.outcome_summary,
            &new.session_id,
        ]
        .into_iter()
        .chain(&new.tools_used)
        .chain(&new.keywords)
        {
            secrets::check("episodic record", text)?;
        }
        self.write(|tx, now| {
            let record = EpisodicRecord {
                id: new_unique_id(tx, "episodic_records")?,
                project_path,
                session_id: new.session_id,
                record_type: new.record_type,
                task_summary: new.task_summary,
                approach_summary: new.approach_summary,
                outcome_summary: new.outcome_summary,
                tools_used: new.tools_used,
                keywords: text::normalize_keywords(&new.keywords),
                created_at: now,
            };
            insert_episode(tx, &record)?;
            Ok(record)
        })
    }

    /// The latest episodic records of a project, newest first.
    pub fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, project_path, session_id, record_type, task_summary, approach_summary,
                        outcome_summary, tools_used, keywords, created_at
                 FROM episodic_records WHERE project_path = ?1 ORDER BY created_at DESC, id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![project, limit], row_to_episode)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    // ----- project: state (seed 004 §8) -------------------------------------------------

    /// Persist one `project:` state value; secrets are refused.
    pub fn set_state(&self, project: &str, key: &str, value: &serde_json::Value) -> Result<()> {
        let project = check_project(project)?;
        if key.trim().is_empty() {
            return Err(MemoryError::Invalid("a state key must not be empty".into()));
        }
        let json = value.to_string();
        secrets::check("state value", &format!("{key}={json}"))?;
        secrets::check("state value", &format!("{key} {json}"))?;
        self.write(|tx, now| {
            tx.prepare_cached(
                "INSERT INTO project_state(project_path, key, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project_path, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                 WHERE value != excluded.value",
            )?
            .execute(params![project, key, json, now])?;
            Ok(())
        })
    }

    /// Every persisted state value of a project, by key.
    pub fn state_entries(&self, project: &str) -> Result<Vec<(String, serde_json::Value)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT key, value FROM project_state WHERE project_path = ?1 ORDER BY key",
            )?;
            let rows = stmt.query_map(params![project], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (key, value) = row?;
                let value = serde_json::from_str(&value).unwrap_or(serde_json::Value::String(value));
                out.push((key, value));
            }
            Ok(out)
        })
    }

    /// Remove a persisted state value; true when it existed.
    pub fn remove_state(&self, project: &str, key: &str) -> Result<bool> {
        self.write(|tx, _| {
            Ok(tx
                .prepare_cached("DELETE FROM project_state WHERE project_path = ?1 AND key = ?2")?
                .execute(params![project, key])?
                > 0)
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What candidate retrieval is confined to.
struct Filter<'a> {
    project: &'a str,
    min_importance: f32,
    categories: Option<&'a [MemoryCategory]>,
}

/// Score candidates against the query, keep those that share something with it, best first.
fn rank(
    q_terms: &[String],
    vocab: &Vocabulary,
    candidates: Vec<(i64, MemoryEntry)>,
    now: i64,
    top_k: usize,
) -> Vec<MemorySearchResult> {
    let qv = vocab.vector(q_terms);
    let q_set: BTreeSet<String> = q_terms.iter().cloned().collect();
    let mut out: Vec<MemorySearchResult> = candidates
        .into_iter()
        .filter_map(|(_, entry)| {
            let similarity = qv.cosine(&vocab.vector(&terms(&entry.content)));
            let keyword_overlap = jaccard(&q_set, &keyword_terms(&entry.keywords));
            // The similarity gate: importance and recency alone never surface a memory.
            if similarity <= 0.0 && keyword_overlap <= 0.0 {
                return None;
            }
            let days = days_between(entry.last_accessed_at, now);
            let relevance_score =
                compute_relevance_score(similarity, keyword_overlap, entry.importance, days);
            Some(MemorySearchResult {
                entry,
                relevance_score,
                similarity,
                keyword_overlap,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        if memindex::rank_before(a, b) {
            std::cmp::Ordering::Less
        } else if memindex::rank_before(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    out.truncate(top_k);
    out
}

/// The merge of an upsert: the more informative content, the union of keywords, the higher
/// importance.
fn merge_into(old: &MemoryEntry, new: &Checked, now: i64) -> MemoryEntry {
    let mut merged = old.clone();
    if text::term_set(&new.content).len() >= text::term_set(&old.content).len() {
        merged.content = new.content.clone();
        merged.category = new.category;
        if new.source_session_id.is_some() {
            merged.source_session_id = new.source_session_id.clone();
        }
        if new.source_context.is_some() {
            merged.source_context = new.source_context.clone();
        }
    }
    let mut keywords = old.keywords.clone();
    keywords.extend(new.keywords.iter().cloned());
    merged.keywords = text::normalize_keywords(&keywords);
    merged.importance = old.importance.max(new.importance);
    merged.updated_at = now;
    merged
}

/// Error of the `i`-th of `total` batch items.
fn numbered(i: usize, total: usize, err: MemoryError) -> MemoryError {
    match err {
        MemoryError::Invalid(m) => MemoryError::Invalid(format!("memory {} of {total}: {m}", i + 1)),
        other => other,
    }
}

pub(crate) fn check_project(project: &str) -> Result<String> {
    if project.trim().is_empty() {
        return Err(MemoryError::Invalid("the project path must not be empty".into()));
    }
    Ok(project.to_string())
}

fn check_content(content: &str) -> Result<String> {
    let content = content.trim();
    if content.is_empty() {
        return Err(MemoryError::Invalid("the content must not be empty".into()));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(MemoryError::Invalid(format!(
            "the content is {chars} characters long; the limit is {MAX_CONTENT_CHARS}"
        )));
    }
    Ok(content.to_string())
}

/// Importance must be in `[0, 1]`; it is kept at `f32` precision so exports round-trip exactly.
fn check_importance(importance: f32) -> Result<f32> {
    if !(0.0..=1.0).contains(&importance) {
        return Err(MemoryError::Invalid(format!(
            "importance {importance} is outside 0.0-1.0"
        )));
    }
    Ok(importance)
}

fn check_secrets(
    content: &str,
    keywords: &[String],
    context: Option<&str>,
    session: Option<&str>,
) -> Result<()> {
    secrets::check("memory", content)?;
    secrets::check("memory", &keywords.join(" "))?;
    if let Some(c) = context {
        secrets::check("memory", c)?;
    }
    if let Some(s) = session {
        secrets::check("memory", s)?;
    }
    Ok(())
}

/// A fresh 12-hex-digit id not yet used in `table`.
fn new_unique_id(tx: &Transaction, table: &str) -> Result<String> {
    let sql = format!("SELECT 1 FROM {table} WHERE id = ?1");
    loop {
        let id = crate::ids::new_id();
        let taken = tx
            .prepare_cached(&sql)?
            .query_row(params![id], |_| Ok(()))
            .optional()?
            .is_some();
        if !taken {
            return Ok(id);
        }
    }
}

fn insert_checked(tx: &Transaction, c: Checked, now: i64, reason: &str) -> Result<MemoryEntry> {
    if let Some(existing) = find_by_content(tx, &c.project_path, &c.content)? {
        return Err(MemoryError::Duplicate {
            project: c.project_path,
            existing,
        });
    }
    let entry = MemoryEntry {
        id: new_unique_id(tx, "project_memories")?,
        project_path: c.project_path,
        category: c.category,
        content: c.content,
        keywords: c.keywords,
        importance: c.importance,
        access_count: 0,
        source_session_id: c.source_session_id,
        source_context: c.source_context,
        created_at: now,
        updated_at: now,
        last_accessed_at: now,
        decayed_at: None,
    };
    insert_entry(tx, &entry)?;
    history::record(
        tx,
        HistoryAction::Insert,
        &entry.id,
        &entry.project_path,
        None,
        Some(&entry),
        None,
        Some(reason),
        now,
    )?;
    Ok(entry)
}

/// Insert a complete entry (row and index) and return its row number.
fn insert_entry(tx: &Transaction, e: &MemoryEntry) -> Result<i64> {
    tx.prepare_cached(
        "INSERT INTO project_memories (id, project_path, category, content, keywords, importance, access_count,
             source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        e.id,
        e.project_path,
        e.category.as_str(),
        e.content,
        keywords_json(&e.keywords),
        f64::from(e.importance),
        e.access_count,
        e.source_session_id,
        e.source_context,
        e.created_at,
        e.updated_at,
        e.last_accessed_at,
        e.decayed_at,
    ])?;
    let num = tx.last_insert_rowid();
    index::add(tx, num, e)?;
    Ok(num)
}

/// Write every field of `new` over row `num` (which holds `old`) and re-index when needed.
fn store_row(tx: &Transaction, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
    tx.prepare_cached(
        "UPDATE project_memories SET id = ?2, project_path = ?3, category = ?4, content = ?5, keywords = ?6,
             importance = ?7, access_count = ?8, source_session_id = ?9, source_context = ?10, created_at = ?11,
             updated_at = ?12, last_accessed_at = ?13, decayed_at = ?14
         WHERE num = ?1",
    )?
    .execute(params![
        num,
        new.id,
        new.project_path,
        new.category.as_str(),
        new.content,
        keywords_json(&new.keywords),
        f64::from(new.importance),
        new.access_count,
        new.source_session_id,
        new.source_context,
        new.created_at,
        new.updated_at,
        new.last_accessed_at,
        new.decayed_at,
    ])?;
    index::replace(tx, num, old, new)
}

fn delete_row(tx: &Transaction, num: i64, old: &MemoryEntry, reason: &str, now: i64) -> Result<()> {
    index::remove(tx, num, old)?;
    tx.prepare_cached("DELETE FROM project_memories WHERE num = ?1")?
        .execute(params![num])?;
    history::record(
        tx,
        HistoryAction::Delete,
        &old.id,
        &old.project_path,
        Some(old),
        None,
        None,
        Some(reason),
        now,
    )
}

fn keywords_json(keywords: &[String]) -> String {
    serde_json::to_string(keywords).unwrap_or_else(|_| "[]".into())
}

fn find_by_content(tx: &Transaction, project: &str, content: &str) -> Result<Option<String>> {
    Ok(tx
        .prepare_cached("SELECT id FROM project_memories WHERE project_path = ?1 AND content = ?2")?
        .query_row(params![project, content], |r| r.get(0))
        .optional()?)
}

fn load(tx: &Transaction, id: &str) -> Result<Option<(i64, MemoryEntry)>> {
    Ok(tx
        .prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE id = ?1"))?
        .query_row(params![id], row_to_entry)
        .optional()?)
}

fn select_entries(
    tx: &Transaction,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(i64, MemoryEntry)>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(params, row_to_entry)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn conversion_error(col: usize, message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, message.into())
}

fn row_to_entry(r: &Row) -> rusqlite::Result<(i64, MemoryEntry)> {
    let category: String = r.get(3)?;
    let category = category
        .parse()
        .map_err(|e: MemoryError| conversion_error(3, e.to_string()))?;
    let keywords: String = r.get(5)?;
    let keywords: Vec<String> = serde_json::from_str(&keywords)
        .map_err(|e| conversion_error(5, format!("keywords are not a JSON list: {e}")))?;
    Ok((
        r.get(0)?,
        MemoryEntry {
            id: r.get(1)?,
            project_path: r.get(2)?,
            category,
            content: r.get(4)?,
            keywords,
            importance: r.get::<_, f64>(6)? as f32,
            access_count: r.get(7)?,
            source_session_id: r.get(8)?,
            source_context: r.get(9)?,
            created_at: r.get(10)?,
            updated_at: r.get(11)?,
            last_accessed_at: r.get(12)?,
            decayed_at: r.get(13)?,
        },
    ))
}

fn insert_episode(tx: &Transaction, e: &EpisodicRecord) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO episodic_records (id, project_path, session_id, record_type, task_summary, approach_summary,
             outcome_summary, tools_used, keywords, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        e.id,
        e.project_path,
        e.session_id,
        e.record_type.as_str(),
        e.task_summary,
        e.approach_summary,
        e.outcome_summary,
        keywords_json(&e.tools_used),
        keywords_json(&e.keywords),
        e.created_at,
    ])?;
    Ok(())
}

fn row_to_episode(r: &Row) -> rusqlite::Result<EpisodicRecord> {
    let record_type: String = r.get(3)?;
    let list = |col: usize| -> rusqlite::Result<Vec<String>> {
        let s: String = r.get(col)?;
        serde_json::from_str(&s).map_err(|e| conversion_error(col, format!("not a JSON list: {e}")))
    };
    Ok(EpisodicRecord {
        id: r.get(0)?,
        project_path: r.get(1)?,
        session_id: r.get(2)?,
        record_type: RecordType::parse(&record_type)
            .ok_or_else(|| conversion_error(3, format!("unknown record type `{record_type}`")))?,
        task_summary: r.get(4)?,
        approach_summary: r.get(5)?,
        outcome_summary: r.get(6)?,
        tools_used: list(7)?,
        keywords: list(8)?,
        created_at: r.get(9)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_database_migrates_forward_keeping_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            assert!(matches!(
                schema::migrate_to(&mut conn, 1).unwrap(),
                schema::Migrated::Ok
            ));
            assert_eq!(schema::user_version(&conn).unwrap(), 1);
            let missing = conn.query_row("SELECT count(*) FROM project_state", [], |r| r.get::<_, i64>(0));
            assert!(missing.is_err(), "version 1 has no project_state table");
        }
        // Write a memory with a version-1 database (the current code only uses v1 tables here).
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute(
                "INSERT INTO project_memories (id, project_path, category, content, created_at, updated_at, last_accessed_at)
                 VALUES ('old1', '/p', 'fact', 'legacy row', 1, 1, 1)",
                [],
            )
            .unwrap();
        }
        let db = MemoryDb::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema::user_version(&conn).unwrap(), schema::LATEST);
        assert_eq!(db.get("old1").unwrap().unwrap().content, "legacy row");
        db.set_state("/p", "pm", &serde_json::json!("pnpm")).unwrap();
        assert_eq!(
            db.state_entries("/p").unwrap(),
            [("pm".to_string(), serde_json::json!("pnpm"))]
        );
        // Opening again migrates nothing and keeps everything.
        drop(db);
        let db = MemoryDb::open(&path).unwrap();
        assert_eq!(db.count("/p").unwrap(), 1);
    }

    #[test]
    fn a_newer_schema_is_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("future.db");
        MemoryDb::open(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let err = MemoryDb::open(&path).unwrap_err();
        assert!(
            matches!(err, MemoryError::SchemaTooNew { found: 99, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("future.db"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.db");
        std::fs::write(&path, vec![0x42u8; 8192]).unwrap();
        let err = MemoryDb::open(&path).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("garbage.db") && msg.contains("not a database"),
            "{msg}"
        );
    }
}
