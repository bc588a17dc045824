//! One virtqueue of a vhost-user connection and the burst loops that move packets through
//! it: the guest's transmit queues are our receive path, its receive queues our transmit path.
//!
//! ## How
//! Split rings. `virtio-queue`'s [`Queue`] holds each ring's configuration (size, addresses,
//! next indices, `EVENT_IDX`) and checks at start that the rings lie in guest memory. The
//! per-packet work is ours ([`Ring`]): W6 showed that going through `vm-memory`'s generic
//! accessors for every ring index, descriptor and used element (a dozen accesses per
//! packet) took more than half of the switch's cycles (see `docs/vhost.md`). A burst
//! translates the three ring areas to host pointers once, reads the available index once,
//! walks each chain ([`walk`]: direct and indirect descriptors), copies frames with
//! `memcpy` through [`Guest::host`], writes the used elements and stores the used index
//! once. [`gather`] copies a guest frame (after its virtio-net header) into one of our pool
//! buffers; [`scatter`] writes our frame (with a header) into the guest's buffers, several
//! chains per packet when `VIRTIO_NET_F_MRG_RXBUF` was negotiated. Before either loop,
//! `prefetch` asks for the lines of all the burst's descriptors and buffers at once, so
//! their misses overlap instead of coming one packet after another.
//!
//! Towards a guest that negotiated `GUEST_CSUM` and `GUEST_TSO4/6`, both layouts' transmit
//! loops first offer each position of the burst to `coalesce`, which may merge a run of
//! TCP segments into one super-packet written with a GSO header; the rest go as they are.
//!
//! Packed rings (`VIRTIO_F_RING_PACKED`) have their own walker and burst loops in
//! [`packed`]; the copies ([`gather`], [`fill`], `offload::gather`) are shared through the
//! [`Chains`] trait, so both layouts copy and check frames with the same code.
//!
//! ## Containment
//! The guest writes the rings and descriptors and may rewrite them at any moment. So:
//! * every index it writes is reduced modulo the ring size or checked against the table it
//!   indexes, every address range is translated with checked arithmetic and must lie in
//!   guest memory, and each descriptor is copied once before use;
//! * an available index more than a ring's size ahead of ours marks the ring *broken*
//!   (counted once, then left alone until the frontend restarts the ring);
//! * a chain longer than its table (a loop), a `next` past the table, nested or malformed
//!   indirect tables are refused (`DescError::Chain`); a buffer outside guest memory
//!   (`DescError::Memory`), one with the wrong direction (`DescError::Direction`), a frame
//!   longer than our buffers (`DescError::Length`, never copied past them) likewise;
//! * every refused chain is still returned to the guest (used, length 0) and counted, so a
//!   bad descriptor costs one packet, never the queue;
//! * a guest that never gives us receive buffers costs `tx_dropped`, never a wait (at most
//!   `tx-retries-max` extra looks at its available index per burst, as OVS does).
//!
//! ## Threading
//! A [`Vring`] sits behind its own mutex in the port's shared state. The control thread
//! configures it (size, addresses, base, fds, memory); a poll thread takes the mutex with
//! `try_lock` for one burst and skips the ring if the control thread holds it.

mod access;
mod coalesce;
mod offload;
pub mod packed;
mod prefetch;

use super::mem::Guest;
use crate::offload::VNET_HDR_LEN;
use access::{copy_in, copy_out, load_desc, put_header};
pub use coalesce::Gro;
pub use offload::{Spill, MAX_SUPER};
pub use packed::Packed;
use packet::{Batch, Packet, Pool, MAX_FRAME};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{fence, AtomicU16, Ordering};
use std::sync::Arc;
use virtio_queue::{Queue, QueueT};

/// Largest ring the frontend may ask for (the virtio maximum for split rings).
pub const MAX_RING: u16 = 32768;
/// The virtio-net header with `num_buffers` (VERSION_1 or MRG_RXBUF), and without.
pub const HDR_MRG: usize = 12;
pub const HDR_LEGACY: usize = 10;
/// Chains one packet may use with MRG_RXBUF (a frame of MAX_FRAME in 64-byte buffers).
const MAX_CHAINS_PER_PKT: usize = 64;

