//! Attention's blocks with bf16 products (f32 accumulation), for `Precision::Bf16`.
//!
//! The same blocks as the f32 path above, with every product on the bf16 kernel (AMX tiles,
//! else `vdpbf16ps`, else the portable loop): the mixed precision of PyTorch's bf16 attention
//! under autocast. Scores, the softmax and dS = P (dP - rowsum(P dP)) stay f32; their operands
//! are rounded to bf16 for the next product, as a flash-attention kernel does on a GPU.
//!
//! One task per key/value head in both passes: the head's keys and values are converted once
//! for its G query heads and all their blocks, each query head's rows once for its blocks. A
//! block's key range starts at a multiple of [`KEY_ALIGN`], so it starts a panel of keys (48)
//! and a k-step of the tiles (32 keys); the keys before the first real one that this brings in
//! are masked like any padding.

use super::{first_real, key_range, rows_from_lse, rows_to_probs, rows_to_probs_lse, Geom, QB};
use crate::ops::bf16::{Bf16Kernel, BlockLeft, BlockRight};
use rayon::prelude::*;

/// Where a block's key range may start: a multiple of a panel's 48 columns and of the tiles'
/// 32-element k-step.
const KEY_ALIGN: usize = 96;

/// The key range of query rows t0..t1 of batch row `b`, its start aligned down to
/// [`KEY_ALIGN`]; None when the rows see no key.
fn block_keys(firsts: &[usize], b: usize, t1: usize, geo: &Geom) -> Option<(usize, usize)> {
    let (lo, hi) = key_range(firsts[b], t1, geo);
    (lo < hi).then_some((lo / KEY_ALIGN * KEY_ALIGN, hi))
}

/// The forward pass on bf16 products: out [.., G*T, D] like q, and each query row's
/// log-sum-exp of its scores ([.., G*T]; -inf for a row that sees no key) for [`backward`].
pub(super) fn forward(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    geo: Geom,
    mask: &[Vec<u32>],
    kernel: Bf16Kernel,
) -> (Vec<f32>, Vec<f32>) {
    let (t, s, d, g) = (geo.t, geo.s, geo.d, geo.g);
    let firsts = first_real(mask);
    let mut out = vec![0f32; q.len()];
    let mut lse = vec![f32::NEG_INFINITY; q.len() / d.max(1)];
    if t == 0 || d == 0 {
        return (out, lse);
    }
    out.par_chunks_mut(g * t * d)
        .zip(lse.par_chunks_mut(g * t))
        .enumerate()
        .for_each(|(kvu, (o_kv, lse_kv))| {
            let b = kvu / geo.h;
            let kv = geo.kv_offset(b, kvu % geo.h);
            let (k_h, v_h) = (&k[kv..kv + s * d], &v[kv..kv + s * d]);
            // S = Q K^T takes the keys as columns, O = P V the values as k.
            let keys = BlockRight::pack(kernel, k_h, (s, d), (d, 1));
            let values = BlockRight::pack(kernel, v_h, (d, s), (1, d));
            let mut p = Vec::new();
            for (gi, (o, lse_u)) in o_kv.chunks_mut(t * d).zip(lse_kv.chunks_mut(t)).enumerate() {
                let u = kvu * g + gi;
                let q_rows = BlockLeft::convert(kernel, &q[u * t * d..], (t, d), (d, 1));
                for t0 in (0..t).step_by(QB) {
                    let t1 = (t0 + QB).min(t);
                    let Some((lo, hi)) = block_keys(&firsts, b, t1, &geo) else {
                        continue;
                    };
                    let (qb, kn) = (t1 - t0, hi - lo);
                    p.resize(qb * kn, 0f32);
                    keys.product(&q_rows, t0..t1, 0, (lo, hi), &mut p, kn);
                    let qpos = |i| geo.past + t0 + i;
                    let lse_b = Some(&mut lse_u[t0..t1]);
                    rows_to_probs_lse(&mut p, (qb, lo, hi), qpos, &mask[b], lse_b);
                    let p_rows = BlockLeft::convert(kernel, &p, (qb, kn), (kn, 1));
                    values.product(&p_rows, 0..qb, lo, (0, d), &mut o[t0 * d..t1 * d], d);
                }
            }
        });
    (out, lse)
}

