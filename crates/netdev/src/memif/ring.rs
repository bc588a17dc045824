//! memif shared memory: regions, rings, descriptor validation and the burst loops.
//!
//! ## What
//! A memif connection's memory belongs to the *client*: it creates one memfd per region,
//! lays out rings and packet buffers in it and hands the descriptors to the server. A ring
//! is a 128-byte header (cookie and flags and `head` on the first 64-byte line, `tail` alone
//! on the second) followed by `2^k` 16-byte descriptors (`flags:u16 region:u16 length:u32
//! offset:u32 metadata:u32`). Rings go one way: S2M (client to server) and M2S (server to
//! client). On both, `head` is written by the client and `tail` by the server:
//! * S2M: the client fills descriptors and advances `head`; the server copies them out and
//!   advances `tail` to give the buffers back.
//! * M2S: the client offers empty buffers by advancing `head` (each descriptor's `length` is
//!   the buffer's capacity); the server fills them, sets `length`, and advances `tail`; the
//!   client reads up to `tail` and offers the buffers again.
//!
//! ## Containment
//! Everything in shared memory may change under our feet, written by a peer we do not
//! trust. So: each descriptor is read once (a volatile copy) and only the copy is used; the
//! copy is checked ([`check_desc`]) before a single byte moves: region index known, `offset`
//! plus `length` inside that region's mapping, `length` at most the buffer size. The peer's
//! index (`head` or `tail`) is checked against our own private cursor: a distance beyond the
//! ring size is a lie and the burst is abandoned ([`ring_span`]). Our own index is never
//! read back from shared memory. A region's memfd must be sealed against shrinking
//! (`F_SEAL_SHRINK`) and at least as large as announced, so its mapping can never fault
//! (`SIGBUS`) under us; [`Region::map`] checks both. Bad descriptors are skipped and counted
//! by the caller; nothing here panics on any content of the shared memory.
//!
//! ## Batching and ordering
//! A burst loads the peer's index once (`Acquire`: the descriptors and packet bytes behind it
//! are visible), moves all packets, and stores our index once (`Release`: everything we wrote
//! is visible before the peer sees the index move). Before deciding whether to signal the
//! peer's eventfd we issue a full fence and read the ring's `flags`, so a peer that unmasks
//! interrupts and then re-checks the ring cannot miss our update.
//!
//! ## Threading
//! [`Region`] and [`Ring`] are plain pointers into a mapping kept alive by whoever owns the
//! regions (one connection, shared through an `Arc`); the cursors live in [`RxCursor`] and
//! [`TxCursor`], each used by one thread at a time.

use packet::{Batch, Packet, Pool, MAX_FRAME};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{fence, AtomicU16, Ordering};

/// The ring header's cookie.
pub const COOKIE: u32 = 0x03E3_1F20;
/// Size of a ring header (three 64-byte cache lines minus the descriptors' line).
pub const RING_HDR: usize = 128;
/// Size of one descriptor.
pub const DESC_SIZE: usize = 16;
/// Ring flag: the consumer does not want interrupts.
pub const FLAG_MASK_INT: u16 = 1;
/// Descriptor flag: the packet continues in the next descriptor.
pub const DESC_NEXT: u16 = 1;
/// Largest ring, as log2 (16 384 slots).
pub const MAX_LOG2_RING: u8 = 14;
/// Largest region we map (1 GiB).
pub const MAX_REGION_SIZE: u64 = 1 << 30;
/// Most regions per connection.
pub const MAX_REGIONS: usize = 16;
/// Longest descriptor chain followed for one packet.
pub const MAX_CHAIN: usize = 32;

const OFF_COOKIE: usize = 0;
const OFF_FLAGS: usize = 4;
const OFF_HEAD: usize = 6;
const OFF_TAIL: usize = 64;

/// One descriptor, as copied out of shared memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desc {
    pub flags: u16,
    pub region: u16,
    pub length: u32,
    pub offset: u32,
}

