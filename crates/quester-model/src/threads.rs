//! How candle's CPU thread pool waits between its ops, next to rayon's pool of our kernels.
//!
//! A CPU step runs on two pools: candle's elementwise ops and copies on candle-core's own
//! barrier pool, our fused kernels (products, attention, norms) on rayon's. After each op a
//! worker of candle's pool spins before it sleeps, `CANDLE_BARRIER_POOL_SPIN_LIMIT` times
//! (candle's default: 25,000 `pause`s, about 0.6 ms here). Between two candle ops of a training
//! step there is usually one of our kernels, so on a machine with as many cores as threads the
//! spinning worker takes a core from the rayon threads doing the work: 4.7% of a GRPO-shaped
//! LoRA step's CPU samples (`perf`, 2 threads on 2 cores). Spinning about as long as waking a
//! sleeping thread costs keeps the fast hand-off between back-to-back candle ops and gives the
//! core back otherwise: the spin went to 0.2% of the step's samples, and batched decoding got
//! 6-9% faster (`docs/performance.md`, session 20).

/// Spins of a candle pool worker before it sleeps: 1,000 `pause`s, about 25 microseconds on the
/// machines we measured (a futex wake-up and a context switch take 5-20).
pub const CANDLE_SPIN_LIMIT: u32 = 1_000;

/// The environment variable candle-core reads when it starts its pool.
const SPIN_VAR: &str = "CANDLE_BARRIER_POOL_SPIN_LIMIT";

/// Sets candle's pool spin limit to [`CANDLE_SPIN_LIMIT`] unless `CANDLE_BARRIER_POOL_SPIN_LIMIT`
/// is already set (then candle reads that). Call at the start of `main`, before any other thread
/// starts and before the first tensor op (candle reads the variable once, when its pool starts).
pub fn share_cores_with_candle() {
    if std::env::var_os(SPIN_VAR).is_none() {
        // Writing the environment races only with threads that read it; at the start of `main`
        // there are none.
        std::env::set_var(SPIN_VAR, CANDLE_SPIN_LIMIT.to_string());
    }
}

/// Runs `f` on one of rayon's worker threads and returns its result; the calling thread waits
/// once, for the whole of `f`.
///
/// A parallel op started from a thread outside rayon's pool hands its work to the pool and puts
/// the caller to sleep until the pool is done: a futex wait and wake-up, and two context
/// switches, for every product, norm and attention call of a step. Started from a worker, the
/// same op splits its work on that worker's own queue and runs part of it on that thread.
/// `rayon::join` called from outside the pool runs both closures on a worker: here the whole
/// program's work, with nothing beside it. `f` holds that worker until it returns, so it must
/// not wait long on other threads that use the pool.
pub fn on_rayon_worker<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::join(f, || ()).0
}
