//! A process-wide pool of idle simulator servers. The trainer builds a fresh env per trial and
//! drops it at the end of the step; without the pool every env would start (and kill) a JVM,
//! about 5 s each. With it, a dropped env's server waits here, and the next env started with
//! the same `java`, jar and heap takes it instead of starting one.
//!
//! - An env takes a server at its first `reset` (or after a crash) when `pool_idle_max > 0`:
//!   the most recently returned one with its [`ServerKey`], after a ping; a dead or wedged one
//!   is killed and reaped, and the next is tried.
//! - A dropped env gives its server back when `pool_idle_max > 0` and the server passes the
//!   ping; otherwise the server is killed. The pool then keeps at most `pool_idle_max` idle
//!   servers (the oldest beyond that are killed).
//! - Nothing carries over from one user to the next but the JVM itself: the env `load`s its
//!   task, variation, simplifications and gold-path flag on every reset, and the step limit,
//!   turn limit and episode live on the Rust side.
//! - At process exit the idle servers are killed (an `atexit` handler, Unix); on Linux they
//!   also die with the process when it is killed (`PR_SET_PDEATHSIG`, see `server.rs`).
//!   [`drain_pool`] kills them at any time.

use super::server::{Server, ServerKey};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::Duration;

/// The default of `pool_idle_max`.
pub const DEFAULT_POOL_IDLE_MAX: usize = 16;

/// How long the liveness ping may take (it answers in well under a millisecond).
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Idle servers, oldest first.
static POOL: Mutex<Vec<Server>> = Mutex::new(Vec::new());

fn lock() -> MutexGuard<'static, Vec<Server>> {
    POOL.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An idle, live server started with `key`, its call limit set to `call_timeout`; `None`
/// when there is none.
pub(crate) fn take(key: &ServerKey, call_timeout: Duration) -> Option<Server> {
    loop {
        let mut server = {
            let mut pool = lock();
            let i = pool.iter().rposition(|s| s.key() == key)?;
            pool.remove(i)
        };
        if server.ping(PING_TIMEOUT) {
            server.set_call_timeout(call_timeout);
            return Some(server);
        }
        // Dead or wedged: dropping it kills and reaps it.
        drop(server);
    }
}

/// Gives `server` back: kept when `idle_max > 0` and it answers, else killed; the oldest
/// beyond `idle_max` idle servers are killed.
pub(crate) fn give(mut server: Server, idle_max: usize) {
    if idle_max == 0 || !server.ping(PING_TIMEOUT) {
        return;
    }
    register_exit_hook();
    let evicted: Vec<Server> = {
        let mut pool = lock();
        pool.push(server);
        let extra = pool.len().saturating_sub(idle_max);
        pool.drain(..extra).collect()
    };
    // Killed outside the lock.
    drop(evicted);
}

/// Kills (and reaps) every idle server; returns how many there were.
pub fn drain_pool() -> usize {
    let all: Vec<Server> = std::mem::take(&mut *lock());
    let n = all.len();
    drop(all);
    n
}

/// The process ids of the idle servers, oldest first.
pub fn idle_server_pids() -> Vec<u32> {
    lock().iter().map(Server::pid).collect()
}

#[cfg(unix)]
fn register_exit_hook() {
    static ONCE: Once = Once::new();
    extern "C" fn at_exit() {
        // Never wait at exit: when another thread holds the lock, the death signal (Linux)
        // still takes the servers down.
        let all = match POOL.try_lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        drop(all);
    }
    ONCE.call_once(|| {
        // SAFETY: `at_exit` is a plain `extern "C" fn()` that does not unwind (it only locks
        // without waiting, kills, reaps and removes folders).
        unsafe {
            libc::atexit(at_exit);
        }
    });
}

#[cfg(not(unix))]
fn register_exit_hook() {}
