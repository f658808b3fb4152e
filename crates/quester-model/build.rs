//! With the `cuda` feature, compiles `src/cuda/kernels.cu` to PTX with nvcc (found as candle's
//! kernels find it: `$NVCC`, `$CUDA_HOME/bin/nvcc`, then the PATH), for the compute capability
//! in `$CUDA_COMPUTE_CAP` (else the first GPU's, from nvidia-smi; else 8.0). The driver compiles
//! the PTX for the GPU it runs on, so a newer GPU than the target runs it too.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/cuda/kernels.cu");
    println!("cargo::rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo::rerun-if-env-changed=NVCC");
    println!("cargo::rerun-if-env-changed=CUDA_HOME");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let nvcc = std::env::var("NVCC")
        .map(PathBuf::from)
        .ok()
        .or_else(|| {
            std::env::var("CUDA_HOME")
                .ok()
                .map(|h| PathBuf::from(h).join("bin/nvcc"))
                .filter(|p| p.exists())
        })
        .unwrap_or_else(|| PathBuf::from("nvcc"));
    let cap = std::env::var("CUDA_COMPUTE_CAP")
        .ok()
        .or_else(|| {
            let out = Command::new("nvidia-smi")
                .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
                .output()
                .ok()?;
            let text = String::from_utf8(out.stdout).ok()?;
            Some(text.lines().next()?.trim().replace('.', ""))
        })
        .unwrap_or_else(|| "80".to_string());
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("quester_kernels.ptx");
    let status = Command::new(&nvcc)
        .args(["--ptx", "-O3", "-std=c++17", "-lineinfo"])
        .arg(format!("-arch=compute_{cap}"))
        .arg("src/cuda/kernels.cu")
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "feature `cuda`: cannot run {} ({e}); set NVCC or CUDA_HOME, or use \
                 scripts/build-cuda.sh, which installs the toolkit from PyPI",
                nvcc.display()
            )
        });
    assert!(status.success(), "nvcc failed on src/cuda/kernels.cu");
}
