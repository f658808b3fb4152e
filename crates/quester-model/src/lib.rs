//! The model engine: one implementation of Llama-family models in candle that serves rollouts
//! (batched generation), scoring (log-probabilities) and training (correct gradients).

pub mod alloc;
pub mod config;
pub mod device;
pub mod error;
pub mod fetch;
pub mod gradcheck;
pub mod model;
pub mod nn;
pub mod ops;
pub mod precision;
pub mod threads;

pub use config::{Architecture, ModelConfig};
pub use device::parse_device;
pub use error::{ModelError, Result};
pub use fetch::{default_model_path, quester_home};
pub use model::{DecodeWeights, KvCache, Model};
pub use nn::{Linear, LoraConfig};
pub use precision::{cpu_matrix_features, Precision, PrecisionChoice};
pub mod chat_template;
pub mod load;
pub mod tokenizer;

pub use chat_template::{ChatMessage, ChatTemplate};
pub use load::{load, load_default, load_gguf, load_hf_dir, LoadedModel};
pub use tokenizer::Tokenizer;
pub mod generate;
pub mod score;

pub use generate::{
    generate, generate_continuous, generate_continuous_with_progress, generate_with,
    scheduler::SchedulerConfig, FinishReason, GenerationOutput, GenerationRequest, Orders,
    Progress, SamplingParams, Scaffold, StepReport, TemperatureSwitch,
};
pub use score::{score, ScoreOutput};

pub mod checkpoint;
pub mod export;
pub mod micro_batch;
pub mod optim;
pub mod train_step;

#[cfg(feature = "cuda")]
mod cuda;

/// Whether quester's own CUDA kernels run on a GPU: yes unless `QUESTER_CUDA_KERNELS=0` or
/// [`set_cuda_kernels`] turned them off, in which case candle's portable ops run instead.
pub fn cuda_kernels_enabled() -> bool {
    use std::sync::atomic::Ordering;
    match CUDA_KERNELS.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var("QUESTER_CUDA_KERNELS").map_or(true, |v| v != "0");
            set_cuda_kernels(on);
            on
        }
        state => state == 1,
    }
}

/// Turns quester's own CUDA kernels on or off for the whole process (`quester gpu-check` runs
/// both ways to compare them).
pub fn set_cuda_kernels(on: bool) {
    CUDA_KERNELS.store(if on { 1 } else { 2 }, std::sync::atomic::Ordering::Relaxed);
}

/// 0: not read from the environment yet; 1: on; 2: off.
static CUDA_KERNELS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
pub mod device_check;
