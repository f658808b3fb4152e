//! `quester play ENV`: an environment in the terminal, one typed action per turn.

use anyhow::Context;
use quester_envs::{make_env, AnswerFormat, Env};
use std::io::{BufRead, Write};

#[derive(clap::Args)]
pub struct PlayArgs {
    /// Environment name (sokoban, minesweeper, webshop, tictactoe, kuhn, bandit, instruction,
    /// coding).
    pub env: String,
    /// Task seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Environment config overrides, e.g. --set num_boxes=3.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// Builds an environment from its name and `key=value` overrides.
pub fn build_env(name: &str, overrides: &[String]) -> anyhow::Result<Box<dyn Env>> {
    let mut table = toml::Table::new();
    quester_config::apply_overrides(&mut table, overrides)?;
    Ok(make_env(name, table)?)
}

/// What the player typed, as a model response: bare text is wrapped in an action tag so that
/// `up, left` works as well as `<action>up, left</action>`.
pub fn as_response(line: &str) -> String {
    if line.to_ascii_lowercase().contains("<action>") {
        line.to_string()
    } else {
        AnswerFormat::ActionLine.write(line.trim())
    }
}

/// How env `name` reads an answer (an unknown name: one line in an action tag).
fn answer_format(name: &str) -> AnswerFormat {
    quester_envs::spec(name).map_or(AnswerFormat::ActionLine, |s| s.answer)
}

/// A typed multi-line answer as a model response: unchanged for envs that score the whole
/// response, else wrapped in one action tag unless it already has one (code keeps its lines and
/// indentation).
pub fn as_free_text_response(env: &str, answer: &str) -> String {
    if answer.to_ascii_lowercase().contains("<action>") {
        answer.to_string()
    } else {
        answer_format(env).write(answer)
    }
}

/// The end of a typed free-text answer: a line holding only a full stop.
const END_OF_ANSWER: &str = ".";

pub fn run(args: PlayArgs) -> anyhow::Result<()> {
    let mut env = build_env(&args.env, &args.overrides)?;
    // Free-text envs score the whole response: typed lines are collected, unwrapped, until a
    // line holding only "." (answers need new lines: paragraphs, bullets, a title line).
    let free_text = answer_format(env.name()).is_free_text();
    let mut answer: Vec<String> = Vec::new();
    let mut seed = args.seed;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}\n", env.rules())?;
    if free_text {
        writeln!(
            out,
            "Type your answer over as many lines as you like, then a line with only \
             `{END_OF_ANSWER}` to send it. Before an answer: :restart replays the task, \
             :reset [SEED] starts a new one, :quit leaves.\n"
        )?;
    } else {
        writeln!(
            out,
            "Type an action (bare or inside <action>...</action>); :restart replays the task, \
             :reset [SEED] starts a new one, :quit leaves.\n"
        )?;
    }
    let obs = env
        .reset(seed)
        .with_context(|| format!("reset {} with seed {seed}", args.env))?;
    show_observation(&mut out, env.as_ref(), &obs)?;
    let mut total = 0.0;
    for line in stdin.lock().lines() {
        let line = line.context("reading standard input")?;
        let cmd = line.trim();
        if free_text && answer.is_empty() && cmd.is_empty() {
            continue;
        }
        if free_text && (!answer.is_empty() || !cmd.starts_with(':')) {
            if cmd != END_OF_ANSWER {
                answer.push(line);
                continue;
            }
            let response =
                as_free_text_response(env.name(), &std::mem::take(&mut answer).join("\n"));
            total += show_step(&mut out, env.as_mut(), &response, total)?;
            continue;
        }
        if cmd.is_empty() {
            continue;
        }
        if cmd == ":quit" || cmd == ":q" {
            break;
        }
        if cmd == ":restart" {
            total = 0.0;
            let obs = env.restart()?;
            show_observation(&mut out, env.as_ref(), &obs)?;
            continue;
        }
        if let Some(rest) = cmd.strip_prefix(":reset") {
            seed = match rest.trim() {
                "" => seed.wrapping_add(1),
                s => s
                    .parse()
                    .with_context(|| format!("`{s}` is not a seed (a non-negative integer)"))?,
            };
            total = 0.0;
            let obs = env.reset(seed)?;
            writeln!(out, "-- task seed {seed}")?;
            show_observation(&mut out, env.as_ref(), &obs)?;
            continue;
        }
        total += show_step(&mut out, env.as_mut(), &as_response(cmd), total)?;
    }
    // End of input in the middle of a free-text answer sends it.
    if free_text && !answer.is_empty() {
        let response = as_free_text_response(env.name(), &answer.join("\n"));
        show_step(&mut out, env.as_mut(), &response, total)?;
    }
    Ok(())
}

/// Steps the env with `response`, prints the outcome; returns the reward.
fn show_step(
    out: &mut impl Write,
    env: &mut dyn Env,
    response: &str,
    total: f64,
) -> anyhow::Result<f64> {
    let step = env.step(response);
    writeln!(
        out,
        "reward {:+.2} (total {:+.2})  valid {}  done {}  won {}",
        step.reward,
        total + step.reward,
        step.valid,
        step.done,
        step.won
    )?;
    if !step.info.is_empty() {
        writeln!(out, "info {}", serde_json::Value::Object(step.info.clone()))?;
    }
    show_observation(out, env, &step.observation)?;
    if step.done {
        writeln!(
            out,
            "-- episode over ({}). :restart, :reset [SEED] or :quit",
            if step.won { "won" } else { "not won" }
        )?;
    }
    Ok(step.reward)
}

fn show_observation(out: &mut impl Write, env: &dyn Env, obs: &str) -> anyhow::Result<()> {
    writeln!(out, "{obs}")?;
    if let Some(actions) = env.admissible_actions() {
        // Envs that list their actions in the observation (WebShop) are not repeated.
        if !env.is_done() && !actions.iter().all(|a| obs.contains(a.as_str())) {
            // ScienceWorld has a thousand; a screenful is enough to play by.
            const SHOWN: usize = 60;
            let more = actions.len().saturating_sub(SHOWN);
            let list = actions[..actions.len().min(SHOWN)].join(" | ");
            if more > 0 {
                writeln!(out, "actions: {list} | ... ({more} more)")?;
            } else {
                writeln!(out, "actions: {list}")?;
            }
        }
    }
    write!(out, "> ")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_answers_follow_the_env_spec() {
        // Instruction following scores the whole response: no tag added.
        assert_eq!(as_free_text_response("instruction", "a\nb"), "a\nb");
        // Coding reads its code from the tag.
        assert_eq!(
            as_free_text_response("coding", "def f():\n    return 1"),
            "<action>\ndef f():\n    return 1\n</action>"
        );
        assert!(answer_format("coding").is_free_text());
        assert!(!answer_format("sokoban").is_free_text());
        assert!(!answer_format("nope").is_free_text());
    }
}
