//! The config structs parse from TOML tables via quester-config, with defaults for missing
//! keys and an error naming unknown keys.

use quester_algos::{
    AdvantageConfig, Aggregation, CrossAttemptReturn, Estimator, KlEstimator, Normalization,
    PolicyLossConfig, Signal,
};

#[test]
fn defaults_are_lamer_values() {
    let a = AdvantageConfig::default();
    assert_eq!(
        (a.step_gamma, a.traj_gamma, a.step_weight, a.invalid_penalty),
        (0.95, 0.9, 1.0, 0.5)
    );
    assert_eq!(
        (a.estimator, a.normalization, a.return_form),
        (
            Estimator::Gigpo,
            Normalization::MeanNorm,
            CrossAttemptReturn::Paper
        )
    );
    let p = PolicyLossConfig::default();
    assert_eq!(
        (
            p.clip_low,
            p.clip_high,
            p.dual_clip,
            p.entropy_coef,
            p.kl_coef
        ),
        (0.2, 0.2, 3.0, 0.001, 0.0)
    );
    assert_eq!(p.aggregation, Aggregation::TokenMean);
}

#[test]
fn parses_from_toml_and_overrides() {
    let mut t: toml::Table = "estimator = \"grpo\"\nnormalization = \"mean_std_norm\"\nsignal = \"trial_score\"\ntraj_gamma = 0.9\n"
        .parse()
        .unwrap();
    quester_config::apply_overrides(&mut t, &["return_form=reference_recursion"]).unwrap();
    let a: AdvantageConfig = quester_config::from_table(t).unwrap();
    assert_eq!(a.estimator, Estimator::Grpo);
    assert_eq!(a.normalization, Normalization::MeanStdNorm);
    assert_eq!(a.signal, Signal::TrialScore);
    assert_eq!(a.return_form, CrossAttemptReturn::ReferenceRecursion);
    assert_eq!(a.traj_gamma, 0.9);
    assert_eq!(a.step_gamma, 0.95);

    let p: PolicyLossConfig = quester_config::from_overrides(&[
        "clip_high=0.3",
        "dual_clip=10.0",
        "min_behaviour_logp=-5.0",
        "kl_estimator=k1",
        "aggregation=seq_mean_token_mean",
    ])
    .unwrap();
    assert_eq!(p.clip_high, 0.3);
    assert_eq!(p.dual_clip, 10.0);
    assert_eq!(p.min_behaviour_logp, Some(-5.0));
    assert_eq!(p.kl_estimator, KlEstimator::K1);
    assert_eq!(p.aggregation, Aggregation::SeqMeanTokenMean);
}

#[test]
fn unknown_keys_and_values_are_named() {
    let e = quester_config::from_overrides::<AdvantageConfig, _>(&["traj_gama=0.6"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("traj_gama") && e.contains("traj_gamma"), "{e}");
    let e = quester_config::from_overrides::<AdvantageConfig, _>(&["estimator=ppo"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("ppo") && e.contains("gigpo"), "{e}");
}
