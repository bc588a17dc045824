//! Packet buffers, the buffer pool and batches.
//!
//! ## Design
//! A [`Packet`] owns one fixed-size, cache-line aligned buffer of [`BUF_SIZE`] bytes. The frame
//! starts [`HEADROOM`] bytes in, so headers can be pushed in front (VLAN, MPLS, tunnels) without
//! moving the payload. Packets are only ever *moved* through the fabric (a `Packet` is a pointer
//! plus a few words of metadata), never copied, unless a destination set needs a second copy
//! (flooding), which [`Pool::clone_packet`] makes into another pool buffer.
//!
//! The [`Pool`] preallocates its buffers at creation and recycles them LIFO, so the buffers
//! touched in one batch are the cache-hot ones reused by the next. Taking from an empty pool
//! fails ([`Pool::alloc`] returns `None`) rather than allocating: a receive path that runs out
//! drops and counts, like a NIC whose descriptor ring is empty. A receive path may take a
//! burst's buffers in one call ([`Pool::alloc_into`], in the order [`Pool::alloc`] would
//! give them) and give back the ones it did not fill ([`Pool::free_tail`]); a transmit
//! path frees a whole batch with one room check ([`Pool::free_batch`]). Frames are copied
//! into buffers in 32-byte blocks inline ([`Packet::set_frame`]), not through `memcpy`.
//!
//! A [`Batch`] holds up to [`MAX_BATCH`] packets in storage reserved once; pushing never grows it.
//!
//! ## Tunnel metadata
//! A packet that arrived through a tunnel (or whose pipeline set a tunnel field for a tunnel
//! port to use) carries a [`TunMeta`]: the outer header's key and addresses, and its Geneve options. It rides in the
//! first [`TUN_META_LEN`] bytes of the buffer, inside the headroom, behind one flag in the
//! packet's padding, so packets without it pay nothing and `Packet` keeps its size. Every
//! push that would reach into that area fails while the flag is set.
//!
//! ## Ownership rules
//! * Whoever holds a `Packet` must eventually give it back with [`Pool::free`] (or hand it on).
//!   A `Packet` dropped on the floor releases its memory to the allocator, which is safe but
//!   shrinks the pool; [`Pool::outstanding`] lets tests check that nothing leaked.
//! * A pool belongs to one thread (`&mut self` everywhere); packets are `Send` and may move
//!   between threads and be freed into any pool.

/// Bytes in one packet buffer (headroom included). A multiple of 64.
pub const BUF_SIZE: usize = 2240;
/// Bytes reserved in front of a freshly received frame for header pushes.
pub const HEADROOM: usize = 192;
/// The largest frame a buffer holds when received with the default headroom.
pub const MAX_FRAME: usize = BUF_SIZE - HEADROOM;
/// The most packets a batch holds.
pub const MAX_BATCH: usize = 256;

const _: () = assert!(BUF_SIZE.is_multiple_of(64));
const _: () = assert!(BUF_SIZE <= u16::MAX as usize);

/// The raw storage behind a packet.
#[repr(C, align(64))]
pub struct RawBuf(pub [u8; BUF_SIZE]);

impl RawBuf {
    fn new_boxed() -> Box<RawBuf> {
        Box::new(RawBuf([0u8; BUF_SIZE]))
    }
}

/// One packet: an owned buffer, the frame's position in it, and per-packet metadata.
pub struct Packet {
    buf: Box<RawBuf>,
    off: u16,
    len: u16,
    /// The bridge-local index of the port the packet arrived on (set by the fabric).
    pub in_port: u16,
    /// Scratch word for the switching-logic module (e.g. the VLAN a learning bridge assigned).
    pub meta: u16,
    /// A hash of the packet's flow (0 until someone computes it; ports may fill it from NIC RSS).
    pub hash: u32,
    /// Whether the buffer's first [`TUN_META_LEN`] bytes hold a [`TunMeta`].
    tun: bool,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 24);
