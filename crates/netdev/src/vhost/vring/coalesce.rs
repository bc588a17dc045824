//! Offloads towards the guest: runs of TCP segments coalesced into one super-packet.
//!
//! ## Why
//! Every frame we give a guest costs its driver and TCP stack a fixed amount of work, and a
//! guest's CPU, not the switch, bounds guest-to-guest TCP throughput. A guest that
//! negotiated `VIRTIO_NET_F_GUEST_CSUM` and `GUEST_TSO4`/`GUEST_TSO6` accepts TCP
//! super-packets of up to 64 KiB with `gso_type` and `gso_size` in the virtio-net header, as
//! if its own NIC had done receive offload. Our packet buffers hold one MTU-sized frame, so
//! the sender's super-packet is segmented on receipt (`offload`); here, on transmit, the
//! segments that travel together in one burst are put back together.
//!
//! ## The rules
//! [`Gro::run`] takes the longest run at the head of the burst's remaining frames in which
//! every frame is an IPv4 (no options, no fragment) or IPv6 (no extension header) TCP
//! segment with payload, of the same connection, whose Ethernet and IP headers are equal but
//! for lengths, IPv4 identification and header checksum; whose TCP header is equal but for
//! the sequence number, the flags and the checksum (so the same ack, window and options
//! bytes); whose sequence number continues the previous one; with only `ACK` set, `PSH`
//! allowed on the last; every segment but the last carrying exactly the first one's payload
//! size (the MSS), the last at most that; at most 65535 bytes of IP packet in all. Each
//! member's TCP checksum (and the IPv4 header checksum) must be valid: a corrupt segment is
//! never hidden inside a super-packet, it ends the run and goes on its own as it came.
//!
//! The super-packet has the first segment's headers with the lengths and the IPv4 header
//! checksum fixed, the last segment's flags, and in the TCP checksum field the
//! pseudo-header sum; its virtio-net header says `NEEDS_CSUM` (`csum_start` at the TCP
//! header, `csum_offset` 16), `GSO_TCPV4`/`GSO_TCPV6`, `gso_size` = MSS and `hdr_len` =
//! the headers' length. That is what Linux's own virtio-net and tap devices deliver for a
//! TCP super-packet (a partial checksum): Linux accepts it on local delivery without
//! summing the payload, and completes it correctly if it forwards the packet. `DATA_VALID`
//! with a GSO type is refused or re-probed by some kernels' `virtio_net_hdr_to_skb`, so it
//! is not used; the segments' checksums were verified here instead.
//!
//! ## Bounds
//! A run never reaches past the frames of one burst; the super-packet is built in one buffer
//! per ring, allocated on first use. A run only goes if the guest's posted buffers hold it
//! ([`room`]); otherwise its frames go one by one, as without the features.

use super::{Chains, DescError, Ring, DESC_WRITE, MAX_CHAINS_PER_PKT};
use crate::offload::{csum_add, csum_fold, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};
use packet::Packet;

/// The header of a frame that needs nothing: all zero.
pub const PLAIN: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];
/// The largest IP packet a super-packet may hold.
const MAX_IP: usize = 65_535;
/// Room for a super-packet with its Ethernet header and one VLAN tag.
const MAX_BUF: usize = MAX_IP + 18;

const TCP_ACK: u8 = 0x10;
const TCP_PSH: u8 = 0x08;

/// A ring's coalescing state: which families the guest accepts, and the super-packet buffer.
#[derive(Default)]
pub struct Gro {
    tso4: bool,
    tso6: bool,
    buf: Vec<u8>,
}

/// A run of frames [`Gro::run`] coalesced.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// How many frames went into it.
    pub frames: usize,
    /// Their total length, as they were.
    pub bytes: u64,
    /// Its virtio-net header.
    pub hdr: [u8; VNET_HDR_LEN],
}

/// One frame's TCP/IP layout, as far as coalescing needs it.
#[derive(Clone, Copy, Debug)]
struct Seg {
    l3: usize,
    l4: usize,
    /// End of the TCP header, start of the payload.
    end: usize,
    v6: bool,
    seq: u32,
    flags: u8,
}

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]))
}

impl Gro {
    /// Sets what the guest negotiated: `GUEST_CSUM` with `GUEST_TSO4` / `GUEST_TSO6`.
    pub fn set(&mut self, tso4: bool, tso6: bool) {
        self.tso4 = tso4;
        self.tso6 = tso6;
    }

    /// Whether the guest takes super-packets at all.
    pub fn on(&self) -> bool {
        self.tso4 || self.tso6
    }

