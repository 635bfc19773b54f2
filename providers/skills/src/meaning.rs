//! Meaning in the ranking, with an embedding model: the cosine of the message's sentence
//! vector with each skill's name and description joins the skill's triggers and words in one
//! score (see the `select` module), so one floor decides for every skill.
//!
//! The descriptions are embedded once per index snapshot; with a cache file, once per
//! description and model across processes (a hook is a new process per prompt, and embedding
//! 600 descriptions takes seconds).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxkit_embed::{cosine, Embedder, VectorCache};

use crate::index::SkillIndex;

/// A sentence-embedding model as the skills ranking uses it.
#[derive(Clone)]
pub struct SkillMeaning {
    model: Arc<Embedder>,
    cache: Option<VectorCache>,
    cached_only: bool,
    /// Descriptions the latest cached-only look found unembedded (shared by clones).
    pending: Arc<AtomicUsize>,
}

impl std::fmt::Debug for SkillMeaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillMeaning")
            .field("model", &self.model.id())
            .field("cache", &self.cache)
            .field("cached_only", &self.cached_only)
            .finish()
    }
}

/// The vectors of an index's skills, by position in the index.
pub(crate) type Described = Arc<Vec<(usize, Vec<f32>)>>;

impl SkillMeaning {
    /// Meaning from `model`.
    pub fn new(model: Arc<Embedder>) -> Self {
        SkillMeaning {
            model,
            cache: None,
            cached_only: false,
            pending: Arc::default(),
        }
    }

    /// Select only among the skills whose descriptions the cache file holds already: a
    /// selection never embeds descriptions itself (the first one takes seconds for hundreds of
    /// skills), so a process that must answer at once, such as an agent host's hook, stays
    /// fast while another fills the cache with [`SkillMeaning::prepare`].
    /// [`SkillMeaning::pending`] says how many were left out.
    pub fn cached_only(mut self) -> Self {
        self.cached_only = true;
        self
    }

    /// Embed the descriptions of `index`'s skills that the cache file lacks and
    /// keep them there; how many were embedded.
    pub fn prepare(&self, index: &SkillIndex) -> usize {
        let missing = self.describe_with(index, false).1;
        if missing > 0 {
            self.describe_with(index, true);
        }
        missing
    }

    /// How many descriptions the latest cached-only selection found not embedded yet (0
    /// when a selection embeds what it needs).
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// Keep the descriptions' vectors in `file` between processes, keyed by the model and the
    /// text (a [`VectorCache`]: a damaged or foreign file is ignored and rewritten).
    pub fn cache_file(mut self, file: PathBuf) -> Self {
        self.cache = Some(VectorCache::new(file));
        self
    }

    /// The text embedded for a skill.
    fn text(index: &SkillIndex, i: usize) -> String {
        let skill = &index.skills()[i];
        format!("{}: {}", skill.name, skill.description)
    }

    /// The vectors of the skills of `index` (with
    /// [`SkillMeaning::cached_only`], of those whose vectors are cached).
    pub(crate) fn describe(&self, index: &SkillIndex) -> Described {
        let (described, missing) = self.describe_with(index, !self.cached_only);
        self.pending.store(missing, Ordering::Relaxed);
        described
    }

    /// The vectors of the skills, embedding those the cache lacks when `embed`,
    /// and how many were left without one.
    fn describe_with(&self, index: &SkillIndex, embed: bool) -> (Described, usize) {
        let wanted: Vec<usize> = index
            .skills()
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.disable_model_invocation)
            .map(|(i, _)| i)
            .collect();
        let texts: Vec<String> = wanted.iter().map(|&i| Self::text(index, i)).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors: Vec<Option<Vec<f32>>> = match (&self.cache, embed) {
            (Some(cache), false) => cache.known(&self.model, &texts),
            (None, false) => vec![None; texts.len()],
            (Some(cache), true) => cache.embed(&self.model, &texts).into_iter().map(Some).collect(),
            (None, true) => self.model.embed_batch(&texts).into_iter().map(Some).collect(),
        };
        let missing = vectors.iter().filter(|v| v.is_none()).count();
        let described = wanted
            .into_iter()
            .zip(vectors)
            .filter_map(|(i, v)| Some((i, v?)))
            .collect();
        (Arc::new(described), missing)
    }

    /// The cosine of `message` with each of the `skills` of the index, NaN for a skill
    /// without a vector.
    pub(crate) fn cosines(&self, message: &str, described: &[(usize, Vec<f32>)], skills: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; skills];
        if described.is_empty() || message.trim().is_empty() {
            return out;
        }
        let _span = tracing::debug_span!("skills.embed_message", chars = message.len()).entered();
        let m = self.model.embed(message);
        for (i, v) in described {
            out[*i] = cosine(&m, v);
        }
        out
    }
}