/// Why a descriptor or ring index was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescError {
    /// The region index names no region.
    Region,
    /// `offset + length` leaves the region.
    Bounds,
    /// `length` exceeds the buffer size.
    Length,
    /// A chain longer than [`MAX_CHAIN`] or than what the ring holds, or a frame longer than
    /// a packet buffer.
    Chain,
    /// The peer's index is further from ours than the ring is long.
    Index,
}

/// Checks descriptor `d` against the sizes of the mapped regions and the largest buffer
/// length; returns the region index, offset and length to use.
pub fn check_desc(
    d: &Desc,
    regions: &[usize],
    max_len: u32,
) -> Result<(usize, usize, usize), DescError> {
    let size = *regions
        .get(usize::from(d.region))
        .ok_or(DescError::Region)?;
    if d.length > max_len {
        return Err(DescError::Length);
    }
    let (off, len) = (d.offset as usize, d.length as usize);
    match off.checked_add(len) {
        Some(end) if end <= size => Ok((usize::from(d.region), off, len)),
        _ => Err(DescError::Bounds),
    }
}

/// The number of slots between our cursor `ours` and the peer's index `theirs` on a ring of
/// `size` slots, or an error if the peer claims more than the ring holds.
pub fn ring_span(ours: u16, theirs: u16, size: u16) -> Result<u16, DescError> {
    let n = theirs.wrapping_sub(ours);
    if n > size {
        Err(DescError::Index)
    } else {
        Ok(n)
    }
}

/// Checks that `fd` is a memfd sealed against shrinking and holding at least `size` bytes
/// (`size` itself bounded by [`MAX_REGION_SIZE`]): a mapping of it can never fault.
pub fn check_memfd(fd: BorrowedFd<'_>, size: u64) -> Result<(), String> {
    if size == 0 || size > MAX_REGION_SIZE {
        return Err(format!("region size {size} not in 1..={MAX_REGION_SIZE}"));
    }
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl(F_GET_SEALS) on a descriptor we hold; no memory is passed.
    let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
    if seals < 0 {
        return Err("region descriptor is not a memfd".into());
    }
    if seals & libc::F_SEAL_SHRINK == 0 {
        return Err("region memfd is not sealed against shrinking (F_SEAL_SHRINK)".into());
    }
    // SAFETY: fstat fills a zeroed, live `stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(raw, &mut st) } < 0 {
        return Err("fstat of region memfd failed".into());
    }
    if (st.st_size as u64) < size {
        return Err(format!(
            "region memfd holds {} bytes, {size} announced",
            st.st_size
        ));
    }
    Ok(())
}

/// A shared-memory region mapped read-write.
pub struct Region {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a Region is a plain mapping; all accesses go through raw pointers with explicit
// atomics or copies, and the mapping lives until Drop.
unsafe impl Send for Region {}
// SAFETY: as above; concurrent access from several threads is to disjoint rings/buffers or
// through atomics.
unsafe impl Sync for Region {}

impl Region {
    /// Maps `size` bytes of memfd `fd` after checking that it is a sealed memfd at least that
    /// large (so the mapping can never fault).
    pub fn map(fd: BorrowedFd<'_>, size: u64) -> Result<Region, String> {
        check_memfd(fd, size)?;
        let raw = fd.as_raw_fd();
        let len = size as usize;
        // SAFETY: a fresh shared mapping of `len` bytes of a file at least that long; the
        // kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "mmap of region failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Region { ptr: p.cast(), len })
    }