const DESC_NEXT: u16 = 1;
const DESC_WRITE: u16 = 2;
const DESC_INDIRECT: u16 = 4;
const AVAIL_NO_INTERRUPT: u16 = 1;
const USED_NO_NOTIFY: u16 = 1;

/// Why a descriptor chain was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescError {
    /// A descriptor points outside guest memory.
    Memory,
    /// A device-writable descriptor where the device reads, or the reverse.
    Direction,
    /// The frame is longer than a packet buffer, or shorter than the header.
    Length,
    /// The chain does not end (loop, index past the table) or is otherwise malformed.
    Chain,
}

/// What one burst did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Burst {
    pub packets: u64,
    pub bytes: u64,
    pub errors: u64,
    pub dropped: u64,
    /// Frames (counted in `packets`) that reached the guest inside super-packets.
    pub coalesced: u64,
    /// The ring's indices are impossible; it was marked broken.
    pub broken: bool,
}

/// One virtqueue and what the control thread configured for it.
pub struct Vring {
    pub q: Queue,
    pub mem: Option<Arc<Guest>>,
    pub call: Option<File>,
    pub kick: Option<File>,
    /// Started by SET_VRING_KICK, stopped by GET_VRING_BASE.
    pub started: bool,
    /// SET_VRING_ENABLE (or implicitly on start without protocol features).
    pub enabled: bool,
    /// The guest corrupted the ring; not polled until restarted.
    pub broken: bool,
    /// Length of the virtio-net header on this ring's buffers.
    pub hdr_len: usize,
    /// MRG_RXBUF negotiated: a packet may span several chains.
    pub mrg: bool,
    /// The guest may leave checksums or segmentation to us (`CSUM`, `HOST_TSO*`,
    /// `HOST_USO` negotiated): transmitted frames are finished on receipt.
    pub offload: bool,
    /// The frame being finished, and its segments still to deliver.
    pub spill: Spill,
    /// `GUEST_CSUM` and `GUEST_TSO4/6` negotiated: runs of TCP segments we transmit are
    /// coalesced into super-packets (`coalesce`).
    pub gro: Gro,
    /// `VIRTIO_F_RING_PACKED` negotiated: the ring is packed and `q` unused.
    pub packed: Option<Packed>,
}

impl Default for Vring {
    fn default() -> Self {
        Vring {
            q: Queue::new(MAX_RING).expect("virtio-queue accepts its maximum size"),
            mem: None,
            call: None,
            kick: None,
            started: false,
            enabled: false,
            broken: false,
            hdr_len: HDR_MRG,
            mrg: false,
            offload: false,
            spill: Spill::default(),
            gro: Gro::default(),
            packed: None,
        }
    }
}

impl Vring {
    /// A started and enabled split ring of `size` slots in `mem`, its descriptor table,
    /// available and used rings at the given guest addresses (below 4 GiB): what a backend
    /// holds after a frontend's setup messages, for tests and benchmarks that drive the
    /// ring with a driver of their own. Other fields as [`Vring::default`].
    pub fn split_in(mem: Arc<Guest>, size: u16, desc: u32, avail: u32, used: u32) -> Vring {
        let mut v = Vring::default();
        v.q.set_size(size);
        v.q.set_desc_table_address(Some(desc), Some(0));
        v.q.set_avail_ring_address(Some(avail), Some(0));
        v.q.set_used_ring_address(Some(used), Some(0));
        v.q.set_ready(true);
        v.mem = Some(mem);
        v.started = true;
        v.enabled = true;
        v
    }

    /// Whether poll threads should move packets through this ring.
    pub fn live(&self) -> bool {
        self.started
            && self.enabled
            && !self.broken
            && self.mem.is_some()
            && (self.packed.is_some() || self.q.ready())
    }
}

