//! Meaning beside words: each memory's sentence vector, when a model is configured
//! ([`OpenOptions::embeddings`](crate::OpenOptions::embeddings)), and how search blends it with
//! the lexical score. Written once; both backends store the encoded vector in the memory's row
//! (with the model's identity) and hand the project's vectors to [`nearest`].
//!
//! Without a model nothing here runs: rows keep no vector and search is lexical only.

use std::collections::HashMap;
use std::sync::Arc;

use ctxkit_embed::Embedder;

use crate::error::MemoryError;

/// How many memories the vector scan adds to the lexical candidates (the nearest ones).
pub(crate) const SEMANTIC_CANDIDATES: usize = 50;

/// The blend of what the words say ([`words_score`](crate::retrieval::words_score)) and the
/// cosine of the sentence vectors: `score = (1 - weight) · words + weight · cosine`, where a
/// memory that shares no word with the query is kept only when its cosine reaches `floor`.
///
/// The shipped values (0.90, 0.10) were the best of a grid on the odd-numbered queries of the
/// evaluation set (`ctxkit bench memory --embeddings DIR --tune`) and are reported on the
/// even-numbered ones, where the hybrid matches cosine alone (recall@5 0.924, MRR 0.880 against
/// 0.879); on the whole set it is 0.920 / 0.846 against 0.916 / 0.834 for cosine alone and
/// 0.731 / 0.594 for words alone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Blend {
    pub(crate) weight: f32,
    pub(crate) floor: f32,
}

impl Default for Blend {
    fn default() -> Self {
        Blend {
            weight: 0.90,
            floor: 0.10,
        }
    }
}

impl Blend {
    /// The score of a memory whose words score `words` (`None` when it shares no word with
    /// the query) and whose cosine is `cosine`; `None` when it is not kept.
    pub(crate) fn score(&self, words: Option<f32>, cosine: f32) -> Option<f32> {
        if words.is_none() && cosine < self.floor {
            return None;
        }
        Some((1.0 - self.weight) * words.unwrap_or(0.0) + self.weight * cosine.max(0.0))
    }
}

/// A sentence-embedding model as a store uses it: the model and the blend.
#[derive(Clone)]
pub(crate) struct Semantic {
    model: Arc<Embedder>,
    pub(crate) blend: Blend,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("model", &self.model.id())
            .field("blend", &self.blend)
            .finish()
    }
}

impl Semantic {
    pub(crate) fn new(model: Arc<Embedder>) -> Self {
        Semantic {
            model,
            blend: Blend::default(),
        }
    }

    /// The model's identity, stored beside every vector it made.
    pub(crate) fn model_id(&self) -> &str {
        self.model.id()
    }

    /// Start embedding a query on a thread of its own, so a search reads its lexical
    /// candidates and the stored vectors meanwhile: the search then costs about the longer of
    /// the two, not their sum. The model remembers its latest texts, so a message embedded
    /// already (a preview and its run, or a hook's skills) is not embedded again.
    pub(crate) fn start_query(&self, text: &str) -> Result<QueryVector, MemoryError> {
        let (model, text) = (self.model.clone(), text.to_owned());
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let span = tracing::debug_span!("memory.embed_query", chars = text.len());
        std::thread::Builder::new()
            .name("ctxkit-embed-query".into())
            .spawn(move || {
                let _ = sender.send(span.in_scope(|| model.embed(&text)));
            })
            .map_err(|e| MemoryError::Task(format!("cannot start embedding the query: {e}")))?;
        Ok(QueryVector {
            state: Query::Coming(receiver),
            dimensions: self.model.dimensions(),
        })
    }

