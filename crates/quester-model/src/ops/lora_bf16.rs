//! A LoRA projection's bf16 passes, each reading its activation or gradient once.
//!
//! The base product converts x (forward) or g (backward) to bf16, and the adapter's rank-r
//! products read the same matrix again: `x A^T` in the forward; `g B` and `g^T (x A^T)` in the
//! backward. Those f32 passes were bound by reading x and g from memory (a tenth of a
//! GRPO-shaped step), not by their arithmetic. Here the rank-r products run on each block of
//! rows right after the block is converted, while it is in cache ([`Bf16Rows::convert_then`]).
//! `x A^T` and `g B` run on the bf16 kernel from the block's pairs (since session 27: on AMX
//! tiles they took a third of the time of the f32 register loop, 4% of a GRPO-shaped step), as
//! PyTorch's autocast runs an adapter's products; the factors' gradients stay f32.
//!
//! The factors' gradients are sums over rows: each block writes its own partial sum and the
//! partials are added in block order, so the result does not depend on which thread ran which
//! block (nor on the thread count).

use super::bf16::{Bf16Panels, Bf16Rows};
use super::low_rank::{transpose, vt_x_block};
use super::tiles::SharedOut;
use candle_core::Result;
use rayon::prelude::*;

/// `(x W^T + s (x A^T) B^T, x A^T)` for x [rows, in], A [r, in], B [out, r], with W's
/// products read from `w` (W [out, in] packed) and B's from `b` (B packed as [out, r] rows on
/// the same kernel): the update adds into the base's accumulators.
pub(super) fn forward(
    (w, b): (&Bf16Panels, &Bf16Panels),
    x: &[f32],
    a: &[f32],
    (rows, inp, r): (usize, usize, usize),
    s: f32,
) -> Result<(Vec<f32>, Vec<f32>)> {
    // A [r, in] is the right-hand B [n = r, k = in] of x A^T as it is.
    let a_rows = Bf16Panels::pack_for(w.kernel(), a, (r, inp), (inp, 1))?;
    let mut u = vec![0f32; rows * r];
    let u_out = SharedOut(u.as_mut_ptr());
    let failed = std::sync::Mutex::new(None);
    let x_rows = Bf16Rows::convert_then(w.kernel(), x, (rows, inp), |i0, n, block| {
        // SAFETY: blocks are disjoint row ranges of u [rows, r].
        let u = unsafe { std::slice::from_raw_parts_mut(u_out.at(i0 * r), n * r) };
        keep_first(&failed, a_rows.product_block(block, n, u));
    })?;
    first_error(failed)?;
    let su: Vec<f32> = u.iter().map(|&v| v * s).collect();
    let su_rows = Bf16Rows::convert(w.kernel(), &su, rows, r)?;
    let y = w.matmul_rows(&x_rows, Some((b, &su_rows)))?;
    Ok((y, u))
}

