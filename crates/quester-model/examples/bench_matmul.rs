//! GFLOP/s of the products the model runs, on its shapes: candle's f32 matmul (gemm), the f32
//! packed kernel, and the bf16 kernel (weights packed once, as in generation, and packed per
//! call, as in training). One run, side by side; the ratios are the figures.
//!
//! Usage: bench_matmul [REPEATS=5]

use candle_core::{Device, Tensor};
use quester_model::ops::bf16::Bf16Panels;
use quester_model::ops::PackedMatrix;
use std::time::Instant;

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

/// Best seconds of `reps` calls.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(5);
    println!(
        "threads {}; {}",
        rayon::current_num_threads(),
        quester_model::cpu_matrix_features()
    );
    let (p32, p16) = peaks();
    println!(
        "instruction peak, every thread on registers only: f32 FMA {p32:.0} GFLOP/s, vdpbf16ps {p16:.0} GFLOP/s"
    );
    println!(
        "m x k x n | gemm f32 | packed f32 | bf16 packed once | bf16 packed per call (GFLOP/s)"
    );
    let dev = Device::Cpu;
    for &(m, k, n) in &[
        (32, 576, 1536),
        (32, 1536, 576),
        (32, 576, 49152),
        (2048, 576, 1536),
        (2048, 1536, 576),
        (2048, 576, 576),
        (2048, 576, 49152),
    ] {
        let (x, w) = (data(m * k, 1), data(n * k, 2));
        let gflop = 2.0 * (m * k * n) as f64 / 1e9;
        let xt = Tensor::from_vec(x.clone(), (m, k), &dev)?;
        let wt = Tensor::from_vec(w.clone(), (n, k), &dev)?.t()?;
        let reps = if m * n > 1 << 24 {
            1.max(reps / 3)
        } else {
            reps
        };
        let t_gemm = best(reps, || {
            let _ = xt.matmul(&wt).expect("matmul");
        });
        let pf = PackedMatrix::pack(&w, n, k)?;
        let t_pf = best(reps, || {
            let _ = pf.matmul_slice(&x, m);
        });
        let pb = Bf16Panels::pack_rows(&w, n, k)?;
        let t_pb = best(reps, || {
            let _ = pb.matmul(&x, m).expect("bf16");
        });
        let t_pc = best(reps, || {
            let p = Bf16Panels::pack_rows(&w, n, k).expect("pack");
            let _ = p.matmul(&x, m).expect("bf16");
        });
        println!(
            "{m} x {k} x {n} | {:.0} | {:.0} | {:.0} | {:.0}",
            gflop / t_gemm,
            gflop / t_pf,
            gflop / t_pb,
            gflop / t_pc
        );
    }
    Ok(())
}

/// GFLOP/s of f32 FMAs and of `vdpbf16ps` on registers alone (24 independent chains per
/// thread, no memory traffic): the ceiling no product can pass on this CPU.
fn peaks() -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if quester_model::ops::bf16::has_bf16_kernel() {
            use rayon::prelude::*;
            let threads = rayon::current_num_threads();
            let iters = 20_000_000usize;
            let run = |bf16: bool| {
                let t = Instant::now();
                let sink: f32 = (0..threads)
                    .into_par_iter()
                    // SAFETY: the CPU has AVX-512F and AVX512-BF16 (checked above).
                    .map(|_| unsafe { peak::chains(iters, bf16) })
                    .sum();
                let secs = t.elapsed().as_secs_f64();
                std::hint::black_box(sink);
                // 24 vectors of 16 lanes per iteration; bf16 lanes do 2 multiply-adds each.
                let flops = (threads * iters * 24 * 16 * 2 * if bf16 { 2 } else { 1 }) as f64;
                flops / secs / 1e9
            };
            return (run(false), run(true));
        }
    }
    (f64::NAN, f64::NAN)
}