/// A descriptor, copied out of guest memory.
#[derive(Clone, Copy, Debug)]
struct Desc {
    addr: u64,
    len: u32,
    flags: u16,
    next: u16,
}

/// The three areas of a split ring, translated to host pointers for one burst.
struct Ring<'a> {
    g: &'a Guest,
    desc: *const u8,
    avail: *const u8,
    used: *mut u8,
    size: u16,
    /// `size - 1`: split rings are powers of two, so an index is reduced with a mask (a
    /// division per ring access cost a `div` on the per-packet path).
    mask: u16,
    event_idx: bool,
}

impl<'a> Ring<'a> {
    /// Translates `q`'s areas; `None` if one does not lie whole in one region.
    fn new(q: &Queue, g: &'a Guest) -> Option<Ring<'a>> {
        let size = q.size();
        let n = u64::from(size);
        let extra = if q.event_idx_enabled() { 2 } else { 0 };
        let avail = g.host(q.avail_ring(), 4 + 2 * n + extra)?;
        let used = g.host(q.used_ring(), 4 + 8 * n + extra)?;
        // The atomic and element accesses need natural alignment in *our* address space too
        // (a region whose guest start is not page-aligned could shift it).
        if !(avail as usize).is_multiple_of(2)
            || !(used as usize).is_multiple_of(4)
            || !size.is_power_of_two()
        {
            return None;
        }
        Some(Ring {
            g,
            desc: g.host(q.desc_table(), 16 * n)?,
            avail,
            used,
            size,
            mask: size - 1,
            event_idx: q.event_idx_enabled(),
        })
    }

    fn avail_idx(&self) -> u16 {
        // SAFETY: `avail + 2` lies in the translated area (4 + 2n bytes) and is 2-aligned
        // (checked in `Ring::new`).
        u16::from_le(
            unsafe { AtomicU16::from_ptr(self.avail.add(2) as *mut u16) }.load(Ordering::Acquire),
        )
    }

    fn avail_flags(&self) -> u16 {
        // SAFETY: as in `avail_idx`, at offset 0.
        u16::from_le(unsafe { AtomicU16::from_ptr(self.avail as *mut u16) }.load(Ordering::Relaxed))
    }

    /// The head of available entry `i` (any u16: reduced modulo the size).
    fn avail_entry(&self, i: u16) -> u16 {
        let off = 4 + 2 * usize::from(i & self.mask);
        // SAFETY: `off + 2 <= 4 + 2 * size`, inside the translated area, 2-aligned.
        u16::from_le(unsafe { std::ptr::read_volatile(self.avail.add(off) as *const u16) })
    }

    /// `used_event` (EVENT_IDX), after the available ring's entries.
    fn used_event(&self) -> u16 {
        let off = 4 + 2 * usize::from(self.size);
        // SAFETY: the area was translated with 2 extra bytes when EVENT_IDX is on (the only
        // case this is called), 2-aligned.
        u16::from_le(unsafe { std::ptr::read_volatile(self.avail.add(off) as *const u16) })
    }

    /// Writes used element `k` (reduced modulo the size).
    fn put_used(&self, k: u16, id: u16, len: u32) {
        let off = 4 + 8 * usize::from(k & self.mask);
        // SAFETY: `off + 8 <= 4 + 8 * size`, inside the translated used area, 4-aligned
        // (checked in `Ring::new`).
        unsafe {
            std::ptr::write_volatile(self.used.add(off) as *mut u32, u32::from(id).to_le());
            std::ptr::write_volatile(self.used.add(off + 4) as *mut u32, len.to_le());
        }
    }

    /// Tells the guest not to kick us (`VRING_USED_F_NO_NOTIFY`): every ring is polled, and
    /// a DPDK guest otherwise writes its kick eventfd after every burst it offers (a system
    /// call per burst on the guest's core). Stored only when the flag is missing. With
    /// `EVENT_IDX` the guest reads `avail_event` instead, which we leave alone (as DPDK's
    /// vhost library does in poll mode), so it kicks once per 65536 chains at most.
    fn quiet_kicks(&self) {
        // SAFETY: `used` is inside the translated area and 2-aligned (checked in `Ring::new`).
        let flags = unsafe { AtomicU16::from_ptr(self.used as *mut u16) };
        let f = u16::from_le(flags.load(Ordering::Relaxed));
        if f & USED_NO_NOTIFY == 0 {
            flags.store((f | USED_NO_NOTIFY).to_le(), Ordering::Relaxed);
        }
    }

    fn set_used_idx(&self, v: u16) {
        // SAFETY: `used + 2` is inside the translated area and 2-aligned.
        unsafe { AtomicU16::from_ptr(self.used.add(2) as *mut u16) }
            .store(v.to_le(), Ordering::Release);
    }

    /// Whether the guest wants an interrupt after the used index moved from `old` to `new`.
    fn needs_notification(&self, old: u16, new: u16) -> bool {
        // The used index store must be visible before we read what the guest asked for.
        fence(Ordering::SeqCst);
        if self.event_idx {
            let e = self.used_event();
            new.wrapping_sub(e).wrapping_sub(1) < new.wrapping_sub(old)
        } else {
            self.avail_flags() & AVAIL_NO_INTERRUPT == 0
        }
    }
}

/// A ring's chains as the copy loops ([`gather`], [`fill`], `offload::gather`) see them:
/// the guest's memory and a walk over the data descriptors of the chain at `head`.
trait Chains {
    fn guest(&self) -> &Guest;
    fn walk(
        &self,
        head: u16,
        f: impl FnMut(Desc) -> Result<(), DescError>,
    ) -> Result<(), DescError>;
}

impl Chains for Ring<'_> {
    #[inline(always)]
    fn guest(&self) -> &Guest {
        self.g
    }

