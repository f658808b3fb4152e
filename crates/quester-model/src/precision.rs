//! The element type of the model's matrix products: f32, or bf16 operands with f32
//! accumulation where the CPU has the instructions for it.

use crate::ops::bf16::{has_amx, has_bf16_kernel};
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
    /// Operands rounded to bf16, products accumulated in f32 (`vdpbf16ps`): the mixed
    /// precision of `torch.autocast(dtype=bfloat16)`. Log-probs move by about 1e-2.
    Bf16,
}

/// What a config asks for (`model.precision`): a precision, or `auto` to take bf16 where the CPU
/// has AVX512-BF16 and f32 elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrecisionChoice {
    /// Always f32.
    #[default]
    F32,
    /// bf16 products; on a CPU without AVX512-BF16 they are emulated (same values, slower).
    Bf16,
    /// bf16 where the CPU has AVX512-BF16, f32 elsewhere.
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
            PrecisionChoice::Auto if has_bf16_kernel() => (Precision::Bf16, None),
            PrecisionChoice::Auto => (Precision::F32, None),
        }
    }
}

/// One line on the CPU's matrix units, for logs and benchmarks.
pub fn cpu_matrix_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        format!(
            "avx512f={} avx512_bf16={} amx_bf16={}",
            std::is_x86_feature_detected!("avx512f"),
            has_bf16_kernel(),
            has_amx()
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
        assert_eq!(auto == Precision::Bf16, has_bf16_kernel());
        let parsed: PrecisionChoice = serde_json::from_str("\"auto\"").unwrap();
        assert_eq!(parsed, PrecisionChoice::Auto);
        assert!(serde_json::from_str::<PrecisionChoice>("\"fp16\"").is_err());
    }
}