/// `(dx, dA, dB)` of [`forward`] for the output's gradient g [rows, out] and the forward's
/// `u = x A^T`: dx = g W + (s g B) A with W's products read from `wt` (W^T packed) and A's
/// from `a_panels` (A^T packed on the same kernel); dA = s (g B)^T x, dB = s g^T u.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    (wt, a_panels): (&Bf16Panels, &Bf16Panels),
    x: &[f32],
    b: &[f32],
    g: &[f32],
    u: &[f32],
    (rows, inp, out, r): (usize, usize, usize, usize),
    s: f32,
) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
    let blocks = rows.div_ceil(Bf16Rows::BLOCK);
    let mut gb = vec![0f32; rows * r];
    // Each block's share of (g B)^T x [r, in] (dA's layout) and u^T g [r, out] (dB^T).
    let mut da_parts = vec![0f32; blocks * inp * r];
    let mut db_parts = vec![0f32; blocks * out * r];
    let (gb_out, da_out, db_out) = (
        SharedOut(gb.as_mut_ptr()),
        SharedOut(da_parts.as_mut_ptr()),
        SharedOut(db_parts.as_mut_ptr()),
    );
    // B [out, r] as the right-hand [n = r, k = out] of g B: its transpose.
    let b_cols = Bf16Panels::pack_for(wt.kernel(), b, (r, out), (1, r))?;
    let failed = std::sync::Mutex::new(None);
    let g_rows = Bf16Rows::convert_then(wt.kernel(), g, (rows, out), |i0, n, block| {
        let blk = i0 / Bf16Rows::BLOCK;
        // SAFETY: each block writes its own rows of gb and its own partials.
        let (gb, da, db) = unsafe {
            (
                std::slice::from_raw_parts_mut(gb_out.at(i0 * r), n * r),
                std::slice::from_raw_parts_mut(da_out.at(blk * inp * r), inp * r),
                std::slice::from_raw_parts_mut(db_out.at(blk * out * r), out * r),
            )
        };
        let gi = &g[i0 * out..(i0 + n) * out];
        keep_first(&failed, b_cols.product_block(block, n, gb));
        vt_x_block(gi, &u[i0 * r..(i0 + n) * r], db, n, out, r);
        vt_x_block(&x[i0 * inp..(i0 + n) * inp], gb, da, n, inp, r);
    })?;
    first_error(failed)?;
    let sgb: Vec<f32> = gb.iter().map(|&v| v * s).collect();
    let sgb_rows = Bf16Rows::convert(wt.kernel(), &sgb, rows, r)?;
    let dx = wt.matmul_rows(&g_rows, Some((a_panels, &sgb_rows)))?;
    let da = sum_parts(&da_parts, r * inp, s);
    let db = transpose(&sum_parts(&db_parts, r * out, s), r, out);
    Ok((dx, da, db))
}

/// Keeps the first error a block's product met (a hook cannot return it).
fn keep_first(slot: &std::sync::Mutex<Option<candle_core::Error>>, r: Result<()>) {
    if let (Err(e), Ok(mut slot)) = (r, slot.lock()) {
        slot.get_or_insert(e);
    }
}

