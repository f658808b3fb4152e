//! GFLOP/s of the products the model runs, on its shapes: candle's f32 matmul (gemm), the f32
//! packed kernel, and each bf16 kernel this CPU runs (AMX tiles, AVX512-BF16; weights packed
//! once, as in generation), then the best one packed per call, as in training; then a LoRA
//! adapter's rank-16 products, ours against gemm. One run, side by side; the ratios are the
//! figures.
//!
//! Usage: bench_matmul [REPEATS=5]

use candle_core::{Device, Tensor};
use quester_model::ops::bf16::{Bf16Kernel, Bf16Panels};
use quester_model::ops::PackedMatrix;
use std::time::Instant;

// The allocator of the `quester` binary: outputs reuse freed memory, as in a training step
// (the system allocator maps a large output afresh per call, and its page faults were most of
// a product's time).
#[global_allocator]
static GLOBAL: quester_model::alloc::Allocator = quester_model::alloc::Allocator;

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
    quester_model::alloc::keep_freed_memory();
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
        // The output head's input gradient in the GRPO-shaped step: k = the vocabulary.
        (512, 49152, 576),
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
    low_rank(reps)
}

/// A rank-16 LoRA adapter's seven f32 products per projection (forward and backward, as
/// `lora_linear` runs them) on the GRPO-shaped step's 704 rows: ours (`LowRank`) against the
/// same products through candle's matmul (gemm), which ran them before.
fn low_rank(reps: usize) -> Result<(), Box<dyn std::error::Error>> {
    use quester_model::ops::LowRank;
    let (rows, r, dev) = (704, 16, Device::Cpu);
    println!("LoRA r {r}, {rows} rows, 7 products | gemm (candle matmul) | ours | ours/gemm time");
    for &(inp, out) in &[(576, 576), (576, 192), (576, 1536), (1536, 576)] {
        let (x, g) = (data(rows * inp, 3), data(rows * out, 4));
        let (a, b) = (data(r * inp, 5), data(out * r, 6));
        let gflop = 2.0 * (rows * r * (4 * inp + 3 * out)) as f64 / 1e9;
        let t = |v: &[f32], s: (usize, usize)| Tensor::from_slice(v, s, &dev);
        let (xt, gt, at, bt) = (
            t(&x, (rows, inp))?,
            t(&g, (rows, out))?,
            t(&a, (r, inp))?,
            t(&b, (out, r))?,
        );
        let (a_t, b_t) = (at.t()?.contiguous()?, bt.t()?.contiguous()?);
        let (a_tv, b_tv) = (
            a_t.flatten_all()?.to_vec1::<f32>()?,
            b_t.flatten_all()?.to_vec1::<f32>()?,
        );
        let t_gemm = best(reps, || {
            let run = || -> candle_core::Result<()> {
                let u = xt.matmul(&a_t)?; // forward: x A^T, then (x A^T) B^T
                let _y = u.matmul(&b_t)?;
                let gb = gt.matmul(&bt)?; // backward: g B, x A^T again, (g B) A, (g B)^T x, g^T u
                let u = xt.matmul(&a_t)?;
                let _dx = gb.matmul(&at)?;
                let _da = gb.t()?.matmul(&xt)?;
                let _db = gt.t()?.matmul(&u)?;
                Ok(())
            };
            run().expect("matmul");
        });
        let mut y = vec![0f32; rows * out];
        let mut dx = vec![0f32; rows * inp];
        let t_ours = best(reps, || {
            let u = f32::x_m(&x, &a_tv, rows, inp, r);
            f32::acc_u_m(&mut y, &u, &b_tv, rows, r, 2.0);
            let gb = f32::x_m(&g, &b, rows, out, r);
            let u = f32::x_m(&x, &a_tv, rows, inp, r);
            f32::acc_u_m(&mut dx, &gb, &a, rows, r, 2.0);
            let _da = f32::xt_v(&x, &gb, rows, inp, r, 2.0);
            let _db = f32::xt_v(&g, &u, rows, out, r, 2.0);
        });
        println!(
            "{inp} -> {out} | {:.0} GFLOP/s | {:.0} GFLOP/s | {:.2}",
            gflop / t_gemm,
            gflop / t_ours,
            t_ours / t_gemm
        );
    }
    Ok(())
}

/// GFLOP/s of f32 FMAs, of `vdpbf16ps` and of AMX tiles on registers alone, every thread at
/// once (no memory traffic): the ceilings no product can pass on this CPU.
fn peaks() -> (f64, f64, f64) {
    match quester_model::ops::bf16::peak::measure_on_every_thread(2_000_000, 3) {
        Some(p) => (p.f32_fma, p.bf16_dot, p.amx_tile.unwrap_or(f64::NAN)),
        None => (f64::NAN, f64::NAN, f64::NAN),
    }
}
