//! Staged prefetch for a split ring's burst: before the copy loop walks the chains one by
//! one, ask the memory system for everything it will touch, a stage at a time, so that the
//! cache misses of a burst overlap instead of queueing up behind each other.
//!
//! ## Why
//! The guest's core wrote the available ring, the descriptors and the frames last, so each
//! is a cache miss for the switch's core (about 100-200 cycles on the W6 machine), and each
//! depends on the one before: the available entry names the descriptor, the descriptor
//! names the buffer. Walked packet by packet that is three misses in a row per packet and
//! direction; W6 64 B measured 480-890 cycles per packet, most of it on these loads
//! (docs/benchmarks.md, W6). Here the burst's available entries are read (one or two cache
//! lines), then every head descriptor is prefetched, then every head buffer: three waits
//! per burst instead of three per packet. DPDK's vhost library does the same with its
//! descriptor prefetches and deferred copies (`batch_copy_elems`).
//!
//! ## Containment
//! Nothing here decides anything: the values read are used only as prefetch hints and are
//! read again (and checked) by the copy loop. A head past the table is skipped, a buffer
//! is prefetched only if [`Guest::host`] translates it, so a hint never names memory
//! outside the guest's regions (a prefetch cannot fault anyway).

use super::{read_desc, Ring, DESC_INDIRECT};

/// Chains prefetched per burst at most.
pub(super) const AHEAD: u16 = 64;

/// Asks for the cache line at `p` to be read soon.
#[inline(always)]
pub(super) fn read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the cache line at `p` in a state we may write (a plain read prefetch where the
/// CPU has no `prefetchw`: the instruction is a no-op there).
#[inline(always)]
pub(super) fn write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `read`.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches the head descriptors of the `count` chains from available entry `next` on,
/// then the first bytes of each head buffer (two cache lines: a virtio-net header and a
/// small frame), for reading or for writing.
pub(super) fn chains(r: &Ring<'_>, next: u16, count: u16, for_write: bool) {
    let count = count.min(AHEAD).min(r.size);
    let mut heads = [0u16; AHEAD as usize];
    for (j, h) in heads.iter_mut().enumerate().take(usize::from(count)) {
        *h = r.avail_entry(next.wrapping_add(j as u16));
        if *h < r.size {
            // `h < size`: inside the 16 * size bytes of the table.
            read(r.desc.wrapping_add(16 * usize::from(*h)));
        }
    }
    for &h in &heads[..usize::from(count)] {
        if h >= r.size {
            continue;
        }
        let d = read_desc(r.desc, h);
        if d.flags & DESC_INDIRECT != 0 || d.len == 0 {
            continue;
        }
        let span = u64::from(d.len.min(128));
        if let Some(p) = r.g.host(d.addr, span) {
            let last = p.wrapping_add(span as usize - 1);
            if for_write {
                write(p);
                write(last);
            } else {
                read(p);
                read(last);
            }
        }
    }
}
