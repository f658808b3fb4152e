//! The fused AdamW against a hand-worked step, an f64 reference and candle_nn's AdamW.

use candle_core::{Device, Tensor, Var};
use candle_nn::Optimizer;
use quester_model::optim::{AdamW, AdamWConfig};

fn var(values: &[f32]) -> Var {
    Var::from_tensor(&Tensor::new(values, &Device::Cpu).unwrap()).unwrap()
}

fn values(v: &Var) -> Vec<f32> {
    v.as_tensor()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
}

/// Gradients of `sum(w * x)` with respect to `x` are `w`: a way to inject chosen gradients.
fn grads_for(x: &Var, g: &[f32]) -> candle_core::backprop::GradStore {
    let w = Tensor::new(g, &Device::Cpu)
        .unwrap()
        .reshape(x.shape())
        .unwrap();
    (x.as_tensor() * w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap()
}

#[test]
fn first_step_matches_hand_computation() {
    // Step 1: m = 0.1 g, v = 0.001 g^2, bias-corrected m_hat = g, v_hat = g^2, so the update is
    // lr * g / (|g| + eps) after the decay p * (1 - lr * wd).
    let x = var(&[1.0, -2.0, 0.5]);
    let cfg = AdamWConfig {
        lr: 0.1,
        weight_decay: 0.01,
        ..AdamWConfig::default()
    };
    let mut opt = AdamW::new(vec![("x".into(), x.clone())], cfg).unwrap();
    let grads = grads_for(&x, &[0.5, 0.1, -4.0]);
    opt.step(&grads, 1.0).unwrap();
    let expected = [
        1.0 * 0.999 - 0.1 * 0.5 / (0.5 + 1e-8),
        -2.0 * 0.999 - 0.1 * 0.1 / (0.1 + 1e-8),
        0.5 * 0.999 + 0.1 * 4.0 / (4.0 + 1e-8),
    ];
    // 0.899, -2.098, 0.5995
    for (got, want) in values(&x).iter().zip(expected) {
        assert!((f64::from(*got) - want).abs() < 1e-6, "{got} vs {want}");
    }
    assert!((expected[0] - 0.899).abs() < 1e-7 && (expected[1] + 2.098).abs() < 1e-7);
    assert_eq!(opt.step_count(), 1);
    let st = opt.state().unwrap();
    let m = &st.moments[0];
    assert!((m.m[0] - 0.05).abs() < 1e-8 && (m.m[2] + 0.4).abs() < 1e-7);
    assert!((m.v[0] - 0.00025).abs() < 1e-9 && (m.v[2] - 0.016).abs() < 1e-8);
}

/// Three steps computed in f64 from the formula, by hand-rolled loop.
#[test]
fn several_steps_match_f64_reference() {
    let p0 = [0.3f64, -1.2, 2.0, 0.0];
    let gs = [
        [0.1f64, -0.2, 0.3, 1.0],
        [-0.5, 0.25, 0.0, 1.0],
        [0.05, 0.05, -2.0, -1.0],
    ];
    let (lr, b1, b2, eps, wd) = (0.01f64, 0.9f64, 0.999f64, 1e-8f64, 0.1f64);
    let mut p = p0;
    let (mut m, mut v) = ([0f64; 4], [0f64; 4]);
    for (t, g) in gs.iter().enumerate() {
        let t = t as i32 + 1;
        for i in 0..4 {
            p[i] *= 1.0 - lr * wd;
            m[i] = b1 * m[i] + (1.0 - b1) * g[i];
            v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
            let mh = m[i] / (1.0 - b1.powi(t));
            let vh = v[i] / (1.0 - b2.powi(t));
            p[i] -= lr * mh / (vh.sqrt() + eps);
        }
    }
    let x = var(&p0.map(|v| v as f32));
    let cfg = AdamWConfig {
        lr,
        beta1: b1,
        beta2: b2,
        eps,
        weight_decay: wd,
    };
    let mut opt = AdamW::new(vec![("x".into(), x.clone())], cfg).unwrap();
    for g in &gs {
        opt.step(&grads_for(&x, &g.map(|v| v as f32)), 1.0).unwrap();
    }
    for (got, want) in values(&x).iter().zip(p) {
        assert!((f64::from(*got) - want).abs() < 1e-6, "{got} vs {want}");
    }
}

#[test]
fn matches_candle_nn_adamw() {
    let dev = Device::Cpu;
    // A 70 000-element tensor spans several rayon chunks.
    let n = 70_000usize;
    let init: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.37).sin()).collect();
    let ours =
        Var::from_tensor(&Tensor::from_vec(init.clone(), (n / 100, 100), &dev).unwrap()).unwrap();
    let theirs = Var::from_tensor(&Tensor::from_vec(init, (n / 100, 100), &dev).unwrap()).unwrap();
    let cfg = AdamWConfig {
        lr: 3e-3,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
        weight_decay: 0.05,
    };
    let mut a = AdamW::new(vec![("w".into(), ours.clone())], cfg.clone()).unwrap();
    let mut b = candle_nn::AdamW::new(
        vec![theirs.clone()],
        candle_nn::ParamsAdamW {
            lr: cfg.lr,
            beta1: cfg.beta1,
            beta2: cfg.beta2,
            eps: cfg.eps,
            weight_decay: cfg.weight_decay,
        },
    )
    .unwrap();
    for step in 0..5 {
        // A loss whose gradient depends on the current weights: sum(w^2 * c) + sum(w * d).
        let c: Vec<f32> = (0..n).map(|i| ((i + step) as f32 * 0.11).cos()).collect();
        let c = Tensor::from_vec(c, (n / 100, 100), &dev).unwrap();
        let loss = |w: &Var| {
            let w = w.as_tensor();
            ((w.sqr().unwrap() * &c).unwrap().sum_all().unwrap()
                + (w * 0.5).unwrap().sum_all().unwrap())
            .unwrap()
        };
        a.step(&loss(&ours).backward().unwrap(), 1.0).unwrap();
        b.step(&loss(&theirs).backward().unwrap()).unwrap();
    }
    let (x, y) = (values(&ours), values(&theirs));
    let max_diff = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(max_diff < 1e-6, "max difference {max_diff}");
    // The weights did move.
    let moved = x.iter().zip((0..n).map(|i| ((i as f32) * 0.37).sin()));
    assert!(moved.map(|(a, b)| (a - b).abs()).fold(0f32, f32::max) > 1e-3);
}