    #[inline(always)]
    fn walk(
        &self,
        head: u16,
        f: impl FnMut(Desc) -> Result<(), DescError>,
    ) -> Result<(), DescError> {
        walk(self, head, f)
    }
}

/// Reads descriptor `i` of a table at `table` (the caller checked `i` < its length).
#[inline(always)]
fn read_desc(table: *const u8, i: u16) -> Desc {
    // SAFETY: `table` holds at least `i + 1` 16-byte descriptors (checked by the caller).
    let (addr, w) = unsafe { load_desc(table.add(16 * usize::from(i))) };
    Desc {
        addr,
        len: w as u32,
        flags: (w >> 32) as u16,
        next: (w >> 48) as u16,
    }
}

/// Walks the chain starting at `head`, handing each data descriptor to `f` (which may stop
/// the walk with an error). At most as many descriptors as the table holds; one level of
/// indirection, not combined with `next`.
fn walk(
    r: &Ring<'_>,
    head: u16,
    mut f: impl FnMut(Desc) -> Result<(), DescError>,
) -> Result<(), DescError> {
    if head >= r.size {
        return Err(DescError::Chain);
    }
    let mut table = r.desc;
    let mut len = r.size;
    let mut idx = head;
    let mut budget = r.size;
    let mut indirect = false;
    loop {
        if budget == 0 {
            return Err(DescError::Chain);
        }
        budget -= 1;
        let d = read_desc(table, idx);
        if d.flags & DESC_INDIRECT != 0 {
            if indirect
                || d.flags & DESC_NEXT != 0
                || d.len == 0
                || !d.len.is_multiple_of(16)
                || d.len / 16 > 65535
            {
                return Err(DescError::Chain);
            }
            table =
                r.g.host(d.addr, u64::from(d.len))
                    .ok_or(DescError::Memory)?;
            len = (d.len / 16) as u16;
            budget = len;
            idx = 0;
            indirect = true;
            continue;
        }
        f(d)?;
        if d.flags & DESC_NEXT == 0 {
            return Ok(());
        }
        idx = d.next;
        if idx >= len {
            return Err(DescError::Chain);
        }
    }
}

