//! Opening memory for a command: the database (a SQLite file, or a PostgreSQL server named by
//! a `postgres://` URL), the project key, and the store, provider and hook built on them.
//! `ctxkit memory` and the agent-building commands (`context`, `chat`, `mcp`, the hook) all
//! start here, so every command finds the same database and scopes it to the same project.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxkit::ChatModel;
use ctxkit_memory::{
    is_postgres_url, Maintenance, MemoryContextProvider, MemoryExtractor, MemoryHook, MemoryStore,
    OpenOptions, PostgresStore, SearchIndex, SqliteMemoryStore,
};

use crate::error::CliError;

/// A project key: an existing path canonicalised, anything else as given.
pub(crate) fn normalize_project(project: &str) -> String {
    match std::fs::canonicalize(project) {
        Ok(p) if !project.trim().is_empty() => p.to_string_lossy().into_owned(),
        _ => project.to_string(),
    }
}

/// The memory store a command opened, whichever backend: its [`MemoryStore`] and
/// [`Maintenance`] methods are reached through `Deref`, its sessions through
/// [`sessions`](Self::sessions).
#[derive(Clone)]
pub(crate) struct Store {
    store: Arc<dyn Maintenance>,
    sessions: Arc<dyn ctxkit::SessionStore>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Maintenance;

    fn deref(&self) -> &Self::Target {
        &*self.store
    }
}

impl Store {
    /// A backend's store, seen both ways.
    fn of<S: Maintenance + ctxkit::SessionStore + 'static>(store: S) -> Self {
        let store = Arc::new(store);
        Store {
            store: store.clone(),
            sessions: store,
        }
    }

    /// The store as a shared trait object (for providers, hooks and the MCP server).
    pub(crate) fn shared(&self) -> Arc<dyn MemoryStore> {
        self.store.clone()
    }

    /// The store as the agent's session store (`chat --session`, `ctxkit sessions`).
    pub(crate) fn sessions(&self) -> Arc<dyn ctxkit::SessionStore> {
        self.sessions.clone()
    }
}

/// The pages a one-shot command's SQLite connection keeps in memory: it reads each about
/// once, and reusing a few dozen buffers is faster than allocating one per page read
/// (see [`OpenOptions::cache_pages`]).
const ONE_SHOT_CACHE_PAGES: usize = 32;

/// The options of a store opened for one command: SQLite searches use the on-disk index
/// only, through a small page cache.
fn one_shot() -> OpenOptions {
    OpenOptions::default()
        .search_index(SearchIndex::Off)
        .cache_pages(ONE_SHOT_CACHE_PAGES)
}

/// Open the store at `db`, or at the default place (creating a file's folder), for one
/// command.
pub(crate) fn open_store(db: Option<&Path>) -> Result<Store, CliError> {
    open_store_at(db, one_shot())
}

/// [`open_store`] for reading only: nothing is created, migrated or written.
pub(crate) fn open_store_read_only(db: Option<&Path>) -> Result<Store, CliError> {
    open_store_at(db, one_shot().read_only(true))
}

/// [`open_store`] for the hook's memory part, a process per prompt on a thread and runtime
/// that do nothing else: SQLite calls run on that thread rather than being handed to a pool
/// thread, and the log a write leaves is copied back by the next prompt's process while it
/// reads, not by this one as it closes (see [`OpenOptions::checkpoint_on_open`]).
pub(crate) fn open_store_for_hook(db: Option<&Path>) -> Result<Store, CliError> {
    open_store_at(db, one_shot().blocking_pool(false).checkpoint_on_open(true))
}

/// Open the store at `db`, or at the default place, for a long-running process: searches
/// use an in-memory index once `mode` has built it.
pub(crate) fn open_store_with(db: Option<&Path>, mode: SearchIndex) -> Result<Store, CliError> {
    open_store_at(db, OpenOptions::default().search_index(mode))
}

/// Open the store at `db`, or at the default place, with `options` and the configured
/// embedding model.
fn open_store_at(db: Option<&Path>, mut options: OpenOptions) -> Result<Store, CliError> {
    let db = memory_db_path(db)?;
    if let Some(model) = crate::embeddings::embedder()? {
        options = options.embeddings(model);
    }
    open_location(&db, options)
}

/// A skill learner for `project` that tells a new skill from the ones there by meaning too
/// when an embedding model is configured.
pub(crate) fn skill_learner(
    model: Arc<dyn ChatModel>,
    store: Arc<dyn MemoryStore>,
    library: Arc<ctxkit_skills::SkillLibrary>,
    project: String,
    options: ctxkit_learn::LearnOptions,
) -> Result<ctxkit_learn::SkillLearner, CliError> {
    let mut learner = ctxkit_learn::SkillLearner::new(model, store, library, project).options(options);
    if let Some(embeddings) = crate::embeddings::embedder()? {
        learner = learner.embeddings(embeddings);
        if let Some(file) = crate::embeddings::vector_cache_file() {
            learner = learner.vector_cache_file(file);
        }
    }
    Ok(learner)
}

