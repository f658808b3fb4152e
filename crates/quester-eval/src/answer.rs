//! Answers a list of single-turn prompts with any policy, batched: how `quester evaluate ifeval`
//! generates its responses (the native model, a checkpoint, or an OpenAI-compatible server).
//!
//! Prompts are sent as one user message each, with no system prompt and no forced opening, as
//! lm-evaluation-harness sends IFEval's. They are sent in order of prompt length (less padding
//! waste where prompts are prefilled together) and returned in input order.
//! Every response has its own seed derived from `seed` and its index, so a response does not
//! depend on the batch it ran in.

use quester_train::policy::{ChatMessage, GenRequest, Orders, Policy, SamplingParams};
use quester_train::rng::derive;
use quester_train::TrainError;

/// How the responses are generated. Defaults are lm-evaluation-harness's IFEval settings:
/// greedy, up to 1280 new tokens, no stop strings.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerOptions {
    pub max_new_tokens: usize,
    /// 0 = greedy.
    pub temperature: f64,
    pub top_p: f64,
    /// Most prompts in generation at once.
    pub batch: usize,
    pub seed: u64,
}

impl Default for AnswerOptions {
    fn default() -> Self {
        Self {
            max_new_tokens: 1280,
            temperature: 0.0,
            top_p: 1.0,
            batch: 32,
            seed: 0,
        }
    }
}

/// One answered prompt.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    pub response: String,
    /// New tokens (0 when the policy does not report token ids, e.g. a remote server).
    pub new_tokens: usize,
    /// The response ended at the token limit rather than at an end-of-sequence token.
    pub truncated: bool,
}

/// Receives answers with their indices into the prompts, as they come.
pub type BatchSink<'a> = dyn FnMut(&[(usize, Answer)]) -> Result<(), TrainError> + 'a;

/// The answers to `prompts`, in order. At most `opts.batch` prompts are in generation at once;
/// on a policy that schedules per token step (the native model) an answer that ends frees its
/// place for the next prompt at once, otherwise they go in batches of `opts.batch`. Whenever
/// answers come back `on_batch` gets them with their indices into `prompts` (to save them as
/// they come) and may fail the run.
pub fn answer_prompts(
    policy: &mut dyn Policy,
    prompts: &[String],
    opts: &AnswerOptions,
    on_batch: &mut BatchSink<'_>,
) -> Result<Vec<Answer>, TrainError> {
    if opts.batch == 0 {
        return Err(TrainError::Config("batch: must be at least 1".into()));
    }
    // Similar lengths together: the prompt's byte length stands in for its token count.
    let mut order: Vec<usize> = (0..prompts.len()).collect();
    order.sort_by_key(|&i| (prompts[i].len(), i));
    let request = |i: usize| {
        let r = GenRequest {
            messages: vec![ChatMessage::user(prompts[i].clone())],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                temperature: opts.temperature,
                top_p: opts.top_p,
                top_k: 0,
                max_new_tokens: opts.max_new_tokens,
                stop: Vec::new(),
                seed: derive(opts.seed, &[i as u64]),
                ..SamplingParams::default()
            },
        };
        (i as u64, r)
    };
    let mut queue = order.into_iter();
    let first: Vec<_> = queue.by_ref().take(opts.batch).map(request).collect();
    let mut out: Vec<Option<Answer>> = vec![None; prompts.len()];
    policy.generate_continuous(first, &mut |step| {
        let answers: Vec<(usize, Answer)> = step
            .finished
            .into_iter()
            .map(|(key, g)| {
                let n = g.response_ids.len();
                let answer = Answer {
                    response: g.text,
                    new_tokens: n,
                    truncated: n >= opts.max_new_tokens,
                };
                (key as usize, answer)
            })
            .collect();
        if answers.is_empty() {
            return Ok(Orders::default());
        }
        on_batch(&answers)?;
        // Every answer frees a place for the next prompt.
        let submit = queue.by_ref().take(answers.len()).map(request).collect();
        for (i, a) in answers {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(a);
            }
        }
        Ok(Orders {
            submit,
            cancel: Vec::new(),
        })
    })?;
    out.into_iter()
        .enumerate()
        .map(|(i, a)| a.ok_or_else(|| TrainError::Policy(format!("prompt {i} was never answered"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quester_train::policy::Generation;

    /// Answers each prompt with itself and its seed, one token per character; records the
    /// batch sizes it was asked for.
    struct Echo(Vec<usize>);

    impl Policy for Echo {
        fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
            self.0.push(requests.len());
            Ok(requests
                .iter()
                .map(|r| {
                    let text = format!("{}#{}", r.messages[0].content, r.params.seed);
                    Generation {
                        response_ids: vec![0; r.messages[0].content.len()],
                        text,
                        ..Generation::default()
                    }
                })
                .collect())
        }
    }

    #[test]
    fn answers_come_back_in_input_order_with_seeds_independent_of_the_batch() {
        let prompts: Vec<String> = ["ccc", "a", "bbbb", "dd", "e"].map(String::from).to_vec();
        let opts = |batch| AnswerOptions {
            max_new_tokens: 3,
            batch,
            ..AnswerOptions::default()
        };
        let mut seen = Vec::new();
        let mut echo = Echo(Vec::new());
        let by_two = answer_prompts(&mut echo, &prompts, &opts(2), &mut |b| {
            seen.extend(b.iter().map(|(i, _)| *i));
            Ok(())
        })
        .unwrap();
        // Shortest prompts first, in batches of two.
        assert_eq!(echo.0, vec![2, 2, 1]);
        assert_eq!(seen, vec![1, 4, 3, 0, 2]);
        for (p, a) in prompts.iter().zip(&by_two) {
            assert!(a.response.starts_with(&format!("{p}#")), "{a:?}");
            assert_eq!(a.truncated, p.len() >= 3);
        }
        let one_batch =
            answer_prompts(&mut Echo(Vec::new()), &prompts, &opts(8), &mut |_| Ok(())).unwrap();
        assert_eq!(by_two, one_batch);
    }

    #[test]
    fn a_zero_batch_is_an_error_not_a_panic() {
        let err = answer_prompts(
            &mut Echo(Vec::new()),
            &["a".to_string()],
            &AnswerOptions {
                batch: 0,
                ..AnswerOptions::default()
            },
            &mut |_| Ok(()),
        )
        .unwrap_err();
        assert!(err.to_string().contains("batch"), "{err}");
    }
}
