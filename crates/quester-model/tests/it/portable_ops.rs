//! The portable ops (candle's own tensor ops, the path a CUDA device takes) against the fused CPU
//! kernels: the same values and the same gradients, op by op and through the whole model.

use candle_core::{DType, Device, Result, Tensor, Var};
use quester_model::ops::{self, with_portable_ops};
use quester_model::{Architecture, LoraConfig, Model, ModelConfig};

/// Output and input gradients of `f` at `inputs`, with the loss `sum(f(inputs) * probe)`.
fn value_and_grads(
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Var],
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let xs: Vec<Tensor> = inputs.iter().map(|v| v.as_tensor().clone()).collect();
    let y = f(&xs).unwrap();
    // A fixed, uneven probe so every output element weighs differently in the loss.
    let n = y.elem_count();
    let probe: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 13) as f64 / 6.0 - 1.0)
        .collect();
    let probe = Tensor::from_vec(probe, y.shape(), &Device::Cpu).unwrap();
    let grads = (&y * &probe)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f64>().unwrap();
    let gs = inputs
        .iter()
        .map(|v| grads.get(v.as_tensor()).map(flat).unwrap_or_default())
        .collect();
    (flat(&y), gs)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Runs `f` on the fused kernels and on the portable ops and requires equal values and gradients.
fn same_both_ways(name: &str, f: &dyn Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Var]) {
    let (y1, g1) = value_and_grads(f, inputs);
    let (y2, g2) = with_portable_ops(|| value_and_grads(f, inputs));
    assert!(
        max_diff(&y1, &y2) < 1e-10,
        "{name}: values differ by {}",
        max_diff(&y1, &y2)
    );
    for (i, (a, b)) in g1.iter().zip(&g2).enumerate() {
        assert!(!a.is_empty(), "{name}: input {i} got no gradient");
        assert!(
            max_diff(a, b) < 1e-10,
            "{name}: gradient {i} differs by {}",
            max_diff(a, b)
        );
    }
}

fn randn(shape: &[usize], seed: u64) -> Var {
    // A seeded, deterministic spread of values (no RNG crate needed for a test input).
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| (((i as u64 + 1) * (seed * 2654435761 + 97)) % 1000) as f64 / 500.0 - 1.0)
        .collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

#[test]
fn elementwise_and_row_ops_agree() {
    let x = randn(&[3, 4, 8], 1);
    let w = randn(&[8], 2);
    same_both_ways(
        "rms_norm",
        &|t| ops::rms_norm(&t[0], &t[1], 1e-5),
        &[x.clone(), w],
    );
    same_both_ways(
        "softmax",
        &|t| ops::softmax_last_dim(&t[0]),
        std::slice::from_ref(&x),
    );
    let gate = randn(&[5, 6], 3);
    let up = randn(&[5, 6], 4);
    same_both_ways("swiglu", &|t| ops::swiglu(&t[0], &t[1]), &[gate, up]);
    let logits = randn(&[6, 11], 5);
    let targets = Tensor::new(&[0u32, 10, 3, 3, 7, 1], &Device::Cpu).unwrap();
    same_both_ways(
        "gather_log_softmax",
        &|t| ops::gather_log_softmax(&t[0], &targets),
        std::slice::from_ref(&logits),
    );
    same_both_ways(
        "softmax_entropy",
        &|t| ops::softmax_entropy(&t[0]),
        &[logits],
    );
}

#[test]
fn rope_agrees_at_ragged_positions() {
    let pos = Tensor::new(&[[0u32, 1, 2], [0, 0, 5]], &Device::Cpu).unwrap();
    let (cos, sin) = ops::rope_tables(&pos, 8, 10000.0, DType::F64).unwrap();
    let x = randn(&[2, 3, 4, 8], 6);
    same_both_ways("rope", &|t| ops::rope(&t[0], &cos, &sin), &[x]);
}

#[test]
fn projections_agree() {
    let x = randn(&[2, 5, 6], 7);
    let w = randn(&[4, 6], 8);
    // The weight is frozen: only x has a gradient.
    same_both_ways(
        "frozen_matmul",
        &|t| ops::frozen_matmul(&t[0], w.as_tensor()),
        &[x],
    );
    let x = randn(&[5, 6], 9);
    let bias = randn(&[4], 10);
    let a = randn(&[3, 6], 11);
    let b = randn(&[4, 3], 12);
    same_both_ways(
        "lora_linear",
        &|t| {
            ops::lora_linear(
                &t[0],
                w.as_tensor(),
                Some(bias.as_tensor()),
                &t[1],
                &t[2],
                0.5,
                quester_model::Precision::F32,
            )
        },
        &[x, a, b],
    );
}

