//! A LoRA projection as one op: `y = x W^T (+ bias) + scale (x A^T) B^T` with W and the bias
//! frozen.
//!
//! Written with candle ops, the adapter costs three [rows, out] tensors per projection kept for
//! the backward pass (the low-rank product, its scaled copy, the sum) and a wasted weight-sized
//! gradient of W; under LoRA that was more memory than the base model's own activations. Here
//! the graph keeps x, A and B and the rank-r `x A^T` of the forward (rows x r floats, 64 bytes a
//! row at r 16), which the backward pass would otherwise recompute with one more pass over x.

use super::bf16::Bf16Panels;
use super::bf16_linear::FrozenBf16;
use super::gemm::product;
use super::low_rank::{transpose, LowRank};
use super::{contiguous, host, Float};
use crate::precision::Precision;
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};
use std::sync::{Arc, Mutex};

/// `x` [rows, in], frozen `w` [out, in] and `bias` [out], adapter `a` [r, in] and `b` [out, r].
/// Differentiable in x, a and b. In bf16 `precision` the products with W (forward and the
/// input's gradient) take bf16 operands, and the update's share of those two outputs,
/// `(s x A^T) B^T` and `(s g B) A`, is added into the same accumulators as a second bf16
/// product (one pass over the output instead of two); `x A^T` and `g B` are bf16 products
/// from the same converted rows, and the factors' gradients stay f32.
pub fn lora_linear(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    scale: f64,
    precision: Precision,
) -> Result<Tensor> {
    lora_linear_on(x, (w, None), bias, a, b, scale, precision)
}

/// [`lora_linear`] in bf16 with W's products read from `packed` (W packed once; see
/// [`FrozenBf16`]), which must be the panels of `w` (`w` itself may be a detached view; only
/// its shape is checked here). Values and gradients are bit for bit those of [`lora_linear`]
/// in bf16, which packs W on every call.
pub fn lora_linear_packed(
    x: &Tensor,
    (w, packed): (&Tensor, &Arc<FrozenBf16>),
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    scale: f64,
) -> Result<Tensor> {
    if !packed.fits(w) {
        bail!(
            "lora linear: panels packed from a weight of another shape than {:?}",
            w.dims()
        );
    }
    lora_linear_on(x, (w, Some(packed)), bias, a, b, scale, Precision::Bf16)
}

fn lora_linear_on(
    x: &Tensor,
    (w, packed): (&Tensor, Option<&Arc<FrozenBf16>>),
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    scale: f64,
    precision: Precision,
) -> Result<Tensor> {
    let (_, inp) = x.dims2()?;
    let (out, w_in) = w.dims2()?;
    let (r, a_in) = a.dims2()?;
    if w_in != inp || a_in != inp || b.dims2()? != (out, r) {
        bail!(
            "lora linear: x {:?}, w {:?}, a {:?}, b {:?} do not match",
            x.dims(),
            w.dims(),
            a.dims(),
            b.dims()
        );
    }
    if bias.is_some_and(|t| t.dims() != [out]) {
        bail!("lora linear: bias must be [{out}]");
    }
    if super::portable::wanted(x.device()) {
        return super::portable::lora_linear(x, w, bias, a, b, scale, precision);
    }
    let bf16 = precision == Precision::Bf16 && x.dtype() == DType::F32;
    let op = LoraLinear {
        w: w.detach().contiguous()?,
        packed: packed.filter(|_| bf16).cloned(),
        bias: bias.map(|t| t.detach().contiguous()).transpose()?,
        scale,
        bf16,
        u: Mutex::new(None),
    };
    x.contiguous()?
        .apply_op3(&a.contiguous()?, &b.contiguous()?, op)
}

struct LoraLinear {
    w: Tensor,
    /// W packed once for the bf16 products (else packed per call).
    packed: Option<Arc<FrozenBf16>>,
    bias: Option<Tensor>,
    scale: f64,
    /// The products with W in bf16 (f32 tensors only).
    bf16: bool,
    /// `x A^T` [rows, r] of the forward, for the backward (bit for bit what it would recompute).
    u: Mutex<Option<CpuStorage>>,
}

impl LoraLinear {
    /// Keeps the forward's `x A^T` for the backward.
    fn keep<T: Float>(&self, u: Vec<T>) {
        if let Ok(mut kept) = self.u.lock() {
            *kept = Some(T::to_cpu_storage_owned(u));
        }
    }

