//! Guest transmit offloads: checksums the guest left to us and TCP/UDP segmentation.
//!
//! ## Why
//! A guest that negotiated `CSUM` sends frames whose L4 checksum holds only the
//! pseudo-header sum (`VIRTIO_NET_HDR_F_NEEDS_CSUM` with `csum_start`/`csum_offset` in the
//! virtio-net header); with `HOST_TSO4`/`HOST_TSO6`/`HOST_USO` it sends TCP or UDP
//! super-packets of up to 64 KiB with `gso_size` = MSS. Both save the guest most of its
//! per-byte work, which is what bounds a VM's TCP throughput. The switch forwards only
//! complete frames: every port (kernel, memif, another guest, a tunnel) can take them, and
//! the pipeline sees real packets.
//!
//! ## How
//! Each frame is finished here, on receipt, with the same code that finishes a packet
//! socket's offloaded frames ([`crate::offload::Plan`]). The common case costs one copy of
//! the 10-12 header bytes: [`gather`] reads the header and copies the frame straight into a
//! pool buffer; a plain header leaves it there. A frame that asks for a checksum, or that does
//! not fit a pool buffer, goes to the ring's [`Spill`] buffer (64 KiB, allocated on first
//! use), and its segments are written from there into pool buffers by [`drain`], as many as
//! the batch and the pool take; the rest wait for the next burst, before any new chain is
//! read. The guest's chain is returned as soon as it is copied.
//!
//! A frame the plan refuses (offsets outside the frame, an unsupported `gso_type`, a
//! segment larger than our buffers) is counted as an error like any refused chain.

use super::{copy_in, Burst, Chains, DescError, DESC_WRITE, HDR_MRG};
use crate::offload::{Plan, VnetHdr, VNET_HDR_LEN};
use packet::{Batch, Packet, Pool, MAX_FRAME};

/// The largest frame a guest may hand over for segmentation: a 64 KiB IP packet behind an
/// Ethernet header and two VLAN tags.
pub const MAX_SUPER: usize = 65_535 + 14 + 8;

/// A received frame that needs finishing, and how far its segments have gone.
#[derive(Default)]
pub struct Spill {
    buf: Vec<u8>,
    len: usize,
    hdr: VnetHdr,
    seg: usize,
    count: usize,
}

impl Spill {
    /// Segments of the last frame are still waiting for room in a batch.
    pub fn pending(&self) -> bool {
        self.seg < self.count
    }

    /// Forgets any waiting segments (the ring restarted).
    pub fn clear(&mut self) {
        self.seg = 0;
        self.count = 0;
    }
}

/// Where [`gather`] left a guest frame.
pub(super) enum Got {
    /// In the pool buffer, `len` bytes; `hdr` says what is left to do.
    Packet(VnetHdr),
    /// Too long for a pool buffer: in the spill buffer.
    Spilled(VnetHdr),
}

