//! What the check reads from the device itself: its name and the peak of its used memory.

use candle_core::Device;

/// Name, compute capability and memory of the GPU behind `device` (None on the CPU, and
/// in a build without the `cuda` feature).
pub fn describe(device: &Device) -> Option<(String, String, u64)> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = device {
        let ctx = d.cuda_stream().context().clone();
        let name = ctx.name().ok()?;
        let (major, minor) = ctx.compute_capability().ok()?;
        let total = ctx.total_mem().ok()? as u64;
        return Some((name, format!("{major}.{minor}"), total));
    }
    let _ = device;
    None
}

/// Samples the device's used memory (total minus free, as the driver reports it, so candle's
/// cached blocks count) every 10 ms on a thread of its own, from `start` to `finish`; on the
/// CPU it reads the process's peak resident set instead.
pub struct PeakMemory {
    #[cfg(feature = "cuda")]
    sampler: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<u64>,
    )>,
}

impl PeakMemory {
    /// Starts sampling.
    pub fn start(device: &Device) -> Self {
        #[cfg(feature = "cuda")]
        if let Device::Cuda(d) = device {
            use std::sync::atomic::{AtomicBool, Ordering};
            let ctx = d.cuda_stream().context().clone();
            let stop = std::sync::Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let handle = std::thread::spawn(move || {
                let mut peak = 0u64;
                if ctx.bind_to_thread().is_err() {
                    return peak;
                }
                loop {
                    if let Ok((free, total)) = ctx.mem_get_info() {
                        peak = peak.max((total - free) as u64);
                    }
                    if flag.load(Ordering::Relaxed) {
                        return peak;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            });
            return PeakMemory {
                sampler: Some((stop, handle)),
            };
        }
        let _ = device;
        PeakMemory {
            #[cfg(feature = "cuda")]
            sampler: None,
        }
    }

    /// Stops sampling: the peak in bytes (device memory in use, or the process's peak RSS).
    pub fn finish(self) -> u64 {
        #[cfg(feature = "cuda")]
        if let Some((stop, handle)) = self.sampler {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            return handle.join().unwrap_or(0);
        }
        peak_rss()
    }
}

/// The process's peak resident set in bytes (VmHWM), 0 where /proc is not there.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Waits for the device's queued work (timings of GPU work need it; a no-op on the CPU).
pub fn synchronize(device: &Device) -> candle_core::Result<()> {
    device.synchronize()
}
