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
    generate, generate_with, FinishReason, GenerationOutput, GenerationRequest, SamplingParams,
    Scaffold, TemperatureSwitch,
};
pub use score::{score, ScoreOutput};

pub mod checkpoint;
pub mod export;
pub mod optim;
pub mod train_step;