#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16.
    pub unsafe fn chains(iters: usize, bf16: bool) -> f32 {
        if bf16 {
            dp_chains(iters)
        } else {
            fma_chains(iters)
        }
        0.0
    }

    // 24 independent accumulator chains in registers (more than the instructions' latency
    // times their issue rate), written in assembly so that nothing but the instruction runs.

    #[target_feature(enable = "avx512f")]
    unsafe fn fma_chains(iters: usize) {
        let z = _mm512_setzero_ps();
        let b = _mm512_set1_ps(1e-7);
        std::arch::asm!(
            "2:",
            "vfmadd231ps {a0}, {b}, {b}",
            "vfmadd231ps {a1}, {b}, {b}",
            "vfmadd231ps {a2}, {b}, {b}",
            "vfmadd231ps {a3}, {b}, {b}",
            "vfmadd231ps {a4}, {b}, {b}",
            "vfmadd231ps {a5}, {b}, {b}",
            "vfmadd231ps {a6}, {b}, {b}",
            "vfmadd231ps {a7}, {b}, {b}",
            "vfmadd231ps {a8}, {b}, {b}",
            "vfmadd231ps {a9}, {b}, {b}",
            "vfmadd231ps {a10}, {b}, {b}",
            "vfmadd231ps {a11}, {b}, {b}",
            "vfmadd231ps {a12}, {b}, {b}",
            "vfmadd231ps {a13}, {b}, {b}",
            "vfmadd231ps {a14}, {b}, {b}",
            "vfmadd231ps {a15}, {b}, {b}",
            "vfmadd231ps {a16}, {b}, {b}",
            "vfmadd231ps {a17}, {b}, {b}",
            "vfmadd231ps {a18}, {b}, {b}",
            "vfmadd231ps {a19}, {b}, {b}",
            "vfmadd231ps {a20}, {b}, {b}",
            "vfmadd231ps {a21}, {b}, {b}",
            "vfmadd231ps {a22}, {b}, {b}",
            "vfmadd231ps {a23}, {b}, {b}",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) iters.max(1) => _,
            b = in(zmm_reg) b,
            a0 = inout(zmm_reg) z => _,
            a1 = inout(zmm_reg) z => _,
            a2 = inout(zmm_reg) z => _,
            a3 = inout(zmm_reg) z => _,
            a4 = inout(zmm_reg) z => _,
            a5 = inout(zmm_reg) z => _,
            a6 = inout(zmm_reg) z => _,
            a7 = inout(zmm_reg) z => _,
            a8 = inout(zmm_reg) z => _,
            a9 = inout(zmm_reg) z => _,
            a10 = inout(zmm_reg) z => _,
            a11 = inout(zmm_reg) z => _,
            a12 = inout(zmm_reg) z => _,
            a13 = inout(zmm_reg) z => _,
            a14 = inout(zmm_reg) z => _,
            a15 = inout(zmm_reg) z => _,
            a16 = inout(zmm_reg) z => _,
            a17 = inout(zmm_reg) z => _,
            a18 = inout(zmm_reg) z => _,
            a19 = inout(zmm_reg) z => _,
            a20 = inout(zmm_reg) z => _,
            a21 = inout(zmm_reg) z => _,
            a22 = inout(zmm_reg) z => _,
            a23 = inout(zmm_reg) z => _,
            options(nostack),
        );
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn dp_chains(iters: usize) {
        let z = _mm512_setzero_ps();
        let b = _mm512_set1_ps(1e-7);
        std::arch::asm!(
            "2:",
            "vdpbf16ps {a0}, {b}, {b}",
            "vdpbf16ps {a1}, {b}, {b}",
            "vdpbf16ps {a2}, {b}, {b}",
            "vdpbf16ps {a3}, {b}, {b}",
            "vdpbf16ps {a4}, {b}, {b}",
            "vdpbf16ps {a5}, {b}, {b}",
            "vdpbf16ps {a6}, {b}, {b}",
            "vdpbf16ps {a7}, {b}, {b}",
            "vdpbf16ps {a8}, {b}, {b}",
            "vdpbf16ps {a9}, {b}, {b}",
            "vdpbf16ps {a10}, {b}, {b}",
            "vdpbf16ps {a11}, {b}, {b}",
            "vdpbf16ps {a12}, {b}, {b}",
            "vdpbf16ps {a13}, {b}, {b}",
            "vdpbf16ps {a14}, {b}, {b}",
            "vdpbf16ps {a15}, {b}, {b}",
            "vdpbf16ps {a16}, {b}, {b}",
            "vdpbf16ps {a17}, {b}, {b}",
            "vdpbf16ps {a18}, {b}, {b}",
            "vdpbf16ps {a19}, {b}, {b}",
            "vdpbf16ps {a20}, {b}, {b}",
            "vdpbf16ps {a21}, {b}, {b}",
            "vdpbf16ps {a22}, {b}, {b}",
            "vdpbf16ps {a23}, {b}, {b}",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) iters.max(1) => _,
            b = in(zmm_reg) b,
            a0 = inout(zmm_reg) z => _,
            a1 = inout(zmm_reg) z => _,
            a2 = inout(zmm_reg) z => _,
            a3 = inout(zmm_reg) z => _,
            a4 = inout(zmm_reg) z => _,
            a5 = inout(zmm_reg) z => _,
            a6 = inout(zmm_reg) z => _,
            a7 = inout(zmm_reg) z => _,
            a8 = inout(zmm_reg) z => _,
            a9 = inout(zmm_reg) z => _,
            a10 = inout(zmm_reg) z => _,
            a11 = inout(zmm_reg) z => _,
            a12 = inout(zmm_reg) z => _,
            a13 = inout(zmm_reg) z => _,
            a14 = inout(zmm_reg) z => _,
            a15 = inout(zmm_reg) z => _,
            a16 = inout(zmm_reg) z => _,
            a17 = inout(zmm_reg) z => _,
            a18 = inout(zmm_reg) z => _,
            a19 = inout(zmm_reg) z => _,
            a20 = inout(zmm_reg) z => _,
            a21 = inout(zmm_reg) z => _,
            a22 = inout(zmm_reg) z => _,
            a23 = inout(zmm_reg) z => _,
            options(nostack),
        );
    }
}