/// Copies the frame of guest transmit chain `head` into `pkt`, or into `sp` once it
/// outgrows `pkt`, reading its `hdr`-byte virtio-net header on the way.
#[inline]
pub(super) fn gather<R: Chains>(
    r: &R,
    head: u16,
    hdr: usize,
    pkt: &mut Packet,
    sp: &mut Spill,
) -> Result<Got, DescError> {
    let Some(buf) = pkt.reset_for_rx(MAX_FRAME) else {
        return Err(DescError::Length);
    };
    let mut h = [0u8; HDR_MRG];
    let hdr = hdr.min(HDR_MRG);
    let mut got = 0usize; // header bytes read
    let mut len = 0usize;
    let mut spilled = false;
    let g = r.guest();
    r.walk(head, |d| {
        if d.flags & DESC_WRITE != 0 {
            return Err(DescError::Direction);
        }
        let dlen = d.len as usize;
        let take = (hdr - got).min(dlen);
        if take == HDR_MRG {
            // The usual case, the whole header in one descriptor: a fixed-size copy.
            match g.host(d.addr, HDR_MRG as u64) {
                // SAFETY: `p` points at HDR_MRG bytes inside a live mapping of the guest's
                // memory; `h` is ours and HDR_MRG long. Bytes are copied, not interpreted.
                Some(p) => unsafe { std::ptr::copy_nonoverlapping(p, h.as_mut_ptr(), HDR_MRG) },
                None => copy_in(g, d.addr, &mut h)?,
            }
            got = HDR_MRG;
        } else if take > 0 {
            copy_in(g, d.addr, &mut h[got..got + take])?;
            got += take;
        }
        let n = dlen - take;
        if n == 0 {
            return Ok(());
        }
        let addr = d.addr.checked_add(take as u64).ok_or(DescError::Memory)?;
        if !spilled && n <= buf.len() - len {
            copy_in(g, addr, &mut buf[len..len + n])?;
        } else {
            if n > MAX_SUPER - len {
                return Err(DescError::Length);
            }
            if !spilled {
                sp.buf.clear();
                sp.buf.reserve(MAX_SUPER);
                sp.buf.extend_from_slice(&buf[..len]);
                spilled = true;
            }
            sp.buf.resize(len + n, 0);
            copy_in(g, addr, &mut sp.buf[len..len + n])?;
        }
        len += n;
        Ok(())
    })?;
    if got < hdr || len == 0 || hdr < VNET_HDR_LEN {
        return Err(DescError::Length);
    }
    let mut ten = [0u8; VNET_HDR_LEN];
    ten.copy_from_slice(&h[..VNET_HDR_LEN]);
    let vh = VnetHdr::parse_le(&ten);
    if spilled {
        sp.len = len;
        Ok(Got::Spilled(vh))
    } else {
        pkt.truncate(len);
        Ok(Got::Packet(vh))
    }
}

/// Plans the frame now in `sp` (`vh` is its header); false if it cannot be finished.
pub(super) fn begin(sp: &mut Spill, vh: VnetHdr) -> bool {
    sp.clear();
    let Some(frame) = sp.buf.get(..sp.len) else {
        return false;
    };
    match Plan::new(frame, None, &vh) {
        Ok(p) => {
            sp.hdr = vh;
            sp.count = p.count();
            true
        }
        Err(_) => false,
    }
}

/// Moves the frame in pool buffer `pkt` (header `vh`, not plain) to `sp` and plans it.
pub(super) fn begin_from(sp: &mut Spill, pkt: &Packet, vh: VnetHdr) -> bool {
    sp.buf.clear();
    sp.buf.extend_from_slice(pkt.data());
    sp.len = sp.buf.len();
    begin(sp, vh)
}

/// Writes the waiting segments of `sp` into pool buffers appended to `batch`, until the
/// batch is full or the pool is empty, counting them in `d`.
pub(super) fn drain(sp: &mut Spill, pool: &mut Pool, batch: &mut Batch, d: &mut Burst) {
    if !sp.pending() {
        return;
    }
    let plan = match sp.buf.get(..sp.len).map(|f| Plan::new(f, None, &sp.hdr)) {
        Some(Ok(p)) => p,
        _ => {
            // Planned before from the same bytes; cannot fail, but never loop on it.
            sp.clear();
            d.errors += 1;
            return;
        }
    };
    while sp.seg < sp.count && !batch.is_full() {
        let Some(mut pkt) = pool.alloc() else { break };
        let want = plan.len_of(sp.seg);
        let written = match pkt.reset_for_rx(want) {
            Some(buf) => plan.write(sp.seg, buf),
            None => 0,
        };
        sp.seg += 1;
        if written == 0 {
            d.errors += 1;
            pool.free(pkt);
            continue;
        }
        if let Err(p) = batch.push(pkt) {
            pool.free(p);
            break;
        }
        d.packets += 1;
        d.bytes += written as u64;
    }
}