const _: () = assert!(56 + TUN_OPTS_MAX <= TUN_META_LEN);

/// Bytes at the start of a buffer that hold a packet's [`TunMeta`]. Encapsulation forgets
/// the metadata before it pushes the outer headers, so those may use the whole headroom (an
/// IPv6 Geneve header with [`TUN_OPTS_MAX`] bytes of options is 102 bytes); only pushes
/// made while the metadata is held (VLAN, MPLS) are limited to `HEADROOM - TUN_META_LEN`.
pub const TUN_META_LEN: usize = 96;
/// Bytes of Geneve options a [`TunMeta`] carries (whole options, in wire format).
pub const TUN_OPTS_MAX: usize = 32;

/// Tunnel metadata of a packet (OVS's `flow_tnl`, the part this switch carries). As in OVS,
/// the outer addresses are either the IPv4 pair or the IPv6 pair: a packet tunnelled over
/// IPv6 has `ipv6_dst` non-zero and `src`/`dst` zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunMeta {
    /// Tunnel key (VXLAN/Geneve VNI, GRE key).
    pub id: u64,
    /// Outer IPv4 source and destination.
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// Outer IPv6 source and destination (zero for an IPv4 underlay).
    pub ipv6_src: [u8; 16],
    pub ipv6_dst: [u8; 16],
    /// OVS's `FLOW_TNL_F_*` bits, the key's `tun_flags` layout (`flow::TUN_F_*`): 1 OAM,
    /// 2 don't-fragment, 4 checksum, 8 key present.
    pub flags: u16,
    /// Outer TOS (IPv6: traffic class) and TTL (IPv6: hop limit).
    pub tos: u8,
    pub ttl: u8,
    /// Bytes of Geneve options in `opts`: received ones (whole options, as many as fit),
    /// or the ones the pipeline built for a Geneve port to send.
    pub opts_len: u8,
    /// VXLAN Group Policy flags (`tun_gbp_flags`: 0x40 don't learn, 0x08 applied) and ID
    /// (`tun_gbp_id`), carried by a VXLAN port with `exts=gbp`; zero otherwise.
    pub gbp_flags: u8,
    pub gbp_id: u16,
    /// The options, in wire format (class, type, length, value), `opts_len` bytes of them.
    pub opts: [u8; TUN_OPTS_MAX],
}

impl TunMeta {
    /// The options, in wire format.
    pub fn opts(&self) -> &[u8] {
        &self.opts[..usize::from(self.opts_len).min(TUN_OPTS_MAX)]
    }

    /// Whether the outer header is (or is to be) IPv6: the IPv6 destination is set.
    pub fn is_ipv6(&self) -> bool {
        self.ipv6_dst != [0; 16]
    }
}

impl TunMeta {
    // Fixed-size arrays: every field at an offset known at compile time, no bounds checks.
    #[inline]
    fn write(&self, b: &mut [u8; TUN_META_LEN]) {
        b[0..8].copy_from_slice(&self.id.to_ne_bytes());
        b[8..12].copy_from_slice(&self.src);
        b[12..16].copy_from_slice(&self.dst);
        b[16..32].copy_from_slice(&self.ipv6_src);
        b[32..48].copy_from_slice(&self.ipv6_dst);
        b[48..50].copy_from_slice(&self.flags.to_ne_bytes());
        b[50] = self.tos;
        b[51] = self.ttl;
        b[52] = self.opts_len;
        b[53] = self.gbp_flags;
        b[54..56].copy_from_slice(&self.gbp_id.to_ne_bytes());
        b[56..56 + TUN_OPTS_MAX].copy_from_slice(&self.opts);
    }

