//! The server's admission limit and counters: sequences waiting or running are counted from
//! the moment their request is accepted until it leaves the generation thread, and a request
//! that would pass the limit is refused at once (HTTP 429) instead of waiting unseen.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Counters of the server, shared by the request handlers and the generation thread.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    limit: usize,
    /// Sequences accepted and not yet gone (waiting or running).
    admitted: AtomicUsize,
    /// Sequences decoding now.
    running: AtomicUsize,
    finished: AtomicU64,
    cancelled: AtomicU64,
    refused: AtomicU64,
}

/// A snapshot of the server's counters (`GET /health` reports them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ServeStats {
    /// Sequences accepted and not finished (waiting or running).
    pub queued: usize,
    /// Sequences decoding now.
    pub running: usize,
    /// Sequences that ended and were answered (or failed).
    pub finished: u64,
    /// Sequences dropped because their client went away.
    pub cancelled: u64,
    /// Requests refused because the queue was full (HTTP 429).
    pub refused: u64,
}

/// Room for a request's sequences in the queue, given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    queue: Arc<Queue>,
    n: usize,
}

impl Queue {
    /// A queue admitting at most `limit` sequences at once.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Room for `n` sequences, or None (counted as refused) when the queue would pass its limit.
    pub fn admit(self: &Arc<Self>, n: usize) -> Option<Permit> {
        let mut now = self.admitted.load(Ordering::SeqCst);
        loop {
            if now + n > self.limit {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            match self
                .admitted
                .compare_exchange(now, now + n, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return Some(Permit {
                        queue: Arc::clone(self),
                        n,
                    })
                }
                Err(actual) => now = actual,
            }
        }
    }

    /// `n` more sequences decoding.
    pub fn started(&self, n: usize) {
        self.running.fetch_add(n, Ordering::Relaxed);
    }

    /// A running sequence ended (answered, failed or cancelled).
    pub fn ended(&self, cancelled: bool) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        if cancelled {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        } else {
            self.finished.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `n` waiting sequences dropped before they ran (their client left).
    pub fn dropped_waiting(&self, n: usize) {
        self.cancelled.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn stats(&self) -> ServeStats {
        ServeStats {
            queued: self.admitted.load(Ordering::SeqCst),
            running: self.running.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.queue.admitted.fetch_sub(self.n, Ordering::SeqCst);
    }
}