#[test]
fn grad_scale_equals_scaled_gradients() {
    let a = var(&[0.2, -0.4, 1.0]);
    let b = var(&[0.2, -0.4, 1.0]);
    let cfg = AdamWConfig {
        lr: 0.05,
        ..AdamWConfig::default()
    };
    let mut oa = AdamW::new(vec![("p".into(), a.clone())], cfg.clone()).unwrap();
    let mut ob = AdamW::new(vec![("p".into(), b.clone())], cfg).unwrap();
    for _ in 0..2 {
        oa.step(&grads_for(&a, &[1.0, -3.0, 0.5]), 0.25).unwrap();
        ob.step(&grads_for(&b, &[0.25, -0.75, 0.125]), 1.0).unwrap();
    }
    assert_eq!(values(&a), values(&b));
}

#[test]
fn parameters_without_gradient_are_untouched() {
    let x = var(&[1.0, 2.0]);
    let y = var(&[3.0, 4.0]);
    let mut opt = AdamW::new(
        vec![("x".into(), x.clone()), ("y".into(), y.clone())],
        AdamWConfig {
            lr: 0.1,
            ..AdamWConfig::default()
        },
    )
    .unwrap();
    opt.step(&grads_for(&x, &[1.0, 1.0]), 1.0).unwrap();
    assert_eq!(values(&y), vec![3.0, 4.0]);
    assert_ne!(values(&x), vec![1.0, 2.0]);
}

#[test]
fn rejects_bad_parameters_and_state() {
    let x = var(&[1.0]);
    let dup = AdamW::new(
        vec![("x".into(), x.clone()), ("x".into(), x.clone())],
        AdamWConfig::default(),
    );
    assert!(dup.err().unwrap().to_string().contains("`x`"));
    let f64var = Var::from_tensor(&Tensor::new(&[1.0f64], &Device::Cpu).unwrap()).unwrap();
    let err = AdamW::new(vec![("d".into(), f64var)], AdamWConfig::default()).err();
    assert!(err.unwrap().to_string().contains("f32"));
    let bad_cfg = AdamWConfig {
        beta1: 1.0,
        ..AdamWConfig::default()
    };
    let err = AdamW::new(vec![("x".into(), x.clone())], bad_cfg).err();
    assert!(err.unwrap().to_string().contains("beta1"));

    let mut opt = AdamW::new(vec![("x".into(), x.clone())], AdamWConfig::default()).unwrap();
    let mut st = opt.state().unwrap();
    st.moments[0].name = "other".into();
    assert!(opt.load_state(st).unwrap_err().to_string().contains("`x`"));
    let mut st = opt.state().unwrap();
    st.moments[0].shape = vec![2];
    assert!(opt.load_state(st).is_err());
}

