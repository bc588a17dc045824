//! Cheap cycle counting for the poll loop's statistics.
//!
//! On x86-64 this is the time-stamp counter (constant-rate on every CPU ferrovs targets); on
//! other architectures, nanoseconds from the monotonic clock stand in for cycles. [`hz`]
//! calibrates the counter once against the monotonic clock, so cycle counts can be turned into
//! time and packet rates.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The current cycle count.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions; it reads a counter and touches no memory. Every
        // x86-64 CPU implements it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Counter ticks per second (measured once, over 20 ms).
pub fn hz() -> u64 {
    static HZ: OnceLock<u64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let t0 = Instant::now();
        let c0 = now();
        std::thread::sleep(Duration::from_millis(20));
        let c1 = now();
        let dt = t0.elapsed().as_nanos().max(1) as u64;
        ((c1.wrapping_sub(c0)) as u128 * 1_000_000_000 / dt as u128) as u64
    })
}
