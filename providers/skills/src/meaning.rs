//! The opt-in semantic fallback: a skill that declares no triggers is selected when the
//! message is near its name and description in meaning (the cosine of their sentence vectors
//! reaches a floor), after the trigger matches and within the cap, with reason `semantic`.
//!
//! The descriptions are embedded once per index snapshot; with a cache file, once per
//! description and model across processes (a hook is a new process per prompt, and embedding
//! 600 descriptions takes seconds).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxkit_embed::{cosine, Embedder};
use sha2::{Digest, Sha256};

use crate::index::SkillIndex;

/// The cosine a message needs with a skill's name and description by default (all-MiniLM-L6-v2).
/// Chosen on the 650 public skills with ten messages: those asking for a skill's task in other
/// words reached 0.47-0.64 with the right skill ("the tests are flaky" with `test-fixing`,
/// "deploy the app to kubernetes" with `k8s-manifest-generator`), while no skill reached 0.31
/// for a message no skill serves ("how do I center a div", "what is 2+2?"). A deck of slides
/// reached only 0.28 with `pptx`: a floor trades such misses for never injecting a stranger.
pub const DEFAULT_FLOOR: f32 = 0.45;

/// The largest cache file read: a few thousand descriptions of a 1,024-dimension model.
const CACHE_LIMIT: u64 = 64 << 20;
/// The first bytes of a cache file.
const CACHE_MAGIC: &[u8; 24] = b"ctxkit-skill-vectors v1\n";

/// A sentence-embedding model as the skills fallback uses it.
#[derive(Clone)]
pub struct SkillMeaning {
    model: Arc<Embedder>,
    floor: f32,
    cache: Option<PathBuf>,
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
        let before = self.read_cache().len();
        self.describe_with(index, true);
        self.read_cache().len().saturating_sub(before)
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
    /// text (a damaged or foreign file is ignored and rewritten).
    pub fn cache_file(mut self, file: PathBuf) -> Self {
        self.cache = Some(file);
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
        self.describe_with(index, !self.cached_only)
    }

    fn describe_with(&self, index: &SkillIndex, embed: bool) -> Described {
        let wanted: Vec<usize> = index
            .skills()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.triggers.is_empty() && !s.disable_model_invocation)
            .map(|(i, _)| i)
            .collect();
        let texts: Vec<String> = wanted.iter().map(|&i| Self::text(index, i)).collect();
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| self.key(t)).collect();
        let mut known = self.read_cache();
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&k| !known.contains_key(&keys[k]))
            .collect();
        self.pending
            .store(if embed { 0 } else { missing.len() }, Ordering::Relaxed);
        if embed && !missing.is_empty() {
            let _span = tracing::info_span!("skills.embed_descriptions", skills = missing.len()).entered();
            let batch: Vec<&str> = missing.iter().map(|&k| texts[k].as_str()).collect();
            for (&k, vector) in missing.iter().zip(self.model.embed_batch(&batch)) {
                known.insert(keys[k], vector);
            }
            self.write_cache(&known);
        }
        Arc::new(
            wanted
                .iter()
                .zip(&keys)
                .filter_map(|(&i, key)| Some((i, known.get(key)?.clone())))
                .collect(),
        )
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

    fn key(&self, text: &str) -> [u8; 32] {
        let mut digest = Sha256::new();
        digest.update(self.model.id().as_bytes());
        digest.update([0]);
        digest.update(text.as_bytes());
        digest.finalize().into()
    }

    /// The cached vectors of this model's dimensions; empty when there is no usable file.
    fn read_cache(&self) -> HashMap<[u8; 32], Vec<f32>> {
        let mut known = HashMap::new();
        let Some(path) = &self.cache else { return known };
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path).and_then(|f| f.take(CACHE_LIMIT).read_to_end(&mut bytes));
        let Some(entries) = read.ok().and_then(|_| bytes.strip_prefix(CACHE_MAGIC)) else {
            return known;
        };
        let dims = self.model.dimensions();
        let entry = 32 + 4 * dims;
        if entries.len() % entry != 0 {
            return known;
        }
        for chunk in entries.chunks_exact(entry) {
            let (key, floats) = chunk.split_at(32);
            let vector = floats
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            known.insert(key.try_into().unwrap_or([0; 32]), vector);
        }
        known
    }

    /// Write every known vector, replacing the file in one rename (a reader never sees half).
    fn write_cache(&self, known: &HashMap<[u8; 32], Vec<f32>>) {
        let Some(path) = &self.cache else { return };
        let mut bytes = CACHE_MAGIC.to_vec();
        for (key, vector) in known {
            bytes.extend_from_slice(key);
            vector
                .iter()
                .for_each(|f| bytes.extend_from_slice(&f.to_le_bytes()));
        }
        let written = path
            .parent()
            .ok_or(std::io::Error::from(std::io::ErrorKind::NotFound))
            .and_then(|dir| {
                std::fs::create_dir_all(dir)?;
                let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
                tmp.write_all(&bytes)?;
                tmp.persist(path).map_err(|e| e.error)?;
                Ok::<(), std::io::Error>(())
            });
        if let Err(e) = written {
            tracing::warn!(file = %path.display(), error = %e, "cannot keep the skills' description vectors");
        }
    }
}
