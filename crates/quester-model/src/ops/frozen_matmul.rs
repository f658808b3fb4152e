//! `x W^T` for a frozen weight: the backward pass gives x its gradient and nothing else.
//!
//! candle's matmul backward always computes the gradient of both operands, even when one is a
//! detached constant. Under LoRA every base projection and the output head are constants, so
//! that is one wasted weight-sized matmul per projection (a third of the backward FLOPs) plus a
//! weight-sized gradient buffer each.

use super::bf16_linear::FrozenBf16;
use super::gemm::product;
use super::Float;
use crate::precision::Precision;
use candle_core::{bail, CpuStorage, CustomOp1, DType, Layout, Result, Shape, Storage, Tensor};
use std::sync::Arc;

/// `x` [..., in] times the transpose of the frozen `w` [out, in]; differentiable in `x` only.
pub fn frozen_matmul(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    frozen_matmul_with(x, w, Precision::F32)
}

/// [`frozen_matmul`] in `precision` (bf16 applies to f32 tensors; f64 stays exact).
pub fn frozen_matmul_with(x: &Tensor, w: &Tensor, precision: Precision) -> Result<Tensor> {
    frozen_matmul_on(x, w, precision, None)
}

/// [`frozen_matmul_with`] in bf16 with `w`'s panels packed beforehand, for a weight that stays
/// frozen across many calls (the output head under LoRA: it is packed twice a call otherwise).
/// The same bits as packing per call.
pub fn frozen_matmul_packed(x: &Tensor, w: &Tensor, packed: &Arc<FrozenBf16>) -> Result<Tensor> {
    if !packed.fits(w) {
        bail!(
            "frozen matmul: panels packed from a weight of another shape than {:?}",
            w.dims()
        );
    }
    frozen_matmul_on(x, w, Precision::Bf16, Some(packed))
}

fn frozen_matmul_on(
    x: &Tensor,
    w: &Tensor,
    precision: Precision,
    packed: Option<&Arc<FrozenBf16>>,
) -> Result<Tensor> {
    let (out, inp) = w.dims2()?;
    let dims = x.dims().to_vec();
    if dims.last() != Some(&inp) {
        bail!("frozen matmul: x {:?} does not end in {inp}", x.dims());
    }
    let rows = x.elem_count() / inp.max(1);
    let x = x.reshape((rows, inp))?;
    let y = if super::portable::wanted(x.device()) {
        super::portable::frozen_matmul(&x, w, precision)?
    } else {
        let bf16 = precision == Precision::Bf16 && x.dtype() == DType::F32;
        x.contiguous()?.apply_op1(FrozenMatmul {
            w: w.detach().contiguous()?,
            bf16,
            packed: packed.filter(|_| bf16).cloned(),
        })?
    };
    let mut out_dims = dims;
    if let Some(last) = out_dims.last_mut() {
        *last = out;
    }
    y.reshape(out_dims)
}

struct FrozenMatmul {
    w: Tensor,
    /// Products with bf16 operands (f32 tensors only).
    bf16: bool,
    /// `w`'s bf16 panels, when packed beforehand.
    packed: Option<Arc<FrozenBf16>>,
}

/// y [rows, out] = x [rows, inp] . W^T for W [out, inp], both row-major: dot products for the
/// few rows of decoding, gemm otherwise.
pub(crate) fn x_wt<T: Float>(x: &[T], w: &[T], rows: usize, inp: usize, out: usize) -> Vec<T> {
    if rows <= super::gemv::MAX_ROWS {
        return super::gemv::small_rows_matmul(x, w, rows, inp, out);
    }
    // y [rows, out] = x [rows, inp] . W^T (W [out, inp] read as its transpose).
    product((rows, out, inp), T::one(), (x, (inp, 1)), (w, (1, inp)))
}

