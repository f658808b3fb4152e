//! Steps per second of the game environments (MineSweeper, Tic-Tac-Toe, Kuhn, bandit).
//!
//! Run: `cargo run --release -p quester-envs --example bench_games`
//! Each env plays whole episodes from consecutive seeds with a seeded random agent that picks
//! one of `admissible_actions()` (a trainer lists them in the prompt every turn); the timed loop
//! is reset + admissible_actions + step, including the opponent's reply and the observation
//! text. Time is this thread's CPU time (`/proc/thread-self/schedstat`, wall time where that is
//! missing), so other processes on a loaded machine do not inflate it. Prints a markdown table,
//! then runs the plain-Python anchor `bench/games_anchor.py` (same rules, same protocol, CPU time
//! of its thread; needs `python3` on PATH, skipped otherwise) and prints the speed ratios.

use quester_envs::kuhn::{exploitability, game_value, solve_cfr_plus, CFR_ITERATIONS};
use quester_envs::make_env;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

struct Row {
    name: String,
    episodes: u64,
    steps: u64,
    secs: f64,
}

fn run(name: &str, env_name: &str, config: &str, episodes: u64) -> Row {
    let table: toml::Table = config.parse().expect("bench config is valid TOML");
    let mut env = make_env(env_name, table).expect("bench config is valid");
    let mut agent = ChaCha8Rng::seed_from_u64(7);
    let mut steps = 0u64;
    let start = Clock::start();
    for seed in 0..episodes {
        env.reset(seed).expect("reset");
        while !env.is_done() {
            let actions = env.admissible_actions().unwrap_or_default();
            let text = if actions.is_empty() {
                "<action>?</action>".to_string()
            } else {
                format!(
                    "<action>{}</action>",
                    actions[agent.random_range(0..actions.len())]
                )
            };
            std::hint::black_box(env.step(&text));
            steps += 1;
        }
    }
    Row {
        name: name.to_string(),
        episodes,
        steps,
        secs: start.seconds(),
    }
}

/// This thread's CPU time when Linux reports it, wall time otherwise.
enum Clock {
    Cpu(u64),
    Wall(Instant),
}

fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

impl Clock {
    fn start() -> Self {
        thread_cpu_ns().map_or_else(|| Clock::Wall(Instant::now()), Clock::Cpu)
    }

    fn seconds(&self) -> f64 {
        match self {
            Clock::Cpu(t0) => thread_cpu_ns().map_or(f64::NAN, |t| (t - t0) as f64 * 1e-9),
            Clock::Wall(t0) => t0.elapsed().as_secs_f64(),
        }
    }
}

fn main() {
    let rows = [
        run("minesweeper 6x6, 3 mines", "minesweeper", "", 100_000),
        run("tictactoe vs mcts (100 sims)", "tictactoe", "", 2_000),
        run(
            "tictactoe vs mcts (1000 sims)",
            "tictactoe",
            "simulations = 1000",
            500,
        ),
        run(
            "tictactoe vs order0",
            "tictactoe",
            "opponent = \"order0\"",
            100_000,
        ),
        run("kuhn vs cfr", "kuhn", "", 200_000),
        run(
            "kuhn vs intermediate",
            "kuhn",
            "opponent = \"intermediate\"",
            200_000,
        ),
        run("bandit K=4", "bandit", "", 500_000),
    ];
    println!("| env | episodes | steps | CPU seconds | steps/s | us/step |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.0} | {:.2} |",
            r.name,
            r.episodes,
            r.steps,
            r.secs,
            r.steps as f64 / r.secs,
            1e6 * r.secs / r.steps as f64
        );
    }
    let start = Clock::start();
    let eq = solve_cfr_plus(CFR_ITERATIONS);
    let secs = start.seconds();
    anchor(&rows[0], &rows[1]);
    println!();
    println!(
        "CFR+ {CFR_ITERATIONS} iterations: {:.1} ms; exploitability {:.2e}; game value {:.6} \
         (exact -1/18 = {:.6})",
        1e3 * secs,
        exploitability(&eq),
        game_value(&eq),
        -1.0 / 18.0
    );
}

/// Runs the Python anchor and prints Rust/Python step-rate ratios.
fn anchor(minesweeper: &Row, tictactoe: &Row) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/games_anchor.py");
    let out = std::process::Command::new("python3")
        .args([script, "20000", "500"])
        .output();
    let Ok(out) = out.map_err(|e| println!("\nanchor skipped: {e}")) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
        println!("\nanchor skipped: {}", String::from_utf8_lossy(&out.stderr));
        return;
    };
    println!(
        "\nPython {} anchor (bench/games_anchor.py):\n",
        json["python"]
    );
    println!("| env | python steps/s | rust steps/s | rust / python |");
    println!("|---|---:|---:|---:|");
    for (key, row) in [
        ("minesweeper", minesweeper),
        ("tictactoe_mcts100", tictactoe),
    ] {
        let py = &json[key];
        let (steps, secs) = (py["steps"].as_f64(), py["seconds"].as_f64());
        if let (Some(steps), Some(secs)) = (steps, secs) {
            let py_rate = steps / secs;
            let rust_rate = row.steps as f64 / row.secs;
            println!(
                "| {} | {py_rate:.0} | {rust_rate:.0} | {:.1}x |",
                row.name,
                rust_rate / py_rate
            );
        }
    }
}
