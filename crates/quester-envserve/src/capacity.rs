//! The session limit: a slot per live WebSocket session, given back when its guard drops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub struct Slots {
    max: usize,
    active: AtomicUsize,
}

/// Holds one slot; dropping it frees the slot.
#[derive(Debug)]
pub struct Slot(Arc<Slots>);

impl Slots {
    pub fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max,
            active: AtomicUsize::new(0),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// A slot, or `None` at the limit (the caller refuses the session at once, never waits).
    pub fn try_acquire(self: &Arc<Slots>) -> Option<Slot> {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(self)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_run_out_and_come_back() {
        let slots = Slots::new(2);
        let a = slots.try_acquire().unwrap();
        let _b = slots.try_acquire().unwrap();
        assert!(slots.try_acquire().is_none());
        drop(a);
        assert_eq!(slots.active(), 1);
        assert!(slots.try_acquire().is_some());
    }
}
