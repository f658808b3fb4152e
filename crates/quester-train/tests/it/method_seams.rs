//! The method seams: a method's state goes into every checkpoint and comes back on resume (a
//! killed run continues with identical metrics); a sample's old log-probs are rescored exactly
//! when its record says they are not the current policy's; a method can train a response under
//! another context.

use quester_train::api::{build_policy, env_factory};
use quester_train::method::{Common, TrainingMethod};
use quester_train::policy::tabular::TabularPolicy;
use quester_train::policy::{
    ChatMessage, GenRequest, Generation, LossValue, Policy, TrainSeq, TrainablePolicy, UpdateStats,
};
use quester_train::prompts::PromptTemplates;
use quester_train::rollout::RolloutSpec;
use quester_train::sample::{Sample, Trial};
use quester_train::trainer::Trainer;
use quester_train::{TrainConfig, TrainError};
use serde_json::{json, Map, Value};
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

/// LaMer on the bandit, plus a state: the number of won trials seen so far. The state feeds a
/// metric, so a resume that lost it would log a different number.
struct Counting {
    common: Common,
    wins: u64,
    /// Train every play response under a prompt with this prefix (None: the sampled one).
    retrain_prefix: Option<String>,
}

impl TrainingMethod for Counting {
    fn common(&self) -> &Common {
        &self.common
    }
    fn train_spec(&self) -> RolloutSpec {
        self.common.trial_spec(false)
    }
    fn eval_spec(&self) -> RolloutSpec {
        self.common.trial_spec(true)
    }
    fn training_context(&self, sample: &Sample) -> Option<(Vec<ChatMessage>, String)> {
        self.retrain_prefix.as_ref().map(|p| {
            (
                vec![ChatMessage::user(format!("{p}{}", sample.prompt))],
                String::new(),
            )
        })
    }
    fn after_step(&mut self, _step: usize, trials: &[Trial]) {
        self.wins += trials.iter().filter(|t| t.won_within(2)).count() as u64;
    }
    fn train_metrics(&self, _trials: &[Trial], row: &mut Map<String, Value>) {
        row.insert("wins_so_far".into(), json!(self.wins));
    }
    fn state(&self) -> Value {
        json!({ "wins": self.wins })
    }
    fn restore(&mut self, state: &Value) -> Result<(), TrainError> {
        self.wins = state["wins"].as_u64().unwrap_or(0);
        Ok(())
    }
}

fn counting(cfg: &TrainConfig, retrain_prefix: Option<&str>) -> Box<Counting> {
    Box::new(Counting {
        common: Common {
            cfg: cfg.clone(),
            templates: PromptTemplates::from_config(cfg).unwrap(),
        },
        wins: 0,
        retrain_prefix: retrain_prefix.map(str::to_string),
    })
}

fn counting_trainer<'a>(c: &TrainConfig, dir: &Path, resume: bool) -> Trainer<'a> {
    Trainer::with_method(
        c.clone(),
        counting(c, None),
        build_policy(c).unwrap(),
        env_factory(c),
        dir,
        resume,
    )
    .unwrap()
}

fn metrics(dir: &Path) -> Vec<Map<String, Value>> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let mut m: Map<String, Value> = serde_json::from_str(l).unwrap();
            m.retain(|k, _| !k.starts_with("time_"));
            m
        })
        .collect()
}

#[test]
fn method_state_round_trips_and_a_killed_run_resumes_identically() {
    let mut c = crate::common::lamer_bandit(0.9, 6);
    c.training.checkpoint_every = 2;
    c.eval.tasks = 10;
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    let mut t = counting_trainer(&c, &full, false);
    t.run().unwrap();
    let killed = tmp.path().join("killed");
    let mut t = counting_trainer(&c, &killed, false);
    t.stop_after = Some(3);
    t.run().unwrap();
    drop(t);
    // The checkpoint after step 2 holds the state; step 3 ran past it and is replayed.
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(killed.join("checkpoints/step_000002/method_state.json")).unwrap(),
    )
    .unwrap();
    assert!(state["wins"].as_u64().unwrap() > 0, "{state}");
    let mut t = counting_trainer(&c, &killed, true);
    assert_eq!(t.step(), 2);
    t.run().unwrap();
    let (a, b) = (metrics(&full), metrics(&killed));
    assert_eq!(a, b);
    assert!(a.last().unwrap()["wins_so_far"].as_u64().unwrap() > state["wins"].as_u64().unwrap());
}

