//! The sentence-embedding model of this process: found where [`crate::places::embeddings`]
//! says, loaded once, shared by memory (the hybrid ranking), skills (the semantic fallback) and
//! the skill learner.

use std::sync::{Arc, Mutex};

use ctxkit_memory::Embedder;

use crate::error::CliError;

/// The sentence-embedding model configured ([`crate::places::embeddings`]), loaded once per
/// process (memory-mapped: a few milliseconds); `None` when there is none.
pub(crate) fn embedder() -> Result<Option<Arc<Embedder>>, CliError> {
    static MODEL: Mutex<Option<Arc<Embedder>>> = Mutex::new(None);
    let Some(dir) = crate::places::embeddings()? else {
        return Ok(None);
    };
    let mut loaded = MODEL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(model) = loaded.as_ref() {
        return Ok(Some(model.clone()));
    }
    let model = Arc::new(Embedder::load(&dir).map_err(|e| CliError::new(e.to_string()))?);
    *loaded = Some(model.clone());
    Ok(Some(model))
}
