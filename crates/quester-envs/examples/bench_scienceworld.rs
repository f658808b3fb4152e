//! ScienceWorld env speed, in release (bench/scienceworld.sh runs it next to the Python
//! package):
//!     cargo run --release -p quester-envs --example bench_scienceworld -- [REPEATS] [TASK...]
//! For each task (variation 0 of train, `easy`), replays its gold path REPEATS times (a restart
//! before each) with the default config (the observation lists valid actions, so every step
//! also asks for them, as the Python package's `step` does) and with `max_listed_actions = 0`.
//! Prints the start-up time, steps/s and restarts/s, and `RESULT` lines for the script.

use quester_envs::scienceworld::{ScienceWorldConfig, ScienceWorldEnv};
use quester_envs::Env;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut tasks: Vec<String> = args.collect();
    if tasks.is_empty() {
        tasks = [
            "find-non-living-thing",
            "find-animal",
            "find-plant",
            "use-thermometer",
        ]
        .map(String::from)
        .to_vec();
    }
    for (label, listed) in [("ours", 50usize), ("ours_lean", 0)] {
        let config = ScienceWorldConfig {
            tasks: tasks.clone(),
            max_turns: 200,
            max_listed_actions: listed,
            ..ScienceWorldConfig::default()
        };
        let mut env = ScienceWorldEnv::new(config).unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        env.reset(0).unwrap_or_else(|e| panic!("{e}"));
        let startup = t.elapsed();
        let (mut steps, mut step_time, mut restarts, mut restart_time) =
            (0usize, Duration::ZERO, 0usize, Duration::ZERO);
        for (i, task) in tasks.iter().enumerate() {
            // Seed i is task i, variation train[0].
            env.reset(i as u64).unwrap();
            let gold = env.gold_actions().unwrap();
            for _ in 0..repeats {
                let t = Instant::now();
                env.restart().unwrap();
                restart_time += t.elapsed();
                restarts += 1;
                let t = Instant::now();
                let mut won = false;
                // Some gold paths go on after the task is complete (a last `wait1`): stop there.
                for a in &gold {
                    let s = env.step(&format!("<action>{a}</action>"));
                    assert!(s.valid, "{task}: `{a}`: {:?}", s.info);
                    steps += 1;
                    won = s.won;
                    if s.done {
                        break;
                    }
                }
                step_time += t.elapsed();
                assert!(won, "{task}: the gold path did not win");
            }
        }
        let sps = steps as f64 / step_time.as_secs_f64();
        let rps = restarts as f64 / restart_time.as_secs_f64();
        println!(
            "{label}: start-up {:.2} s; {steps} gold-path steps in {:.2} s = {sps:.1} steps/s \
             ({:.2} ms/step); {restarts} restarts, {:.1} ms each (max_listed_actions = {listed})",
            startup.as_secs_f64(),
            step_time.as_secs_f64(),
            1e3 / sps,
            1e3 / rps
        );
        println!("RESULT {label}_steps_per_s {sps:.3}");
        println!("RESULT {label}_restart_ms {:.3}", 1e3 / rps);
        println!("RESULT {label}_startup_s {:.3}", startup.as_secs_f64());
    }
}
