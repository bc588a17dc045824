//! Packed virtqueues (`VIRTIO_F_RING_PACKED`, virtio 1.1 §2.7): the burst loops of
//! [`super`] over one ring of descriptors that the guest and we both write.
//!
//! ## How
//! A packed ring is one array of 16-byte descriptors (`addr`, `len`, buffer `id`, `flags`)
//! plus two 4-byte event suppression areas, the driver's (when the guest wants interrupts)
//! and the device's (when we want kicks). The guest makes a chain available by writing its
//! descriptors at consecutive positions, the flags of the first last, with `AVAIL` equal to
//! its wrap counter and `USED` the opposite; `NEXT` links a descriptor to the one after it
//! (no `next` index), and the last one carries the buffer id. We return a chain by writing
//! one used descriptor (id, bytes written, `AVAIL` = `USED` = our wrap counter) and move on
//! by the chain's length; each counter flips when its position wraps.
//!
//! We return chains in the order we take them, so one cursor serves both sides: the used
//! descriptor of a chain goes where its head was. A burst loads the flags at the cursor
//! (acquire), walks the chain ([`PRing::walk`]: direct descriptors through `NEXT`, or one
//! indirect table read in order), copies with the split ring's [`gather`](super::gather) and [`fill`], and
//! writes the used descriptors (before the copies, [`PRing::prefetch`] asks for the first
//! lines of every available buffer of the burst, so their misses overlap; see
//! [`super::prefetch`]): ids and lengths as it goes, the flags of every chain but the
//! first too, then the first chain's flags last with a release store, so the guest, which
//! reads used descriptors in ring order, sees the whole burst at once (as virtio 1.1 §2.7.21
//! allows for the device, and DPDK's vhost library does).
//!
//! After a burst the driver's area decides whether the guest's call eventfd is signalled:
//! `ENABLE` always, `DISABLE` never, `DESC` (with `EVENT_IDX`) when the used cursor passed the
//! position and wrap counter it names. Our own area says `DISABLE` from the start: every
//! ring is polled, so kicks would only cost the guest a system call (split rings: the
//! guest's kicks are counted by the eventfd, never read).
//!
//! The ring position travels in vhost-user's `SET/GET_VRING_BASE` as the specification
//! says for packed rings: bits 0-14 the position, bit 15 the wrap counter (and the same for
//! the used side in bits 16-31, which for us is always equal). A switch restarted under a
//! running guest cannot trust that base (QEMU's is stale then): each used descriptor we
//! write carries a mark in its unused address field, and [`resume`] finds our position from
//! the ring's flags and those marks.
//!
//! ## Containment
//! The split ring's rules, adapted: the cursor is always below the ring size; a chain that
//! does not end within as many descriptors as the ring holds marks the ring *broken* (its
//! end cannot be found, so neither can the next chain); any other refused chain (buffer
//! outside guest memory, wrong direction, too long, an indirect descriptor with `NEXT` or
//! after the head, an indirect table that is empty, misaligned or outside memory) is still
//! walked to its end and returned used with length 0, and counted. Each descriptor is copied
//! once, volatile, before its fields are used. A ring whose head never turns available
//! costs one load of two bytes per poll.

use super::coalesce::count;
use super::{
    fill, load_desc, put_header, receive_chain, signal, Burst, Chains, Desc, DescError, Guest,
    Vring, DESC_INDIRECT, DESC_NEXT, DESC_WRITE, MAX_CHAINS_PER_PKT, VNET_HDR_LEN,
};
use packet::{Batch, Pool};
use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU16, Ordering};

/// Descriptor flags of packed rings (besides NEXT, WRITE, INDIRECT).
pub const DESC_AVAIL: u16 = 1 << 7;
pub const DESC_USED: u16 = 1 << 15;
/// Event suppression `flags` values.
pub const EVENT_ENABLE: u16 = 0;
pub const EVENT_DISABLE: u16 = 1;
pub const EVENT_DESC: u16 = 2;
/// Largest packed ring (virtio: 2^15 descriptors).
pub const MAX_PACKED: u16 = 32768;

/// A packed ring's configuration and our position in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    /// Guest addresses: the descriptor ring, the driver's and the device's event
    /// suppression areas.
    pub desc: u64,
    pub driver: u64,
    pub device: u64,
    /// Descriptors in the ring (1..=32768, any number).
    pub size: u16,
    /// The position of the next chain we take (always `< size`) and the wrap counter its
    /// flags show when available.
    pub next: u16,
    pub wrap: bool,
    /// `EVENT_IDX` negotiated: the driver's area may name a descriptor.
    pub event_idx: bool,
}

