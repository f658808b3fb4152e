//! Buffers of bf16 pairs reused on the thread that freed them.
//!
//! Every product converts its left operand into a fresh buffer of pairs and a training step's
//! products pack their right operand too: a zeroed allocation each, which the allocator clears
//! in one pass on one thread before the conversion writes it again (2.4% of a full fine-tune
//! step). A buffer taken from here holds stale values instead, so its users write every element
//! they read, padding included.

use std::cell::RefCell;

/// Buffers a thread keeps (a projection's two or three at a time, a few projections' worth).
const KEEP: usize = 8;

thread_local! {
    static FREE: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` values whose contents are unspecified (stale values of an earlier use,
/// or zeros): the smallest kept one that is large enough, else a new one.
pub(super) fn take(len: usize) -> Vec<u32> {
    let kept = FREE
        .try_with(|free| {
            let mut free = free.borrow_mut();
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= len)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i)?;
            Some(free.swap_remove(best))
        })
        .ok()
        .flatten();
    match kept {
        Some(mut v) => {
            // Truncates, or zero-fills the part past its last length: every element stays
            // initialised.
            v.resize(len, 0);
            v
        }
        None => vec![0u32; len],
    }
}

/// Keeps `v` for a later [`take`] on this thread; past [`KEEP`] buffers the smallest is freed.
pub(super) fn give(v: Vec<u32>) {
    if v.capacity() == 0 {
        return;
    }
    let _ = FREE.try_with(|free| {
        let mut free = free.borrow_mut();
        free.push(v);
        if free.len() > KEEP {
            let smallest = (0..free.len())
                .min_by_key(|&i| free[i].capacity())
                .unwrap_or(0);
            free.swap_remove(smallest);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_at_the_length_asked() {
        // Its own thread: the pool is per thread, and other tests run products on theirs.
        std::thread::spawn(|| {
            let mut v = take(100);
            assert_eq!(v.len(), 100);
            v.fill(7);
            let ptr = v.as_ptr();
            give(v);
            let w = take(60);
            assert_eq!((w.len(), w.as_ptr()), (60, ptr));
            assert!(w.iter().all(|&x| x == 7));
            give(w);
            // Larger than anything kept: a new, zeroed buffer.
            let big = take(1000);
            assert!(big.len() == 1000 && big.iter().all(|&x| x == 0));
            // Past its last length, the reused buffer is zero-filled.
            let z = take(100);
            assert_eq!(&z[60..], &[0u32; 40][..]);
            for _ in 0..2 * KEEP {
                give(vec![1; 10]);
            }
            FREE.with(|f| assert_eq!(f.borrow().len(), KEEP));
        })
        .join()
        .unwrap();
    }
}
