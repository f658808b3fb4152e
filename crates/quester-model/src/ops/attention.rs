//! Causal self-attention as one fused op, flash-attention style on the CPU.
//!
//! The unfused form keeps three [heads, T, S] tensors per layer alive for the backward pass
//! (scores, masked scores, probabilities): on a 1.5k-token multi-turn prompt that is gigabytes
//! per sequence. Here the scores of one block of query rows at a time are built with `gemm`,
//! turned into probabilities and consumed; nothing of size T x S outlives the block, and the
//! backward pass recomputes them. Keys before a row's first real token (left padding) and after
//! its position (causality) are skipped, not masked, so the causal half is never computed.

mod bf16;

use super::attention_rows::{add_weighted, scores, CacheElem};
use super::gemm::mm;
use super::reduce::{lane_max, lane_sum};
use super::{contiguous, host, Float};
use crate::precision::Precision;
use candle_core::{bail, CpuStorage, CustomOp3, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;
use std::sync::Arc;

/// Query rows per block: the block's score matrix is [QB, S].
const QB: usize = 64;

/// Below this many query positions (decoding's one new token per sequence) the forward pass
/// takes [`forward_few`].
const FEW_ROWS: usize = 8;

/// Attention of grouped queries over their key/value head with a causal + padding mask.
///
/// - `q` [B, KVH, G*T, D], already scaled by 1/sqrt(D); row `g*T + t` is query `t` of the
///   `g`-th head sharing this key/value head.
/// - `k`, `v` [B, KVH, S, D]; they may be a narrowed view of a larger cache along S.
/// - Query `t` sits at cache position `past + t` (S = past + T) and attends the keys
///   `j <= past + t` with `key_mask[b][j] != 0`. A row with no visible key outputs zeros.
///
/// Returns [B, KVH, G*T, D]. Differentiable in q, k and v.
pub fn causal_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    key_mask: &[Vec<u32>],
    past: usize,
) -> Result<Tensor> {
    causal_attention_in(q, k, v, key_mask, past, Precision::F32)
}

/// [`causal_attention`] with its products in `precision`: under [`Precision::Bf16`] the blocks'
/// products (scores, P V and the backward's four) take bf16 operands and accumulate in f32 on
/// the CPU's bf16 kernel, like PyTorch's attention under bf16 autocast; the softmax stays f32.
/// Decoding's few query rows keep the f32 row kernels (they are bound by reading the cache).
/// f64 inputs and other devices ignore the precision.
pub fn causal_attention_in(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    key_mask: &[Vec<u32>],
    past: usize,
    precision: Precision,
) -> Result<Tensor> {
    let (b, h, rows, d) = q.dims4()?;
    let (kb, kh, s, kd) = k.dims4()?;
    if (kb, kh, kd) != (b, h, d) || v.dims4()? != (b, h, s, d) {
        bail!(
            "attention: q {:?}, k {:?}, v {:?} do not match",
            q.dims(),
            k.dims(),
            v.dims()
        );
    }
    if s < past || s - past == 0 || rows % (s - past) != 0 {
        bail!("attention: {rows} query rows do not fit {s} keys after {past} cached ones");
    }
    if key_mask.len() != b || key_mask.iter().any(|m| m.len() != s) {
        bail!("attention: key mask must be [{b}][{s}]");
    }
    if super::portable::wanted(q.device()) && !fused_on_gpu(q) {
        return super::portable::causal_attention(q, k, v, key_mask, past);
    }
    let op = Attention {
        mask: Arc::new(key_mask.to_vec()),
        past,
        bf16: (precision == Precision::Bf16).then(crate::ops::bf16::Bf16Kernel::best),
        lse: std::sync::Mutex::new(None),
    };
    q.contiguous()?.apply_op3(&kv_view(k)?, &kv_view(v)?, op)
}

/// Whether `q` is on a GPU where the fused CUDA forward (`cuda/kernels.cu`) runs: f32, a head
/// of at most 256, and the kernels not turned off. Its backward is the portable one.
fn fused_on_gpu(q: &Tensor) -> bool {
    cfg!(feature = "cuda")
        && q.device().is_cuda()
        && crate::cuda_kernels_enabled()
        && q.dtype() == candle_core::DType::F32
        && q.dims().last().is_some_and(|&d| d <= CUDA_MAX_HEAD_DIM)
}

/// The widest head the CUDA kernel takes (8 elements per lane of a warp).
const CUDA_MAX_HEAD_DIM: usize = 256;

