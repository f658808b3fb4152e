//! The three products of a linear layer with bf16 operands: `x W^T` forward, `g W` for the
//! input's gradient and `g^T x` for the weight's. Each packs its right-hand operand per call
//! (one pass over a weight-sized matrix, about 1% of the product at training's row counts), so
//! a weight that changes every step (full fine-tuning) needs no snapshot to invalidate.

use super::bf16::Bf16Panels;
use super::contiguous;
use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Storage, Tensor, TensorId,
};
use std::sync::Arc;

/// y [rows, out] = x [rows, inp] . W^T for a row-major W [out, inp].
pub(crate) fn x_wt(x: &[f32], w: &[f32], rows: usize, inp: usize, out: usize) -> Result<Vec<f32>> {
    Bf16Panels::pack_rows(w, out, inp)?.matmul(x, rows)
}

/// dx [rows, inp] = g [rows, out] . W for a row-major W [out, inp].
pub(crate) fn g_w(g: &[f32], w: &[f32], rows: usize, out: usize, inp: usize) -> Result<Vec<f32>> {
    // B = W^T [inp, out]: element (i, o) is w[o * inp + i].
    Bf16Panels::pack(w, (inp, out), (1, inp))?.matmul(g, rows)
}

/// dW [out, inp] = g^T [out, rows] . x [rows, inp].
pub(crate) fn gt_x(g: &[f32], x: &[f32], rows: usize, out: usize, inp: usize) -> Result<Vec<f32>> {
    // B = x^T [inp, rows]: element (i, r) is x[r * inp + i]; A = g^T: element (o, r) is
    // g[r * out + o].
    Bf16Panels::pack(x, (inp, rows), (1, inp))?.matmul_strided(g, out, (1, out))
}

/// A frozen weight W [out, in] packed once for both of its bf16 products: `x W^T` (forward)
/// and `g W` (the input's gradient). LoRA's base does not change while its adapter trains, so
/// packing it on every call (two weight-sized conversions per projection and step) repeats work;
/// kept, the pair costs 4 bytes per weight, as much as W itself in f32.
#[derive(Debug)]
pub struct FrozenBf16 {
    weight: TensorId,
    dims: (usize, usize),
    x_wt: Bf16Panels,
    g_w: Bf16Panels,
}

impl FrozenBf16 {
    /// Packs `w` [out, in], an f32 tensor on the CPU.
    pub fn pack(w: &Tensor) -> Result<Self> {
        let (out, inp) = w.dims2()?;
        let weight = w.id();
        let w = w.contiguous()?;
        let (g, l) = w.storage_and_layout();
        let host = host_f32(&g, l, "the weight")?;
        Ok(FrozenBf16 {
            weight,
            dims: (out, inp),
            x_wt: Bf16Panels::pack_rows(host, out, inp)?,
            g_w: Bf16Panels::pack(host, (inp, out), (1, inp))?,
        })
    }

    /// Whether these are the panels of `w`: the tensor they were packed from (a detached copy
    /// has another identity), not one that replaced it.
    pub fn packs(&self, w: &Tensor) -> bool {
        self.weight == w.id() && self.fits(w)
    }

    /// Whether `w` has the shape these panels were packed from.
    pub fn fits(&self, w: &Tensor) -> bool {
        w.dims2().ok() == Some(self.dims)
    }

    /// The panels of `x W^T` (B = W) and of `g W` (B = W^T).
    pub(crate) fn panels(&self) -> (&Bf16Panels, &Bf16Panels) {
        (&self.x_wt, &self.g_w)
    }

    /// Bytes of the two packings.
    pub fn bytes(&self) -> usize {
        self.x_wt.bytes() + self.g_w.bytes()
    }
}

/// The host slice of a CPU f32 tensor.
fn host_f32<'a>(guard: &'a Storage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    match guard {
        Storage::Cpu(s @ CpuStorage::F32(_)) => contiguous::<f32>(s, l),
        _ => bail!("bf16 linear: {what} must be an f32 tensor on the CPU"),
    }
}

/// `g` [rows, out] times the frozen `w` [out, inp] with bf16 operands (no gradient): the input
/// gradient of a frozen projection.
pub(crate) fn grad_times_weight(g: &Tensor, w: &Tensor) -> Result<Tensor> {
    g.contiguous()?.apply_op1_no_bwd(&GradTimesW {
        w: w.clone(),
        packed: None,
    })
}

/// [`grad_times_weight`] with `w`'s panels packed beforehand (the same bits: the same packing).
pub(crate) fn grad_times_packed(
    g: &Tensor,
    w: &Tensor,
    packed: &Arc<FrozenBf16>,
) -> Result<Tensor> {
    g.contiguous()?.apply_op1_no_bwd(&GradTimesW {
        w: w.clone(),
        packed: Some(packed.clone()),
    })
}

struct GradTimesW {
    w: Tensor,
    /// `w`'s panels, when packed beforehand.
    packed: Option<Arc<FrozenBf16>>,
}

