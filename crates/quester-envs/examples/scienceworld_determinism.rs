//! Which ScienceWorld tasks replay deterministically: the measurement behind the table in
//! `docs/envs/scienceworld.md` (crash recovery replays an attempt's actions and compares).
//!
//!     cargo run -p quester-envs --example scienceworld_determinism -- \
//!         [--replays N] [--fresh K] [--random-steps S] [--seed X] [--json PATH] [TASK...]
//!
//! For each task (all 30 by default) and two variations (0 and the first of the test split),
//! with `easy` simplifications, as the env loads them:
//! - the gold path (fetched once, on the first process) is replayed N times (default 3) in one
//!   new Java process, once more in each of K-1 further new processes (default K = 2), and
//!   once in a long-lived process that has played every task before (as the env's pool
//!   does);
//! - a seeded random path is drawn on the first process: S steps (default 15), each uniform
//!   over the valid actions listed there (`focus on ...` left out: a wrong focus ends the task
//!   at once), then replayed as text like the gold path, twice on the first process and once
//!   on each of the others.
//!
//! Every run loads the task fresh and steps the actions; it records the score after each step
//! (round(100 * getScore)), the first step at which the task is complete or failed, and the
//! answers. Runs are compared with the first: score sequences, end step, and answers (the
//! same, the same up to the order of list items, or different). Prints a table; writes JSON
//! (default `docs/envs/scienceworld-determinism.json`).

use quester_envs::scienceworld::py4j::Arg;
use quester_envs::scienceworld::{
    order_valid_actions, same_up_to_order, Server, ServerError, ServerOptions, TASKS,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SIMPLIFICATIONS: &str = "easy";

struct Args {
    replays: usize,
    fresh: usize,
    random_steps: usize,
    seed: u64,
    json: String,
    tasks: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        replays: 3,
        fresh: 2,
        random_steps: 15,
        seed: 0,
        json: "docs/envs/scienceworld-determinism.json".into(),
        tasks: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let number =
            |v: String, name: &str| v.parse::<u64>().map_err(|e| format!("{name} {v}: {e}"));
        match arg.as_str() {
            "--replays" => a.replays = number(value("--replays")?, "--replays")?.max(2) as usize,
            "--fresh" => a.fresh = number(value("--fresh")?, "--fresh")?.max(1) as usize,
            "--random-steps" => {
                a.random_steps = number(value("--random-steps")?, "--random-steps")? as usize;
            }
            "--seed" => a.seed = number(value("--seed")?, "--seed")?,
            "--json" => a.json = value("--json")?,
            t if t.starts_with("--") => return Err(format!("unknown option {t}")),
            t => a.tasks.push(t.to_string()),
        }
    }
    if a.tasks.is_empty() {
        a.tasks = TASKS.iter().map(|(_, n, _)| n.to_string()).collect();
    }
    Ok(a)
}

/// One replay of a fixed action sequence.
struct Run {
    label: String,
    scores: Vec<i64>,
    /// 1-based step at which the task was complete or failed.
    end: Option<usize>,
    texts: Vec<String>,
}

fn replay(
    server: &mut Server,
    task: &str,
    variation: i32,
    actions: &[String],
    label: String,
) -> Result<Run, ServerError> {
    server.load(task, variation, SIMPLIFICATIONS, false)?;
    server.call_str("step", &[Arg::Str("look around")])?;
    let mut run = Run {
        label,
        scores: Vec::new(),
        end: None,
        texts: Vec::new(),
    };
    for (i, a) in actions.iter().enumerate() {
        run.texts.push(server.call_str("step", &[Arg::Str(a)])?);
        let score = (100.0 * server.call_f64("getScore")?).round() as i64;
        run.scores.push(score);
        if run.end.is_none() && (score < 0 || server.call_bool("getCompleted")?) {
            run.end = Some(i + 1);
        }
    }
    Ok(run)
}

