//! The encoder against sentence-transformers' embeddings of the same model files
//! (`tests/fixtures/minilm_reference.json`, made by `scripts/make_embedding_fixture.py`), with the
//! model fetched as users get it ([`SentenceEncoder::load_default`]).

use quester_embed::{cosine, EmbedError, SentenceEncoder};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[derive(Deserialize)]
struct Fixture {
    max_seq_length: usize,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    tokens: usize,
    embedding: Vec<f32>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm_reference.json");
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    })
}

fn encoder() -> &'static SentenceEncoder {
    static E: OnceLock<SentenceEncoder> = OnceLock::new();
    E.get_or_init(|| SentenceEncoder::load_default().unwrap_or_else(|e| panic!("{}", chain(&e))))
}

/// The error and its sources, one per line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!("\n  caused by: {c}"));
        cur = c.source();
    }
    s
}

fn cosine_f64(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum();
    let na: f64 = a.iter().map(|&x| f64::from(x).powi(2)).sum();
    let nb: f64 = b.iter().map(|&x| f64::from(x).powi(2)).sum();
    dot / (na.sqrt() * nb.sqrt())
}

fn texts() -> Vec<&'static str> {
    fixture().items.iter().map(|i| i.text.as_str()).collect()
}

#[test]
fn matches_sentence_transformers() {
    let enc = encoder();
    let fx = fixture();
    assert_eq!(enc.dim(), 384);
    assert_eq!(enc.max_seq_length(), fx.max_seq_length);
    let got = enc.encode(&texts()).unwrap();
    assert_eq!(got.len(), fx.items.len());
    let mut worst = (f64::INFINITY, "");
    let mut worst_element = 0f32;
    for (item, v) in fx.items.iter().zip(&got) {
        assert_eq!(v.len(), 384);
        assert_eq!(
            enc.token_count(&item.text).unwrap(),
            item.tokens,
            "token count of {:?}",
            item.text
        );
        // In f64, so that the report resolves differences below f32's epsilon.
        let c = cosine_f64(v, &item.embedding);
        assert!((f64::from(cosine(v, &item.embedding)) - c).abs() < 1e-6);
        for (x, y) in v.iter().zip(&item.embedding) {
            worst_element = worst_element.max((x - y).abs());
        }
        if c < worst.0 {
            worst = (c, &item.text);
        }
    }
    let short: String = worst.1.chars().take(60).collect();
    println!(
        "worst cosine with sentence-transformers: {:.12} (1 - {:.2e}) on {short:?}; largest \
         element difference {worst_element:.2e}",
        worst.0,
        1.0 - worst.0
    );
    assert!(
        worst.0 >= 1.0 - 1e-4,
        "worst cosine {} on {short:?}",
        worst.0
    );
}

#[test]
fn embeddings_have_unit_norm() {
    for v in encoder().encode(&texts()).unwrap() {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn a_batch_equals_each_text_alone_and_keeps_input_order() {
    let enc = encoder();
    let all = texts();
    let batch = enc.encode(&all).unwrap();
    let mut worst = 0f32;
    for (text, b) in all.iter().zip(&batch) {
        let alone = enc.encode_one(text).unwrap();
        for (x, y) in alone.iter().zip(b) {
            worst = worst.max((x - y).abs());
        }
    }
    println!("largest |batch - alone| element difference: {worst:.2e}");
    assert!(worst <= 1e-5, "{worst}");

    // Reversed input, small batches: the same vectors, reversed.
    let small = SentenceEncoder::from_dir(&quester_embed::default_model_dir().unwrap())
        .unwrap()
        .with_batch_size(5);
    let rev: Vec<&str> = all.iter().rev().copied().collect();
    let got = small.encode(&rev).unwrap();
    for (g, b) in got.iter().zip(batch.iter().rev()) {
        let d = g
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(d <= 1e-5, "{d}");
    }
    // Distinct texts give distinct vectors in their own places.
    assert!(cosine(&batch[0], &batch[1]) < 0.999);
    assert!(enc.encode(&[]).unwrap().is_empty());
}

#[test]
fn similar_sentences_are_closer() {
    let v = encoder()
        .encode(&[
            "The quick brown fox jumps over the lazy dog.",
            "A fast auburn fox leaps above a sleepy hound.",
            "Buy a pair of red running shoes under $50, size 10.",
        ])
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2);
}

#[test]
fn usable_from_several_threads() {
    let enc = encoder();
    let all = texts();
    let expected = enc.encode(&all[..6]).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| s.spawn(|| enc.encode(&all[..6]).unwrap()))
            .collect();
        for h in handles {
            for (a, b) in h.join().unwrap().iter().zip(&expected) {
                assert!(cosine(a, b) > 1.0 - 1e-6);
            }
        }
    });
}