/// dq (like q) and dk, dv (contiguous [B, KVH, S, D]) on bf16 products; the probabilities are
/// recomputed as the forward pass made them, with one `exp` a score from the forward's
/// log-sum-exps where they are given (else with the forward's max and sum passes too).
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    dout: &[f32],
    geo: Geom,
    mask: &[Vec<u32>],
    kernel: Bf16Kernel,
    lse: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (t, s, d, g) = (geo.t, geo.s, geo.d, geo.g);
    let firsts = first_real(mask);
    let n_kv = q.len() / (g * t * d).max(1);
    let mut dq = vec![0f32; q.len()];
    let mut dk = vec![0f32; n_kv * s * d];
    let mut dv = vec![0f32; n_kv * s * d];
    if t == 0 || d == 0 {
        return (dq, dk, dv);
    }
    dq.par_chunks_mut(g * t * d)
        .zip(dk.par_chunks_mut(s * d))
        .zip(dv.par_chunks_mut(s * d))
        .enumerate()
        .for_each(|(kvu, ((dq_kv, dk), dv))| {
            let b = kvu / geo.h;
            let kv = geo.kv_offset(b, kvu % geo.h);
            let (k_h, v_h) = (&k[kv..kv + s * d], &v[kv..kv + s * d]);
            // S = Q K^T and dP = dO V^T take keys and values as columns; dQ = dS K the keys
            // as k.
            let keys = BlockRight::pack(kernel, k_h, (s, d), (d, 1));
            let values = BlockRight::pack(kernel, v_h, (s, d), (d, 1));
            let keys_k = BlockRight::pack(kernel, k_h, (d, s), (1, d));
            let (mut p, mut ds, mut part) = (Vec::new(), Vec::new(), Vec::new());
            for (gi, dq_u) in dq_kv.chunks_mut(t * d).enumerate() {
                let u = kvu * g + gi;
                let (q_u, do_u) = (
                    &q[u * t * d..(u + 1) * t * d],
                    &dout[u * t * d..(u + 1) * t * d],
                );
                let q_rows = BlockLeft::convert(kernel, q_u, (t, d), (d, 1));
                let do_rows = BlockLeft::convert(kernel, do_u, (t, d), (d, 1));
                // dK += dS^T Q and dV += P^T dO take the queries as k.
                let q_k = BlockRight::pack(kernel, q_u, (d, t), (1, d));
                let do_k = BlockRight::pack(kernel, do_u, (d, t), (1, d));
                for t0 in (0..t).step_by(QB) {
                    let t1 = (t0 + QB).min(t);
                    let Some((lo, hi)) = block_keys(&firsts, b, t1, &geo) else {
                        continue;
                    };
                    let (qb, kn) = (t1 - t0, hi - lo);
                    p.resize(qb * kn, 0f32);
                    ds.resize(qb * kn, 0f32);
                    part.resize(kn * d, 0f32);
                    keys.product(&q_rows, t0..t1, 0, (lo, hi), &mut p, kn);
                    let qpos = |i| geo.past + t0 + i;
                    match lse {
                        Some(l) => {
                            let at = u * t;
                            let l = &l[at + t0..at + t1];
                            rows_from_lse(&mut p, (qb, lo, hi), qpos, &mask[b], l);
                        }
                        None => rows_to_probs(&mut p, (qb, lo, hi), qpos, &mask[b]),
                    }
                    // dP = dO V^T, then dS = P (dP - rowsum(P dP)).
                    values.product(&do_rows, t0..t1, 0, (lo, hi), &mut ds, kn);
                    for (pr, dr) in p.chunks_exact(kn).zip(ds.chunks_exact_mut(kn)) {
                        let di = crate::ops::gemv::Dot::dot(pr, dr);
                        for (x, &pp) in dr.iter_mut().zip(pr) {
                            *x = pp * (*x - di);
                        }
                    }
                    let ds_rows = BlockLeft::convert(kernel, &ds, (qb, kn), (kn, 1));
                    keys_k.product(&ds_rows, 0..qb, lo, (0, d), &mut dq_u[t0 * d..t1 * d], d);
                    drop(ds_rows);
                    let ds_t = BlockLeft::convert(kernel, &ds, (kn, qb), (1, kn));
                    q_k.product(&ds_t, 0..kn, t0, (0, d), &mut part, d);
                    add_into(&mut dk[lo * d..hi * d], &part);
                    drop(ds_t);
                    let p_t = BlockLeft::convert(kernel, &p, (kn, qb), (1, kn));
                    do_k.product(&p_t, 0..kn, t0, (0, d), &mut part, d);
                    add_into(&mut dv[lo * d..hi * d], &part);
                }
            }
        });
    (dq, dk, dv)
}

fn add_into(dst: &mut [f32], src: &[f32]) {
    for (a, &b) in dst.iter_mut().zip(src) {
        *a += b;
    }
}

#[cfg(test)]
mod tests {
    use super::super::causal_attention_in;
    use super::*;
    use crate::precision::Precision;
    use candle_core::{DType, Device, Tensor, Var};

