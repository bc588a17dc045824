//! One AF_XDP socket with its own UMEM: the per-queue engine of the `afxdp` port.
//!
//! ## What
//! An [`Xsk`] is bound to one (interface, queue) pair. It owns
//! * the **UMEM**: an anonymous, page-aligned mapping of `nframes` frames of `frame_size` bytes
//!   (2 KiB, or 4 KiB for MTUs above 1774), registered with `XDP_UMEM_REG`;
//! * four **rings**, each mapped from the socket at the offsets `XDP_MMAP_OFFSETS` reports:
//!   *fill* (we give the kernel empty frames to receive into), *rx* (the kernel gives back
//!   filled frames), *tx* (we give the kernel frames to send), *completion* (the kernel gives
//!   back frames it has sent);
//! * a stack of **free frames**, preallocated to hold every frame, so nothing grows later.
//!
//! ## Ring protocol
//! Every ring is a power-of-two array of descriptors with a free-running 32-bit producer and
//! consumer index (index & mask = slot). Each side writes only its own index. As the producer
//! (fill, tx) we write descriptors into slots `[prod, prod + n)`, then publish with a
//! **release** store of `prod + n`: the descriptors (and, for tx, the frame bytes) are visible
//! to the kernel before the index is. To know how many slots are free we **acquire**-load the
//! kernel's consumer index, so its reads of the old descriptors happened before we overwrite
//! them. As the consumer (rx, completion) we **acquire**-load the kernel's producer index
//! before reading descriptors and frame bytes, and give slots back with a **release** store of
//! our consumer index after we are done reading. Both sides keep cached copies of the other's
//! index and re-read it only when the cache says the ring is empty or full, as the kernel does.
//!
//! ## Who owns a UMEM frame
//! Every frame is in exactly one place: our free stack, the fill ring or the kernel's receive
//! path (kernel), the rx ring (kernel -> us), the tx ring or the driver (kernel), the
//! completion ring (kernel -> us). The frames are split once: `ring` frames start in the fill
//! ring, the other `ring` frames in the free stack for transmit. A received frame is copied
//! into a pool buffer and goes straight back to the fill ring, so the fill ring is kept full
//! without any extra bookkeeping: the frames in fill + kernel + rx never exceed the fill
//! ring's size, so there is always room to recycle what we just consumed. Transmit pops a
//! frame from the free stack, and completed frames are pushed back. We only read or write a
//! frame's bytes while we own it, and only through raw-pointer copies (never references into
//! the shared mapping).
//!
//! ## Wake-ups
//! With `XDP_USE_NEED_WAKEUP` the kernel sets a flag in a ring when it needs a system call to
//! make progress. Transmit kicks with one `sendto(MSG_DONTWAIT)` per batch only when the tx
//! ring's flag is set (in copy mode it always is: copy-mode transmit happens inside that call);
//! receive calls `recvfrom(MSG_DONTWAIT)` only in zero-copy mode and only when the fill ring's
//! flag is set (the driver ran out of fill frames and went to sleep). Copy-mode transmit
//! handles at most a budget of descriptors per call (32 before Linux 6.17, raised here to the
//! ring size with `XDP_MAX_TX_SKB_BUDGET` where available), so a kick that returns `EAGAIN`
//! with descriptors still queued is repeated a bounded number of times; if the kernel still
//! cannot take them (completion ring or socket buffer full), they stay queued and the next
//! transmit or receive call kicks again.
//!
//! ## Invariants
//! * The mappings live exactly as long as the [`Xsk`]; raw pointers into them never escape.
//! * Descriptors from the kernel are checked against the UMEM before their frame is touched;
//!   a bad one is counted as an error, never trusted.
//! * The socket is closed after the rings and UMEM are unmapped (field order), and closing it
//!   removes it from any XSKMAP.

use crate::sys;
use crate::PortStats;
use packet::{Batch, Pool};
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

mod open;