/// `k` as is when its rows are contiguous (a cache narrowed along S is), else a copy.
fn kv_view(k: &Tensor) -> Result<Tensor> {
    let st = k.stride();
    let d = k.dims()[3];
    if st[3] == 1 && st[2] == d {
        Ok(k.clone())
    } else {
        k.contiguous()
    }
}

struct Attention {
    mask: Arc<Vec<Vec<u32>>>,
    past: usize,
    /// The kernel of bf16 products, or None for f32 ones.
    bf16: Option<crate::ops::bf16::Bf16Kernel>,
    /// The bf16 forward's log-sum-exp of each query row, for the backward pass (a float a
    /// row; the probabilities themselves are what this op never keeps).
    lse: std::sync::Mutex<Option<Vec<f32>>>,
}

/// Shapes and strides of one call.
#[derive(Clone, Copy)]
struct Geom {
    h: usize,
    g: usize,
    t: usize,
    s: usize,
    d: usize,
    past: usize,
    /// Element offset and batch / head strides of k and v (rows are contiguous).
    kv_start: usize,
    kv_sb: usize,
    kv_sh: usize,
}

impl Geom {
    fn kv_offset(&self, b: usize, h: usize) -> usize {
        self.kv_start + b * self.kv_sb + h * self.kv_sh
    }
}

/// Index of the first real key of each batch row (S when there is none).
fn first_real(mask: &[Vec<u32>]) -> Vec<usize> {
    mask.iter()
        .map(|m| m.iter().position(|&x| x != 0).unwrap_or(m.len()))
        .collect()
}

/// Scores [qb, hi - lo] of query rows `t0..t0+qb` over keys `lo..hi`, turned in place into
/// probabilities (zero where masked; an all-masked row stays zero).
#[allow(clippy::too_many_arguments)]
fn block_probs<T: Float>(
    p: &mut [T],
    q_rows: &[T],
    k_rows: &[T],
    (qb, lo, hi): (usize, usize, usize),
    t0: usize,
    geo: &Geom,
    mask: &[u32],
) {
    let (d, kn) = (geo.d, hi - lo);
    mm((qb, kn, d), p, kn, false, q_rows, (d, 1), k_rows, (1, d));
    rows_to_probs(p, (qb, lo, hi), |i| geo.past + t0 + i, mask);
}

/// Score rows [qb, hi - lo] over keys `lo..hi` turned in place into probabilities, row `i`
/// being the query at cache position `qpos(i)` (zero where masked; an all-masked row stays
/// zero).
fn rows_to_probs<T: Float>(
    p: &mut [T],
    dims: (usize, usize, usize),
    qpos: impl Fn(usize) -> usize,
    mask: &[u32],
) {
    rows_to_probs_lse(p, dims, qpos, mask, None);
}

/// The row of `p` for query `i` (at cache position `qpos`) over keys `lo..hi`: the keys it may
/// see (the masked ones set to -inf, for e^-inf = 0), the rest after causality set to zero.
fn live_keys<'a, T: Float>(
    row: &'a mut [T],
    (lo, qpos): (usize, usize),
    keys: &[u32],
    holes: bool,
) -> &'a mut [T] {
    let seen = (qpos + 1).saturating_sub(lo).min(row.len());
    let (live, after) = row.split_at_mut(seen);
    after.fill(T::zero());
    if holes {
        for (x, &m) in live.iter_mut().zip(keys) {
            if m == 0 {
                *x = T::neg_infinity();
            }
        }
    }
    live
}

/// [`rows_to_probs`], also writing each row's log-sum-exp of its visible scores to `lse` (-inf
/// for a row that sees no key), from which [`rows_from_lse`] gives the same probabilities
/// again without the max and sum passes.
fn rows_to_probs_lse<T: Float>(
    p: &mut [T],
    (qb, lo, hi): (usize, usize, usize),
    qpos: impl Fn(usize) -> usize,
    mask: &[u32],
    mut lse: Option<&mut [T]>,
) {
    let kn = hi - lo;
    // Causality cuts each row at a position, so the keys after it are a range set to zero;
    // the mask is read key by key only when it has holes in this block (left padding is
    // already cut off by `lo`). The row's passes are then plain slice loops.
    let keys = &mask[lo..hi];
    let holes = keys.contains(&0);
    for i in 0..qb {
        let live = live_keys(&mut p[i * kn..(i + 1) * kn], (lo, qpos(i)), keys, holes);
        let mx = lane_max(live);
        if mx == T::neg_infinity() {
            live.fill(T::zero());
            if let Some(l) = lse.as_deref_mut() {
                l[i] = T::neg_infinity();
            }
            continue;
        }
        T::exp_shifted(live, mx);
        let sum = lane_sum(live);
        let inv = T::one() / sum;
        live.iter_mut().for_each(|x| *x *= inv);
        if let Some(l) = lse.as_deref_mut() {
            l[i] = mx + sum.ln();
        }
    }
}

