//! The BERT encoder's forward pass over sentences, on weights borrowed from the mapped file.
//!
//! Several sentences go through the dense layers as one stack of tokens, with no padding; each
//! attends only to its own tokens, so no attention mask is needed.

use std::ops::Range;
use std::path::Path;

use crate::error::EmbedError;
use crate::halved::Halved;
use crate::kernel::{linear, panels_len, Matrix};
use crate::math::{dot, gelu, softmax, sum};
use crate::model::{Config, ModelFiles, Pooling, Tensor, Weights};
use multiversion::multiversion;

/// `nn.Linear`: `[out, in]` weights and an `[out]` bias.
struct Dense {
    weight: Tensor,
    bias: Tensor,
    inputs: usize,
    /// Where its weights are in the halved copy, when there is one ([`Bert::halve`]).
    halved: Option<Range<usize>>,
}

/// `nn.LayerNorm` over the hidden size.
struct Norm {
    weight: Tensor,
    bias: Tensor,
}

struct Layer {
    query: Dense,
    key: Dense,
    value: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    up: Dense,
    down: Dense,
    out_norm: Norm,
}

impl Layer {
    /// The dense layers, in the order a halved copy keeps their weights.
    fn dense(&mut self) -> [&mut Dense; 6] {
        let Layer {
            query,
            key,
            value,
            attention_out,
            up,
            down,
            ..
        } = self;
        [query, key, value, attention_out, up, down]
    }
}

/// The encoder: where each tensor is, and the shapes that were checked against the file.
pub(crate) struct Bert {
    words: Tensor,
    positions: Tensor,
    token_types: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    eps: f32,
    pooling: Pooling,
}

impl Bert {
    /// Find and check every tensor the forward pass reads.
    pub(crate) fn locate(files: &ModelFiles) -> Result<Self, EmbedError> {
        let c: &Config = &files.config;
        let w = &files.weights;
        let h = c.hidden_size;
        let dense = |name: &str, outputs: usize, inputs: usize| -> Result<Dense, EmbedError> {
            Ok(Dense {
                weight: w.tensor(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: w.tensor(&format!("{name}.bias"), &[outputs])?,
                inputs,
                halved: None,
            })
        };
        let norm = |name: &str| -> Result<Norm, EmbedError> {
            Ok(Norm {
                weight: w.tensor(&format!("{name}.weight"), &[h])?,
                bias: w.tensor(&format!("{name}.bias"), &[h])?,
            })
        };
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    query: dense(&format!("{p}.attention.self.query"), h, h)?,
                    key: dense(&format!("{p}.attention.self.key"), h, h)?,
                    value: dense(&format!("{p}.attention.self.value"), h, h)?,
                    attention_out: dense(&format!("{p}.attention.output.dense"), h, h)?,
                    attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                    up: dense(&format!("{p}.intermediate.dense"), c.intermediate_size, h)?,
                    down: dense(&format!("{p}.output.dense"), h, c.intermediate_size)?,
                    out_norm: norm(&format!("{p}.output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, EmbedError>>()?;
        Ok(Self {
            words: w.tensor("embeddings.word_embeddings.weight", &[c.vocab_size, h])?,
            positions: w.tensor(
                "embeddings.position_embeddings.weight",
                &[c.max_position_embeddings, h],
            )?,
            token_types: w.tensor("embeddings.token_type_embeddings.weight", &[c.type_vocab_size, h])?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            hidden: h,
            heads: c.num_attention_heads,
            eps: c.layer_norm_eps,
            pooling: files.pooling,
        })
    }

    /// Read the dense layers' weights from their halved copy kept under `key` in the folder
    /// `cache`, built first if it is missing or not this model's; `None` (and the `f32` weights
    /// kept) when there can be none.
    pub(crate) fn halve(&mut self, weights: &Weights, cache: &Path, key: &str) -> Option<Halved> {
        let f = weights.floats();
        let sources: Vec<(&[f32], usize)> = self
            .layers
            .iter_mut()
            .flat_map(Layer::dense)
            .map(|d| (&f[d.weight.start..][..d.weight.len], d.inputs))
            .collect();
        let halved = Halved::open_or_build(cache, key, &sources)?;
        let mut at = 0;
        for d in self.layers.iter_mut().flat_map(Layer::dense) {
            let len = panels_len(d.weight.len / d.inputs, d.inputs);
            d.halved = Some(at..at + len);
            at += len;
        }
        Some(halved)
    }

    /// The length of a sentence vector.
    pub(crate) fn dimensions(&self) -> usize {
        self.hidden
    }

    /// The sentence vectors of `sentences` (token ids, each at most the model's positions long
    /// and below its vocabulary size: the tokenizer guarantees both), unit length.
    ///
    /// The sentences' tokens are stacked into one matrix for the dense layers, so a batch
    /// streams the weights once instead of once per sentence; attention and pooling stay
    /// within each sentence, so the result is the same as one sentence at a time.
    pub(crate) fn forward(
        &self,
        weights: &Weights,
        halved: Option<&Halved>,
        sentences: &[Vec<u32>],
    ) -> Vec<Vec<f32>> {
        let f = weights.floats();
        let t = |t: &Tensor| &f[t.start..t.start + t.len];
        let matrix = |d: &Dense| match (halved, &d.halved) {
            (Some(h), Some(at)) => Matrix::Panels(&h.values()[at.clone()]),
            _ => Matrix::F32(t(&d.weight)),
        };
        let h = self.hidden;
        let (words, positions, types) = (t(&self.words), t(&self.positions), t(&self.token_types));
        let total: usize = sentences.iter().map(Vec::len).sum();
        let mut x = Vec::with_capacity(total * h);
        let mut spans = Vec::with_capacity(sentences.len());
        for ids in sentences {
            spans.push(x.len() / h..x.len() / h + ids.len());
            for (position, &id) in ids.iter().enumerate() {
                let word = &words[id as usize * h..][..h];
                let at = &positions[position * h..][..h];
                x.extend((0..h).map(|i| word[i] + at[i] + types[i]));
            }
        }
        self.norm(&mut x, &self.embedding_norm, f);
        for layer in &self.layers {
            let dense = |x: &[f32], d: &Dense| linear(x, d.inputs, matrix(d), t(&d.bias));
            let (q, k, v) = (
                dense(&x, &layer.query),
                dense(&x, &layer.key),
                dense(&x, &layer.value),
            );
            let mut context = vec![0f32; x.len()];
            for span in &spans {
                let rows = span.start * h..span.end * h;
                self.attention(
                    &q[rows.clone()],
                    &k[rows.clone()],
                    &v[rows.clone()],
                    &mut context[rows],
                );
            }
            add(&mut x, &dense(&context, &layer.attention_out));
            self.norm(&mut x, &layer.attention_norm, f);
            let mut inner = dense(&x, &layer.up);
            gelu(&mut inner);
            add(&mut x, &dense(&inner, &layer.down));
            self.norm(&mut x, &layer.out_norm, f);
        }
        spans
            .into_iter()
            .map(|span| self.pool(&x[span.start * h..span.end * h]))
            .collect()
    }

    /// One sentence's token vectors to its unit-length sentence vector.
    fn pool(&self, tokens: &[f32]) -> Vec<f32> {
        let h = self.hidden;
        let mut pooled = match self.pooling {
            Pooling::Cls => tokens[..h].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; h];
                for token in tokens.chunks_exact(h) {
                    add(&mut sum, token);
                }
                let n = (tokens.len() / h).max(1) as f32;
                sum.iter_mut().for_each(|v| *v /= n);
                sum
            }
        };
        let length = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        pooled.iter_mut().for_each(|v| *v /= length);
        pooled
    }

    /// Scaled dot-product self-attention, head by head, every token seeing every other.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) {
        attention(q, k, v, out, self.hidden, self.heads);
    }

