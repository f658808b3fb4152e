//! The bf16 panel product on AMX tiles (Intel Sapphire Rapids and later).
//!
//! `tdpbf16ps` multiplies a 16 x 32 bf16 tile of A by a 32 x 16 tile of B held as 16 rows of
//! 16 pairs: exactly the pairs-of-consecutive-k layout of [`super::Bf16Panels`], so a panel of
//! 48 columns is three B tiles side by side (row stride 192 bytes) and no repacking is needed.
//! A 16-row block of A is one tile (row stride: the padded pairs per row), and each step of 32
//! k issues one A load, three B loads and three products into three f32 accumulator tiles.
//!
//! Why this blocking: on the machines measured (Xeons under a hypervisor) a tile load of L1
//! data costs about 22 ns and does not overlap the products (8 ns each at full issue), so the
//! kernel is load-bound at roughly 400 GFLOP/s a thread against 2,100 on registers. A 2 x 2
//! blocking (four accumulators, 32-column panels, L1-sized k chunks, the next A rows
//! prefetched) did up to 1.6x this loop on cache-resident data but nothing in whole products or
//! training steps (docs/performance.md, session 19), so this one keeps the panel layout.
//!
//! Linux hands out the 8 KiB of tile state only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`),
//! once per process; [`ready`] asks and says whether it was granted. Each thread loads the
//! tile configuration before its first product and keeps it (the kernel saves tiles on a
//! context switch like any other register state).

use std::sync::OnceLock;

/// Pairs (32 bf16) per k-step: the width of an A tile and the height of a B tile.
pub(crate) const K_PAIRS: usize = 16;

/// Rows per A tile and per accumulator tile.
pub(crate) const ROWS: usize = 16;

/// Whether this process may use AMX tiles: the CPU has AMX-BF16 and the OS granted the tile
/// state. Asked once per process.
pub fn ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| super::has_amx() && request_tile_state())
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_tile_state() -> bool {
    // From the kernel's uapi (asm/prctl.h, asm/fpu/xstate.h).
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain syscall with integer arguments; it only changes this process's
    // permissions.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn request_tile_state() -> bool {
    false
}

/// Rows of A per task's block on this kernel (the k-chunking of [`super::kernel::K_CHUNK`]
/// keeps the panel in cache, so the block need not shrink as k grows).
pub(crate) const BLOCK_ROWS: usize = 256;