    /// Values in (-1.5, 1.5) from a fixed sequence (`seed` picks one), so failures repeat.
    fn rand(shape: (usize, usize, usize, usize), seed: usize) -> Tensor {
        let n = shape.0 * shape.1 * shape.2 * shape.3;
        let v: Vec<f32> = (0..n)
            .map(|i| ((((i * 7919 + seed * 104_729) % 2003) as f32 / 2003.0) - 0.5) * 3.0)
            .collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    fn flat(x: &Tensor) -> Vec<f32> {
        x.flatten_all().unwrap().to_vec1().unwrap()
    }

    /// max |a - b| over max |b|.
    fn rel_err(a: &Tensor, b: &Tensor) -> f32 {
        let (a, b) = (flat(a), flat(b));
        let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
        let err = a
            .iter()
            .zip(&b)
            .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        err / scale
    }

    /// Left padding past a whole key block (row 0: the aligned range starts before the first
    /// real key), right padding (row 1), G = 3 query heads per key/value head, ragged blocks, a
    /// cache before the queries: outputs and gradients on bf16 products against the f32 path,
    /// within bf16's rounding. A wrong key range or block index would be off by O(1).
    #[test]
    fn bf16_blocks_match_the_f32_path_within_rounding() {
        for (t, past) in [(170usize, 0usize), (130, 150)] {
            let s = past + t;
            let mut m0 = vec![1u32; s];
            m0[..100].iter_mut().for_each(|x| *x = 0);
            let mut m1 = vec![1u32; s];
            m1[s - 5..].iter_mut().for_each(|x| *x = 0);
            let mask = vec![m0, m1];
            let q = Var::from_tensor(&(rand((2, 2, 3 * t, 64), 1) * 0.125).unwrap()).unwrap();
            let k = Var::from_tensor(&rand((2, 2, s, 64), 2)).unwrap();
            let v = Var::from_tensor(&rand((2, 2, s, 64), 3)).unwrap();
            let proj = rand((2, 2, 3 * t, 64), 4);
            let run = |precision| {
                let out = causal_attention_in(&q, &k, &v, &mask, past, precision).unwrap();
                let grads = (&out * &proj)
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .backward()
                    .unwrap();
                let g = |x: &Var| grads.get(x.as_tensor()).unwrap().clone();
                [out, g(&q), g(&k), g(&v)]
            };
            let (ours, want) = (run(Precision::Bf16), run(Precision::F32));
            for (name, a, b) in ["out", "dq", "dk", "dv"]
                .iter()
                .zip(&ours)
                .zip(&want)
                .map(|((n, a), b)| (n, a, b))
            {
                let err = rel_err(a, b);
                assert!(
                    err < 2e-2,
                    "t {t} past {past}: {name} off by {err} of its largest"
                );
                assert!(err > 0.0, "t {t} past {past}: {name} is the f32 path's");
            }
        }
    }

    /// Every kernel this CPU runs gives the same attention as the portable loop, up to f32
    /// rounding carried through the bf16 rounding of P and dS (an f32 ulp apart can round to
    /// neighbouring bf16 values, 2^-8 apart: hence 1e-3, not 1e-6).
    #[test]
    fn every_kernel_gives_the_same_attention() {
        let (t, past) = (100usize, 60usize);
        let s = t + past;
        let mask = vec![{
            let mut m = vec![1u32; s];
            m[..7].iter_mut().for_each(|x| *x = 0);
            m
        }];
        let q = (rand((1, 1, 2 * t, 64), 5) * 0.125).unwrap();
        let (k, v, dout) = (
            rand((1, 1, s, 64), 6),
            rand((1, 1, s, 64), 7),
            rand((1, 1, 2 * t, 64), 8),
        );
        let geo = Geom {
            h: 1,
            g: 2,
            t,
            s,
            d: 64,
            past,
            kv_start: 0,
            kv_sb: s * 64,
            kv_sh: s * 64,
        };
        let (q, k, v, dout) = (flat(&q), flat(&k), flat(&v), flat(&dout));
        let run = |kernel| {
            let (out, lse) = forward(&q, &k, &v, geo, &mask, kernel);
            let (dq, dk, dv) = backward(&q, &k, &v, &dout, geo, &mask, kernel, Some(&lse));
            // Without the log-sum-exps the probabilities are recomputed in full: the same
            // gradients up to rounding.
            let full = backward(&q, &k, &v, &dout, geo, &mask, kernel, None);
            for (a, b) in [(&dq, &full.0), (&dk, &full.1), (&dv, &full.2)] {
                let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
                let err = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
                assert!(
                    err <= 1e-3 * scale,
                    "{}: lse path off by {err}",
                    kernel.name()
                );
            }
            [out, dq, dk, dv]
        };
        let want = run(Bf16Kernel::Portable);
        for kernel in Bf16Kernel::ALL.into_iter().filter(|k| k.available()) {
            for (a, b) in run(kernel).iter().zip(&want) {
                let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
                let err = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
                assert!(
                    err <= 1e-3 * scale,
                    "{}: off by {err} of {scale}",
                    kernel.name()
                );
            }
        }
        let _ = DType::F32;
    }
}
