//! The one numeric kernel that matters: `x · Wᵀ + b` for a few token rows against a weight
//! matrix `W` of `[out, in]` (PyTorch's `nn.Linear`).
//!
//! A sentence is a few dozen tokens, so the product is skinny: a general GEMM packs the whole
//! weight matrix on every call (ndarray + matrixmultiply took 22 ms for one 8-token forward
//! pass here, most of it packing). The halved weights are packed once instead, into the cache
//! file, in the panels [`panel_rows`] reads (3.0 ms for a 6-word query's whole forward pass,
//! 7.4 ms for a 17-word memory's); the file's own `f32` weights, row-major, are dotted with
//! four token rows at a time, and from 32 rows go to ndarray's GEMM. Each kernel is compiled
//! for AVX-512 and AVX2+FMA (NEON on ARM) as well as the baseline, chosen at run time.

use multiversion::multiversion;
use multiversion::target::target_cfg_f;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};

/// Width of the accumulators: one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

/// A weight matrix of `n` rows of `k`: as the model file stores it (`f32`, row-major), or
/// halved to bfloat16 (the upper 16 bits of each `f32`, rounded) and laid out in panels
/// ([`to_panels`]). Halved, a sentence's product reads the weights in half the bytes; in
/// panels, it reads them in the order the kernel uses them, with no sums across a register.
#[derive(Clone, Copy)]
pub(crate) enum Matrix<'a> {
    F32(&'a [f32]),
    Panels(&'a [u16]),
}

/// The output columns of one panel: one AVX-512 register of `f32`, two AVX2 ones.
const PANEL: usize = 16;

/// How many values the panels of an `n` × `k` matrix hold (`n` rounded up to whole panels).
pub(crate) fn panels_len(n: usize, k: usize) -> usize {
    n.div_ceil(PANEL) * PANEL * k
}

/// The `n` × `k` row-major `w` halved and laid out in panels: for each run of [`PANEL`] rows,
/// its `k` columns one after another, each as the [`PANEL`] rows' values (zeros past `n`).
pub(crate) fn to_panels(w: &[f32], k: usize) -> impl Iterator<Item = u16> + '_ {
    let n = w.len() / k.max(1);
    (0..panels_len(n, k)).map(move |at| {
        let (panel, rest) = (at / (PANEL * k), at % (PANEL * k));
        let row = panel * PANEL + rest % PANEL;
        if row < n {
            to_bf16(w[row * k + rest / PANEL])
        } else {
            0
        }
    })
}

/// A bfloat16 widened to the `f32` it stands for (inlined, so each compiled clone vectorizes it).
#[inline(always)]
fn widen(half: u16) -> f32 {
    f32::from_bits(u32::from(half) << 16)
}

/// The bfloat16 nearest `v` (ties to even), as [`Matrix::Panels`] stores it.
pub(crate) fn to_bf16(v: f32) -> u16 {
    let bits = v.to_bits();
    if v.is_nan() {
        return (bits >> 16) as u16 | 0x40;
    }
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// `x` (`m` rows of `k`) times `w`ᵀ (`w`: `n` rows of `k`) plus `bias` (`n`): `m` rows of `n`.
///
/// One thread: splitting a sentence's products over two cores helped a lone process but not
/// the hook, whose other core is busy; batches use the cores instead.
pub(crate) fn linear(x: &[f32], k: usize, w: Matrix<'_>, bias: &[f32]) -> Vec<f32> {
    let m = x.len() / k;
    let n = bias.len();
    match w {
        Matrix::Panels(w) => {
            let mut out = vec![0f32; m * n];
            panel_rows(x, k, w, bias, &mut out);
            out
        }
        Matrix::F32(w) if m >= GEMM_ROWS => gemm(x, m, k, w, bias),
        Matrix::F32(w) => {
            // Computed column-major (one output column's m values together), then transposed.
            let mut by_column = vec![0f32; n * m];
            dot_rows(x, k, w, &mut by_column);
            let mut out = vec![0f32; m * n];
            for (j, column) in by_column.chunks_exact(m.max(1)).enumerate() {
                for (i, value) in column.iter().enumerate() {
                    out[i * n + j] = value + bias[j];
                }
            }
            out
        }
    }
}

/// `out` (`m` rows of `n`) = `x` (`m` rows of `k`) times the panels' matrix ᵀ plus `bias`.
///
/// A block of token rows against a few panels at a time: each step down `k` loads one
/// register of weights per panel and multiplies it by each row's value there, into an
/// accumulator per (row, panel) that ends as `PANEL` finished outputs, with no sum across a
/// register. AVX-512 has the registers for 4 rows by 3 panels; narrower targets take 4 by 1.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn panel_rows(x: &[f32], k: usize, panels: &[u16], bias: &[f32], out: &mut [f32]) {
    let fused = target_cfg_f!(any(target_feature = "fma", target_arch = "aarch64"));
    if target_cfg_f!(target_feature = "avx512f") {
        panel_groups::<3>(x, k, panels, bias, out, fused);
    } else {
        panel_groups::<1>(x, k, panels, bias, out, fused);
    }
}