    #[inline]
    fn read(b: &[u8; TUN_META_LEN]) -> TunMeta {
        let arr16 = |at: usize| {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[at..at + 16]);
            a
        };
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[0..8]);
        TunMeta {
            id: u64::from_ne_bytes(id),
            src: [b[8], b[9], b[10], b[11]],
            dst: [b[12], b[13], b[14], b[15]],
            ipv6_src: arr16(16),
            ipv6_dst: arr16(32),
            flags: u16::from_ne_bytes([b[48], b[49]]),
            tos: b[50],
            ttl: b[51],
            opts_len: b[52],
            gbp_flags: b[53],
            gbp_id: u16::from_ne_bytes([b[54], b[55]]),
            opts: {
                let mut o = [0u8; TUN_OPTS_MAX];
                o.copy_from_slice(&b[56..56 + TUN_OPTS_MAX]);
                o
            },
        }
    }
}

impl Packet {
    /// The packet's tunnel metadata, if it has any.
    #[inline(always)]
    pub fn tun(&self) -> Option<TunMeta> {
        if self.tun {
            self.buf.0.first_chunk().map(TunMeta::read)
        } else {
            None
        }
    }

    /// Whether the packet carries tunnel metadata.
    #[inline(always)]
    pub fn has_tun(&self) -> bool {
        self.tun
    }

    /// Sets the packet's tunnel metadata; `false` (nothing set) if the frame starts inside
    /// the metadata area.
    #[inline]
    pub fn set_tun(&mut self, m: &TunMeta) -> bool {
        if (self.off as usize) < TUN_META_LEN {
            return false;
        }
        if let Some(b) = self.buf.0.first_chunk_mut() {
            m.write(b);
        }
        self.tun = true;
        true
    }

    /// Whether `self` and `other` both carry tunnel metadata stored as the same bytes
    /// (whole words compared, no decoding): then their [`TunMeta`]s are equal. `false`
    /// may also mean only bytes no field uses differ.
    #[inline]
    pub fn same_tun(&self, other: &Packet) -> bool {
        let (Some(a), Some(b)) = (
            self.buf.0.first_chunk::<TUN_META_LEN>(),
            other.buf.0.first_chunk::<TUN_META_LEN>(),
        ) else {
            return false;
        };
        let word = |x: &[u8; TUN_META_LEN], i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&x[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(w)
        };
        let mut diff = 0;
        for i in 0..TUN_META_LEN / 8 {
            diff |= word(a, i) ^ word(b, i);
        }
        self.tun && other.tun && diff == 0
    }

    /// Forgets the packet's tunnel metadata.
    #[inline(always)]
    pub fn clear_tun(&mut self) {
        self.tun = false;
    }