    /// Encoded vectors of `contents`, computed together (a batch is several times faster
    /// per text than one at a time).
    pub(crate) fn prepare<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> Vectors {
        let mut texts: Vec<&str> = contents.into_iter().collect();
        texts.sort_unstable();
        texts.dedup();
        let _span = tracing::debug_span!("memory.embed_memories", texts = texts.len()).entered();
        let ready = texts
            .iter()
            .zip(self.model.embed_batch(&texts))
            .map(|(t, v)| (t.to_string(), encode(&v)))
            .collect();
        Vectors {
            semantic: self.clone(),
            ready,
        }
    }
}

/// A query's vector being computed ([`Semantic::start_query`]).
pub(crate) struct QueryVector {
    state: Query,
    /// The model's: what the vector's length will be.
    dimensions: usize,
}

/// Where a query's vector is.
enum Query {
    Coming(tokio::sync::oneshot::Receiver<Vec<f32>>),
    Come(Vec<f32>),
    /// Its thread ended without one (it panicked): every wait says so.
    Stopped,
}

impl QueryVector {
    /// A vector being computed on another thread, sent on `receiver`.
    #[cfg(test)]
    pub(crate) fn coming(receiver: tokio::sync::oneshot::Receiver<Vec<f32>>, dimensions: usize) -> Self {
        QueryVector {
            state: Query::Coming(receiver),
            dimensions,
        }
    }

    /// How many dimensions the vector has.
    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Wait for the vector, blocking the thread (SQLite's calls run on the blocking pool).
    pub(crate) fn wait(&mut self) -> Result<&[f32], MemoryError> {
        self.state = match std::mem::replace(&mut self.state, Query::Stopped) {
            Query::Coming(receiver) => receiver.blocking_recv().map_or(Query::Stopped, Query::Come),
            settled => settled,
        };
        self.vector()
    }

    /// Wait for the vector without blocking the runtime (PostgreSQL's calls are async).
    #[cfg(feature = "postgres")]
    pub(crate) async fn get(&mut self) -> Result<&[f32], MemoryError> {
        self.state = match std::mem::replace(&mut self.state, Query::Stopped) {
            Query::Coming(receiver) => receiver.await.map_or(Query::Stopped, Query::Come),
            settled => settled,
        };
        self.vector()
    }

    /// The vector once waited for.
    fn vector(&self) -> Result<&[f32], MemoryError> {
        match &self.state {
            Query::Come(vector) => Ok(vector),
            Query::Coming(_) | Query::Stopped => Err(stopped()),
        }
    }
}

/// The error of a query whose embedding thread ended without a vector (it panicked).
fn stopped() -> MemoryError {
    MemoryError::Task("embedding the query stopped before it finished".into())
}

/// The vectors a write stores, computed before its transaction; a content the write did not
/// announce (a merge's result, an undone deletion) is embedded when it is stored.
#[derive(Clone)]
pub(crate) struct Vectors {
    semantic: Semantic,
    ready: HashMap<String, Vec<u8>>,
}

impl Vectors {
    /// The model identity and encoded vector to store with a memory of this content.
    pub(crate) fn of(&mut self, content: &str) -> (String, Vec<u8>) {
        let model = self.semantic.model_id().to_owned();
        if let Some(v) = self.ready.get(content) {
            return (model, v.clone());
        }
        let v = encode(&self.semantic.model.embed(content));
        self.ready.insert(content.to_owned(), v.clone());
        (model, v)
    }
}

/// The error of a call that needs a model when none is configured.
pub(crate) fn no_model() -> MemoryError {
    MemoryError::Invalid(
        "no sentence-embedding model is configured; give one (a sentence-transformers folder such as \
         all-MiniLM-L6-v2) with OpenOptions::embeddings, or to the CLI with --embeddings DIR or $CTXKIT_EMBEDDINGS"
            .into(),
    )
}

/// A vector as stored: its largest magnitude as a little-endian `f32` scale, then each
/// component as a signed byte of that scale (384 dimensions: 388 bytes, a quarter of the
/// floats; cosines move by about 0.002, which reorders no evaluation query).
pub(crate) fn encode(v: &[f32]) -> Vec<u8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out = Vec::with_capacity(4 + v.len());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
    );
    out
}

