//! A compact first pass over a project's sentence vectors, so a search does not read them all.
//!
//! Each current vector is also kept as a sketch (two bits per dimension: 96 bytes for 384
//! dimensions, a quarter of the stored vector), packed [`PACK`] memories to a row of
//! `memory_sketches`. A search at 100,000 memories reads about 400 such rows (9.6 MB) instead
//! of 100,000 vectors (39 MB), scores every sketch against the query's own components
//! ([`first_pass`]: the query is not rounded, only the memory is), and reads the exact vectors
//! of only the [`PICKED`] best (by default), beside the lexical candidates' (see `crate::vectors`).
//!
//! The packs are derived from the rows and kept by the writers, written once for both
//! backends: a write notes each row whose vector or currency it may change ([`Touched`]), and
//! before its commit the backend reads the packs holding those rows and the rows' current
//! vectors, and [`apply`] says what to write back. An entry left for a memory that is no
//! longer current would be harmless (the exact read finds no current vector for it), and none
//! is missing for a current vector, since every vector is stored through a write that notes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;

use crate::error::MemoryError;
use crate::types::MemoryEntry;
use crate::vectors::QueryVector;

/// How many memories one pack holds: the rows `n · PACK ..< (n + 1) · PACK` of one project and
/// model. 256 keeps a pack's slot in one byte and a full pack about 12 KB.
pub(crate) const PACK: i64 = 256;

/// How many memories the first pass hands to the exact cosine by default
/// ([`OpenOptions::vector_candidate_limit`](crate::OpenOptions::vector_candidate_limit)). On 100,000 synthetic memories
/// (made-up words, the hardest case: their vectors crowd together), the exact ten nearest were
/// among the best 300 sketches 99.9 % of the time, and the fifty nearest 95.6 %.
pub(crate) const PICKED: usize = 300;

/// The pack holding row `num`, and its slot there.
pub(crate) fn place(num: i64) -> (i64, u8) {
    (num.div_euclid(PACK), num.rem_euclid(PACK) as u8)
}

/// The rows pack `pack` holds, first and last.
pub(crate) fn rows_of(pack: i64) -> (i64, i64) {
    (pack * PACK, pack * PACK + PACK - 1)
}

/// The sketch of an encoded vector (`crate::vectors::encode`): two bits per component, four
/// components to a byte, in order. The low bit is set when the component is above zero, the
/// high bit when its magnitude is above the vector's median magnitude, so a component reads
/// as −3, −1, +1 or +3. One bit per component (the signs alone) needed the best 1,000 of
/// 100,000 to hold the exact ten nearest 97.5 % of the time; two bits, the best 300, 99.9 %.
/// `None` for an encoding too short to hold a scale.
pub(crate) fn sketch(encoded: &[u8]) -> Option<Vec<u8>> {
    let (_scale, components) = encoded.split_first_chunk::<4>()?;
    let mut magnitudes: Vec<u8> = components.iter().map(|&c| (c as i8).unsigned_abs()).collect();
    let middle = magnitudes.len() / 2;
    let median = match magnitudes.is_empty() {
        true => 0,
        false => *magnitudes.select_nth_unstable(middle).1,
    };
    let mut out = vec![0u8; components.len().div_ceil(4)];
    for (i, &c) in components.iter().enumerate() {
        let c = c as i8;
        let code = u8::from(c > 0) | u8::from(c.unsigned_abs() > median) << 1;
        out[i / 4] |= code << (2 * (i % 4));
    }
    Some(out)
}

/// The value a two-bit code stands for (see [`sketch`]).
fn level(code: u8) -> f32 {
    match code & 0b11 {
        0b00 => -1.0,
        0b01 => 1.0,
        0b10 => -3.0,
        _ => 3.0,
    }
}

/// One pack as stored: the slots it holds in increasing order, and their sketches one after
/// the other, all of one width.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Pack {
    pub(crate) slots: Vec<u8>,
    pub(crate) sketches: Vec<u8>,
}

