//! The embeddings EMPO2 keys its memory with: one text at a time through a cache, and one
//! encoder with its cache per model for the whole process.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use super::memory::Embedder;
use crate::error::TrainError;

/// Most embeddings a cache keeps (a state seen again is not embedded again); past this the
/// cache starts over.
const EMBED_CACHE_CAP: usize = 50_000;

/// Embeds texts one at a time through a cache. One at a time, because a text's vector then
/// depends on the text alone (a batch pads it to its longest member, which changes the float
/// sums): a cached vector is bitwise the one a fresh call gives, so a resumed run with an empty
/// cache embeds exactly as the uninterrupted one did, and runs may share a cache. On a CPU,
/// batching buys nothing here (measured: 11.4 vs 11.7 prompts/s).
pub(crate) struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Mutex<HashMap<String, Vec<f32>>>,
}

impl CachedEmbedder {
    /// A cache of its own around `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Self {
            inner,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// How many texts the cache holds (the tests' view of it).
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }
}

impl Embedder for CachedEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, TrainError> {
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| TrainError::Policy("EMPO2's embedding cache was poisoned".into()))?;
        let mut out = Vec::with_capacity(texts.len());
        for &t in texts {
            if let Some(v) = cache.get(t) {
                out.push(v.clone());
                continue;
            }
            let mut v = self.inner.embed(&[t])?;
            let Some(v) = v.pop().filter(|_| v.is_empty()) else {
                return Err(TrainError::Policy(
                    "the embedder did not return one vector for one text".into(),
                ));
            };
            if cache.len() >= EMBED_CACHE_CAP {
                cache.clear();
            }
            cache.insert(t.to_string(), v.clone());
            out.push(v);
        }
        Ok(out)
    }
}

/// The encoder of `model` ("" = all-MiniLM-L6-v2 from its wheel, else a folder) with its cache,
/// loaded on first use and shared by every EMPO2 run of the process afterwards: an experiment's
/// seeds, or a test's, load the model once and embed each state once between them.
pub(crate) fn shared(model: &str) -> Result<Arc<CachedEmbedder>, TrainError> {
    static ENCODERS: OnceLock<Mutex<HashMap<String, Arc<CachedEmbedder>>>> = OnceLock::new();
    let mut encoders = ENCODERS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| TrainError::Policy("EMPO2's encoder registry was poisoned".into()))?;
    if let Some(e) = encoders.get(model) {
        return Ok(e.clone());
    }
    let encoder = if model.is_empty() {
        quester_embed::SentenceEncoder::load_default()?
    } else {
        quester_embed::SentenceEncoder::from_dir(Path::new(model))?
    };
    let e = Arc::new(CachedEmbedder::new(Arc::new(encoder)));
    encoders.insert(model.to_string(), e.clone());
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its calls; a text's vector is its length and its first byte.
    struct Counting(AtomicUsize);

    impl Embedder for Counting {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, TrainError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                .collect())
        }
    }

    #[test]
    fn each_distinct_text_is_embedded_once_in_order() {
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let cached = CachedEmbedder::new(inner.clone());
        let a = cached.embed(&["ab", "c", "ab"]).unwrap();
        assert_eq!(a, vec![vec![2.0, 97.0], vec![1.0, 99.0], vec![2.0, 97.0]]);
        let b = cached.embed(&["c", "xyz"]).unwrap();
        assert_eq!(b, vec![vec![1.0, 99.0], vec![3.0, 120.0]]);
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
        assert_eq!(cached.cached(), 3);
    }

    #[test]
    fn a_missing_model_folder_is_named() {
        let err = shared("/nonexistent/quester-embedder").err().unwrap();
        assert!(
            err.to_string().contains("/nonexistent/quester-embedder"),
            "{err}"
        );
    }
}