/// Signals the guest through the call eventfd.
fn signal(call: &Option<File>) {
    if let Some(call) = call {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own a duplicate of; it
        // was made non-blocking when received, so a full counter returns EAGAIN.
        unsafe {
            libc::write(call.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }
}

/// Receives up to `batch.room()` frames the guest transmitted on `v`.
pub fn rx_burst(v: &mut Vring, pool: &mut Pool, batch: &mut Batch) -> Burst {
    if let Some(p) = v.packed {
        return packed::rx_burst(v, p, pool, batch);
    }
    let mut b = Burst::default();
    let Some(g) = v.mem.clone() else { return b };
    let Some(r) = Ring::new(&v.q, &g) else {
        v.broken = true;
        b.broken = true;
        b.errors += 1;
        return b;
    };
    let next = v.q.next_avail();
    let n = r.avail_idx().wrapping_sub(next);
    if n > r.size {
        v.broken = true;
        b.errors += 1;
        b.broken = true;
        return b;
    }
    r.quiet_kicks();
    let hdr = v.hdr_len;
    // Without offloads nothing reads the header, so its line stays with the guest unless
    // the frame starts in it too.
    let skip = if v.offload { 0 } else { hdr };
    prefetch::burst(&r, next, usize::from(n).min(batch.room()), false, skip);
    // Segments of a frame finished in an earlier burst go first; while some wait, no new
    // chain is read.
    if v.offload {
        offload::drain(&mut v.spill, pool, batch, &mut b);
    }
    let old_used = v.q.next_used();
    let mut used = old_used;
    let mut i = 0u16;
    while i < n && !batch.is_full() && !v.spill.pending() {
        let Some(pkt) = pool.alloc() else { break };
        let head = r.avail_entry(next.wrapping_add(i));
        i += 1;
        receive_chain(
            &r,
            head,
            hdr,
            pkt,
            v.offload,
            &mut v.spill,
            pool,
            batch,
            &mut b,
        );
        r.put_used(used, head, 0);
        used = used.wrapping_add(1);
    }
    if i > 0 {
        r.set_used_idx(used);
        v.q.set_next_avail(next.wrapping_add(i));
        v.q.set_next_used(used);
        if r.needs_notification(old_used, used) {
            signal(&v.call);
        }
    }
    b
}

/// Receives chain `head` into `pkt` (either ring layout): with offloads through
/// [`receive_offloaded`], otherwise copied as it is; counted in `b`, pushed to `batch`, or
/// given back to `pool` when refused.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn receive_chain<R: Chains>(
    r: &R,
    head: u16,
    hdr: usize,
    mut pkt: Packet,
    offload: bool,
    spill: &mut Spill,
    pool: &mut Pool,
    batch: &mut Batch,
    b: &mut Burst,
) {
    if offload {
        return receive_offloaded(r, head, hdr, pkt, spill, pool, batch, b);
    }
    match gather(r, head, hdr, &mut pkt) {
        Ok(len) => {
            b.packets += 1;
            b.bytes += len as u64;
            if let Err(p) = batch.push(pkt) {
                pool.free(p);
            }
        }
        Err(_) => {
            b.errors += 1;
            pool.free(pkt);
        }
    }
}

/// Receives chain `head` on a ring with offloads: a plain frame goes to `batch` as it is;
/// one that needs a checksum or segmentation is finished through `spill`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn receive_offloaded<R: Chains>(
    r: &R,
    head: u16,
    hdr: usize,
    mut pkt: Packet,
    spill: &mut Spill,
    pool: &mut Pool,
    batch: &mut Batch,
    b: &mut Burst,
) {
    let planned = match offload::gather(r, head, hdr, &mut pkt, spill) {
        Ok(offload::Got::Packet(vh)) if vh.is_plain() => {
            b.packets += 1;
            b.bytes += pkt.len() as u64;
            if let Err(p) = batch.push(pkt) {
                pool.free(p);
            }
            return;
        }
        Ok(offload::Got::Packet(vh)) => offload::begin_from(spill, &pkt, vh),
        Ok(offload::Got::Spilled(vh)) => offload::begin(spill, vh),
        Err(_) => false,
    };
    pool.free(pkt);
    if !planned {
        b.errors += 1;
        return;
    }
    offload::drain(spill, pool, batch, b);
}