impl Pack {
    /// A pack as read, or `None` when it is damaged (slots out of order, or sketches that are
    /// not one width per slot).
    pub(crate) fn decode(slots: Vec<u8>, sketches: Vec<u8>) -> Option<Pack> {
        let ordered = slots.windows(2).all(|w| w[0] < w[1]);
        let sized = if slots.is_empty() {
            sketches.is_empty()
        } else {
            sketches.len().is_multiple_of(slots.len()) && !sketches.is_empty()
        };
        (ordered && sized).then_some(Pack { slots, sketches })
    }

    fn width(&self) -> usize {
        self.sketches.len().checked_div(self.slots.len()).unwrap_or(0)
    }

    fn remove(&mut self, slot: u8) {
        if let Ok(at) = self.slots.binary_search(&slot) {
            let w = self.width();
            self.slots.remove(at);
            self.sketches.drain(at * w..(at + 1) * w);
        }
    }

    /// Put `sketch` at `slot`. A sketch of another width than the pack's (a model whose
    /// identity did not change with its size) replaces the pack: what it held cannot be
    /// compared with the query anyway.
    fn insert(&mut self, slot: u8, sketch: &[u8]) {
        if !self.slots.is_empty() && self.width() != sketch.len() {
            *self = Pack::default();
        }
        self.remove(slot);
        let at = self.slots.partition_point(|s| *s < slot);
        self.slots.insert(at, slot);
        let w = sketch.len();
        self.sketches.splice(at * w..at * w, sketch.iter().copied());
    }
}

/// Whether storing `new` over `old` may change the row's sketch: its text (so its vector), its
/// currency or its project changes. An importance or a count does not.
pub(crate) fn changes(old: &MemoryEntry, new: &MemoryEntry) -> bool {
    old.content != new.content
        || old.superseded_by != new.superseded_by
        || old.project_path != new.project_path
}

/// The rows a write may have changed the vector or currency of (inserted with a vector,
/// re-embedded, superseded or restored, moved, deleted), by project.
#[derive(Debug, Default)]
pub(crate) struct Touched(BTreeSet<(String, i64)>);