impl CustomOp1 for FrozenMatmul {
    fn name(&self) -> &'static str {
        "quester-frozen-matmul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, inp) = l.shape().dims2()?;
        let (out, w_in) = self.w.dims2()?;
        if w_in != inp {
            bail!("frozen matmul: {inp} inputs against a weight of {w_in}");
        }
        let (ws, wl) = self.w.storage_and_layout();
        let Storage::Cpu(ws) = &*ws else {
            bail!("frozen matmul: the weight must be on the CPU")
        };
        if self.bf16 {
            let (CpuStorage::F32(_), CpuStorage::F32(_)) = (s, ws) else {
                bail!("frozen matmul: bf16 products need f32 operands")
            };
            if let Some(p) = &self.packed {
                let y = p.panels().0.matmul(super::contiguous(s, l)?, rows)?;
                return Ok((CpuStorage::F32(y), Shape::from((rows, out))));
            }
            let y = super::bf16_linear::x_wt(
                super::contiguous(s, l)?,
                super::contiguous(ws, wl)?,
                rows,
                inp,
                out,
            )?;
            return Ok((CpuStorage::F32(y), Shape::from((rows, out))));
        }
        let y = by_float!(s, "frozen matmul", |T| x_wt(
            super::contiguous::<T>(s, l)?,
            super::contiguous::<T>(ws, wl)?,
            rows,
            inp,
            out,
        ));
        Ok((y, Shape::from((rows, out))))
    }

    fn bwd(&self, _x: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        if self.bf16 {
            return Ok(Some(match &self.packed {
                Some(p) => super::bf16_linear::grad_times_packed(grad, &self.w, p)?,
                None => super::bf16_linear::grad_times_weight(grad, &self.w)?,
            }));
        }
        Ok(Some(grad.matmul(&self.w)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::{DType, Device, Var};

    #[test]
    fn equals_matmul_and_leaves_the_weight_without_gradient() {
        let w = Var::from_tensor(&seeded_randn(1, 0.0, 1.0, (70, 300))).unwrap();
        // 10 rows take the decoding (dot-product) path, 40 rows the gemm path.
        for rows in [5, 20] {
            let x = seeded_randn(2, 0.0, 1.0, (2, rows, 300));
            let ours = frozen_matmul(&x, w.as_tensor()).unwrap();
            let want = x.broadcast_matmul(&w.as_tensor().t().unwrap()).unwrap();
            let err = crate::ops::test_util::max_abs_diff(&ours, &want);
            assert!(err < 1e-3, "{rows}: {err}");
        }
        let x = seeded_randn(3, 0.0, 1.0, (2, 5, 300));
        let xv = Var::from_tensor(&x).unwrap();
        let grads = frozen_matmul(xv.as_tensor(), w.as_tensor())
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        assert!(grads.get(w.as_tensor()).is_none());
        assert!(grads.get(xv.as_tensor()).is_some());
    }

    /// Panels packed beforehand give per-call packing's bits, forward and input gradient (rows
    /// past one panel block and a ragged last one), and a weight of another shape is refused.
    #[test]
    fn packed_beforehand_gives_the_same_bits() {
        let dev = Device::Cpu;
        let w = seeded_randn(4, 0.0, 1.0, (130, 96));
        let packed = Arc::new(FrozenBf16::pack(&w).unwrap());
        let x = Var::from_tensor(&seeded_randn(5, 0.0, 1.0, (300, 96))).unwrap();
        let proj = seeded_randn(6, 0.0, 1.0, (300, 130));
        let run = |y: Tensor| {
            let grads = (&y * &proj).unwrap().sum_all().unwrap().backward().unwrap();
            let dx = grads.get(x.as_tensor()).unwrap().clone();
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            (flat(&y), flat(&dx))
        };
        let per_call = run(frozen_matmul_with(x.as_tensor(), &w, Precision::Bf16).unwrap());
        let packed_once = run(frozen_matmul_packed(x.as_tensor(), &w, &packed).unwrap());
        assert!(per_call == packed_once);
        let other = Tensor::zeros((130, 95), DType::F32, &dev).unwrap();
        assert!(frozen_matmul_packed(x.as_tensor(), &other, &packed).is_err());
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let w = seeded_randn_f64(7, 0.0, 1.0, (4, 6));
        let x = seeded_randn_f64(8, 0.0, 1.0, (3, 6));
        let proj = seeded_randn_f64(9, 0.0, 1.0, (3, 4));
        check_gradients(
            &[x.to_dtype(DType::F64).unwrap()],
            |v| (frozen_matmul(&v[0], &w)? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
