//! The one numeric kernel that matters: `x · Wᵀ + b` for a few token rows against a weight
//! matrix stored row-major as `[out, in]` (PyTorch's `nn.Linear`).
//!
//! A sentence is a few dozen tokens, so the product is skinny: a general GEMM packs the whole
//! weight matrix on every call (ndarray + matrixmultiply took 22 ms for one 8-token forward
//! pass here, most of it packing). This kernel streams each weight row once and dots it with
//! four token rows at a time (3.5 ms for the same pass), compiled for AVX-512 and AVX2+FMA as
//! well as the baseline and chosen at run time.

use multiversion::multiversion;
use multiversion::target::target_cfg_f;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};

/// Width of the accumulators: one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

/// A weight matrix, `n` rows of `k`, as the model file stores it (`f32`) or halved to
/// bfloat16 (the upper 16 bits of each `f32`, rounded), which a sentence's product reads in
/// half the bytes: most of its time goes to streaming the weights, not to arithmetic.
#[derive(Clone, Copy)]
pub(crate) enum Matrix<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
}

/// One weight, widened to `f32` inside the kernel (inlined, so each compiled clone vectorizes it).
trait Weight: Copy {
    fn widen(self) -> f32;
}

impl Weight for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

impl Weight for u16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits(u32::from(self) << 16)
    }
}

/// The bfloat16 nearest `v` (ties to even), as [`Matrix::Bf16`] stores it.
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
    if m >= GEMM_ROWS {
        return match w {
            Matrix::F32(w) => gemm(x, m, k, w, bias),
            Matrix::Bf16(w) => gemm(x, m, k, &w.iter().map(|v| v.widen()).collect::<Vec<_>>(), bias),
        };
    }
    // Computed column-major (one output column's m values together), then transposed.
    let mut by_column = vec![0f32; n * m];
    match w {
        Matrix::F32(w) => dot_rows(x, k, w, &mut by_column),
        Matrix::Bf16(w) => dot_rows(x, k, w, &mut by_column),
    }
    let mut out = vec![0f32; m * n];
    for (j, column) in by_column.chunks_exact(m.max(1)).enumerate() {
        for (i, value) in column.iter().enumerate() {
            out[i * n + j] = value + bias[j];
        }
    }
    out
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
fn dot_rows<W: Weight>(x: &[f32], k: usize, w: &[W], out: &mut [f32]) {
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
                    let (b0, b1) = (w0[l].widen(), w1[l].widen());
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
                        .map(|(a, b)| a * b.widen())
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
        assert!(to_bf16(f32::NAN).widen().is_nan());
        assert_eq!(to_bf16(f32::INFINITY).widen(), f32::INFINITY);
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
        // Row counts around the block of four, widths around the register width, odd and even
        // weight rows, and enough rows for the GEMM.
        for (m, k, n) in [
            (1, 16, 3),
            (3, 17, 5),
            (4, 32, 7),
            (9, 40, 2),
            (13, 384, 1536),
            (40, 48, 9),
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
            // Halved weights: the same product of the rounded weights.
            let half: Vec<u16> = w.iter().map(|&v| to_bf16(v)).collect();
            let rounded: Vec<f32> = half.iter().map(|v| v.widen()).collect();
            let got = linear(&x, k, Matrix::Bf16(&half), &bias);
            let want = naive(&x, k, &rounded, &bias);
            for (g, e) in got.iter().zip(&want) {
                assert!(
                    (g - e).abs() <= 1e-3 * e.abs().max(1.0),
                    "bf16 {m}x{k}x{n}: {g} vs {e}"
                );
            }
        }
    }
}
