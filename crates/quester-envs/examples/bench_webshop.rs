//! WebShop speed and search quality, in release:
//!     cargo run --release -p quester-envs --example bench_webshop
//! Prints catalogue load time, recall@10/@50 of the goal product when searching with the goal
//! text (all goals), search latency (mean, p95) and env steps/s with random valid actions.

use quester_envs::webshop::bm25::Bm25Index;
use quester_envs::webshop::{Catalogue, WebShopConfig, WebShopEnv};
use quester_envs::Env;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let t = Instant::now();
    let cat = match Catalogue::load_embedded() {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("cannot load the catalogue: {e}");
            std::process::exit(1);
        }
    };
    let load_s = t.elapsed().as_secs_f64();
    println!(
        "catalogue: {} products, {} goals, load (gunzip + parse + index + goals) {:.1} ms",
        cat.products.len(),
        cat.goals.len(),
        load_s * 1e3
    );

    // The index alone (part of the load above).
    let docs: Vec<&str> = cat.products.iter().map(|p| p.contents.as_str()).collect();
    let t = Instant::now();
    let index = Bm25Index::build(&docs);
    println!(
        "  of which BM25 index build {:.1} ms ({} docs)",
        t.elapsed().as_secs_f64() * 1e3,
        index.len()
    );

    // Search quality and latency over every goal.
    let mut hit10 = 0usize;
    let mut hit50 = 0usize;
    let mut lat = Vec::with_capacity(cat.goals.len());
    for g in &cat.goals {
        let t = Instant::now();
        let res = cat.search(&g.text.to_lowercase(), 50);
        lat.push(t.elapsed().as_secs_f64());
        if let Some(pos) = res.iter().position(|&p| p == g.product) {
            hit50 += 1;
            if pos < 10 {
                hit10 += 1;
            }
        }
    }
    let n = cat.goals.len() as f64;
    lat.sort_by(f64::total_cmp);
    let mean = lat.iter().sum::<f64>() / lat.len() as f64;
    let pct = |q: usize| lat[(lat.len() * q / 100).min(lat.len() - 1)];
    let p95 = pct(95);
    println!(
        "recall@10 {:.4}  recall@50 {:.4}  (query = goal text, {} goals)",
        hit10 as f64 / n,
        hit50 as f64 / n,
        cat.goals.len()
    );
    println!(
        "search latency: mean {:.1} us, p95 {:.1} us (p50 {:.1}, p99 {:.1}, max {:.1})",
        mean * 1e6,
        p95 * 1e6,
        pct(50) * 1e6,
        pct(99) * 1e6,
        lat[lat.len() - 1] * 1e6
    );

    // Env throughput with random valid actions.
    let config = WebShopConfig::default();
    let mut env = match WebShopEnv::with_catalogue(Arc::clone(&cat), config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let words: Vec<String> = cat
        .goals
        .iter()
        .take(200)
        .flat_map(|g| {
            g.text
                .split_whitespace()
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
        })
        .collect();
    let steps = 100_000usize;
    let mut episodes = 0usize;
    let mut turn = 0usize;
    let _ = env.reset(0);
    let t = Instant::now();
    for i in 0..steps {
        let actions = env.admissible_actions().unwrap_or_default();
        let action = match actions.first().map(String::as_str) {
            Some(quester_envs::webshop::env::SEARCH_ACTION) => {
                let k = rng.random_range(1..5);
                let q: Vec<&str> = (0..k)
                    .filter_map(|_| words.choose(&mut rng).map(String::as_str))
                    .collect();
                format!("search[{}]", q.join(" "))
            }
            _ => actions.choose(&mut rng).cloned().unwrap_or_default(),
        };
        let step = env.step(&format!("<action>{action}</action>"));
        turn += 1;
        if step.done || turn >= env.max_turns() {
            episodes += 1;
            turn = 0;
            let _ = env.reset(i as u64 + 1);
        }
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "env: {} random valid steps ({} episodes) in {:.2} s = {:.0} steps/s",
        steps,
        episodes,
        dt,
        steps as f64 / dt
    );
}
