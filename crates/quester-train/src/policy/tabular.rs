//! A tabular softmax policy: for every distinct prompt it keeps one logit per candidate response
//! and samples a whole response as one "token". It is the smallest trainable policy on which the
//! rollout engine, the returns, the advantages and the PPO loss can be checked to LEARN in
//! seconds (a tiny transformer needs minutes for the same signal). Plain SGD on the logits.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::{
    ChatMessage, GenRequest, Generation, LossValue, Policy, SamplingParams, TrainSeq,
    TrainablePolicy, UpdateStats,
};
use crate::error::TrainError;

/// See the module doc.
#[derive(Debug, Clone, PartialEq)]
pub struct TabularPolicy {
    candidates: Vec<String>,
    lr: f64,
    grad_clip: f64,
    adam: bool,
    index: HashMap<String, usize>,
    state: TabularState,
}

/// The saved part: interned prompts (in first-seen order) and their logits.
#[derive(Debug, Clone, PartialEq, Default)]
struct TabularState {
    prompts: Vec<String>,
    logits: Vec<Vec<f64>>,
    /// Adam moments and step count (unused with SGD).
    m: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    t: u64,
}

/// The file form of [`TabularState`].
#[derive(Serialize, Deserialize)]
struct SavedState {
    prompts: Vec<String>,
    logit_bits: Vec<Vec<u64>>,
    m_bits: Vec<Vec<u64>>,
    v_bits: Vec<Vec<u64>>,
    t: u64,
}

fn to_bits(x: &[Vec<f64>]) -> Vec<Vec<u64>> {
    x.iter()
        .map(|l| l.iter().map(|v| v.to_bits()).collect())
        .collect()
}

fn from_bits(x: &[Vec<u64>]) -> Vec<Vec<f64>> {
    x.iter()
        .map(|l| l.iter().map(|&b| f64::from_bits(b)).collect())
        .collect()
}

const FILE: &str = "tabular_policy.json";

impl TabularPolicy {
    /// A policy over `candidates` with all logits zero (uniform), trained with SGD at `lr` and
    /// global gradient-norm clipping at `grad_clip` (0 = none).
    pub fn new(candidates: Vec<String>, lr: f64, grad_clip: f64) -> Self {
        Self {
            candidates,
            lr,
            grad_clip,
            adam: false,
            index: HashMap::new(),
            state: TabularState::default(),
        }
    }

    /// Uses Adam (beta1 0.9, beta2 0.999, eps 1e-8; per-logit normalised steps, as a real
    /// model's optimiser) instead of plain SGD.
    pub(crate) fn with_adam(mut self) -> Self {
        self.adam = true;
        self
    }

    fn intern(&mut self, prompt: String) -> usize {
        if let Some(&i) = self.index.get(&prompt) {
            return i;
        }
        let i = self.state.prompts.len();
        self.index.insert(prompt.clone(), i);
        self.state.prompts.push(prompt);
        self.state.logits.push(vec![0.0; self.candidates.len()]);
        self.state.m.push(vec![0.0; self.candidates.len()]);
        self.state.v.push(vec![0.0; self.candidates.len()]);
        i
    }

    /// The probabilities (temperature 1) of every candidate after `prompt`; uniform if unseen.
    pub fn probabilities(&self, prompt: &str) -> Vec<f64> {
        match self.index.get(prompt) {
            Some(&i) => softmax(&self.state.logits[i], 1.0),
            None => vec![1.0 / self.candidates.len() as f64; self.candidates.len()],
        }
    }

    /// Every prompt seen so far.
    pub fn prompts(&self) -> &[String] {
        &self.state.prompts
    }

    /// The flattened logits (tests compare them before and after an update).
    pub fn logits(&self) -> Vec<f64> {
        self.state.logits.iter().flatten().copied().collect()
    }

    fn lookup(&self, seq: &TrainSeq<'_>) -> Result<(usize, usize), TrainError> {
        let (Some(&s), Some(&a)) = (seq.prompt_ids.first(), seq.response_ids.first()) else {
            return Err(TrainError::Policy(
                "tabular: empty prompt or response ids".into(),
            ));
        };
        let (s, a) = (s as usize, a as usize);
        if s >= self.state.logits.len() || a >= self.candidates.len() {
            return Err(TrainError::Policy(format!(
                "tabular: unknown state {s} or action {a}"
            )));
        }
        Ok((s, a))
    }
}

