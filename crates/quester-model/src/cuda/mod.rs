//! quester's own CUDA kernels (`kernels.cu`, compiled to PTX by `build.rs`) and their loading.
//!
//! Each kernel is the GPU side of an op whose CPU side is in `ops` or `optim`; the op's
//! `cuda_fwd` calls [`func`] and launches. Set `QUESTER_CUDA_KERNELS=0` to run candle's portable
//! ops instead (the fallback when a kernel is suspect: `quester gpu-check` compares both).

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaStream};
use candle_core::cuda_backend::CudaDevice;
use candle_core::Result;
use std::sync::Arc;

/// The PTX of `kernels.cu`.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/quester_kernels.ptx"));

/// The kernel `name` of `kernels.cu` on `dev` (the module is loaded once per device), with the
/// device's stream to launch it on.
pub(crate) fn func(dev: &CudaDevice, name: &str) -> Result<(CudaFunction, Arc<CudaStream>)> {
    let f = dev.get_or_load_custom_func(name, "quester_kernels", PTX)?;
    Ok((f.into_cuda_function(), dev.cuda_stream()))
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
