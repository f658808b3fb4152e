//! The coding [`Env`]: complete a Python function; every submission runs against the tests.

use super::config::{CodingConfig, CodingPlan, RewardMode};
use super::problems::{split_problems, Problem};
use super::submission::{extract_code, NoCode};
use crate::env::{Env, EnvError, Info, Step};
use quester_sandbox::{Limits, Sandbox, SandboxError, Termination, TestReport};
use serde_json::{json, Value};
use std::sync::Arc;

/// What runs a submission's tests: the sandbox, or a stand-in in tests.
pub trait TestRunner: Send {
    /// Runs `setup` (the program), then each test of `test_source`'s `check(candidate)` with
    /// `candidate` = the function `entry_point`.
    fn run_tests(
        &self,
        setup: &str,
        test_source: &str,
        entry_point: &str,
    ) -> Result<TestReport, SandboxError>;
    /// The protections in force, in words.
    fn protections(&self) -> String;
}

impl TestRunner for Sandbox {
    fn run_tests(
        &self,
        setup: &str,
        test_source: &str,
        entry_point: &str,
    ) -> Result<TestReport, SandboxError> {
        Sandbox::run_tests(self, setup, test_source, entry_point)
    }

    fn protections(&self) -> String {
        Sandbox::protections(self).to_string()
    }
}

/// Characters of one test's source, and of one error message, shown in feedback.
pub const SNIPPET_CHARS: usize = 300;

/// The result of one submission that ran (or failed to run).
#[derive(Debug, Clone, PartialEq)]
struct Graded {
    passed: Vec<usize>,
    /// `None` when the sandbox itself failed.
    total: Option<usize>,
    termination: String,
    error: Option<String>,
    sandbox_error: bool,
    won: bool,
    /// The bounded feedback shown in the observation.
    feedback: String,
}