/// The prompt key: every message, role-tagged, then the forced response opening.
fn prompt_key(messages: &[ChatMessage], prefix: &str) -> String {
    let mut key = String::new();
    for m in messages {
        key.push_str(&m.role);
        key.push_str(": ");
        key.push_str(&m.content);
        key.push('\n');
    }
    key.push_str(prefix);
    key
}

fn softmax(logits: &[f64], temperature: f64) -> Vec<f64> {
    let scaled: Vec<f64> = logits.iter().map(|l| l / temperature).collect();
    let max = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scaled.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}

/// The distribution actually sampled from: temperature, then top-k, then top-p, renormalised.
fn sampling_distribution(logits: &[f64], p: &SamplingParams) -> Vec<f64> {
    let mut probs = softmax(logits, p.temperature);
    let mut order: Vec<usize> = (0..probs.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    let mut keep = vec![false; probs.len()];
    let mut mass = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        if p.top_k > 0 && rank >= p.top_k {
            break;
        }
        keep[i] = true;
        mass += probs[i];
        if mass >= p.top_p {
            break;
        }
    }
    for (pr, k) in probs.iter_mut().zip(&keep) {
        if !k {
            *pr = 0.0;
        }
    }
    let total: f64 = probs.iter().sum();
    probs.iter().map(|x| x / total).collect()
}

impl Policy for TabularPolicy {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let mut out = Vec::with_capacity(requests.len());
        for req in requests {
            if req.prompt_ids.is_some() {
                return Err(TrainError::Policy(
                    "the tabular policy has no tokenizer: send a conversation, not token ids"
                        .into(),
                ));
            }
            let params = &req.params;
            let s = self.intern(prompt_key(&req.messages, &req.response_prefix));
            let logits = &self.state.logits[s];
            let (a, logp) = if params.temperature <= 0.0 {
                let a = (0..logits.len())
                    .max_by(|&x, &y| logits[x].total_cmp(&logits[y]).then(y.cmp(&x)))
                    .unwrap_or(0);
                (a, 0.0)
            } else {
                let dist = sampling_distribution(logits, params);
                let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
                let u: f64 = rng.random();
                let mut acc = 0.0;
                let mut pick = dist.len() - 1;
                for (i, q) in dist.iter().enumerate() {
                    acc += q;
                    if u < acc && *q > 0.0 {
                        pick = i;
                        break;
                    }
                }
                (pick, dist[pick].ln())
            };
            out.push(Generation {
                text: self.candidates[a].clone(),
                prompt_ids: vec![s as u32],
                response_ids: vec![a as u32],
                logprobs: vec![logp as f32],
                temperatures: vec![params.temperature as f32],
            });
        }
        Ok(out)
    }

    /// One id per distinct prompt (interned), as `generate` records it.
    fn encode(
        &mut self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        Ok(vec![
            self.intern(prompt_key(messages, response_prefix)) as u32
        ])
    }
}

