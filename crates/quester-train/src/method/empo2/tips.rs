//! EMPO2's texts and draws, as pure functions: the step's mode, the tip block added to a
//! prompt (and removed again for the tip-free training context), the key text of a state, the
//! tip request and the content stored for each step of an episode.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::rng::{derive, purpose};

/// What one training step does with the memory (one draw for the whole batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Roll out with tips, train on the prompts without them.
    OffPolicy,
    /// Roll out and train with tips.
    OnPolicyTips,
    /// Neither: a plain GRPO step (tips are still written afterwards).
    Plain,
}

impl Mode {
    /// The metric / log name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::OffPolicy => "off_policy",
            Mode::OnPolicyTips => "on_policy_tips",
            Mode::Plain => "plain",
        }
    }

    /// Whether prompts of this mode are shown retrieved tips.
    pub(crate) fn uses_tips(self) -> bool {
        self != Mode::Plain
    }
}

/// The mode of training step `step`: u ~ U(0, 1) from the run's seed and the step, then
/// `u < off_policy_below` off-policy, `u < with_tips_below` on-policy with tips, else plain.
pub(crate) fn draw_mode(
    seed: u64,
    step: usize,
    off_policy_below: f64,
    with_tips_below: f64,
) -> Mode {
    let mut rng = ChaCha8Rng::seed_from_u64(derive(seed, &[purpose::EMPO2_MODE, step as u64]));
    let u: f64 = rng.random();
    mode_of(u, off_policy_below, with_tips_below)
}

/// The mode a draw `u` in [0, 1) falls in.
pub(crate) fn mode_of(u: f64, off_policy_below: f64, with_tips_below: f64) -> Mode {
    if u < off_policy_below {
        Mode::OffPolicy
    } else if u < with_tips_below {
        Mode::OnPolicyTips
    } else {
        Mode::Plain
    }
}

/// The block appended to a prompt that retrieved `contents` (empty when none were): the
/// reference's `<tip>` span, opened and closed by blank lines.
pub(crate) fn tip_block(header: &str, contents: &[&str]) -> String {
    if contents.is_empty() {
        return String::new();
    }
    format!("\n\n<tip> {header}\n{}\n</tip>\n\n", contents.join("\n"))
}

/// The prompt without the block a hook appended to it; None when `prompt` does not end with
/// `block` (the sample was not shown it).
pub(crate) fn without_block<'a>(prompt: &'a str, block: &str) -> Option<&'a str> {
    if block.is_empty() {
        return Some(prompt);
    }
    prompt.strip_suffix(block)
}

/// The text a state is embedded as: the chat rendered as `role: content` lines, system
/// messages dropped. Our play turns are one user message (the history is inside it).
pub(crate) fn key_text(prompt: &str) -> String {
    format!("user: {prompt}")
}

/// The tip itself from a generated reply: its first non-empty line, trimmed and cut to
/// `max_chars` characters; None when the reply is blank.
pub(crate) fn tip_of(reply: &str, max_chars: usize) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(max_chars).collect())
}

/// What the memory stores for step i of an episode: the tip, the action taken at that step,
/// and the episode's final score out of the most it could be.
pub(crate) fn content(tip: &str, action: &str, score: f64, score_max: f64) -> String {
    format!(
        "{tip}; at that timestep the action taken was {action}; eventually the score was {}/{}",
        number(score),
        number(score_max)
    )
}

/// A score as a short number (`1`, `0.5`, `-0.25`).
fn number(x: f64) -> String {
    let s = format!("{:.3}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The intrinsic (novelty) reward of a prompt that retrieved `n` tips: 1 / (n + 1).
pub(crate) fn novelty(n: usize) -> f64 {
    1.0 / (n as f64 + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_thresholds() {
        assert_eq!(mode_of(0.0, 0.17, 0.25), Mode::OffPolicy);
        assert_eq!(mode_of(0.169, 0.17, 0.25), Mode::OffPolicy);
        assert_eq!(mode_of(0.17, 0.17, 0.25), Mode::OnPolicyTips);
        assert_eq!(mode_of(0.249, 0.17, 0.25), Mode::OnPolicyTips);
        assert_eq!(mode_of(0.25, 0.17, 0.25), Mode::Plain);
        assert_eq!(mode_of(0.99, 0.0, 0.0), Mode::Plain);
        assert_eq!(mode_of(0.99, 1.0, 1.0), Mode::OffPolicy);
    }

    #[test]
    fn the_mode_draw_is_seeded_and_has_the_configured_shares() {
        let a: Vec<Mode> = (0..50).map(|s| draw_mode(3, s, 0.17, 0.25)).collect();
        let b: Vec<Mode> = (0..50).map(|s| draw_mode(3, s, 0.17, 0.25)).collect();
        assert_eq!(a, b);
        let c: Vec<Mode> = (0..50).map(|s| draw_mode(4, s, 0.17, 0.25)).collect();
        assert_ne!(a, c, "another run seed draws other modes");
        let n = 4000;
        let count = |m: Mode| (0..n).filter(|&s| draw_mode(1, s, 0.17, 0.25) == m).count();
        let off = count(Mode::OffPolicy) as f64 / n as f64;
        let tips = count(Mode::OnPolicyTips) as f64 / n as f64;
        assert!((off - 0.17).abs() < 0.02, "off-policy share {off}");
        assert!((tips - 0.08).abs() < 0.015, "with-tips share {tips}");
    }

    #[test]
    fn the_block_comes_off_exactly() {
        let block = tip_block("Memories:", &["a; x", "b; y"]);
        assert_eq!(block, "\n\n<tip> Memories:\na; x\nb; y\n</tip>\n\n");
        let prompt = format!("Task: go.{block}");
        assert_eq!(without_block(&prompt, &block), Some("Task: go."));
        assert_eq!(without_block("Task: go.", &block), None);
        assert_eq!(tip_block("Memories:", &[]), "");
        assert_eq!(without_block("Task: go.", ""), Some("Task: go."));
    }

    #[test]
    fn tips_and_contents() {
        assert_eq!(
            tip_of("\n  I opened the door; the kitchen is east.  \nmore", 100).as_deref(),
            Some("I opened the door; the kitchen is east.")
        );
        assert_eq!(tip_of("abcdef", 3).as_deref(), Some("abc"));
        assert_eq!(tip_of(" \n\t\n", 10), None);
        assert_eq!(
            content("Went north.", "go north", 0.5, 1.0),
            "Went north.; at that timestep the action taken was go north; eventually the \
             score was 0.5/1"
        );
        assert_eq!(number(-0.0001), "0");
        assert_eq!(number(100.0), "100");
        assert_eq!(number(-0.25), "-0.25");
        assert_eq!(key_text("Task"), "user: Task");
        assert_eq!(novelty(0), 1.0);
        assert_eq!(novelty(3), 0.25);
    }
}