#[test]
fn attention_agrees_with_padding_cache_and_empty_rows() {
    // 2 sequences, 2 kv heads with 3 query heads each, 4 new queries after 2 cached keys.
    let (b, kvh, g, t, past, d) = (2, 2, 3, 4, 2, 8);
    let s = past + t;
    let q = randn(&[b, kvh, g * t, d], 13);
    let k = randn(&[b, kvh, s, d], 14);
    let v = randn(&[b, kvh, s, d], 15);
    // Row 0 is left-padded into the new tokens; row 1 has no real key until position 3, so
    // its first new query (position 2) sees none and must output zeros.
    let mask = vec![vec![1, 1, 0, 1, 1, 1], vec![0, 0, 0, 1, 1, 1]];
    let f = |t: &[Tensor]| ops::causal_attention(&t[0], &t[1], &t[2], &mask, past);
    same_both_ways("attention", &f, &[q.clone(), k.clone(), v.clone()]);
    let out = with_portable_ops(|| {
        f(&[
            q.as_tensor().clone(),
            k.as_tensor().clone(),
            v.as_tensor().clone(),
        ])
    })
    .unwrap();
    let first = out.get(1).unwrap().get(0).unwrap().get(0).unwrap();
    assert_eq!(
        first
            .abs()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap(),
        0.0
    );
}

/// Log-probs and every trainable gradient of `model` on a ragged batch whose rows share a
/// prefix (so the shared-prefix path runs too).
fn model_grads(model: &Model) -> (Vec<f64>, Vec<Vec<f64>>) {
    let ids = Tensor::new(
        &[
            [3u32, 17, 5, 9, 31, 2, 8],
            [3, 17, 5, 11, 7, 22, 39],
            [3, 17, 5, 25, 0, 0, 0],
        ],
        &Device::Cpu,
    )
    .unwrap();
    let mask = Tensor::new(
        &[
            [1u32, 1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 0, 0, 0],
        ],
        &Device::Cpu,
    )
    .unwrap();
    let (lp, ent) = model.token_logprobs_and_entropy(&ids, &mask, 3).unwrap();
    let loss = ((&lp * 1.3).unwrap() + (&ent * 0.1).unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    let grads = loss.backward().unwrap();
    let vars = model.trainable_vars();
    let gs = vars
        .iter()
        .map(|(name, v)| {
            grads
                .get(v.as_tensor())
                .unwrap_or_else(|| panic!("{name}: no gradient"))
                .flatten_all()
                .unwrap()
                .to_vec1::<f64>()
                .unwrap()
        })
        .collect();
    (lp.flatten_all().unwrap().to_vec1().unwrap(), gs)
}

#[test]
fn the_whole_model_agrees_full_and_lora() {
    for arch in [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ] {
        let base = Model::tiny_random(&ModelConfig::tiny(arch, 40), 7)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap();
        let mut lora = base.deep_clone().unwrap();
        lora.attach_lora(&LoraConfig {
            rank: 2,
            seed: 1,
            ..LoraConfig::default()
        })
        .unwrap();
        for (kind, model) in [("full", &base), ("lora", &lora)] {
            let (lp1, g1) = model_grads(model);
            let (lp2, g2) = with_portable_ops(|| model_grads(model));
            assert!(max_diff(&lp1, &lp2) < 1e-9, "{arch:?} {kind}: log-probs");
            for ((name, _), (a, b)) in model.trainable_vars().iter().zip(g1.iter().zip(&g2)) {
                assert!(
                    max_diff(a, b) < 1e-9,
                    "{arch:?} {kind} {name}: {}",
                    max_diff(a, b)
                );
            }
        }
    }
}

#[test]
fn cached_decoding_agrees() {
    let model = Model::tiny_random(&ModelConfig::tiny(Architecture::Qwen3, 40), 5)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    let decode = |model: &Model| -> Vec<Vec<f64>> {
        let mut cache = model.new_cache(2, 6).unwrap();
        let prompt = Tensor::new(&[[0u32, 4, 9, 2], [5, 6, 7, 8]], &Device::Cpu).unwrap();
        let mut km = vec![vec![0, 1, 1, 1], vec![1, 1, 1, 1]];
        model
            .forward_cached(&prompt, &km, &[0, 0], &mut cache)
            .unwrap();
        for r in &mut km {
            r.push(1);
        }
        let step = Tensor::new(&[[11u32], [12]], &Device::Cpu).unwrap();
        model
            .forward_cached(&step, &km, &[3, 4], &mut cache)
            .unwrap()
            .to_vec2()
            .unwrap()
    };
    let fused = decode(&model);
    let portable = with_portable_ops(|| decode(&model));
    for (a, b) in fused.iter().zip(&portable) {
        assert!(max_diff(a, b) < 1e-10);
    }
}