impl Graded {
    fn key(&self) -> String {
        match self.total {
            None => "error".into(),
            Some(total) => {
                let ids: Vec<String> = self.passed.iter().map(usize::to_string).collect();
                format!("{}/{total}:{}", self.passed.len(), ids.join(","))
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Task {
    index: usize,
    /// Steps taken in this attempt (invalid ones too).
    turns: usize,
    latest: Option<Graded>,
    /// Why the last step ran nothing, when it did not.
    notice: Option<NoCode>,
    done: bool,
    won: bool,
}

impl Task {
    /// Problem `index` before its first submission.
    fn fresh(index: usize) -> Task {
        Task {
            index,
            turns: 0,
            latest: None,
            notice: None,
            done: false,
            won: false,
        }
    }
}

/// Python function completion against hidden tests (see `docs/envs/coding.md`).
pub struct CodingEnv {
    config: CodingConfig,
    plan: CodingPlan,
    problems: Arc<Vec<Problem>>,
    runner: Box<dyn TestRunner>,
    task: Option<Task>,
}

impl std::fmt::Debug for CodingEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodingEnv")
            .field("config", &self.config)
            .field("problems", &self.problems.len())
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl CodingEnv {
    /// Builds the env with the sandbox the config's limits describe (fetching HumanEval first
    /// for `split = "humaneval"`).
    pub fn new(config: CodingConfig) -> Result<Self, EnvError> {
        let plan = config.validate()?;
        let limits = Limits {
            wall: plan.wall,
            cpu_seconds: plan.cpu_seconds,
            memory_bytes: plan.memory_bytes,
            per_test: plan.per_test,
            ..Limits::default()
        };
        let sandbox = Sandbox::new(limits)
            .map_err(|e| EnvError::Other(format!("coding: cannot set up the sandbox: {e}")))?;
        Self::with_runner(config, Box::new(sandbox))
    }

    /// Builds the env with another test runner (tests use one that fails on purpose).
    pub fn with_runner(
        config: CodingConfig,
        runner: Box<dyn TestRunner>,
    ) -> Result<Self, EnvError> {
        let plan = config.validate()?;
        let problems = split_problems(plan.split)?;
        if problems.is_empty() {
            return Err(EnvError::Config {
                env: "coding".into(),
                message: format!("split = `{}` has no problems", plan.split.name()),
            });
        }
        Ok(Self {
            config,
            plan,
            problems,
            runner,
            task: None,
        })
    }

    /// Builds the env from a TOML table of [`CodingConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        // toml's own message, which names the key of a wrongly typed value too
        // (`quester_config::from_table` keeps only the message without the key).
        let config: CodingConfig =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| EnvError::Config {
                    env: "coding".into(),
                    message: e.to_string().trim().replace('\n', " "),
                })?;
        Self::new(config)
    }

    pub fn config(&self) -> &CodingConfig {
        &self.config
    }

    /// The problems of the configured split, in the order seeds index them.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The current problem (`None` before the first reset).
    pub fn problem(&self) -> Option<&Problem> {
        self.task.as_ref().map(|t| &self.problems[t.index])
    }

    /// The sandbox's protections, in words.
    pub fn protections(&self) -> String {
        self.runner.protections()
    }

    fn no_change(&self, outcome: &str) -> Step {
        let won = self.task.as_ref().is_some_and(|t| t.won);
        Step::unchanged(self.observation(), true, won, outcome)
    }

    fn grade(&self, problem: &Problem, code: &str) -> Graded {
        let program = problem.program(code);
        match self
            .runner
            .run_tests(&program, &problem.test, &problem.entry_point)
        {
            Ok(report) => self.graded_report(problem, code, &report),
            Err(e) => {
                let text = clean(&error_chain(&e));
                let feedback = cut_chars(
                    &format!(
                        "Your submission could not be run (a sandbox error, not your code's \
                         fault): {}",
                        cut_chars(&text, SNIPPET_CHARS)
                    ),
                    self.plan.max_feedback_chars,
                );
                Graded {
                    passed: Vec::new(),
                    total: None,
                    termination: "sandbox_error".into(),
                    error: Some(text),
                    sandbox_error: true,
                    won: false,
                    feedback,
                }
            }
        }
    }

    fn graded_report(&self, problem: &Problem, code: &str, report: &TestReport) -> Graded {
        let mut passed = report.passed.clone();
        passed.sort_unstable();
        passed.dedup();
        let total = report.total;
        let won = report.all_passed() && total > 0;
        let mut error = report.error.as_deref().map(clean);
        if !won && !mentions_identifier(code, &problem.entry_point) {
            let missing = format!(
                "the submission does not define `{}` (submit the complete function, its `def` line \
                 included)",
                problem.entry_point
            );
            // The sandbox's own "entry point `f` is not defined" says the same, less helpfully.
            let sandbox_says_so =
                |e: &str| e.contains(&format!("`{}` is not defined", problem.entry_point));
            error = Some(match error {
                Some(e) if !sandbox_says_so(&e) => format!("{missing}; {e}"),
                _ => missing,
            });
        }
        let mut feedback = if won {
            format!("Your submission passed all {total} tests.")
        } else {
            format!("Your submission passed {} of {total} tests.", passed.len())
        };
        if let Some(e) = &error {
            feedback.push_str("\nThe program failed: ");
            feedback.push_str(&cut_chars(e, SNIPPET_CHARS));
        }
        let budget = self.plan.max_feedback_chars;
        if !report.failures.is_empty() {
            feedback.push_str("\nFailed tests:");
            let mut used = feedback.chars().count();
            let program_error = report.error.as_deref().map(clean);
            for (shown, f) in report.failures.iter().enumerate() {
                let mut message = clean(&f.message);
                // "not run: <the program's error>" repeats what the feedback already said.
                if let (Some(rest), Some(e)) = (message.strip_prefix("not run: "), &program_error) {
                    if rest == e {
                        message = "not run".into();
                    }
                }
                let item = format!(
                    "\n- {}\n  {}",
                    indent_continuation(&cut_chars(&clean(&f.source), SNIPPET_CHARS)),
                    indent_continuation(&cut_chars(&message, SNIPPET_CHARS))
                );
                let rest = report.failures.len() - shown;
                let more = format!("\n({rest} more failed tests not shown)");
                // Room for the "more" line stays free unless this is the last failure.
                let reserve = if rest > 1 {
                    more.chars().count() + 8
                } else {
                    0
                };
                let room = budget.saturating_sub(used + reserve);
                let len = item.chars().count();
                if len <= room || (shown == 0 && room >= 40) {
                    // The first failure is always shown, cut to the room left if need be.
                    let item = cut_chars(&item, room);
                    used += item.chars().count();
                    feedback.push_str(&item);
                } else {
                    if used + more.chars().count() <= budget {
                        feedback.push_str(&more);
                    }
                    break;
                }
            }
        }
        Graded {
            passed,
            total: Some(total),
            termination: termination_name(report.execution.termination),
            error,
            sandbox_error: false,
            won,
            feedback: cut_chars(&feedback, budget),
        }
    }

    fn intro() -> &'static str {
        "Complete this Python function. Reply with the whole function (its def line and body) in \
         Python inside <action>...</action>."
    }
}

impl Env for CodingEnv {
    fn name(&self) -> &'static str {
        "coding"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let index = (seed % self.problems.len() as u64) as usize;
        self.task = Some(Task::fresh(index));
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let task = self.task.as_mut().ok_or_else(|| EnvError::NotReset {
            env: "coding".into(),
        })?;
        *task = Task::fresh(task.index);
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let max_turns = self.plan.max_turns;
        let (index, turns) = match &self.task {
            None => return self.no_change("not_reset"),
            Some(t) if t.done => return self.no_change("after_done"),
            Some(t) => (t.index, t.turns + 1),
        };
        let last = turns >= max_turns;
        let mut info = Info::new();
        info.insert("submission".into(), turns.into());
        let code = match extract_code(response) {
            Ok(code) => code,
            Err(why) => {
                let task = self.task.as_mut().expect("checked above");
                task.turns = turns;
                task.notice = Some(why);
                task.done = last;
                info.insert("outcome".into(), why.outcome().into());
                info.insert("reason".into(), why.message().into());
                if last {
                    info.insert("truncated".into(), true.into());
                }
                return Step {
                    observation: self.observation(),
                    reward: 0.0,
                    done: last,
                    won: false,
                    valid: false,
                    info,
                };
            }
        };
        let graded = self.grade(&self.problems[index], &code);
        let done = graded.won || last;
        let reward = if graded.won {
            1.0
        } else {
            match (self.plan.reward, done, graded.total) {
                (RewardMode::Fraction, true, Some(total)) if total > 0 => {
                    graded.passed.len() as f64 / total as f64
                }
                _ => 0.0,
            }
        };
        let outcome = if graded.won {
            "all_passed"
        } else if graded.sandbox_error {
            "sandbox_error"
        } else if graded.error.is_some() {
            "program_error"
        } else {
            "tests_failed"
        };
        info.insert("outcome".into(), outcome.into());
        info.insert("passed".into(), graded.passed.len().into());
        info.insert("total".into(), json!(graded.total));
        info.insert(
            "passed_tests".into(),
            Value::Array(graded.passed.iter().map(|&i| i.into()).collect()),
        );
        info.insert("termination".into(), graded.termination.clone().into());
        info.insert("error".into(), json!(graded.error));
        if done && !graded.won {
            info.insert("truncated".into(), true.into());
        }
        let won = graded.won;
        let task = self.task.as_mut().expect("checked above");
        task.turns = turns;
        task.notice = None;
        task.latest = Some(graded);
        task.done = done;
        task.won = won;
        Step {
            observation: self.observation(),
            reward,
            done,
            won,
            valid: true,
            info,
        }
    }

