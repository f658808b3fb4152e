//! How fast decoding's bf16 products stream their weights, by shape: for each shape, 30-60
//! distinct random matrices (more than the caches hold together, as a token step's are)
//! packed as generation packs them, multiplied at ROWS rows one after another; the median of 7
//! timed passes after 2 warm-ups, as microseconds a product and GB/s of bf16 weights. The
//! shapes are the default model's (q/o, k/v, gate/up, down, the head's input width) and the
//! fused products a layer could use instead (q/k/v in one, gate/up in one), plus down's
//! shared dimension halved and varied, which shows where its rate falls.
//!
//! Usage: RAYON_NUM_THREADS=2 bench_product_shapes [ROWS=32]
#[global_allocator]
static GLOBAL: quester_model::alloc::Allocator = quester_model::alloc::Allocator;
use quester_model::ops::PackedMatrix;
use quester_model::Precision;
use std::io::Write;

mod common;

fn main() {
    quester_model::alloc::keep_freed_memory();
    if let Err(e) = quester_model::threads::on_rayon_worker(run) {
        eprintln!("bench_product_shapes: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let rows: usize = match std::env::args().nth(1) {
        None => 32,
        Some(a) => a
            .parse()
            .map_err(|_| format!("ROWS must be a whole number, not {a:?}"))?,
    };
    let mut random = common::random_values();
    // (name, out, in, matrices)
    let kinds: &[(&str, usize, usize, usize)] = &[
        ("q/o 576x576", 576, 576, 60),
        ("k/v 192x576", 192, 576, 60),
        ("q+k+v 960x576", 960, 576, 30),
        ("gate/up 1536x576", 1536, 576, 60),
        ("gate+up 3072x576", 3072, 576, 30),
        ("down 576x1536", 576, 1536, 30),
        ("576x768", 576, 768, 60),
        ("576x1024", 576, 1024, 45),
        ("576x1280", 576, 1280, 36),
    ];
    let x = random(rows * 3072);
    for &(name, out, inp, count) in kinds {
        let ms: Vec<PackedMatrix> = (0..count)
            .map(|_| PackedMatrix::pack_in(&random(out * inp), out, inp, Precision::Bf16))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let secs = common::median_secs(|| {
            for m in &ms {
                std::hint::black_box(m.matmul_slice(&x[..rows * inp], rows));
            }
        });
        let bytes = (out * inp * 2 * count) as f64;
        writeln!(
            std::io::stdout(),
            "{name:20} x{count}: {:.3} ms, {:.1} us each, {:.1} GB/s",
            secs * 1e3,
            secs * 1e6 / count as f64,
            bytes / secs / 1e9
        )
        .map_err(|e| format!("writing the results: {e}"))?;
    }
    Ok(())
}
