//! Batched decoding throughput of the default model: N chat prompts x M new tokens, greedy,
//! EOS ignored so every sequence produces exactly M tokens. Run through bench/decode.sh.
//!
//! Usage: bench_decode [N=32] [M=128] [R=1] [--precision f32|bf16|auto] [--lora]
//! [--sample T,TOP_P,TOP_K] [--decode-only] (R repeats the request sentence, for long prompts: `bench_decode 8 1
//! 40` times the prefill of 8 prompts of about 500 tokens; `--lora` decodes with the default
//! LoRA adapter attached, as a LoRA run's rollouts do; `--sample 0.7,0.8,20` samples as the CPU
//! presets' rollouts do, seeded per sequence, instead of greedy decoding). After the run it
//! times the same products alone (one token step's matrices at N rows, random weights packed
//! alike) and prints the decoding's products rate as a share of theirs: the limit of this shape
//! here, which the weights' bytes set (`--decode-only` skips it, for profiles); then the
//! memory-bandwidth limit: the read bandwidth measured now over the bytes a token step reads
//! (weights once, each row's keys and values), times the rows. It runs on a rayon worker, as the `quester` binary does
//! (`threads::on_rayon_worker`); `QUESTER_MAIN_OFF_POOL=1` runs it on the main thread instead.

// The allocator of the `quester` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: quester_model::alloc::Allocator = quester_model::alloc::Allocator;

use quester_model::generate::{generate, GenerationRequest, SamplingParams};
use quester_model::{cpu_matrix_features, load_default, ChatMessage, PrecisionChoice};
use std::time::Instant;

mod common;

const TOPICS: [&str; 8] = [
    "the sea",
    "a robot",
    "winter",
    "a lost key",
    "the moon",
    "a library",
    "rain",
    "a chess game",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    quester_model::alloc::keep_freed_memory();
    quester_model::threads::share_cores_with_candle();
    if std::env::var_os("QUESTER_MAIN_OFF_POOL").is_some() {
        return run().map_err(|e| e.to_string().into());
    }
    quester_model::threads::on_rayon_worker(run).map_err(|e| e.to_string().into())
}

fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut choice = PrecisionChoice::F32;
    let mut lora = false;
    let mut decode_only = false;
    let mut sampling: Option<(f64, f64, usize)> = None;
    let mut args: Vec<usize> = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--precision" {
            let v = it.next().ok_or("--precision needs f32, bf16 or auto")?;
            choice = serde_json::from_value(serde_json::Value::String(v.clone()))
                .map_err(|_| format!("--precision {v}: allowed f32, bf16, auto"))?;
        } else if a == "--lora" {
            lora = true;
        } else if a == "--decode-only" {
            decode_only = true;
        } else if a == "--sample" {
            let bad = "--sample needs T,TOP_P,TOP_K (e.g. 0.7,0.8,20)";
            let v: Vec<&str> = it.next().ok_or(bad)?.split(',').collect();
            let [t, p, k] = v[..] else {
                return Err(bad.into());
            };
            sampling = Some((
                t.parse().map_err(|_| bad)?,
                p.parse().map_err(|_| bad)?,
                k.parse().map_err(|_| bad)?,
            ));
        } else {
            args.push(a.parse().map_err(|_| format!("not a number: {a}"))?);
        }
    }
    let n = args.first().copied().unwrap_or(32);
    let m = args.get(1).copied().unwrap_or(128);
    let r = args.get(2).copied().unwrap_or(1).max(1);
    let t0 = Instant::now();
    let mut lm = load_default()?;
    let (precision, note) = choice.resolve(lm.model.device());
    lm.model.set_precision(precision);
    if lora {
        lm.model
            .attach_lora(&quester_model::LoraConfig::default())?;
    }
    if let Some(n) = note {
        eprintln!("{n}");
    }
    eprintln!(
        "loaded in {:.1}s; precision {precision:?}{}; {}",
        t0.elapsed().as_secs_f64(),
        if lora { " with a LoRA adapter" } else { "" },
        cpu_matrix_features()
    );
    let requests: Vec<GenerationRequest> = (0..n)
        .map(|i| {
            let prompt = lm.chat_template.render(
                &[ChatMessage::new(
                    "user",
                    format!(
                        "Write a short story number {i} about {}.",
                        TOPICS[i % TOPICS.len()]
                    )
                    .repeat(r),
                )],
                true,
            )?;
            Ok(GenerationRequest {
                prompt_ids: lm.tokenizer.encode(&prompt)?,
                params: match sampling {
                    None => SamplingParams {
                        ignore_eos: true,
                        ..SamplingParams::greedy(m)
                    },
                    Some((temperature, top_p, top_k)) => SamplingParams {
                        temperature,
                        top_p,
                        top_k,
                        seed: i as u64,
                        ignore_eos: true,
                        ..SamplingParams::greedy(m)
                    },
                },
            })
        })
        .collect::<Result<_, quester_model::ModelError>>()?;
    let prompt_tokens: usize = requests.iter().map(|r| r.prompt_ids.len()).sum();
    let t = Instant::now();
    let out = generate(&lm.model, &lm.tokenizer, &requests)?;
    let secs = t.elapsed().as_secs_f64();
    let new_tokens: usize = out.iter().map(|o| o.token_ids.len()).sum();
    println!(
        "quester ({precision:?}): {n} sequences x {m} tokens ({prompt_tokens} prompt tokens): {new_tokens} new tokens in {secs:.2}s = {:.1} tok/s",
        new_tokens as f64 / secs
    );
    // The bar for batched decoding: the products' rate as a share of the matrix
    // instruction's limit, measured here in the same run (every thread on registers).
    let c = &lm.model.config;
    let per_layer = c.hidden_size
        * (2 * c.num_attention_heads * c.head_dim
            + 2 * c.num_key_value_heads * c.head_dim
            + 3 * c.intermediate_size);
    let gflop_per_token =
        2.0 * (c.num_hidden_layers * per_layer + c.vocab_size * c.hidden_size) as f64 / 1e9;
    let gflops = gflop_per_token * new_tokens as f64 / secs;
    match quester_model::ops::bf16::peak::measure_on_every_thread(2_000_000, 3) {
        Some(p) => {
            let kernel = quester_model::ops::bf16::Bf16Kernel::best();
            let (name, limit) = match precision {
                quester_model::Precision::Bf16 => (kernel.name(), p.of(kernel)),
                quester_model::Precision::F32 => ("f32 FMA", p.f32_fma),
            };
            println!(
                "products: {gflop_per_token:.3} GFLOP a token, {gflops:.0} GFLOP/s = {:.0}% of the {name} limit measured now ({limit:.0} GFLOP/s on {} threads; f32 FMA {:.0}, bf16 {:.0})",
                100.0 * gflops / limit,
                rayon::current_num_threads(),
                p.f32_fma,
                p.of(kernel),
            );
        }
        None => println!("products: {gflops:.0} GFLOP/s (no AVX-512 peak to compare with)"),
    }
    // The same products alone: one token step's matrices at this batch's rows, weights read
    // from memory as decoding reads them. Its rate is the limit of this shape on this machine
    // (bound by the weights' bytes, not the instruction), the decoding's products rate beside it.
    // Without the model beside them (they reuse its freed memory), so the peak RSS that
    // bench/decode.sh reports stays the decoding's.
    eprintln!(
        "sample: {:?}",
        out[0].text.chars().take(120).collect::<String>()
    );
    if decode_only {
        return Ok(());
    }
    let config = c.clone();
    drop((lm, out));
    let step = products_alone(&config, n, precision)?;
    println!(
        "products alone, {n} rows a step: {:.2} ms a step = {:.0} GFLOP/s ({:.1} GB/s of weights); decoding's products at {:.0}% of it",
        step.secs * 1e3,
        step.gflops,
        step.weight_bytes as f64 / step.secs / 1e9,
        100.0 * gflops / step.gflops
    );
    // The memory-bandwidth limit: a token step reads every weight once (shared by the rows)
    // and each row's keys and values (f32) up to its position; at the read bandwidth
    // measured now, that many bytes a step allow at most rows x bandwidth / bytes tokens/s.
    let bandwidth = read_bandwidth();
    let kv_per_position =
        config.num_hidden_layers * 2 * config.num_key_value_heads * config.head_dim * 4;
    let mean_context = prompt_tokens as f64 / n as f64 + m as f64 / 2.0;
    let step_bytes = step.weight_bytes as f64 + n as f64 * mean_context * kv_per_position as f64;
    let limit = n as f64 * bandwidth / step_bytes;
    println!(
        "bandwidth limit: {:.1} MB read a step ({:.1} MB of weights, {n} rows x {mean_context:.0} positions of keys and values) at {:.1} GB/s read now = {limit:.0} tok/s; decoding at {:.0}% of it",
        step_bytes / 1e6,
        step.weight_bytes as f64 / 1e6,
        bandwidth / 1e9,
        100.0 * new_tokens as f64 / secs / limit
    );
    Ok(())
}