    /// The frame's bytes.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let off = self.off as usize;
        &self.buf.0[off..off + self.len as usize]
    }

    /// The frame's bytes, writable.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let off = self.off as usize;
        &mut self.buf.0[off..off + self.len as usize]
    }

    /// Frame length in bytes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for a zero-length frame.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes free in front of the frame.
    #[inline(always)]
    pub fn headroom(&self) -> usize {
        self.off as usize
    }

    /// Bytes free after the frame.
    #[inline(always)]
    pub fn tailroom(&self) -> usize {
        BUF_SIZE - self.off as usize - self.len as usize
    }

    /// Replaces the frame with `bytes` placed after the default headroom.
    /// Returns `false` (and leaves the packet empty) if `bytes` is longer than [`MAX_FRAME`].
    #[inline]
    pub fn set_frame(&mut self, bytes: &[u8]) -> bool {
        self.off = HEADROOM as u16;
        if bytes.len() > MAX_FRAME {
            self.len = 0;
            return false;
        }
        self.len = bytes.len() as u16;
        copy_frame(&mut self.buf.0[HEADROOM..HEADROOM + bytes.len()], bytes);
        true
    }

    /// Makes the frame `len` bytes long starting after the default headroom, and returns the
    /// (uninitialised from the frame's point of view) bytes for a receive path to fill.
    /// Returns `None` if `len` exceeds [`MAX_FRAME`].
    #[inline]
    pub fn reset_for_rx(&mut self, len: usize) -> Option<&mut [u8]> {
        if len > MAX_FRAME {
            return None;
        }
        self.off = HEADROOM as u16;
        self.len = len as u16;
        Some(&mut self.buf.0[HEADROOM..HEADROOM + len])
    }

    /// The whole underlying buffer, for receive paths that need to write a prefix (e.g. a
    /// virtio-net header) in front of the frame. Use [`Packet::set_bounds`] afterwards.
    #[inline]
    pub fn raw_mut(&mut self) -> &mut [u8; BUF_SIZE] {
        self.tun = false;
        &mut self.buf.0
    }

    /// Sets the frame to `raw[off..off+len]`. Returns `false` (changing nothing) if that range
    /// does not fit in the buffer.
    #[inline]
    pub fn set_bounds(&mut self, off: usize, len: usize) -> bool {
        match off.checked_add(len) {
            Some(end) if end <= BUF_SIZE => {
                self.off = off as u16;
                self.len = len as u16;
                if off < TUN_META_LEN {
                    self.tun = false;
                }
                true
            }
            _ => false,
        }
    }

    /// Grows the frame by `n` bytes at the front and returns the new front `n` bytes.
    /// `None` if the headroom is too small.
    #[inline]
    pub fn push_front(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.free_front() {
            return None;
        }
        self.off -= n as u16;
        self.len += n as u16;
        let off = self.off as usize;
        Some(&mut self.buf.0[off..off + n])
    }

    /// Headroom that pushes may use: all of it, less the tunnel metadata area while the
    /// packet carries metadata.
    #[inline(always)]
    fn free_front(&self) -> usize {
        let off = self.off as usize;
        if self.tun {
            off.saturating_sub(TUN_META_LEN)
        } else {
            off
        }
    }

    /// Removes `n` bytes from the front of the frame. Returns `false` if the frame is shorter.
    #[inline]
    pub fn pull_front(&mut self, n: usize) -> bool {
        if n > self.len as usize {
            return false;
        }
        self.off += n as u16;
        self.len -= n as u16;
        true
    }

    /// Grows the frame by `n` bytes at the end and returns them. `None` if no room.
    #[inline]
    pub fn push_back(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let end = self.off as usize + self.len as usize;
        self.len += n as u16;
        Some(&mut self.buf.0[end..end + n])
    }

    /// Shortens the frame to `len` bytes (no-op if already shorter).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        if len < self.len as usize {
            self.len = len as u16;
        }
    }

    /// Inserts `n` bytes at byte offset `at` of the frame, moving the first `at` bytes forward
    /// into the headroom (cheap for header inserts near the front, e.g. a VLAN tag at 12).
    /// Returns the inserted bytes, or `None` if `at` is past the end or headroom is short.
    pub fn insert_at(&mut self, at: usize, n: usize) -> Option<&mut [u8]> {
        if at > self.len as usize || n > self.free_front() {
            return None;
        }
        let old = self.off as usize;
        let new = old - n;
        self.buf.0.copy_within(old..old + at, new);
        self.off = new as u16;
        self.len += n as u16;
        Some(&mut self.buf.0[new + at..new + at + n])
    }

    /// Removes `n` bytes at byte offset `at` of the frame by moving the first `at` bytes back.
    /// Returns `false` if the range is not inside the frame.
    pub fn remove_at(&mut self, at: usize, n: usize) -> bool {
        match at.checked_add(n) {
            Some(end) if end <= self.len as usize => {
                let old = self.off as usize;
                self.buf.0.copy_within(old..old + at, old + n);
                self.off += n as u16;
                self.len -= n as u16;
                true
            }
            _ => false,
        }
    }
}