/// `XDP_MAX_TX_SKB_BUDGET` (Linux 6.17+): descriptors one copy-mode `sendto` may transmit.
const XDP_MAX_TX_SKB_BUDGET: i32 = 9;
/// What copy-mode transmit handles per call when the budget cannot be raised.
const KERNEL_TX_BATCH: u32 = 32;
/// Headroom the kernel keeps in front of a received frame (`XDP_PACKET_HEADROOM`).
pub(crate) const XDP_PACKET_HEADROOM: u32 = 256;
/// How long a bind that finds the queue still busy is retried.
const BIND_RETRY: std::time::Duration = std::time::Duration::from_secs(2);
/// Socket send buffer asked for: copy-mode transmit charges each in-flight frame to it.
const SNDBUF: libc::c_int = 16 << 20;

/// How to set up one socket.
#[derive(Clone, Copy, Debug)]
pub(crate) struct XskConfig {
    pub(crate) ifindex: u32,
    pub(crate) queue: u32,
    pub(crate) zerocopy: bool,
    pub(crate) need_wakeup: bool,
    /// UMEM frame size: 2048 or 4096.
    pub(crate) frame_size: u32,
    /// Entries in each of the four rings (a power of two); the UMEM has twice as many frames.
    pub(crate) ring: u32,
}

/// A failed set-up step: which call, and the errno.
#[derive(Debug)]
pub(crate) struct XskError {
    pub(crate) call: &'static str,
    pub(crate) err: io::Error,
}

fn fail(call: &'static str) -> XskError {
    XskError {
        call,
        err: io::Error::last_os_error(),
    }
}

/// A `mmap`ed region, unmapped on drop.
struct Mmap {
    ptr: *mut u8,
    len: usize,
}

impl Mmap {
    /// Maps `len` bytes: anonymous memory (`fd` = None) or a socket's ring at `pgoff`.
    fn new(
        len: usize,
        fd: Option<RawFd>,
        pgoff: i64,
        call: &'static str,
    ) -> Result<Mmap, XskError> {
        let (flags, fd) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        // SAFETY: a fresh mapping at an address of the kernel's choosing; for a socket ring the
        // kernel checks `pgoff` and `len` against the ring it set up.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                pgoff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(fail(call));
        }
        Ok(Mmap { ptr: p.cast(), len })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: exactly the region mmap returned; no pointer into it outlives its owner.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// One mapped ring of descriptors of type `T` (`u64` frame addresses or `xdp_desc`).
struct Ring<T> {
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    descs: *mut T,
    mask: u32,
    size: u32,
    /// Producer rings: our next producer index. Consumer rings: the producer index last seen.
    prod: u32,
    /// Producer rings: the kernel's consumer index last seen. Consumer rings: our next one.
    cons: u32,
    _map: Mmap,
}

impl<T: Copy> Ring<T> {
    /// Maps a ring of `size` entries at `pgoff` of socket `fd`, laid out as `off` says.
    fn map(
        fd: RawFd,
        pgoff: i64,
        size: u32,
        off: &libc::xdp_ring_offset,
        call: &'static str,
    ) -> Result<Ring<T>, XskError> {
        let len = off.desc as usize + size as usize * mem::size_of::<T>();
        let map = Mmap::new(len, Some(fd), pgoff, call)?;
        let at = |o: u64| map.ptr.wrapping_add(o as usize);
        let mut r = Ring {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            descs: at(off.desc).cast(),
            mask: size - 1,
            size,
            prod: 0,
            cons: 0,
            _map: map,
        };
        r.prod = r.producer().load(Ordering::Acquire);
        r.cons = r.consumer().load(Ordering::Acquire);
        Ok(r)
    }

    #[inline(always)]
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: the offset came from XDP_MMAP_OFFSETS and lies inside our live mapping; the
        // kernel aligns the index words (they sit on their own cache lines) and the shared
        // index is only ever accessed atomically on our side.
        unsafe { &*self.producer }
    }

