//! The exact top-k scan over a process's copy of the vectors (docs/decisions/0011-dense-recall.md, "Latency
//! work"): a second copy of every vector in 8-bit integers, with a proven bound on the error of its dot product, is
//! scanned first; only the vectors that can still be among the `k` best are scored with the f32 dot product. The
//! result is the plain f32 scan's, bit for bit (same entries, same order, same scores): the pre-selection only
//! decides which vectors are scored, never a score. The integer copy is a quarter of the f32 one, and the plain
//! scan is bound by memory bandwidth.
//!
//! The bound. A vector `v` (dimension `n`) is coded as `v = s·c + e`: `s = max|v_j| / 127`, `c_j = round(v_j / s)`
//! in `-127..=127`, `e` the rounding residual (`|e_j| <= E_v`, measured). The query `q` is coded the same way in
//! 16-bit integers: `q = t·d + r`, `|r_j| <= R_q`. Then exactly
//!
//! `q·v = s·t·(d·c) + s·(r·c) + q·e`, so `|q·v − s·t·(d·c)| <= R_q·s·Σ|c_j| + Σ|q_j|·E_v`,
//!
//! `d·c` being an exact integer. The score the plain scan returns is the f32 dot product [`dot`], whose rounding
//! error is at most `γ·Σ|q_j·v_j| <= γ·max|q_j|·Σ|v_j|` (`γ = m·u / (1 − m·u)`, `u = 2^-24`, `m = n + 16`
//! roundings on any term's path) plus `n·2^-149` for products that underflow. Everything here is computed in f64, with a
//! relative slack of 1e-9 of `max|q_j|·Σ|v_j|` for the f64 roundings (each below 1e-15 of that). A vector is kept
//! when its upper bound reaches the `k`-th best lower bound: every vector left out scores strictly below `k` others,
//! so it cannot be in the top `k` whatever the tie-break. Vectors with a component above [`BOUNDED_MAX`] (or not
//! finite) are always scored; a query with one is scanned plainly.

use std::cmp::Ordering;

/// Largest code magnitude of a vector component.
const CODE_MAX: f64 = 127.0;
/// Largest component magnitude (vector or query) the bound is used for: products stay below 1e30 and sums of
/// [`crate::MAX_VECTOR_DIM`] of them below f32's largest value, so no score overflows.
pub(crate) const BOUNDED_MAX: f32 = 1e15;
/// Entries are stored in blocks of this many codes (zero padded), the width of the integer kernel.
pub(crate) const LANES: usize = 16;

/// Codes per stored entry for dimension `dim`.
pub(crate) fn code_stride(dim: usize) -> usize {
    dim.next_multiple_of(LANES)
}

/// One vector's integer code: its scale and the terms of its error bound (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Code {
    /// `s = max|v_j| / 127` (0 for the zero vector).
    scale: f64,
    /// `s·Σ|c_j|`.
    code_l1: f64,
    /// `E_v = max|v_j − s·c_j|`.
    residual: f64,
    /// `Σ|v_j|`.
    l1: f64,
    /// The bound does not apply (a component above [`BOUNDED_MAX`] or not finite): always scored exactly.
    exact_only: bool,
}

/// Code `v` into `out` (its [`code_stride`] codes; the padding is zero).
pub(crate) fn encode(v: &[f32], out: &mut [i8]) -> Code {
    out.fill(0);
    if !v.iter().all(|x| x.is_finite() && x.abs() <= BOUNDED_MAX) {
        return Code {
            exact_only: true,
            ..Code::default()
        };
    }
    let max = v.iter().fold(0f64, |m, x| m.max(f64::from(x.abs())));
    let scale = max / CODE_MAX;
    let (mut code_l1, mut residual, mut l1) = (0f64, 0f64, 0f64);
    for (c, x) in out.iter_mut().zip(v) {
        let x = f64::from(*x);
        let q = if scale > 0.0 {
            (x / scale).round().clamp(-CODE_MAX, CODE_MAX)
        } else {
            0.0
        };
        // `q` is an integer within ±127.
        *c = q as i8;
        code_l1 += q.abs();
        residual = residual.max((x - scale * q).abs());
        l1 += x.abs();
    }
    Code {
        scale,
        code_l1: scale * code_l1,
        residual,
        l1,
        exact_only: false,
    }
}

