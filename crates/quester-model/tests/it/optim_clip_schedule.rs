//! Global grad-norm clipping and learning-rate schedules, against hand-worked values.

use candle_core::{Device, Tensor, Var};
use quester_model::optim::{clip_scale, global_grad_norm, GradNorm, LrSchedule, ScheduleKind};

fn var(values: &[f32]) -> Var {
    Var::from_tensor(&Tensor::new(values, &Device::Cpu).unwrap()).unwrap()
}

#[test]
fn global_norm_spans_all_parameters() {
    // d/dx sum(3x) = 3 (two entries), d/dy sum(y * [4, 0, 1]) = (4, 0, 1):
    // norm = sqrt(9 + 9 + 16 + 0 + 1) = sqrt(35).
    let x = var(&[1.0, 2.0]);
    let y = var(&[0.0, 0.0, 0.0]);
    let z = var(&[5.0]); // no gradient: counts as zero
    let w = Tensor::new(&[4.0f32, 0.0, 1.0], &Device::Cpu).unwrap();
    let loss = ((x.as_tensor() * 3.0).unwrap().sum_all().unwrap()
        + (y.as_tensor() * w).unwrap().sum_all().unwrap())
    .unwrap();
    let grads = loss.backward().unwrap();
    let params = vec![("x".into(), x), ("y".into(), y), ("z".into(), z)];
    let n = global_grad_norm(&params, &grads).unwrap();
    assert!((n.norm - 35f64.sqrt()).abs() < 1e-9, "{}", n.norm);
    assert!(n.is_finite());
}

#[test]
fn clip_scale_follows_torch() {
    let five = GradNorm { norm: 5.0 };
    assert!((clip_scale(five, 1.0) - (1.0 / (5.0 + 1e-6)) as f32).abs() < 1e-9);
    assert_eq!(clip_scale(GradNorm { norm: 0.5 }, 1.0), 1.0);
    assert_eq!(clip_scale(five, 0.0), 1.0, "max_norm 0 turns clipping off");
}

#[test]
fn nan_and_inf_gradients_are_reported() {
    let x = var(&[1.0, -1.0]);
    let w = Tensor::new(&[f32::NAN, 1.0], &Device::Cpu).unwrap();
    let grads = (x.as_tensor() * w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let n = global_grad_norm(&[("x".into(), x.clone())], &grads).unwrap();
    assert!(!n.is_finite());
    assert_eq!(clip_scale(n, 1.0), 1.0);
    let w = Tensor::new(&[f32::INFINITY, 1.0], &Device::Cpu).unwrap();
    let grads = (x.as_tensor() * w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert!(!global_grad_norm(&[("x".into(), x)], &grads)
        .unwrap()
        .is_finite());
}

#[test]
fn constant_schedule_with_and_without_warmup() {
    let s = LrSchedule::default();
    assert_eq!(s.kind, ScheduleKind::Constant);
    assert_eq!(s.lr(1e-6, 0), 1e-6);
    assert_eq!(s.lr(1e-6, 10_000), 1e-6);
    let w = LrSchedule {
        warmup_steps: 4,
        ..LrSchedule::default()
    };
    let f: Vec<f64> = (0..6).map(|t| w.factor(t)).collect();
    assert_eq!(f, vec![0.0, 0.25, 0.5, 0.75, 1.0, 1.0]);
}

#[test]
fn linear_and_cosine_decay() {
    let lin = LrSchedule {
        kind: ScheduleKind::Linear,
        warmup_steps: 2,
        total_steps: 6,
        min_lr_ratio: 0.0,
    };
    let f: Vec<f64> = (0..8).map(|t| lin.factor(t)).collect();
    assert_eq!(f, vec![0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0]);
    let cos = LrSchedule {
        kind: ScheduleKind::Cosine,
        warmup_steps: 0,
        total_steps: 4,
        min_lr_ratio: 0.1,
    };
    // 0.1 + 0.9 * 0.5 * (1 + cos(pi * t / 4)).
    let want = [
        1.0,
        0.1 + 0.45 * (1.0 + 0.5f64.sqrt()),
        0.55,
        0.1 + 0.45 * (1.0 - 0.5f64.sqrt()),
        0.1,
        0.1,
    ];
    for (t, w) in want.iter().enumerate() {
        assert!((cos.factor(t as u64) - w).abs() < 1e-12, "step {t}");
    }
}

#[test]
fn schedule_validation_names_keys() {
    let bad = LrSchedule {
        kind: ScheduleKind::Cosine,
        warmup_steps: 10,
        total_steps: 5,
        min_lr_ratio: 0.0,
    };
    let err = bad.validate().unwrap_err();
    assert!(
        err.contains("total_steps") && err.contains("cosine"),
        "{err}"
    );
    let table: toml::Table = "kind = \"warmup\"\n".parse().unwrap();
    let err = quester_config::from_table::<LrSchedule>(table)
        .unwrap_err()
        .to_string();
    assert!(err.contains("constant") && err.contains("cosine"), "{err}");
    let table: toml::Table = "kind = \"cosine\"\ntotal_steps = 300\n".parse().unwrap();
    let s: LrSchedule = quester_config::from_table(table).unwrap();
    assert!(s.validate().is_ok());
}
