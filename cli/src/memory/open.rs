//! Opening memory for a command: the database path, the project key, and the store, provider
//! and hook built on them. `ctxkit memory` and the agent-building commands (`context`, `chat`)
//! both start here, so every command finds the same database and scopes it to the same project.

use std::path::Path;
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

fn open_store_with(db: Option<&Path>, mode: SearchIndex) -> Result<SqliteMemoryStore, CliError> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => {
            let p = crate::places::memory_db()?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CliError::new(format!("cannot create `{}`: {e}", parent.display())))?;
            }
            p
        }
    };
    Ok(SqliteMemoryStore::open_with(
        &path,
        OpenOptions::default().search_index(mode),
    )?)
}

/// The memory provider for `ctxkit context` / `ctxkit chat --memory DB`, scoped to `project`.
pub fn open_provider(db: &Path, project: &str) -> Result<MemoryContextProvider, CliError> {
    let store = Arc::new(open_store_with(Some(db), SearchIndex::Background)?);
    Ok(MemoryContextProvider::new(store).with_project(normalize_project(project)))
}

/// The lifecycle hook for `ctxkit chat --memory DB`: loads and persists `project:` state and,
/// given a model, extracts memories at `/new`, `/compact` and the end of the session. Give it
/// no model with the offline dry-run model, whose replies are not extraction JSON.
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