/// `dst.copy_from_slice(src)` (same lengths) without a call to `memcpy` for frames of 32
/// bytes or more: whole 32-byte blocks, the last one ending at the end (overlapping the
/// one before), each a fixed-size copy the compiler inlines as two vector moves.
#[inline(always)]
fn copy_frame(dst: &mut [u8], src: &[u8]) {
    const B: usize = 32;
    let len = dst.len();
    if len < B || src.len() != len {
        dst.copy_from_slice(src);
        return;
    }
    if len <= 2 * B {
        // The common small frame: two blocks, no loop.
        copy_block::<B>(dst, src, 0);
        copy_block::<B>(dst, src, len - B);
        return;
    }
    let mut at = 0;
    while at + B < len {
        copy_block::<B>(dst, src, at);
        at += B;
    }
    copy_block::<B>(dst, src, len - B);
}

#[inline(always)]
fn copy_block<const B: usize>(dst: &mut [u8], src: &[u8], at: usize) {
    if let (Some(d), Some(s)) = (
        dst.get_mut(at..).and_then(|d| d.first_chunk_mut::<B>()),
        src.get(at..).and_then(|s| s.first_chunk::<B>()),
    ) {
        *d = *s;
    }
}

/// A preallocated pool of packet buffers owned by one thread.
pub struct Pool {
    // The boxes are the point: buffers move in and out of packets by pointer, never by value.
    #[allow(clippy::vec_box)]
    free: Vec<Box<RawBuf>>,
    capacity: usize,
    alloc_failures: u64,
}

impl Packet {
    /// A packet of `buf` as the pool hands it out: empty, default headroom, no metadata.
    #[inline(always)]
    fn fresh(buf: Box<RawBuf>) -> Packet {
        Packet {
            buf,
            off: HEADROOM as u16,
            len: 0,
            in_port: 0,
            meta: 0,
            hash: 0,
            tun: false,
        }
    }
}

impl Pool {
    /// Creates a pool holding `capacity` buffers, all allocated now.
    pub fn new(capacity: usize) -> Pool {
        let mut free = Vec::with_capacity(capacity);
        for _ in 0..capacity {
            free.push(RawBuf::new_boxed());
        }
        Pool {
            free,
            capacity,
            alloc_failures: 0,
        }
    }

    /// Takes a buffer, or `None` (counted) if the pool is empty.
    #[inline(always)]
    pub fn alloc(&mut self) -> Option<Packet> {
        match self.free.pop() {
            Some(buf) => Some(Packet::fresh(buf)),
            None => {
                self.alloc_failures += 1;
                None
            }
        }
    }

    /// Appends up to `n` fresh packets (as [`Pool::alloc`] makes them) to `batch`, as many as
    /// the pool holds and the batch has room for, and returns how many: a receive path's
    /// buffers for a whole burst, without a check per packet. A shortfall is not counted as
    /// an allocation failure; a receive path that needs a packet more calls
    /// [`Pool::alloc`], which counts it.
    #[inline]
    pub fn alloc_into(&mut self, batch: &mut Batch, n: usize) -> usize {
        let k = n.min(batch.room()).min(self.free.len());
        let from = self.free.len() - k;
        // The last buffers first, as `alloc` would take them.
        batch
            .pkts
            .extend(self.free.drain(from..).rev().map(Packet::fresh));
        k
    }

    /// Frees the packets of `batch` from index `keep` on, leaving the first `keep`.
    #[inline]
    pub fn free_tail(&mut self, batch: &mut Batch, keep: usize) {
        if keep < batch.pkts.len() {
            let keep = batch.pkts.len() - keep;
            for _ in 0..keep {
                if let Some(p) = batch.pkts.pop() {
                    self.free(p);
                }
            }
        }
    }

    /// Returns a packet's buffer to the pool. A pool that is already full (the packet came from
    /// another pool) lets the buffer go to the allocator instead of growing.
    #[inline(always)]
    pub fn free(&mut self, pkt: Packet) {
        if self.free.len() < self.capacity {
            self.free.push(pkt.buf);
        }
    }

