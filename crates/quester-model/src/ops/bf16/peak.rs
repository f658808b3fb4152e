//! The instruction ceilings of this CPU's multiply paths, measured: f32 FMAs and `vdpbf16ps`,
//! each in 24 independent register chains with no memory traffic, and AMX's `tdpbf16ps` in
//! four tile chains where the tiles are granted.
//!
//! Having AVX512-BF16 does not make bf16 faster. On AMD Zen 4 `vdpbf16ps` runs at twice the
//! multiply-adds of an f32 FMA (452 against 226 GFLOP/s on two threads); on Intel Xeons
//! without AMX (Sapphire and Emerald Rapids under a hypervisor that hides the tiles) it issues
//! on one port where FMAs issue on two, and is slower than f32 (155 against 252). The flag
//! cannot tell the two apart, a millisecond of measurement can: `model.precision = "auto"`
//! asks [`bf16_pays_off`], which compares the kernel that would run ([`super::Bf16Kernel::best`])
//! with f32. AMX tiles run about 12x f32 FMAs on registers (2,100 against 179 GFLOP/s a
//! thread) and 2x to 3x in the product, where tile loads bound it.

use std::sync::OnceLock;
use std::time::Instant;

/// GFLOP/s of one thread on registers alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InstructionPeaks {
    /// f32 `vfmadd231ps` (2 flops per lane).
    pub f32_fma: f64,
    /// `vdpbf16ps` (4 flops per f32 lane: two bf16 products added in).
    pub bf16_dot: f64,
    /// AMX `tdpbf16ps` (16 x 16 x 32 multiply-adds), where the tiles are granted.
    pub amx_tile: Option<f64>,
}

/// bf16 must beat f32 by this much on registers before `auto` takes it: packing operands to
/// bf16 costs a pass over them, which only a clearly faster instruction repays.
pub const PAYS_OFF_RATIO: f64 = 1.25;

