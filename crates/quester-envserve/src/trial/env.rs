//! `TrialEnv`: an env whose episode is a whole trial. Play turns go to the wrapped env;
//! reflect turns keep the client's text as the attempt's reflection.

use super::memory::{
    action_text, earlier_attempts, play_observation, reflect_observation, reflection_text,
};
use super::options::TrialOptions;
use quester_envs::trial_memory::{AttemptRecord, TurnRecord};
use quester_envs::{Env, EnvError, Info, Step};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Play,
    Reflect,
    /// The trial is over (an attempt was won, or the last attempt ended).
    Done,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Play => "play",
            Phase::Reflect => "reflect",
            Phase::Done => "done",
        }
    }
}

/// How the attempt that the last step ended went, for that step's metadata.
#[derive(Debug, Clone, Copy)]
struct Ended {
    reward: f64,
    won: bool,
}

pub struct TrialEnv {
    inner: Box<dyn Env>,
    options: TrialOptions,
    phase: Phase,
    /// The attempt in play, or the last one played once the trial is over (0-based).
    attempt: usize,
    /// The task's first observation, which every attempt restarts from.
    initial: String,
    /// The wrapped env's current observation.
    obs: String,
    records: Vec<AttemptRecord>,
    current: Vec<TurnRecord>,
    attempt_rewards: Vec<f64>,
    reward_sum: f64,
    ended: Option<Ended>,
}

impl TrialEnv {
    pub fn new(inner: Box<dyn Env>, options: TrialOptions) -> TrialEnv {
        TrialEnv {
            inner,
            options,
            phase: Phase::Play,
            attempt: 0,
            initial: String::new(),
            obs: String::new(),
            records: Vec::new(),
            current: Vec::new(),
            attempt_rewards: Vec::new(),
            reward_sum: 0.0,
            ended: None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The trial's bookkeeping for the observation's metadata: the phase the next step is
    /// in, the attempt (1-based), and the summed reward of every finished attempt; on the
    /// step that ended an attempt, that attempt's reward and whether it was won.
    pub fn meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("phase".into(), self.phase.as_str().into());
        m.insert("attempt".into(), (self.attempt + 1).into());
        m.insert("attempts".into(), self.options.attempts.into());
        m.insert(
            "attempt_rewards".into(),
            self.attempt_rewards.clone().into(),
        );
        if let Some(e) = self.ended {
            m.insert("attempt_reward".into(), e.reward.into());
            m.insert("attempt_won".into(), e.won.into());
        }
        m
    }

    /// A fresh trial from the wrapped env's first observation.
    fn begin(&mut self, first: String) -> String {
        self.phase = if self.inner.is_done() {
            Phase::Done
        } else {
            Phase::Play
        };
        self.attempt = 0;
        self.initial = first.clone();
        self.obs = first;
        self.records.clear();
        self.current.clear();
        self.attempt_rewards.clear();
        self.reward_sum = 0.0;
        self.ended = None;
        self.observation()
    }

    fn play(&mut self, response: &str) -> Step {
        let s = self.inner.step(response);
        let seen = std::mem::replace(&mut self.obs, s.observation.clone());
        self.current.push(TurnRecord {
            observation: self.inner.history_observation(&seen),
            action: action_text(response),
            reward: s.reward,
            valid: s.valid,
            next_observation: self.inner.history_observation(&s.observation),
        });
        self.reward_sum += s.reward;
        let won = s.done && s.won;
        let mut info = s.info;
        // The trainer's turn cap: an attempt ends at the env's turn limit even if the env
        // itself would go on.
        if s.done || self.current.len() >= self.inner.max_turns() {
            if let Err(e) = self.end_attempt(won) {
                // A restart that fails ends the trial rather than serving a wrong state.
                info.insert("trial_error".into(), e.to_string().into());
                self.phase = Phase::Done;
            }
        }
        Step {
            observation: self.observation(),
            reward: s.reward,
            done: self.phase == Phase::Done,
            won,
            valid: s.valid,
            info,
        }
    }

    fn end_attempt(&mut self, won: bool) -> Result<(), EnvError> {
        self.ended = Some(Ended {
            reward: self.reward_sum,
            won,
        });
        self.attempt_rewards.push(self.reward_sum);
        self.reward_sum = 0.0;
        self.records.push(AttemptRecord {
            turns: std::mem::take(&mut self.current),
            won,
            reflection: None,
        });
        if won || self.attempt + 1 >= self.options.attempts {
            self.phase = Phase::Done;
            return Ok(());
        }
        self.obs = self.inner.restart()?;
        self.attempt += 1;
        self.phase = if self.options.reflection {
            Phase::Reflect
        } else {
            Phase::Play
        };
        Ok(())
    }

    fn reflect(&mut self, response: &str) -> Step {
        if let Some(rec) = self.records.last_mut() {
            rec.reflection = Some(reflection_text(response));
        }
        self.phase = Phase::Play;
        let mut info = Info::new();
        info.insert("outcome".into(), "reflection".into());
        Step {
            observation: self.observation(),
            reward: 0.0,
            done: false,
            won: false,
            valid: true,
            info,
        }
    }
}

impl Env for TrialEnv {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let first = self.inner.reset(seed)?;
        Ok(self.begin(first))
    }

    /// Restarts the whole trial (attempt 1, nothing remembered).
    fn restart(&mut self) -> Result<String, EnvError> {
        let first = self.inner.restart()?;
        Ok(self.begin(first))
    }

    fn step(&mut self, response: &str) -> Step {
        self.ended = None;
        match self.phase {
            Phase::Play => self.play(response),
            Phase::Reflect => self.reflect(response),
            Phase::Done => Step::unchanged(self.observation(), true, false, "the trial is over"),
        }
    }

    fn observation(&self) -> String {
        match self.phase {
            Phase::Play => {
                let memory = earlier_attempts(&self.records, self.options.memory, &self.initial);
                play_observation(&memory, self.attempt + 1, self.options.attempts, &self.obs)
            }
            Phase::Reflect => {
                let last = self.records.last().map(|r| r.turns.as_slice());
                reflect_observation(&self.initial, last.unwrap_or(&[]))
            }
            Phase::Done => self.obs.clone(),
        }
    }

    fn anchor(&self) -> String {
        match self.phase {
            Phase::Reflect => self.observation(),
            _ => self.inner.anchor(),
        }
    }

    fn rules(&self) -> String {
        let mut rules = self.inner.rules();
        rules.push_str(&format!(
            "\n\nYou have up to {} attempts at the same task; a won attempt ends the trial.",
            self.options.attempts
        ));
        if self.options.reflection {
            rules.push_str(
                " Between attempts you are asked to reflect: answer with your plan inside \
                 <remark>...</remark>.",
            );
        }
        rules
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        match self.phase {
            Phase::Play => self.inner.admissible_actions(),
            _ => None,
        }
    }

    fn max_turns(&self) -> usize {
        let n = self.options.attempts;
        let reflections = if self.options.reflection {
            n.saturating_sub(1)
        } else {
            0
        };
        n * self.inner.max_turns() + reflections
    }

    fn task_info(&self) -> Info {
        self.inner.task_info()
    }

    fn outcome(&self) -> String {
        self.inner.outcome()
    }

    fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        match self.phase {
            Phase::Play => self.inner.expert_action(rng),
            _ => None,
        }
    }
}
