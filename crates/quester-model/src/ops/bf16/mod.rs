//! Matrix products with bf16 operands and f32 accumulation, for CPUs with AVX512-BF16.
//!
//! `vdpbf16ps` multiplies pairs of bf16 values and adds both products into one f32 lane: twice
//! the multiply-adds of an f32 FMA per instruction, on half the bytes. Operands are rounded to
//! bf16 (round to nearest even) when they are packed, accumulation stays f32, and everything
//! outside the products (norms, the softmax, the optimiser) stays f32, so this is the mixed
//! precision of `torch.autocast(dtype=bfloat16)` on the model's projections and attention's
//! products (the one-thread `BlockLeft` / `BlockRight` for the latter's blocks).
//!
//! The layout is the one of [`super::PackedMatrix`]: the right-hand matrix in panels of 48
//! output columns, k-major, here as pairs of consecutive k (one `u32` = two bf16) because that
//! is what one lane of `vdpbf16ps` consumes. Each output element is one chain of pair
//! products over k in order, so a row's result does not depend on the other rows of the batch.
//!
//! Where the CPU has AMX tiles and the OS grants them, the same panels are multiplied on the
//! tiles instead ([`amx`]): one `tdpbf16ps` does 16 x 16 x 32 multiply-adds. [`Bf16Kernel`]
//! says which of the three loops runs.
//!
//! Written here rather than taken from a library: no crate on the registries reaches these
//! instructions (gemm computes bf16 by widening to f32; oneDNN would be a C++ build and a
//! second copy of every operand's layout), and each kernel is a short tile loop over the one
//! packed layout.

pub mod amx;
mod block;
mod convert;
mod kernel;
mod panels;
pub mod peak;
mod pool;
mod rows;

pub(crate) use block::{BlockLeft, BlockRight};
#[cfg(test)]
pub(crate) use convert::round_to_bf16;
pub use panels::Bf16Panels;
pub use rows::{Bf16Rows, RowBlock};

/// True where the AVX512-BF16 kernel runs; elsewhere [`Bf16Panels`] computes the same values
/// with a portable loop (correct, several times slower than the f32 path).
pub fn has_bf16_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The loop that multiplies bf16 panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bf16Kernel {
    /// AMX tiles (`tdpbf16ps`): 16-row blocks, k in steps of 32.
    Amx,
    /// AVX512-BF16 register tiles (`vdpbf16ps`).
    Avx512Bf16,
    /// Plain f32 arithmetic on the same pairs (any CPU; the same values up to f32 rounding).
    Portable,
}

impl Bf16Kernel {
    /// Every kernel, fastest first.
    pub const ALL: [Bf16Kernel; 3] = [
        Bf16Kernel::Amx,
        Bf16Kernel::Avx512Bf16,
        Bf16Kernel::Portable,
    ];

    /// The name `QUESTER_BF16_KERNEL` takes.
    pub fn name(self) -> &'static str {
        match self {
            Bf16Kernel::Amx => "amx",
            Bf16Kernel::Avx512Bf16 => "avx512bf16",
            Bf16Kernel::Portable => "portable",
        }
    }

    /// Whether this CPU (and, for AMX, the OS) runs the kernel.
    pub fn available(self) -> bool {
        match self {
            Bf16Kernel::Amx => amx::ready(),
            Bf16Kernel::Avx512Bf16 => has_bf16_kernel(),
            Bf16Kernel::Portable => true,
        }
    }

    /// The fastest available kernel, or the one the environment variable
    /// `QUESTER_BF16_KERNEL` (`amx`, `avx512bf16`, `portable`) names, for benchmarks that
    /// compare them; a name that is unknown or not available here is logged and ignored.
    /// Decided once per process.
    pub fn best() -> Self {
        static BEST: std::sync::OnceLock<Bf16Kernel> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let fastest = *Self::ALL
                .iter()
                .find(|k| k.available())
                .unwrap_or(&Self::Portable);
            let Ok(asked) = std::env::var("QUESTER_BF16_KERNEL") else {
                return fastest;
            };
            match Self::ALL.iter().find(|k| k.name() == asked.trim()) {
                Some(&k) if k.available() => k,
                Some(k) => {
                    tracing::warn!(
                        "QUESTER_BF16_KERNEL={asked}: {} does not run on this CPU; using {}",
                        k.name(),
                        fastest.name()
                    );
                    fastest
                }
                None => {
                    tracing::warn!(
                        "QUESTER_BF16_KERNEL={asked} is not a kernel (amx, avx512bf16, \
                         portable); using {}",
                        fastest.name()
                    );
                    fastest
                }
            }
        })
    }

    /// Pairs stored per row for a shared dimension `k`: AMX steps k by 32, so its rows are
    /// padded with zero pairs to a multiple of 16.
    pub(crate) fn pair_stride(self, k: usize) -> usize {
        match self {
            Bf16Kernel::Amx => k.div_ceil(2 * amx::K_PAIRS) * amx::K_PAIRS,
            _ => k.div_ceil(2),
        }
    }

    /// Rows of A the kernel reads at a time (the rows of a converted A are padded to it).
    pub(crate) fn row_step(self) -> usize {
        match self {
            Bf16Kernel::Amx => amx::ROWS,
            _ => 1,
        }
    }
}

/// Whether the CPU has AMX tiles (Intel Sapphire Rapids and later); [`amx::ready`] says
/// whether this process may use them.
pub fn has_amx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // CPUID leaf 7: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE (the std macro for these is
        // not stable yet).
        let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
        edx & (1 << 22) != 0 && edx & (1 << 24) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