/// Bytes a second that every rayon thread together reads from a 1 GiB buffer (each thread
/// summing its own part), the median of the timed passes.
fn read_bandwidth() -> f64 {
    use rayon::prelude::*;
    let buf = vec![1.0f32; 1 << 28];
    let secs = common::median_secs(|| {
        let sum: f32 = buf
            .par_chunks(1 << 16)
            .map(|c| {
                // 64 independent lanes: the adds keep up with memory.
                let mut acc = [0f32; 64];
                for block in c.chunks_exact(64) {
                    for (a, x) in acc.iter_mut().zip(block) {
                        *a += x;
                    }
                }
                acc.iter().sum::<f32>()
            })
            .sum();
        std::hint::black_box(sum);
    });
    (buf.len() * 4) as f64 / secs
}

struct StepProducts {
    secs: f64,
    gflops: f64,
    weight_bytes: usize,
}

/// Median time of one token step's products at `rows` rows on matrices of the model's shapes
/// (random weights, packed as generation packs them; 2 steps to warm up, 7 timed).
fn products_alone(
    c: &quester_model::ModelConfig,
    rows: usize,
    precision: quester_model::Precision,
) -> Result<StepProducts, Box<dyn std::error::Error + Send + Sync>> {
    use quester_model::ops::PackedMatrix;
    let (h, q, kv, i) = (
        c.hidden_size,
        c.num_attention_heads * c.head_dim,
        c.num_key_value_heads * c.head_dim,
        c.intermediate_size,
    );
    let mut random = common::random_values();
    let mut pack =
        |out: usize, inp: usize| PackedMatrix::pack_in(&random(out * inp), out, inp, precision);
    let mut layers = Vec::new();
    for _ in 0..c.num_hidden_layers {
        layers.push([
            pack(q, h)?,
            pack(kv, h)?,
            pack(kv, h)?,
            pack(h, q)?,
            pack(i, h)?,
            pack(i, h)?,
            pack(h, i)?,
        ]);
    }
    let head = pack(c.vocab_size, h)?;
    let x = random(rows * h.max(q).max(i));
    let mut flops = 0usize;
    let mut weight_bytes = 0usize;
    let mut one = |m: &PackedMatrix| {
        let y = m.matmul_slice(&x[..rows * m.in_dim()], rows);
        flops += 2 * rows * m.in_dim() * m.out_dim();
        weight_bytes += m.in_dim()
            * m.out_dim()
            * if precision == quester_model::Precision::Bf16 {
                2
            } else {
                4
            };
        std::hint::black_box(y);
    };
    let secs = common::median_secs(|| {
        for l in &layers {
            l.iter().for_each(&mut one);
        }
        one(&head);
    });
    let steps = common::PASSES;
    Ok(StepProducts {
        secs,
        gflops: (flops / steps) as f64 / secs / 1e9,
        weight_bytes: weight_bytes / steps,
    })
}
