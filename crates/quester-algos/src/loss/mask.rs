//! Low-probability masking (EMPO2): responses containing a very unlikely sampled token are
//! dropped from the loss, since their importance ratios are unreliable.

/// True when every behaviour log-prob is at least `min_logp` (the response is kept); `None`
/// keeps everything.
pub fn keep_response(old_logp: &[f64], min_logp: Option<f64>) -> bool {
    match min_logp {
        None => true,
        Some(m) => old_logp.iter().all(|&lp| lp >= m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_on_the_minimum_only() {
        assert!(keep_response(&[-0.1, -4.9], Some(-5.0)));
        assert!(!keep_response(&[-0.1, -5.1, -0.2], Some(-5.0)));
        assert!(keep_response(&[-50.0], None));
        assert!(keep_response(&[], Some(-5.0)));
    }
}