/// Open `db` with `options`: a PostgreSQL server for a `postgres://` URL (connected on first
/// use), else a SQLite file.
fn open_location(db: &Path, options: OpenOptions) -> Result<Store, CliError> {
    match server_url(db)? {
        Some(url) => Ok(Store::of(PostgresStore::open_with(url, options)?)),
        None => Ok(Store::of(SqliteMemoryStore::open_with(db, options)?)),
    }
}

/// The URL when `db` names a PostgreSQL server. Any other URL, and a libpq key/value
/// connection string (`host=db password=…`), is an error, so neither ever becomes a SQLite file
/// named after it, password included.
pub(crate) fn server_url(db: &Path) -> Result<Option<&str>, CliError> {
    match db.to_str() {
        Some(url) if is_postgres_url(url) => Ok(Some(url)),
        Some(url) if url.contains("://") => Err(CliError::new(format!(
            "`{url}` is neither a SQLite file nor a postgres:// URL"
        ))),
        Some(text) if is_key_value_connection(text) => Err(CliError::new(format!(
            "`{text}` looks like a key/value connection string; give a PostgreSQL server as a \
             postgres://USER:PASSWORD@HOST/DB URL, or a SQLite file as a path"
        ))),
        _ => Ok(None),
    }
}

/// `host=… dbname=…`: words of the form `KEY=VALUE` whose first key is one libpq reads.
fn is_key_value_connection(text: &str) -> bool {
    const KEYS: &[&str] = &[
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "sslmode",
        "connect_timeout",
        "service",
        "options",
        "application_name",
        "target_session_attrs",
    ];
    text.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .any(|(key, _)| KEYS.contains(&key.trim().to_ascii_lowercase().as_str()))
}

/// The database a command uses: `db` when given, else the default one (`$CTXKIT_MEMORY_DB`,
/// else the user's data folder), whose folder is created when it is a file. Every command
/// (`memory`, `context`, `chat`, `mcp`, the agent hook) finds its database here, so they all
/// see the same memories. A `postgres://` or `postgresql://` URL names a server instead.
pub(crate) fn memory_db_path(db: Option<&Path>) -> Result<PathBuf, CliError> {
    match db {
        Some(p) => {
            server_url(p)?;
            Ok(p.to_path_buf())
        }
        None => {
            let p = crate::places::memory_db()?;
            if server_url(&p)?.is_some() {
                return Ok(p);
            }
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    CliError::caused_by(format!("cannot create `{}`: {e}", parent.display()), e)
                })?;
            }
            Ok(p)
        }
    }
}

/// The store an agent-building command (`context`, `chat`, `bench`, `serve`) opens once and
/// hands to its memory provider, hook, learner and usage: searches use an in-memory index once
/// it is built; with `read_only` nothing is created, migrated or written.
pub(crate) fn open_agent_store(db: &Path, read_only: bool) -> Result<Store, CliError> {
    let options = OpenOptions::default()
        .search_index(SearchIndex::Background)
        .read_only(read_only);
    open_location(db, options)
}

/// The memory provider for `ctxkit context` / `ctxkit chat` over `store`, scoped to `project`;
/// with `read_only` it writes nothing.
pub(crate) fn memory_provider(store: &Store, project: &str, read_only: bool) -> MemoryContextProvider {
    let provider = MemoryContextProvider::new(store.shared()).with_project(normalize_project(project));
    if read_only {
        provider.read_only()
    } else {
        provider
    }
}

/// The lifecycle hook for `ctxkit chat` over `store`: loads `project:` state, given a model
/// extracts memories at `/new`, `/compact` and the end of the session, and decays and prunes
/// the project at the end of the session. Give it no model with the offline dry-run model,
/// whose replies are not extraction JSON.
pub(crate) fn memory_hook(
    store: &Store,
    project: &str,
    extraction_model: Option<Arc<dyn ChatModel>>,
) -> MemoryHook {
    let store = store.shared();
    let hook = MemoryHook::new(store.clone()).with_project(normalize_project(project));
    match extraction_model {
        Some(model) => hook.with_extractor(MemoryExtractor::new(model, store)),
        None => hook,
    }
}

/// The canonical current directory: the default project memories are scoped to.
pub(crate) fn default_project() -> Result<String, CliError> {
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize);
    let cwd = cwd.map_err(|e| CliError::caused_by(format!("cannot read the current directory: {e}"), e))?;
    Ok(cwd.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_are_canonical_paths_or_names() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        let dotted = dir.path().join(".");
        assert_eq!(
            normalize_project(dotted.to_str().unwrap()),
            canonical.to_string_lossy()
        );
        assert_eq!(normalize_project("my-project"), "my-project");
    }
}