    /// Frees every packet of a batch, leaving it empty.
    #[inline]
    pub fn free_batch(&mut self, batch: &mut Batch) {
        // One room check for the batch, not one a packet: the buffers that fit go back in
        // order, the rest (from another pool) to the allocator.
        let fit = batch
            .pkts
            .len()
            .min(self.capacity.saturating_sub(self.free.len()));
        self.free.extend(batch.pkts.drain(..fit).map(|p| p.buf));
        batch.pkts.clear();
    }

    /// Copies a packet (frame and metadata) into a new buffer from this pool.
    #[inline]
    pub fn clone_packet(&mut self, pkt: &Packet) -> Option<Packet> {
        let mut n = self.alloc()?;
        let off = pkt.off as usize;
        let end = off + pkt.len as usize;
        n.buf.0[off..end].copy_from_slice(&pkt.buf.0[off..end]);
        n.off = pkt.off;
        n.len = pkt.len;
        n.in_port = pkt.in_port;
        n.meta = pkt.meta;
        n.hash = pkt.hash;
        if pkt.tun {
            n.buf.0[..TUN_META_LEN].copy_from_slice(&pkt.buf.0[..TUN_META_LEN]);
            n.tun = true;
        }
        Some(n)
    }

    /// Buffers currently available.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Buffers the pool was created with.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Buffers handed out and not returned.
    pub fn outstanding(&self) -> usize {
        self.capacity.saturating_sub(self.free.len())
    }

    /// How many allocations failed because the pool was empty.
    pub fn alloc_failures(&self) -> u64 {
        self.alloc_failures
    }
}

/// Up to [`MAX_BATCH`] packets, in storage reserved once.
pub struct Batch {
    pkts: Vec<Packet>,
}

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    /// An empty batch with room for [`MAX_BATCH`] packets.
    pub fn new() -> Batch {
        Batch {
            pkts: Vec::with_capacity(MAX_BATCH),
        }
    }

    /// Number of packets.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    /// True when empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// True when no more packets fit.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.pkts.len() >= MAX_BATCH
    }

    /// Room left.
    #[inline(always)]
    pub fn room(&self) -> usize {
        MAX_BATCH - self.pkts.len()
    }

    /// Appends a packet; gives it back if the batch is full.
    #[inline(always)]
    pub fn push(&mut self, pkt: Packet) -> Result<(), Packet> {
        if self.pkts.len() >= MAX_BATCH {
            return Err(pkt);
        }
        self.pkts.push(pkt);
        Ok(())
    }

    /// The packets, in order.
    #[inline(always)]
    pub fn packets(&self) -> &[Packet] {
        &self.pkts
    }

    /// The packets, writable.
    #[inline(always)]
    pub fn packets_mut(&mut self) -> &mut [Packet] {
        &mut self.pkts
    }

    /// Removes and yields every packet, in order.
    #[inline]
    pub fn drain(&mut self) -> std::vec::Drain<'_, Packet> {
        self.pkts.drain(..)
    }

    /// Removes and yields the first `n` packets (all if fewer), in order.
    #[inline]
    pub fn drain_front(&mut self, n: usize) -> std::vec::Drain<'_, Packet> {
        let n = n.min(self.pkts.len());
        self.pkts.drain(..n)
    }

    /// Removes the last packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        self.pkts.pop()
    }

    /// Keeps only the packets for which `keep` returns true; the others are freed into `pool`.
    pub fn retain_or_free(&mut self, pool: &mut Pool, mut keep: impl FnMut(&mut Packet) -> bool) {
        let mut i = 0;
        while i < self.pkts.len() {
            if keep(&mut self.pkts[i]) {
                i += 1;
            } else {
                let p = self.pkts.remove(i);
                pool.free(p);
            }
        }
    }
}

#[cfg(test)]
mod tests;