    fn observation(&self) -> String {
        let Some(task) = &self.task else {
            return "No task yet: call reset.".into();
        };
        let problem = &self.problems[task.index];
        let mut obs = format!("{}\n\n```python\n{}```", Self::intro(), problem.prompt);
        if let Some(g) = &task.latest {
            obs.push_str("\n\n");
            obs.push_str(&g.feedback);
        }
        if let Some(n) = task.notice {
            obs.push_str("\n\n");
            obs.push_str(n.message());
        }
        if !task.done && task.turns > 0 {
            let left = self.plan.max_turns - task.turns;
            let what = if task.latest.is_some() {
                "the corrected complete function"
            } else {
                "the complete function inside <action>...</action>"
            };
            obs.push_str(&format!(
                "\n\nSubmit {what} ({left} submission{} left).",
                if left == 1 { "" } else { "s" }
            ));
        }
        obs
    }

    fn anchor(&self) -> String {
        let Some(task) = &self.task else {
            return self.observation();
        };
        let prompt = &self.problems[task.index].prompt;
        match &task.latest {
            None => prompt.clone(),
            Some(g) => format!("{prompt}\n[tests passed: {}]", g.key()),
        }
    }

    fn rules(&self) -> String {
        let turns = self.plan.max_turns;
        let reward = match self.plan.reward {
            RewardMode::Binary => "Reward 1 when every test passes, else 0.",
            RewardMode::Fraction => {
                "Reward 1 when every test passes; otherwise your last submission earns the \
                 fraction of tests it passed."
            }
        };
        format!(
            "Python coding. The task is a Python function to write: its def line and a docstring \
             with examples are shown. Reply with the complete function in Python (the def line \
             and the body) inside <action>...</action>; a ```python fence inside the tag is \
             fine. Imports and helper functions shown above the function are already there. \
             Your code is run against hidden tests (asserts). If one fails you see how many \
             passed and the first failures, and you may submit again: {turns} submission{} in \
             all. {reward}",
            if turns == 1 { "" } else { "s" }
        )
    }

