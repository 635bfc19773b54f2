//! The encoder's elementwise functions, written so that a loop over a slice vectorizes: no
//! branch and no library call per element (libm's `erff` and `expf` are both, and were a
//! fifth of a sentence's time once the products were fast).

use multiversion::multiversion;

/// `eˣ` to within about 2 units in the last place: 0 below -87, `e⁸⁸` above 88 (the encoder
/// never needs the tails).
///
/// `eˣ = 2ⁿ · eʳ` with `n = round(x / ln 2)` and `|r| ≤ ln 2 / 2`; `eʳ` by its Taylor series to
/// the 7th power (remainder below 2⁻²⁴ there), `2ⁿ` built in the exponent bits.
#[inline(always)]
fn exp(x: f32) -> f32 {
    // ln 2 split in two, so that `n · LN2_HIGH` is exact and `r` keeps its low bits.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    let underflow = x < -87.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let mut p = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * r + c;
    }
    let e = p * f32::from_bits(((n as i32 + 127) as u32) << 23);
    if underflow {
        0.0
    } else {
        e
    }
}

/// The error function to within 2·10⁻⁷ (Abramowitz and Stegun, formula 7.1.26).
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [1.061_405_4, -1.453_152_1, 1.421_413_7, -0.284_496_73, 0.254_829_6];
    let z = x.abs();
    let t = 1.0 / (1.0 + P * z);
    let mut poly = A[0];
    for a in &A[1..] {
        poly = poly * t + a;
    }
    (1.0 - poly * t * exp(-z * z)).copysign(x)
}

/// The exact GELU, `x · Φ(x)`, which BERT was trained with (not the tanh approximation), in
/// place over every value.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn gelu(values: &mut [f32]) {
    for v in values {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The lanes a sum is split over, so that its additions do not wait on each other and a
/// vector unit does them together (a plain `iter().sum()` of floats is one chain, in order).
const LANES: usize = 8;

/// `Σ aᵢ·bᵢ` over [`LANES`] lanes (inlined, so each compiled clone vectorizes it).
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let ((a, a_rest), (b, b_rest)) = (a.as_chunks::<LANES>(), b.as_chunks::<LANES>());
    let mut lanes = [0f32; LANES];
    for (a, b) in a.iter().zip(b) {
        for l in 0..LANES {
            lanes[l] += a[l] * b[l];
        }
    }
    lanes.iter().sum::<f32>() + a_rest.iter().zip(b_rest).map(|(a, b)| a * b).sum::<f32>()
}

/// `Σ aᵢ` over [`LANES`] lanes, as [`dot`].
#[inline(always)]
pub(crate) fn sum(a: &[f32]) -> f32 {
    let (a, rest) = a.as_chunks::<LANES>();
    let mut lanes = [0f32; LANES];
    for a in a {
        for l in 0..LANES {
            lanes[l] += a[l];
        }
    }
    lanes.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// The largest of `a` (−∞ for none), over [`LANES`] lanes as [`dot`].
#[inline(always)]
fn max(a: &[f32]) -> f32 {
    let (a, rest) = a.as_chunks::<LANES>();
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for a in a {
        for l in 0..LANES {
            lanes[l] = lanes[l].max(a[l]);
        }
    }
    lanes
        .iter()
        .chain(rest)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
}

/// Scores to probabilities: `eˢ` of each over their sum, the largest subtracted first so that
/// none overflows (inlined into its caller's compiled clones; each pass vectorizes).
#[inline(always)]
pub(crate) fn softmax(scores: &mut [f32]) {
    let max = max(scores);
    scores.iter_mut().for_each(|s| *s = exp(*s - max));
    let scale = 1.0 / sum(scores);
    scores.iter_mut().for_each(|s| *s *= scale);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count + 1` evenly spaced values from `low` to `high`.
    fn grid(low: f32, high: f32, count: usize) -> impl Iterator<Item = f32> {
        (0..=count).map(move |i| low + (high - low) * i as f32 / count as f32)
    }

    #[test]
    fn exp_agrees_with_the_library() {
        for x in grid(-87.0, 88.0, 200_000) {
            let (got, want) = (exp(x), x.exp());
            assert!((got - want).abs() <= 3e-7 * want, "exp({x}) = {got}, not {want}");
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1e9), 0.0);
        assert!(exp(1e9).is_finite());
    }

    #[test]
    fn gelu_agrees_with_the_exact_one() {
        let xs: Vec<f32> = grid(-12.0, 12.0, 200_000).collect();
        let mut got = xs.clone();
        gelu(&mut got);
        for (x, got) in xs.iter().zip(got) {
            let want = 0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2));
            assert!(
                (got - want).abs() <= 4e-7 * x.abs().max(1.0),
                "gelu({x}) = {got}, not {want}"
            );
        }
    }

    #[test]
    fn sums_in_lanes_agree_with_sums_in_order() {
        for len in [0, 1, 7, 8, 9, 32, 384, 389] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let want_dot: f32 = a.iter().zip(&b).map(|(a, b)| a * b).sum();
            let want_sum: f32 = a.iter().sum();
            assert!((dot(&a, &b) - want_dot).abs() < 1e-4, "dot of {len}");
            assert!((sum(&a) - want_sum).abs() < 1e-4, "sum of {len}");
        }
    }

    #[test]
    fn softmax_sums_to_one_even_for_large_scores() {
        let mut scores = vec![1000.0, 999.0, -1000.0, 0.0];
        softmax(&mut scores);
        assert!((scores.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((scores[0] / scores[1] - std::f32::consts::E).abs() < 1e-5);
        assert_eq!(scores[2], 0.0);
    }
}