impl Touched {
    /// Note row `num` of `project`.
    pub(crate) fn note(&mut self, project: &str, num: i64) {
        self.0.insert((project.to_owned(), num));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The packs to read before [`apply`], of every model: those holding the touched rows,
    /// and those their `current` vectors go to (a row may have moved to another project).
    pub(crate) fn packs(&self, current: &[CurrentVector]) -> BTreeSet<(String, i64)> {
        let touched = self.0.iter().map(|(p, num)| (p.clone(), place(*num).0));
        let current = current.iter().map(|(num, p, ..)| (p.clone(), place(*num).0));
        touched.chain(current).collect()
    }

    /// The rows whose current vector to read first.
    pub(crate) fn rows(&self) -> Vec<i64> {
        let nums: BTreeSet<i64> = self.0.iter().map(|(_, num)| *num).collect();
        nums.into_iter().collect()
    }
}

/// What bringing packs up to date reads and writes in a backend's transaction, with its SQL.
#[allow(async_fn_in_trait)]
pub(crate) trait Packs {
    /// The current vectors (of rows not superseded) among rows `nums`.
    async fn current_vectors(&self, nums: &[i64]) -> Result<Vec<CurrentVector>, MemoryError>;
    /// The current vectors of a project's rows `first..=last` (a damaged pack's, [`rows_of`]).
    async fn pack_vectors(&self, project: &str, rows: (i64, i64)) -> Result<Vec<CurrentVector>, MemoryError>;
    /// The stored packs, of every model, at these places (project, pack).
    async fn packs(&self, at: &BTreeSet<(String, i64)>) -> Result<Vec<PackRow>, MemoryError>;
    /// Write a pack, or delete it when it is left empty.
    async fn write_pack(&self, row: &PackRow) -> Result<(), MemoryError>;
}

/// Bring the packs holding the `touched` rows up to date with the rows: read the packs they
/// (and their current vectors) fall in, rebuild a damaged one from its rows, and write back
/// what [`apply`] says changed.
pub(crate) async fn sync(rows: &impl Packs, touched: &Touched) -> Result<(), MemoryError> {
    if touched.is_empty() {
        return Ok(());
    }
    let mut current = rows.current_vectors(&touched.rows()).await?;
    let read = rows.packs(&touched.packs(&current)).await?;
    for damaged in read.iter().filter(|r| r.content.is_none()) {
        current.extend(rows.pack_vectors(&damaged.project, rows_of(damaged.pack)).await?);
    }
    for row in apply(touched, read, current) {
        rows.write_pack(&row).await?;
    }
    Ok(())
}

/// A pack as a backend reads or writes it.
#[derive(Debug)]
pub(crate) struct PackRow {
    pub(crate) project: String,
    pub(crate) model: String,
    pub(crate) pack: i64,
    /// `None` when the pack is damaged (read) or left empty (write: delete it).
    pub(crate) content: Option<Pack>,
}

/// A touched row as it is now, when it has a current vector: `(num, project, model, encoded)`.
pub(crate) type CurrentVector = (i64, String, String, Vec<u8>);

/// What to write back after a write touched `touched`: every pack read (`packs`, those
/// [`Touched::packs`] names, of any model) loses the touched rows' slots, and every current
/// vector (`current`, what the touched rows hold now) puts its sketch in its own pack. Only
/// packs that change are returned; an empty one is to be deleted. A damaged pack read is
/// rebuilt from `current`, to which the backend adds every current vector of its rows
/// ([`rows_of`]).
pub(crate) fn apply(touched: &Touched, packs: Vec<PackRow>, current: Vec<CurrentVector>) -> Vec<PackRow> {
    type Key = (String, String, i64);
    let mut before: BTreeMap<Key, Option<Pack>> = BTreeMap::new();
    for row in packs {
        before.insert((row.project, row.model, row.pack), row.content);
    }
    let mut after: BTreeMap<Key, Pack> = before
        .iter()
        .map(|(k, p)| (k.clone(), p.clone().unwrap_or_default()))
        .collect();
    // The touched slots by pack, so each pack read (of any model) is visited once: a
    // migration touches every row of a project.
    let mut gone: BTreeMap<(&str, i64), Vec<u8>> = BTreeMap::new();
    for (project, num) in &touched.0 {
        let (pack, slot) = place(*num);
        gone.entry((project, pack)).or_default().push(slot);
    }
    for ((project, _, pack), content) in after.iter_mut() {
        for slot in gone.get(&(project.as_str(), *pack)).into_iter().flatten() {
            content.remove(*slot);
        }
    }
    for (num, project, model, encoded) in current {
        let (pack, slot) = place(num);
        if let Some(sketch) = sketch(&encoded) {
            after
                .entry((project, model, pack))
                .or_default()
                .insert(slot, &sketch);
        }
    }
    after
        .into_iter()
        .filter(|(k, p)| before.get(k).map(|b| b.as_ref()) != Some(Some(p)))
        .map(|((project, model, pack), p)| PackRow {
            project,
            model,
            pack,
            content: (!p.slots.is_empty()).then_some(p),
        })
        .collect()
}

/// How many packs go to a scoring thread at a time (about 400 KB of sketches).
const BATCH: usize = 16;

/// Packs read and not yet scored: their rows, and their sketches one after another.
#[derive(Default)]
struct Batch {
    nums: Vec<i64>,
    sketches: Vec<u8>,
    packs: usize,
}

/// The first pass of one search over a project's sketches of one model: the rows of the
/// `limit` sketches nearest the query (all of them when there are no more), leaving out
/// `except` (sorted: the lexical candidates, whose vectors were read already), by row.
///
/// `read` offers each pack as it is read (row of the pack, slots, sketches) on this thread;
/// a scoring thread waits for the query's vector meanwhile and scores the packs as they come,
/// so reading and scoring overlap. (This thread scoring beside it once the reading is done
/// made a search no faster here.) A damaged pack, or one of another width than the query's, is
/// skipped.
pub(crate) fn first_pass<E: From<MemoryError>>(
    limit: usize,
    except: &[i64],
    query: &mut QueryVector,
    read: impl FnOnce(&mut dyn FnMut(i64, &[u8], &[u8])) -> Result<(), E>,
) -> Result<Vec<i64>, E> {
    let limit = limit.max(1);
    let width = query.dimensions().div_ceil(4);
    let (to_score, batches) = mpsc::channel::<Batch>();
    let (recycle, spare) = mpsc::channel::<Batch>();
    let (scored, read) = std::thread::scope(|s| {
        let scoring = s.spawn(move || -> Result<Scorer, MemoryError> {
            let mut scorer = Scorer::new(query.wait()?, limit);
            for batch in batches {
                scorer.offer_all(&batch.nums, &batch.sketches);
                let _ = recycle.send(batch);
            }
            Ok(scorer)
        });
        let mut batch = Batch::default();
        let read = read(&mut |pack, slots, sketches| {
            // A damaged pack (sketches of another width, a pack number no row can have) is
            // skipped.
            let Some(first) = pack.checked_mul(PACK).filter(|_| !slots.is_empty()) else {
                return;
            };
            if sketches.len() != slots.len() * width {
                return;
            }
            batch.nums.extend(slots.iter().map(|s| first + i64::from(*s)));
            batch.sketches.extend_from_slice(sketches);
            batch.packs += 1;
            if batch.packs == BATCH {
                let mut next = spare.try_recv().unwrap_or_default();
                next.nums.clear();
                next.sketches.clear();
                next.packs = 0;
                let _ = to_score.send(std::mem::replace(&mut batch, next));
            }
        });
        let _ = to_score.send(batch);
        drop(to_score);
        let scored = scoring.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (scored, read)
    });
    read?;
    let mut best = scored?.finish();
    best.retain(|n| except.binary_search(n).is_err());
    best.sort_unstable();
    Ok(best)
}

/// Scores sketches against one query and keeps the `limit` best. A sketch is scored by the
/// query's components times the sketch's levels, `Σ qᵢ · levelᵢ`: four components at a time,
/// from a table of the 256 sums each byte of the sketch can give.
struct Scorer {
    /// One table per byte of a sketch of the query's size.
    tables: Vec<[f32; 256]>,
    /// The best so far, cut back to `limit` whenever it holds four times as many.
    best: Vec<(f32, i64)>,
    limit: usize,
}

impl Scorer {
    fn new(query: &[f32], limit: usize) -> Scorer {
        let tables = (0..query.len().div_ceil(4))
            .map(|byte| {
                let part = |k: usize| query.get(byte * 4 + k).copied().unwrap_or(0.0);
                let mut table = [0f32; 256];
                for (codes, sum) in table.iter_mut().enumerate() {
                    *sum = (0..4).map(|k| part(k) * level((codes >> (2 * k)) as u8)).sum();
                }
                table
            })
            .collect();
        Scorer {
            tables,
            best: Vec::new(),
            limit,
        }
    }

