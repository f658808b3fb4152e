//! `x W^T` for generation, on a copy of W packed once into column panels.
//!
//! During a rollout the weights do not change, yet a general gemm re-packs each W at every
//! token step; with the 8-64 rows of batched decoding that copy costs as much as the product
//! (gemm reached 45-100 GFLOP/s on [32, 576] x W^T here). Packing W once into panels of
//! [`PANEL`] output columns laid out k-major lets a register-blocked AVX-512 kernel stream each
//! panel contiguously: 140-260 GFLOP/s at 16-64 rows on the same 2 cores, and on par with gemm
//! for thousands of rows (prefill).
//!
//! Every output element is one chain of fused multiply-adds over k in order, whatever the
//! number of rows and wherever a row sits in its tile: a row's result does not depend on the
//! other rows of the batch (bit for bit), so a response does not depend on what is decoded
//! with it.

use super::bf16::Bf16Panels;
use super::tiles::{row_tiles, SharedOut, TILE_ROWS};
use crate::precision::Precision;
use candle_core::{bail, CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// Output columns per panel: three 16-float vectors.
const PANEL: usize = 48;

/// Below this many multiply-adds a product runs on the calling thread.
const PAR_MIN_FLOPS: usize = 1 << 16;

/// A frozen f32 weight W [out, inp] packed for `x W^T`: panel p holds output columns
/// p*48..p*48+48 as [inp][48] (zero past `out`), in f32 or as bf16 pairs ([`Bf16Panels`]).
#[derive(Debug, Clone)]
pub struct PackedMatrix {
    out: usize,
    inp: usize,
    data: Panels,
}

#[derive(Debug, Clone)]
enum Panels {
    F32(Vec<f32>),
    Bf16(Bf16Panels),
}

impl PackedMatrix {
    /// Packs a row-major W [out, inp].
    pub fn pack(w: &[f32], out: usize, inp: usize) -> Result<Self> {
        if w.len() != out * inp {
            bail!(
                "packed matmul: {} weights for a [{out}, {inp}] matrix",
                w.len()
            );
        }
        let mut data = vec![0f32; out.div_ceil(PANEL) * inp * PANEL];
        if inp > 0 {
            data.par_chunks_mut(inp * PANEL)
                .enumerate()
                .for_each(|(p, panel)| {
                    let cols = (out - p * PANEL).min(PANEL);
                    let rows = &w[p * PANEL * inp..(p * PANEL + cols) * inp];
                    for (k, dst) in panel.chunks_exact_mut(PANEL).enumerate() {
                        for (c, d) in dst[..cols].iter_mut().enumerate() {
                            *d = rows[c * inp + k];
                        }
                    }
                });
        }
        Ok(PackedMatrix {
            out,
            inp,
            data: Panels::F32(data),
        })
    }

    /// Packs a row-major W [out, inp] for products in `precision`.
    pub fn pack_in(w: &[f32], out: usize, inp: usize, precision: Precision) -> Result<Self> {
        match precision {
            Precision::F32 => Self::pack(w, out, inp),
            Precision::Bf16 => Ok(PackedMatrix {
                out,
                inp,
                data: Panels::Bf16(Bf16Panels::pack_rows(w, out, inp)?),
            }),
        }
    }

    /// The precision of the products.
    pub fn precision(&self) -> Precision {
        match self.data {
            Panels::F32(_) => Precision::F32,
            Panels::Bf16(_) => Precision::Bf16,
        }
    }

    /// Packs the f32 tensor W [out, inp], read in place (no host copy of a contiguous W).
    pub fn from_tensor(w: &Tensor) -> Result<Self> {
        Self::from_tensor_in(w, Precision::F32)
    }

    /// [`PackedMatrix::from_tensor`] for products in `precision`.
    pub fn from_tensor_in(w: &Tensor, precision: Precision) -> Result<Self> {
        let (out, inp) = w.dims2()?;
        let w = w.contiguous()?;
        let (storage, layout) = w.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else {
            bail!("packed matmul: the weight must be on the CPU")
        };
        let CpuStorage::F32(_) = cpu else {
            bail!("packed matmul: an f32 weight expected, not {:?}", w.dtype())
        };
        Self::pack_in(super::contiguous::<f32>(cpu, layout)?, out, inp, precision)
    }

    /// True where the vector kernel runs (x86-64 with AVX-512). Elsewhere the products fall
    /// back to a portable loop that is correct but slower than gemm, so callers pack only here.
    pub fn has_fast_kernel() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Output width.
    pub fn out_dim(&self) -> usize {
        self.out
    }

    /// Input width.
    pub fn in_dim(&self) -> usize {
        self.inp
    }

    /// y [rows, out] = x [rows, inp] . W^T.
    pub fn matmul_slice(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (out, inp) = (self.out, self.inp);
        assert_eq!(x.len(), rows * inp, "packed matmul: x has the wrong length");
        let data = match &self.data {
            Panels::F32(d) => d,
            Panels::Bf16(b) => return b.matmul(x, rows).expect("x's length checked above"),
        };
        if rows == 0 || out == 0 || inp == 0 {
            return vec![0f32; rows * out];
        }
        // Not zeroed: the panels write every element (each column is one panel's, each row in
        // one tile), and zeroing the prefill's megabytes first costs a pass over them.
        let mut y: Vec<f32> = Vec::with_capacity(rows * out);
        let panels = out.div_ceil(PANEL);
        let threads = rayon::current_num_threads();
        let y_ptr = SharedOut(y.as_mut_ptr());
        let run = |ps: std::ops::Range<usize>| {
            for p in ps {
                let cols = (out - p * PANEL).min(PANEL);
                let panel = &data[p * inp * PANEL..(p + 1) * inp * PANEL];
                // SAFETY: panel p writes only columns p*48..p*48+cols of each of the `rows`
                // rows of y (rows * out elements), and no two panels share a column.
                unsafe { panel_product(x, rows, inp, panel, y_ptr.at(p * PANEL), out, cols) };
            }
        };
        if threads > 1 && rows * out * inp >= PAR_MIN_FLOPS {
            // A few tasks per thread, so an uneven split (12 panels of a 576-wide output) still
            // keeps both cores busy.
            let per = panels.div_ceil(threads * 4).max(1);
            (0..panels.div_ceil(per))
                .into_par_iter()
                .for_each(|t| run(t * per..((t + 1) * per).min(panels)));
        } else {
            run(0..panels);
        }
        // SAFETY: the panels above wrote all rows * out elements (see the allocation).
        unsafe { y.set_len(rows * out) };
        y
    }

    /// y [..., out] = x [..., inp] . W^T for an f32 tensor x (no gradient).
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        if dims.last() != Some(&self.inp) {
            bail!("packed matmul: x {:?} does not end in {}", dims, self.inp);
        }
        let rows = x.elem_count() / self.inp.max(1);
        let y = x
            .reshape((rows, self.inp))?
            .contiguous()?
            .apply_op1_no_bwd(&PackedOp(self))?;
        let mut out_dims = dims;
        if let Some(last) = out_dims.last_mut() {
            *last = self.out;
        }
        y.reshape(out_dims)
    }
}

