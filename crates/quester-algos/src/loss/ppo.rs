//! The PPO clipped surrogate for one token, with asymmetric clip and dual clip.

/// Loss of one token and its derivative with respect to the token's new log-prob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenTerm {
    /// The per-token loss (to be minimised).
    pub loss: f64,
    /// `d loss / d logp_new`.
    pub grad: f64,
    /// True when the ratio clip took over (gradient 0).
    pub clipped: bool,
    /// True when the dual clip took over (gradient 0).
    pub dual_clipped: bool,
}

/// PPO clipped surrogate for one token, with `rho = exp(logp - old_logp)`:
/// `L = max(-A rho, -A clip(rho, 1 - clip_low, 1 + clip_high))`, and for `A < 0` with a dual
/// clip `c > 1`: `L = min(L, -A c)`. `dual_clip <= 1` disables the dual clip.
///
/// Gradient: `-A rho` where the unclipped term is selected, else 0 (`d rho / d logp = rho`). At
/// exact ties the unclipped term is taken.
pub fn ppo_token(
    logp: f64,
    old_logp: f64,
    advantage: f64,
    clip_low: f64,
    clip_high: f64,
    dual_clip: f64,
) -> TokenTerm {
    let rho = (logp - old_logp).exp();
    let unclipped = -advantage * rho;
    let clipped_value = -advantage * rho.clamp(1.0 - clip_low, 1.0 + clip_high);
    let (mut loss, mut grad, mut clipped) = if unclipped >= clipped_value {
        (unclipped, -advantage * rho, false)
    } else {
        (clipped_value, 0.0, true)
    };
    let mut dual_clipped = false;
    if advantage < 0.0 && dual_clip > 1.0 {
        let cap = -advantage * dual_clip;
        if cap < loss {
            loss = cap;
            grad = 0.0;
            dual_clipped = true;
            clipped = false;
        }
    }
    TokenTerm {
        loss,
        grad,
        clipped,
        dual_clipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ratio(rho: f64, a: f64) -> TokenTerm {
        ppo_token(rho.ln(), 0.0, a, 0.2, 0.3, 3.0)
    }

    #[test]
    fn inside_the_clip_range() {
        // rho 1.1, A 2: L = -2.2, dL/dlogp = -A rho = -2.2.
        let t = at_ratio(1.1, 2.0);
        assert!((t.loss + 2.2).abs() < 1e-12 && (t.grad + 2.2).abs() < 1e-12 && !t.clipped);
    }

    #[test]
    fn asymmetric_clip_for_positive_advantage() {
        // rho 1.5 > 1 + 0.3, A 1: max(-1.5, -1.3) = -1.3, clipped, grad 0.
        let t = at_ratio(1.5, 1.0);
        assert!((t.loss + 1.3).abs() < 1e-12 && t.grad == 0.0 && t.clipped);
        // rho 1.25 < 1.3 is inside with clip_high 0.3 (it would be clipped at 0.2).
        let t = at_ratio(1.25, 1.0);
        assert!((t.loss + 1.25).abs() < 1e-12 && !t.clipped);
        // rho 0.5, A 1: max(-0.5, -0.8) = -0.5, unclipped (pessimistic side), grad -0.5.
        let t = at_ratio(0.5, 1.0);
        assert!((t.loss + 0.5).abs() < 1e-12 && (t.grad + 0.5).abs() < 1e-12);
    }

    #[test]
    fn negative_advantage_clip_and_dual_clip() {
        // rho 0.5, A -1: max(0.5, 0.8) = 0.8 clipped at 1 - 0.2, grad 0.
        let t = at_ratio(0.5, -1.0);
        assert!((t.loss - 0.8).abs() < 1e-12 && t.grad == 0.0 && t.clipped);
        // rho 2, A -1: max(2, 1.3) = 2 (unclipped, grad -A rho = 2); 2 < c = 3 so no dual clip.
        let t = at_ratio(2.0, -1.0);
        assert!((t.loss - 2.0).abs() < 1e-12 && (t.grad - 2.0).abs() < 1e-12);
        // rho 5, A -1: max(5, 1.3) = 5 > c = 3 -> dual clip to 3, grad 0.
        let t = at_ratio(5.0, -1.0);
        assert!((t.loss - 3.0).abs() < 1e-12 && t.grad == 0.0 && t.dual_clipped);
        // without the dual clip the loss stays 5.
        let t = ppo_token(5f64.ln(), 0.0, -1.0, 0.2, 0.3, 0.0);
        assert!((t.loss - 5.0).abs() < 1e-12 && (t.grad - 5.0).abs() < 1e-12);
        // the dual clip never applies to positive advantages: rho 5, A 1 -> -1.3.
        let t = at_ratio(5.0, 1.0);
        assert!((t.loss + 1.3).abs() < 1e-12 && !t.dual_clipped);
    }
}
