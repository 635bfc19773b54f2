//! The sentence-embedding model of this process: found once (`--embeddings`, else
//! `$CTXKIT_EMBEDDINGS`, else the user config's `[memory] embeddings`), loaded once, and shared
//! by memory (the hybrid ranking), skills (the semantic fallback) and the skill learner.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use ctxkit_memory::Embedder;
use ctxkit_skills::{SkillConfig, SkillContextProvider, SkillLibrary, SkillMeaning};

use crate::error::CliError;
use crate::user_config::Config;

/// The sentence-embedding model configured ([`embeddings`]), loaded once per
/// process (memory-mapped: a few milliseconds; its halved weights kept in the cache folder);
/// `None` when there is none.
pub(crate) fn embedder() -> Result<Option<Arc<Embedder>>, CliError> {
    static MODEL: Mutex<Option<Arc<Embedder>>> = Mutex::new(None);
    let Some(dir) = embeddings()? else {
        return Ok(None);
    };
    let mut loaded = MODEL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(model) = loaded.as_ref() {
        return Ok(Some(model.clone()));
    }
    // With a cache folder, the dense weights are computed halved (bfloat16), from a copy kept
    // there: a sentence costs about a quarter less in a one-shot process.
    let model = match crate::places::cache_dir() {
        Some(cache) => Embedder::load_cached(&dir, &cache),
        None => Embedder::load(&dir),
    };
    let model = Arc::new(model.map_err(|e| CliError::new(e.to_string()))?);
    *loaded = Some(model.clone());
    Ok(Some(model))
}

/// Load the model and embed `text` on a thread of its own, when `wanted` (called on that
/// thread) says a part of this process will need the text's vector: the memory search and the
/// skills' semantic fallback then find it ready (the model remembers its latest texts, and
/// waits for one being embedded), instead of loading the model and embedding the text after
/// their own reads. Does nothing without a model.
pub(crate) fn embed_ahead(text: &str, wanted: impl FnOnce() -> bool + Send + 'static) {
    let text = text.to_owned();
    let started = std::thread::Builder::new()
        .name("ctxkit-embed-ahead".into())
        .spawn(move || {
            if matches!(embeddings(), Ok(Some(_))) && wanted() {
                if let Ok(Some(model)) = embedder() {
                    model.embed(&text);
                }
            }
        });
    if let Err(e) = started {
        tracing::debug!(error = %e, "the text is embedded when it is needed instead");
    }
}

/// `--embeddings DIR`, given before any subcommand's own arguments are read.
static EMBEDDINGS_FLAG: OnceLock<PathBuf> = OnceLock::new();

/// Remember the `--embeddings` flag for [`embeddings`].
pub(crate) fn set_embeddings_flag(dir: PathBuf) {
    let _ = EMBEDDINGS_FLAG.set(dir);
}

/// The sentence-embedding model folder: `--embeddings`, else `$CTXKIT_EMBEDDINGS`, else the
/// user config's `[memory] embeddings` (never a project's config: a model is code-like input
/// the user chooses). `None`: memory is ranked by words only.
pub(crate) fn embeddings() -> Result<Option<PathBuf>, CliError> {
    if let Some(dir) = EMBEDDINGS_FLAG.get() {
        return Ok(Some(dir.clone()));
    }
    if let Some(dir) = std::env::var_os("CTXKIT_EMBEDDINGS").filter(|v| !v.is_empty()) {
        return Ok(Some(PathBuf::from(dir)));
    }
    Config::user_embeddings()
}

/// Where the skills' description vectors are kept between processes (the semantic fallback's
/// and the skill learner's: a `VectorCache` of `ctxkit-embed`), in the cache folder; `None`
/// without one.
pub(crate) fn vector_cache_file() -> Option<PathBuf> {
    crate::places::cache_dir().map(|cache| cache.join("skill-vectors.bin"))
}

/// The skill provider over `library` with `skill_config`, with the semantic fallback when
/// `[skills] semantic = true` and an embedding model is configured; without a model it
/// says once how to add one, and selects by triggers alone. With `cached_only` (a hook, which
/// must answer at once) it selects only among the descriptions already embedded
/// ([`SkillMeaning::cached_only`]).
pub(crate) fn skill_provider(
    config: &Config,
    library: Arc<SkillLibrary>,
    skill_config: SkillConfig,
    cached_only: bool,
) -> Result<SkillContextProvider, CliError> {
    let provider = SkillContextProvider::new(library, skill_config);
    if !config.semantic_skills() {
        return Ok(provider);
    }
    let Some(model) = embedder()? else {
        tracing::warn!(
            "[skills] semantic is on but no embedding model is configured: give one with \
             --embeddings DIR, $CTXKIT_EMBEDDINGS or [memory] embeddings in the user config"
        );
        return Ok(provider);
    };
    let mut meaning = SkillMeaning::new(model);
    if let Some(file) = vector_cache_file() {
        meaning = meaning.cache_file(file);
    }
    if cached_only {
        meaning = meaning.cached_only();
    }
    Ok(provider.with_meaning(meaning))
}