/// Score rows turned into probabilities as [`rows_to_probs_lse`] did for the same scores, from
/// the log-sum-exps it wrote: one `exp` pass a row (the backward pass's recomputation).
fn rows_from_lse<T: Float>(
    p: &mut [T],
    (qb, lo, hi): (usize, usize, usize),
    qpos: impl Fn(usize) -> usize,
    mask: &[u32],
    lse: &[T],
) {
    let kn = hi - lo;
    let keys = &mask[lo..hi];
    let holes = keys.contains(&0);
    for i in 0..qb {
        let live = live_keys(&mut p[i * kn..(i + 1) * kn], (lo, qpos(i)), keys, holes);
        if lse[i] == T::neg_infinity() {
            live.fill(T::zero());
        } else {
            T::exp_shifted(live, lse[i]);
        }
    }
}

/// The key range [lo, hi) of query rows t0..t1 of a batch row whose first real key is `first`.
fn key_range(first: usize, t1: usize, geo: &Geom) -> (usize, usize) {
    let hi = geo.past + t1;
    (first.min(hi), hi)
}

fn forward<T: Float>(q: &[T], k: &[T], v: &[T], geo: Geom, mask: &[Vec<u32>]) -> Vec<T> {
    if geo.t < FEW_ROWS {
        return forward_few(q, k, v, geo, mask);
    }
    let (t, d) = (geo.t, geo.d);
    let firsts = first_real(mask);
    let mut out = vec![T::zero(); q.len()];
    // One task per query head: (b, kv head, g) in q's row order.
    out.par_chunks_mut(t * d).enumerate().for_each(|(u, o)| {
        let (b, h) = (u / (geo.h * geo.g), (u / geo.g) % geo.h);
        let q_u = &q[u * t * d..(u + 1) * t * d];
        let kv = geo.kv_offset(b, h);
        let mut p = Vec::new();
        for t0 in (0..t).step_by(QB) {
            let t1 = (t0 + QB).min(t);
            let (lo, hi) = key_range(firsts[b], t1, &geo);
            if lo == hi {
                continue;
            }
            let qb = t1 - t0;
            p.resize(qb * (hi - lo), T::zero());
            let (k_rows, v_rows) = (&k[kv + lo * d..], &v[kv + lo * d..]);
            block_probs(
                &mut p,
                &q_u[t0 * d..],
                k_rows,
                (qb, lo, hi),
                t0,
                &geo,
                &mask[b],
            );
            mm(
                (qb, d, hi - lo),
                &mut o[t0 * d..t1 * d],
                d,
                false,
                &p,
                (hi - lo, 1),
                v_rows,
                (d, 1),
            );
        }
    });
    out
}

/// [`forward`] for a few query positions (decoding): one task per key/value head takes the
/// queries of all its G heads together, so each key and value row is read once for all of them
/// (per query head it was read G times), with the row kernels of [`super::attention_rows`]
/// instead of gemm.
///
/// Keys and values may be bf16 for f32 queries (a bf16 KV cache): the row kernels widen them
/// as they load them.
fn forward_few<T: Float, K: CacheElem<T>>(
    q: &[T],
    k: &[K],
    v: &[K],
    geo: Geom,
    mask: &[Vec<u32>],
) -> Vec<T> {
    let (t, d) = (geo.t, geo.d);
    let rows = geo.g * t;
    let firsts = first_real(mask);
    let mut out = vec![T::zero(); q.len()];
    if rows == 0 || d == 0 {
        return out;
    }
    out.par_chunks_mut(rows * d)
        .enumerate()
        .for_each(|(kvu, o)| {
            let (b, h) = (kvu / geo.h, kvu % geo.h);
            let q_kv = &q[kvu * rows * d..(kvu + 1) * rows * d];
            let kv = geo.kv_offset(b, h);
            // Every row's keys lie in the range of the last position (row g*T + i is position i).
            let (lo, hi) = key_range(firsts[b], t, &geo);
            if lo == hi {
                return;
            }
            let kn = hi - lo;
            let mut p = vec![T::zero(); rows * kn];
            let (k_rows, v_rows) = (&k[kv + lo * d..], &v[kv + lo * d..]);
            scores(q_kv, k_rows, (rows, kn, d), &mut p, kn);
            rows_to_probs(&mut p, (rows, lo, hi), |r| geo.past + r % t, &mask[b]);
            add_weighted(&p, kn, v_rows, (rows, kn, d), o);
        });
    out
}

