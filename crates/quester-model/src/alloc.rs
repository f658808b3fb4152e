//! The allocator of the `quester` binary and the benchmarks: mimalloc, with freed memory kept
//! for reuse instead of handed back to the OS.
//!
//! A training step frees and re-allocates activation buffers of tens of megabytes many times.
//! Handed back, every new buffer is page-faulted in and zeroed by the kernel again, and every
//! unmap flushes both cores' TLBs: with glibc's allocator that was 29% of a full fine-tuning
//! step, with mimalloc's default (purge after 10 ms) 33%. Kept, the step is 1.3x faster and the
//! resident memory stays at the step's peak.

/// The allocator, for `#[global_allocator] static A: Allocator = Allocator;`.
pub use mimalloc::MiMalloc as Allocator;

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e` of mimalloc 2 and 3).
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// Tells mimalloc never to purge freed memory, unless `MIMALLOC_PURGE_DELAY` is set (then
/// mimalloc reads that). Call at the start of `main`; only has an effect when [`Allocator`]
/// is the global allocator.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads options thread-safely.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}