impl TrainablePolicy for TabularPolicy {
    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError> {
        batch
            .iter()
            .map(|seq| {
                let (s, a) = self.lookup(seq)?;
                Ok(vec![softmax(&self.state.logits[s], 1.0)[a].ln()])
            })
            .collect()
    }

    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError> {
        let idx: Vec<(usize, usize)> = batch
            .iter()
            .map(|s| self.lookup(s))
            .collect::<Result<_, _>>()?;
        let probs: Vec<Vec<f64>> = idx
            .iter()
            .map(|&(s, _)| softmax(&self.state.logits[s], 1.0))
            .collect();
        let logps: Vec<Vec<f64>> = idx
            .iter()
            .zip(&probs)
            .map(|(&(_, a), p)| vec![p[a].ln()])
            .collect();
        let lv = loss_fn(&logps);
        let n = batch.len().max(1) as f64;
        let mut grads: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        let mut entropy_sum = 0.0;
        for (k, &(s, a)) in idx.iter().enumerate() {
            let p = &probs[k];
            let coef = lv
                .dlogp
                .get(k)
                .and_then(|v| v.first())
                .copied()
                .unwrap_or(f64::NAN);
            let h: f64 = -p
                .iter()
                .filter(|&&x| x > 0.0)
                .map(|x| x * x.ln())
                .sum::<f64>();
            entropy_sum += h;
            let g = grads.entry(s).or_insert_with(|| vec![0.0; p.len()]);
            for j in 0..p.len() {
                let onehot = if j == a { 1.0 } else { 0.0 };
                // d logp_a / dz_j = onehot - p_j ; d(-c*H/n)/dz_j = c/n * p_j (ln p_j + H).
                let lnp = if p[j] > 0.0 { p[j].ln() } else { 0.0 };
                g[j] += coef * (onehot - p[j]) + entropy_coef / n * p[j] * (lnp + h);
            }
        }
        let entropy = entropy_sum / n;
        let loss = lv.loss - entropy_coef * entropy;
        let norm = grads.values().flatten().map(|x| x * x).sum::<f64>().sqrt();
        if !loss.is_finite() || !norm.is_finite() {
            tracing::warn!(
                loss,
                grad_norm = norm,
                "non-finite loss or gradient: update skipped"
            );
            return Ok(UpdateStats {
                loss,
                grad_norm: norm,
                entropy,
                skipped_nonfinite: true,
            });
        }
        let scale = if self.grad_clip > 0.0 && norm > self.grad_clip {
            self.grad_clip / norm
        } else {
            1.0
        };
        if self.adam {
            let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
            self.state.t += 1;
            let t = self.state.t as i32;
            let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
            let st = &mut self.state;
            for s in 0..st.logits.len() {
                let g = grads.get(&s);
                for j in 0..st.logits[s].len() {
                    let gj = g.map_or(0.0, |g| g[j] * scale);
                    st.m[s][j] = b1 * st.m[s][j] + (1.0 - b1) * gj;
                    st.v[s][j] = b2 * st.v[s][j] + (1.0 - b2) * gj * gj;
                    st.logits[s][j] -=
                        self.lr * (st.m[s][j] / c1) / ((st.v[s][j] / c2).sqrt() + eps);
                }
            }
        } else {
            for (s, g) in grads {
                for (z, gj) in self.state.logits[s].iter_mut().zip(g) {
                    *z -= self.lr * scale * gj;
                }
            }
        }
        Ok(UpdateStats {
            loss,
            grad_norm: norm,
            entropy,
            skipped_nonfinite: false,
        })
    }

    fn save(&self, dir: &Path) -> Result<(), TrainError> {
        let path = dir.join(FILE);
        // Logits as IEEE bit patterns: a decimal round trip is not guaranteed bit-exact.
        let saved = SavedState {
            prompts: self.state.prompts.clone(),
            logit_bits: to_bits(&self.state.logits),
            m_bits: to_bits(&self.state.m),
            v_bits: to_bits(&self.state.v),
            t: self.state.t,
        };
        let text = serde_json::to_string(&saved)
            .map_err(|e| TrainError::Policy(format!("tabular save: {e}")))?;
        std::fs::write(&path, text).map_err(|e| TrainError::io(&path, e))
    }