/// A seeded random path of up to `steps` valid actions (stops at the end of the task).
fn random_path(
    server: &mut Server,
    task: &str,
    variation: i32,
    steps: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<String>, ServerError> {
    server.load(task, variation, SIMPLIFICATIONS, false)?;
    server.call_str("step", &[Arg::Str("look around")])?;
    let mut path = Vec::new();
    for _ in 0..steps {
        let json = server.call_str("getValidActionObjectCombinationsJSON", &[])?;
        let valid: Vec<String> = order_valid_actions(&json)
            .map_err(ServerError::Simulator)?
            .into_iter()
            .filter(|a| !a.starts_with("focus on"))
            .collect();
        if valid.is_empty() {
            break;
        }
        let a = valid[rng.random_range(0..valid.len())].clone();
        server.call_str("step", &[Arg::Str(&a)])?;
        path.push(a);
        let score = server.call_f64("getScore")?;
        if score < 0.0 || server.call_bool("getCompleted")? {
            break;
        }
    }
    Ok(path)
}

fn cut(s: &str, n: usize) -> String {
    let s = s.trim().replace(['\n', '\t'], " ");
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// How a set of runs of one path compare with the first.
fn compare(runs: &[Run]) -> Value {
    let reference = &runs[0];
    let mut score_seqs: Vec<&Vec<i64>> = Vec::new();
    let mut ends: Vec<Option<usize>> = Vec::new();
    let mut texts = "same";
    let mut first_text_difference = Value::Null;
    for r in runs {
        if !score_seqs.contains(&&r.scores) {
            score_seqs.push(&r.scores);
        }
        if !ends.contains(&r.end) {
            ends.push(r.end);
        }
        for (i, (x, y)) in reference.texts.iter().zip(&r.texts).enumerate() {
            if x == y {
                continue;
            }
            if same_up_to_order(x, y) {
                if texts == "same" {
                    texts = "order";
                }
                continue;
            }
            if texts != "differ" {
                texts = "differ";
                first_text_difference = json!({
                    "run": r.label,
                    "step": i + 1,
                    "first_run": cut(x, 200),
                    "this_run": cut(y, 200),
                });
            }
            break;
        }
    }
    json!({
        "score_sequences": score_seqs.len(),
        "end_steps": ends,
        "texts": texts,
        "first_text_difference": first_text_difference,
        "runs": runs.iter().map(|r| json!({
            "run": r.label,
            "scores": r.scores,
            "end": r.end,
        })).collect::<Vec<_>>(),
    })
}

/// `same`: every run alike (answers up to list order); `texts`: the scores and ends alike,
/// some answers not; `scores`: the scores or the end differ.
fn verdict(gold: &Value, random: &Value) -> &'static str {
    let alike = |v: &Value| {
        (
            v["score_sequences"] == 1 && v["end_steps"].as_array().is_some_and(|a| a.len() == 1),
            v["texts"] != "differ",
        )
    };
    match (alike(gold), alike(random)) {
        ((true, true), (true, true)) => "same",
        ((true, _), (true, _)) => "texts",
        _ => "scores",
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("scienceworld_determinism: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("scienceworld_determinism: {e}");
        std::process::exit(1);
    }
}

/// The call limit: computing the gold path of the genetics tasks can take over 30 s (the env's
/// default limit) on a busy machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let t0 = Instant::now();
    let options = ServerOptions {
        call_timeout: CALL_TIMEOUT,
        startup_timeout: Duration::from_secs(180),
        ..ServerOptions::default()
    };
    let mut pooled = Server::start(&options)?;
    let mut entries = Vec::new();
    println!(
        "{:<50} {:>5} {:>4} | {:>6} {:>9} {:>6} | {:>6} {:>9} {:>6} | verdict",
        "task", "var", "gold", "scores", "end", "texts", "scores", "end", "texts"
    );
    println!(
        "{:<50} {:>5} {:>4} | {:^23} | {:^23} |",
        "", "", "", "gold path", "random path"
    );
    let write = |entries: &[Value], seconds: f64| -> std::io::Result<()> {
        let out = json!({
            "jar": "scienceworld-1.2.3.jar",
            "simplifications": SIMPLIFICATIONS,
            "replays_in_one_process": args.replays,
            "fresh_processes": args.fresh,
            "random_steps": args.random_steps,
            "seed": args.seed,
            "seconds": (seconds * 10.0).round() / 10.0,
            "entries": entries,
        });
        let text = serde_json::to_string_pretty(&out).map_err(std::io::Error::other)?;
        std::fs::write(&args.json, text + "\n")
    };
    for task in &args.tasks {
        if !pooled.is_usable() {
            pooled = Server::start(&options)?;
        }
        pooled.load(task, 0, SIMPLIFICATIONS, false)?;
        let second = pooled.variations("test")?.first().copied().unwrap_or(1);
        for variation in [0, second] {
            let t = Instant::now();
            let seed = args.seed ^ (entries.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let entry =
                measure(args, &options, &mut pooled, task, variation, seed).unwrap_or_else(|e| {
                    println!("{task:<50} {variation:>5} error: {e}");
                    json!({"task": task, "variation": variation, "error": e.to_string()})
                });
            let mut entry = entry;
            entry["seconds"] = json!((t.elapsed().as_secs_f64() * 10.0).round() / 10.0);
            entries.push(entry);
            write(&entries, t0.elapsed().as_secs_f64())?;
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    write(&entries, seconds)?;
    println!("{:.1} s; wrote {}", seconds, args.json);
    Ok(())
}

/// One task and variation: the table row (printed) and the JSON entry.
fn measure(
    args: &Args,
    options: &ServerOptions,
    pooled: &mut Server,
    task: &str,
    variation: i32,
    seed: u64,
) -> Result<Value, ServerError> {
    let t = Instant::now();
    let mut first = Server::start(options)?;
    first.load(task, variation, SIMPLIFICATIONS, true)?;
    let gold = first.gold_actions()?;
    let mut gold_runs = Vec::new();
    for i in 0..args.replays {
        gold_runs.push(replay(
            &mut first,
            task,
            variation,
            &gold,
            format!("jvm1/{}", i + 1),
        )?);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let random = random_path(&mut first, task, variation, args.random_steps, &mut rng)?;
    let mut random_runs = Vec::new();
    for i in 0..2 {
        random_runs.push(replay(
            &mut first,
            task,
            variation,
            &random,
            format!("jvm1/{}", i + 1),
        )?);
    }
    drop(first);
    let mut gold_fetches_differ = false;
    for k in 2..=args.fresh {
        let mut other = Server::start(options)?;
        other.load(task, variation, SIMPLIFICATIONS, true)?;
        gold_fetches_differ |= other.gold_actions()? != gold;
        gold_runs.push(replay(
            &mut other,
            task,
            variation,
            &gold,
            format!("jvm{k}"),
        )?);
        random_runs.push(replay(
            &mut other,
            task,
            variation,
            &random,
            format!("jvm{k}"),
        )?);
    }
    gold_runs.push(replay(pooled, task, variation, &gold, "long-lived".into())?);
    random_runs.push(replay(
        pooled,
        task,
        variation,
        &random,
        "long-lived".into(),
    )?);
    let g = compare(&gold_runs);
    let r = compare(&random_runs);
    let verdict = verdict(&g, &r);
    let ends = |v: &Value| {
        v["end_steps"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e.as_u64().map_or("-".into(), |n| n.to_string()))
                    .collect::<Vec<String>>()
                    .join("/")
            })
            .unwrap_or_default()
    };
    println!(
        "{:<50} {:>5} {:>4} | {:>6} {:>9} {:>6} | {:>6} {:>9} {:>6} | {:<7} ({:.1} s)",
        task,
        variation,
        gold.len(),
        g["score_sequences"],
        ends(&g),
        g["texts"].as_str().unwrap_or(""),
        r["score_sequences"],
        ends(&r),
        r["texts"].as_str().unwrap_or(""),
        verdict,
        t.elapsed().as_secs_f64()
    );
    Ok(json!({
        "task": task,
        "variation": variation,
        "verdict": verdict,
        "gold_actions": gold.len(),
        "gold_fetches_differ": gold_fetches_differ,
        "gold": g,
        "random_actions": random,
        "random": r,
    }))
}