impl PackedMatrix {
    /// `y = x W^T + scale (x A^T) B^T` for an untracked LoRA adapter (A [r, inp], B [out, r])
    /// when W is packed in bf16, computed as the training op computes it: the update's share is
    /// a bf16 product added into the base's accumulators. A row's outputs are then bit for bit
    /// those of the training forward on the same row, so rollouts sample from the policy that
    /// training scores. `None` for f32 panels (there the adapter stays an f32 product beside
    /// the base, as in training).
    pub fn matmul_lora(
        &self,
        x: &Tensor,
        a: &Tensor,
        b: &Tensor,
        scale: f64,
    ) -> Result<Option<Tensor>> {
        let Panels::Bf16(panels) = &self.data else {
            return Ok(None);
        };
        let dims = x.dims().to_vec();
        let (r, a_in) = a.dims2()?;
        if dims.last() != Some(&self.inp) || a_in != self.inp || b.dims2()? != (self.out, r) {
            bail!(
                "packed lora matmul: x {:?}, a {:?}, b {:?} against W [{}, {}]",
                dims,
                a.dims(),
                b.dims(),
                self.out,
                self.inp
            );
        }
        let rows = x.elem_count() / self.inp.max(1);
        let op = PackedLoraOp {
            panels,
            inp: self.inp,
            a: a.detach().contiguous()?,
            b: b.detach().contiguous()?,
            scale,
        };
        let y = x
            .reshape((rows, self.inp))?
            .contiguous()?
            .apply_op1_no_bwd(&op)?;
        let mut out_dims = dims;
        if let Some(last) = out_dims.last_mut() {
            *last = self.out;
        }
        Ok(Some(y.reshape(out_dims)?))
    }
}