impl Packed {
    /// Takes the position from a vhost-user ring base (bits 0-14 position, bit 15 wrap
    /// counter); false if the position is outside the ring.
    pub fn set_base(&mut self, base: u32) -> bool {
        let pos = (base & 0x7fff) as u16;
        if pos >= self.size {
            return false;
        }
        self.next = pos;
        self.wrap = base & 0x8000 != 0;
        true
    }

    /// The ring base to report: our position and wrap counter for the available side, and
    /// again for the used side (bits 16-31): we return chains in order, as we take them.
    pub fn base(&self) -> u32 {
        let b = u32::from(self.next) | (u32::from(self.wrap) << 15);
        b | (b << 16)
    }

    /// Whether the ring's areas lie in `g`, naturally aligned in our address space.
    pub fn valid(&self, g: &Guest) -> bool {
        PRing::new(self, g).is_some()
            && g.host(self.device, 4)
                .is_some_and(|p| (p as usize).is_multiple_of(4))
    }

    /// Tells the guest, in our event suppression area, that we do not want kicks (we
    /// poll); false if the area is not in guest memory.
    pub fn disable_kicks(&self, g: &Guest) -> bool {
        match g.host(self.device, 4) {
            Some(p) if (p as usize).is_multiple_of(4) => {
                // SAFETY: `p` points at 4 bytes of live guest memory, 4-aligned; the guest
                // only reads this area.
                unsafe {
                    std::ptr::write_volatile(p as *mut u16, 0);
                    AtomicU16::from_ptr(p.add(2) as *mut u16)
                        .store(EVENT_DISABLE.to_le(), Ordering::Release);
                }
                true
            }
            _ => false,
        }
    }
}

/// The areas of a packed ring, translated to host pointers for one burst.
struct PRing<'a> {
    g: &'a Guest,
    desc: *mut u8,
    driver: *const u8,
    size: u16,
    event_idx: bool,
    /// What the last walk found: the chain's buffer id and length in descriptors (0: no
    /// end within the ring).
    last: Cell<(u16, u16)>,
}

