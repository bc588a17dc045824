//! Staged prefetch of a split-ring burst's guest-memory lines.
//!
//! A burst's chains are handled one after another, and each needs three lines the guest's
//! core wrote last: its available entry, its head descriptor (whose address the entry gives)
//! and its buffer (whose address the descriptor gives). Walked in that order, a packet's
//! misses are a chain of dependent loads. Here a burst first reads its heads (one or two
//! lines for the whole burst), then asks for every head descriptor's line, then reads the
//! descriptors and asks for every buffer's first lines (owned for writing on our transmit
//! side), so the misses of the whole burst are in flight together before the copy loop
//! starts (measured in docs/benchmarks.md, W6). A transmitted frame's virtio-net header is
//! skipped when no offload was negotiated: nothing reads it then, and its line (the guest
//! puts the header just before the frame, usually in the line before) stays with the guest.
//!
//! Every address here comes from the guest and may change under us: a prefetch is only a
//! hint (it reads and writes nothing and never faults), buffers are translated with
//! [`Guest::host`](super::Guest::host) like any copy, and the copy loops read and check
//! everything again.
//!
//! Packed rings keep their descriptors in the ring itself, so there a burst reads each
//! available descriptor and asks for its buffer's lines ([`buffer`]) in one pass
//! ([`PRing::prefetch`](super::packed)).

use super::{read_desc, Desc, Guest, Ring, DESC_INDIRECT};
use packet::MAX_BATCH;

/// Prefetches the lines the next `n` chains from available entry `next` need: descriptors,
/// then the first lines of each direct head buffer from byte `skip` on (the virtio-net
/// header when nothing will read it), for writing if `write`.
pub(super) fn burst(r: &Ring<'_>, next: u16, n: usize, write: bool, skip: usize) {
    let n = n.min(MAX_BATCH).min(usize::from(r.size));
    if n < 2 {
        return;
    }
    let mut heads = [0u16; MAX_BATCH];
    for (k, h) in heads[..n].iter_mut().enumerate() {
        *h = r.avail_entry(next.wrapping_add(k as u16));
    }
    for &h in &heads[..n] {
        if h < r.size {
            line(r.desc.wrapping_add(16 * usize::from(h)), false);
        }
    }
    for &h in &heads[..n] {
        if h >= r.size {
            continue;
        }
        buffer(r.g, &read_desc(r.desc, h), write, skip);
    }
}

/// Prefetches the first lines of the buffer of direct descriptor `d` from byte `skip` on
/// (nothing for an indirect one or one no longer than `skip`), for writing if `write`.
#[inline(always)]
pub(super) fn buffer(g: &Guest, d: &Desc, write: bool, skip: usize) {
    if d.flags & DESC_INDIRECT != 0 || d.len as usize <= skip {
        return;
    }
    if let Some(p) = g.host(d.addr.wrapping_add(skip as u64), 1) {
        line(p, write);
        // What is read or written may reach into a second line (a 64-byte frame after its
        // 12-byte header does).
        if d.len as usize - skip > 64 - (p as usize & 63) {
            line(p.wrapping_add(64), write);
        }
    }
}

/// Hints the processor to bring the line at `p` close, owned for writing if `write`.
#[inline(always)]
fn line(p: *const u8, write: bool) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it does not access memory architecturally and cannot
    // fault, whatever the address (`prefetchw` is a no-op on processors without it).
    unsafe {
        if write {
            std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
        } else {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, write);
}
