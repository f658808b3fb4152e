//! AdamW with its moments on the parameter's device: two in-place ops per parameter, so that a
//! GPU step never copies a parameter, gradient or moment to the host.
//!
//! The moments of one parameter are one tensor `mv` of 2n elements (m, then v), so each pass has
//! one tensor to write: [`MomentsOp`] updates `mv` from the gradient, then [`ParamOp`] updates
//! the parameter from `mv`. The arithmetic is [`super::adamw`]'s fused host pass, split in two
//! (same operations in the same order, so the results are bit-identical on the CPU; the CUDA
//! kernels in `cuda/kernels.cu` are their twins).

use candle_core::{bail, CpuStorage, InplaceOp2, Layout, Result};
use rayon::prelude::*;

/// The per-step scalars of the update, shared by the host pass ([`super::adamw`]) and the device
/// ops. Defined here, not in `adamw`, so that the two modules do not import each other.
#[derive(Clone, Copy)]
pub(super) struct Consts {
    pub(super) decay: f32,
    pub(super) b1: f32,
    pub(super) b2: f32,
    pub(super) one_minus_b1: f32,
    pub(super) one_minus_b2: f32,
    pub(super) inv_bc1: f32,
    pub(super) inv_bc2: f32,
    pub(super) lr: f32,
    pub(super) eps: f32,
    pub(super) scale: f32,
}

const CHUNK: usize = 1 << 14;

/// `m <- b1 m + (1 - b1) g`, `v <- b2 v + (1 - b2) g^2` with `g` times the clipping scale.
pub(super) struct MomentsOp(pub(super) Consts);

/// `p <- p decay - lr m_hat / (sqrt(v_hat) + eps)`.
pub(super) struct ParamOp(pub(super) Consts);

pub(super) fn slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(d), Some((a, b))) => Ok(&d[a..b]),
        _ => bail!("fused-adamw: {what} must be a contiguous f32 tensor"),
    }
}

pub(super) fn slice_mut<'a>(
    s: &'a mut CpuStorage,
    l: &Layout,
    what: &str,
) -> Result<&'a mut [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(d), Some((a, b))) => Ok(&mut d[a..b]),
        _ => bail!("fused-adamw: {what} must be a contiguous f32 tensor"),
    }
}

impl InplaceOp2 for MomentsOp {
    fn name(&self) -> &'static str {
        "quester-adamw-moments"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<()> {
        let mv = slice_mut(s1, l1, "moments")?;
        let g = slice(s2, l2, "gradient")?;
        if mv.len() != 2 * g.len() {
            bail!("adamw: {} moments for a gradient of {}", mv.len(), g.len());
        }
        let c = self.0;
        let (m, v) = mv.split_at_mut(g.len());
        m.par_chunks_mut(CHUNK)
            .zip(v.par_chunks_mut(CHUNK))
            .zip(g.par_chunks(CHUNK))
            .for_each(|((m, v), g)| {
                for ((m, v), &g) in m.iter_mut().zip(v).zip(g) {
                    let g = g * c.scale;
                    *m = c.b1 * *m + c.one_minus_b1 * g;
                    *v = c.b2 * *v + c.one_minus_b2 * (g * g);
                }
            });
        Ok(())
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &mut candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> Result<()> {
        let c = self.0;
        let scalars = [c.scale, c.b1, c.one_minus_b1, c.b2, c.one_minus_b2];
        cuda::launch("quester_adamw_moments", (s1, l1), (s2, l2), true, scalars)
    }
}

impl InplaceOp2 for ParamOp {
    fn name(&self) -> &'static str {
        "quester-adamw-param"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<()> {
        let p = slice_mut(s1, l1, "parameter")?;
        let mv = slice(s2, l2, "moments")?;
        if mv.len() != 2 * p.len() {
            bail!("adamw: {} moments for a parameter of {}", mv.len(), p.len());
        }
        let c = self.0;
        let (m, v) = mv.split_at(p.len());
        p.par_chunks_mut(CHUNK)
            .zip(m.par_chunks(CHUNK))
            .zip(v.par_chunks(CHUNK))
            .for_each(|((p, m), v)| {
                for ((p, &m), &v) in p.iter_mut().zip(m).zip(v) {
                    let m_hat = m * c.inv_bc1;
                    let v_hat = v * c.inv_bc2;
                    *p = *p * c.decay - c.lr * (m_hat / (v_hat.sqrt() + c.eps));
                }
            });
        Ok(())
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &mut candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> Result<()> {
        let c = self.0;
        let scalars = [c.decay, c.lr, c.inv_bc1, c.inv_bc2, c.eps];
        cuda::launch("quester_adamw_param", (s1, l1), (s2, l2), false, scalars)
    }
}

/// The launch both kernels share: `dst` and `src` are contiguous f32, one of them holds the
/// moments (2n elements) and the other n, as `moments_in_dst` says.
#[cfg(feature = "cuda")]
mod cuda {
    use candle_core::cuda_backend::cudarc::driver::PushKernelArg;
    use candle_core::cuda_backend::WrapErr;
    use candle_core::{bail, CudaStorage, Layout, Result};

    pub(super) fn launch(
        name: &str,
        (dst, dl): (&mut CudaStorage, &Layout),
        (src, sl): (&CudaStorage, &Layout),
        moments_in_dst: bool,
        scalars: [f32; 5],
    ) -> Result<()> {
        let (Some((d0, d1)), Some((s0, s1))) = (dl.contiguous_offsets(), sl.contiguous_offsets())
        else {
            bail!("adamw: the operands must be contiguous")
        };
        let (dn, sn) = (d1 - d0, s1 - s0);
        // n: the parameter's length; the other operand holds its 2n moments.
        let (n, moments) = if moments_in_dst { (sn, dn) } else { (dn, sn) };
        if moments != 2 * n {
            bail!("adamw: {moments} moments for a parameter of {n}");
        }
        let dev = dst.device.clone();
        let (func, stream) = crate::cuda::func(&dev, name)?;
        let src = src.as_cuda_slice::<f32>()?.slice(s0..s1);
        let mut dst = dst.as_cuda_slice_mut::<f32>()?.slice_mut(d0..d1);
        let n64 = n as u64;
        let mut b = stream.launch_builder(&func);
        b.arg(&mut dst).arg(&src).arg(&n64);
        for x in &scalars {
            b.arg(x);
        }
        // SAFETY: the kernel touches n and 2n elements of the two slices, the lengths checked
        // above, and takes five f32 scalars after n (kernels.cu).
        unsafe { b.launch(crate::cuda::elementwise_config(n)) }.w()?;
        Ok(())
    }
}
