//! The opt-in semantic fallback: a skill that declares no triggers is selected when the
//! message is near its name and description in meaning (the cosine of their sentence vectors
//! reaches a floor), after the trigger matches and within the cap, with reason `semantic`.
//!
//! The descriptions are embedded once per index snapshot; with a cache file, once per
//! description and model across processes (a hook is a new process per prompt, and embedding
//! 600 descriptions takes seconds).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxkit_embed::{cosine, Embedder, VectorCache};

use crate::index::SkillIndex;

/// The cosine a message needs with a skill's name and description by default (all-MiniLM-L6-v2).
/// Chosen on the 650 public skills with ten messages: those asking for a skill's task in other
/// words reached 0.47-0.64 with the right skill ("the tests are flaky" with `test-fixing`,
/// "deploy the app to kubernetes" with `k8s-manifest-generator`), while no skill reached 0.31
/// for a message no skill serves ("how do I center a div", "what is 2+2?"). A deck of slides
/// reached only 0.28 with `pptx`: a floor trades such misses for never injecting a stranger.
pub const DEFAULT_FLOOR: f32 = 0.45;

/// A sentence-embedding model as the skills fallback uses it.
#[derive(Clone)]
pub struct SkillMeaning {
    model: Arc<Embedder>,
    floor: f32,
    cache: Option<VectorCache>,
    cached_only: bool,
    /// Descriptions the latest cached-only look found unembedded (shared by clones).
    pending: Arc<AtomicUsize>,
}

impl std::fmt::Debug for SkillMeaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillMeaning")
            .field("model", &self.model.id())
            .field("floor", &self.floor)
            .field("cache", &self.cache)
            .field("cached_only", &self.cached_only)
            .finish()
    }
}

/// The vectors of an index's triggerless skills, by position in the index.
pub(crate) type Described = Arc<Vec<(usize, Vec<f32>)>>;

impl SkillMeaning {
    /// The fallback with `model` and the [`DEFAULT_FLOOR`].
    pub fn new(model: Arc<Embedder>) -> Self {
        SkillMeaning {
            model,
            floor: DEFAULT_FLOOR,
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

    /// Embed the descriptions of `index`'s triggerless skills that the cache file lacks and
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

    /// The cosine a message needs with a description (clamped to 0-1).
    pub fn floor(mut self, floor: f32) -> Self {
        self.floor = floor.clamp(0.0, 1.0);
        self
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

    /// The vectors of the skills of `index` that declare no triggers (with
    /// [`SkillMeaning::cached_only`], of those whose vectors are cached).
    pub(crate) fn describe(&self, index: &SkillIndex) -> Described {
        let (described, missing) = self.describe_with(index, !self.cached_only);
        self.pending.store(missing, Ordering::Relaxed);
        described
    }

    /// The vectors of the triggerless skills, embedding those the cache lacks when `embed`,
    /// and how many were left without one.
    fn describe_with(&self, index: &SkillIndex, embed: bool) -> (Described, usize) {
        let wanted: Vec<usize> = index
            .skills()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.triggers.is_empty() && !s.disable_model_invocation)
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

    /// The described skills at or above the floor for `message`, nearest first.
    pub(crate) fn nearest(&self, message: &str, described: &[(usize, Vec<f32>)]) -> Vec<(usize, f32)> {
        if described.is_empty() || message.trim().is_empty() {
            return Vec::new();
        }
        let _span = tracing::debug_span!("skills.embed_message", chars = message.len()).entered();
        let m = self.model.embed(message);
        let mut near: Vec<(usize, f32)> = described
            .iter()
            .map(|(i, v)| (*i, cosine(&m, v)))
            .filter(|(_, c)| *c >= self.floor)
            .collect();
        near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        near
    }
}
