//! Rotary position embedding in the rotate-half convention (Hugging Face layout), with
//! per-token positions so left-padded and ragged batches rotate each token by its own position.

use super::{contiguous, Float, PAR_MIN};
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// cos and sin tables [B, T, D/2] for integer positions `pos` [B, T] (u32).
pub fn rope_tables(
    pos: &Tensor,
    head_dim: usize,
    theta: f64,
    dtype: DType,
) -> Result<(Tensor, Tensor)> {
    let (b, t) = pos.dims2()?;
    let half = head_dim / 2;
    let p: Vec<u32> = pos.flatten_all()?.to_vec1()?;
    let inv: Vec<f64> = (0..half)
        .map(|i| 1.0 / theta.powf(2.0 * i as f64 / head_dim as f64))
        .collect();
    let mut cos = Vec::with_capacity(b * t * half);
    let mut sin = Vec::with_capacity(b * t * half);
    for &pi in &p {
        for &f in &inv {
            // Angles in f32 like the reference implementations, so large positions agree.
            let a = f64::from(pi as f32 * f as f32);
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    let cos = Tensor::from_vec(cos, (b, t, half), pos.device())?.to_dtype(dtype)?;
    let sin = Tensor::from_vec(sin, (b, t, half), pos.device())?.to_dtype(dtype)?;
    Ok((cos, sin))
}

/// Rotates `x` [B, T, H, D] by the tables [B, T, D/2] from [`rope_tables`]. Differentiable in `x`.
pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if super::portable::wanted(x.device()) {
        return super::portable::rope(x, cos, sin);
    }
    x.contiguous()?.apply_op3(
        &cos.contiguous()?,
        &sin.contiguous()?,
        Rope { inverse: false },
    )
}

struct Rope {
    inverse: bool,
}

fn apply<T: Float>(x: &[T], cos: &[T], sin: &[T], h: usize, d: usize, inverse: bool) -> Vec<T> {
    let half = d / 2;
    if h * d == 0 || x.is_empty() {
        return x.to_vec();
    }
    // Written element by element below, not zeroed first (a zeroed allocation is one more pass
    // over the output, on one thread).
    let mut out: Vec<T> = Vec::with_capacity(x.len());
    // One chunk = all heads of one (b, t) token.
    let body = |(tok, o): (usize, &mut [MaybeUninit<T>])| {
        let c = &cos[tok * half..(tok + 1) * half];
        let s = &sin[tok * half..(tok + 1) * half];
        for head in 0..h {
            let xi = &x[(tok * h + head) * d..(tok * h + head + 1) * d];
            let oi = &mut o[head * d..(head + 1) * d];
            for i in 0..half {
                let si = if inverse { -s[i] } else { s[i] };
                oi[i].write(xi[i] * c[i] - xi[i + half] * si);
                oi[i + half].write(xi[i + half] * c[i] + xi[i] * si);
            }
            if d % 2 == 1 {
                // An odd head's last element has no partner (zero, as it always was).
                oi[d - 1].write(T::zero());
            }
        }
    };
    let spare = &mut out.spare_capacity_mut()[..x.len()];
    if x.len() >= PAR_MIN {
        spare.par_chunks_mut(h * d).enumerate().for_each(body);
    } else {
        spare.chunks_mut(h * d).enumerate().for_each(body);
    }
    // SAFETY: the chunks cover every token and each writes all d elements of its h heads.
    unsafe { out.set_len(x.len()) };
    out
}

impl CustomOp3 for Rope {
    fn name(&self) -> &'static str {
        "quester-rope"
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
        let (b, t, h, d) = l1.shape().dims4()?;
        if l2.shape().dims() != [b, t, d / 2] || l3.shape().dims() != [b, t, d / 2] {
            bail!(
                "rope: tables {:?} do not match input {:?}",
                l2.shape(),
                l1.shape()
            );
        }
        let out = by_float!(s1, "rope", |T| apply(
            contiguous::<T>(s1, l1)?,
            contiguous::<T>(s2, l2)?,
            contiguous::<T>(s3, l3)?,
            h,
            d,
            self.inverse,
        ));
        Ok((out, l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // The rotation is orthogonal: its transpose is the rotation by the opposite angle.
        let dx = grad.contiguous()?.apply_op3_no_bwd(
            cos,
            sin,
            &Rope {
                inverse: !self.inverse,
            },
        )?;
        Ok((Some(dx), None, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::check_gradients;
    use crate::ops::test_util::*;
    use candle_core::Device;

    #[test]
    fn rotates_pairs_by_position_angle() {
        let pos = Tensor::new(&[[0u32, 3]], &Device::Cpu).unwrap();
        let (cos, sin) = rope_tables(&pos, 4, 10000.0, DType::F64).unwrap();
        let x = Tensor::new(&[1.0f64, 2.0, 3.0, 4.0], &Device::Cpu)
            .unwrap()
            .reshape((1, 1, 1, 4))
            .unwrap()
            .repeat((1, 2, 1, 1))
            .unwrap();
        let y: Vec<f64> = rope(&x, &cos, &sin)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        // Position 0 is the identity.
        assert_eq!(&y[..4], &[1.0, 2.0, 3.0, 4.0]);
        // Position 3, pair (x0, x2) at frequency 1: rotated by 3 radians.
        let (c, s) = (3.0f64.cos(), 3.0f64.sin());
        assert!((y[4] - (1.0 * c - 3.0 * s)).abs() < 1e-12);
        assert!((y[6] - (3.0 * c + 1.0 * s)).abs() < 1e-12);
        // Pair (x1, x3) at frequency 10000^(-1/2) = 0.01.
        let a = f64::from(3.0f32 * 0.01f32);
        assert!((y[5] - (2.0 * a.cos() - 4.0 * a.sin())).abs() < 1e-6);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let dev = Device::Cpu;
        let pos = Tensor::new(&[[0u32, 1, 2], [5, 6, 7]], &dev).unwrap();
        let (cos, sin) = rope_tables(&pos, 6, 100.0, DType::F64).unwrap();
        let x = seeded_randn_f64(1, 0.0, 1.0, (2, 3, 2, 6));
        let proj = seeded_randn_f64(2, 0.0, 1.0, (2, 3, 2, 6));
        check_gradients(
            &[x],
            |v| (rope(&v[0], &cos, &sin)? * &proj)?.sum_all(),
            1e-6,
        )
        .unwrap();
    }
}