    fn max_turns(&self) -> usize {
        self.plan.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        if let Some(p) = self.problem() {
            info.insert("task_id".into(), p.task_id.clone().into());
            info.insert("entry_point".into(), p.entry_point.clone().into());
            info.insert("split".into(), self.plan.split.name().into());
        }
        info
    }

    fn outcome(&self) -> String {
        match self.task.as_ref().and_then(|t| t.latest.as_ref()) {
            Some(g) => g.key(),
            None => "none".into(),
        }
    }

    fn is_done(&self) -> bool {
        self.task.as_ref().is_none_or(|t| t.done)
    }

    fn expert_action(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(problem) = self.problem() else {
            return Some(Err(EnvError::NotReset {
                env: "coding".into(),
            }));
        };
        Some(super::expert::expert_answer(self.plan.split, problem))
    }
}

/// An error with its sources, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// How the run ended, as `info.termination` shows it: `exited:0`, `signal:9`, `wall_timeout`,
/// `cpu_limit`, `memory_limit`.
fn termination_name(t: Termination) -> String {
    match t {
        Termination::Exited(code) => format!("exited:{code}"),
        Termination::Signaled(sig) => format!("signal:{sig}"),
        Termination::WallTimeout => "wall_timeout".into(),
        Termination::CpuLimit => "cpu_limit".into(),
        Termination::MemoryLimit => "memory_limit".into(),
    }
}

/// Whether `name` occurs in `code` as a whole identifier.
fn mentions_identifier(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Control characters other than new lines and tabs shown as U+FFFD, trailing white space off.
fn clean(text: &str) -> String {
    text.trim_end()
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// At most `max` characters: longer text is cut and ends with `...`.
fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(3);
    let mut out: String = text.chars().take(keep).collect();
    out.push_str("...");
    out
}

/// Continuation lines of a feedback item indented under its bullet.
fn indent_continuation(text: &str) -> String {
    text.replace('\n', "\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_match_is_whole_word() {
        assert!(mentions_identifier("def add(a, b):", "add"));
        assert!(!mentions_identifier("def add_two(a):", "add"));
        assert!(!mentions_identifier("def padd(a):", "add"));
        assert!(mentions_identifier("add = lambda a, b: a + b", "add"));
        assert!(!mentions_identifier("", "add"));
    }

    #[test]
    fn cutting_counts_characters() {
        assert_eq!(cut_chars("ééééé", 5), "ééééé");
        assert_eq!(cut_chars("éééééé", 5), "éé...");
        assert_eq!(clean("a\u{0}b\n\tc  \n"), "a\u{FFFD}b\n\tc");
    }
}
