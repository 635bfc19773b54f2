//! The dense layers' weights halved to bfloat16 and kept in a cache file
//! ([`Embedder::load_cached`](crate::Embedder::load_cached)).
//!
//! A sentence's products spend most of their time streaming the weights (42 MB of `f32` for
//! all-MiniLM-L6-v2), and a new process first faults their pages in. Halved, both take about
//! half as long; the vectors agree with the `f32` ones to a cosine of 0.9995 or better, inside
//! what a stored vector keeps. The file is built once per model, from the mapped `f32`
//! weights, and replaced by rename, so a process that maps it never sees it change.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::kernel::to_bf16;
use crate::model::map_read_only;

/// What the file starts with; the weights follow from [`HEADER`] bytes in (2-byte aligned).
const MAGIC: &[u8] = b"ctxkit-embed bf16 v1\n";
const HEADER: usize = 64;

/// The halved weights of every dense layer, in the order [`crate::bert::Bert`] reads them.
pub(crate) struct Halved {
    map: memmap2::Mmap,
}

impl Halved {
    /// The file at `path` when it holds the halves of `sources` (the `f32` weights of every
    /// dense layer, in order), else built from them first. `None` when it can neither be read
    /// nor written (a read-only cache folder): the model then computes with the `f32` weights.
    pub(crate) fn open_or_build(path: &Path, sources: &[&[f32]]) -> Option<Self> {
        let count = sources.iter().map(|s| s.len()).sum();
        if let Some(halved) = Self::open(path, count) {
            return Some(halved);
        }
        let _span = tracing::debug_span!("embedder.halve", file = %path.display(), weights = count).entered();
        if let Err(e) = build(path, sources) {
            tracing::debug!(file = %path.display(), error = %e, "the halved weights were not kept; computing with the f32 ones");
            return None;
        }
        Self::open(path, count)
    }

    /// The file at `path` if it is one of this build's files with exactly `count` weights.
    fn open(path: &Path, count: usize) -> Option<Self> {
        let file = std::fs::File::open(path).ok()?;
        if file.metadata().ok()?.len() != (HEADER + 2 * count) as u64 {
            return None;
        }
        let map = map_read_only(&file, path).ok()?;
        map.starts_with(MAGIC).then_some(Self { map })
    }

    /// Every halved weight, in order.
    pub(crate) fn values(&self) -> &[u16] {
        bytemuck::cast_slice(&self.map[HEADER..])
    }
}

/// Write the halves of `sources` to a new file beside `path`, then rename it into place.
fn build(path: &Path, sources: &[&[f32]]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let file = tempfile::NamedTempFile::new_in(dir)?;
    let mut out = BufWriter::new(file);
    let mut header = [0u8; HEADER];
    header[..MAGIC.len()].copy_from_slice(MAGIC);
    out.write_all(&header)?;
    for weights in sources {
        for chunk in weights.chunks(8192) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|&v| to_bf16(v).to_le_bytes()).collect();
            out.write_all(&bytes)?;
        }
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