/// The peaks of the calling thread, best of `reps` runs of `iters` iterations each (24
/// instructions per iteration); None without AVX-512F and AVX512-BF16.
pub fn measure(iters: usize, reps: usize) -> Option<InstructionPeaks> {
    if !super::has_bf16_kernel() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let best = |bf16: bool| {
            let secs = (0..reps.max(1))
                .map(|_| {
                    let t = Instant::now();
                    // SAFETY: has_bf16_kernel() checked AVX-512F and AVX512-BF16.
                    unsafe { chains::run(iters, bf16) };
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            // 24 vectors of 16 lanes per iteration, 2 or 4 flops per lane.
            let flops = (iters.max(1) * 24 * 16 * if bf16 { 4 } else { 2 }) as f64;
            flops / secs.max(1e-9) / 1e9
        };
        Some(InstructionPeaks {
            f32_fma: best(false),
            bf16_dot: best(true),
            amx_tile: super::amx::peak(iters / 4, reps),
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (iters, reps, Instant::now());
        None
    }
}

/// The peaks of every thread of rayon's pool running at once, summed: the machine's limit for
/// the benchmarks' ratios (`iters` and `reps` as in [`measure`]; no AMX figure where the tiles
/// are not granted). None without AVX-512F and AVX512-BF16.
pub fn measure_on_every_thread(iters: usize, reps: usize) -> Option<InstructionPeaks> {
    use rayon::prelude::*;
    let per_thread: Vec<_> = (0..rayon::current_num_threads())
        .into_par_iter()
        .map(|_| measure(iters, reps))
        .collect::<Option<_>>()?;
    let sum = |f: fn(&InstructionPeaks) -> f64| per_thread.iter().map(f).sum::<f64>();
    Some(InstructionPeaks {
        f32_fma: sum(|p| p.f32_fma),
        bf16_dot: sum(|p| p.bf16_dot),
        amx_tile: Some(sum(|p| p.amx_tile.unwrap_or(f64::NAN))).filter(|t| t.is_finite()),
    })
}

/// This CPU's peaks, measured once per process (about a millisecond).
pub fn peaks() -> Option<InstructionPeaks> {
    static PEAKS: OnceLock<Option<InstructionPeaks>> = OnceLock::new();
    *PEAKS.get_or_init(|| measure(20_000, 5))
}

impl InstructionPeaks {
    /// The peak of the instruction `kernel` runs on (0 for the portable loop).
    pub fn of(&self, kernel: super::Bf16Kernel) -> f64 {
        match kernel {
            super::Bf16Kernel::Amx => self.amx_tile.unwrap_or(0.0),
            super::Bf16Kernel::Avx512Bf16 => self.bf16_dot,
            super::Bf16Kernel::Portable => 0.0,
        }
    }
}

/// Whether bf16 products run faster than f32 on this CPU: the kernel they would run on
/// ([`super::Bf16Kernel::best`]) beats f32 FMAs by [`PAYS_OFF_RATIO`] on registers.
pub fn bf16_pays_off() -> bool {
    peaks().is_some_and(|p| p.of(super::Bf16Kernel::best()) >= PAYS_OFF_RATIO * p.f32_fma)
}

#[cfg(target_arch = "x86_64")]
mod chains {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16.
    pub unsafe fn run(iters: usize, bf16: bool) {
        // SAFETY: the CPU has AVX-512F and AVX512-BF16 (this fn's contract), the features of
        // both chains.
        unsafe {
            if bf16 {
                dp_chains(iters);
            } else {
                fma_chains(iters);
            }
        }
    }

    // 24 independent accumulator chains in registers (more than the instructions' latency
    // times their issue rate), written in assembly so that nothing but the instruction runs.
    macro_rules! chains {
        ($name:ident, $ins:literal, $features:literal) => {
            #[target_feature(enable = $features)]
            unsafe fn $name(iters: usize) {
                let z = _mm512_setzero_ps();
                let b = _mm512_set1_ps(1e-7);
                // SAFETY: the CPU has this fn's target features (`run`'s contract, which the
                // caller checked); the loop touches only zmm registers and a counter, no
                // memory, and runs at least once (iters.max(1)).
                unsafe { std::arch::asm!(
                "2:",
                concat!($ins, " {a0}, {b}, {b}"),
                concat!($ins, " {a1}, {b}, {b}"),
                concat!($ins, " {a2}, {b}, {b}"),
                concat!($ins, " {a3}, {b}, {b}"),
                concat!($ins, " {a4}, {b}, {b}"),
                concat!($ins, " {a5}, {b}, {b}"),
                concat!($ins, " {a6}, {b}, {b}"),
                concat!($ins, " {a7}, {b}, {b}"),
                concat!($ins, " {a8}, {b}, {b}"),
                concat!($ins, " {a9}, {b}, {b}"),
                concat!($ins, " {a10}, {b}, {b}"),
                concat!($ins, " {a11}, {b}, {b}"),
                concat!($ins, " {a12}, {b}, {b}"),
                concat!($ins, " {a13}, {b}, {b}"),
                concat!($ins, " {a14}, {b}, {b}"),
                concat!($ins, " {a15}, {b}, {b}"),
                concat!($ins, " {a16}, {b}, {b}"),
                concat!($ins, " {a17}, {b}, {b}"),
                concat!($ins, " {a18}, {b}, {b}"),
                concat!($ins, " {a19}, {b}, {b}"),
                concat!($ins, " {a20}, {b}, {b}"),
                concat!($ins, " {a21}, {b}, {b}"),
                concat!($ins, " {a22}, {b}, {b}"),
                concat!($ins, " {a23}, {b}, {b}"),
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
                ) };
            }
        };
    }

    chains!(fma_chains, "vfmadd231ps", "avx512f");
    chains!(dp_chains, "vdpbf16ps", "avx512f,avx512bf16");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_measured_where_the_instruction_exists() {
        match measure(2_000, 2) {
            None => assert!(!crate::ops::bf16::has_bf16_kernel()),
            Some(p) => {
                // Any CPU with AVX-512 does more than a GFLOP/s per thread, and less than a
                // few hundred on registers.
                for v in [p.f32_fma, p.bf16_dot] {
                    assert!(v > 1.0 && v < 2_000.0, "{p:?}");
                }
                // Tiles: where granted, tens of times an FMA's flops at most.
                assert_eq!(p.amx_tile.is_some(), crate::ops::bf16::amx::ready());
                if let Some(t) = p.amx_tile {
                    assert!(t > 1.0 && t < 50_000.0, "{p:?}");
                }
            }
        }
        let best = crate::ops::bf16::Bf16Kernel::best();
        assert_eq!(
            bf16_pays_off(),
            peaks().is_some_and(|p| p.of(best) >= PAYS_OFF_RATIO * p.f32_fma)
        );
    }
}