/// y[r, c] = sum over the segments and their pairs q of a[r][q] . panel[q][c] for `rows`
/// rows and `cols` columns; the segments after the first add into the same accumulators.
///
/// # Safety
/// [`ready`] is true; at least one segment has `kp` > 0; each segment's `kp` is a multiple of
/// [`K_PAIRS`], its `a` holds `rows` rounded up to [`ROWS`] rows of `kp` pairs (the padding
/// rows may hold anything: their results are not written) and its `panel` kp * 48 pairs; `y`
/// is valid for `cols` <= 48 writes in each of `rows` rows of stride `ys`.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn panel_product(
    rows: usize,
    segs: &[super::kernel::Segment],
    y: *mut f32,
    ys: usize,
    cols: usize,
) {
    // SAFETY: ready() holds and the segments and y are laid out as this fn's contract says.
    // `configure` needs only ready(); scratch block t < blocks exists (resized above); a
    // whole block's dest y + t * 16 * ys starts a full 16 x 48 block of the output (not
    // `partial`); each part's pointers start at pair q.start < kp of its segment's A rows
    // and panel, `steps` * 16 pairs from there stay inside them (q.end <= kp, kp a multiple
    // of 16); the copy-out writes `cols` floats of rows below `rows` from a scratch block
    // that cannot overlap y.
    unsafe {
        use super::panels::PANEL;
        debug_assert!(cols <= PANEL);
        let blocks = rows.div_ceil(ROWS);
        debug_assert!(segs.iter().all(|g| g.kp.is_multiple_of(K_PAIRS)
            && g.a.len() >= blocks * ROWS * g.kp
            && g.panel.len() >= g.kp * PANEL));
        tiles::configure();
        tiles::SCRATCH.with_borrow_mut(|acc| {
            if acc.len() < blocks {
                acc.resize_with(blocks, || tiles::Block([0f32; ROWS * PANEL]));
            }
            // Where each 16-row block accumulates: a whole block (16 rows, 48 columns) in `y`
            // itself, a partial one in this thread's scratch, copied out at the end. The first
            // chunk writes a block without reading it, so neither needs zeroing.
            let partial = |t: usize| rows - t * ROWS < ROWS || cols < PANEL;
            let scratch = acc.as_mut_ptr();
            let dest = |t: usize| {
                if partial(t) {
                    ((*scratch.add(t)).0.as_mut_ptr(), PANEL)
                } else {
                    (y.add(t * ROWS * ys), ys)
                }
            };
            // The kernel's passes (k chunks, a LoRA rank riding with the last), each over every
            // 16-row block; the first writes a block without reading it.
            for (i, pass) in super::kernel::passes(segs).enumerate() {
                let part = |p: &super::kernel::Part| tiles::Part {
                    a: p.seg.a.as_ptr().add(p.q.start),
                    kp: p.seg.kp,
                    panel: p.seg.panel.as_ptr().add(p.q.start * PANEL),
                    steps: p.q.len() / K_PAIRS,
                };
                let (first, both);
                let parts: &[tiles::Part] = match &pass.rider {
                    Some(r) => {
                        both = [part(&pass.chunk), part(r)];
                        &both
                    }
                    None => {
                        first = [part(&pass.chunk)];
                        &first
                    }
                };
                for t in 0..blocks {
                    tiles::block(parts, t * ROWS, dest(t), i > 0);
                }
            }
            for t in (0..blocks).filter(|&t| partial(t)) {
                for r in 0..(rows - t * ROWS).min(ROWS) {
                    std::ptr::copy_nonoverlapping(
                        acc[t].0.as_ptr().add(r * PANEL),
                        y.add((t * ROWS + r) * ys),
                        cols,
                    );
                }
            }
        });
    }
}