/// dq (like q) and dk, dv (contiguous [B, KVH, S, D]).
///
/// One task per key/value head: its G query heads run one after another and add into the
/// head's dk and dv directly. (Per query head, each task zeroed a dk and dv of its own, and a
/// second pass summed the G of them: G times the memory to zero, write and read again, 3-4% of
/// a GRPO-shaped step.) The sums run in a fixed order, whatever the thread count.
fn backward<T: Float>(
    q: &[T],
    k: &[T],
    v: &[T],
    dout: &[T],
    geo: Geom,
    mask: &[Vec<u32>],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (t, s, d, g) = (geo.t, geo.s, geo.d, geo.g);
    let firsts = first_real(mask);
    let n_kv = q.len() / (g * t * d).max(1);
    // dq stays zero where a block sees no key; dk and dv collect sums.
    let mut dq = vec![T::zero(); q.len()];
    let mut dk = vec![T::zero(); n_kv * s * d];
    let mut dv = vec![T::zero(); n_kv * s * d];
    dq.par_chunks_mut(g * t * d)
        .zip(dk.par_chunks_mut(s * d))
        .zip(dv.par_chunks_mut(s * d))
        .enumerate()
        .for_each(|(kvu, ((dq_kv, dk), dv))| {
            let b = kvu / geo.h;
            let kv = geo.kv_offset(b, kvu % geo.h);
            let (mut p, mut ds) = (Vec::new(), Vec::new());
            for (gi, dq_u) in dq_kv.chunks_mut(t * d).enumerate() {
                let u = kvu * g + gi;
                let q_u = &q[u * t * d..(u + 1) * t * d];
                let do_u = &dout[u * t * d..(u + 1) * t * d];
                for t0 in (0..t).step_by(QB) {
                    let t1 = (t0 + QB).min(t);
                    let (lo, hi) = key_range(firsts[b], t1, &geo);
                    if lo == hi {
                        continue;
                    }
                    let (qb, kn) = (t1 - t0, hi - lo);
                    p.resize(qb * kn, T::zero());
                    ds.resize(qb * kn, T::zero());
                    let (k_rows, v_rows) = (&k[kv + lo * d..], &v[kv + lo * d..]);
                    let (q_b, do_b) = (&q_u[t0 * d..t1 * d], &do_u[t0 * d..t1 * d]);
                    block_probs(&mut p, q_b, k_rows, (qb, lo, hi), t0, &geo, &mask[b]);
                    // dP = dO V^T, then dS = P (dP - rowsum(P dP)).
                    mm(
                        (qb, kn, d),
                        &mut ds,
                        kn,
                        false,
                        do_b,
                        (d, 1),
                        v_rows,
                        (1, d),
                    );
                    for i in 0..qb {
                        let (pr, dr) = (&p[i * kn..(i + 1) * kn], &mut ds[i * kn..(i + 1) * kn]);
                        let di = T::dot(pr, dr);
                        for (x, &pp) in dr.iter_mut().zip(pr) {
                            *x = pp * (*x - di);
                        }
                    }
                    mm(
                        (qb, d, kn),
                        &mut dq_u[t0 * d..t1 * d],
                        d,
                        false,
                        &ds,
                        (kn, 1),
                        k_rows,
                        (d, 1),
                    );
                    mm(
                        (kn, d, qb),
                        &mut dk[lo * d..hi * d],
                        d,
                        true,
                        &ds,
                        (1, kn),
                        q_b,
                        (d, 1),
                    );
                    mm(
                        (kn, d, qb),
                        &mut dv[lo * d..hi * d],
                        d,
                        true,
                        &p,
                        (1, kn),
                        do_b,
                        (d, 1),
                    );
                }
            }
        });
    (dq, dk, dv)
}

impl Attention {
    fn geom(&self, q: &Layout, k: &Layout) -> Result<Geom> {
        let &[_, h, rows, d] = q.dims() else {
            bail!("attention: q must be 4-d")
        };
        let s = k.dims()[2];
        let t = s - self.past;
        let st = k.stride();
        Ok(Geom {
            h,
            g: rows / t,
            t,
            s,
            d,
            past: self.past,
            kv_start: k.start_offset(),
            kv_sb: st[0],
            kv_sh: st[1],
        })
    }
}

fn kv_slice<T: WithDType>(s: &CpuStorage) -> Result<&[T]> {
    T::cpu_storage_as_slice(s)
}