    /// The width of the sketches it scores: a byte per four components of the query.
    fn width(&self) -> usize {
        self.tables.len()
    }

    fn offer(&mut self, num: i64, codes: &[u8]) {
        // Four running sums, so the lookups do not wait on one chain of additions.
        let mut sums = [0f32; 4];
        let (quads, rest) = codes.as_chunks::<4>();
        for (quad, tables) in quads.iter().zip(self.tables.chunks_exact(4)) {
            for k in 0..4 {
                sums[k] += tables[k][usize::from(quad[k])];
            }
        }
        let tail: f32 = rest
            .iter()
            .zip(&self.tables[quads.len() * 4..])
            .map(|(c, t)| t[usize::from(*c)])
            .sum();
        self.best.push((sums.iter().sum::<f32>() + tail, num));
        if self.best.len() >= self.limit.saturating_mul(4) {
            self.cut();
        }
    }

    fn offer_all(&mut self, nums: &[i64], sketches: &[u8]) {
        for (num, codes) in nums.iter().zip(sketches.chunks_exact(self.width().max(1))) {
            self.offer(*num, codes);
        }
    }

    /// Keep the `limit` best.
    fn cut(&mut self) {
        if self.best.len() > self.limit {
            self.best
                .select_nth_unstable_by(self.limit, |a, b| b.0.total_cmp(&a.0));
            self.best.truncate(self.limit);
        }
    }

