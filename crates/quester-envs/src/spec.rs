//! What the rest of the framework knows about an environment, in one value per env (Gymnasium's
//! `EnvSpec` is the model): how to build it, how an answer is written, its seats, its held-out
//! rule and its prompt templates. The trainer and the CLI ask the spec and name no env.

use crate::env::{Env, EnvError};

/// Builds the env from a table of its config keys (unknown keys are an error).
pub type Constructor = fn(toml::Table) -> Result<Box<dyn Env>, EnvError>;

/// Checks that evaluation uses tasks training never sees, beyond disjoint seeds: it receives the
/// training settings (`env.settings`) and the evaluation ones (`eval.env_settings`).
pub type HeldOutRule = fn(train: &toml::Table, eval: &toml::Table) -> Result<(), HeldOutError>;

/// One environment, as data.
#[derive(Debug)]
pub struct EnvSpec {
    /// The registry name (`sokoban`, ...), the same as `Env::name`.
    pub name: &'static str,
    pub make: Constructor,
    pub answer: AnswerFormat,
    /// The setting that seats the agent, for two-player games (`None`: no opponents).
    pub seats: Option<Seats>,
    /// `None`: disjoint seeds alone keep evaluation held out.
    pub held_out: Option<HeldOutRule>,
    /// What the env's expert is (`Env::expert_action` answers for it), in a line for docs and
    /// `quester demos`; `None`: the env has no expert and no demonstrations.
    pub expert: Option<&'static str>,
    /// Built-in prompt templates, (name, text). Names start with the env's name, are unique over
    /// all envs, and `<name>_play` / `<name>_reflect`, where present, are the env's defaults.
    pub prompts: &'static [(&'static str, &'static str)],
}

impl EnvSpec {
    /// The built-in template `name` of this env.
    pub fn prompt(&self, name: &str) -> Option<&'static str> {
        self.prompts
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| *text)
    }

    /// Runs the held-out rule (Ok where the env has none).
    pub fn check_held_out(
        &self,
        train: &toml::Table,
        eval: &toml::Table,
    ) -> Result<(), HeldOutError> {
        self.held_out.map_or(Ok(()), |rule| rule(train, eval))
    }
}

/// How the model's answer is written in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerFormat {
    /// A one-line action inside the last `<action>...</action>`.
    ActionLine,
    /// Free text over several lines (code) inside the last `<action>...</action>`.
    FreeTextInTag,
    /// The whole response is the answer; no tag.
    WholeResponse,
}

impl AnswerFormat {
    /// Whether an answer may span several lines (a human front end collects typed lines).
    pub fn is_free_text(self) -> bool {
        !matches!(self, AnswerFormat::ActionLine)
    }

    /// Whether the answer is read from an `<action>` tag.
    pub fn uses_action_tag(self) -> bool {
        !matches!(self, AnswerFormat::WholeResponse)
    }

    /// `action` written as a response in this format: inside an `<action>` tag (on lines of
    /// its own for free text), or the whole response.
    pub fn write(self, action: &str) -> String {
        match self {
            AnswerFormat::ActionLine => format!("<action>{action}</action>"),
            AnswerFormat::FreeTextInTag => format!("<action>\n{action}\n</action>"),
            AnswerFormat::WholeResponse => action.to_string(),
        }
    }
}

/// The config key that puts the agent in the first or second seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seats {
    pub key: &'static str,
    pub value: SeatValue,
}

/// How the seat key's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeatValue {
    /// A name per seat.
    Text {
        first: &'static str,
        second: &'static str,
    },
    /// `true` = the agent moves first.
    AgentFirst,
}

impl Seats {
    /// The (key, value) setting that seats the agent second (`second`) or first.
    pub fn setting(&self, second: bool) -> (&'static str, toml::Value) {
        let value = match self.value {
            SeatValue::Text { first, second: sec } => {
                toml::Value::String(if second { sec } else { first }.to_string())
            }
            SeatValue::AgentFirst => toml::Value::Boolean(!second),
        };
        (self.key, value)
    }
}

/// Evaluation would see training tasks: the offending key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct HeldOutError {
    /// The config key to change, e.g. `eval.env_settings.split`.
    pub key: &'static str,
    pub message: String,
}

/// A `split` setting in a settings table (None: the env's default).
pub fn split_setting(table: &toml::Table) -> Option<String> {
    table
        .get("split")
        .and_then(toml::Value::as_str)
        .map(str::to_string)
}

/// The (training, evaluation) splits: training defaults to "train", evaluation to training's.
pub fn train_and_eval_splits(train: &toml::Table, eval: &toml::Table) -> (String, String) {
    let train = split_setting(train).unwrap_or_else(|| "train".into());
    let eval = split_setting(eval).unwrap_or_else(|| train.clone());
    (train, eval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_write_the_setting_of_each_seat() {
        let text = Seats {
            key: "agent_position",
            value: SeatValue::Text {
                first: "first",
                second: "second",
            },
        };
        assert_eq!(text.setting(true), ("agent_position", "second".into()));
        assert_eq!(text.setting(false), ("agent_position", "first".into()));
        let flag = Seats {
            key: "agent_first",
            value: SeatValue::AgentFirst,
        };
        assert_eq!(flag.setting(true), ("agent_first", false.into()));
        assert_eq!(flag.setting(false), ("agent_first", true.into()));
    }

    #[test]
    fn splits_default_to_train_then_to_training() {
        let t = |s: &str| s.parse::<toml::Table>().unwrap();
        assert_eq!(
            train_and_eval_splits(&t(""), &t("")),
            ("train".into(), "train".into())
        );
        assert_eq!(
            train_and_eval_splits(&t("split = \"all\""), &t("")),
            ("all".into(), "all".into())
        );
        assert_eq!(
            train_and_eval_splits(&t(""), &t("split = \"test\"")),
            ("train".into(), "test".into())
        );
    }
}