/// The query's integer code and the per-query terms of the bound.
#[derive(Debug, Clone)]
struct QueryCode {
    /// `d`, [`code_stride`] values (zero padded).
    codes: Vec<i16>,
    /// `t`.
    scale: f64,
    /// `R_q`.
    residual: f64,
    /// `Σ|q_j|`.
    l1: f64,
    /// `(γ + 1e-9)·max|q_j|`: the weight of `Σ|v_j|` in the bound.
    rounding: f64,
    /// The bound's absolute term (underflow).
    tiny: f64,
}

/// Code the query, `None` when a component is above [`BOUNDED_MAX`] (or not finite). The codes are bounded so that
/// no integer dot product can overflow an i32: `n·127·max|d_j| < 2^31`.
fn encode_query(q: &[f32]) -> Option<QueryCode> {
    if !q.iter().all(|x| x.is_finite() && x.abs() <= BOUNDED_MAX) {
        return None;
    }
    let stride = code_stride(q.len());
    let limit = (i32::MAX as usize / (stride.max(1) * CODE_MAX as usize)).min(i16::MAX as usize) as f64;
    let max = q.iter().fold(0f64, |m, x| m.max(f64::from(x.abs())));
    let scale = max / limit;
    let mut codes = vec![0i16; stride];
    let (mut residual, mut l1) = (0f64, 0f64);
    for (d, x) in codes.iter_mut().zip(q) {
        let x = f64::from(*x);
        let c = if scale > 0.0 {
            (x / scale).round().clamp(-limit, limit)
        } else {
            0.0
        };
        // `c` is an integer within ±limit <= i16::MAX.
        *d = c as i16;
        residual = residual.max((x - scale * c).abs());
        l1 += x.abs();
    }
    let m = (q.len() + 16) as f64;
    let u = f64::from(f32::EPSILON) / 2.0;
    let gamma = m * u / (1.0 - m * u);
    Some(QueryCode {
        codes,
        scale,
        residual,
        l1,
        rounding: (gamma + 1e-9) * max,
        tiny: m * 2f64.powi(-148),
    })
}

/// Dot product over the shorter length, in eight independent lanes (so the compiler vectorises it): the score of
/// every scan.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Integer dot product of one entry's codes with the query's (equal lengths, a multiple of [`LANES`]). Exact: the
/// query's codes are bounded so that no partial sum overflows.
#[inline(always)]
fn code_dot(c: &[i8], d: &[i16]) -> i32 {
    let mut acc = [0i32; LANES];
    for (x, y) in c.chunks_exact(LANES).zip(d.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += i32::from(x[l]) * i32::from(y[l]);
        }
    }
    acc.iter().sum()
}

/// `sink(i, d·c_i)` for every entry `i < len` for which `keep(i)`, in order. On x86-64 with AVX2 eight entries
/// run at a time (`vpmaddwd`, the query's codes loaded once for the eight); the integers are the same either way.
fn code_dots(
    codes: &[i8],
    stride: usize,
    len: usize,
    query: &[i16],
    keep: &impl Fn(usize) -> bool,
    sink: &mut impl FnMut(usize, i32),
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        simd.vectorize(Avx2Dots {
            simd,
            codes,
            stride,
            len,
            query,
            keep,
            sink,
        });
        return;
    }
    portable_dots(codes, stride, 0, len, query, keep, sink);
}

/// [`code_dots`] of the entries `from..len`, one at a time, without explicit SIMD.
fn portable_dots(
    codes: &[i8],
    stride: usize,
    from: usize,
    len: usize,
    query: &[i16],
    keep: &impl Fn(usize) -> bool,
    sink: &mut impl FnMut(usize, i32),
) {
    for i in from..len {
        if keep(i) {
            sink(i, code_dot(&codes[i * stride..(i + 1) * stride], query));
        }
    }
}

/// [`code_dots`] with AVX2 (run through [`pulp`], which checks the CPU and enables the instructions).
#[cfg(target_arch = "x86_64")]
struct Avx2Dots<'a, K, S> {
    simd: pulp::x86::V3,
    codes: &'a [i8],
    stride: usize,
    len: usize,
    query: &'a [i16],
    keep: &'a K,
    sink: &'a mut S,
}

/// Entries of one AVX2 block.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 8;