    /// What goes next into the guest's buffers from `pkts[i..]` (`i` in range): the
    /// super-packet of the run starting there when there is one and `fits` says the
    /// guest's posted buffers hold that many bytes (the run's frame plus `hdr`, the
    /// virtio-net header), else the frame at `i` alone. Returns the bytes, their virtio-net
    /// header, how many of `pkts` they carry and those frames' total length.
    #[inline]
    pub fn next<'a>(
        &'a mut self,
        pkts: &'a [Packet],
        i: usize,
        hdr: usize,
        fits: impl FnOnce(usize) -> bool,
    ) -> (&'a [u8], [u8; VNET_HDR_LEN], usize, u64) {
        if self.on() {
            if let Some(run) = self.run(&pkts[i..]) {
                if fits(hdr + self.buf.len()) {
                    return (&self.buf, run.hdr, run.frames, run.bytes);
                }
            }
        }
        (pkts[i].data(), PLAIN, 1, pkts[i].len() as u64)
    }

    /// The super-packet the last successful [`Gro::run`] built.
    pub fn frame(&self) -> &[u8] {
        &self.buf
    }

    /// Coalesces the longest qualifying run at the start of `pkts` into the buffer; `None`
    /// if fewer than two frames qualify.
    pub fn run(&mut self, pkts: &[Packet]) -> Option<Run> {
        let a = pkts.first()?.data();
        let sa = self.parse(a)?;
        let mss = a.len() - sa.end;
        let mut next = sa.seq.wrapping_add(mss as u32);
        let mut ip_len = a.len() - sa.l3;
        let mut last = sa;
        let mut n = 1;
        for p in &pkts[1..] {
            let b = p.data();
            let pay = b.len().saturating_sub(sa.end);
            // The previous member must be a full-sized segment without PSH.
            if last.flags & TCP_PSH != 0 || (n > 1 && mss != pays(pkts, n - 1, sa.end)) {
                break;
            }
            let Some(sb) = self.parse(b) else { break };
            if !joins(a, &sa, b, &sb) || sb.seq != next || pay > mss || ip_len + pay > MAX_IP {
                break;
            }
            if n == 1 && !valid(a, &sa) {
                return None;
            }
            if !valid(b, &sb) {
                break;
            }
            next = next.wrapping_add(pay as u32);
            ip_len += pay;
            last = sb;
            n += 1;
        }
        if n < 2 {
            return None;
        }
        Some(self.build(&pkts[..n], sa, last.flags, mss))
    }

    /// Parses a frame that may join a run: a TCP segment with payload in a family the guest
    /// accepts, with the headers the rules allow and consistent lengths.
    fn parse(&self, f: &[u8]) -> Option<Seg> {
        let (mut l3, mut et) = (14, be16(f, 12)?);
        if et == 0x8100 {
            (l3, et) = (18, be16(f, 16)?);
        }
        let (l4, v6) = match et {
            0x0800 if self.tso4 => {
                let ip = f.get(l3..l3 + 20)?;
                let frag = be16(ip, 6)? & 0x3fff;
                let tot = usize::from(be16(ip, 2)?);
                (ip[0] == 0x45 && ip[9] == 6 && frag == 0 && l3 + tot == f.len())
                    .then_some((l3 + 20, false))?
            }
            0x86dd if self.tso6 => {
                let ip = f.get(l3..l3 + 40)?;
                let pay = usize::from(be16(ip, 4)?);
                (ip[0] >> 4 == 6 && ip[6] == 6 && l3 + 40 + pay == f.len())
                    .then_some((l3 + 40, true))?
            }
            _ => return None,
        };
        let th = f.get(l4..l4 + 20)?;
        let end = l4 + usize::from(th[12] >> 4) * 4;
        let flags = th[13];
        // Data offset of at least 5 words, payload, reserved bits clear, only ACK (+PSH).
        if end < l4 + 20 || end >= f.len() || th[12] & 0x0f != 0 {
            return None;
        }
        if flags & !(TCP_ACK | TCP_PSH) != 0 || flags & TCP_ACK == 0 {
            return None;
        }
        let seq = u32::from_be_bytes([th[4], th[5], th[6], th[7]]);
        Some(Seg {
            l3,
            l4,
            end,
            v6,
            seq,
            flags,
        })
    }

    /// Writes the super-packet of `pkts` (first segment `sa`) into the buffer.
    fn build(&mut self, pkts: &[Packet], sa: Seg, flags: u8, mss: usize) -> Run {
        if self.buf.capacity() < MAX_BUF {
            self.buf.reserve_exact(MAX_BUF);
        }
        self.buf.clear();
        let mut bytes = 0u64;
        self.buf.extend_from_slice(&pkts[0].data()[..sa.end]);
        for p in pkts {
            let f = p.data();
            bytes += f.len() as u64;
            self.buf.extend_from_slice(&f[sa.end..]);
        }
        let b = &mut self.buf;
        let (l3, l4) = (sa.l3, sa.l4);
        let total = b.len();
        let tcp_len = total - l4;
        if sa.v6 {
            b[l3 + 4..l3 + 6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
        } else {
            b[l3 + 2..l3 + 4].copy_from_slice(&((total - l3) as u16).to_be_bytes());
            b[l3 + 10..l3 + 12].fill(0);
            let c = !csum_fold(csum_add(0, &b[l3..l3 + 20]));
            b[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
        b[l4 + 13] = flags;
        let ps = pseudo(b, &sa, tcp_len);
        b[l4 + 16..l4 + 18].copy_from_slice(&csum_fold(ps).to_be_bytes());
        let mut hdr = PLAIN;
        hdr[0] = F_NEEDS_CSUM;
        hdr[1] = if sa.v6 { GSO_TCPV6 } else { GSO_TCPV4 };
        hdr[2..4].copy_from_slice(&(sa.end as u16).to_le_bytes());
        hdr[4..6].copy_from_slice(&(mss as u16).to_le_bytes());
        hdr[6..8].copy_from_slice(&(l4 as u16).to_le_bytes());
        hdr[8..10].copy_from_slice(&16u16.to_le_bytes());
        Run {
            frames: pkts.len(),
            bytes,
            hdr,
        }
    }
}

/// The payload length of frame `i` of `pkts` (headers `end` bytes long).
fn pays(pkts: &[Packet], i: usize, end: usize) -> usize {
    pkts[i].len().saturating_sub(end)
}

/// Whether segment `b` belongs to `a`'s connection with the same header layout and values.
fn joins(a: &[u8], sa: &Seg, b: &[u8], sb: &Seg) -> bool {
    if sa.v6 != sb.v6 || sa.l3 != sb.l3 || sa.end != sb.end {
        return false;
    }
    let (l3, l4, end) = (sa.l3, sa.l4, sa.end);
    let same = |r: std::ops::Range<usize>| a.get(r.clone()) == b.get(r);
    // Ethernet (and VLAN tag); IP: version, traffic class / TOS, DF, TTL, protocol and
    // addresses; TCP: ports, ack, data offset, window, options.
    let ip = if sa.v6 {
        same(l3..l3 + 4) && same(l3 + 6..l4)
    } else {
        same(l3..l3 + 2) && same(l3 + 6..l3 + 10) && same(l3 + 12..l4)
    };
    same(0..l3)
        && ip
        && same(l4..l4 + 4)
        && same(l4 + 8..l4 + 13)
        && same(l4 + 14..l4 + 16)
        && same(l4 + 20..end)
}

/// The pseudo-header sum of segment `s` in `f` for a TCP length of `len`.
fn pseudo(f: &[u8], s: &Seg, len: usize) -> u64 {
    if s.v6 {
        let acc = csum_add(0, &f[s.l3 + 8..s.l3 + 40]);
        csum_add(
            acc,
            &[
                (len >> 24) as u8,
                (len >> 16) as u8,
                (len >> 8) as u8,
                len as u8,
                0,
                0,
                0,
                6,
            ],
        )
    } else {
        let acc = csum_add(0, &f[s.l3 + 12..s.l3 + 20]);
        csum_add(acc, &[0, 6, (len >> 8) as u8, len as u8])
    }
}

/// Whether the checksums of segment `s` (its TCP checksum, and the IPv4 header's) hold.
fn valid(f: &[u8], s: &Seg) -> bool {
    if !s.v6 && csum_fold(csum_add(0, &f[s.l3..s.l4])) != 0xffff {
        return false;
    }
    let acc = csum_add(pseudo(f, s, f.len() - s.l4), &f[s.l4..]);
    csum_fold(acc) == 0xffff
}

/// Whether the guest's chains on split ring `r`, from available entry `next` (at most
/// `avail`), hold `need` bytes in as many chains as one packet may use; nothing is
/// consumed. A chain that cannot be walked answers no.
pub(super) fn room(r: &Ring<'_>, mrg: bool, next: u16, avail: u16, need: usize) -> bool {
    let chains = (if mrg { MAX_CHAINS_PER_PKT } else { 1 }).min(usize::from(avail));
    let mut have = 0usize;
    for k in 0..chains {
        let head = r.avail_entry(next.wrapping_add(k as u16));
        if r.walk(head, |d| count(d.flags, d.len, &mut have)).is_err() {
            return false;
        }
        if have >= need {
            return true;
        }
    }
    false
}

/// Adds a device-writable descriptor's length to `have` (for [`room`]).
#[inline]
pub(super) fn count(flags: u16, len: u32, have: &mut usize) -> Result<(), DescError> {
    if flags & DESC_WRITE == 0 {
        return Err(DescError::Direction);
    }
    *have = have.saturating_add(len as usize);
    Ok(())
}

#[cfg(test)]
pub(super) mod tests;