/// [`panel_rows`] by groups of `P` panels: whole blocks of 4 rows, then the 1–3 rows left as
/// a block of their own size (a sentence is a few dozen rows, so padding them to 4 was up to
/// a tenth of its work).
#[inline(always)]
fn panel_groups<const P: usize>(
    x: &[f32],
    k: usize,
    panels: &[u16],
    bias: &[f32],
    out: &mut [f32],
    fused: bool,
) {
    let (m, n) = (x.len() / k, bias.len());
    let whole = m / 4 * 4;
    let (x, x_rest) = x.split_at(whole * k);
    let (out, out_rest) = out.split_at_mut(whole * n);
    panel_block::<4, P>(x, k, panels, bias, out, fused);
    match m - whole {
        1 => panel_block::<1, P>(x_rest, k, panels, bias, out_rest, fused),
        2 => panel_block::<2, P>(x_rest, k, panels, bias, out_rest, fused),
        3 => panel_block::<3, P>(x_rest, k, panels, bias, out_rest, fused),
        _ => {}
    }
}

/// [`panel_rows`] for blocks of `R` rows by `P` panels (inlined into each compiled clone).
///
/// Indexed loops on purpose: with constant bounds they unroll to constant indices, which is
/// what keeps the accumulators in registers (iterators over them spilled them every step).
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn panel_block<const R: usize, const P: usize>(
    x: &[f32],
    k: usize,
    panels: &[u16],
    bias: &[f32],
    out: &mut [f32],
    fused: bool,
) {
    let (m, n) = (x.len() / k, bias.len());
    let size = PANEL * k;
    let count = panels.len() / size;
    if m == 0 || count == 0 {
        return;
    }
    for first in (0..count).step_by(P) {
        // A last group of fewer panels repeats its last one (and a last block of fewer rows
        // would repeat its last row); only what exists is written out.
        let group: [&[[u16; PANEL]]; P] =
            std::array::from_fn(|p| panels[(first + p).min(count - 1) * size..][..size].as_chunks().0);
        for i in (0..m).step_by(R) {
            let rows: [&[f32]; R] = std::array::from_fn(|r| &x[(i + r).min(m - 1) * k..][..k]);
            // Each slice `k` long where the loop can see it, so it checks no index.
            let group = group.map(|g| &g[..k]);
            let mut acc = [[[0f32; PANEL]; P]; R];
            for step in 0..k {
                let mut w = [[0f32; PANEL]; P];
                for p in 0..P {
                    let halves = &group[p][step];
                    for l in 0..PANEL {
                        w[p][l] = widen(halves[l]);
                    }
                }
                for r in 0..R {
                    let v = rows[r][step];
                    for p in 0..P {
                        for l in 0..PANEL {
                            acc[r][p][l] = if fused {
                                v.mul_add(w[p][l], acc[r][p][l])
                            } else {
                                acc[r][p][l] + v * w[p][l]
                            };
                        }
                    }
                }
            }
            // Constant indices only, so that the accumulators stay in registers.
            for r in 0..R {
                if i + r >= m {
                    break;
                }
                let row = &mut out[(i + r) * n..][..n];
                for p in 0..P {
                    if first + p >= count {
                        break;
                    }
                    let columns = (first + p) * PANEL..((first + p + 1) * PANEL).min(n);
                    let done: [f32; PANEL] = acc[r][p];
                    for ((o, b), a) in row[columns.clone()].iter_mut().zip(&bias[columns]).zip(&done) {
                        *o = a + b;
                    }
                }
            }
        }
    }
}