/// A copy of the model directory in a scratch folder (the weights linked, not copied).
fn model_copy(name: &str) -> PathBuf {
    let src = quester_embed::default_model_dir().unwrap();
    let dir = std::env::temp_dir().join(format!("quester-embed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(src.join("model.safetensors"), dir.join("model.safetensors"))
        .unwrap();
    #[cfg(not(unix))]
    std::fs::copy(src.join("model.safetensors"), dir.join("model.safetensors")).unwrap();
    dir
}

fn load_err(dir: &Path) -> EmbedError {
    SentenceEncoder::from_dir(dir).expect_err("a broken model directory loaded")
}

#[test]
fn broken_model_directories_name_the_file() {
    // Nothing there at all.
    let missing = std::env::temp_dir().join("quester-embed-no-such-dir");
    let e = load_err(&missing);
    assert!(matches!(e, EmbedError::Io { .. }), "{}", chain(&e));
    assert!(e.to_string().contains("no-such-dir/config.json"), "{e}");
    assert!(std::error::Error::source(&e).is_some());

    // The copy loads.
    let dir = model_copy("broken");
    SentenceEncoder::from_dir(&dir).unwrap();

    // Truncated weights.
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::remove_file(&weights).unwrap();
    std::fs::write(&weights, &bytes[..4096]).unwrap();
    let e = load_err(&dir);
    assert!(matches!(e, EmbedError::Weights { .. }), "{}", chain(&e));
    assert!(
        e.to_string().contains(&weights.display().to_string()),
        "{e}"
    );
    // Garbage weights.
    std::fs::write(&weights, b"definitely not safetensors").unwrap();
    let e = load_err(&dir);
    assert!(e.to_string().contains("model.safetensors"), "{}", chain(&e));
    // Missing weights.
    std::fs::remove_file(&weights).unwrap();
    let e = load_err(&dir);
    assert!(matches!(e, EmbedError::Io { .. }), "{}", chain(&e));
    assert!(e.to_string().contains("model.safetensors"), "{e}");

    // Corrupt config.json.
    std::fs::write(dir.join("config.json"), b"{\"hidden_size\": ").unwrap();
    let e = load_err(&dir);
    assert!(matches!(e, EmbedError::Json { .. }), "{}", chain(&e));
    assert!(e.to_string().contains("config.json"), "{e}");

    // Corrupt or missing tokenizer.json (config restored).
    let src = quester_embed::default_model_dir().unwrap();
    std::fs::copy(src.join("config.json"), dir.join("config.json")).unwrap();
    std::fs::write(dir.join("tokenizer.json"), b"[1, 2, 3]").unwrap();
    let e = load_err(&dir);
    assert!(matches!(e, EmbedError::Tokenizer { .. }), "{}", chain(&e));
    assert!(e.to_string().contains("tokenizer.json"), "{e}");
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let e = load_err(&dir);
    assert!(e.to_string().contains("tokenizer.json"), "{e}");

    // An unsupported pooling config.
    std::fs::copy(src.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        br#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#,
    )
    .unwrap();
    let e = load_err(&dir);
    assert!(matches!(e, EmbedError::Unsupported { .. }), "{}", chain(&e));
    assert!(e.to_string().contains("1_Pooling/config.json"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