    /// [`backward`] with the products with W in bf16: dx = g W + (s g B) A as one pass of
    /// bf16 products (the update's term adds into the base's accumulators); dA and dB stay f32.
    #[allow(clippy::too_many_arguments)]
    fn backward_bf16(
        &self,
        x: &[f32],
        a: &[f32],
        b: &[f32],
        g: &[f32],
        w: &[f32],
        u: Option<&[f32]>,
        (rows, inp, out, r): (usize, usize, usize, usize),
    ) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let s = self.scale as f32;
        let packed_w;
        let wt_panels = match &self.packed {
            Some(p) => p.panels().1,
            None => {
                packed_w = Bf16Panels::pack(w, (inp, out), (1, inp))?;
                &packed_w
            }
        };
        // A [r, in] as the second product's B [in, r]: element (i, j) at a[j * in + i].
        let a_panels = Bf16Panels::pack_for(wt_panels.kernel(), a, (inp, r), (1, inp))?;
        let recomputed;
        let u = match u {
            Some(u) => u,
            None => {
                recomputed = f32::x_m(x, &transpose(a, r, inp), rows, inp, r);
                &recomputed
            }
        };
        let (dx, da, db) =
            super::lora_bf16::backward((wt_panels, &a_panels), x, b, g, u, (rows, inp, out, r), s)?;
        Ok((dx, da, db))
    }
}

/// y = base (+ bias) + scale (x A^T) B^T, with `base` = x W^T already computed; also returns
/// `x A^T`.
#[allow(clippy::too_many_arguments)]
fn run<T: Float>(
    x: &[T],
    a: &[T],
    b: &[T],
    mut y: Vec<T>,
    bias: Option<&[T]>,
    (rows, inp, out, r): (usize, usize, usize, usize),
    scale: f64,
) -> (Vec<T>, Vec<T>) {
    if let Some(bias) = bias {
        for row in y.chunks_mut(out) {
            row.iter_mut().zip(bias).for_each(|(v, &c)| *v += c);
        }
    }
    let u = T::x_m(x, &transpose(a, r, inp), rows, inp, r);
    T::acc_u_m(
        &mut y,
        &u,
        &transpose(b, out, r),
        rows,
        r,
        T::from_f64(scale),
    );
    (y, u)
}

