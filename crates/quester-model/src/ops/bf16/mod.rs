//! Matrix products with bf16 operands and f32 accumulation, for CPUs with AVX512-BF16.
//!
//! `vdpbf16ps` multiplies pairs of bf16 values and adds both products into one f32 lane: twice
//! the multiply-adds of an f32 FMA per instruction, on half the bytes. Operands are rounded to
//! bf16 (round to nearest even) when they are packed, accumulation stays f32, and everything
//! outside the products (norms, attention, softmax, the optimiser) stays f32, so this is the
//! mixed precision of `torch.autocast(dtype=bfloat16)` on the model's projections.
//!
//! The layout is the one of [`super::PackedMatrix`]: the right-hand matrix in panels of 48
//! output columns, k-major, here as pairs of consecutive k (one `u32` = two bf16) because that
//! is what one lane of `vdpbf16ps` consumes. Each output element is one chain of pair
//! products over k in order, so a row's result does not depend on the other rows of the batch.
//!
//! Written here rather than taken from a library: no crate on the registries reaches these
//! instructions (gemm computes bf16 by widening to f32), and the kernel is a register tile
//! like the f32 one beside it.

mod convert;
mod kernel;
mod panels;
pub mod peak;

#[cfg(test)]
pub(crate) use convert::round_to_bf16;
pub use panels::Bf16Panels;

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

/// Whether the CPU has AMX tiles (Intel Sapphire Rapids and later). Reported, not used: the
/// kernel here runs on AVX512-BF16, which every AMX CPU also has.
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
