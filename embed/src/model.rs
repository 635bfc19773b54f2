//! A model folder in the sentence-transformers layout, read and checked: `config.json` (a BERT
//! encoder), `vocab.txt`, `tokenizer_config.json`, `sentence_bert_config.json`,
//! `1_Pooling/config.json` and `model.safetensors`, the last one memory-mapped.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::EmbedError;

/// The most any JSON file of a model folder may hold.
const JSON_LIMIT: u64 = 1 << 20;
/// The most `vocab.txt` may hold (BERT's is 230 KB).
const VOCAB_LIMIT: u64 = 16 << 20;
/// The largest weights file mapped (all-MiniLM-L6-v2's is 91 MB, BERT-large's 1.3 GB).
const WEIGHTS_LIMIT: u64 = 4 << 30;
/// BERT's own bound on positions; a config asking for more is not a model this crate runs.
const MAX_POSITIONS: usize = 8192;

/// The encoder's shape, from `config.json`.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Config {
    #[serde(default = "bert")]
    model_type: String,
    #[serde(default = "gelu")]
    hidden_act: String,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) vocab_size: usize,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "two")]
    pub(crate) type_vocab_size: usize,
    #[serde(default = "bert_eps")]
    pub(crate) layer_norm_eps: f32,
}

fn bert() -> String {
    "bert".into()
}
fn gelu() -> String {
    "gelu".into()
}
fn two() -> usize {
    2
}
fn bert_eps() -> f32 {
    1e-12
}

#[derive(Deserialize)]
struct TokenizerConfig {
    #[serde(default = "yes")]
    do_lower_case: bool,
}

#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

fn yes() -> bool {
    true
}

/// How token vectors become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Pooling {
    /// The mean of every token's vector (all-MiniLM-L6-v2).
    Mean,
    /// The `[CLS]` token's vector.
    Cls,
}

/// Everything read from a model folder but the weights' contents.
pub(crate) struct ModelFiles {
    pub(crate) config: Config,
    pub(crate) vocab: String,
    pub(crate) lowercase: bool,
    pub(crate) max_tokens: usize,
    pub(crate) pooling: Pooling,
    pub(crate) weights: Weights,
    /// A digest of the files that decide the vectors (configs, vocabulary, the weights' table of
    /// contents and size), so stored vectors can tell which model made them.
    pub(crate) identity: String,
}

impl ModelFiles {
    pub(crate) fn read(dir: &Path) -> Result<Self, EmbedError> {
        let config_text = read_capped(&dir.join("config.json"), JSON_LIMIT)?;
        let config: Config = parse_json("config.json", &config_text)?;
        if config.model_type != "bert" || config.hidden_act != "gelu" {
            return Err(EmbedError::malformed(
                "config.json",
                format!(
                    "describes a `{}` model with `{}` activation; only BERT encoders with GELU run here",
                    config.model_type, config.hidden_act
                ),
            ));
        }
        check_shape(&config)?;
        let vocab = read_capped(&dir.join("vocab.txt"), VOCAB_LIMIT)?;
        let lowercase = match optional(&dir.join("tokenizer_config.json"))? {
            Some(text) => parse_json::<TokenizerConfig>("tokenizer_config.json", &text)?.do_lower_case,
            None => true,
        };
        let max_tokens = match optional(&dir.join("sentence_bert_config.json"))? {
            Some(text) => parse_json::<SentenceConfig>("sentence_bert_config.json", &text)?.max_seq_length,
            None => None,
        }
        .unwrap_or(config.max_position_embeddings)
        .clamp(2, config.max_position_embeddings);
        let pooling = match optional(&dir.join("1_Pooling/config.json"))? {
            Some(text) => pooling(&parse_json("1_Pooling/config.json", &text)?)?,
            None => Pooling::Mean,
        };
        let weights = Weights::map(&dir.join("model.safetensors"))?;
        let mut digest = Sha256::new();
        for part in [config_text.as_bytes(), vocab.as_bytes(), weights.header()] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        digest.update([lowercase as u8, pooling as u8]);
        digest.update((max_tokens as u64).to_le_bytes());
        let identity = digest
            .finalize()
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Self {
            config,
            vocab,
            lowercase,
            max_tokens,
            pooling,
            weights,
            identity,
        })
    }
}

fn check_shape(c: &Config) -> Result<(), EmbedError> {
    let sane = c.hidden_size > 0
        && c.num_attention_heads > 0
        && c.hidden_size.is_multiple_of(c.num_attention_heads)
        && (1..=64).contains(&c.num_hidden_layers)
        && c.hidden_size <= 8192
        && c.intermediate_size > 0
        && c.intermediate_size <= 65536
        && c.vocab_size > 0
        && (2..=MAX_POSITIONS).contains(&c.max_position_embeddings)
        && c.type_vocab_size > 0
        && c.layer_norm_eps.is_finite();
    if sane {
        Ok(())
    } else {
        Err(EmbedError::malformed(
            "config.json",
            "gives sizes no BERT encoder has",
        ))
    }
}