/// Copies the frame of guest transmit chain `head` (after its `hdr`-byte virtio-net header)
/// into `pkt`; returns the frame length.
fn gather<R: Chains>(r: &R, head: u16, hdr: usize, pkt: &mut Packet) -> Result<usize, DescError> {
    let Some(buf) = pkt.reset_for_rx(MAX_FRAME) else {
        return Err(DescError::Length);
    };
    let mut skip = hdr; // header bytes still to skip
    let mut len = 0usize;
    r.walk(head, |d| {
        if d.flags & DESC_WRITE != 0 {
            return Err(DescError::Direction);
        }
        let dlen = d.len as usize;
        let h = skip.min(dlen);
        skip -= h;
        let n = dlen - h;
        if n == 0 {
            return Ok(());
        }
        if n > buf.len() - len {
            return Err(DescError::Length);
        }
        let addr = d.addr.checked_add(h as u64).ok_or(DescError::Memory)?;
        copy_in(r.guest(), addr, &mut buf[len..len + n])?;
        len += n;
        Ok(())
    })?;
    if skip > 0 || len == 0 {
        return Err(DescError::Length);
    }
    pkt.truncate(len);
    Ok(len)
}

/// Transmits every packet of `batch` into the guest's receive queue `v`; packets that find
/// no buffers are dropped and counted. `retries` extra looks at the available index are
/// allowed per burst when the guest's buffers run out.
pub fn tx_burst(v: &mut Vring, pool: &mut Pool, batch: &mut Batch, retries: u32) -> Burst {
    if let Some(p) = v.packed {
        return packed::tx_burst(v, p, pool, batch, retries);
    }
    let mut b = Burst::default();
    let g = v.mem.clone();
    let r = g.as_deref().and_then(|g| Ring::new(&v.q, g));
    let Some(r) = r else {
        b.dropped += batch.len() as u64;
        pool.free_batch(batch);
        return b;
    };
    let mut next = v.q.next_avail();
    let mut avail = r.avail_idx().wrapping_sub(next);
    if avail > r.size {
        v.broken = true;
        b.broken = true;
        b.errors += batch.len() as u64;
        pool.free_batch(batch);
        return b;
    }
    r.quiet_kicks();
    prefetch::burst(&r, next, batch.len().min(usize::from(avail)), true, 0);
    let mut retries = retries;
    let old_used = v.q.next_used();
    let mut used_idx = old_used;
    let mut used: [(u16, u32); MAX_CHAINS_PER_PKT] = [(0, 0); MAX_CHAINS_PER_PKT];
    let hdr = v.hdr_len;
    let mrg = v.mrg;
    let pkts = batch.packets();
    let mut i = 0;
    while i < pkts.len() {
        // A run of TCP segments goes as one super-packet if the guest's buffers hold it.
        let (frame, vh, frames, bytes) = v.gro.next(pkts, i, hdr, |len| {
            coalesce::room(&r, mrg, next, avail, len)
        });
        i += frames;
        loop {
            match scatter(&r, hdr, mrg, frame, &vh, next, avail, &mut used) {
                Ok(k) => {
                    for &(head, len) in &used[..k] {
                        r.put_used(used_idx, head, len);
                        used_idx = used_idx.wrapping_add(1);
                    }
                    next = next.wrapping_add(k as u16);
                    avail -= k as u16;
                    b.packets += frames as u64;
                    b.bytes += bytes;
                    if frames > 1 {
                        b.coalesced += frames as u64;
                    }
                }
                Err(Scatter::NoBuffers) => {
                    // Nothing consumed; look again, a bounded number of times.
                    if retries > 0 && !b.broken {
                        retries -= 1;
                        let n = r.avail_idx().wrapping_sub(next);
                        if n > r.size {
                            v.broken = true;
                            b.broken = true;
                        } else if n > avail {
                            avail = n;
                            continue;
                        }
                    }
                    b.dropped += frames as u64;
                }
                Err(Scatter::Bad(k)) => {
                    // Refused chains go back to the guest as used with length 0.
                    for &(head, _) in &used[..k] {
                        r.put_used(used_idx, head, 0);
                        used_idx = used_idx.wrapping_add(1);
                    }
                    next = next.wrapping_add(k as u16);
                    avail -= k as u16;
                    b.errors += frames as u64;
                }
            }
            break;
        }
    }
    pool.free_batch(batch);
    if used_idx != old_used {
        r.set_used_idx(used_idx);
        v.q.set_next_avail(next);
        v.q.set_next_used(used_idx);
        if r.needs_notification(old_used, used_idx) {
            signal(&v.call);
        }
    }
    b
}