#[cfg(target_arch = "x86_64")]
impl<K: Fn(usize) -> bool, S: FnMut(usize, i32)> pulp::NullaryFnOnce for Avx2Dots<'_, K, S> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        use std::arch::x86_64::__m256i;
        let Avx2Dots {
            simd,
            codes,
            stride,
            len,
            query,
            keep,
            sink,
        } = self;
        let (d, _) = pulp::as_arrays::<LANES, i16>(query);
        let d: Vec<__m256i> = d.iter().map(|a| pulp::cast(*a)).collect();
        let avx2 = simd.avx2;
        let blocks = len / BLOCK;
        for b in 0..blocks {
            let first = b * BLOCK;
            // The block after next is fetched while this one is summed (the scan is bound by memory).
            let ahead = (first + 2 * BLOCK) * stride;
            for at in (ahead..(ahead + BLOCK * stride).min(codes.len())).step_by(64) {
                simd.sse
                    ._mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(codes.as_ptr().wrapping_add(at));
            }
            let kept: [bool; BLOCK] = std::array::from_fn(|j| keep(first + j));
            if !kept.contains(&true) {
                continue;
            }
            let rows: [&[[i8; LANES]]; BLOCK] = std::array::from_fn(|j| {
                let at = (first + j) * stride;
                pulp::as_arrays::<LANES, i8>(&codes[at..at + stride]).0
            });
            let mut acc: [__m256i; BLOCK] = [pulp::cast([0i32; 8]); BLOCK];
            for (c, q) in d.iter().enumerate() {
                for j in 0..BLOCK {
                    let x = avx2._mm256_cvtepi8_epi16(pulp::cast(rows[j][c]));
                    acc[j] = avx2._mm256_add_epi32(acc[j], avx2._mm256_madd_epi16(x, *q));
                }
            }
            // Horizontal sums of the eight accumulators, in one register: entry j in lane j.
            let h01 = avx2._mm256_hadd_epi32(acc[0], acc[1]);
            let h23 = avx2._mm256_hadd_epi32(acc[2], acc[3]);
            let h45 = avx2._mm256_hadd_epi32(acc[4], acc[5]);
            let h67 = avx2._mm256_hadd_epi32(acc[6], acc[7]);
            let h0123 = avx2._mm256_hadd_epi32(h01, h23);
            let h4567 = avx2._mm256_hadd_epi32(h45, h67);
            let low = avx2._mm256_permute2x128_si256::<0x20>(h0123, h4567);
            let high = avx2._mm256_permute2x128_si256::<0x31>(h0123, h4567);
            let sums: [i32; BLOCK] = pulp::cast(avx2._mm256_add_epi32(low, high));
            for j in 0..BLOCK {
                if kept[j] {
                    sink(first + j, sums[j]);
                }
            }
        }
        portable_dots(codes, stride, blocks * BLOCK, len, query, keep, sink);
    }
}

/// A finite f64 ordered by value (lower bounds).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bound(f64);

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The first `k` of `scored` under `better`, in that order.
pub(crate) fn select(
    mut scored: Vec<(f32, usize)>,
    k: usize,
    better: impl Fn(&(f32, usize), &(f32, usize)) -> Ordering,
) -> Vec<(f32, usize)> {
    if k == 0 {
        return Vec::new();
    }
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, &better);
        scored.truncate(k);
    }
    scored.sort_by(better);
    scored
}

/// The vectors of one copy: `len` entries of `dim` f32 (`data`) and of [`code_stride`] codes (`codes`, `meta`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vectors<'a> {
    /// `dim` components per entry.
    pub(crate) data: &'a [f32],
    /// [`code_stride`]`(dim)` codes per entry.
    pub(crate) codes: &'a [i8],
    /// One [`Code`] per entry.
    pub(crate) meta: &'a [Code],
    /// Components per vector.
    pub(crate) dim: usize,
}