/// Whether an encoded vector ([`encode`]) decodes to one a model makes: a finite positive
/// scale and unit length ([`ctxkit_embed::is_unit`]). Its length is checked against the query's
/// by [`dot`].
pub(crate) fn is_sound(stored: &[u8]) -> bool {
    let Some((scale, components)) = stored.split_first_chunk::<4>() else {
        return false;
    };
    let scale = f32::from_le_bytes(*scale);
    scale.is_finite()
        && scale > 0.0
        && ctxkit_embed::is_unit(components.iter().map(|&c| f32::from(c as i8) * scale))
}

/// The dot product of a query vector with a stored one; `None` when the stored one is not of
/// the query's length (another model's, or damaged). Always inlined, so [`cosines`] compiles
/// it for the processor's vector width.
#[inline(always)]
pub(crate) fn dot(query: &[f32], stored: &[u8]) -> Option<f32> {
    let (scale, components) = stored.split_first_chunk::<4>()?;
    if components.len() != query.len() {
        return None;
    }
    let scale = f32::from_le_bytes(*scale);
    // Sixteen running sums, so the compiler keeps them in vector registers (one sum is a chain
    // of dependent additions it may not reorder).
    let mut sums = [0f32; 16];
    let (q_chunks, q_rest) = query.as_chunks::<16>();
    let (c_chunks, c_rest) = components.as_chunks::<16>();
    for (q, c) in q_chunks.iter().zip(c_chunks) {
        for i in 0..16 {
            sums[i] += q[i] * f32::from(c[i] as i8);
        }
    }
    let rest: f32 = q_rest
        .iter()
        .zip(c_rest)
        .map(|(q, &c)| q * f32::from(c as i8))
        .sum();
    Some((sums.iter().sum::<f32>() + rest) * scale)
}

/// Cosines of the query with every stored vector, and the rows of the `limit` nearest.
pub(crate) struct Nearest {
    /// `(row, cosine)` in row order, so a candidate's cosine is a binary search away (a hash
    /// map of a hundred thousand rows cost more to build than the dot products).
    cosines: Vec<(i64, f32)>,
    pub(crate) best: Vec<i64>,
}

impl Nearest {
    /// The query's cosine with row `num`'s vector, if it has one from this model.
    pub(crate) fn cosine(&self, num: i64) -> Option<f32> {
        let at = self.cosines.binary_search_by_key(&num, |(n, _)| *n).ok()?;
        Some(self.cosines[at].1)
    }

    /// The nearest rows that are not among `rows` (the lexical candidates' row numbers) yet,
    /// nearest first.
    pub(crate) fn not_in(&self, rows: impl IntoIterator<Item = i64>) -> Vec<i64> {
        let have: std::collections::HashSet<i64> = rows.into_iter().collect();
        self.best.iter().copied().filter(|n| !have.contains(n)).collect()
    }
}

/// Stored vectors as a backend reads them: row numbers and encoded vectors, the vectors in one
/// buffer (many small allocations cost more than their reading).
#[derive(Default)]
pub(crate) struct Stored {
    rows: Vec<(i64, std::ops::Range<usize>)>,
    bytes: Vec<u8>,
}

impl Stored {
    /// Keep row `num`'s encoded vector, unless it is not one a model makes ([`is_sound`]): a
    /// damaged one is left out as if missing, so its memory is found by its words only (and
    /// `embed_missing` recomputes it) instead of ranking first for every query.
    pub(crate) fn push(&mut self, num: i64, vector: &[u8]) {
        if !is_sound(vector) {
            tracing::debug!(row = num, "a damaged stored vector is ignored");
            return;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(vector);
        self.rows.push((num, start..self.bytes.len()));
    }
}

/// The query's dot product with each stored vector of its length, compiled for AVX-512 and
/// AVX2 too and chosen at run time: a hundred thousand vectors are 38 million products.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "aarch64+neon"
))]
fn cosines(query: &[f32], stored: &Stored) -> Vec<(i64, f32)> {
    stored
        .rows
        .iter()
        .filter_map(|(num, at)| Some((*num, dot(query, &stored.bytes[at.clone()])?)))
        .collect()
}

