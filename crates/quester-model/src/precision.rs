//! The element type of the model's matrix products: f32, or bf16 operands with f32
//! accumulation where the CPU has the instructions for it.

use crate::ops::bf16::{has_amx, has_bf16_kernel, peak, Bf16Kernel};
use candle_core::Device;
use serde::{Deserialize, Serialize};

/// How a model's projections and output head multiply. Everything else (norms, attention,
/// softmax, log-probs, gradients' accumulation, weights and optimiser state) is f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// f32 operands (the reference path; finite-difference tests run here).
    #[default]
    F32,
    /// Operands rounded to bf16, products accumulated in f32 (AMX tiles or `vdpbf16ps`): the mixed
    /// precision of `torch.autocast(dtype=bfloat16)`. Log-probs move by about 1e-2.
    Bf16,
}

/// What a config asks for (`model.precision`): a precision, or `auto` to take bf16 where the CPU
/// multiplies faster in it (measured, see [`peak`]) and f32 elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrecisionChoice {
    /// Always f32.
    #[default]
    F32,
    /// bf16 products; on a CPU without AVX512-BF16 they are emulated (same values, slower).
    Bf16,
    /// bf16 where the CPU's bf16 kernel (AMX tiles, else `vdpbf16ps`) clearly outruns its f32
    /// FMAs (measured once per process: true on AMD Zen 4 and on Xeons with AMX granted, false
    /// on Intel Xeons without AMX), f32 elsewhere.
    Auto,
}

impl PrecisionChoice {
    /// The precision a model on `device` computes in, and a note when the choice was adjusted
    /// or will be slow (for the caller to log).
    pub fn resolve(self, device: &Device) -> (Precision, Option<String>) {
        if !device.is_cpu() {
            let note = (self == PrecisionChoice::Bf16).then(|| {
                "model.precision = \"bf16\" applies to the CPU kernels; on this device the \
                 model computes in f32"
                    .to_string()
            });
            return (Precision::F32, note);
        }
        match self {
            PrecisionChoice::F32 => (Precision::F32, None),
            PrecisionChoice::Bf16 if has_bf16_kernel() => (Precision::Bf16, None),
            PrecisionChoice::Bf16 => (
                Precision::Bf16,
                Some(
                    "this CPU has no AVX512-BF16: bf16 products are emulated (the same values as \
                     on a CPU with it, several times slower than f32)"
                        .into(),
                ),
            ),
            PrecisionChoice::Auto if peak::bf16_pays_off() => (Precision::Bf16, None),
            PrecisionChoice::Auto => (
                Precision::F32,
                peak::peaks().map(|p| {
                    let kernel = Bf16Kernel::best();
                    format!(
                        "model.precision = \"auto\": f32, because this CPU's bf16 kernel ({}, \
                         {:.0} GFLOP/s a thread on registers) does not beat its f32 FMA ({:.0}) \
                         by {}x",
                        kernel.name(),
                        p.of(kernel),
                        p.f32_fma,
                        peak::PAYS_OFF_RATIO
                    )
                }),
            ),
        }
    }
}

/// One line on the CPU's matrix units, for logs and benchmarks.
pub fn cpu_matrix_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let peaks = peak::peaks().map_or(String::new(), |p| {
            let amx = p
                .amx_tile
                .map_or(String::new(), |t| format!(" amx_tile={t:.0}"));
            format!(
                " peak_gflops_per_thread(f32_fma={:.0} bf16_dot={:.0}{amx})",
                p.f32_fma, p.bf16_dot
            )
        });
        format!(
            "avx512f={} avx512_bf16={} amx_bf16={} amx_granted={} bf16_kernel={}{peaks}",
            std::is_x86_feature_detected!("avx512f"),
            has_bf16_kernel(),
            has_amx(),
            crate::ops::bf16::amx::ready(),
            Bf16Kernel::best().name()
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        format!("avx512f=false avx512_bf16=false amx_bf16={}", has_amx())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_resolve_by_device_and_cpu() {
        let cpu = Device::Cpu;
        assert_eq!(PrecisionChoice::F32.resolve(&cpu), (Precision::F32, None));
        assert_eq!(PrecisionChoice::Bf16.resolve(&cpu).0, Precision::Bf16);
        let auto = PrecisionChoice::Auto.resolve(&cpu).0;
        assert_eq!(auto == Precision::Bf16, peak::bf16_pays_off());
        assert!(!peak::bf16_pays_off() || has_bf16_kernel());
        let parsed: PrecisionChoice = serde_json::from_str("\"auto\"").unwrap();
        assert_eq!(parsed, PrecisionChoice::Auto);
        assert!(serde_json::from_str::<PrecisionChoice>("\"fp16\"").is_err());
    }
}
