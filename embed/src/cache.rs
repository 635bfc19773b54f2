//! [`VectorCache`]: sentence vectors kept in a file between processes, keyed by the model and
//! the text, so what one process embedded (hundreds of skill descriptions take seconds) the
//! next reads back in a millisecond.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::Embedder;

/// The largest cache file read: a few thousand texts of a 1,024-dimension model. A larger
/// one is ignored, and rewritten with what is embedded next.
const LIMIT: u64 = 64 << 20;
/// The first bytes of a cache file (named for its first use: the skills' descriptions).
const MAGIC: &[u8; 24] = b"ctxkit-skill-vectors v1\n";

/// Vectors kept in one file, keyed by a digest of the model's identity and the text: a text
/// embedded once, by any process, is not embedded again while the file holds it.
///
/// The file is derived data. One that is damaged, too large, of another model's size, or not a
/// regular file (a FIFO there is never waited for) is ignored and rewritten whole (by rename,
/// so a reader never sees half of it); an entry whose vector is not one a model makes
/// ([`is_unit`](crate::is_unit): NaN, or not of unit length) is ignored, so its text is
/// embedded again and the entry rewritten. A file that cannot be written costs the next process
/// the embedding again, with a warning.
#[derive(Clone, Debug)]
pub struct VectorCache {
    file: PathBuf,
}

impl VectorCache {
    /// A cache kept in `file` (created with its folder when first written).
    pub fn new(file: PathBuf) -> Self {
        VectorCache { file }
    }

    /// The file it is kept in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The vectors of `texts` the file holds, in order (`None` for the others); nothing is
    /// embedded.
    pub fn known(&self, model: &Embedder, texts: &[&str]) -> Vec<Option<Vec<f32>>> {
        let known = self.read(model);
        texts.iter().map(|t| known.get(&key(model, t)).cloned()).collect()
    }

    /// The vectors of `texts`, in order: those the file lacks are embedded in one batch and
    /// kept.
    pub fn embed(&self, model: &Embedder, texts: &[&str]) -> Vec<Vec<f32>> {
        let mut known = self.read(model);
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| key(model, t)).collect();
        let mut asked = std::collections::HashSet::new();
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| !known.contains_key(&keys[i]) && asked.insert(keys[i]))
            .collect();
        if !missing.is_empty() {
            let _span = tracing::info_span!("embedder.embed_uncached", texts = missing.len()).entered();
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in missing.iter().zip(model.embed_batch(&batch)) {
                known.insert(keys[i], vector);
            }
            self.write(&known);
        }
        keys.iter()
            .map(|k| known.get(k).cloned().unwrap_or_default())
            .collect()
    }

    /// The kept vectors of `model`'s dimensions; empty when there is no usable file.
    fn read(&self, model: &Embedder) -> HashMap<[u8; 32], Vec<f32>> {
        let mut known = HashMap::new();
        let mut bytes = Vec::new();
        let read = ctxkit::files::open_regular(&self.file)
            .ok()
            .and_then(|f| f.take(LIMIT).read_to_end(&mut bytes).ok());
        let Some(entries) = read.and_then(|_| bytes.strip_prefix(MAGIC)) else {
            return known;
        };
        let entry = 32 + 4 * model.dimensions();
        if !entries.len().is_multiple_of(entry) {
            return known;
        }
        for chunk in entries.chunks_exact(entry) {
            let (key, floats) = chunk.split_at(32);
            let vector: Vec<f32> = floats
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if crate::is_unit(vector.iter().copied()) {
                known.insert(key.try_into().unwrap_or([0; 32]), vector);
            }
        }
        known
    }

    /// Write every known vector, replacing the file in one rename.
    fn write(&self, known: &HashMap<[u8; 32], Vec<f32>>) {
        let mut bytes = MAGIC.to_vec();
        for (key, vector) in known {
            bytes.extend_from_slice(key);
            vector
                .iter()
                .for_each(|f| bytes.extend_from_slice(&f.to_le_bytes()));
        }
        let written = self
            .file
            .parent()
            .ok_or(std::io::Error::from(std::io::ErrorKind::NotFound))
            .and_then(|dir| {
                std::fs::create_dir_all(dir)?;
                let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
                tmp.write_all(&bytes)?;
                tmp.persist(&self.file).map_err(|e| e.error)?;
                Ok::<(), std::io::Error>(())
            });
        if let Err(e) = written {
            tracing::warn!(file = %self.file.display(), error = %e, "cannot keep the embedded vectors");
        }
    }
}

/// The key of `text`'s vector by `model`.
fn key(model: &Embedder, text: &str) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(model.id().as_bytes());
    digest.update([0]);
    digest.update(text.as_bytes());
    digest.finalize().into()
}