fn first_error(slot: std::sync::Mutex<Option<candle_core::Error>>) -> Result<()> {
    match slot.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

/// `s` times the sum of `parts` (consecutive blocks of `len` values), added in block order.
fn sum_parts(parts: &[f32], len: usize, s: f32) -> Vec<f32> {
    let mut sum = vec![0f32; len];
    if len == 0 {
        return sum;
    }
    // Element ranges in parallel; within one, the blocks in order.
    sum.par_chunks_mut(4096).enumerate().for_each(|(c, o)| {
        let (e0, n) = (c * 4096, o.len());
        for part in parts.chunks_exact(len) {
            o.iter_mut()
                .zip(&part[e0..e0 + n])
                .for_each(|(o, &p)| *o += p);
        }
        o.iter_mut().for_each(|o| *o *= s);
    });
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::bf16::{round_to_bf16, Bf16Kernel};

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0) * 0.9)
            .collect()
    }

    /// `[p, q] = l [p, c] . rt^T` for `rt [q, c]`, in f64.
    fn mm(l: &[f64], rt: &[f64], (p, c, q): (usize, usize, usize)) -> Vec<f64> {
        let mut o = vec![0f64; p * q];
        for i in 0..p {
            for j in 0..q {
                o[i * q + j] = (0..c).map(|t| l[i * c + t] * rt[j * c + t]).sum();
            }
        }
        o
    }

    fn t64(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        transpose(m, rows, cols)
    }

    fn wide(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| f64::from(x)).collect()
    }

    fn bf(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| f64::from(round_to_bf16(x))).collect()
    }

    fn close(got: &[f32], want: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let scale = want.iter().fold(1e-6f64, |m, v| m.max(v.abs()));
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (f64::from(g) - w).abs() <= tol * scale,
                "{what}[{i}]: {g} vs {w} (scale {scale})"
            );
        }
    }

    #[test]
    fn forward_and_backward_match_f64_sums_of_the_rounded_operands() {
        let s = 2.0f32;
        // Rows past several blocks and ragged; r = 16 (the AVX-512 kernels) and 3 (the loops).
        for (rows, inp, out, r) in [(150, 40, 56, 16), (70, 33, 20, 3), (1, 16, 48, 16)] {
            for kernel in Bf16Kernel::ALL.into_iter().filter(|k| k.available()) {
                let (x, w) = (data(rows * inp, 1), data(out * inp, 2));
                let (a, b) = (data(r * inp, 3), data(out * r, 4));
                let g = data(rows * out, 5);
                let wp = Bf16Panels::pack_for(kernel, &w, (out, inp), (inp, 1)).unwrap();
                let bp = Bf16Panels::pack_for(kernel, &b, (out, r), (r, 1)).unwrap();
                let (y, u) = forward((&wp, &bp), &x, &a, (rows, inp, r), s).unwrap();
                let what = format!("{kernel:?} {rows}x{inp}x{out} r{r}");
                // u = bf(x) bf(A)^T; y = bf(x) bf(W)^T + bf(s u) bf(B)^T.
                let u64_ = mm(&bf(&x), &bf(&a), (rows, inp, r));
                close(&u, &u64_, 1e-5, &format!("{what} u"));
                let su: Vec<f32> = u.iter().map(|&v| v * s).collect();
                let want_y: Vec<f64> = mm(&bf(&x), &bf(&w), (rows, inp, out))
                    .iter()
                    .zip(mm(&bf(&su), &bf(&b), (rows, r, out)))
                    .map(|(p, q)| p + q)
                    .collect();
                close(&y, &want_y, 1e-5, &format!("{what} y"));

                let wtp = Bf16Panels::pack_for(kernel, &w, (inp, out), (1, inp)).unwrap();
                let ap = Bf16Panels::pack_for(kernel, &a, (inp, r), (1, inp)).unwrap();
                let (dx, da, db) =
                    backward((&wtp, &ap), &x, &b, &g, &u, (rows, inp, out, r), s).unwrap();
                // g B = bf(g) bf(B), on the kernel like u.
                let gb = mm(&bf(&g), &t64(&bf(&b), out, r), (rows, out, r));
                let sgb: Vec<f32> = gb.iter().map(|&v| v as f32 * s).collect();
                let want_dx: Vec<f64> = mm(&bf(&g), &t64(&bf(&w), out, inp), (rows, out, inp))
                    .iter()
                    .zip(mm(&bf(&sgb), &t64(&bf(&a), r, inp), (rows, r, inp)))
                    .map(|(p, q)| p + q)
                    .collect();
                close(&dx, &want_dx, 1e-3, &format!("{what} dx"));
                // dA [r, in] = s (g B)^T x; dB [out, r] = s g^T u.
                let want_da: Vec<f64> = mm(
                    &t64(&gb, rows, r),
                    &t64(&wide(&x), rows, inp),
                    (r, rows, inp),
                )
                .iter()
                .map(|v| v * f64::from(s))
                .collect();
                close(&da, &want_da, 1e-5, &format!("{what} dA"));
                let want_db: Vec<f64> = mm(
                    &t64(&wide(&g), rows, out),
                    &t64(&wide(&u), rows, r),
                    (out, rows, r),
                )
                .iter()
                .map(|v| v * f64::from(s))
                .collect();
                close(&db, &want_db, 1e-5, &format!("{what} dB"));
            }
        }
    }

    #[test]
    fn block_partials_add_in_order_whatever_the_thread_count() {
        let (rows, inp, out, r) = (300, 64, 96, 16);
        let kernel = Bf16Kernel::best();
        let (x, w, a, b, g) = (
            data(rows * inp, 1),
            data(out * inp, 2),
            data(r * inp, 3),
            data(out * r, 4),
            data(rows * out, 5),
        );
        let wtp = Bf16Panels::pack_for(kernel, &w, (inp, out), (1, inp)).unwrap();
        let ap = Bf16Panels::pack_for(kernel, &a, (inp, r), (1, inp)).unwrap();
        let u = data(rows * r, 6);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    backward((&wtp, &ap), &x, &b, &g, &u, (rows, inp, out, r), 0.5).unwrap()
                })
        };
        assert_eq!(run(1), run(3));
    }

    #[test]
    fn sums_parts_in_block_order() {
        let parts = [1.0f32, 2.0, 10.0, 20.0, 100.0, 200.0];
        assert_eq!(sum_parts(&parts, 2, 0.5), vec![55.5, 111.0]);
        assert_eq!(sum_parts(&[], 3, 1.0), vec![0.0; 3]);
    }
}
