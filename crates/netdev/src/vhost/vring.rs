//! One virtqueue of a vhost-user connection and the burst loops that move packets through
//! it: the guest's transmit queues are our receive path, its receive queues our transmit path.
//!
//! ## How
//! Split rings through `virtio-queue`'s [`Queue`]: it reads the available ring, walks
//! descriptor chains (direct and indirect) and writes the used ring, every access through
//! the bounds-checked guest memory of [`super::mem`]. What a chain *means* for a network
//! device is ours: [`gather`] copies a guest frame (after its virtio-net header) into one of
//! our pool buffers, [`scatter`] writes our frame (with a header) into the guest's buffers,
//! several chains per packet when `VIRTIO_NET_F_MRG_RXBUF` was negotiated.
//!
//! ## Containment
//! The guest writes the rings and descriptors and may rewrite them at any moment. So:
//! * an available index more than a ring's size ahead of ours marks the ring *broken*
//!   (counted once, then left alone until the frontend restarts the ring);
//! * a chain that does not end (a loop, a `next` past the table) is cut after the ring's size
//!   in descriptors by `virtio-queue` and we refuse it (`DescError::Chain`);
//! * a descriptor outside guest memory fails its copy (`DescError::Memory`), one with the
//!   wrong direction is refused (`DescError::Direction`), a frame longer than our buffers is
//!   refused without copying past them (`DescError::Length`);
//! * every refused chain is still returned to the guest (used, length 0) and counted, so a
//!   bad descriptor costs one packet, never the queue;
//! * a guest that never gives us receive buffers costs `tx_dropped`, never a wait (at most
//!   `tx-retries-max` extra looks at its available index per burst, as OVS does).
//!
//! ## Threading
//! A [`Vring`] sits behind its own mutex in the port's shared state. The control thread
//! configures it (size, addresses, base, fds, memory); a poll thread takes the mutex with
//! `try_lock` for one burst and skips the ring if the control thread holds it.

use packet::{Batch, Packet, Pool, MAX_FRAME};
use std::fs::File;
use std::num::Wrapping;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use virtio_queue::{DescriptorChain, Queue, QueueT};
use vm_memory::{Bytes, GuestAddress, GuestMemory, GuestMemoryMmap};

/// Largest ring the frontend may ask for (the virtio maximum for split rings).
pub const MAX_RING: u16 = 32768;
/// The virtio-net header with `num_buffers` (VERSION_1 or MRG_RXBUF), and without.
pub const HDR_MRG: usize = 12;
pub const HDR_LEGACY: usize = 10;
/// Chains one packet may use with MRG_RXBUF (a frame of MAX_FRAME in 64-byte buffers).
const MAX_CHAINS_PER_PKT: usize = 64;

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
    /// The ring's indices are impossible; it was marked broken.
    pub broken: bool,
}

/// One virtqueue and what the control thread configured for it.
pub struct Vring {
    pub q: Queue,
    pub mem: Option<Arc<GuestMemoryMmap>>,
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
}

impl Default for Vring {
    fn default() -> Self {
        Vring {
            // MAX_RING is a valid power of two, so this cannot fail; fall back to the
            // smallest queue rather than panic if a crate upgrade ever changed that.
            q: Queue::new(MAX_RING).expect("virtio-queue accepts its maximum size"),
            mem: None,
            call: None,
            kick: None,
            started: false,
            enabled: false,
            broken: false,
            hdr_len: HDR_MRG,
            mrg: false,
        }
    }
}

impl Vring {
    /// Whether poll threads should move packets through this ring.
    pub fn live(&self) -> bool {
        self.started && self.enabled && !self.broken && self.mem.is_some() && self.q.ready()
    }

    /// Signals the guest through the call eventfd if it wants to be told.
    fn notify(&mut self, mem: &GuestMemoryMmap) {
        let Some(call) = &self.call else { return };
        if self.q.needs_notification(mem).unwrap_or(true) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to an eventfd we own a duplicate of; it
            // was made non-blocking when received, so a full counter returns EAGAIN.
            unsafe {
                libc::write(call.as_raw_fd(), (&one as *const u64).cast(), 8);
            }
        }
    }
}