    fn finish(mut self) -> Vec<i64> {
        self.cut();
        self.best.into_iter().map(|(_, num)| num).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::encode;

    fn touched(rows: &[(&str, i64)]) -> Touched {
        let mut t = Touched::default();
        for (p, n) in rows {
            t.note(p, *n);
        }
        t
    }

    #[test]
    fn a_sketch_is_signs_and_magnitudes() {
        // Stored as 64, -64, 0, 13, -25, 38, 38, 38, -127, 127: the median magnitude is 38.
        let s = sketch(&encode(&[0.5, -0.5, 0.0, 0.1, -0.2, 0.3, 0.3, 0.3, -1.0, 1.0])).unwrap();
        assert_eq!(s, [0b01_00_10_11, 0b01_01_01_00, 0b11_10]);
        assert_eq!((0..4).map(level).collect::<Vec<_>>(), [-1.0, 1.0, -3.0, 3.0]);
        assert_eq!(sketch(&[1, 2]), None);
        assert_eq!(sketch(&[0, 0, 0, 0]), Some(Vec::new()));
    }

    #[test]
    fn writes_put_and_take_sketches() {
        let v = |x: f32| encode(&[x, -x, x, x, x, x, x, x]);
        // Two new current vectors in pack 0 and one in pack 1, of one model.
        let written = apply(
            &touched(&[("/p", 3), ("/p", 1), ("/p", 300)]),
            Vec::new(),
            vec![
                (3, "/p".into(), "m".into(), v(1.0)),
                (1, "/p".into(), "m".into(), v(-1.0)),
                (300, "/p".into(), "m".into(), v(1.0)),
            ],
        );
        assert_eq!(written.len(), 2);
        let first = written[0].content.clone().unwrap();
        assert_eq!((written[0].pack, first.slots.clone()), (0, vec![1, 3]));
        // Row 1 is −1, +1, −1, −1, …; row 3 the opposite (one magnitude: no component is large).
        assert_eq!(first.sketches, [0b00_00_01_00, 0, 0b01_01_00_01, 0b01_01_01_01]);
        assert_eq!(
            (
                written[1].pack,
                written[1].content.as_ref().unwrap().slots.clone()
            ),
            (1, vec![44])
        );
        // Row 3 superseded (no current vector now), row 1 unchanged: only pack 0 changes.
        let read = vec![PackRow {
            project: "/p".into(),
            model: "m".into(),
            pack: 0,
            content: Some(first.clone()),
        }];
        let written = apply(&touched(&[("/p", 3)]), read, Vec::new());
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].content.as_ref().unwrap().slots, [1]);
        // The last one going empties the pack: it is deleted.
        let read = vec![PackRow {
            project: "/p".into(),
            model: "m".into(),
            pack: 0,
            content: written[0].content.clone(),
        }];
        let written = apply(&touched(&[("/p", 1)]), read, Vec::new());
        assert_eq!(written[0].content, None);
        // A re-embedded row moves to the new model's pack; an unchanged pack is not rewritten.
        let read = vec![PackRow {
            project: "/p".into(),
            model: "m".into(),
            pack: 0,
            content: Some(first.clone()),
        }];
        let written = apply(
            &touched(&[("/p", 3)]),
            read,
            vec![(3, "/p".into(), "n".into(), v(1.0))],
        );
        let models: Vec<(&str, Option<Vec<u8>>)> = written
            .iter()
            .map(|r| (r.model.as_str(), r.content.as_ref().map(|p| p.slots.clone())))
            .collect();
        assert_eq!(models, [("m", Some(vec![1])), ("n", Some(vec![3]))]);
        let read = vec![PackRow {
            project: "/p".into(),
            model: "m".into(),
            pack: 0,
            content: Some(first),
        }];
        assert!(apply(
            &touched(&[("/p", 3)]),
            read,
            vec![(3, "/p".into(), "m".into(), v(1.0))]
        )
        .is_empty());
    }

