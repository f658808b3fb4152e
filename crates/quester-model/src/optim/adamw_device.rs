//! AdamW with its moments on the parameter's device: two in-place ops per parameter, so that a
//! GPU step never copies a parameter, gradient or moment to the host.
//!
//! The moments of one parameter are one tensor `mv` of 2n elements (m, then v), so each pass has
//! one tensor to write: [`MomentsOp`] updates `mv` from the gradient, then [`ParamOp`] updates
//! the parameter from `mv`. The arithmetic is [`super::adamw`]'s fused host pass, split in two
//! (same operations in the same order, so the results are bit-identical on the CPU; the CUDA
//! kernels in `cuda/kernels.cu` are their twins).

use super::adamw::Consts;
use candle_core::{bail, CpuStorage, InplaceOp2, Layout, Result};
use rayon::prelude::*;

const CHUNK: usize = 1 << 14;

/// `m <- b1 m + (1 - b1) g`, `v <- b2 v + (1 - b2) g^2` with `g` times the clipping scale.
pub(super) struct MomentsOp(pub(super) Consts);

/// `p <- p decay - lr m_hat / (sqrt(v_hat) + eps)`.
pub(super) struct ParamOp(pub(super) Consts);

fn slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(d), Some((a, b))) => Ok(&d[a..b]),
        _ => bail!("adamw: {what} must be a contiguous f32 tensor"),
    }
}

fn slice_mut<'a>(s: &'a mut CpuStorage, l: &Layout, what: &str) -> Result<&'a mut [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(d), Some((a, b))) => Ok(&mut d[a..b]),
        _ => bail!("adamw: {what} must be a contiguous f32 tensor"),
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
        use candle_core::cuda_backend::cudarc::driver::PushKernelArg;
        use candle_core::cuda_backend::WrapErr;
        let (Some((m0, m1)), Some((g0, g1))) = (l1.contiguous_offsets(), l2.contiguous_offsets())
        else {
            bail!("adamw: moments and gradient must be contiguous")
        };
        let n = g1 - g0;
        if m1 - m0 != 2 * n {
            bail!("adamw: {} moments for a gradient of {n}", m1 - m0);
        }
        let dev = s1.device.clone();
        let (func, stream) = crate::cuda::func(&dev, "quester_adamw_moments")?;
        let g = s2.as_cuda_slice::<f32>()?.slice(g0..g1);
        let mut mv = s1.as_cuda_slice_mut::<f32>()?.slice_mut(m0..m1);
        let c = self.0;
        let n64 = n as u64;
        let mut b = stream.launch_builder(&func);
        b.arg(&mut mv)
            .arg(&g)
            .arg(&n64)
            .arg(&c.scale)
            .arg(&c.b1)
            .arg(&c.one_minus_b1)
            .arg(&c.b2)
            .arg(&c.one_minus_b2);
        // SAFETY: the kernel reads n gradients and writes 2n moments, the lengths checked above.
        unsafe { b.launch(crate::cuda::elementwise_config(n)) }.w()?;
        Ok(())
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
        use candle_core::cuda_backend::cudarc::driver::PushKernelArg;
        use candle_core::cuda_backend::WrapErr;
        let (Some((p0, p1)), Some((m0, m1))) = (l1.contiguous_offsets(), l2.contiguous_offsets())
        else {
            bail!("adamw: parameter and moments must be contiguous")
        };
        let n = p1 - p0;
        if m1 - m0 != 2 * n {
            bail!("adamw: {} moments for a parameter of {n}", m1 - m0);
        }
        let dev = s1.device.clone();
        let (func, stream) = crate::cuda::func(&dev, "quester_adamw_param")?;
        let mv = s2.as_cuda_slice::<f32>()?.slice(m0..m1);
        let mut p = s1.as_cuda_slice_mut::<f32>()?.slice_mut(p0..p1);
        let c = self.0;
        let n64 = n as u64;
        let mut b = stream.launch_builder(&func);
        b.arg(&mut p)
            .arg(&mv)
            .arg(&n64)
            .arg(&c.decay)
            .arg(&c.lr)
            .arg(&c.inv_bc1)
            .arg(&c.inv_bc2)
            .arg(&c.eps);
        // SAFETY: the kernel reads 2n moments and writes n parameters, the lengths checked above.
        unsafe { b.launch(crate::cuda::elementwise_config(n)) }.w()?;
        Ok(())
    }
}