impl<'a> PRing<'a> {
    fn new(p: &Packed, g: &'a Guest) -> Option<PRing<'a>> {
        if p.size == 0 || p.size > MAX_PACKED || p.next >= p.size {
            return None;
        }
        let desc = g.host(p.desc, 16 * u64::from(p.size))?;
        let driver = g.host(p.driver, 4)?;
        if !(desc as usize).is_multiple_of(16) || !(driver as usize).is_multiple_of(4) {
            return None;
        }
        Some(PRing {
            g,
            desc,
            driver,
            size: p.size,
            event_idx: p.event_idx,
            last: Cell::new((0, 0)),
        })
    }

    /// The flags of descriptor `pos` (< size), loaded with acquire: when they say
    /// available, the rest of the chain is visible.
    #[inline]
    fn flags(&self, pos: u16) -> u16 {
        // SAFETY: `pos < size`, so `desc + 16 pos + 14` is inside the translated ring and
        // 2-aligned (the ring is 16-aligned, checked in `new`).
        u16::from_le(
            unsafe { AtomicU16::from_ptr(self.desc.add(16 * usize::from(pos) + 14) as *mut u16) }
                .load(Ordering::Acquire),
        )
    }

    /// Whether the guest made descriptor `pos` available in lap `wrap`.
    #[inline]
    fn avail(&self, pos: u16, wrap: bool) -> bool {
        let f = self.flags(pos);
        (f & DESC_AVAIL != 0) == wrap && (f & DESC_USED != 0) != wrap
    }

    /// Writes the id and length of a used descriptor at `pos` (< size), and in its address
    /// field (unused in a used descriptor) our [`resume`] mark: the chain's length in
    /// descriptors and how far back the burst's first used descriptor is. The flags follow
    /// with [`PRing::mark_used`].
    #[inline]
    fn put_used(&self, pos: u16, id: u16, len: u32, count: u16, back: u16) {
        let off = 16 * usize::from(pos);
        let mark = resume::mark(count, back);
        // SAFETY: inside the translated ring (`pos < size`), 8-, 4- and 2-aligned (the ring
        // is 16-aligned).
        unsafe {
            std::ptr::write_volatile(self.desc.add(off) as *mut u64, mark.to_le());
            std::ptr::write_volatile(self.desc.add(off + 8) as *mut u32, len.to_le());
            std::ptr::write_volatile(self.desc.add(off + 12) as *mut u16, id.to_le());
        }
    }

    /// Publishes the used descriptor at `pos`: its flags, after everything written before.
    #[inline]
    fn mark_used(&self, pos: u16, wrap: bool) {
        let f = if wrap { DESC_AVAIL | DESC_USED } else { 0 };
        // SAFETY: as in `flags`.
        unsafe { AtomicU16::from_ptr(self.desc.add(16 * usize::from(pos) + 14) as *mut u16) }
            .store(f.to_le(), Ordering::Release);
    }

    /// Descriptor `i` (< the table's length) of a table at `table`, copied once.
    #[inline(always)]
    fn read(table: *const u8, i: usize) -> Desc {
        // SAFETY: the caller checked that `table` holds descriptor `i`.
        let (addr, w) = unsafe { load_desc(table.add(16 * i)) };
        Desc {
            addr,
            len: w as u32,
            // The buffer id, kept in `next`'s place.
            next: (w >> 32) as u16,
            flags: (w >> 48) as u16,
        }
    }

    /// Whether the guest wants an interrupt after the used cursor moved from `old` to `new`
    /// (position, wrap counter).
    fn needs_notification(&self, old: (u16, bool), new: (u16, bool)) -> bool {
        // Our used flags must be visible before we read what the guest asked for.
        fence(Ordering::SeqCst);
        // SAFETY: `driver` points at 4 translated bytes, 4-aligned (checked in `new`).
        let (off_wrap, flags) = unsafe {
            (
                u16::from_le(std::ptr::read_volatile(self.driver as *const u16)),
                u16::from_le(std::ptr::read_volatile(self.driver.add(2) as *const u16)),
            )
        };
        match flags & 3 {
            EVENT_DISABLE => false,
            EVENT_DESC if self.event_idx => {
                // Positions counted from the start of the lap `new` is in: an event or an
                // old cursor in the lap before sits `size` lower.
                let mut old_pos = old.0;
                if old.1 != new.1 {
                    old_pos = old_pos.wrapping_sub(self.size);
                }
                let mut ev = off_wrap & 0x7fff;
                if (off_wrap & 0x8000 != 0) != new.1 {
                    ev = ev.wrapping_sub(self.size);
                }
                new.0.wrapping_sub(ev).wrapping_sub(1) < new.0.wrapping_sub(old_pos)
            }
            // ENABLE, or DESC without EVENT_IDX (reserved): as ENABLE.
            _ => true,
        }
    }

    /// How many descriptors `to` is past `from` (less than a lap apart, `to` not behind).
    #[inline]
    fn dist(&self, from: (u16, bool), to: (u16, bool)) -> u16 {
        if from.1 == to.1 {
            to.0.wrapping_sub(from.0)
        } else {
            to.0.wrapping_add(self.size).wrapping_sub(from.0)
        }
    }

    /// Prefetches the buffers of the next `n` available descriptors from `(pos, wrap)` on,
    /// from byte `skip` of each (see [`super::prefetch`]; only a hint: the copy loops read
    /// and check every descriptor again), for writing if `write`.
    fn prefetch(&self, pos: u16, wrap: bool, n: usize, write: bool, skip: usize) {
        let (mut pos, mut wrap) = (pos, wrap);
        for _ in 0..n.min(usize::from(self.size)) {
            if !self.avail(pos, wrap) {
                break;
            }
            super::prefetch::buffer(
                self.g,
                &Self::read(self.desc, usize::from(pos)),
                write,
                skip,
            );
            (pos, wrap) = self.advance(pos, wrap, 1);
        }
    }

    /// Moves `(pos, wrap)` on by `n` descriptors (`n <= size`).
    #[inline]
    fn advance(&self, pos: u16, wrap: bool, n: u16) -> (u16, bool) {
        let p = u32::from(pos) + u32::from(n);
        if p >= u32::from(self.size) {
            ((p - u32::from(self.size)) as u16, !wrap)
        } else {
            (p as u16, wrap)
        }
    }
}

impl Chains for PRing<'_> {
    #[inline(always)]
    fn guest(&self) -> &Guest {
        self.g
    }

    /// Walks the chain whose head is at position `head`: hands each data descriptor to `f`
    /// until `f` or a check refuses one, then still follows `NEXT` to the chain's end (at
    /// most `size` descriptors), whose id and length it leaves in `last`.
    fn walk(
        &self,
        head: u16,
        mut f: impl FnMut(Desc) -> Result<(), DescError>,
    ) -> Result<(), DescError> {
        self.last.set((0, 0));
        let mut res = Ok(());
        let mut pos = head;
        let mut count: u16 = 0;
        loop {
            if count == self.size || pos >= self.size {
                return Err(DescError::Chain);
            }
            let d = Self::read(self.desc, usize::from(pos));
            count += 1;
            pos += 1;
            if pos == self.size {
                pos = 0;
            }
            if res.is_ok() {
                res = if d.flags & DESC_INDIRECT != 0 {
                    if count > 1 || d.flags & DESC_NEXT != 0 {
                        Err(DescError::Chain)
                    } else {
                        self.indirect(d, &mut f)
                    }
                } else {
                    f(d)
                };
            }
            if d.flags & DESC_NEXT == 0 {
                self.last.set((d.next, count));
                return res;
            }
        }
    }
}