/// Score every stored vector of a project against the query.
pub(crate) fn nearest(query: &[f32], stored: &Stored, limit: usize) -> Nearest {
    let mut cosines = cosines(query, stored);
    // Backends read the vectors in row order; sorting what already is costs one pass.
    cosines.sort_unstable_by_key(|(num, _)| *num);
    let nearest_first = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0));
    let mut ranked = cosines.clone();
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, nearest_first);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(nearest_first);
    let best = ranked.into_iter().map(|(num, _)| num).collect();
    Nearest { cosines, best }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_vector_keeps_its_cosine() {
        let a: Vec<f32> = (0..384).map(|i| ((i * 37 % 101) as f32 - 50.0) / 400.0).collect();
        let b: Vec<f32> = (0..384).map(|i| ((i * 53 % 97) as f32 - 48.0) / 400.0).collect();
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let stored = encode(&b);
        assert_eq!(stored.len(), 388);
        let got = dot(&a, &stored).unwrap();
        assert!(
            (got - exact).abs() < 0.01 * exact.abs().max(1.0),
            "{got} vs {exact}"
        );
        assert_eq!(dot(&a[..10], &stored), None, "another length is not compared");
        assert_eq!(dot(&a, &[1, 2]), None);
        assert_eq!(dot(&a, &encode(&vec![0.0; 384])), Some(0.0));
    }

    #[test]
    fn the_nearest_come_first() {
        let q = vec![1.0, 0.0];
        let mut stored = Stored::default();
        stored.push(1, &encode(&[0.0, 1.0]));
        stored.push(2, &encode(&[1.0, 0.0]));
        stored.push(3, &encode(&[0.6, 0.8]));
        stored.push(4, &[9]);
        let n = nearest(&q, &stored, 2);
        assert_eq!(n.best, [2, 3]);
        assert_eq!(n.cosine(1), Some(0.0));
        assert_eq!(n.cosine(4), None, "a damaged vector is left out");
    }

    /// A stored vector of the right length whose values no model makes (a NaN or huge scale,
    /// components far from unit length, all zeros) is left out as missing: used, the huge one
    /// would rank its memory first for every query.
    #[test]
    fn damaged_values_are_left_out_not_ranked() {
        let q = vec![0.6, 0.8];
        let sound = encode(&[0.6, 0.8]);
        let with_scale = |scale: f32| {
            let mut v = sound.clone();
            v[..4].copy_from_slice(&scale.to_le_bytes());
            v
        };
        let mut stored = Stored::default();
        stored.push(1, &sound);
        stored.push(2, &with_scale(f32::NAN));
        stored.push(3, &with_scale(1e30));
        stored.push(4, &with_scale(-0.01));
        stored.push(5, &encode(&[3.0, 4.0]));
        stored.push(6, &encode(&[0.0, 0.0]));
        let n = nearest(&q, &stored, 10);
        assert_eq!(n.best, [1]);
        assert!((n.cosine(1).unwrap() - 1.0).abs() < 0.01);
    }

    #[test]
    fn the_blend_keeps_word_matches_and_near_meanings() {
        let blend = Blend {
            weight: 0.5,
            floor: 0.3,
        };
        assert_eq!(blend.score(None, 0.2), None);
        assert_eq!(blend.score(None, 0.4), Some(0.2));
        assert_eq!(blend.score(Some(0.6), 0.0), Some(0.3));
        assert_eq!(
            blend.score(Some(0.6), -0.5),
            Some(0.3),
            "a negative cosine adds nothing"
        );
    }
}
