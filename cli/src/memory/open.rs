//! Opening memory for a command: the database path, the project key, and the store, provider
//! and hook built on them. `ctxkit memory` and the agent-building commands (`context`, `chat`)
//! both start here, so every command finds the same database and scopes it to the same project.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxkit::ChatModel;
use ctxkit_memory::{
    MemoryContextProvider, MemoryExtractor, MemoryHook, MemoryStore, OpenOptions, SearchIndex,
    SqliteMemoryStore,
};

use crate::CliError;

/// A project key: an existing path canonicalised, anything else as given.
pub fn normalize_project(project: &str) -> String {
    match std::fs::canonicalize(project) {
        Ok(p) if !project.trim().is_empty() => p.to_string_lossy().into_owned(),
        _ => project.to_string(),
    }
}

/// Open the store at `db`, or at the default path (creating its folder), for one command:
/// searches use the on-disk full-text index only.
pub(crate) fn open_store(db: Option<&Path>) -> Result<SqliteMemoryStore, CliError> {
    open_store_with(db, SearchIndex::Off)
}

pub(crate) fn open_store_with(db: Option<&Path>, mode: SearchIndex) -> Result<SqliteMemoryStore, CliError> {
    let path = memory_db_path(db)?;
    Ok(SqliteMemoryStore::open_with(
        &path,
        OpenOptions::default().search_index(mode),
    )?)
}

/// The database a command uses: `db` when given, else the default one (`$CTXKIT_MEMORY_DB`,
/// else the user's data folder), whose folder is created. Every command (`memory`, `context`,
/// `chat`, the agent hook) finds its database here, so they all see the same memories.
pub fn memory_db_path(db: Option<&Path>) -> Result<PathBuf, CliError> {
    match db {
        Some(p) => Ok(p.to_path_buf()),
        None => {
            let p = crate::places::memory_db()?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CliError::new(format!("cannot create `{}`: {e}", parent.display())))?;
            }
            Ok(p)
        }
    }
}

/// The memory provider for `ctxkit context` / `ctxkit chat`, scoped to `project`.
pub fn open_provider(db: &Path, project: &str) -> Result<MemoryContextProvider, CliError> {
    open_provider_with(db, project, false)
}

/// [`open_provider`], or with `read_only` a provider that writes nothing on a database opened
/// read-only.
pub fn open_provider_with(
    db: &Path,
    project: &str,
    read_only: bool,
) -> Result<MemoryContextProvider, CliError> {
    let options = OpenOptions::default()
        .search_index(SearchIndex::Background)
        .read_only(read_only);
    let store = Arc::new(SqliteMemoryStore::open_with(db, options)?);
    let provider = MemoryContextProvider::new(store).with_project(normalize_project(project));
    Ok(if read_only { provider.read_only() } else { provider })
}

/// The lifecycle hook for `ctxkit chat`: loads `project:` state, given a model extracts
/// memories at `/new`, `/compact` and the end of the session, and decays and prunes the project
/// at the end of the session. Give it no model with the offline dry-run model, whose replies
/// are not extraction JSON.
pub fn open_hook(
    db: &Path,
    project: &str,
    extraction_model: Option<Arc<dyn ChatModel>>,
) -> Result<MemoryHook, CliError> {
    let store: Arc<dyn MemoryStore> = Arc::new(open_store_with(Some(db), SearchIndex::Background)?);
    let hook = MemoryHook::new(store.clone()).with_project(normalize_project(project));
    Ok(match extraction_model {
        Some(model) => hook.with_extractor(MemoryExtractor::new(model, store)),
        None => hook,
    })
}

/// The canonical current directory: the default project memories are scoped to.
pub fn default_project() -> Result<String, CliError> {
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize);
    let cwd = cwd.map_err(|e| CliError::new(format!("cannot read the current directory: {e}")))?;
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
