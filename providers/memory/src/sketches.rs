//! A compact first pass over a project's sentence vectors, so a search does not read them all.
//!
//! Each current vector is also kept as a sketch (two bits per dimension: 96 bytes for 384
//! dimensions, a quarter of the stored vector), packed [`PACK`] memories to a row of
//! `memory_sketches`. A search at 100,000 memories reads about 400 such rows (9.6 MB) instead
//! of 100,000 vectors (39 MB), scores every sketch against the query's own components
//! ([`Sketches::best`]: the query is not rounded, only the memory is), and reads the exact
//! vectors of only the [`PICKED`] best, with the lexical candidates' (see `crate::vectors`).
//!
//! The packs are derived from the rows and kept by the writers, written once for both
//! backends: a write notes each row whose vector or currency it may change ([`Touched`]), and
//! before its commit the backend reads the packs holding those rows and the rows' current
//! vectors, and [`apply`] says what to write back. An entry left for a memory that is no
//! longer current would be harmless (the exact read finds no current vector for it), and none
//! is missing for a current vector, since every vector is stored through a write that notes it.

use std::collections::{BTreeMap, BTreeSet};

use crate::types::MemoryEntry;

/// How many memories one pack holds: the rows `n · PACK ..< (n + 1) · PACK` of one project and
/// model. 256 keeps a pack's slot in one byte and a full pack about 12 KB.
pub(crate) const PACK: i64 = 256;

/// How many memories the first pass hands to the exact cosine. On 100,000 synthetic memories
/// (made-up words, the hardest case: their vectors crowd together), the exact ten nearest were
/// among the best 300 sketches 99.9 % of the time, and the fifty nearest 95.6 %.
pub(crate) const PICKED: usize = 300;

/// From how many sketches a search scores them on two threads (about 1 ms of work each).
const PARALLEL_FROM: usize = 20_000;

/// The pack holding row `num`, and its slot there.
pub(crate) fn place(num: i64) -> (i64, u8) {
    (num.div_euclid(PACK), num.rem_euclid(PACK) as u8)
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
            sketches.len() % slots.len() == 0 && !sketches.is_empty()
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
/// rewritten with what this write knows, dropping the rest (`ctxkit memory reindex` does not
/// bring it back; the exact scan of a small project does not need it).
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
    for (project, num) in &touched.0 {
        let (pack, slot) = place(*num);
        for ((p, _, n), content) in after.iter_mut() {
            if p == project && *n == pack {
                content.remove(slot);
            }
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

/// A project's sketches of one model, as a search reads them.
#[derive(Default)]
pub(crate) struct Sketches {
    nums: Vec<i64>,
    bytes: Vec<u8>,
    width: usize,
}

impl Sketches {
    /// Keep pack `pack`'s sketches. A damaged pack, or one of another width than the first
    /// (another model's size), is skipped.
    pub(crate) fn push(&mut self, pack: i64, slots: &[u8], sketches: &[u8]) {
        if slots.is_empty() || sketches.len() % slots.len() != 0 {
            return;
        }
        let width = sketches.len() / slots.len();
        if self.nums.is_empty() {
            self.width = width;
        } else if width != self.width {
            return;
        }
        self.nums
            .extend(slots.iter().map(|s| pack * PACK + i64::from(*s)));
        self.bytes.extend_from_slice(sketches);
    }

    /// How many memories the sketches cover.
    pub(crate) fn len(&self) -> usize {
        self.nums.len()
    }

    /// The rows whose exact vectors a search reads: the [`PICKED`] best sketches and `also`
    /// (the lexical candidates, whose cosines the blend needs), sorted, each once.
    pub(crate) fn picks(&self, query: &[f32], also: impl IntoIterator<Item = i64>) -> Vec<i64> {
        let mut nums = self.best(query, PICKED);
        nums.extend(also);
        nums.sort_unstable();
        nums.dedup();
        nums
    }

    /// The rows of the `limit` sketches nearest `query` (all of them when there are no more),
    /// in no particular order. A sketch is scored by the query's components times the
    /// sketch's levels, `Σ qᵢ · levelᵢ`: four components at a time, from a table of the 256 sums
    /// each byte of the sketch can give. Large sets are scored on two threads.
    fn best(&self, query: &[f32], limit: usize) -> Vec<i64> {
        if self.len() <= limit {
            return self.nums.clone();
        }
        let tables: Vec<[f32; 256]> = (0..self.width)
            .map(|byte| {
                let part = |k: usize| query.get(byte * 4 + k).copied().unwrap_or(0.0);
                let mut table = [0f32; 256];
                for (codes, sum) in table.iter_mut().enumerate() {
                    *sum = (0..4).map(|k| part(k) * level((codes >> (2 * k)) as u8)).sum();
                }
                table
            })
            .collect();
        let score = |entries: &[u8], nums: &[i64]| -> Vec<(f32, i64)> {
            entries
                .chunks_exact(self.width)
                .zip(nums)
                .map(|(codes, num)| {
                    // Four running sums, so the lookups do not wait on one chain of additions.
                    let mut sums = [0f32; 4];
                    let (quads, rest) = codes.as_chunks::<4>();
                    for (quad, tables) in quads.iter().zip(tables.chunks_exact(4)) {
                        for k in 0..4 {
                            sums[k] += tables[k][usize::from(quad[k])];
                        }
                    }
                    let tail: f32 = rest
                        .iter()
                        .zip(&tables[quads.len() * 4..])
                        .map(|(c, t)| t[usize::from(*c)])
                        .sum();
                    (sums.iter().sum::<f32>() + tail, *num)
                })
                .collect()
        };
        let half = if self.len() >= PARALLEL_FROM {
            self.len() / 2
        } else {
            self.len()
        };
        let (first, second) = self.bytes.split_at(half * self.width);
        let (first_nums, second_nums) = self.nums.split_at(half);
        let mut scored = std::thread::scope(|s| {
            let other = s.spawn(|| score(second, second_nums));
            let mut scored = score(first, first_nums);
            // A scoring thread cannot fail but by a panic, which is passed on.
            scored.extend(other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            scored
        });
        scored.select_nth_unstable_by(limit, |a, b| b.0.total_cmp(&a.0));
        scored.truncate(limit);
        scored.into_iter().map(|(_, num)| num).collect()
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
        let mut sketches = Sketches::default();
        sketches.push(0, &[1, 2], &[0, 0, 0]);
        assert_eq!(sketches.len(), 0, "a damaged pack is skipped by a search");
    }

    #[test]
    fn the_best_sketches_agree_with_the_query() {
        // Sixteen dimensions; row n's vector points along dimension n.
        let mut sketches = Sketches::default();
        let mut slots = Vec::new();
        let mut bytes = Vec::new();
        for n in 0..16u8 {
            let mut v = vec![-0.1f32; 16];
            v[usize::from(n)] = 1.0;
            slots.push(n);
            bytes.extend(sketch(&encode(&v)).unwrap());
        }
        sketches.push(2, &slots, &bytes);
        assert_eq!(sketches.len(), 16);
        let mut q = vec![-0.1f32; 16];
        q[5] = 0.9;
        q[9] = 0.8;
        let mut best = sketches.best(&q, 2);
        best.sort();
        assert_eq!(best, [2 * PACK + 5, 2 * PACK + 9]);
        assert_eq!(sketches.best(&q, 16).len(), 16, "no more than there are");
    }
}