    /// Creates a sealed memfd of `size` bytes and maps it: memory of our own to share.
    pub fn create(size: u64) -> Result<(Region, std::os::fd::OwnedFd), String> {
        use std::os::fd::{AsFd, FromRawFd, OwnedFd};
        if size == 0 || size > MAX_REGION_SIZE {
            return Err(format!("{size} bytes of shared memory is out of range"));
        }
        // SAFETY: memfd_create with a NUL-terminated constant name; checked.
        let raw = unsafe {
            libc::memfd_create(
                c"ferrovs-memif".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate/fcntl on our own memfd.
        let ok = unsafe {
            libc::ftruncate(raw, size as libc::off_t) == 0
                && libc::fcntl(raw, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) == 0
        };
        if !ok {
            return Err(format!("sizing memfd: {}", std::io::Error::last_os_error()));
        }
        Ok((Region::map(fd.as_fd(), size)?, fd))
    }

    /// Copies `data` into the region at `off` (clipped to the region), e.g. to lay out rings.
    pub fn write(&self, off: usize, data: &[u8]) {
        let n = data.len().min(self.len.saturating_sub(off));
        // SAFETY: `off + n <= len`: inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), n) }
    }

    /// Length of the mapping.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, once mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ring of `log2` slots at `offset`, if it lies inside the region and is aligned.
    pub fn ring(&self, offset: u32, log2: u8) -> Option<Ring> {
        if log2 == 0 || log2 > MAX_LOG2_RING || !offset.is_multiple_of(8) {
            return None;
        }
        let size = 1usize << log2;
        let end = (offset as usize).checked_add(RING_HDR + size * DESC_SIZE)?;
        if end > self.len {
            return None;
        }
        Some(Ring {
            // SAFETY: offset + ring length is inside the mapping (checked above).
            base: unsafe { self.ptr.add(offset as usize) },
            size: size as u16,
        })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`; no reference into it outlives the
        // Region (rings and cursors are owned by the same connection).
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// A ring inside a mapped region. Valid while the region is mapped.
#[derive(Clone, Copy)]
pub struct Ring {
    base: *mut u8,
    size: u16,
}

// SAFETY: see Region; the ring is only used while its region is alive.
unsafe impl Send for Ring {}
// SAFETY: see Region.
unsafe impl Sync for Ring {}

impl Ring {
    /// Number of slots (a power of two up to 2^14, so it divides 2^16).
    pub fn size(&self) -> u16 {
        self.size
    }

    fn a16(&self, off: usize) -> &AtomicU16 {
        // SAFETY: `off` is one of the header offsets, inside the ring and 2-aligned because the
        // ring offset is 8-aligned and mappings are page-aligned.
        unsafe { &*(self.base.add(off) as *const AtomicU16) }
    }

    pub fn cookie(&self) -> u32 {
        // SAFETY: 4 bytes at the start of the ring, inside the mapping.
        unsafe { std::ptr::read_volatile(self.base.add(OFF_COOKIE) as *const u32) }
    }

    pub fn set_cookie(&self) {
        // SAFETY: as in `cookie`.
        unsafe { std::ptr::write_volatile(self.base.add(OFF_COOKIE) as *mut u32, COOKIE) }
    }

    pub fn flags(&self) -> u16 {
        self.a16(OFF_FLAGS).load(Ordering::Relaxed)
    }

    pub fn set_flags(&self, f: u16) {
        self.a16(OFF_FLAGS).store(f, Ordering::Relaxed)
    }

    pub fn head(&self) -> u16 {
        self.a16(OFF_HEAD).load(Ordering::Acquire)
    }

    pub fn set_head(&self, v: u16) {
        self.a16(OFF_HEAD).store(v, Ordering::Release)
    }

    pub fn tail(&self) -> u16 {
        self.a16(OFF_TAIL).load(Ordering::Acquire)
    }

    pub fn set_tail(&self, v: u16) {
        self.a16(OFF_TAIL).store(v, Ordering::Release)
    }

    fn desc_ptr(&self, slot: u16) -> *mut u8 {
        let i = usize::from(slot & (self.size - 1));
        // SAFETY: i < size, and the ring's descriptors are inside the mapping.
        unsafe { self.base.add(RING_HDR + i * DESC_SIZE) }
    }

    /// Copies descriptor `slot` (taken modulo the size) out of shared memory.
    pub fn desc(&self, slot: u16) -> Desc {
        let p = self.desc_ptr(slot);
        // SAFETY: 16 bytes inside the mapping; unaligned-safe volatile reads of plain integers.
        unsafe {
            Desc {
                flags: std::ptr::read_volatile(p as *const u16),
                region: std::ptr::read_volatile(p.add(2) as *const u16),
                length: std::ptr::read_volatile(p.add(4) as *const u32),
                offset: std::ptr::read_volatile(p.add(8) as *const u32),
            }
        }
    }

    /// Writes descriptor `slot`.
    pub fn set_desc(&self, slot: u16, d: &Desc) {
        let p = self.desc_ptr(slot);
        // SAFETY: as in `desc`.
        unsafe {
            std::ptr::write_volatile(p as *mut u16, d.flags);
            std::ptr::write_volatile(p.add(2) as *mut u16, d.region);
            std::ptr::write_volatile(p.add(4) as *mut u32, d.length);
            std::ptr::write_volatile(p.add(8) as *mut u32, d.offset);
        }
    }

    /// Writes only the flags and length of descriptor `slot`.
    fn set_len(&self, slot: u16, flags: u16, len: u32) {
        let p = self.desc_ptr(slot);
        // SAFETY: as in `desc`.
        unsafe {
            std::ptr::write_volatile(p as *mut u16, flags);
            std::ptr::write_volatile(p.add(4) as *mut u32, len);
        }
    }
}

/// The mapped regions of one connection, as the burst loops see them.
pub struct Mem<'a> {
    pub regions: &'a [Region],
    pub sizes: &'a [usize],
    /// Largest descriptor length accepted.
    pub max_len: u32,
}

impl Mem<'_> {
    fn check(&self, d: &Desc) -> Result<*mut u8, DescError> {
        let (r, off, _) = check_desc(d, self.sizes, self.max_len)?;
        // SAFETY: off + len <= region length (check_desc against the mapped size).
        Ok(unsafe { self.regions[r].ptr.add(off) })
    }
}

/// Per-burst outcome counters.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    pub packets: u64,
    pub bytes: u64,
    /// Descriptors (or whole bursts) refused.
    pub errors: u64,
    /// Packets that could not be placed (no buffer, no slot).
    pub dropped: u64,
    /// The peer's ring index was impossible: the ring is corrupt.
    pub broken: bool,
}

/// Receive cursor: the next slot to read.
#[derive(Default)]
pub struct RxCursor {
    pub next: u16,
}

/// Transmit cursor: the next slot to write.
#[derive(Default)]
pub struct TxCursor {
    pub next: u16,
}

/// Which side of the ring protocol we play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

/// Receives up to `batch.room()` packets from `ring` into pool buffers.
///
/// Server (S2M ring): packets lie between our cursor and the client's `head`; we give the
/// slots back by storing `tail`. Client (M2S ring): packets lie between our cursor and the
/// server's `tail`; the slots are offered again by [`client_refill`].
pub fn rx_burst(
    side: Side,
    ring: &Ring,
    mem: &Mem<'_>,
    cur: &mut RxCursor,
    pool: &mut Pool,
    batch: &mut Batch,
) -> Burst {
    let mut b = Burst::default();
    let theirs = match side {
        Side::Server => ring.head(),
        Side::Client => ring.tail(),
    };
    let avail = match ring_span(cur.next, theirs, ring.size()) {
        Ok(n) => n,
        Err(_) => {
            b.errors += 1;
            b.broken = true;
            return b;
        }
    };
    let end = cur.next.wrapping_add(avail);
    let mut slot = cur.next;
    while slot != end && !batch.is_full() {
        let Some(mut pkt) = pool.alloc() else {
            break;
        };
        let (next, ok) = gather(ring, mem, slot, end, &mut pkt);
        slot = next;
        match ok {
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
    if slot != cur.next {
        cur.next = slot;
        if side == Side::Server {
            ring.set_tail(slot);
        }
    }
    b
}

/// Copies the chain starting at `slot` (not past `end`) into `pkt`; returns the slot after
/// the chain and the frame length or why it was refused.
fn gather(
    ring: &Ring,
    mem: &Mem<'_>,
    mut slot: u16,
    end: u16,
    pkt: &mut Packet,
) -> (u16, Result<usize, DescError>) {
    let Some(buf) = pkt.reset_for_rx(MAX_FRAME) else {
        return (slot.wrapping_add(1), Err(DescError::Chain));
    };
    let mut len = 0usize;
    let mut err = None;
    for _ in 0..MAX_CHAIN {
        let d = ring.desc(slot);
        slot = slot.wrapping_add(1);
        if err.is_none() {
            match mem.check(&d) {
                Ok(src) => {
                    let n = d.length as usize;
                    if len + n > buf.len() {
                        err = Some(DescError::Chain);
                    } else {
                        // SAFETY: `src` points at `n` bytes inside a mapped region (checked);
                        // `buf[len..len + n]` is inside our own buffer. The peer may write the
                        // source concurrently: we copy bytes, never interpret them here.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr().add(len), n);
                        }
                        len += n;
                    }
                }
                Err(e) => err = Some(e),
            }
        }
        if d.flags & DESC_NEXT == 0 {
            return match err {
                Some(e) => (slot, Err(e)),
                None => {
                    pkt.truncate(len);
                    (slot, Ok(len))
                }
            };
        }
        if slot == end {
            // The chain runs past what the peer published: take the slots anyway (they were
            // published) and refuse the packet.
            return (slot, Err(DescError::Chain));
        }
    }
    (slot, Err(DescError::Chain))
}

/// Client side: offers every consumed M2S slot back to the server with a full-capacity
/// descriptor at the slot's fixed buffer (`buf_off(slot)`), and stores `head` once.
pub fn client_refill(
    ring: &Ring,
    cur: &RxCursor,
    head: &mut u16,
    bsize: u32,
    buf_off: impl Fn(u16) -> u32,
) {
    let target = cur.next.wrapping_add(ring.size());
    if *head == target {
        return;
    }
    let mut h = *head;
    while h != target {
        ring.set_desc(
            h,
            &Desc {
                flags: 0,
                region: 0,
                length: bsize,
                offset: buf_off(h & (ring.size() - 1)),
            },
        );
        h = h.wrapping_add(1);
    }
    *head = h;
    ring.set_head(h);
}

/// Transmits every packet of `batch` on `ring` (freeing them into `pool`); packets that find
/// no slot are dropped and counted. Returns the counters and whether the peer wants an
/// interrupt.
///
/// Server (M2S ring): free slots lie between our cursor and the client's `head`, each
/// descriptor giving a buffer and its capacity; we store `tail`. Client (S2M ring): free slots
/// lie between our cursor and `tail + size`; buffers are at fixed offsets (`buf_off`) of
/// region 0 of size `bsize`; we store `head`.
#[allow(clippy::too_many_arguments)]
pub fn tx_burst(
    side: Side,
    ring: &Ring,
    mem: &Mem<'_>,
    cur: &mut TxCursor,
    pool: &mut Pool,
    batch: &mut Batch,
    bsize: u32,
    buf_off: &dyn Fn(u16) -> u32,
) -> (Burst, bool) {
    let mut b = Burst::default();
    let free = match side {
        Side::Server => ring_span(cur.next, ring.head(), ring.size()),
        Side::Client => {
            ring_span(ring.tail(), cur.next, ring.size()).map(|used| ring.size() - used)
        }
    };
    let Ok(free) = free else {
        b.broken = true;
        b.errors += batch.len() as u64;
        pool.free_batch(batch);
        return (b, false);
    };
    let end = cur.next.wrapping_add(free);
    let mut slot = cur.next;
    for pkt in batch.drain() {
        let data = pkt.data();
        match scatter(side, ring, mem, slot, end, data, bsize, buf_off) {
            Ok(next) => {
                slot = next;
                b.packets += 1;
                b.bytes += data.len() as u64;
            }
            Err(Some(next)) => {
                // A refused descriptor: its slots are consumed (the peer gets them back with
                // a zero length) and the packet is counted as an error.
                slot = next;
                b.errors += 1;
            }
            Err(None) => b.dropped += 1,
        }
        pool.free(pkt);
    }
    if slot == cur.next {
        return (b, false);
    }
    cur.next = slot;
    match side {
        Side::Server => ring.set_tail(slot),
        Side::Client => ring.set_head(slot),
    }
    fence(Ordering::SeqCst);
    (b, ring.flags() & FLAG_MASK_INT == 0)
}

/// Writes `data` into the slots from `slot` (not reaching `end`); returns the next slot, or
/// `Err(Some(next))` if a descriptor was refused (slots consumed), or `Err(None)` if there is
/// no room (nothing consumed).
#[allow(clippy::too_many_arguments)]
fn scatter(
    side: Side,
    ring: &Ring,
    mem: &Mem<'_>,
    mut slot: u16,
    end: u16,
    data: &[u8],
    bsize: u32,
    buf_off: &dyn Fn(u16) -> u32,
) -> Result<u16, Option<u16>> {
    if slot == end {
        return Err(None);
    }
    let mut done = 0usize;
    let start = slot;
    loop {
        if slot == end || slot.wrapping_sub(start) as usize >= MAX_CHAIN {
            // Not enough room for the whole chain: roll back (nothing published yet).
            return Err(None);
        }
        let d = match side {
            Side::Server => ring.desc(slot),
            Side::Client => Desc {
                flags: 0,
                region: 0,
                length: bsize,
                offset: buf_off(slot & (ring.size() - 1)),
            },
        };
        let dst = match mem.check(&d) {
            Ok(p) => p,
            Err(_) => {
                ring.set_len(slot, 0, 0);
                return Err(Some(slot.wrapping_add(1)));
            }
        };
        let cap = d.length as usize;
        if cap == 0 {
            ring.set_len(slot, 0, 0);
            return Err(Some(slot.wrapping_add(1)));
        }
        let n = (data.len() - done).min(cap);
        // SAFETY: `dst` has `cap >= n` bytes inside a mapped region (checked); the source is
        // our own packet.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr().add(done), dst, n);
        }
        done += n;
        let more = done < data.len();
        let flags = if more { DESC_NEXT } else { 0 };
        match side {
            Side::Server => ring.set_len(slot, flags, n as u32),
            Side::Client => ring.set_desc(
                slot,
                &Desc {
                    flags,
                    length: n as u32,
                    ..d
                },
            ),
        }
        slot = slot.wrapping_add(1);
        if !more {
            return Ok(slot);
        }
    }
}

/// Signals an eventfd (one 8-byte write; a full counter means a wake-up is pending anyway).
pub fn signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), 8);
    }
}

/// Drains an eventfd (non-blocking).
pub fn drain(fd: RawFd) {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64.
    unsafe {
        libc::read(fd, (&mut v as *mut u64).cast(), 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_checked() {
        let sizes = [4096usize, 100];
        let d = |region, offset, length| Desc {
            flags: 0,
            region,
            length,
            offset,
        };
        assert_eq!(check_desc(&d(0, 0, 2048), &sizes, 2048), Ok((0, 0, 2048)));
        assert_eq!(
            check_desc(&d(0, 2048, 2048), &sizes, 2048),
            Ok((0, 2048, 2048))
        );
        assert_eq!(
            check_desc(&d(0, 2049, 2048), &sizes, 2048),
            Err(DescError::Bounds)
        );
        assert_eq!(
            check_desc(&d(0, u32::MAX, 2), &sizes, 2048),
            Err(DescError::Bounds)
        );
        assert_eq!(
            check_desc(&d(1, 0, 101), &sizes, 2048),
            Err(DescError::Bounds)
        );
        assert_eq!(
            check_desc(&d(2, 0, 1), &sizes, 2048),
            Err(DescError::Region)
        );
        assert_eq!(
            check_desc(&d(0, 0, 2049), &sizes, 2048),
            Err(DescError::Length)
        );
        assert_eq!(ring_span(65530, 4, 16), Ok(10));
        assert_eq!(ring_span(5, 4, 16), Err(DescError::Index));
        assert_eq!(ring_span(0, 17, 16), Err(DescError::Index));
    }
}
