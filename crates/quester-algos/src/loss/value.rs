//! Clipped value loss for the PPO-with-critic baseline.

use crate::error::{check_finite, check_len, AlgoError};

/// Mean over steps of `0.5 max((v - R)^2, (v_clip - R)^2)` with
/// `v_clip = v_old + clamp(v - v_old, -clip, clip)`; `clip <= 0` disables clipping. Returns the
/// loss and `dL/dv` per step (0 where the clipped term is selected and v is outside the range).
pub fn clipped_value_loss(
    values: &[f64],
    old_values: &[f64],
    targets: &[f64],
    clip: f64,
) -> Result<(f64, Vec<f64>), AlgoError> {
    let n = values.len();
    check_len("old values", n, old_values.len())?;
    check_len("value targets", n, targets.len())?;
    for (what, v) in [
        ("value", values),
        ("old value", old_values),
        ("value target", targets),
    ] {
        check_finite(what, v)?;
    }
    if n == 0 {
        return Ok((0.0, Vec::new()));
    }
    let scale = 1.0 / n as f64;
    let mut loss = 0.0;
    let mut grad = vec![0.0; n];
    for t in 0..n {
        let (v, r) = (values[t], targets[t]);
        let plain = 0.5 * (v - r).powi(2);
        if clip <= 0.0 {
            loss += plain;
            grad[t] = (v - r) * scale;
            continue;
        }
        let delta = v - old_values[t];
        let v_clip = old_values[t] + delta.clamp(-clip, clip);
        let clipped = 0.5 * (v_clip - r).powi(2);
        if plain >= clipped {
            loss += plain;
            grad[t] = (v - r) * scale;
        } else {
            loss += clipped;
            // d v_clip / d v is 1 inside the range, 0 outside.
            grad[t] = if delta.abs() < clip {
                (v_clip - r) * scale
            } else {
                0.0
            };
        }
    }
    Ok((loss * scale, grad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_loss_by_hand() {
        // Step 0: v 1.0, old 0.5, R 0, clip 0.2: v_clip = 0.7; plain 0.5, clipped 0.245 ->
        //   plain selected, grad (1 - 0) = 1.
        // Step 1: v 0.0, old 0.5, R 1: v_clip = 0.3; plain 0.5, clipped 0.245 -> plain,
        //   grad -1.
        // Step 2: v 1.5, old 0.5, R 2: v_clip 0.7; plain 0.125, clipped 0.845 -> clipped,
        //   outside the range -> grad 0.
        // loss = (0.5 + 0.5 + 0.845) / 3; grads scaled by 1/3.
        let (l, g) =
            clipped_value_loss(&[1.0, 0.0, 1.5], &[0.5, 0.5, 0.5], &[0.0, 1.0, 2.0], 0.2).unwrap();
        assert!((l - 1.845 / 3.0).abs() < 1e-12);
        assert!(
            (g[0] - 1.0 / 3.0).abs() < 1e-12 && (g[1] + 1.0 / 3.0).abs() < 1e-12 && g[2] == 0.0
        );
    }

    #[test]
    fn value_gradient_matches_finite_differences() {
        // Points away from the kinks (|v - v_old| = clip and equal squared errors).
        let old = [0.5, 0.5, 0.5, -1.0];
        let tgt = [0.0, 1.0, 2.0, 0.3];
        let v = [1.0, 0.1, 1.5, -0.95];
        let h = 1e-6;
        for clip in [0.0, 0.2] {
            let (_, g) = clipped_value_loss(&v, &old, &tgt, clip).unwrap();
            for t in 0..v.len() {
                let mut up = v;
                up[t] += h;
                let mut down = v;
                down[t] -= h;
                let fd = (clipped_value_loss(&up, &old, &tgt, clip).unwrap().0
                    - clipped_value_loss(&down, &old, &tgt, clip).unwrap().0)
                    / (2.0 * h);
                assert!(
                    (fd - g[t]).abs() < 1e-7,
                    "clip {clip} step {t}: fd {fd} vs {}",
                    g[t]
                );
            }
        }
    }
}
