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

/// Rayon's other workers kept awake while this lives: each spins on the pool's queues, running
/// any job it finds.
///
/// Batched decoding starts about ten parallel ops a layer, a few hundred a token step, each
/// short (tens of microseconds) with a serial gap before the next. In the gap the other
/// workers run out of work, spin briefly and sleep; the next op then pays a futex wake-up and a
/// context switch before they help (14% of batched bf16 decoding's samples on the AMX box,
/// `docs/performance.md`, session 29). A worker that never sleeps takes the next op's work as
/// soon as it is queued. The cost is the spinning cores' time, so this is for work that keeps
/// the pool busy anyway, on its own cores.
///
/// Started outside rayon's pool, with one thread, with more threads than the process may run
/// at once (`available_parallelism`: spinners would take cores from workers with work; 4
/// threads on 2 cores decoded 20% slower with them), or while another is alive (nested, on
/// another thread or in another pool: one set of spinners at a time), it does nothing. A
/// spinner gives up after [`KEEP_AWAKE_IDLE`] without a job (the caller waiting on something
/// else than the pool: a worker that picked the spinner up inside a join of its own goes back
/// to it), and [`AwakeWorkers::rearm`] starts new ones once all have given up: a long serial
/// stretch costs the old wake-ups, never a deadlock.
pub struct AwakeWorkers {
    shared: Option<std::sync::Arc<Spinners>>,
}

struct Spinners {
    /// Set when the guard drops.
    done: std::sync::atomic::AtomicBool,
    /// Spinners started and not yet given up (or not yet begun).
    live: std::sync::atomic::AtomicUsize,
    /// Spinners that began spinning, over the guard's life.
    began: std::sync::atomic::AtomicUsize,
    /// The owner's rayon index: its copy of the broadcast returns at once.
    owner: usize,
}

/// Whether an [`AwakeWorkers`] is alive in this process.
static AWAKE_ACTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a spinner looks for work before it gives up: well above the serial gaps of a
/// decoding step (about a millisecond to copy a batch's logits).
pub const KEEP_AWAKE_IDLE: std::time::Duration = std::time::Duration::from_millis(20);

impl AwakeWorkers {
    /// Starts spinners on rayon's other workers (see the type).
    pub fn start() -> Self {
        use std::sync::atomic::Ordering;
        let idle = AwakeWorkers { shared: None };
        let Some(owner) = rayon::current_thread_index() else {
            return idle;
        };
        let threads = rayon::current_num_threads();
        // More workers than cores: a spinner would take a core from a worker with work.
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if threads < 2
            || threads > cores
            || AWAKE_ACTIVE
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return idle;
        }
        let shared = std::sync::Arc::new(Spinners {
            done: false.into(),
            live: 0.into(),
            began: 0.into(),
            owner,
        });
        let awake = AwakeWorkers {
            shared: Some(shared),
        };
        awake.rearm();
        awake
    }

    /// Whether this guard started spinners (see the type for when it does not).
    pub fn is_active(&self) -> bool {
        self.shared.is_some()
    }

    /// Spinners started and not yet given up or stopped.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.shared
            .as_ref()
            .map_or(0, |s| s.live.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Starts new spinners when every earlier one has given up. Cheap (one atomic load) while
    /// they spin: call it at the top of each round of work.
    pub fn rearm(&self) {
        use std::sync::atomic::Ordering;
        let Some(shared) = &self.shared else {
            return;
        };
        if shared.live.load(Ordering::Acquire) > 0 {
            return;
        }
        shared
            .live
            .store(rayon::current_num_threads() - 1, Ordering::Release);
        let s = std::sync::Arc::clone(shared);
        // A broadcast job runs on each worker of this pool, taken by that worker only, so the
        // owner's copy returns at once and no spinner runs on the owner's thread.
        rayon::spawn_broadcast(move |ctx| {
            if ctx.index() != s.owner {
                s.spin();
                s.live.fetch_sub(1, Ordering::AcqRel);
            }
        });
    }
}

impl Spinners {
    fn spin(&self) {
        use std::sync::atomic::Ordering;
        self.began.fetch_add(1, Ordering::AcqRel);
        let mut since = std::time::Instant::now();
        let mut idle = 0u32;
        while !self.done.load(Ordering::Acquire) {
            if rayon::yield_now() == Some(rayon::Yield::Executed) {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle == 1 {
                since = std::time::Instant::now();
            } else if idle.is_multiple_of(256) && since.elapsed() > KEEP_AWAKE_IDLE {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

impl Drop for AwakeWorkers {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        if let Some(shared) = &self.shared {
            shared.done.store(true, Ordering::Release);
            AWAKE_ACTIVE.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::time::{Duration, Instant};

    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let t = Instant::now();
        while !cond() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn spinners_run_the_pools_work_give_up_when_idle_and_stop_with_the_guard() {
        assert!(
            !AwakeWorkers::start().is_active(),
            "outside a pool it does nothing"
        );
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert!(
            !one.install(AwakeWorkers::start).is_active(),
            "one thread: nothing to wake"
        );
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let over = rayon::ThreadPoolBuilder::new()
            .num_threads(cores + 1)
            .build()
            .unwrap();
        assert!(
            !over.install(AwakeWorkers::start).is_active(),
            "more threads than cores"
        );
        if cores < 2 {
            assert!(!pool.install(AwakeWorkers::start).is_active());
            return;
        }
        pool.install(|| {
            // Another test's guard may hold the pool-wide slot for a moment.
            let mut awake = AwakeWorkers::start();
            let t = Instant::now();
            while !awake.is_active() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
                awake = AwakeWorkers::start();
            }
            assert!(awake.is_active());
            assert!(
                !AwakeWorkers::start().is_active(),
                "one set of spinners at a time"
            );
            let shared = std::sync::Arc::clone(awake.shared.as_ref().unwrap());
            let began = || shared.began.load(std::sync::atomic::Ordering::Acquire);
            wait_for("the other worker to start spinning", || began() == 1);
            // The pool's work is done, and done right, with a spinner taking its share.
            for n in [10usize, 1000, 100_000] {
                let sum: usize = (0..n).into_par_iter().map(|i| i * 2).sum();
                assert_eq!(sum, n * (n - 1));
            }
            // With no work the spinner gives up; rearm starts another.
            wait_for("the idle spinner to give up", || awake.live() == 0);
            awake.rearm();
            wait_for("a new spinner", || began() == 2);
            let sum: u64 = (0..1000u64).into_par_iter().sum();
            assert_eq!(sum, 499_500);
            drop(awake);
            wait_for("the spinner to stop with its guard", || {
                shared.live.load(std::sync::atomic::Ordering::Acquire) == 0
            });
            assert!(AwakeWorkers::start().is_active(), "the slot is free again");
        });
    }
}