    #[inline(always)]
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    #[inline(always)]
    fn needs_wakeup(&self) -> bool {
        // SAFETY: as for `producer`; the flags word follows the same rules.
        let f = unsafe { &*self.flags };
        f.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    // ---- as producer (fill, tx) ----

    /// Free slots, refreshing the kernel's consumer index if fewer than `want` look free.
    #[inline]
    fn free(&mut self, want: u32) -> u32 {
        let mut free = self.size - self.prod.wrapping_sub(self.cons);
        if free < want {
            self.cons = self.consumer().load(Ordering::Acquire);
            free = self.size - self.prod.wrapping_sub(self.cons);
        }
        free
    }

    /// Writes slot `prod + i` (not yet visible to the kernel). Caller checked `i < free()`.
    #[inline(always)]
    fn put(&mut self, i: u32, v: T) {
        let slot = (self.prod.wrapping_add(i) & self.mask) as usize;
        // SAFETY: slot <= mask < size, so the write is inside the descriptor array of our
        // mapping; the slot is free (the caller checked against the kernel's consumer index,
        // acquired), so the kernel is not reading it.
        unsafe { ptr::write_volatile(self.descs.add(slot), v) }
    }

    /// Publishes `n` written slots.
    #[inline(always)]
    fn submit(&mut self, n: u32) {
        self.prod = self.prod.wrapping_add(n);
        self.producer().store(self.prod, Ordering::Release);
    }

    /// Slots written and published but not yet consumed by the kernel.
    #[inline]
    fn pending(&mut self) -> u32 {
        self.cons = self.consumer().load(Ordering::Acquire);
        self.prod.wrapping_sub(self.cons)
    }

    // ---- as consumer (rx, completion) ----

    /// Filled slots ready to read, at most `max`.
    #[inline]
    fn ready(&mut self, max: u32) -> u32 {
        let mut n = self.prod.wrapping_sub(self.cons);
        if n < max {
            self.prod = self.producer().load(Ordering::Acquire);
            n = self.prod.wrapping_sub(self.cons);
        }
        n.min(max)
    }

    /// Reads slot `cons + i`. Caller checked `i < ready()`.
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        let slot = (self.cons.wrapping_add(i) & self.mask) as usize;
        // SAFETY: inside the descriptor array; the kernel published the slot (producer index
        // acquired) and will not rewrite it until we release it.
        unsafe { ptr::read_volatile(self.descs.add(slot)) }
    }

    /// Gives `n` read slots back.
    #[inline(always)]
    fn release(&mut self, n: u32) {
        self.cons = self.cons.wrapping_add(n);
        self.consumer().store(self.cons, Ordering::Release);
    }
}

/// One AF_XDP socket, its UMEM and rings. See the module documentation.
pub(crate) struct Xsk {
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    umem: Mmap,
    /// Frames we own and that are in no ring.
    free: Vec<u64>,
    frame_size: u32,
    /// Copy-mode transmit descriptors per kick.
    tx_budget: u32,
    zerocopy: bool,
    need_wakeup: bool,
    /// Descriptors were left in the tx ring by the last kick: kick again at the next chance.
    tx_stuck: bool,
    /// Received frames counted per queue (for tests and `show`).
    pub(crate) rx_packets: u64,
    fd: OwnedFd,
}

// SAFETY: an `Xsk` exclusively owns its mappings and socket; the raw pointers point into
// memory shared with the kernel only, never with another thread of this process, so moving
// the whole value to another thread is sound. It is not `Sync`.
unsafe impl Send for Xsk {}

impl Xsk {
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The frame that `addr` (a kernel-provided UMEM offset) lies in, and the offset inside it,
    /// if `addr .. addr + len` lies inside one frame of our UMEM.
    #[inline(always)]
    fn frame_of(&self, addr: u64, len: u32) -> Option<(u64, usize)> {
        let base = addr & !u64::from(self.frame_size - 1);
        let inner = (addr - base) as usize;
        if base >= self.umem.len as u64 || inner + len as usize > self.frame_size as usize {
            return None;
        }
        Some((base, inner))
    }