#[test]
fn config_from_toml_uses_defaults_and_names_unknown_keys() {
    let table: toml::Table = "lr = 2e-6\n".parse().unwrap();
    let cfg: AdamWConfig = quester_config::from_table(table).unwrap();
    assert_eq!(cfg.lr, 2e-6);
    assert_eq!(cfg.weight_decay, 0.01);
    assert_eq!(cfg.beta2, 0.999);
    let table: toml::Table = "learning_rate = 1.0\n".parse().unwrap();
    let err = quester_config::from_table::<AdamWConfig>(table)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("learning_rate") && err.contains("weight_decay"),
        "{err}"
    );
}

/// The device layout of the moments (what a GPU parameter gets: one [2n] tensor beside the
/// parameter, two in-place passes per step), built on the CPU through `with_portable_ops`, gives
/// the same parameters and moments, bit for bit, as the fused host pass, and its state
/// round-trips through `state` / `load_state`.
#[test]
fn device_moments_match_the_host_pass_exactly() {
    let init: Vec<f32> = (0..40_000)
        .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
        .collect();
    let cfg = AdamWConfig {
        lr: 0.01,
        weight_decay: 0.1,
        ..AdamWConfig::default()
    };
    let (x_host, x_dev) = (var(&init), var(&init));
    let mut host = AdamW::new(vec![("x".into(), x_host.clone())], cfg.clone()).unwrap();
    let mut dev = quester_model::ops::with_portable_ops(|| {
        AdamW::new(vec![("x".into(), x_dev.clone())], cfg).unwrap()
    });
    for step in 0..4 {
        let g: Vec<f32> = (0..init.len())
            .map(|i| (((i + step * 7) * 13) % 29) as f32 / 7.0 - 2.0)
            .collect();
        let scale = [1.0, 0.5, 0.25, 1.0][step];
        host.step(&grads_for(&x_host, &g), scale).unwrap();
        dev.step(&grads_for(&x_dev, &g), scale).unwrap();
    }
    assert_eq!(values(&x_host), values(&x_dev));
    let state = host.state().unwrap();
    assert_eq!(state, dev.state().unwrap());

    // Loading a state into device moments and stepping again stays in lockstep.
    let x_again = var(&values(&x_host));
    let mut again = quester_model::ops::with_portable_ops(|| {
        AdamW::new(vec![("x".into(), x_again.clone())], host.config().clone()).unwrap()
    });
    again.load_state(state).unwrap();
    let g: Vec<f32> = (0..init.len()).map(|i| (i % 5) as f32 - 2.0).collect();
    host.step(&grads_for(&x_host, &g), 1.0).unwrap();
    again.step(&grads_for(&x_again, &g), 1.0).unwrap();
    assert_eq!(values(&x_host), values(&x_again));
    assert_eq!(host.state().unwrap(), again.state().unwrap());
}

/// The gradient norm as a GPU computes it (reduced on the device, one copy to the host) equals
/// the host's.
#[test]
fn the_device_gradient_norm_matches_the_hosts() {
    let x = var(&[3.0, -4.0, 1.0, 2.0]);
    let y = var(&[0.5; 3]);
    let loss = ((x.as_tensor() * Tensor::new(&[3f32, -4.0, 0.0, 1.0], &Device::Cpu).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        + (y.as_tensor() * 2.0).unwrap().sum_all().unwrap())
    .unwrap();
    let grads = loss.backward().unwrap();
    let params = vec![("x".to_string(), x), ("y".to_string(), y)];
    let host = quester_model::optim::global_grad_norm(&params, &grads).unwrap();
    let dev = quester_model::ops::with_portable_ops(|| {
        quester_model::optim::global_grad_norm(&params, &grads).unwrap()
    });
    // sqrt(9 + 16 + 0 + 1 + 3 * 4) = sqrt(38)
    assert!((host.norm - 38f64.sqrt()).abs() < 1e-12, "{}", host.norm);
    assert!(
        (dev.norm - host.norm).abs() < 1e-9,
        "{} vs {}",
        dev.norm,
        host.norm
    );
}