fn pooling(p: &PoolingConfig) -> Result<Pooling, EmbedError> {
    match (
        p.pooling_mode_mean_tokens,
        p.pooling_mode_cls_token,
        p.pooling_mode_max_tokens,
        p.pooling_mode_mean_sqrt_len_tokens,
    ) {
        (true, false, false, false) => Ok(Pooling::Mean),
        (false, true, false, false) => Ok(Pooling::Cls),
        _ => Err(EmbedError::malformed(
            "1_Pooling/config.json",
            "asks for a pooling other than the mean of the tokens or the [CLS] token",
        )),
    }
}

fn parse_json<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<T, EmbedError> {
    serde_json::from_str(text).map_err(|e| EmbedError::malformed(file, format!("is not valid: {e}")))
}

fn open(path: &Path, limit: u64) -> Result<File, EmbedError> {
    let read_error = |source| EmbedError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let size = file.metadata().map_err(read_error)?.len();
    if size > limit {
        return Err(EmbedError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
        });
    }
    Ok(file)
}

fn read_capped(path: &Path, limit: u64) -> Result<String, EmbedError> {
    let mut text = String::new();
    // `take` too: the file may grow between the size check and the read.
    open(path, limit)?
        .take(limit)
        .read_to_string(&mut text)
        .map_err(|source| EmbedError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(text)
}

fn optional(path: &Path) -> Result<Option<String>, EmbedError> {
    if path.exists() {
        read_capped(path, JSON_LIMIT).map(Some)
    } else {
        Ok(None)
    }
}

/// A tensor of the weights file: where its `f32`s are in [`Weights::floats`] (its shape was
/// checked when it was found).
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// `model.safetensors`, mapped read-only, with its tensor table parsed.
pub(crate) struct Weights {
    map: memmap2::Mmap,
    /// The file's size and time of change: what its halved copy is kept under, with the
    /// model's identity ([`crate::Embedder::load_cached`]).
    pub(crate) stamp: String,
    header_len: usize,
    tensors: std::collections::HashMap<String, safetensors::tensor::TensorInfo>,
    /// Whether names carry the `bert.` prefix of a model saved from a task head.
    prefix: &'static str,
}

/// Map `file` (at `path`) read-only: the weights, or their halved copy.
pub(crate) fn map_read_only(file: &File, path: &Path) -> Result<memmap2::Mmap, EmbedError> {
    // SAFETY: the map is read-only and private. Its one hazard is another process changing or
    // truncating the file while it is mapped. The model folder is the user's own, given by the
    // user, and ctxkit never writes it (SECURITY.md: a trusted path); a halved copy in the
    // cache folder is only ever replaced whole, by rename, never written in place.
    #[allow(unsafe_code)]
    unsafe { memmap2::Mmap::map(file) }.map_err(|source| EmbedError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl Weights {
    fn map(path: &Path) -> Result<Self, EmbedError> {
        if cfg!(target_endian = "big") {
            return Err(EmbedError::malformed(
                "model.safetensors",
                "is little-endian and this machine is not; its weights cannot be used in place",
            ));
        }
        let file = open(path, WEIGHTS_LIMIT)?;
        let stamp = file
            .metadata()
            .map(|m| format!("{} {:?}", m.len(), m.modified().ok()))
            .unwrap_or_default();
        let map = map_read_only(&file, path)?;
        let (header_len, metadata) = safetensors::SafeTensors::read_metadata(&map)
            .map_err(|e| EmbedError::malformed("model.safetensors", format!("has no valid header: {e}")))?;
        let tensors = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| (name, info.clone()))
            .collect();
        let mut weights = Self {
            map,
            stamp,
            header_len: header_len + 8,
            tensors,
            prefix: "",
        };
        if !weights.tensors.contains_key("embeddings.word_embeddings.weight")
            && weights
                .tensors
                .contains_key("bert.embeddings.word_embeddings.weight")
        {
            weights.prefix = "bert.";
        }
        Ok(weights)
    }

    /// The header (the table of contents), which names every tensor, its type, shape and place.
    fn header(&self) -> &[u8] {
        &self.map[..self.header_len]
    }

    /// The whole file as `f32`s; [`Weights::tensor`] checked every tensor handed out lies on
    /// a 4-byte boundary inside it.
    pub(crate) fn floats(&self) -> &[f32] {
        let whole = self.map.len() / 4 * 4;
        bytemuck::cast_slice(&self.map[..whole])
    }

    /// The `f32` tensor `name` of exactly `shape`.
    pub(crate) fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let info = self
            .tensors
            .get(&full)
            .ok_or_else(|| EmbedError::malformed("model.safetensors", format!("has no tensor `{full}`")))?;
        if info.dtype != safetensors::Dtype::F32 || info.shape != shape {
            return Err(EmbedError::malformed(
                "model.safetensors",
                format!(
                    "stores `{full}` as {:?} {:?}, not F32 {shape:?}",
                    info.dtype, info.shape
                ),
            ));
        }
        let (from, to) = info.data_offsets;
        let start = self.header_len + from;
        let end = self.header_len + to;
        let aligned = start.is_multiple_of(4) && (self.map.as_ptr() as usize).is_multiple_of(4);
        if !aligned || end > self.map.len() || end - start != 4 * shape.iter().product::<usize>() {
            return Err(EmbedError::malformed(
                "model.safetensors",
                format!("stores `{full}` outside the file or off a 4-byte boundary"),
            ));
        }
        Ok(Tensor {
            start: start / 4,
            len: (end - start) / 4,
        })
    }
}