/// GFLOP/s of `tdpbf16ps` on tiles alone on the calling thread, best of `reps` runs of
/// `iters` iterations (four instructions each); None where the tiles are not [`ready`].
pub fn peak(iters: usize, reps: usize) -> Option<f64> {
    if !ready() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let secs = (0..reps.max(1))
            .map(|_| {
                let t = std::time::Instant::now();
                // SAFETY: ready() granted the tile state; configure() loads the palette.
                unsafe {
                    tiles::configure();
                    tiles::chains(iters);
                }
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        // 16 x 16 outputs, 32 multiply-adds each, per instruction.
        let flops = (iters.max(1) * 4 * ROWS * 16 * 2 * K_PAIRS * 2) as f64;
        Some(flops / secs.max(1e-9) / 1e9)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (iters, reps);
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod tiles {
    use super::{K_PAIRS, ROWS};
    use crate::ops::bf16::panels::PANEL;
    use std::arch::asm;
    use std::cell::Cell;

    /// 16 rows x 48 columns of f32, aligned for tile stores.
    #[repr(C, align(64))]
    pub(super) struct Block(pub(super) [f32; ROWS * PANEL]);

    /// The palette-1 configuration: all eight tiles 16 rows x 64 bytes. The product uses
    /// tmm0-2 as accumulators (16 x 16 f32), tmm3 as the A tile (16 rows x 32 bf16) and tmm4-6
    /// as B tiles (16 rows x 16 pairs); the peak measurement uses all eight.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1; // palette
        let mut t = 0;
        while t < 8 {
            c[16 + 2 * t] = 64; // bytes per row (little-endian u16)
            c[48 + t] = ROWS as u8; // rows
            t += 1;
        }
        Config(c)
    };

    thread_local! {
        static CONFIGURED: Cell<bool> = const { Cell::new(false) };
        /// Accumulator blocks of this thread's products.
        pub(super) static SCRATCH: std::cell::RefCell<Vec<Block>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Loads the tile configuration on this thread once.
    ///
    /// # Safety
    /// The tile state was granted ([`super::ready`]).
    pub(super) unsafe fn configure() {
        // SAFETY: the tile state was granted (this fn's contract); ldtilecfg reads the 64 bytes
        // of CONFIG (its type is aligned to 64), a constant that outlives the asm statement.
        unsafe {
            CONFIGURED.with(|c| {
                if !c.get() {
                    asm!("ldtilecfg [{}]", in(reg) CONFIG.0.as_ptr(), options(nostack));
                    c.set(true);
                }
            });
        }
    }

    /// Four independent `tdpbf16ps` chains, `iters` times (the instruction's latency is about
    /// four times its issue interval, so four accumulators keep it busy).
    ///
    /// # Safety
    /// The tiles are configured.
    pub(super) unsafe fn chains(iters: usize) {
        // SAFETY: the tiles are configured (this fn's contract); the loop touches only tile
        // registers and a counter register, no memory, and runs at least once
        // (iters.max(1)).
        unsafe {
            asm!(
                "2:",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "dec {n}",
                "jnz 2b",
                n = inout(reg) iters.max(1) => _,
                options(nostack, nomem)
            );
        }
    }

    /// Rows of A as pairs (row stride `kp`) from some k on, against a panel from the same k,
    /// for `steps` steps of 16 pairs.
    #[derive(Clone, Copy)]
    pub(super) struct Part {
        pub(super) a: *const u32,
        pub(super) kp: usize,
        pub(super) panel: *const u32,
        pub(super) steps: usize,
    }

    /// out (+)= the sum over `parts` of A (16 rows from row `r0`, `steps` * 16 pairs) . panel
    /// (steps * 16 x 48 pairs), `out` 16 rows of 48 f32 at row stride `out_stride` floats:
    /// added to when `accumulate`, else written over.
    ///
    /// # Safety
    /// The tiles are configured; each part's `a` is valid for rows r0..r0+16 of stride `kp`
    /// pairs and `steps` * 16 pairs each, its `panel` for steps * 16 * 48 pairs; `out` for 16
    /// rows of 48 floats.
    pub(super) unsafe fn block(
        parts: &[Part],
        r0: usize,
        (out, out_stride): (*mut f32, usize),
        accumulate: bool,
    ) {
        // SAFETY: the tiles are configured and every part's A rows r0..r0+16 (stride kp pairs,
        // steps * 16 pairs), its panel (steps * 16 rows of 48 pairs) and `out` (16 rows of
        // 48 floats, stride out_stride) are valid (this fn's contract), which is what each
        // tileloadd and tilestored touches: 16 rows of 64 bytes at the given strides.
        unsafe {
            if accumulate {
                asm!(
                    "tileloadd tmm0, [{o} + {s}*1]",
                    "tileloadd tmm1, [{o} + {s}*1 + 64]",
                    "tileloadd tmm2, [{o} + {s}*1 + 128]",
                    o = in(reg) out,
                    s = in(reg) out_stride * 4,
                    options(nostack, readonly)
                );
            } else {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    options(nostack, nomem)
                );
            }
            let b_stride = PANEL * 4;
            for part in parts {
                let a = part.a.add(r0 * part.kp);
                let a_stride = part.kp * 4;
                for kb in 0..part.steps {
                    asm!(
                        "tileloadd tmm3, [{a} + {sa}*1]",
                        "tileloadd tmm4, [{b} + {sb}*1]",
                        "tileloadd tmm5, [{b} + {sb}*1 + 64]",
                        "tileloadd tmm6, [{b} + {sb}*1 + 128]",
                        "tdpbf16ps tmm0, tmm3, tmm4",
                        "tdpbf16ps tmm1, tmm3, tmm5",
                        "tdpbf16ps tmm2, tmm3, tmm6",
                        a = in(reg) a.add(kb * K_PAIRS),
                        b = in(reg) part.panel.add(kb * K_PAIRS * PANEL),
                        sa = in(reg) a_stride,
                        sb = in(reg) b_stride,
                        options(nostack, readonly)
                    );
                }
            }
            asm!(
                "tilestored [{o} + {s}*1], tmm0",
                "tilestored [{o} + {s}*1 + 64], tmm1",
                "tilestored [{o} + {s}*1 + 128], tmm2",
                o = in(reg) out,
                s = in(reg) out_stride * 4,
                options(nostack)
            );
        }
    }
}
