//! The head evaluated only at kept positions (the loss mask): the kept log-probs, entropies and
//! every gradient of a loss over them equal the unmasked call's; the other positions are 0.

use candle_core::{DType, Device, Tensor, Var};
use quester_model::{Architecture, LoraConfig, Model, ModelConfig};

const VOCAB: usize = 40;

/// Rows of `lens` tokens, right-padded; with `shared`, the first 10 tokens are the same in every
/// row (the shared-prefix path).
fn batch(lens: &[usize], shared: bool) -> (Tensor, Tensor) {
    let t = lens.iter().copied().max().unwrap_or(0);
    let mut ids = vec![0u32; lens.len() * t];
    let mut mask = vec![0u32; lens.len() * t];
    for (r, &len) in lens.iter().enumerate() {
        for j in 0..len {
            let salt = if shared && j < 10 { 0 } else { r * 13 };
            ids[r * t + j] = ((j * 7 + salt + 3) % VOCAB) as u32;
            mask[r * t + j] = 1;
        }
    }
    let shape = (lens.len(), t);
    (
        Tensor::from_vec(ids, shape, &Device::Cpu).unwrap(),
        Tensor::from_vec(mask, shape, &Device::Cpu).unwrap(),
    )
}

type Grads = Vec<(String, Vec<f64>)>;

/// Log-probs, entropies, and the gradients of `sum((lp * w1 + ent * w2) * keep)`.
fn run(
    model: &Model,
    ids: &Tensor,
    mask: &Tensor,
    from: usize,
    keep: &Tensor,
    kept_only: bool,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Grads) {
    let (lp, ent) = if kept_only {
        model
            .token_logprobs_and_entropy_at(ids, mask, from, keep)
            .unwrap()
    } else {
        model.token_logprobs_and_entropy(ids, mask, from).unwrap()
    };
    let shape = lp.shape().clone();
    let w1 = Tensor::arange(0f64, shape.elem_count() as f64, &Device::Cpu)
        .unwrap()
        .reshape(&shape)
        .unwrap()
        .cos()
        .unwrap();
    let w2 = (w1.sin().unwrap() * 0.5).unwrap();
    let loss = ((lp.mul(&w1).unwrap() + ent.mul(&w2).unwrap()).unwrap() * keep)
        .unwrap()
        .sum_all()
        .unwrap();
    let grads = loss.backward().unwrap();
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
    (lp.to_vec2().unwrap(), ent.to_vec2().unwrap(), g)
}

fn check(model: &Model, what: &str) {
    for shared in [false, true] {
        let lens = [17, 15, 12];
        let (ids, mask) = batch(&lens, shared);
        for from in [10, 12] {
            let n = 17 - from;
            // Every third position and the last of each row; row 1 keeps nothing but one.
            let keep: Vec<f64> = (0..3 * n)
                .map(|i| f64::from(u8::from(i % 3 == 0 || i % n == n - 1)))
                .collect();
            let keep = Tensor::from_vec(keep, (3, n), &Device::Cpu).unwrap();
            let k = keep.to_vec2::<f64>().unwrap();
            let (lp, ent, g) = run(model, &ids, &mask, from, &keep, true);
            let (lp0, ent0, g0) = run(model, &ids, &mask, from, &keep, false);
            let label = format!("{what} shared {shared} from {from}");
            for r in 0..3 {
                for c in 0..n {
                    let (want_lp, want_ent) = if k[r][c] != 0.0 {
                        (lp0[r][c], ent0[r][c])
                    } else {
                        (0.0, 0.0)
                    };
                    assert!((lp[r][c] - want_lp).abs() < 1e-10, "{label} lp [{r},{c}]");
                    assert!(
                        (ent[r][c] - want_ent).abs() < 1e-10,
                        "{label} ent [{r},{c}]"
                    );
                }
            }
            assert!(g.iter().any(|(_, v)| v.iter().any(|x| x.abs() > 1e-6)));
            for ((name, got), (_, want)) in g.iter().zip(&g0) {
                let err = got
                    .iter()
                    .zip(want)
                    .fold(0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(err < 1e-9, "{label} {name}: {err}");
            }
        }
    }
}

#[test]
fn kept_positions_match_the_unmasked_call_in_values_and_gradients() {
    let full = Model::tiny_random(&ModelConfig::tiny(Architecture::Qwen2, VOCAB), 5)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    check(&full, "Qwen2 full");
    let mut model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 9).unwrap();
    model
        .attach_lora(&LoraConfig {
            rank: 2,
            alpha: 4.0,
            target_modules: vec!["q_proj".into(), "v_proj".into(), "up_proj".into()],
            seed: 2,
        })
        .unwrap();
    let model = model.to_dtype(DType::F64).unwrap();
    for (name, v) in model.trainable_vars() {
        if name.contains("lora_B") {
            v.set(&Tensor::randn(0f64, 0.3, v.shape(), &Device::Cpu).unwrap())
                .unwrap();
        }
    }
    check(&model, "Llama LoRA");
}

#[test]
fn a_keep_mask_of_the_wrong_shape_is_an_error_and_an_empty_one_keeps_all() {
    let model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 3).unwrap();
    let (ids, mask) = batch(&[12, 12], false);
    let bad = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    let e = model
        .token_logprobs_and_entropy_at(&ids, &mask, 10, &bad)
        .unwrap_err();
    assert!(e.to_string().contains("keep mask"), "{e}");
    let none = Tensor::zeros((2, 2), DType::F32, &Device::Cpu).unwrap();
    let (lp, _) = model
        .token_logprobs_and_entropy_at(&ids, &mask, 10, &none)
        .unwrap();
    let (lp0, _) = model.token_logprobs_and_entropy(&ids, &mask, 10).unwrap();
    assert_eq!(lp.to_vec2::<f32>().unwrap(), lp0.to_vec2::<f32>().unwrap());
}
