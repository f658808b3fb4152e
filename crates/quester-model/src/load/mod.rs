//! Loading a model with its tokenizer and chat template from a GGUF file or a Hugging Face
//! directory.

mod gguf;
mod hf;

pub use gguf::load_gguf;
pub use hf::load_hf_dir;

use crate::chat_template::ChatTemplate;
use crate::error::Result;
use crate::model::Model;
use crate::tokenizer::Tokenizer;
use std::path::Path;

/// Everything needed to generate and score with a model.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// The f32 model.
    pub model: Model,
    /// Its tokenizer.
    pub tokenizer: Tokenizer,
    /// Its chat template.
    pub chat_template: ChatTemplate,
}

/// Loads a GGUF file or a Hugging Face directory, whichever `path` is.
pub fn load(path: &Path) -> Result<LoadedModel> {
    if path.is_dir() {
        load_hf_dir(path)
    } else {
        load_gguf(path)
    }
}

/// Loads the embedded default model (SmolLM2-135M-Instruct), fetching it on first use.
pub fn load_default() -> Result<LoadedModel> {
    load_gguf(&crate::fetch::default_model_path()?)
}