/// [`PackedMatrix::matmul_lora`] on the input's storage (no copies of x, A or B).
struct PackedLoraOp<'a> {
    panels: &'a Bf16Panels,
    inp: usize,
    a: Tensor,
    b: Tensor,
    scale: f64,
}

impl CustomOp1 for PackedLoraOp<'_> {
    fn name(&self) -> &'static str {
        "quester-packed-lora-matmul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, _) = l.shape().dims2()?;
        let CpuStorage::F32(_) = s else {
            bail!("packed lora matmul: f32 input expected")
        };
        let x = super::contiguous::<f32>(s, l)?;
        let (ag, bg) = (self.a.storage_and_layout().0, self.b.storage_and_layout().0);
        let (a, b) = (
            super::host::<f32>(&self.a, &ag)?,
            super::host::<f32>(&self.b, &bg)?,
        );
        let (out, r) = self.b.dims2()?;
        let b_panels = Bf16Panels::pack_for(self.panels.kernel(), b, (out, r), (r, 1))?;
        let (y, _) = super::lora_bf16::forward(
            (self.panels, &b_panels),
            x,
            a,
            (rows, self.inp, r),
            self.scale as f32,
        )?;
        Ok((CpuStorage::F32(y), Shape::from((rows, out))))
    }
}

struct PackedOp<'a>(&'a PackedMatrix);

impl CustomOp1 for PackedOp<'_> {
    fn name(&self) -> &'static str {
        "quester-packed-matmul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, _) = l.shape().dims2()?;
        let CpuStorage::F32(_) = s else {
            bail!("packed matmul: f32 input expected")
        };
        let x = super::contiguous::<f32>(s, l)?;
        let y = self.0.matmul_slice(x, rows);
        Ok((CpuStorage::F32(y), Shape::from((rows, self.0.out))))
    }
}

/// One panel against every row, in tiles of 8, 4, 2 and 1 rows.
///
/// # Safety
/// `y` points at column 0 of this panel in row 0 of an output with row stride `ys`, valid for
/// `rows` rows and `cols` columns.
unsafe fn panel_product(
    x: &[f32],
    rows: usize,
    inp: usize,
    panel: &[f32],
    y: *mut f32,
    ys: usize,
    cols: usize,
) {
    // SAFETY: `y` is valid for `rows` rows of stride `ys` and `cols` columns (this fn's contract),
    // so y + r * ys is row r's start; the tile kernel runs only where AVX-512F was detected
    // just above, on the n rows `xs` of `inp` floats sliced from x and the caller's panel
    // of inp * 48 floats (`matmul_slice` slices it so), writing rows r..r+n of y.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                for (r, n) in row_tiles(rows) {
                    let xs = &x[r * inp..(r + n) * inp];
                    let yr = y.add(r * ys);
                    match n {
                        TILE_ROWS => avx512::tile::<TILE_ROWS>(xs, inp, panel, yr, ys, cols),
                        4 => avx512::tile::<4>(xs, inp, panel, yr, ys, cols),
                        2 => avx512::tile::<2>(xs, inp, panel, yr, ys, cols),
                        _ => avx512::tile::<1>(xs, inp, panel, yr, ys, cols),
                    }
                }
                return;
            }
        }
        for r in 0..rows {
            portable_row(&x[r * inp..(r + 1) * inp], panel, y.add(r * ys), cols);
        }
    }
}

