//! Where a packed ring stands, read from the ring itself: how a restarted switch resumes a
//! guest's packed rings when the frontend cannot say.
//!
//! ## Why
//! A frontend tells a device where to start with `SET_VRING_BASE`. When the switch goes
//! away (stopped, killed) QEMU's `GET_VRING_BASE` fails; for a split ring QEMU falls back on
//! the used index in guest memory, but a packed ring has no such index, so QEMU repeats the
//! last base it knew, usually the ring's start (position 0, wrap counter 1), while the
//! guest's driver is elsewhere in the ring. A device that believes it finds no available
//! descriptor there, and the guest's traffic stops for good.
//!
//! ## How
//! Every descriptor's `AVAIL` flag is the wrap counter of the lap it was last written in,
//! by the driver (available: `USED` the opposite) or by us (used: `USED` equal). The driver
//! writes the ring in order, so the flags read `lap L` up to its position and `lap !L`
//! after it: the first descriptor whose `AVAIL` differs from descriptor 0's is the driver's
//! position `D`, and the ring read from there (`window`, oldest first) is what the driver
//! wrote in the last `size` descriptors. We return chains in order, so the used
//! descriptors in the window (`AVAIL == USED`) all come before our position, and only
//! available ones after it:
//! * no used descriptor in the window: the driver filled the ring since we last returned
//!   one, and we are at the window's start (`D` one lap earlier);
//! * otherwise the last used descriptor carries our mark (written in its address field,
//!   which a used descriptor does not use; the driver rewrites it when it reuses the slot):
//!   the length of its chain in descriptors, so we are that far after it.
//!
//! A burst publishes its first used descriptor last, so a switch killed in between leaves
//! the burst's later used descriptors visible and the first not: the mark also says how far
//! back the burst's first used descriptor is, and if that one still reads available (and
//! carries our mark, so its id and length were written) it is published now, finishing
//! what the stopped switch was doing. When that distance reaches back past the driver's
//! position, the driver has taken the burst's first descriptors back and offered their
//! slots again (Linux's receive path takes back what its budget allows and refills at
//! once): they were published, and the answer stands. A used descriptor without our mark
//! (a ring another device ran, or one the driver zeroed) gives no answer and the
//! frontend's base stands.
//!
//! ## Containment
//! The ring is guest memory: whatever it says, the answer is a position inside the ring
//! (checked like any base), so a guest that forges marks only misplaces its own traffic,
//! which the burst loops contain as usual. The scan reads each flag once (two passes of at
//! most 32768 two-byte loads, once per ring start).

use super::{PRing, Packed, DESC_AVAIL, DESC_USED};
use crate::vhost::mem::Guest;

/// The high half of our mark in a used descriptor's address field.
const MARK: u64 = 0x6672_7673 << 32;

/// The address field of a used descriptor whose chain held `count` descriptors, `back`
/// descriptors after the first used descriptor of its burst.
#[inline]
pub(super) fn mark(count: u16, back: u16) -> u64 {
    MARK | u64::from(back) << 16 | u64::from(count)
}

/// `(count, back)` from a used descriptor's address field, if it is our mark.
fn unmark(addr: u64) -> Option<(u16, u16)> {
    (addr & !0xffff_ffff == MARK).then_some(((addr & 0xffff) as u16, (addr >> 16) as u16))
}

/// Whether flags say used (`AVAIL == USED`).
fn used(f: u16) -> bool {
    (f & DESC_AVAIL != 0) == (f & DESC_USED != 0)
}

impl Packed {
    /// Our position and wrap counter as the ring in `g` shows them (see the module
    /// documentation), publishing a half-published burst; `None` when the ring does not
    /// tell. Needs the ring's addresses and size; the position is not read.
    pub fn resume_point(&self, g: &Guest) -> Option<(u16, bool)> {
        let at_start = Packed { next: 0, ..*self };
        let r = PRing::new(&at_start, g)?;
        let n = u32::from(self.size);
        let lap = |i: u16| r.flags(i) & DESC_AVAIL != 0;
        let a0 = lap(0);
        // The driver's position `d` and lap: descriptors [0, d) in its lap, [d, n) in the
        // one before (d = 0: all of them in the one before).
        let d = (1..self.size).find(|&i| lap(i) != a0).unwrap_or(0);
        let wd = if d > 0 { a0 } else { !a0 };
        // The k-th descriptor of the window (k <= n; k = n is the driver's position).
        let at = |k: u32| -> (u16, bool) {
            let i = u32::from(d) + k;
            if i < n {
                (i as u16, !wd)
            } else {
                ((i - n) as u16, wd)
            }
        };
        let Some(last) = (0..n).rev().find(|&k| used(r.flags(at(k).0))) else {
            return Some(at(0));
        };
        let (count, back) = unmark(PRing::read(r.desc, usize::from(at(last).0)).addr)?;
        if count == 0 || last + u32::from(count) > n {
            return None;
        }
        // The burst's first descriptor lies before the window when the driver took it back
        // and offered its slot again (a receive path that takes back part of a burst and
        // refills): published then, nothing to finish.
        if let Some(k) = last.checked_sub(u32::from(back)) {
            let (fpos, fwrap) = at(k);
            if !used(r.flags(fpos)) {
                // Killed between its used descriptors and the first: publish that one too.
                unmark(PRing::read(r.desc, usize::from(fpos)).addr)?;
                r.mark_used(fpos, fwrap);
            }
        }
        Some(at(last + u32::from(count)))
    }
}