/// The S key and value rows of every (batch row, key/value head) of bf16 `k` and `v` (read
/// through `geo`'s strides), widened to contiguous f32 [B, KVH, S, D], and the geometry of
/// that layout. `q_len` is q's element count (it gives B).
fn widen_kv(
    k: &[half::bf16],
    v: &[half::bf16],
    geo: Geom,
    q_len: usize,
) -> (Vec<f32>, Vec<f32>, Geom) {
    let (s, d) = (geo.s, geo.d);
    let units = q_len / (geo.g * geo.t * d).max(1);
    let widen = |src: &[half::bf16]| -> Vec<f32> {
        let mut out = vec![0f32; units * s * d];
        out.par_chunks_mut((s * d).max(1))
            .enumerate()
            .for_each(|(u, o)| {
                let at = geo.kv_offset(u / geo.h, u % geo.h);
                o.iter_mut()
                    .zip(&src[at..at + s * d])
                    .for_each(|(o, x)| *o = x.to_f32());
            });
        out
    };
    let geo = Geom {
        kv_start: 0,
        kv_sb: geo.h * s * d,
        kv_sh: s * d,
        ..geo
    };
    (widen(k), widen(v), geo)
}

impl Attention {
    /// The f32 forward: bf16 products for blocks of query rows when the op was made with a
    /// bf16 kernel (keeping each row's log-sum-exp for the backward), f32 ones otherwise.
    fn forward_f32(&self, q: &[f32], k: &[f32], v: &[f32], geo: Geom) -> Vec<f32> {
        match self.bf16.filter(|_| geo.t >= FEW_ROWS) {
            Some(kernel) => {
                let (out, lse) = bf16::forward(q, k, v, geo, &self.mask, kernel);
                if let Ok(mut kept) = self.lse.lock() {
                    *kept = Some(lse);
                }
                out
            }
            None => forward(q, k, v, geo, &self.mask),
        }
    }
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "quester-causal-attention"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        if l2.stride() != l3.stride() || l2.start_offset() != l3.start_offset() {
            bail!("attention: k and v must share a layout");
        }
        let geo = self.geom(l1, l2)?;
        let shape = l1.shape().clone();
        match (s1, s2) {
            (CpuStorage::F32(_), CpuStorage::BF16(_)) => {
                let q = contiguous::<f32>(s1, l1)?;
                let (k, v) = (kv_slice::<half::bf16>(s2)?, kv_slice::<half::bf16>(s3)?);
                if geo.t < FEW_ROWS {
                    let out = forward_few(q, k, v, geo, &self.mask);
                    return Ok((CpuStorage::F32(out), shape));
                }
                // Blocks of query rows (a prompt after a cached prefix): the cache's rows
                // widened once, then the f32 path.
                let (k, v, geo) = widen_kv(k, v, geo, q.len());
                Ok((CpuStorage::F32(self.forward_f32(q, &k, &v, geo)), shape))
            }
            (CpuStorage::F32(_), _) => {
                let (q, k, v) = (
                    contiguous::<f32>(s1, l1)?,
                    kv_slice::<f32>(s2)?,
                    kv_slice::<f32>(s3)?,
                );
                Ok((CpuStorage::F32(self.forward_f32(q, k, v, geo)), shape))
            }
            _ => {
                let out = by_float!(s1, "attention", |T| forward(
                    contiguous::<T>(s1, l1)?,
                    kv_slice::<T>(s2)?,
                    kv_slice::<T>(s3)?,
                    geo,
                    &self.mask,
                ));
                Ok((out, shape))
            }
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        use candle_core::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
        use candle_core::cuda_backend::WrapErr;
        if l2.stride() != l3.stride() || l2.start_offset() != l3.start_offset() {
            bail!("attention: k and v must share a layout");
        }
        let geo = self.geom(l1, l2)?;
        let Some((q0, q1)) = l1.contiguous_offsets() else {
            bail!("attention: q must be contiguous")
        };
        let b = l1.dims()[0];
        let rows = geo.g * geo.t;
        let dev = s1.device.clone();
        let q = s1.as_cuda_slice::<f32>()?.slice(q0..q1);
        let k = s2.as_cuda_slice::<f32>()?.slice(geo.kv_start..);
        let v = s3.as_cuda_slice::<f32>()?.slice(geo.kv_start..);
        let mask: Vec<u32> = self.mask.iter().flatten().copied().collect();
        let mask = dev.clone_htod(&mask)?;
        // SAFETY: every element is written by the kernel (one warp per row, every column).
        let mut out = unsafe { dev.alloc::<f32>(q1 - q0) }?;
        // Key tiles of at most 24 KiB each for k and v, within the 48 KiB of shared memory a
        // block gets without opting in.
        let tile = (6144 / geo.d).clamp(1, 32);
        const WARPS: usize = 8; // ATT_WARPS in kernels.cu
        let cfg = LaunchConfig {
            grid_dim: (rows.div_ceil(WARPS) as u32, (b * geo.h) as u32, 1),
            block_dim: (32 * WARPS as u32, 1, 1),
            shared_mem_bytes: (2 * tile * geo.d * 4) as u32,
        };
        let (func, stream) = crate::cuda::func(&dev, "quester_attention_fwd")?;
        let int = |x: usize| x as i32;
        let (h, r, t, s, d, past, tile) = (
            int(geo.h),
            int(rows),
            int(geo.t),
            int(geo.s),
            int(geo.d),
            int(geo.past),
            int(tile),
        );
        let (kv_sb, kv_sh) = (geo.kv_sb as i64, geo.kv_sh as i64);
        let mut launch = stream.launch_builder(&func);
        launch
            .arg(&q)
            .arg(&k)
            .arg(&v)
            .arg(&mask)
            .arg(&mut out)
            .arg(&h)
            .arg(&r)
            .arg(&t)
            .arg(&s)
            .arg(&d)
            .arg(&past)
            .arg(&tile)
            .arg(&kv_sb)
            .arg(&kv_sh);
        // SAFETY: the shapes and strides passed are those of the storages checked above.
        unsafe { launch.launch(cfg) }.w()?;
        Ok((
            candle_core::CudaStorage::wrap_cuda_slice(out, dev),
            l1.shape().clone(),
        ))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        if k.dtype() != q.dtype() || v.dtype() != q.dtype() {
            bail!(
                "attention backward: keys and values must have the queries' dtype ({:?}), got \
                 {:?} and {:?} (a bf16 KV cache serves decoding, without gradients)",
                q.dtype(),
                k.dtype(),
                v.dtype()
            );
        }
        if !q.device().is_cpu() {
            let (dq, dk, dv) =
                super::portable::causal_attention_backward(q, k, v, &self.mask, self.past, grad)?;
            return Ok((Some(dq), Some(dk), Some(dv)));
        }
        // Borrowed, not copied: each is contiguous from its own start, so the key/value rows
        // begin at 0 of their slices (unlike the forward, which reads k and v in place).
        let (q, k, v, grad) = (
            q.contiguous()?,
            k.contiguous()?,
            v.contiguous()?,
            grad.contiguous()?,
        );
        let geo = Geom {
            kv_start: 0,
            ..self.geom(q.layout(), k.layout())?
        };
        let dev = q.device();
        let guards = [&q, &k, &v, &grad].map(|t| t.storage_and_layout().0);
        macro_rules! run {
            ($t:ty, $backward:expr) => {{
                let (dq, dk, dv) = $backward(
                    host::<$t>(&q, &guards[0])?,
                    host::<$t>(&k, &guards[1])?,
                    host::<$t>(&v, &guards[2])?,
                    host::<$t>(&grad, &guards[3])?,
                    geo,
                    &self.mask,
                );
                (
                    Tensor::from_vec(dq, q.shape(), dev)?,
                    Tensor::from_vec(dk, k.shape(), dev)?,
                    Tensor::from_vec(dv, v.shape(), dev)?,
                )
            }};
        }
        let (dq, dk, dv) = match q.dtype() {
            // The forward's choice: bf16 products for blocks of query rows, f32 for a few.
            candle_core::DType::F32 => match self.bf16.filter(|_| geo.t >= FEW_ROWS) {
                Some(kernel) => {
                    let kept = self.lse.lock().ok();
                    let rows = q.elem_count() / geo.d.max(1);
                    let lse = kept
                        .as_ref()
                        .and_then(|l| l.as_deref())
                        .filter(|l| l.len() == rows);
                    run!(f32, |q, k, v, g, geo, mask| {
                        bf16::backward(q, k, v, g, geo, mask, kernel, lse)
                    })
                }
                None => run!(f32, backward),
            },
            candle_core::DType::F64 => run!(f64, backward),
            other => bail!("attention backward: f32 or f64 expected, got {other:?}"),
        };
        Ok((Some(dq), Some(dk), Some(dv)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::softmax_last_dim;
    use crate::ops::test_util::*;
    use candle_core::{DType, Device, Var};

    /// The unfused reference: scores, additive -1e9 bias, softmax, weighted sum.
    fn reference(q: &Tensor, k: &Tensor, v: &Tensor, mask: &[Vec<u32>], past: usize) -> Tensor {
        let (b, h, rows, _) = q.dims4().unwrap();
        let s = k.dim(2).unwrap();
        let t = s - past;
        let g = rows / t;
        let mut bias = vec![-1e9f64; b * t * s];
        for (bi, m) in mask.iter().enumerate() {
            for qi in 0..t {
                for j in 0..=past + qi {
                    if m[j] != 0 {
                        bias[(bi * t + qi) * s + j] = 0.0;
                    }
                }
            }
        }
        let bias = Tensor::from_vec(bias, (b, 1, 1, t, s), &Device::Cpu)
            .unwrap()
            .to_dtype(q.dtype())
            .unwrap();
        let scores = q
            .matmul(&k.t().unwrap())
            .unwrap()
            .reshape((b, h, g, t, s))
            .unwrap();
        let p = softmax_last_dim(&scores.broadcast_add(&bias).unwrap())
            .unwrap()
            .reshape((b, h, rows, s))
            .unwrap();
        p.matmul(v).unwrap()
    }

    fn rand(shape: (usize, usize, usize, usize), dt: DType) -> Tensor {
        seeded_randn_f64(next_seed(), 0.0, 1.0, shape)
            .to_dtype(dt)
            .unwrap()
    }

    /// Rows whose query is real (the reference gives padded query rows a uniform average).
    fn real_rows(x: &Tensor, mask: &[Vec<u32>], past: usize) -> Vec<f64> {
        let (_, h, rows, d) = x.dims4().unwrap();
        let s = mask[0].len();
        let t = s - past;
        let x: Vec<f64> = x
            .to_dtype(DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let mut out = Vec::new();
        for (b, m) in mask.iter().enumerate() {
            for r in 0..h * rows {
                if m[past + r % t] != 0 {
                    let o = (b * h * rows + r) * d;
                    out.extend_from_slice(&x[o..o + d]);
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_unfused_reference_with_padding_and_a_cache() {
        // Left padding in row 0, right padding in row 1, 70 query rows so blocks are ragged;
        // few query rows (decoding's path) with head width 64 too (its vector kernels).
        for &(t, past, d) in &[
            (70usize, 0usize, 8usize),
            (1, 9, 8),
            (5, 4, 8),
            (1, 40, 64),
            (3, 17, 64),
        ] {
            let s = past + t;
            let mut m0 = vec![1u32; s];
            m0[..3].iter_mut().for_each(|x| *x = 0);
            let mut m1 = vec![1u32; s];
            m1[s - 2..].iter_mut().for_each(|x| *x = 0);
            let mask = vec![m0, m1];
            let q = rand((2, 2, 3 * t, d), DType::F32);
            let k = rand((2, 2, s, d), DType::F32);
            let v = rand((2, 2, s, d), DType::F32);
            let ours = causal_attention(&q, &k, &v, &mask, past).unwrap();
            let want = reference(&q, &k, &v, &mask, past);
            let (a, b) = (real_rows(&ours, &mask, past), real_rows(&want, &mask, past));
            assert_eq!(a.len(), b.len());
            let err = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-5, "t {t} past {past}: max error {err}");
        }
    }

    #[test]
    fn reads_a_cache_narrowed_along_keys() {
        let cache_k = rand((1, 2, 16, 4), DType::F32);
        let cache_v = rand((1, 2, 16, 4), DType::F32);
        let (k, v) = (
            cache_k.narrow(2, 0, 6).unwrap(),
            cache_v.narrow(2, 0, 6).unwrap(),
        );
        let q = rand((1, 2, 2, 4), DType::F32);
        let mask = vec![vec![1u32; 6]];
        let ours = causal_attention(&q, &k, &v, &mask, 4).unwrap();
        let want = reference(
            &q,
            &k.contiguous().unwrap(),
            &v.contiguous().unwrap(),
            &mask,
            4,
        );
        let d = crate::ops::test_util::max_abs_diff(&ours, &want);
        assert!(d < 1e-5, "{d}");
    }

    /// A bf16 cache narrowed along keys gives what the f32 op gives on its values widened, bit
    /// for bit: decoding's few rows (the row kernels read bf16) and a block of rows after a
    /// cached prefix (widened once), in f32 and bf16 products; its backward is a clear error.
    #[test]
    fn reads_a_bf16_cache_as_its_widened_values() {
        for &(t, past, d) in &[
            (1usize, 40usize, 64usize),
            (3, 17, 64),
            (2, 9, 8),
            (70, 12, 64),
        ] {
            let (s, cap) = (past + t, past + t + 5);
            let mut m0 = vec![1u32; s];
            m0[..3].iter_mut().for_each(|x| *x = 0);
            let mask = vec![m0, vec![1u32; s]];
            let q = rand((2, 2, 3 * t, d), DType::F32);
            let cache = |_| rand((2, 2, cap, d), DType::BF16);
            let (kc, vc) = (cache(0), cache(1));
            let (k, v) = (kc.narrow(2, 0, s).unwrap(), vc.narrow(2, 0, s).unwrap());
            let wide = |x: &Tensor| x.to_dtype(DType::F32).unwrap();
            for precision in [Precision::F32, Precision::Bf16] {
                let ours = causal_attention_in(&q, &k, &v, &mask, past, precision).unwrap();
                let want =
                    causal_attention_in(&q, &wide(&k), &wide(&v), &mask, past, precision).unwrap();
                let bits = |x: &Tensor| -> Vec<u32> {
                    let x: Vec<f32> = x.flatten_all().unwrap().to_vec1().unwrap();
                    x.iter().map(|v| v.to_bits()).collect()
                };
                assert_eq!(
                    bits(&ours),
                    bits(&want),
                    "t {t} past {past} d {d} {precision:?}"
                );
            }
        }
        let (q, kv) = (
            Var::from_tensor(&rand((1, 1, 2, 8), DType::F32)).unwrap(),
            rand((1, 1, 2, 8), DType::BF16),
        );
        let y = causal_attention(q.as_tensor(), &kv, &kv, &[vec![1, 1]], 0).unwrap();
        let err = y.sum_all().unwrap().backward().unwrap_err().to_string();
        assert!(err.contains("bf16 KV cache"), "{err}");
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mut m0 = vec![1u32; 7];
        m0[0] = 0;
        let mask = vec![m0, vec![1; 7]];
        // 7 queries over their 7 keys (G = 2 query rows each), then 4 queries after 3 earlier
        // keys (a shared prompt's), whose keys and values get gradients from every query that
        // sees them.
        for (past, rows) in [(0usize, 14usize), (3, 8)] {
            let q = rand((2, 1, rows, 3), DType::F64);
            let k = rand((2, 1, 7, 3), DType::F64);
            let v = rand((2, 1, 7, 3), DType::F64);
            let proj = rand((2, 1, rows, 3), DType::F64);
            check_gradients(
                &[q, k, v],
                |x| (causal_attention(&x[0], &x[1], &x[2], &mask, past)? * &proj)?.sum_all(),
                1e-6,
            )
            .unwrap_or_else(|e| panic!("past {past}: {e}"));
        }
    }

    /// The backward pass a GPU runs (probabilities recomputed with candle ops) against the
    /// fused CPU backward, with padding on both sides, a row that sees no key and a cache.
    #[test]
    fn the_gpu_backward_matches_the_fused_one() {
        let mut m0 = vec![1u32; 9];
        m0[..4].iter_mut().for_each(|x| *x = 0);
        let mut m1 = vec![1u32; 9];
        m1[7..].iter_mut().for_each(|x| *x = 0);
        let mask = vec![m0, m1];
        for (past, rows) in [(0usize, 18usize), (4, 10)] {
            let q = Var::from_tensor(&rand((2, 2, rows, 8), DType::F64)).unwrap();
            let k = Var::from_tensor(&rand((2, 2, 9, 8), DType::F64)).unwrap();
            let v = Var::from_tensor(&rand((2, 2, 9, 8), DType::F64)).unwrap();
            let grad = rand((2, 2, rows, 8), DType::F64);
            let out = causal_attention(&q, &k, &v, &mask, past).unwrap();
            let grads = (out * &grad)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            let (dq, dk, dv) =
                crate::ops::portable::causal_attention_backward(&q, &k, &v, &mask, past, &grad)
                    .unwrap();
            for (name, want, got) in [("q", &q, dq), ("k", &k, dk), ("v", &v, dv)] {
                let want = grads.get(want.as_tensor()).unwrap();
                let err = (want - &got)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap();
                assert!(err < 1e-10, "past {past}: d{name} differs by {err}");
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let q = rand((1, 1, 4, 2), DType::F32);
        let k = rand((1, 1, 3, 2), DType::F32);
        assert!(causal_attention(&q, &k, &k, &[vec![1; 3]], 0).is_err());
        let k = rand((1, 1, 4, 2), DType::F32);
        assert!(causal_attention(&q, &k, &k, &[vec![1; 3]], 0).is_err());
    }
}
