//! Sokoban speed in the LaMer config (6x6, 2 boxes, search depth 100), for bench/sokoban.sh.
//!
//! Usage: bench_sokoban [ROOMS] [STEPS]
//! Prints per-room time of the full pipeline (generation + displacement + optimal-length check +
//! resampling), per-draw times of the parts, and env steps per second. Machine-readable lines
//! start with `RESULT`.

use std::time::Instant;

use quester_envs::sokoban::generate::{displace_player, generate_room};
use quester_envs::sokoban::{generate, solution_len, Sokoban, SokobanConfig};
use quester_envs::Env;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// CPU time of this thread in ns (Linux schedstat), so a loaded machine does not skew totals.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Microseconds since `(wall, cpu)`: CPU time when readable, else wall time.
fn elapsed_us(wall: Instant, cpu: Option<u64>) -> f64 {
    match (cpu, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e3,
        _ => wall.elapsed().as_secs_f64() * 1e6,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rooms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5000);
    let steps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let config = SokobanConfig::default();

    // Full pipeline, one accepted room per seed.
    let mut times = Vec::with_capacity(rooms as usize);
    let mut draws = 0usize;
    let mut len_sum = 0usize;
    let t_all = Instant::now();
    let cpu_all = cpu_ns();
    for seed in 0..rooms {
        let t = Instant::now();
        let g = generate(&config, seed).expect("LaMer config generates");
        times.push(t.elapsed().as_secs_f64() * 1e6);
        draws += g.attempts;
        len_sum += g.solution_len;
    }
    let total = t_all.elapsed().as_secs_f64();
    let cpu = cpu_ns()
        .zip(cpu_all)
        .map(|(b, a)| (b - a) as f64 / 1e3 / rooms as f64);
    times.sort_by(f64::total_cmp);
    let mean = total * 1e6 / rooms as f64;
    println!(
        "rust pipeline: {rooms} rooms in {total:.3} s: mean {mean:.1} us/room, p50 {:.1}, p95 {:.1}; \
         {:.3} draws/room ({:.1}% of draws rejected); mean optimal length {:.2}",
        percentile(&times, 0.5),
        percentile(&times, 0.95),
        draws as f64 / rooms as f64,
        100.0 * (draws as f64 - rooms as f64) / draws as f64,
        len_sum as f64 / rooms as f64
    );
    println!("RESULT rust_pipeline_us_per_room {mean:.3}");
    if let Some(cpu) = cpu {
        println!("rust pipeline CPU time: {cpu:.1} us/room");
        println!("RESULT rust_pipeline_cpu_us_per_room {cpu:.3}");
    }

    // Parts, per draw: generation (reverse play), then the optimal-length check of the drawn
    // rooms, each timed as one block (CPU time where available, else wall).
    let mut rng = ChaCha8Rng::seed_from_u64(12345);
    let (t, c) = (Instant::now(), cpu_ns());
    let drawn: Vec<_> = (0..rooms)
        .filter_map(|_| generate_room(&config, &mut rng))
        .collect();
    let gen_us = elapsed_us(t, c) / rooms as f64;
    let mut displaced = drawn;
    displaced
        .iter_mut()
        .for_each(|room| displace_player(room, &mut rng));
    let (t, c) = (Instant::now(), cpu_ns());
    let solvable = displaced
        .iter()
        .filter(|room| matches!(solution_len(room), Ok(Some(_))))
        .count();
    let solve_us = elapsed_us(t, c) / displaced.len() as f64;
    assert_eq!(solvable, displaced.len());
    println!(
        "rust parts (CPU): generate_room {gen_us:.1} us/draw, solution check {solve_us:.2} us/room ({} rooms)",
        displaced.len()
    );
    println!("RESULT rust_generate_us_per_draw {gen_us:.3}");
    println!("RESULT rust_solve_us_per_room {solve_us:.3}");

    // Env steps: one move per step, cycling through a fixed action list, deadlock check on.
    let mut env = Sokoban::new(config).expect("default config");
    let actions = [
        "<action>up</action>",
        "<action>right</action>",
        "<action>down</action>",
        "<action>left</action>",
        "<action>right</action>",
        "<action>down</action>",
    ];
    let mut seed = 0;
    env.reset(seed).expect("reset");
    let (t, c) = (Instant::now(), cpu_ns());
    let mut episodes = 0;
    for i in 0..steps {
        let s = env.step(actions[(i * 7 + i / 5) % actions.len()]);
        if s.done {
            episodes += 1;
            // Replay the same room (restart) most of the time, as LaMer trials do.
            if episodes % 4 == 0 {
                seed += 1;
                env.reset(seed).expect("reset");
            } else {
                env.restart().expect("restart");
            }
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let secs = elapsed_us(t, c) / 1e6;
    println!(
        "rust env: {steps} steps in {secs:.3} s CPU ({wall:.3} s wall) = {:.0} steps/s \
         ({episodes} episodes, resets and restarts included)",
        steps as f64 / secs
    );
    println!("RESULT rust_env_steps_per_s {:.0}", steps as f64 / secs);
}