enum Scatter {
    /// Not enough available chains; nothing was consumed.
    NoBuffers,
    /// The first `k` chains in `used` were consumed and must be returned.
    Bad(usize),
}

/// Writes the virtio-net header (`vh`, then `num_buffers`) and `frame` into as many
/// available chains (from entry `next`, at most `avail`) as it takes (one unless
/// MRG_RXBUF); fills `used` with `(head, bytes written)` and returns how many chains it used.
#[allow(clippy::too_many_arguments)]
fn scatter(
    r: &Ring<'_>,
    hdr: usize,
    mrg: bool,
    frame: &[u8],
    vh: &[u8; VNET_HDR_LEN],
    next: u16,
    avail: u16,
    used: &mut [(u16, u32); MAX_CHAINS_PER_PKT],
) -> Result<usize, Scatter> {
    let mut k = 0usize;
    let mut off = 0usize; // bytes of frame written
    let mut hdr_at: Option<u64> = None;
    while off < frame.len() || hdr_at.is_none() {
        if k == MAX_CHAINS_PER_PKT || (k > 0 && !mrg) {
            // One chain without MRG_RXBUF: the frame does not fit the guest's buffer.
            return Err(Scatter::Bad(k));
        }
        if k == usize::from(avail) {
            return Err(Scatter::NoBuffers);
        }
        let head = r.avail_entry(next.wrapping_add(k as u16));
        used[k] = (head, 0);
        k += 1;
        match fill(r, head, hdr, frame, &mut off, &mut hdr_at) {
            Some(written) => used[k - 1].1 = written,
            None => return Err(Scatter::Bad(k)),
        }
    }
    if !put_header(r.g, hdr_at, hdr, vh, k) {
        return Err(Scatter::Bad(k));
    }
    Ok(k)
}

/// Writes into the device-writable buffers of chain `head` what they take of `frame` from
/// `*off` on, the `hdr`-byte header first if `*hdr_at` says it has no place yet; returns the
/// bytes written, `None` if the chain is refused.
#[inline]
fn fill<R: Chains>(
    r: &R,
    head: u16,
    hdr: usize,
    frame: &[u8],
    off: &mut usize,
    hdr_at: &mut Option<u64>,
) -> Option<u32> {
    let g = r.guest();
    let mut written = 0u32;
    let mut descs = 0;
    let walked = r.walk(head, |d| {
        descs += 1;
        if d.flags & DESC_WRITE == 0 {
            return Err(DescError::Direction);
        }
        let mut addr = d.addr;
        let mut room = d.len as usize;
        if hdr_at.is_none() {
            // The header must sit whole in the first descriptor (Linux and DPDK drivers
            // always give at least that much).
            if room < hdr || g.host(addr, hdr as u64).is_none() {
                return Err(DescError::Length);
            }
            *hdr_at = Some(addr);
            addr += hdr as u64;
            room -= hdr;
            written += hdr as u32;
        }
        let n = room.min(frame.len() - *off);
        if n > 0 {
            copy_out(g, addr, &frame[*off..*off + n])?;
            *off += n;
            written += n as u32;
        }
        Ok(())
    });
    if walked.is_err() || descs == 0 {
        return None;
    }
    Some(written)
}
