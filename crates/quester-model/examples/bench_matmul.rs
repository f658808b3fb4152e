//! GFLOP/s of the products the model runs, on its shapes: candle's f32 matmul (gemm), the f32
//! packed kernel, and each bf16 kernel this CPU runs (AMX tiles, AVX512-BF16; weights packed
//! once, as in generation), then the best one packed per call, as in training. One run, side by
//! side; the ratios are the figures.
//!
//! Usage: bench_matmul [REPEATS=5]

use candle_core::{Device, Tensor};
use quester_model::ops::bf16::{Bf16Kernel, Bf16Panels};
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
    let (p32, p16, tiles) = peaks();
    println!(
        "instruction peak, every thread on registers only: f32 FMA {p32:.0} GFLOP/s, vdpbf16ps {p16:.0} GFLOP/s, AMX tdpbf16ps {tiles:.0} GFLOP/s"
    );
    let kernels: Vec<Bf16Kernel> = Bf16Kernel::ALL
        .into_iter()
        .filter(|k| k.available() && *k != Bf16Kernel::Portable)
        .collect();
    let names: Vec<String> = kernels
        .iter()
        .map(|k| format!("bf16 {} packed once", k.name()))
        .collect();
    println!(
        "m x k x n | gemm f32 | packed f32 | {} | bf16 {} packed per call (GFLOP/s)",
        names.join(" | "),
        Bf16Kernel::best().name()
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
        let mut once = Vec::new();
        for &kernel in &kernels {
            let pb = Bf16Panels::pack_for(kernel, &w, (n, k), (k, 1))?;
            let t = best(reps, || {
                let _ = pb.matmul(&x, m).expect("bf16");
            });
            once.push(format!("{:.0}", gflop / t));
        }
        let t_pc = best(reps, || {
            let p = Bf16Panels::pack_rows(&w, n, k).expect("pack");
            let _ = p.matmul(&x, m).expect("bf16");
        });
        println!(
            "{m} x {k} x {n} | {:.0} | {:.0} | {} | {:.0}",
            gflop / t_gemm,
            gflop / t_pf,
            once.join(" | "),
            gflop / t_pc
        );
    }
    Ok(())
}

/// GFLOP/s of f32 FMAs, of `vdpbf16ps` and of AMX tiles on registers alone, every thread at
/// once (no memory traffic): the ceilings no product can pass on this CPU.
fn peaks() -> (f64, f64, f64) {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    let per_thread: Vec<_> = (0..threads)
        .into_par_iter()
        .map(|_| quester_model::ops::bf16::peak::measure(2_000_000, 3))
        .collect();
    match per_thread.iter().copied().collect::<Option<Vec<_>>>() {
        Some(p) => (
            p.iter().map(|x| x.f32_fma).sum(),
            p.iter().map(|x| x.bf16_dot).sum(),
            p.iter().map(|x| x.amx_tile.unwrap_or(f64::NAN)).sum(),
        ),
        None => (f64::NAN, f64::NAN, f64::NAN),
    }
}