impl PRing<'_> {
    /// Hands each descriptor of the indirect table `d` points at to `f`, in order (only
    /// their WRITE flag counts; the rest is reserved there).
    fn indirect(
        &self,
        d: Desc,
        f: &mut impl FnMut(Desc) -> Result<(), DescError>,
    ) -> Result<(), DescError> {
        if d.len == 0 || !d.len.is_multiple_of(16) {
            return Err(DescError::Chain);
        }
        let table = self
            .g
            .host(d.addr, u64::from(d.len))
            .ok_or(DescError::Memory)?;
        for i in 0..(d.len / 16) as usize {
            let mut e = Self::read(table, i);
            e.flags &= DESC_WRITE;
            f(e)?;
        }
        Ok(())
    }
}

/// Receives up to `batch.room()` frames the guest transmitted on packed ring `v` (`p` is
/// its configuration).
pub(super) fn rx_burst(v: &mut Vring, p: Packed, pool: &mut Pool, batch: &mut Batch) -> Burst {
    let mut b = Burst::default();
    let Some(g) = v.mem.clone() else { return b };
    let Some(r) = PRing::new(&p, &g) else {
        v.broken = true;
        b.broken = true;
        b.errors += 1;
        return b;
    };
    let hdr = v.hdr_len;
    if v.offload {
        super::offload::drain(&mut v.spill, pool, batch, &mut b);
    }
    let start = (p.next, p.wrap);
    let (mut pos, mut wrap) = start;
    // Without offloads nothing reads the header (see the split ring's `rx_burst`).
    r.prefetch(
        pos,
        wrap,
        batch.room(),
        false,
        if v.offload { 0 } else { hdr },
    );
    let mut first = None;
    while !batch.is_full() && !v.spill.pending() && r.avail(pos, wrap) {
        let Some(pkt) = pool.alloc() else { break };
        receive_chain(
            &r,
            pos,
            hdr,
            pkt,
            v.offload,
            &mut v.spill,
            pool,
            batch,
            &mut b,
        );
        let (id, count) = r.last.get();
        if count == 0 {
            // No end within the ring: where the next chain starts is unknown.
            v.broken = true;
            b.broken = true;
            break;
        }
        r.put_used(
            pos,
            id,
            0,
            count,
            first.map_or(0, |f| r.dist(f, (pos, wrap))),
        );
        if first.is_none() {
            first = Some((pos, wrap));
        } else {
            r.mark_used(pos, wrap);
        }
        (pos, wrap) = r.advance(pos, wrap, count);
    }
    if let Some((fpos, fwrap)) = first {
        r.mark_used(fpos, fwrap);
        if let Some(q) = v.packed.as_mut() {
            q.next = pos;
            q.wrap = wrap;
        }
        if r.needs_notification(start, (pos, wrap)) {
            signal(&v.call);
        }
    }
    b
}

/// One chain a packet went into: where its head was, its id, length and bytes written.
#[derive(Clone, Copy, Default)]
struct Used {
    pos: u16,
    wrap: bool,
    id: u16,
    count: u16,
    len: u32,
}

enum Scatter {
    /// The chain at this position is not available; nothing was consumed.
    NoBuffers(u16, bool),
    /// The first `k` chains in `used` were consumed and must be returned (length 0).
    Bad(usize),
}