/// One row against one panel; the compiler vectorises the 48 columns.
///
/// # Safety
/// `y` is valid for `cols` writes.
unsafe fn portable_row(x: &[f32], panel: &[f32], y: *mut f32, cols: usize) {
    // SAFETY: `y` is valid for `cols` writes (this fn's contract) and `acc` holds 48 >= cols
    // floats; a local array and an output buffer cannot overlap.
    unsafe {
        let mut acc = [0f32; PANEL];
        for (xk, w) in x.iter().zip(panel.chunks_exact(PANEL)) {
            for (a, wc) in acc.iter_mut().zip(w) {
                *a += xk * wc;
            }
        }
        std::ptr::copy_nonoverlapping(acc.as_ptr(), y, cols);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// `R` rows of x against one panel: R x 3 accumulators, one FMA chain over k per output.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `x` holds R rows of `inp`, `panel` inp * 48 floats, and `y` is
    /// valid for `cols` (<= 48) writes in each of R rows of stride `ys`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const R: usize>(
        x: &[f32],
        inp: usize,
        panel: &[f32],
        y: *mut f32,
        ys: usize,
        cols: usize,
    ) {
        // SAFETY: the caller guarantees AVX-512F, R rows of `inp` floats in `x`, inp * 48 floats in
        // `panel` and `cols` <= 48 writes in R rows of `y` (this fn's contract): panel row
        // k is read at k * 48 + 0, 16, 32 for k < inp, x at r * inp + k for r < R, and
        // `store_tile` gets the same y, ys and cols.
        unsafe {
            debug_assert!(x.len() >= R * inp && panel.len() >= inp * PANEL && cols <= PANEL);
            let (xp, wp) = (x.as_ptr(), panel.as_ptr());
            let mut acc = [[_mm512_setzero_ps(); 3]; R];
            for k in 0..inp {
                let w = wp.add(k * PANEL);
                let w0 = _mm512_loadu_ps(w);
                let w1 = _mm512_loadu_ps(w.add(16));
                let w2 = _mm512_loadu_ps(w.add(32));
                for (r, a) in acc.iter_mut().enumerate() {
                    let b = _mm512_set1_ps(*xp.add(r * inp + k));
                    a[0] = _mm512_fmadd_ps(b, w0, a[0]);
                    a[1] = _mm512_fmadd_ps(b, w1, a[1]);
                    a[2] = _mm512_fmadd_ps(b, w2, a[2]);
                }
            }
            crate::ops::tiles::avx512::store_tile(&acc, y, ys, cols);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::test_util::{assert_x_wt, max_abs_diff};

    fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104729) % 2003) as f32 / 2003.0) - 0.5)
            .collect()
    }

    #[test]
    fn equals_a_naive_product_for_ragged_shapes() {
        // Outputs that end mid-panel and mid-vector, rows that exercise every tile size.
        for &(rows, inp, out) in &[(1, 5, 3), (13, 37, 50), (8, 576, 192), (21, 64, 100)] {
            let (x, w) = (data(rows * inp, 1), data(out * inp, 2));
            let y = PackedMatrix::pack(&w, out, inp)
                .unwrap()
                .matmul_slice(&x, rows);
            assert_x_wt(&y, &x, &w, (rows, inp, out), 1e-5);
        }
    }

    #[test]
    fn an_adapter_on_bf16_panels_gives_the_training_ops_bits_row_by_row() {
        use candle_core::Device;
        let (rows, inp, out, r) = (19, 64, 96, 16);
        let dev = Device::Cpu;
        let t = |v: Vec<f32>, d: (usize, usize)| Tensor::from_vec(v, d, &dev).unwrap();
        let (w, x) = (data(out * inp, 5), data(rows * inp, 6));
        let (a, b) = (t(data(r * inp, 7), (r, inp)), t(data(out * r, 8), (out, r)));
        let packed = PackedMatrix::pack_in(&w, out, inp, Precision::Bf16).unwrap();
        let wt = t(w.clone(), (out, inp));
        let frozen = std::sync::Arc::new(crate::ops::FrozenBf16::pack(&wt).unwrap());
        let xt = t(x.clone(), (rows, inp));
        let train = crate::ops::lora_linear_packed(&xt, (&wt, &frozen), None, &a, &b, 2.0)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        // Decoding one row at a time, as a token step of a batch of one would.
        for (i, want) in train.iter().enumerate() {
            let row = t(x[i * inp..(i + 1) * inp].to_vec(), (1, inp));
            let got = packed.matmul_lora(&row, &a, &b, 2.0).unwrap().unwrap();
            assert_eq!(&got.to_vec2::<f32>().unwrap()[0], want, "row {i}");
        }
        let f32_panels = PackedMatrix::pack(&w, out, inp).unwrap();
        assert!(f32_panels.matmul_lora(&xt, &a, &b, 2.0).unwrap().is_none());
        let wrong = t(data(out * 8, 9), (out, 8));
        assert!(packed.matmul_lora(&xt, &a, &wrong, 2.0).is_err());
    }

    #[test]
    fn a_row_gets_the_same_bits_in_any_batch() {
        let (inp, out) = (96, 130);
        let w = PackedMatrix::pack(&data(out * inp, 3), out, inp).unwrap();
        let x = data(15 * inp, 4);
        let batch = w.matmul_slice(&x, 15);
        for r in [0, 7, 8, 14] {
            let alone = w.matmul_slice(&x[r * inp..(r + 1) * inp], 1);
            assert_eq!(alone, batch[r * out..(r + 1) * out], "row {r}");
        }
    }

    #[test]
    fn the_portable_kernel_agrees_with_the_dispatched_one() {
        let (inp, out) = (70, 60);
        let (x, w) = (data(inp, 7), data(out * inp, 8));
        let packed = PackedMatrix::pack(&w, out, inp).unwrap();
        let fast = packed.matmul_slice(&x, 1);
        let mut slow = vec![0f32; out];
        for p in 0..out.div_ceil(PANEL) {
            let cols = (out - p * PANEL).min(PANEL);
            let Panels::F32(data) = &packed.data else {
                panic!("f32 panels expected")
            };
            let panel = &data[p * inp * PANEL..(p + 1) * inp * PANEL];
            // SAFETY: `slow` has room for columns p*48..p*48+cols.
            unsafe { portable_row(&x, panel, slow.as_mut_ptr().add(p * PANEL), cols) };
        }
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-5, "{a} {b}");
        }
    }

    #[test]
    fn the_tensor_form_keeps_leading_dims_and_rejects_a_wrong_width() {
        let dev = candle_core::Device::Cpu;
        let w = Tensor::from_vec(data(6 * 4, 5), (6, 4), &dev).unwrap();
        let packed = PackedMatrix::from_tensor(&w).unwrap();
        let x = Tensor::from_vec(data(2 * 3 * 4, 6), (2, 3, 4), &dev).unwrap();
        let ours = packed.matmul(&x).unwrap();
        let want = x.broadcast_matmul(&w.t().unwrap()).unwrap();
        assert_eq!(ours.dims(), &[2, 3, 6]);
        let err = max_abs_diff(&ours, &want);
        assert!(err < 1e-6, "{err}");
        assert!(packed
            .matmul(&Tensor::zeros((2, 5), candle_core::DType::F32, &dev).unwrap())
            .is_err());
        assert!(PackedMatrix::pack(&[0.0; 5], 2, 3).is_err());
    }
}