    fn norm(&self, x: &mut [f32], norm: &Norm, f: &[f32]) {
        let (weight, bias) = (
            &f[norm.weight.start..][..norm.weight.len],
            &f[norm.bias.start..][..norm.bias.len],
        );
        layer_norm(x, self.hidden, weight, bias, self.eps);
    }
}

/// [`Bert::attention`], compiled for the wider vector units too.
///
/// Each head's keys are first transposed, so that a token's scores against every other are
/// sums of whole rows (vectorized across the tokens) rather than one short dot product each.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn attention(q: &[f32], k: &[f32], v: &[f32], out: &mut [f32], h: usize, heads: usize) {
    let d = h / heads;
    let n = q.len() / h;
    let scale = 1.0 / (d as f32).sqrt();
    let mut scores = vec![0f32; n];
    let mut keys = vec![0f32; d * n];
    for head in 0..heads {
        let cols = head * d..(head + 1) * d;
        for (j, key) in k.chunks_exact(h).enumerate() {
            for (c, value) in key[cols.clone()].iter().enumerate() {
                keys[c * n + j] = *value;
            }
        }
        for i in 0..n {
            scores.fill(0.0);
            for (qc, keys) in q[i * h..][cols.clone()].iter().zip(keys.chunks_exact(n)) {
                let qc = qc * scale;
                scores.iter_mut().zip(keys).for_each(|(s, k)| *s += qc * k);
            }
            softmax(&mut scores);
            let oi = &mut out[i * h..][cols.clone()];
            for (j, p) in scores.iter().enumerate() {
                let vj = &v[j * h..][cols.clone()];
                oi.iter_mut().zip(vj).for_each(|(o, v)| *o += p * v);
            }
        }
    }
}

/// `nn.LayerNorm` of each `h`-long row of `x`, compiled for the wider vector units too.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn layer_norm(x: &mut [f32], h: usize, weight: &[f32], bias: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = sum(row) / h as f32;
        row.iter_mut().for_each(|v| *v -= mean);
        let var = dot(row, row) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = *v * inv * w + b;
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}
