//! The meta-bandit [`Env`]: one action per attempt; the good arm is fixed per task (seed).

use super::config::BanditConfig;
use super::expert::{action_text, expert_bandit_action, BanditMemory};
use crate::action::extract_action;
use crate::env::{config_error, Env, EnvError, Info, Step};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A parsed action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BanditAction {
    /// Pull arm N (1-indexed).
    Pull(usize),
    Scout,
}

/// Parses `N`, `arm N` or `scout` (case-insensitive). Range checks are the env's.
pub fn parse_bandit_action(text: &str) -> Option<BanditAction> {
    let t = text.trim().to_ascii_lowercase();
    if t == "scout" {
        return Some(BanditAction::Scout);
    }
    let num = t.strip_prefix("arm").map_or(t.as_str(), str::trim);
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse().ok().map(BanditAction::Pull)
}

#[derive(Debug, Clone)]
struct Task {
    seed: u64,
    /// 1-indexed.
    good_arm: usize,
    done: bool,
    won: bool,
    /// What the last action showed.
    feedback: Option<String>,
    /// What earlier attempts of this task showed, for the expert; kept by `restart`.
    memory: BanditMemory,
}

/// The meta-bandit (see `docs/envs/bandit.md`).
#[derive(Debug, Clone)]
pub struct BanditEnv {
    config: BanditConfig,
    task: Option<Task>,
}

impl BanditEnv {
    /// Builds the env after checking the config.
    pub fn new(config: BanditConfig) -> Result<Self, EnvError> {
        config.validate()?;
        Ok(Self { config, task: None })
    }

    /// Builds the env from a TOML table of [`BanditConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: BanditConfig =
            quester_config::from_table(table).map_err(|e| config_error("bandit", e))?;
        Self::new(config)
    }

    pub fn config(&self) -> &BanditConfig {
        &self.config
    }

    /// The hidden good arm, 1-indexed (`None` before reset); for tests and analysis.
    pub fn good_arm(&self) -> Option<usize> {
        self.task.as_ref().map(|t| t.good_arm)
    }

    fn no_change(&self, outcome: &str) -> Step {
        Step::unchanged(
            self.observation(),
            true,
            self.task.as_ref().is_some_and(|t| t.won),
            outcome,
        )
    }
}

impl Env for BanditEnv {
    fn name(&self) -> &'static str {
        "bandit"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.task = Some(Task {
            seed,
            good_arm: rng.random_range(1..=self.config.arms),
            done: false,
            won: false,
            feedback: None,
            memory: BanditMemory::default(),
        });
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let task = self.task.as_mut().ok_or_else(|| EnvError::NotReset {
            env: "bandit".into(),
        })?;
        task.done = false;
        task.won = false;
        task.feedback = None;
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let (arms, scout) = (self.config.arms, self.config.scout);
        let Some(task) = self.task.as_mut() else {
            return self.no_change("not_reset");
        };
        if task.done {
            return self.no_change("after_done");
        }
        let action = extract_action(response)
            .and_then(parse_bandit_action)
            .filter(|a| match a {
                BanditAction::Pull(n) => (1..=arms).contains(n),
                BanditAction::Scout => scout,
            });
        task.done = true;
        let mut info = Info::new();
        let reward = match action {
            None => {
                task.feedback = Some("invalid action".into());
                info.insert("outcome".into(), "invalid".into());
                0.0
            }
            Some(BanditAction::Scout) => {
                task.feedback = Some(format!("the good arm is {}", task.good_arm));
                task.memory.known_good = Some(task.good_arm);
                info.insert("outcome".into(), "scout".into());
                0.0
            }
            Some(BanditAction::Pull(n)) => {
                let r = u8::from(n == task.good_arm);
                task.won = r == 1;
                task.feedback = Some(format!("arm {n} gave {r}"));
                if task.won {
                    task.memory.known_good = Some(n);
                } else if !task.memory.missed.contains(&n) {
                    task.memory.missed.push(n);
                }
                info.insert("outcome".into(), "pull".into());
                f64::from(r)
            }
        };
        info.insert("good_arm".into(), task.good_arm.into());
        let won = task.won;
        Step {
            observation: self.observation(),
            reward,
            done: true,
            won,
            valid: action.is_some(),
            info,
        }
    }

    fn observation(&self) -> String {
        let Some(t) = &self.task else {
            return "No task yet: call reset.".into();
        };
        if let Some(f) = &t.feedback {
            return format!("{}.", capitalise(f));
        }
        let arms: Vec<String> = (1..=self.config.arms).map(|a| a.to_string()).collect();
        // Concrete tags, not a placeholder: a small model copies `<action>N</action>` literally.
        let mut out = format!(
            "Arms: {}. Pull one (<action>1</action> to <action>{}</action>)",
            arms.join(" "),
            self.config.arms
        );
        if self.config.scout {
            out.push_str(", or <action>scout</action> to learn the good arm");
        }
        out.push('.');
        out
    }

    fn rules(&self) -> String {
        let mut s = format!(
            "One of {n} arms is good: pulling it gives reward 1, any other arm 0. Reply with \
             an arm's number to pull it, e.g. <action>{n}</action> pulls arm {n}.",
            n = self.config.arms
        );
        if self.config.scout {
            s.push_str(
                " <action>scout</action> gives 0 but shows the good arm; it stays the same in \
                 the next attempt.",
            );
        }
        s
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        let t = self.task.as_ref()?;
        if t.done {
            return Some(Vec::new());
        }
        let mut v: Vec<String> = (1..=self.config.arms).map(|a| a.to_string()).collect();
        if self.config.scout {
            v.push("scout".into());
        }
        Some(v)
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        info.insert("arms".into(), self.config.arms.into());
        if let Some(t) = &self.task {
            info.insert("seed".into(), t.seed.into());
        }
        info
    }

    fn is_done(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.done)
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(t) = &self.task else {
            return Some(Err(EnvError::NotReset {
                env: "bandit".into(),
            }));
        };
        if t.done {
            return Some(Err(EnvError::Other(
                "bandit: the attempt is over; the expert has no move".into(),
            )));
        }
        let action = expert_bandit_action(self.config.arms, self.config.scout, &t.memory, rng);
        Some(Ok(action_text(action)))
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
