//! quester's own CUDA kernels (`kernels.cu`, compiled to PTX by `build.rs`) and their loading.
//!
//! Each kernel is the GPU side of an op whose CPU side is in `ops` or `optim`; the op's
//! `cuda_fwd` calls [`func`] and launches. Set `QUESTER_CUDA_KERNELS=0` to run candle's portable
//! ops instead (the fallback when a kernel is suspect: `quester gpu-check` compares both).

use candle_core::cuda_backend::{CudaDevice, CudaFunc};
use candle_core::Result;

/// The PTX of `kernels.cu`.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/quester_kernels.ptx"));

/// The kernel `name` of `kernels.cu` on `dev` (the module is loaded once per device).
pub(crate) fn func(dev: &CudaDevice, name: &str) -> Result<CudaFunc> {
    dev.get_or_load_custom_func(name, "quester_kernels", PTX)
}

/// A grid of `threads`-wide blocks covering `n` elements with grid-stride loops.
pub(crate) fn elementwise_config(
    n: usize,
) -> candle_core::cuda_backend::cudarc::driver::LaunchConfig {
    const THREADS: u32 = 256;
    let blocks = n.div_ceil(THREADS as usize).clamp(1, 65_535) as u32;
    candle_core::cuda_backend::cudarc::driver::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