    /// Receives up to `batch.room()` frames, copying each into a buffer from `pool` and
    /// recycling its UMEM frame to the fill ring. Returns how many were added.
    #[inline]
    pub(crate) fn rx(&mut self, pool: &mut Pool, batch: &mut Batch, st: &mut PortStats) -> usize {
        if self.tx_stuck {
            self.kick_tx(0);
        }
        let room = batch.room() as u32;
        let n = if room == 0 { 0 } else { self.rx.ready(room) };
        if n == 0 {
            self.wake_rx();
            return 0;
        }
        // By the ownership argument in the module docs there is room for all `n`.
        let fill_room = self.fill.free(n);
        let (mut taken, mut recycled, mut added) = (0u32, 0u32, 0usize);
        while taken < n {
            let d = self.rx.get(taken);
            let Some((base, inner)) = self.frame_of(d.addr, d.len) else {
                // Not one of our frames: the kernel broke the protocol. Skip it.
                taken += 1;
                st.rx_errors += 1;
                continue;
            };
            let Some(mut pkt) = pool.alloc() else {
                // Out of buffers: leave the rest in the ring for the next call.
                break;
            };
            taken += 1;
            match pkt.reset_for_rx(d.len as usize) {
                Some(dst) => {
                    // SAFETY: `frame_of` checked that `inner + len` lies inside the frame at
                    // `base`, itself inside the UMEM; we own the frame (the kernel put it on
                    // the rx ring and it is not back on the fill ring yet); `dst` is a
                    // distinct, private pool buffer of exactly `len` bytes.
                    unsafe {
                        ptr::copy_nonoverlapping(
                            self.umem.ptr.add(base as usize + inner),
                            dst.as_mut_ptr(),
                            dst.len(),
                        );
                    }
                    st.rx_packets += 1;
                    st.rx_bytes += u64::from(d.len);
                    self.rx_packets += 1;
                    if let Err(p) = batch.push(pkt) {
                        pool.free(p);
                    } else {
                        added += 1;
                    }
                }
                None => {
                    // Longer than a pool buffer.
                    st.rx_errors += 1;
                    pool.free(pkt);
                }
            }
            if recycled < fill_room {
                self.fill.put(recycled, base);
                recycled += 1;
            } else {
                self.free.push(base);
            }
        }
        self.rx.release(taken);
        self.fill.submit(recycled);
        self.wake_rx();
        added
    }