impl CustomOp1 for GradTimesW {
    fn name(&self) -> &'static str {
        "quester-bf16-grad-times-w"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, out) = l.shape().dims2()?;
        let (w_out, inp) = self.w.dims2()?;
        if w_out != out {
            bail!("bf16 linear: a gradient of width {out} against a weight of {w_out} rows");
        }
        let CpuStorage::F32(_) = s else {
            bail!("bf16 linear: f32 gradient expected")
        };
        let g = contiguous::<f32>(s, l)?;
        let y = match &self.packed {
            Some(p) => p.panels().1.matmul(g, rows)?,
            None => {
                let (wg, wl) = self.w.storage_and_layout();
                g_w(g, host_f32(&wg, wl, "the weight")?, rows, out, inp)?
            }
        };
        Ok((CpuStorage::F32(y), Shape::from((rows, inp))))
    }
}

/// `x` [rows, inp] . `w`^T with bf16 operands, differentiable in both (a full fine-tune's
/// projection): the backward pass computes `g W` and `g^T x` the same way. f32 CPU tensors.
pub fn linear_bf16(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (_, inp) = x.dims2()?;
    if w.dims2()?.1 != inp {
        bail!("bf16 linear: x {:?} against w {:?}", x.dims(), w.dims());
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, LinearBf16)
}

struct LinearBf16;

impl CustomOp2 for LinearBf16 {
    fn name(&self) -> &'static str {
        "quester-bf16-linear"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (rows, inp) = l1.shape().dims2()?;
        let (out, _) = l2.shape().dims2()?;
        let (CpuStorage::F32(_), CpuStorage::F32(_)) = (s1, s2) else {
            bail!("bf16 linear: f32 operands expected")
        };
        let y = x_wt(contiguous(s1, l1)?, contiguous(s2, l2)?, rows, inp, out)?;
        Ok((CpuStorage::F32(y), Shape::from((rows, out))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let g = grad.detach().contiguous()?;
        let (x, w) = (x.detach(), w.detach());
        let (rows, out) = g.dims2()?;
        let inp = x.dims2()?.1;
        let dx = grad_times_weight(&g, &w)?;
        let dw = {
            let (gg, gl) = g.storage_and_layout();
            let (xg, xl) = x.storage_and_layout();
            let v = gt_x(
                host_f32(&gg, gl, "the gradient")?,
                host_f32(&xg, xl, "x")?,
                rows,
                out,
                inp,
            )?;
            Tensor::from_vec(v, (out, inp), x.device())?
        };
        Ok((Some(dx), Some(dw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::bf16::round_to_bf16;
    use crate::ops::test_util::*;
    use candle_core::{DType, Device, Var};

    /// The tensor with every element rounded to bf16, in f64.
    fn rounded64(t: &Tensor) -> Tensor {
        let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
        let r: Vec<f64> = v.iter().map(|&x| f64::from(round_to_bf16(x))).collect();
        Tensor::from_vec(r, t.dims(), t.device()).unwrap()
    }

    fn max_rel(a: &Tensor, b: &Tensor) -> f64 {
        let a = a.to_dtype(DType::F64).unwrap();
        let b = b.to_dtype(DType::F64).unwrap();
        let scale = b
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
            / scale.max(1.0)
    }

    /// Values and both gradients equal the f64 products of the bf16-rounded operands (to f32
    /// accumulation), i.e. the backward pass computes exactly what it says.
    #[test]
    fn values_and_gradients_are_the_products_of_the_rounded_operands() {
        let (rows, inp, out) = (37, 70, 50);
        let x = Var::from_tensor(&seeded_randn(1, 0.0, 1.0, (rows, inp))).unwrap();
        let w = Var::from_tensor(&seeded_randn(2, 0.0, 1.0, (out, inp))).unwrap();
        let proj = seeded_randn(3, 0.0, 1.0, (rows, out));
        let y = linear_bf16(x.as_tensor(), w.as_tensor()).unwrap();
        let grads = (&y * &proj).unwrap().sum_all().unwrap().backward().unwrap();
        let (xr, wr) = (rounded64(x.as_tensor()), rounded64(w.as_tensor()));
        let want_y = xr.matmul(&wr.t().unwrap()).unwrap();
        assert!(max_rel(&y, &want_y) < 1e-5);
        // g = proj, rounded to bf16 before the products as the kernel does.
        let g = rounded64(&proj);
        let want_dx = g.matmul(&wr).unwrap();
        let want_dw = g.t().unwrap().matmul(&xr).unwrap();
        assert!(max_rel(grads.get(x.as_tensor()).unwrap(), &want_dx) < 1e-5);
        assert!(max_rel(grads.get(w.as_tensor()).unwrap(), &want_dw) < 1e-5);
        // Within bf16's rounding of the f32 product.
        let f32y = x.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap();
        assert!(max_rel(&y, &f32y) < 2e-2, "{}", max_rel(&y, &f32y));
    }

    #[test]
    fn wrong_shapes_and_dtypes_are_errors() {
        let dev = Device::Cpu;
        let x = Tensor::zeros((3, 4), DType::F32, &dev).unwrap();
        assert!(linear_bf16(&x, &Tensor::zeros((2, 5), DType::F32, &dev).unwrap()).is_err());
        let x64 = Tensor::zeros((3, 4), DType::F64, &dev).unwrap();
        assert!(linear_bf16(&x64, &Tensor::zeros((2, 4), DType::F64, &dev).unwrap()).is_err());
    }
}
