//! The instruction-following [`Env`]: one turn, the whole response is the answer.

use super::config::InstructionConfig;
use super::task::{rubric_report, InstructionTask, TaskGenerator};
use crate::env::{config_error, Env, EnvError, Info, Step};
use serde_json::{json, Value};

/// Writing requests with verifiable constraints (see `docs/envs/instruction-following.md`).
#[derive(Debug, Clone)]
pub struct InstructionEnv {
    config: InstructionConfig,
    generator: TaskGenerator,
    task: Option<InstructionTask>,
    done: bool,
    won: bool,
}

impl InstructionEnv {
    /// Builds the env after checking the config and that it leaves some combination to draw.
    pub fn new(config: InstructionConfig) -> Result<Self, EnvError> {
        let plan = config.validate()?;
        let generator = TaskGenerator::new(plan).map_err(|message| EnvError::Config {
            env: "instruction".into(),
            message,
        })?;
        Ok(Self {
            config,
            generator,
            task: None,
            done: false,
            won: false,
        })
    }

    /// Builds the env from a TOML table of [`InstructionConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: InstructionConfig =
            quester_config::from_table(table).map_err(|e| config_error("instruction", e))?;
        Self::new(config)
    }

    pub fn config(&self) -> &InstructionConfig {
        &self.config
    }

    pub fn generator(&self) -> &TaskGenerator {
        &self.generator
    }

    /// The current task (`None` before the first reset), for scoring rewrites with
    /// [`rubric_report`].
    pub fn task(&self) -> Option<&InstructionTask> {
        self.task.as_ref()
    }

    fn no_change(&self, outcome: &str) -> Step {
        Step::unchanged(self.observation(), true, self.won, outcome)
    }
}

impl Env for InstructionEnv {
    fn name(&self) -> &'static str {
        "instruction"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let seed = match self.config.pool_size {
            0 => seed,
            n => seed % n,
        };
        self.task = Some(self.generator.generate(seed));
        self.done = false;
        self.won = false;
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        if self.task.is_none() {
            return Err(EnvError::NotReset {
                env: "instruction".into(),
            });
        }
        // The task is fixed by the seed and nothing else changes during an episode.
        self.done = false;
        self.won = false;
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let Some(task) = &self.task else {
            return self.no_change("not_reset");
        };
        if self.done {
            return self.no_change("after_done");
        }
        let report = rubric_report(task, response);
        let empty = quester_ifeval::pytext::strip(response).is_empty();
        let outcome = if empty {
            "empty"
        } else if report.degenerate {
            "degenerate"
        } else if report.won {
            "all_met"
        } else if report.items.iter().any(|i| i.met) {
            "partial"
        } else {
            "none_met"
        };
        let mut info = Info::new();
        info.insert("request".into(), task.request.clone().into());
        info.insert("prompt".into(), task.prompt.clone().into());
        let rubric: Vec<Value> = report
            .items
            .iter()
            .map(|i| json!({"id": i.id, "description": i.description, "met": i.met, "weight": i.weight}))
            .collect();
        info.insert("rubric".into(), Value::Array(rubric));
        info.insert("fraction_met".into(), json!(report.fraction_met));
        info.insert("degenerate".into(), report.degenerate.into());
        info.insert("outcome".into(), outcome.into());
        self.done = true;
        self.won = report.won;
        Step {
            observation: self.observation(),
            reward: report.reward,
            done: true,
            won: report.won,
            valid: !empty,
            info,
        }
    }

    fn observation(&self) -> String {
        match &self.task {
            Some(t) => t.prompt.clone(),
            None => "No task yet: call reset.".into(),
        }
    }

    fn rules(&self) -> String {
        "Instruction following. The task is a writing request with constraints (length, format, \
         words to use or avoid, ...). Your whole response is the answer: write only the answer \
         itself, with no <action> tags and no comments about the constraints. Reward = the \
         fraction of constraints met (checked exactly, IFEval's strict rules); 0 for an answer \
         that ends by repeating itself."
            .into()
    }

    fn max_turns(&self) -> usize {
        1
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        if let Some(t) = &self.task {
            info.insert(
                "constraints".into(),
                Value::Array(t.ids().into_iter().map(Value::from).collect()),
            );
            info.insert("combination".into(), t.combination().into());
            info.insert("split".into(), t.side.name().into());
        }
        info
    }

    fn is_done(&self) -> bool {
        self.task.is_none() || self.done
    }
}