    #[test]
    fn damaged_packs_are_refused_and_rewritten() {
        assert_eq!(Pack::decode(vec![2, 1], vec![0, 0]), None, "slots out of order");
        assert_eq!(Pack::decode(vec![1, 2], vec![0, 0, 0]), None, "uneven widths");
        assert_eq!(Pack::decode(vec![1], Vec::new()), None);
        assert!(Pack::decode(Vec::new(), Vec::new()).is_some());
        let read = vec![PackRow {
            project: "/p".into(),
            model: "m".into(),
            pack: 0,
            content: None,
        }];
        let written = apply(
            &touched(&[("/p", 5)]),
            read,
            vec![(5, "/p".into(), "m".into(), encode(&[1.0; 8]))],
        );
        assert_eq!(written[0].content.as_ref().unwrap().slots, [5]);
        let (send, receive) = tokio::sync::oneshot::channel();
        send.send(vec![1.0; 8]).unwrap();
        let mut query = QueryVector::coming(receive, 8);
        let best = first_pass(PICKED, &[], &mut query, |offer| {
            offer(0, &[1, 2], &[0, 0, 0]);
            Ok::<_, MemoryError>(())
        })
        .unwrap();
        assert!(best.is_empty(), "a damaged pack is skipped by a search");
    }

    /// The score a sketch stands for, computed from its levels directly.
    fn sketch_score(query: &[f32], codes: &[u8]) -> f32 {
        query
            .iter()
            .enumerate()
            .map(|(i, q)| q * level(codes[i / 4] >> (2 * (i % 4))))
            .sum()
    }

    /// Run the first pass over `packs` (16 dimensions), the query coming after `arrives_at`
    /// packs were read.
    fn pass_over(packs: &[(Vec<u8>, Vec<u8>)], query: &[f32], arrives_at: usize, except: &[i64]) -> Vec<i64> {
        let (send, receive) = tokio::sync::oneshot::channel();
        let mut send = Some(send);
        let mut coming = QueryVector::coming(receive, 16);
        let mut arrive = || {
            if let Some(send) = send.take() {
                send.send(query.to_vec()).unwrap();
            }
        };
        first_pass(PICKED, except, &mut coming, |offer| {
            for (pack, (slots, codes)) in packs.iter().enumerate() {
                if pack == arrives_at {
                    arrive();
                }
                offer(pack as i64, slots, codes);
            }
            arrive();
            Ok::<_, MemoryError>(())
        })
        .unwrap()
    }