/// Transmits every packet of `batch` into the guest's packed receive ring `v`; packets
/// that find no buffers are dropped and counted (after at most `retries` extra looks).
pub(super) fn tx_burst(
    v: &mut Vring,
    p: Packed,
    pool: &mut Pool,
    batch: &mut Batch,
    retries: u32,
) -> Burst {
    let mut b = Burst::default();
    let g = v.mem.clone();
    let Some(r) = g.as_deref().and_then(|g| PRing::new(&p, g)) else {
        b.dropped += batch.len() as u64;
        pool.free_batch(batch);
        return b;
    };
    let mut retries = retries;
    let start = (p.next, p.wrap);
    let (mut pos, mut wrap) = start;
    let mut first = None;
    let mut used = [Used::default(); MAX_CHAINS_PER_PKT];
    let (hdr, mrg) = (v.hdr_len, v.mrg);
    r.prefetch(pos, wrap, batch.len(), true, 0);
    let pkts = batch.packets();
    let mut i = 0;
    while i < pkts.len() {
        // A run of TCP segments goes as one super-packet if the guest's buffers hold it.
        let (frame, vh, frames, bytes) = v
            .gro
            .next(pkts, i, hdr, |len| room(&r, mrg, pos, wrap, len));
        i += frames;
        loop {
            if b.broken {
                b.errors += frames as u64;
                break;
            }
            let k = match scatter(&r, hdr, mrg, frame, &vh, pos, wrap, &mut used) {
                Ok(k) => {
                    b.packets += frames as u64;
                    b.bytes += bytes;
                    if frames > 1 {
                        b.coalesced += frames as u64;
                    }
                    k
                }
                Err(Scatter::NoBuffers(at, w)) => {
                    if retries > 0 {
                        retries -= 1;
                        if r.avail(at, w) {
                            continue;
                        }
                    }
                    b.dropped += frames as u64;
                    break;
                }
                Err(Scatter::Bad(k)) => {
                    for u in &mut used[..k] {
                        u.len = 0;
                    }
                    b.errors += frames as u64;
                    k
                }
            };
            for u in &used[..k] {
                if u.count == 0 {
                    v.broken = true;
                    b.broken = true;
                    break;
                }
                let back = first.map_or(0, |f| r.dist(f, (u.pos, u.wrap)));
                r.put_used(u.pos, u.id, u.len, u.count, back);
                if first.is_none() {
                    first = Some((u.pos, u.wrap));
                } else {
                    r.mark_used(u.pos, u.wrap);
                }
                (pos, wrap) = r.advance(u.pos, u.wrap, u.count);
            }
            break;
        }
    }
    pool.free_batch(batch);
    if let Some((fpos, fwrap)) = first {
        r.mark_used(fpos, fwrap);
        if let Some(q) = v.packed.as_mut() {
            q.next = pos;
            q.wrap = wrap;
        }
        if r.needs_notification(start, (pos, wrap)) {
            signal(&v.call);
        }
    }
    b
}

/// Whether the guest's chains on `r` from position `pos` (lap `wrap`) hold `need` bytes in
/// as many chains as one packet may use (`coalesce::room` for split rings); nothing is
/// consumed.
fn room(r: &PRing<'_>, mrg: bool, mut pos: u16, mut wrap: bool, need: usize) -> bool {
    let chains = if mrg { MAX_CHAINS_PER_PKT } else { 1 };
    let mut have = 0usize;
    for _ in 0..chains {
        if !r.avail(pos, wrap) || r.walk(pos, |d| count(d.flags, d.len, &mut have)).is_err() {
            return false;
        }
        let (_, n) = r.last.get();
        if n == 0 {
            return false;
        }
        if have >= need {
            return true;
        }
        (pos, wrap) = r.advance(pos, wrap, n);
    }
    false
}

/// Writes the virtio-net header (`vh`, then `num_buffers`) and `frame` into as many
/// available chains from position `pos` (lap `wrap`) as it takes (one unless MRG_RXBUF);
/// fills `used` and returns how many chains it used.
#[allow(clippy::too_many_arguments)]
fn scatter(
    r: &PRing<'_>,
    hdr: usize,
    mrg: bool,
    frame: &[u8],
    vh: &[u8; VNET_HDR_LEN],
    mut pos: u16,
    mut wrap: bool,
    used: &mut [Used; MAX_CHAINS_PER_PKT],
) -> Result<usize, Scatter> {
    let mut k = 0usize;
    let mut off = 0usize;
    let mut hdr_at: Option<u64> = None;
    while off < frame.len() || hdr_at.is_none() {
        if k == MAX_CHAINS_PER_PKT || (k > 0 && !mrg) {
            return Err(Scatter::Bad(k));
        }
        if !r.avail(pos, wrap) {
            return Err(Scatter::NoBuffers(pos, wrap));
        }
        let written = fill(r, pos, hdr, frame, &mut off, &mut hdr_at);
        let (id, count) = r.last.get();
        used[k] = Used {
            pos,
            wrap,
            id,
            count,
            len: written.unwrap_or(0),
        };
        k += 1;
        if written.is_none() || count == 0 {
            return Err(Scatter::Bad(k));
        }
        (pos, wrap) = r.advance(pos, wrap, count);
    }
    if !put_header(r.g, hdr_at, hdr, vh, k) {
        return Err(Scatter::Bad(k));
    }
    Ok(k)
}

pub(crate) mod resume;
#[cfg(test)]
mod tests;
