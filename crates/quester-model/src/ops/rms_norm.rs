//! RMSNorm over the last dimension: `y = x / sqrt(mean(x^2) + eps) * w`.

use super::{contiguous, Float, PAR_MIN};
use candle_core::{bail, CpuStorage, CustomOp2, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Differentiable RMSNorm of `x` (any shape, normalised over the last dim) with weight `w` [D].
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    if super::portable::wanted(x.device()) {
        return super::portable::rms_norm(x, w, eps);
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, RmsNorm { eps })
}

struct RmsNorm {
    eps: f64,
}

/// 1 / sqrt(mean(x^2) + eps), the squares summed in `T`'s vector lanes (`Dot`): a running f64
/// sum was a serial scalar chain, 2% of a GRPO-shaped step in its norms.
fn inv_rms<T: Float>(row: &[T], eps: f64) -> T {
    let ss = WithDType::to_f64(T::dot(row, row));
    T::from_f64(1.0 / (ss / row.len() as f64 + eps).sqrt())
}

fn fwd<T: Float>(x: &[T], w: &[T], eps: f64) -> Vec<T> {
    let d = w.len();
    if d == 0 || x.is_empty() {
        return x.to_vec();
    }
    // Every element is written below, so the output is not zeroed first.
    let mut out: Vec<T> = Vec::with_capacity(x.len());
    let body = |(o, r): (&mut [MaybeUninit<T>], &[T])| {
        let s = inv_rms(r, eps);
        for ((o, &r), &w) in o.iter_mut().zip(r).zip(w) {
            o.write(r * s * w);
        }
    };
    let spare = &mut out.spare_capacity_mut()[..x.len()];
    if x.len() >= PAR_MIN {
        spare.par_chunks_mut(d).zip(x.par_chunks(d)).for_each(body);
    } else {
        spare.chunks_mut(d).zip(x.chunks(d)).for_each(body);
    }
    // SAFETY: the rows of `spare` and of x pair up one to one (both of d) and each is written
    // whole.
    unsafe { out.set_len(x.len()) };
    out
}

/// Returns dx (same length as x) followed by dw (length D).
fn bwd<T: Float>(x: &[T], w: &[T], dy: &[T], eps: f64) -> Vec<T> {
    let d = w.len();
    let mut out = vec![T::zero(); x.len() + d];
    let (dx, dw_out) = out.split_at_mut(x.len());
    let rows_per_task = (PAR_MIN / d.max(1)).max(1);
    let dw = dx
        .par_chunks_mut(d * rows_per_task)
        .enumerate()
        .map(|(task, dx_rows)| {
            let mut dw = vec![T::zero(); d];
            let mut gw = vec![T::zero(); d];
            for (k, dxr) in dx_rows.chunks_mut(d).enumerate() {
                let row = task * rows_per_task + k;
                let xr = &x[row * d..(row + 1) * d];
                let gr = &dy[row * d..(row + 1) * d];
                let s = inv_rms(xr, eps);
                // dot = sum_i g_i w_i x_i ; dx = s*g*w - x * s^3 * dot / D
                for ((a, &g), &w) in gw.iter_mut().zip(gr).zip(w) {
                    *a = g * w;
                }
                let dot = T::dot(&gw, xr);
                let c = s * s * s * dot / T::from_f64(d as f64);
                for (((dx, dw), &gw), (&x, &g)) in
                    dxr.iter_mut().zip(&mut dw).zip(&gw).zip(xr.iter().zip(gr))
                {
                    *dx = s * gw - x * c;
                    *dw += g * x * s;
                }
            }
            dw
        })
        .reduce(
            || vec![T::zero(); d],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    dw_out.copy_from_slice(&dw);
    out
}

impl CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "quester-rms-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = l2.shape().elem_count();
        if l1.shape().dims().last() != Some(&d) {
            bail!(
                "rms_norm: weight {:?} does not match input {:?}",
                l2.shape(),
                l1.shape()
            );
        }
        let out = by_float!(s1, "rms_norm", |T| fwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            self.eps,
        ));
        Ok((out, l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let n = x.elem_count();
        let d = w.elem_count();
        let packed = x.apply_op3_no_bwd(w, &grad.contiguous()?, &RmsNormBwd { eps: self.eps })?;
        let dx = packed.narrow(0, 0, n)?.reshape(x.shape())?;
        let dw = packed.narrow(0, n, d)?.reshape(w.shape())?;
        Ok((Some(dx), Some(dw)))
    }
}

struct RmsNormBwd {
    eps: f64,
}

impl candle_core::CustomOp3 for RmsNormBwd {
    fn name(&self) -> &'static str {
        "quester-rms-norm-bwd"
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
        let total = l1.shape().elem_count() + l2.shape().elem_count();
        let out = by_float!(s1, "rms_norm bwd", |T| bwd(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            contiguous::<T>(s3, l3)?,
            self.eps,
        ));
        Ok((out, Shape::from(total)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::{DType, Device};

    #[test]
    fn matches_reference_formula() {
        let x = Tensor::new(
            &[[1.0f32, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, 2.0]],
            &Device::Cpu,
        )
        .unwrap();
        let w = Tensor::new(&[1.0f32, 0.5, 2.0, -1.0], &Device::Cpu).unwrap();
        let y = rms_norm(&x, &w, 1e-5).unwrap().to_vec2::<f32>().unwrap();
        // row 0: mean square 7.5
        let s = 1.0 / (7.5f32 + 1e-5).sqrt();
        assert!((y[0][0] - s).abs() < 1e-6);
        assert!((y[0][3] + 4.0 * s).abs() < 1e-6);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let x = seeded_randn_f64(1, 0.0, 1.0, (3, 5, 6));
        let w = seeded_randn_f64(2, 0.0, 1.0, 6);
        let proj = seeded_randn_f64(3, 0.0, 1.0, (3, 5, 6));
        check_gradients(
            &[x, w],
            |v| (rms_norm(&v[0], &v[1], 1e-5)? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
        assert_eq!(proj.dtype(), DType::F64);
    }
}