    #[test]
    fn the_best_are_the_highest_scores_whenever_the_query_arrives() {
        // 100 packs of 256 sixteen-dimension vectors, a query of eighths so every sum is exact.
        let mut x: u64 = 7;
        let mut random = move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 40) % 17) as f32 / 8.0 - 1.0
        };
        let packs: Vec<(Vec<u8>, Vec<u8>)> = (0..100)
            .map(|_| {
                let slots: Vec<u8> = (0..=255).collect();
                let codes = slots
                    .iter()
                    .flat_map(|_| sketch(&encode(&(0..16).map(|_| random()).collect::<Vec<_>>())).unwrap())
                    .collect();
                (slots, codes)
            })
            .collect();
        let query: Vec<f32> = (0..16).map(|_| random()).collect();
        let mut scores: Vec<(f32, i64)> = Vec::new();
        for (pack, (slots, codes)) in packs.iter().enumerate() {
            for (slot, c) in slots.iter().zip(codes.chunks_exact(4)) {
                scores.push((sketch_score(&query, c), pack as i64 * PACK + i64::from(*slot)));
            }
        }
        for arrives_at in [0, 1, 50, 100] {
            let best = pass_over(&packs, &query, arrives_at, &[]);
            assert_eq!(best.len(), PICKED, "the query came after pack {arrives_at}");
            let picked = |num: &i64| best.binary_search(num).is_ok();
            let lowest_in = scores
                .iter()
                .filter(|(_, n)| picked(n))
                .map(|s| s.0)
                .fold(f32::MAX, f32::min);
            let highest_out = scores
                .iter()
                .filter(|(_, n)| !picked(n))
                .map(|s| s.0)
                .fold(f32::MIN, f32::max);
            assert!(
                lowest_in >= highest_out,
                "the query came after pack {arrives_at}: {lowest_in} < {highest_out}"
            );
        }
        // What the search read already is left out; a small set is handed on whole.
        let first = pass_over(&packs, &query, 0, &[])[0];
        let without = pass_over(&packs, &query, 0, &[first]);
        assert_eq!(without.len(), PICKED - 1);
        assert!(!without.contains(&first));
        let one_pack = [(packs[0].0[..10].to_vec(), packs[0].1[..40].to_vec())];
        assert_eq!(pass_over(&one_pack, &query, 0, &[]), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_query_vector_is_there_for_every_wait() {
        let (send, receive) = tokio::sync::oneshot::channel();
        send.send(vec![0.5; 16]).unwrap();
        let mut query = QueryVector::coming(receive, 16);
        let pass = first_pass(PICKED, &[], &mut query, |_| Ok::<_, MemoryError>(()));
        assert!(pass.unwrap().is_empty());
        assert_eq!(query.wait().unwrap(), [0.5; 16], "after the pass waited for it");
        assert_eq!(query.wait().unwrap(), [0.5; 16]);
    }

    #[test]
    fn a_query_whose_embedding_stopped_is_an_error_every_time() {
        let (send, receive) = tokio::sync::oneshot::channel::<Vec<f32>>();
        drop(send);
        let mut query = QueryVector::coming(receive, 16);
        let pass = first_pass(PICKED, &[], &mut query, |offer| {
            offer(0, &[1], &[0; 4]);
            Ok::<_, MemoryError>(())
        });
        assert!(matches!(pass, Err(MemoryError::Task(_))), "{pass:?}");
        assert!(query.wait().is_err(), "not an empty vector the second time");
    }

    #[test]
    fn sketches_that_do_not_fit_the_query_find_nothing() {
        let pack = [(vec![1], sketch(&encode(&[1.0; 32])).unwrap())];
        assert!(pass_over(&pack, &[1.0; 16], 0, &[]).is_empty());
        // Nor does a pack numbered past any row (a damaged table), without overflowing.
        let (send, receive) = tokio::sync::oneshot::channel();
        send.send(vec![1.0; 16]).unwrap();
        let mut query = QueryVector::coming(receive, 16);
        let best = first_pass(PICKED, &[], &mut query, |offer| {
            offer(i64::MAX, &[1], &[0; 4]);
            offer(i64::MIN, &[1], &[0; 4]);
            Ok::<_, MemoryError>(())
        });
        assert!(best.unwrap().is_empty());
    }
}
