//! Sentences per second of [`SentenceEncoder::encode`], for `bench/embeddings.sh`.
//!
//! `cargo run --release -p quester-embed --example bench_embed -- SENTENCES.json [BATCH] [REPEATS]`
//! reads a JSON list of strings, encodes it once untimed (warm-up), then `REPEATS` times timed,
//! and prints one JSON line: sentences, batch size, seconds per pass (the best and the mean),
//! sentences per second (from the mean) and the median latency of one short query alone.
//! Threads: `RAYON_NUM_THREADS`.

use quester_embed::SentenceEncoder;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: bench_embed SENTENCES.json [BATCH] [REPEATS]")?;
    let batch: usize = args.get(1).map_or(Ok(32), |s| s.parse())?;
    let repeats: usize = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let texts: Vec<String> = serde_json::from_slice(&std::fs::read(path)?)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let enc = SentenceEncoder::load_default()?.with_batch_size(batch);
    enc.encode(&refs)?;
    let mut times = Vec::new();
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let out = enc.encode(&refs)?;
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(out.len(), refs.len());
    }
    // One short query alone (a tip-memory lookup), median of 21.
    let mut single: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            enc.encode_one("Tip: heat the water on the stove before measuring it.")
                .map(|_| t.elapsed().as_secs_f64() * 1e3)
        })
        .collect::<Result<_, _>>()?;
    single.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "{{\"impl\":\"quester-embed\",\"sentences\":{},\"batch\":{batch},\"threads\":{},\"best_s\":{best:.4},\"mean_s\":{mean:.4},\"sentences_per_s\":{:.2},\"short_query_ms\":{:.2}}}",
        refs.len(),
        candle_core::utils::get_num_threads(),
        refs.len() as f64 / mean,
        single[single.len() / 2]
    );
    Ok(())
}