/// The tabular policy, counting its rescoring passes and the sequences it trains.
struct Spy {
    inner: TabularPolicy,
    scored: Rc<Cell<usize>>,
    trained_prompts: Rc<std::cell::RefCell<Vec<u32>>>,
}

impl Policy for Spy {
    fn generate(&mut self, r: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.inner.generate(r)
    }
    fn encode(&mut self, m: &[ChatMessage], p: &str) -> Result<Vec<u32>, TrainError> {
        self.inner.encode(m, p)
    }
}

impl TrainablePolicy for Spy {
    fn score(&mut self, batch: &[TrainSeq<'_>]) -> Result<Vec<Vec<f64>>, TrainError> {
        self.scored.set(self.scored.get() + batch.len());
        self.inner.score(batch)
    }
    fn update(
        &mut self,
        batch: &[TrainSeq<'_>],
        loss_fn: &mut dyn FnMut(&[Vec<f64>]) -> LossValue,
        entropy_coef: f64,
    ) -> Result<UpdateStats, TrainError> {
        self.trained_prompts
            .borrow_mut()
            .extend(batch.iter().map(|s| s.prompt_ids[0]));
        self.inner.update(batch, loss_fn, entropy_coef)
    }
    fn save(&self, dir: &Path) -> Result<(), TrainError> {
        self.inner.save(dir)
    }
    fn load(&mut self, dir: &Path) -> Result<(), TrainError> {
        self.inner.load(dir)
    }
}

/// One training step; returns (responses rescored, prompt ids trained).
fn one_step(c: &TrainConfig, retrain_prefix: Option<&str>) -> (usize, Vec<u32>) {
    let scored = Rc::new(Cell::new(0));
    let trained = Rc::new(std::cell::RefCell::new(Vec::new()));
    let spy = Spy {
        inner: TabularPolicy::new(c.model.tabular_candidates.clone(), 0.1, 0.0),
        scored: scored.clone(),
        trained_prompts: trained.clone(),
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trainer::with_method(
        c.clone(),
        counting(c, retrain_prefix),
        Box::new(spy),
        env_factory(c),
        &tmp.path().join("r"),
        false,
    )
    .unwrap();
    t.train_step(0).unwrap();
    let out = trained.borrow().clone();
    (scored.get(), out)
}

#[test]
fn old_logprobs_are_rescored_exactly_when_the_record_says_so() {
    let mut c = crate::common::lamer_bandit(0.9, 1);
    c.rollout.tasks_per_step = 2;
    c.rollout.group_size = 2;
    c.eval.at_end = false;
    // Untempered, full distribution, same context: the recorded log-probs are used.
    assert_eq!(one_step(&c, None).0, 0);
    // Tempered sampling: every response is rescored before the update.
    let mut hot = c.clone();
    hot.rollout.temperature = 0.7;
    let (n, trained) = one_step(&hot, None);
    assert!(n > 0 && n == trained.len(), "{n} of {}", trained.len());
    // top-k cuts the distribution: rescored too.
    let mut cut = c.clone();
    cut.rollout.top_k = 3;
    assert!(one_step(&cut, None).0 > 0);
    // Trained under another context: rescored there, and trained there (the prompt ids are
    // those of the other context, which the tabular policy interns as new prompts).
    let (n, trained_other) = one_step(&c, Some("[no tips] "));
    let (_, trained_same) = one_step(&c, None);
    assert_eq!(n, trained_other.len());
    assert_ne!(trained_other, trained_same);
}