/// Enough token rows that packing the weights (what a general GEMM does) pays off.
const GEMM_ROWS: usize = 32;

/// The same product by ndarray's GEMM (matrixmultiply: packed, cache-blocked, runtime SIMD).
fn gemm(x: &[f32], m: usize, k: usize, w: &[f32], bias: &[f32]) -> Vec<f32> {
    let n = bias.len();
    debug_assert_eq!(w.len(), n * k);
    let (Ok(x), Ok(w)) = (
        ArrayView2::from_shape((m, k), x),
        ArrayView2::from_shape((n, k), w),
    ) else {
        return vec![0.0; m * n];
    };
    let mut out = Array2::from_shape_fn((m, n), |(_, j)| bias[j]);
    general_mat_mul(1.0, &x, &w.t(), 1.0, &mut out);
    out.into_raw_vec_and_offset().0
}

/// `out[j * m + i] = x_i · w_j` for every weight row `j` and token row `i`.
///
/// Two weight rows against four token rows at a time, each pair with its own accumulator so
/// the additions do not wait on each other and each load feeds several multiplications; a last
/// block of fewer rows repeats its last one. The loop is written out here, not in a helper: a
/// helper or closure is compiled without this clone's target features, and LLVM then left it
/// scalar (7x slower).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn dot_rows(x: &[f32], k: usize, w: &[f32], out: &mut [f32]) {
    let m = x.len() / k;
    let tail = k / LANES * LANES;
    // Fused multiply-add where the clone's target has it (one instruction, one rounding);
    // elsewhere `mul_add` would be a slow library call.
    let fused = target_cfg_f!(any(target_feature = "fma", target_arch = "aarch64"));
    for (w_pair, out) in w.chunks(2 * k).zip(out.chunks_mut(2 * m.max(1))) {
        let w_last = w_pair.len() - k;
        let (w0, w1) = (&w_pair[..k], &w_pair[w_last..]);
        for (block, i) in x.chunks(4 * k).zip((0..m).step_by(4)) {
            let last = block.len() - k;
            let rows = [0, 1, 2, 3].map(|r| &block[(r * k).min(last)..][..k]);
            let blocks = w0
                .as_chunks::<LANES>()
                .0
                .iter()
                .zip(w1.as_chunks::<LANES>().0)
                .zip(rows[0].as_chunks::<LANES>().0)
                .zip(rows[1].as_chunks::<LANES>().0)
                .zip(rows[2].as_chunks::<LANES>().0)
                .zip(rows[3].as_chunks::<LANES>().0);
            let (mut a00, mut a01, mut a02, mut a03) =
                ([0f32; LANES], [0f32; LANES], [0f32; LANES], [0f32; LANES]);
            let (mut a10, mut a11, mut a12, mut a13) =
                ([0f32; LANES], [0f32; LANES], [0f32; LANES], [0f32; LANES]);
            for (((((w0, w1), x0), x1), x2), x3) in blocks {
                for l in 0..LANES {
                    let (b0, b1) = (w0[l], w1[l]);
                    if fused {
                        a00[l] = x0[l].mul_add(b0, a00[l]);
                        a01[l] = x1[l].mul_add(b0, a01[l]);
                        a02[l] = x2[l].mul_add(b0, a02[l]);
                        a03[l] = x3[l].mul_add(b0, a03[l]);
                        a10[l] = x0[l].mul_add(b1, a10[l]);
                        a11[l] = x1[l].mul_add(b1, a11[l]);
                        a12[l] = x2[l].mul_add(b1, a12[l]);
                        a13[l] = x3[l].mul_add(b1, a13[l]);
                    } else {
                        a00[l] += x0[l] * b0;
                        a01[l] += x1[l] * b0;
                        a02[l] += x2[l] * b0;
                        a03[l] += x3[l] * b0;
                        a10[l] += x0[l] * b1;
                        a11[l] += x1[l] * b1;
                        a12[l] += x2[l] * b1;
                        a13[l] += x3[l] * b1;
                    }
                }
            }
            let acc = [[a00, a01, a02, a03], [a10, a11, a12, a13]];
            let rows_here = (block.len() / k).min(4);
            for (half, (w_row, acc)) in [w0, w1].into_iter().zip(&acc).take(w_pair.len() / k).enumerate() {
                for r in 0..rows_here {
                    let rest: f32 = rows[r][tail..]
                        .iter()
                        .zip(&w_row[tail..])
                        .map(|(a, b)| a * b)
                        .sum();
                    out[half * m + i + r] = acc[r].iter().sum::<f32>() + rest;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        assert_eq!(to_bf16(-2.5), 0xc020);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert!(widen(to_bf16(f32::NAN)).is_nan());
        assert_eq!(widen(to_bf16(f32::INFINITY)), f32::INFINITY);
    }

    fn naive(x: &[f32], k: usize, w: &[f32], bias: &[f32]) -> Vec<f32> {
        let n = bias.len();
        let m = x.len() / k;
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f32 = (0..k).map(|l| x[i * k + l] * w[j * k + l]).sum();
                out[i * n + j] = dot + bias[j];
            }
        }
        out
    }

    #[test]
    fn agrees_with_the_definition_at_every_shape() {
        // Row counts around the block of four (each remainder), widths around the register
        // width, odd and even weight rows and panel counts, and enough rows for the GEMM.
        for (m, k, n) in [
            (1, 16, 3),
            (3, 17, 5),
            (4, 32, 7),
            (9, 40, 2),
            (13, 384, 1536),
            (40, 48, 9),
            (7, 24, 40),
            (6, 16, 33),
        ] {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 10.0).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5 % 19) as f32 - 9.0) / 10.0).collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 / 4.0).collect();
            let got = linear(&x, k, Matrix::F32(&w), &bias);
            let want = naive(&x, k, &w, &bias);
            assert_eq!(got.len(), want.len());
            for (g, e) in got.iter().zip(&want) {
                assert!(
                    (g - e).abs() <= 1e-3 * e.abs().max(1.0),
                    "{m}x{k}x{n}: {g} vs {e}"
                );
            }
            // Halved weights in panels: the same product of the rounded weights, by the
            // AVX-512 blocks and by the narrower targets' ones alike.
            let panels: Vec<u16> = to_panels(&w, k).collect();
            assert_eq!(panels.len(), panels_len(n, k));
            let rounded: Vec<f32> = w.iter().map(|&v| widen(to_bf16(v))).collect();
            let want = naive(&x, k, &rounded, &bias);
            let narrow = {
                let mut out = vec![0f32; m * n];
                panel_groups::<1>(&x, k, &panels, &bias, &mut out, false);
                out
            };
            for got in [linear(&x, k, Matrix::Panels(&panels), &bias), narrow] {
                assert_eq!(got.len(), want.len());
                for (g, e) in got.iter().zip(&want) {
                    assert!(
                        (g - e).abs() <= 1e-3 * e.abs().max(1.0),
                        "panels {m}x{k}x{n}: {g} vs {e}"
                    );
                }
            }
        }
    }
}