impl CustomOp3 for LoraLinear {
    fn name(&self) -> &'static str {
        "quester-lora-linear"
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
        let (rows, inp) = l1.shape().dims2()?;
        let (r, _) = l2.shape().dims2()?;
        let (out, _) = l3.shape().dims2()?;
        let dims = (rows, inp, out, r);
        let (wg, _) = self.w.storage_and_layout();
        let bg = self.bias.as_ref().map(|t| t.storage_and_layout());
        if self.bf16 {
            let CpuStorage::F32(_) = s1 else {
                bail!("lora linear: bf16 products need f32 operands")
            };
            let (x, w) = (contiguous::<f32>(s1, l1)?, host::<f32>(&self.w, &wg)?);
            let bias = match (&self.bias, &bg) {
                (Some(t), Some((g, _))) => Some(host::<f32>(t, g)?),
                _ => None,
            };
            let (a, b) = (contiguous::<f32>(s2, l2)?, contiguous::<f32>(s3, l3)?);
            let packed_w;
            let w_panels = match &self.packed {
                Some(p) => p.panels().0,
                None => {
                    packed_w = Bf16Panels::pack_rows(w, out, inp)?;
                    &packed_w
                }
            };
            // y = x W^T + (s u) B^T in one pass of bf16 products: the update adds into the
            // base's accumulators instead of a second pass over y; u = x A^T is computed on
            // each block of x as it is converted.
            let b_panels = Bf16Panels::pack_for(w_panels.kernel(), b, (out, r), (r, 1))?;
            let (mut y, u) = super::lora_bf16::forward(
                (w_panels, &b_panels),
                x,
                a,
                (rows, inp, r),
                self.scale as f32,
            )?;
            if let Some(bias) = bias {
                for row in y.chunks_mut(out) {
                    row.iter_mut().zip(bias).for_each(|(v, &c)| *v += c);
                }
            }
            self.keep(u);
            return Ok((CpuStorage::F32(y), Shape::from((rows, out))));
        }
        let y = by_float!(s1, "lora linear", |T| {
            let bias = match (&self.bias, &bg) {
                (Some(t), Some((g, _))) => Some(host::<T>(t, g)?),
                _ => None,
            };
            let x = contiguous::<T>(s1, l1)?;
            let base = super::frozen_matmul::x_wt(x, host::<T>(&self.w, &wg)?, rows, inp, out);
            let (y, u) = run(
                x,
                contiguous::<T>(s2, l2)?,
                contiguous::<T>(s3, l3)?,
                base,
                bias,
                dims,
                self.scale,
            );
            self.keep(u);
            y
        });
        Ok((y, Shape::from((rows, out))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (x, a, b) = (x.contiguous()?, a.contiguous()?, b.contiguous()?);
        let g = grad.contiguous()?;
        let (rows, inp) = x.dims2()?;
        let (r, out) = (a.dim(0)?, b.dim(0)?);
        let dims = (rows, inp, out, r);
        let (xg, bg_, ag, gg, wg) = (
            x.storage_and_layout().0,
            b.storage_and_layout().0,
            a.storage_and_layout().0,
            g.storage_and_layout().0,
            self.w.storage_and_layout().0,
        );
        let dev = x.device();
        let kept = self.u.lock().ok();
        let kept = kept.as_ref().and_then(|k| k.as_ref());
        // `$gw` computes g W, the base's input gradient, in the op's precision.
        macro_rules! run {
            ($t:ty, $gw:expr) => {{
                let (xs, as_, bs, gs, ws) = (
                    host::<$t>(&x, &xg)?,
                    host::<$t>(&a, &ag)?,
                    host::<$t>(&b, &bg_)?,
                    host::<$t>(&g, &gg)?,
                    host::<$t>(&self.w, &wg)?,
                );
                let gw: Vec<$t> = $gw(gs, ws)?;
                // The forward's x A^T where it is there and fits, else recomputed.
                let u = kept
                    .and_then(|k| <$t>::cpu_storage_as_slice(k).ok())
                    .filter(|u| u.len() == rows * r);
                let (dx, da, db) = backward(xs, as_, bs, gs, (gw, u), dims, self.scale);
                (
                    Tensor::from_vec(dx, (rows, inp), dev)?,
                    Tensor::from_vec(da, (r, inp), dev)?,
                    Tensor::from_vec(db, (out, r), dev)?,
                )
            }};
        }
        let (dx, da, db) = match x.dtype() {
            DType::F32 if self.bf16 => {
                let (xs, as_, bs, gs, ws) = (
                    host::<f32>(&x, &xg)?,
                    host::<f32>(&a, &ag)?,
                    host::<f32>(&b, &bg_)?,
                    host::<f32>(&g, &gg)?,
                    host::<f32>(&self.w, &wg)?,
                );
                let u = kept
                    .and_then(|k| f32::cpu_storage_as_slice(k).ok())
                    .filter(|u| u.len() == rows * r);
                let (dx, da, db) = self.backward_bf16(xs, as_, bs, gs, ws, u, dims)?;
                (
                    Tensor::from_vec(dx, (rows, inp), dev)?,
                    Tensor::from_vec(da, (r, inp), dev)?,
                    Tensor::from_vec(db, (out, r), dev)?,
                )
            }
            DType::F32 => run!(f32, |g: &[f32], w: &[f32]| Ok::<_, candle_core::Error>(
                grad_times_w(g, w, rows, out, inp)
            )),
            DType::F64 => run!(f64, |g: &[f64], w: &[f64]| Ok::<_, candle_core::Error>(
                grad_times_w(g, w, rows, out, inp)
            )),
            other => bail!("lora linear backward: f32 or f64 expected, got {other:?}"),
        };
        Ok((Some(dx), Some(da), Some(db)))
    }
}

/// g [rows, out] . W [out, inp]: the input gradient through the frozen base, exact.
fn grad_times_w<T: Float>(g: &[T], w: &[T], rows: usize, out: usize, inp: usize) -> Vec<T> {
    product((rows, inp, out), T::one(), (g, (out, 1)), (w, (inp, 1)))
}

/// The three gradients of `y = x W^T + s (x A^T) B^T` from `g` = dL/dy, `gw` = g W (the base's
/// input gradient, computed by the caller in its precision) and `u` = x A^T when the forward
/// kept it (else recomputed here), as the low-rank products of
/// [`LowRank`](super::low_rank::LowRank) on host slices with the scale folded into them:
///   dx = gw + s (g B) A,  dA = s (g B)^T x,  dB = s g^T (x A^T).
/// In place of the tensor-op form this replaces (three more [rows, inp] tensors per projection
/// and two single-threaded elementwise passes over them).
fn backward<T: Float>(
    x: &[T],
    a: &[T],
    b: &[T],
    g: &[T],
    (mut dx, u): (Vec<T>, Option<&[T]>),
    (rows, inp, out, r): (usize, usize, usize, usize),
    scale: f64,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let s = T::from_f64(scale);
    // gb = g B [rows, r].
    let gb = T::x_m(g, b, rows, out, r);
    T::acc_u_m(&mut dx, &gb, a, rows, r, s);
    let (da, db) = factor_grads(x, a, g, &gb, u, (rows, inp, out, r), s);
    (dx, da, db)
}

/// dA = s (g B)^T x and dB = s g^T u for `gb` = g B, with u = x A^T the forward's when it
/// was kept (else recomputed here).
fn factor_grads<T: Float>(
    x: &[T],
    a: &[T],
    g: &[T],
    gb: &[T],
    u: Option<&[T]>,
    (rows, inp, out, r): (usize, usize, usize, usize),
    s: T,
) -> (Vec<T>, Vec<T>) {
    let recomputed;
    let u = match u {
        Some(u) => u,
        None => {
            recomputed = T::x_m(x, &transpose(a, r, inp), rows, inp, r);
            &recomputed
        }
    };
    let da = transpose(&T::xt_v(x, gb, rows, inp, r, s), inp, r);
    let db = T::xt_v(g, u, rows, out, r, s);
    (da, db)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::DType;

    fn randn(shape: (usize, usize)) -> Tensor {
        seeded_randn_f64(next_seed(), 0.0, 1.0, shape)
    }

    fn unfused(x: &Tensor, w: &Tensor, bias: &Tensor, a: &Tensor, b: &Tensor, s: f64) -> Tensor {
        let y = x.matmul(&w.t().unwrap()).unwrap();
        let y = y.broadcast_add(bias).unwrap();
        let d = x
            .matmul(&a.t().unwrap())
            .unwrap()
            .matmul(&b.t().unwrap())
            .unwrap();
        (y + (d * s).unwrap()).unwrap()
    }

    #[test]
    fn equals_the_unfused_expression() {
        let (x, w, bias, a, b) = (
            randn((37, 70)),
            randn((50, 70)),
            seeded_randn_f64(2, 0.0, 1.0, 50),
            randn((4, 70)),
            randn((50, 4)),
        );
        for dt in [DType::F32, DType::F64] {
            let c = |t: &Tensor| t.to_dtype(dt).unwrap();
            let ours = lora_linear(
                &c(&x),
                &c(&w),
                Some(&c(&bias)),
                &c(&a),
                &c(&b),
                2.0,
                Precision::F32,
            )
            .unwrap();
            let want = unfused(&c(&x), &c(&w), &c(&bias), &c(&a), &c(&b), 2.0);
            let err = (ours - want)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
                .to_scalar::<f64>()
                .unwrap();
            assert!(err < 1e-3, "{dt:?}: {err}");
        }
    }

    /// The backward with the forward's `x A^T` and with it recomputed: the same bits (r 16
    /// runs the AVX-512 kernels where the CPU has them).
    #[test]
    fn the_kept_low_rank_product_is_the_recomputed_one() {
        let v = |n: usize, seed: usize| -> Vec<f32> {
            (0..n)
                .map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 1009.0) - 0.5)
                .collect()
        };
        let (rows, inp, out, r) = (37, 70, 50, 16);
        let (x, a, b, g, gw) = (
            v(rows * inp, 1),
            v(r * inp, 2),
            v(out * r, 3),
            v(rows * out, 4),
            v(rows * inp, 5),
        );
        let u = <f32 as super::super::LowRank>::x_m(&x, &transpose(&a, r, inp), rows, inp, r);
        let dims = (rows, inp, out, r);
        let kept = backward(&x, &a, &b, &g, (gw.clone(), Some(&u)), dims, 2.0);
        let recomputed = backward(&x, &a, &b, &g, (gw, None), dims, 2.0);
        assert_eq!(kept, recomputed);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let (w, bias) = (randn((5, 6)), seeded_randn_f64(3, 0.0, 1.0, 5));
        let proj = randn((3, 5));
        check_gradients(
            &[randn((3, 6)), randn((2, 6)), randn((5, 2))],
            |v| {
                (lora_linear(&v[0], &w, Some(&bias), &v[1], &v[2], 1.5, Precision::F32)? * &proj)?
                    .sum_all()
            },
            1e-6,
        )
        .unwrap();
    }

    /// In f32 the fused op gives the values and gradients of the unfused expression (candle's
    /// autograd), and in bf16 the same to bf16's rounding.
    #[test]
    fn f32_and_bf16_gradients_follow_the_unfused_ones() {
        use candle_core::Var;
        let f32 = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        let (x, w, bias) = (
            f32(randn((70, 48))),
            f32(randn((40, 48))),
            f32(seeded_randn_f64(4, 0.0, 1.0, 40)),
        );
        let xv = Var::from_tensor(&x).unwrap();
        let proj = f32(randn((70, 40)));
        let grads = |y: Tensor| (y * &proj).unwrap().sum_all().unwrap().backward().unwrap();
        // Rank 4 runs gemm's products, rank 16 the low-rank kernels (on CPUs with AVX-512).
        for r in [4, 16] {
            let a = Var::from_tensor(&f32(randn((r, 48)))).unwrap();
            let b = Var::from_tensor(&f32(randn((40, r)))).unwrap();
            let want_y = unfused(&xv, &w, &bias, &a, &b, 2.0);
            let want = grads(want_y.clone());
            let y_scale = crate::ops::test_util::max_abs(&want_y);
            for (precision, tol) in [(Precision::F32, 1e-5), (Precision::Bf16, 2e-2)] {
                let y = lora_linear(&xv, &w, Some(&bias), &a, &b, 2.0, precision).unwrap();
                let err = f64::from(crate::ops::test_util::max_abs_diff(&y, &want_y) / y_scale);
                assert!(
                    err < tol,
                    "rank {r}, {precision:?}: forward relative error {err}"
                );
                let got = grads(y);
                for v in [xv.as_tensor(), a.as_tensor(), b.as_tensor()] {
                    let (g, e) = (got.get(v).unwrap(), want.get(v).unwrap());
                    let err = f64::from(
                        crate::ops::test_util::max_abs_diff(g, e)
                            / crate::ops::test_util::max_abs(e),
                    );
                    assert!(err < tol, "rank {r}, {precision:?}: relative error {err}");
                }
            }
        }
    }

    /// W packed once gives the values and gradients of packing it per call, bit for bit; panels
    /// of another shape are refused.
    #[test]
    fn a_base_packed_once_changes_nothing() {
        use candle_core::Var;
        let f32 = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        let (w, bias) = (f32(randn((40, 48))), f32(seeded_randn_f64(5, 0.0, 1.0, 40)));
        let a = Var::from_tensor(&f32(randn((4, 48)))).unwrap();
        let b = Var::from_tensor(&f32(randn((40, 4)))).unwrap();
        let xv = Var::from_tensor(&f32(randn((37, 48)))).unwrap();
        let proj = f32(randn((37, 40)));
        let packed = Arc::new(FrozenBf16::pack(&w).unwrap());
        let run = |y: Tensor| {
            let grads = (&y * &proj).unwrap().sum_all().unwrap().backward().unwrap();
            let mut out = vec![y];
            for v in [xv.as_tensor(), a.as_tensor(), b.as_tensor()] {
                out.push(grads.get(v).unwrap().clone());
            }
            out.iter()
                .map(|t| t.flatten_all().unwrap().to_vec1::<f32>().unwrap())
                .collect::<Vec<_>>()
        };
        let per_call =
            run(lora_linear(&xv, &w, Some(&bias), &a, &b, 2.0, Precision::Bf16).unwrap());
        let once = run(lora_linear_packed(&xv, (&w, &packed), Some(&bias), &a, &b, 2.0).unwrap());
        assert_eq!(per_call, once);
        let other = f32(randn((40, 40)));
        assert!(lora_linear_packed(&xv, (&other, &packed), None, &a, &b, 2.0).is_err());
        // A weight replaced by another of its shape is not taken for the packed one.
        assert!(packed.packs(&w) && !packed.packs(&f32(randn((40, 48)))));
    }
}