impl Vectors<'_> {
    fn len(&self) -> usize {
        self.meta.len()
    }

    fn score(&self, i: usize, query: &[f32]) -> f32 {
        dot(&self.data[i * self.dim..(i + 1) * self.dim], query)
    }

    /// The plain scan: every kept entry scored with [`dot`], the first `k` under `better` (score and entry, best
    /// first).
    pub(crate) fn top_plain(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
        better: impl Fn(&(f32, usize), &(f32, usize)) -> Ordering,
    ) -> Vec<(f32, usize)> {
        let scored = (0..self.len())
            .filter(|&i| keep(i))
            .map(|i| (self.score(i, query), i))
            .collect();
        select(scored, k, better)
    }

    /// [`Vectors::top_plain`]'s result, scoring with [`dot`] only the entries the integer pre-selection keeps (see
    /// the module documentation). Also returns how many entries were scored.
    pub(crate) fn top(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
        better: impl Fn(&(f32, usize), &(f32, usize)) -> Ordering,
    ) -> (Vec<(f32, usize)>, usize) {
        let Some(qc) = encode_query(query).filter(|_| k > 0 && query.len() == self.dim) else {
            let all = self.top_plain(query, k, keep, better);
            return (all, self.len());
        };
        // The k best lower bounds seen so far (a min-heap), and the entries whose upper bound reached the k-th.
        let mut lows: std::collections::BinaryHeap<std::cmp::Reverse<Bound>> =
            std::collections::BinaryHeap::with_capacity(k.min(self.len()) + 1);
        let mut kept: Vec<(f64, usize)> = Vec::new();
        let threshold = |lows: &std::collections::BinaryHeap<std::cmp::Reverse<Bound>>| {
            if lows.len() < k {
                f64::NEG_INFINITY
            } else {
                lows.peek().map_or(f64::NEG_INFINITY, |b| b.0.0)
            }
        };
        let stride = code_stride(self.dim);
        code_dots(self.codes, stride, self.len(), &qc.codes, &keep, &mut |i, d| {
            let m = &self.meta[i];
            if m.exact_only {
                kept.push((f64::INFINITY, i));
                return;
            }
            let approx = m.scale * qc.scale * f64::from(d);
            let margin = (qc.residual * m.code_l1 + qc.l1 * m.residual + qc.rounding * m.l1) * (1.0 + 1e-9) + qc.tiny;
            let (lower, upper) = (approx - margin, approx + margin);
            if lows.len() < k {
                lows.push(std::cmp::Reverse(Bound(lower)));
            } else if lows.peek().is_some_and(|b| lower > b.0.0) {
                lows.pop();
                lows.push(std::cmp::Reverse(Bound(lower)));
            }
            if upper >= threshold(&lows) {
                kept.push((upper, i));
            }
        });
        let last = threshold(&lows);
        let scored: Vec<(f32, usize)> = kept
            .into_iter()
            .filter(|(upper, _)| *upper >= last)
            .map(|(_, i)| (self.score(i, query), i))
            .collect();
        let n = scored.len();
        (select(scored, k, better), n)
    }

    /// [`Vectors::top`]'s result, the entries split into `parts` contiguous chunks scanned at once (each on a thread
    /// of its own, the calling thread taking the last), then merged: the top `k` of the union is the top `k` of the
    /// chunks' top `k`, `better` being a total order. The scan of a large copy is bound by memory reads, which a
    /// second core shares out (docs/decisions/0011). A chunk whose thread cannot be started is scanned on the
    /// calling thread.
    pub(crate) fn top_split(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool + Sync,
        better: impl Fn(&(f32, usize), &(f32, usize)) -> Ordering + Sync,
        parts: usize,
    ) -> Vec<(f32, usize)> {
        let n = self.len();
        if parts <= 1 || n < 2 {
            return self.top(query, k, keep, better).0;
        }
        let chunk = n.div_ceil(parts.min(n));
        let stride = code_stride(self.dim);
        let part = |lo: usize| -> Vec<(f32, usize)> {
            let hi = (lo + chunk).min(n);
            let view = Vectors {
                data: &self.data[lo * self.dim..hi * self.dim],
                codes: &self.codes[lo * stride..hi * stride],
                meta: &self.meta[lo..hi],
                dim: self.dim,
            };
            let (top, _) = view.top(
                query,
                k,
                |i| keep(lo + i),
                |a, b| better(&(a.0, lo + a.1), &(b.0, lo + b.1)),
            );
            top.into_iter().map(|(s, i)| (s, lo + i)).collect()
        };
        let starts: Vec<usize> = (0..n).step_by(chunk).collect();
        let (last, others) = starts.split_last().map_or((0, &[][..]), |(l, o)| (*l, o));
        let mut all = Vec::with_capacity(k.saturating_mul(starts.len()));
        std::thread::scope(|scope| {
            let part = &part;
            let mut running = Vec::with_capacity(others.len());
            for &lo in others {
                match std::thread::Builder::new().spawn_scoped(scope, move || part(lo)) {
                    Ok(handle) => running.push(handle),
                    Err(_) => all.extend(part(lo)),
                }
            }
            all.extend(part(last));
            for handle in running {
                match handle.join() {
                    Ok(top) => all.extend(top),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
        select(all, k, better)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A copy of `vectors` (each `dim` long).
    struct Copy {
        data: Vec<f32>,
        codes: Vec<i8>,
        meta: Vec<Code>,
        dim: usize,
    }

    impl Copy {
        fn new(vectors: &[Vec<f32>], dim: usize) -> Self {
            let stride = code_stride(dim);
            let mut codes = vec![0i8; vectors.len() * stride];
            let meta = vectors
                .iter()
                .zip(codes.chunks_exact_mut(stride))
                .map(|(v, c)| encode(v, c))
                .collect();
            Copy {
                data: vectors.concat(),
                codes,
                meta,
                dim,
            }
        }

        fn view(&self) -> Vectors<'_> {
            Vectors {
                data: &self.data,
                codes: &self.codes,
                meta: &self.meta,
                dim: self.dim,
            }
        }
    }

    /// Score descending, then entry ascending (the index's order, entries standing in for ids).
    fn better(a: &(f32, usize), b: &(f32, usize)) -> Ordering {
        b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
    }

    fn same(a: &[(f32, usize)], b: &[(f32, usize)]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.0.to_bits() == y.0.to_bits() && x.1 == y.1)
    }

    /// A deterministic pseudo-random generator (splitmix64), uniform in [-1, 1).
    fn rng(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        }
    }

    fn unit(mut v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        }
        v
    }

    #[test]
    fn the_integer_kernels_agree() {
        let mut r = rng(7);
        for dim in [16usize, 48, 384, 390] {
            let stride = code_stride(dim);
            let codes: Vec<i8> = (0..stride * 50).map(|_| (r() * 127.0) as i8).collect();
            let query: Vec<i16> = (0..stride).map(|_| (r() * 32767.0) as i16).collect();
            let keep = |i: usize| i % 7 != 3;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            code_dots(&codes, stride, 50, &query, &keep, &mut |i, d| a.push((i, d)));
            portable_dots(&codes, stride, 0, 50, &query, &keep, &mut |i, d| b.push((i, d)));
            assert_eq!(a, b);
            let naive: Vec<(usize, i32)> = (0..50)
                .filter(|&i| keep(i))
                .map(|i| {
                    let c = &codes[i * stride..(i + 1) * stride];
                    (
                        i,
                        c.iter().zip(&query).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum(),
                    )
                })
                .collect();
            assert_eq!(a, naive);
        }
    }

    #[test]
    fn the_largest_codes_do_not_overflow() {
        for dim in [384usize, crate::MAX_VECTOR_DIM] {
            let v = vec![1.0f32; dim];
            let copy = Copy::new(std::slice::from_ref(&v), dim);
            let qc = encode_query(&v).expect("bounded");
            let mut got = Vec::new();
            code_dots(&copy.codes, code_stride(dim), 1, &qc.codes, &|_| true, &mut |_, d| {
                got.push(d)
            });
            let expected: i64 = qc.codes.iter().map(|d| 127 * i64::from(*d)).sum();
            assert_eq!(got.iter().map(|d| i64::from(*d)).collect::<Vec<_>>(), [expected]);
        }
    }

    #[test]
    fn the_pre_selection_scores_few_vectors_and_finds_the_plain_top() {
        let dim = 384;
        let mut r = rng(11);
        let vectors: Vec<Vec<f32>> = (0..20_000).map(|_| unit((0..dim).map(|_| r()).collect())).collect();
        let copy = Copy::new(&vectors, dim);
        for seed in 0..5u64 {
            let mut r = rng(100 + seed);
            // A query near one stored vector, as a real one is near its matches.
            let base = &vectors[(seed as usize * 977) % vectors.len()];
            let q = unit(base.iter().map(|x| x + 0.05 * r()).collect());
            let plain = copy.view().top_plain(&q, 50, |_| true, better);
            let (top, scored) = copy.view().top(&q, 50, |_| true, better);
            assert!(same(&plain, &top), "{plain:?}\n{top:?}");
            assert!(scored < 2_000, "{scored} of 20000 scored");
            assert!(same(&plain, &copy.view().top_split(&q, 50, |_| true, better, 2)));
        }
    }

    #[test]
    fn ties_and_duplicates_keep_the_plain_order() {
        let dim = 32;
        let mut r = rng(3);
        let a = unit((0..dim).map(|_| r()).collect());
        let b = unit((0..dim).map(|_| r()).collect());
        let mut vectors = Vec::new();
        for i in 0..300 {
            // Exact duplicates, and copies a few ulps apart.
            let mut v = if i % 2 == 0 { a.clone() } else { b.clone() };
            if i % 3 == 0 {
                v[i % dim] = f32::from_bits(v[i % dim].to_bits() + (i as u32 % 5));
            }
            vectors.push(v);
        }
        let copy = Copy::new(&vectors, dim);
        for k in [1, 7, 50, 150, 299, 300, 400] {
            let plain = copy.view().top_plain(&a, k, |i| i % 11 != 0, better);
            let (top, _) = copy.view().top(&a, k, |i| i % 11 != 0, better);
            assert!(same(&plain, &top), "k {k}");
            for parts in [2, 4] {
                let split = copy.view().top_split(&a, k, |i| i % 11 != 0, better, parts);
                assert!(same(&plain, &split), "k {k} parts {parts}");
            }
            // Ties broken by a name that does not follow the entry order (as memory ids do not).
            let name = |i: usize| (i * 7919) % 300;
            let by_name = |x: &(f32, usize), y: &(f32, usize)| y.0.total_cmp(&x.0).then(name(x.1).cmp(&name(y.1)));
            let plain = copy.view().top_plain(&a, k, |i| i % 11 != 0, by_name);
            for parts in [2, 4] {
                let split = copy.view().top_split(&a, k, |i| i % 11 != 0, by_name, parts);
                assert!(same(&plain, &split), "k {k} parts {parts}, ties by name");
            }
        }
    }

    fn component() -> impl Strategy<Value = f32> {
        prop_oneof![
            8 => -1.0f32..1.0,
            1 => Just(0.0f32),
            1 => -1e-30f32..1e-30,
            1 => prop_oneof![Just(f32::MIN_POSITIVE), Just(-1e-45f32), Just(3e38f32), Just(-2e15f32)],
            1 => -1e12f32..1e12,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the vectors (zero, tiny, huge, duplicated, near ties), the query, `k` and the filter, the
        /// pre-selected scan returns exactly the plain scan's entries, order and scores.
        #[test]
        fn the_pre_selected_scan_equals_the_plain_scan(
            dim in 1usize..40,
            raw in prop::collection::vec(prop::collection::vec(component(), 40), 0..120),
            dupes in prop::collection::vec((0usize..120, 0usize..120, 0u32..4), 0..40),
            q in prop::collection::vec(component(), 40),
            k in 0usize..130,
            skip in 1usize..9,
        ) {
            let mut vectors: Vec<Vec<f32>> = raw.into_iter().map(|v| v[..dim].to_vec()).collect();
            for (from, to, ulps) in dupes {
                if from < vectors.len() && to < vectors.len() {
                    let mut v = vectors[from].clone();
                    let j = to % dim;
                    v[j] = f32::from_bits(v[j].to_bits().wrapping_add(ulps));
                    if v[j].is_finite() {
                        vectors[to] = v;
                    }
                }
            }
            let copy = Copy::new(&vectors, dim);
            let q = &q[..dim];
            let keep = |i: usize| i % skip != skip - 1;
            let plain = copy.view().top_plain(q, k, keep, better);
            let (top, _) = copy.view().top(q, k, keep, better);
            prop_assert!(same(&plain, &top), "{:?}\n{:?}", plain, top);
            for parts in [2, 3, 7] {
                let split = copy.view().top_split(q, k, keep, better, parts);
                prop_assert!(same(&plain, &split), "parts {}: {:?}\n{:?}", parts, plain, split);
            }
            // Unit vectors, as the model writes them.
            let units: Vec<Vec<f32>> =
                vectors.iter().map(|v| unit(v.iter().map(|x| x.clamp(-1.0, 1.0)).collect())).collect();
            let copy = Copy::new(&units, dim);
            let q = unit(q.iter().map(|x| x.clamp(-1.0, 1.0)).collect());
            let plain = copy.view().top_plain(&q, k, keep, better);
            let (top, _) = copy.view().top(&q, k, keep, better);
            prop_assert!(same(&plain, &top), "{:?}\n{:?}", plain, top);
        }
    }
}
