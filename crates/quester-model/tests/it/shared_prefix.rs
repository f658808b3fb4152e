//! A batch whose rows share a prefix runs it once: the log-probs and every gradient must be
//! those of the rows run one by one (where nothing is shared).

use candle_core::{DType, Device, Tensor, Var};
use quester_model::{Architecture, LoraConfig, Model, ModelConfig};

const VOCAB: usize = 40;

/// Three rows with the same first 10 tokens; row 2 is right-padded.
fn rows() -> (Vec<Vec<u32>>, Vec<usize>) {
    let prefix: Vec<u32> = vec![3, 17, 5, 9, 31, 2, 8, 14, 27, 6];
    let tails = [
        vec![11u32, 7, 22, 39, 1],
        vec![4, 4, 19, 25, 33],
        vec![30, 12, 0],
    ];
    let rows = tails
        .iter()
        .map(|t| prefix.iter().chain(t).copied().collect())
        .collect();
    (rows, tails.iter().map(|t| prefix.len() + t.len()).collect())
}

fn batch(rows: &[Vec<u32>], lens: &[usize]) -> (Tensor, Tensor) {
    let t = lens.iter().copied().max().unwrap_or(0);
    let mut ids = vec![0u32; rows.len() * t];
    let mut mask = vec![0u32; rows.len() * t];
    for (r, row) in rows.iter().enumerate() {
        for (j, &id) in row.iter().enumerate() {
            ids[r * t + j] = id;
            mask[r * t + j] = 1;
        }
    }
    let shape = (rows.len(), t);
    (
        Tensor::from_vec(ids, shape, &Device::Cpu).unwrap(),
        Tensor::from_vec(mask, shape, &Device::Cpu).unwrap(),
    )
}

/// Gradients by variable name.
type Grads = Vec<(String, Vec<f64>)>;

/// Log-probs and the gradients of `sum(logprobs * weights)`.
fn run(
    model: &Model,
    ids: &Tensor,
    mask: &Tensor,
    from: usize,
    weights: &Tensor,
) -> (Vec<Vec<f64>>, Grads) {
    let lp = model.token_logprobs(ids, mask, from).unwrap();
    let grads = (&lp * weights)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let g = model
        .trainable_vars()
        .into_iter()
        .map(|(n, v): (String, Var)| {
            let g = grads
                .get(v.as_tensor())
                .map(|g| g.flatten_all().unwrap().to_vec1::<f64>().unwrap())
                .unwrap_or_else(|| vec![0.0; v.elem_count()]);
            (n, g)
        })
        .collect();
    (lp.to_vec2().unwrap(), g)
}

fn check(model: &Model, what: &str) {
    let (rows, lens) = rows();
    for from in [10, 12] {
        let (ids, mask) = batch(&rows, &lens);
        let n = ids.dims()[1] - from;
        let weights = Tensor::randn(0f64, 1.0, (3, n), &Device::Cpu).unwrap();
        let (lp, grads) = run(model, &ids, &mask, from, &weights);
        // The same rows one at a time (a single row shares nothing).
        let mut want_grads: Grads = Vec::new();
        for r in 0..3 {
            let (ids1, mask1) = batch(&rows[r..=r], &lens[r..=r]);
            let n1 = lens[r] - from;
            let w1 = weights.narrow(0, r, 1).unwrap().narrow(1, 0, n1).unwrap();
            let (lp1, g1) = run(model, &ids1, &mask1, from, &w1);
            for (a, b) in lp[r].iter().zip(&lp1[0]) {
                assert!(
                    (a - b).abs() < 1e-10,
                    "{what} from {from} row {r}: {a} vs {b}"
                );
            }
            if want_grads.is_empty() {
                want_grads = g1;
            } else {
                for ((_, acc), (_, g)) in want_grads.iter_mut().zip(g1) {
                    acc.iter_mut().zip(g).for_each(|(a, b)| *a += b);
                }
            }
        }
        assert!(!grads.is_empty());
        for ((name, got), (_, want)) in grads.iter().zip(&want_grads) {
            let scale = want.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
            let err = got
                .iter()
                .zip(want)
                .fold(0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                err < 1e-9 * scale.max(1.0),
                "{what} from {from} {name}: {err}"
            );
        }
        // Some gradient is not zero, so the comparison compared something.
        assert!(grads.iter().any(|(_, g)| g.iter().any(|x| x.abs() > 1e-6)));
    }
}

#[test]
fn shared_prefix_matches_rows_run_alone_in_values_and_gradients() {
    for arch in [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ] {
        let model = Model::tiny_random(&ModelConfig::tiny(arch, VOCAB), 5)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap();
        check(&model, &format!("{arch:?} full"));
    }
    let mut model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 9).unwrap();
    model
        .attach_lora(&LoraConfig {
            rank: 2,
            alpha: 4.0,
            target_modules: vec![
                "q_proj".into(),
                "k_proj".into(),
                "v_proj".into(),
                "up_proj".into(),
            ],
            seed: 2,
        })
        .unwrap();
    let model = model.to_dtype(DType::F64).unwrap();
    // Non-zero B, so the adapters shape the prefix's keys and values too.
    for (name, v) in model.trainable_vars() {
        if name.contains("lora_B") {
            v.set(&Tensor::randn(0f64, 0.3, v.shape(), &Device::Cpu).unwrap())
                .unwrap();
        }
    }
    check(&model, "Llama LoRA");
}
