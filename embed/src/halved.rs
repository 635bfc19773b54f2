//! The dense layers' weights halved to bfloat16, laid out in the kernel's panels and kept in a
//! cache file ([`Embedder::load_cached`](crate::Embedder::load_cached)).
//!
//! A sentence's products read every weight (42 MB of `f32` for all-MiniLM-L6-v2), and a new
//! process first faults their pages in. Halved, both are half the bytes, and in panels the
//! kernel reads them in the order it multiplies them; the vectors agree with the `f32` ones to
//! a cosine of 0.9995 or better, inside what a stored vector keeps. The file is built once per
//! model, from the mapped `f32` weights, and replaced by rename, so a process that maps it
//! never sees it change.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::kernel::{panels_len, to_panels};
use crate::model::map_read_only;

/// What the file starts with; the weights follow from [`HEADER`] bytes in (2-byte aligned).
const MAGIC: &[u8] = b"ctxkit-embed bf16 panels v2\n";
const HEADER: usize = 64;
/// How many halved copies a cache folder keeps (about 21 MB each for all-MiniLM-L6-v2): a
/// changed or another model adds one, and the oldest beyond this are removed when one is
/// written (one still in use is rebuilt on its next load).
const KEEP: usize = 4;

/// The halved weights of every dense layer, in the order [`crate::bert::Bert`] reads them.
pub(crate) struct Halved {
    map: memmap2::Mmap,
}

impl Halved {
    /// The copy kept under `key` in the folder `cache` when it holds the panels of `sources`
    /// (the `f32` weights of every dense layer, in order, each with its row length), else
    /// built from them first. `None` when it can neither be read nor written (a read-only
    /// cache folder): the model then computes with the `f32` weights.
    pub(crate) fn open_or_build(cache: &Path, key: &str, sources: &[(&[f32], usize)]) -> Option<Self> {
        let path = cache.join(format!("{PREFIX}{key}{SUFFIX}"));
        let count = sources.iter().map(|&(w, k)| panels_len(w.len() / k, k)).sum();
        if let Some(halved) = Self::open(&path, count) {
            return Some(halved);
        }
        let _span = tracing::debug_span!("embedder.halve", file = %path.display(), weights = count).entered();
        if let Err(e) = build(&path, sources) {
            tracing::debug!(file = %path.display(), error = %e, "the halved weights were not kept; computing with the f32 ones");
            return None;
        }
        prune(cache, &path);
        Self::open(&path, count)
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

    /// Every dense layer's panels, in order.
    pub(crate) fn values(&self) -> &[u16] {
        bytemuck::cast_slice(&self.map[HEADER..])
    }
}

/// The names of the copies in a cache folder: `embed-<key>.bf16`.
const PREFIX: &str = "embed-";
const SUFFIX: &str = ".bf16";

/// Remove the oldest copies in `cache` but `kept`, so that at most [`KEEP`] remain.
fn prune(cache: &Path, kept: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    let mut copies: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(PREFIX) && name.ends_with(SUFFIX) && e.path() != kept
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    copies.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (_, old) in copies.into_iter().skip(KEEP - 1) {
        let _ = std::fs::remove_file(old);
    }
}

/// Write the panels of `sources` to a new file beside `path`, then rename it into place.
fn build(path: &Path, sources: &[(&[f32], usize)]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let file = tempfile::NamedTempFile::new_in(dir)?;
    let mut out = BufWriter::new(file);
    let mut header = [0u8; HEADER];
    header[..MAGIC.len()].copy_from_slice(MAGIC);
    out.write_all(&header)?;
    for &(weights, k) in sources {
        for half in to_panels(weights, k) {
            out.write_all(&half.to_le_bytes())?;
        }
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