/// Returns chain `head` to the guest. A head index outside the ring (which the guest wrote
/// into its available ring) cannot be returned: the chain was already refused and counted.
fn put_used(q: &mut Queue, mem: &GuestMemoryMmap, head: u16, len: u32) {
    if head < q.size() {
        // Cannot fail: the used ring was checked to lie in guest memory when the ring started.
        let _ = q.add_used(mem, head, len);
    }
}

/// How many chains the guest has made available, or `Err` if its index is impossible.
fn avail_count(q: &Queue, mem: &GuestMemoryMmap) -> Result<u16, ()> {
    let idx = q.avail_idx(mem, Ordering::Acquire).map_err(|_| ())?;
    let n = (idx - Wrapping(q.next_avail())).0;
    if n > q.size() {
        Err(())
    } else {
        Ok(n)
    }
}

/// Receives up to `batch.room()` frames the guest transmitted on `v`.
pub fn rx_burst(v: &mut Vring, pool: &mut Pool, batch: &mut Batch) -> Burst {
    let mut b = Burst::default();
    let Some(mem) = v.mem.clone() else { return b };
    let mem = &*mem;
    let n = match avail_count(&v.q, mem) {
        Ok(n) => n,
        Err(()) => {
            v.broken = true;
            b.errors += 1;
            b.broken = true;
            return b;
        }
    };
    let hdr = v.hdr_len;
    let mut done = 0;
    for _ in 0..n {
        if batch.is_full() {
            break;
        }
        let Some(mut pkt) = pool.alloc() else { break };
        let Some(chain) = v.q.pop_descriptor_chain(mem) else {
            pool.free(pkt);
            break;
        };
        let head = chain.head_index();
        match gather(mem, chain, hdr, &mut pkt) {
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
        put_used(&mut v.q, mem, head, 0);
        done += 1;
    }
    if done > 0 {
        v.notify(mem);
    }
    b
}

/// Copies the frame of a guest transmit chain (after its `hdr`-byte virtio-net header) into
/// `pkt`; returns the frame length.
pub fn gather<M: GuestMemory>(
    mem: &M,
    chain: DescriptorChain<&M>,
    hdr: usize,
    pkt: &mut Packet,
) -> Result<usize, DescError> {
    let Some(buf) = pkt.reset_for_rx(MAX_FRAME) else {
        return Err(DescError::Length);
    };
    let mut skip = hdr; // header bytes still to skip
    let mut len = 0usize;
    let mut more = false;
    let mut err = None;
    for d in chain {
        more = d.has_next();
        if err.is_some() {
            continue;
        }
        if d.is_write_only() {
            err = Some(DescError::Direction);
            continue;
        }
        let dlen = d.len() as usize;
        let h = skip.min(dlen);
        skip -= h;
        let n = dlen - h;
        if n == 0 {
            continue;
        }
        if len + n > buf.len() {
            err = Some(DescError::Length);
            continue;
        }
        let Some(addr) = d.addr().0.checked_add(h as u64) else {
            err = Some(DescError::Memory);
            continue;
        };
        if mem
            .read_slice(&mut buf[len..len + n], GuestAddress(addr))
            .is_err()
        {
            err = Some(DescError::Memory);
            continue;
        }
        len += n;
    }
    if more {
        return Err(DescError::Chain);
    }
    if let Some(e) = err {
        return Err(e);
    }
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
    let mut b = Burst::default();
    let Some(mem) = v.mem.clone() else {
        b.dropped += batch.len() as u64;
        pool.free_batch(batch);
        return b;
    };
    let mem = &*mem;
    let mut avail = match avail_count(&v.q, mem) {
        Ok(n) => n,
        Err(()) => {
            v.broken = true;
            b.broken = true;
            b.errors += batch.len() as u64;
            pool.free_batch(batch);
            return b;
        }
    };
    let mut retries = retries;
    let mut used_any = false;
    let mut used: [(u16, u32); MAX_CHAINS_PER_PKT] = [(0, 0); MAX_CHAINS_PER_PKT];
    for pkt in batch.drain() {
        let frame = pkt.data();
        loop {
            let start = v.q.next_avail();
            let before = avail;
            match scatter(v, mem, frame, &mut avail, &mut used) {
                Ok(k) => {
                    for &(head, len) in &used[..k] {
                        put_used(&mut v.q, mem, head, len);
                    }
                    used_any = true;
                    b.packets += 1;
                    b.bytes += frame.len() as u64;
                }
                Err(Scatter::NoBuffers) => {
                    // Give the chains back untouched and look again, a bounded number of times.
                    v.q.set_next_avail(start);
                    avail = before;
                    if retries > 0 {
                        retries -= 1;
                        match avail_count(&v.q, mem) {
                            Ok(n) if n > 0 => {
                                avail = n;
                                continue;
                            }
                            Ok(_) => {}
                            Err(()) => {
                                v.broken = true;
                                b.broken = true;
                            }
                        }
                    }
                    b.dropped += 1;
                }
                Err(Scatter::Bad(k)) => {
                    // Refused chains go back to the guest as used with length 0.
                    for &(head, _) in &used[..k] {
                        put_used(&mut v.q, mem, head, 0);
                    }
                    used_any |= k > 0;
                    b.errors += 1;
                }
            }
            break;
        }
        pool.free(pkt);
        if v.broken {
            retries = 0;
            avail = 0;
        }
    }
    if used_any {
        v.notify(mem);
    }
    b
}

enum Scatter {
    /// Not enough available chains; nothing was consumed (the caller rewinds).
    NoBuffers,
    /// The first `k` chains in `used` were consumed and must be returned.
    Bad(usize),
}

/// Writes the virtio-net header and `frame` into as many available chains as it takes (one
/// unless MRG_RXBUF); fills `used` with `(head, bytes written)` and returns how many.
fn scatter(
    v: &mut Vring,
    mem: &GuestMemoryMmap,
    frame: &[u8],
    avail: &mut u16,
    used: &mut [(u16, u32); MAX_CHAINS_PER_PKT],
) -> Result<usize, Scatter> {
    let hdr = v.hdr_len;
    let mut k = 0usize;
    let mut off = 0usize; // bytes of frame written
    let mut hdr_at: Option<GuestAddress> = None;
    while off < frame.len() || hdr_at.is_none() {
        if k == MAX_CHAINS_PER_PKT || (k > 0 && !v.mrg) {
            // One chain without MRG_RXBUF: the frame does not fit the guest's buffer.
            return Err(Scatter::Bad(k));
        }
        if *avail == 0 {
            return Err(Scatter::NoBuffers);
        }
        let Some(chain) = v.q.pop_descriptor_chain(mem) else {
            return Err(Scatter::NoBuffers);
        };
        *avail -= 1;
        let head = chain.head_index();
        used[k] = (head, 0);
        k += 1;
        let mut written = 0u32;
        let mut more = false;
        let mut bad = false;
        let mut descs = 0;
        for d in chain {
            descs += 1;
            more = d.has_next();
            if bad {
                continue;
            }
            if !d.is_write_only() {
                bad = true;
                continue;
            }
            let mut addr = d.addr().0;
            let mut room = d.len() as usize;
            if hdr_at.is_none() {
                // The header must sit whole in the first descriptor (Linux and DPDK drivers
                // always give at least that much).
                if room < hdr
                    || !mem.check_range(GuestAddress(addr), hdr, vm_memory::Permissions::ReadWrite)
                {
                    bad = true;
                    continue;
                }
                hdr_at = Some(GuestAddress(addr));
                addr += hdr as u64;
                room -= hdr;
                written += hdr as u32;
            }
            let n = room.min(frame.len() - off);
            if n == 0 {
                continue;
            }
            if mem
                .write_slice(&frame[off..off + n], GuestAddress(addr))
                .is_err()
            {
                bad = true;
                continue;
            }
            off += n;
            written += n as u32;
        }
        if bad || more || descs == 0 {
            return Err(Scatter::Bad(k));
        }
        used[k - 1].1 = written;
    }
    let mut h = [0u8; HDR_MRG];
    h[10..12].copy_from_slice(&(k as u16).to_le_bytes());
    if let Some(at) = hdr_at {
        if mem.write_slice(&h[..hdr], at).is_err() {
            return Err(Scatter::Bad(k));
        }
    }
    Ok(k)
}