    fn load(&mut self, dir: &Path) -> Result<(), TrainError> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| TrainError::io(&path, e))?;
        let saved: SavedState = serde_json::from_str(&text).map_err(|e| TrainError::Corrupt {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let state = TabularState {
            prompts: saved.prompts,
            logits: from_bits(&saved.logit_bits),
            m: from_bits(&saved.m_bits),
            v: from_bits(&saved.v_bits),
            t: saved.t,
        };
        let n = state.prompts.len();
        if state.logits.len() != n
            || state.m.len() != n
            || state.v.len() != n
            || state
                .logits
                .iter()
                .chain(&state.m)
                .chain(&state.v)
                .any(|l| l.len() != self.candidates.len())
        {
            return Err(TrainError::Corrupt {
                path: path.display().to_string(),
                message: "shape does not match the configured candidates".into(),
            });
        }
        self.index = state
            .prompts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i))
            .collect();
        self.state = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ChatMessage;

    fn params(t: f64) -> SamplingParams {
        SamplingParams {
            temperature: t,
            max_new_tokens: 8,
            ..SamplingParams::default()
        }
    }

    fn request(seed: u64) -> GenRequest {
        GenRequest {
            messages: vec![ChatMessage::user("x")],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                seed,
                ..params(1.0)
            },
        }
    }

    #[test]
    fn top_k_and_top_p_renormalise() {
        // logits ln(0.5), ln(0.3), ln(0.2): top_k 2 keeps 0.5, 0.3 -> 0.625, 0.375.
        let l = [0.5f64.ln(), 0.3f64.ln(), 0.2f64.ln()];
        let d = sampling_distribution(
            &l,
            &SamplingParams {
                top_k: 2,
                ..params(1.0)
            },
        );
        assert!((d[0] - 0.625).abs() < 1e-12 && (d[1] - 0.375).abs() < 1e-12 && d[2] == 0.0);
        // top_p 0.6: 0.5 < 0.6 so 0.3 is also kept.
        let d = sampling_distribution(
            &l,
            &SamplingParams {
                top_p: 0.6,
                ..params(1.0)
            },
        );
        assert!(d[2] == 0.0 && (d[0] - 0.625).abs() < 1e-12);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        // Loss = -A * logp(a) with A = 1.5 for one sample, plus entropy bonus 0.1.
        let mut pol = TabularPolicy::new(vec!["a".into(), "b".into(), "c".into()], 1.0, 0.0);
        let req = request(3);
        pol.generate(std::slice::from_ref(&req)).unwrap();
        pol.state.logits[0] = vec![0.3, -0.2, 0.1];
        let before = pol.state.logits[0].clone();
        let objective = |z: &[f64]| {
            let p = softmax(z, 1.0);
            let h: f64 = -p.iter().map(|x| x * x.ln()).sum::<f64>();
            -1.5 * p[1].ln() - 0.1 * h
        };
        let ids = ([0u32], [1u32]);
        let seq = TrainSeq {
            prompt_ids: &ids.0,
            response_ids: &ids.1,
            current_logprobs: None,
        };
        pol.update(
            &[seq],
            &mut |lp| LossValue {
                loss: -1.5 * lp[0][0],
                dlogp: vec![vec![-1.5]],
            },
            0.1,
        )
        .unwrap();
        for j in 0..3 {
            let grad = before[j] - pol.state.logits[0][j]; // lr = 1
            let mut zp = before.clone();
            zp[j] += 1e-6;
            let mut zm = before.clone();
            zm[j] -= 1e-6;
            let fd = (objective(&zp) - objective(&zm)) / 2e-6;
            assert!((grad - fd).abs() < 1e-6, "{j}: {grad} vs {fd}");
        }
    }

    #[test]
    fn nan_loss_skips_and_keeps_weights() {
        let mut pol = TabularPolicy::new(vec!["a".into(), "b".into()], 1.0, 1.0);
        let req = request(1);
        let g = pol.generate(&[req]).unwrap();
        let before = pol.logits();
        let seq = TrainSeq {
            prompt_ids: &g[0].prompt_ids,
            response_ids: &g[0].response_ids,
            current_logprobs: None,
        };
        let st = pol
            .update(
                &[seq],
                &mut |_| LossValue {
                    loss: f64::NAN,
                    dlogp: vec![vec![f64::NAN]],
                },
                0.0,
            )
            .unwrap();
        assert!(st.skipped_nonfinite);
        assert_eq!(before, pol.logits());
    }

    #[test]
    fn save_load_round_trip() {
        let mut pol = TabularPolicy::new(vec!["a".into(), "b".into()], 1.0, 1.0);
        let req = request(1);
        pol.generate(&[req]).unwrap();
        pol.state.logits[0] = vec![0.123456789012345, -1.0 / 3.0];
        let dir = std::env::temp_dir().join(format!("quester-tab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        pol.save(&dir).unwrap();
        let mut other = TabularPolicy::new(vec!["a".into(), "b".into()], 1.0, 1.0);
        other.load(&dir).unwrap();
        assert_eq!(other, pol);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