    /// Zero-copy drivers that ran out of fill frames sleep until woken.
    #[inline(always)]
    fn wake_rx(&mut self) {
        if self.zerocopy && self.need_wakeup && self.fill.needs_wakeup() {
            // SAFETY: recvfrom with no buffer and no address: only a wake-up for the driver.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    ptr::null_mut(),
                    ptr::null_mut(),
                );
            }
        }
    }

    /// Takes frames the kernel has finished sending back onto the free stack.
    #[inline]
    fn reclaim(&mut self) {
        let n = self.comp.ready(self.comp.size);
        for i in 0..n {
            let a = self.comp.get(i);
            match self.frame_of(a, 0) {
                Some((base, _)) if self.free.len() < self.free.capacity() => self.free.push(base),
                _ => {}
            }
        }
        if n > 0 {
            self.comp.release(n);
        }
    }

    /// Queues every frame of `batch` (sent, or dropped and counted), frees the buffers into
    /// `pool`, and kicks the kernel at most once per batch (see the module documentation).
    /// Frames longer than `max_len` (`max_len + 4` if VLAN-tagged) count as `tx_errors`.
    #[inline]
    pub(crate) fn tx(
        &mut self,
        pool: &mut Pool,
        batch: &mut Batch,
        st: &mut PortStats,
        max_len: usize,
    ) {
        self.reclaim();
        let room = self.tx.free(batch.len() as u32);
        let fs = self.frame_size as usize;
        let mut queued = 0u32;
        for pkt in batch.drain() {
            let data = pkt.data();
            let tagged = matches!(data.get(12..14), Some([0x81, 0x00]) | Some([0x88, 0xa8]));
            let limit = if tagged { max_len + 4 } else { max_len };
            if data.len() < 14 || data.len() > limit || data.len() > fs {
                st.tx_errors += 1;
                pool.free(pkt);
                continue;
            }
            if self.free.is_empty() {
                self.reclaim();
            }
            let addr = match self.free.pop() {
                Some(a) if queued < room => a,
                Some(a) => {
                    self.free.push(a);
                    st.tx_dropped += 1;
                    pool.free(pkt);
                    continue;
                }
                None => {
                    st.tx_dropped += 1;
                    pool.free(pkt);
                    continue;
                }
            };
            // SAFETY: `addr` is a frame from our free stack (we own it: it is in no ring), so
            // `addr + len <= addr + frame_size <= umem.len`; the source is a live pool buffer.
            unsafe {
                ptr::copy_nonoverlapping(
                    data.as_ptr(),
                    self.umem.ptr.add(addr as usize),
                    data.len(),
                );
            }
            self.tx.put(
                queued,
                libc::xdp_desc {
                    addr,
                    len: data.len() as u32,
                    options: 0,
                },
            );
            queued += 1;
            st.tx_packets += 1;
            st.tx_bytes += data.len() as u64;
            pool.free(pkt);
        }
        if queued > 0 {
            self.tx.submit(queued);
        }
        if queued > 0 || self.tx_stuck {
            self.kick_tx(queued);
        }
    }

    /// Tells the kernel there is something to send, if it needs telling.
    fn kick_tx(&mut self, queued: u32) {
        // Order our producer store before the flag load: a driver that sets the flag and then
        // re-checks the ring must not miss descriptors we published just before looking.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.need_wakeup && !self.tx.needs_wakeup() {
            self.tx_stuck = false;
            return;
        }
        // Copy mode sends up to `tx_budget` per call; retry while that is what stopped it.
        let mut tries = if self.zerocopy {
            1
        } else {
            queued / self.tx_budget + 2
        };
        let mut before = self.tx.pending();
        loop {
            // SAFETY: sendto with no buffer and no address: only a kick for the kernel.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    ptr::null(),
                    0,
                )
            };
            let errno = if rc < 0 {
                io::Error::last_os_error().raw_os_error().unwrap_or(0)
            } else {
                0
            };
            let left = self.tx.pending();
            tries -= 1;
            match errno {
                libc::EAGAIN | libc::EBUSY | libc::ENOBUFS if left > 0 => {
                    if tries == 0 || left >= before {
                        self.tx_stuck = true;
                        return;
                    }
                    before = left;
                }
                _ => {
                    self.tx_stuck = false;
                    return;
                }
            }
        }
    }

    /// The kernel's counters for this socket.
    pub(crate) fn kernel_stats(&self) -> Option<libc::xdp_statistics> {
        // SAFETY: plain integers; zero is valid.
        let zero: libc::xdp_statistics = unsafe { mem::zeroed() };
        sys::getsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_STATISTICS,
            zero,
        )
        .ok()
    }

    /// Whether the socket is bound in zero-copy mode.
    pub(crate) fn is_zerocopy(&self) -> bool {
        self.zerocopy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uapi_layouts() {
        assert_eq!(mem::size_of::<libc::xdp_desc>(), 16);
        assert_eq!(mem::size_of::<libc::xdp_mmap_offsets>(), 128);
        assert_eq!(mem::size_of::<libc::xdp_umem_reg>(), 32);
        assert_eq!(mem::size_of::<libc::sockaddr_xdp>(), 16);
        assert_eq!(mem::size_of::<libc::xdp_statistics>(), 48);
    }
}
