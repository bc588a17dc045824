//! Finishing the kernel's offloaded work in software: checksum completion and GSO segmentation.
//!
//! ## Why
//! A packet socket with `PACKET_VNET_HDR` receives, in front of every frame, the 10-byte
//! `virtio_net_hdr` that describes what the sending side left undone. A veth peer, for
//! instance, hands over TCP with `CHECKSUM_PARTIAL` (the checksum field holds only the
//! pseudo-header sum; `VIRTIO_NET_HDR_F_NEEDS_CSUM` with `csum_start`/`csum_offset` say where to
//! finish it) and TSO super-packets up to 64 KiB (`gso_type` TCPV4/TCPV6/UDP_L4 with
//! `gso_size` = MSS). A switch that forwarded those bytes as they are would send bad checksums
//! and frames larger than any MTU; this module turns them into ordinary, complete frames.
//!
//! ## How
//! [`Plan::new`] looks at one received frame (plus its out-of-band VLAN tag, if the kernel
//! stripped one) and its header, validates every offset against the frame, and says how many
//! output frames it yields ([`Plan::count`]) and how long each is ([`Plan::len_of`]).
//! [`Plan::write`] then produces output frame `i` into a caller's buffer. Producing segments one
//! at a time by index lets a receive loop stop when its batch is full and resume with the same
//! super-packet later, and keeps this module free of allocation and I/O: it is a pure function
//! over bytes, unit-tested without a kernel.
//!
//! * Plain frame: copied (with the VLAN tag re-inserted after the MAC addresses if there was
//!   one); if the header asks, the Internet checksum over `[csum_start, end)` is folded and
//!   stored at `csum_start + csum_offset` (the field already holds the pseudo-header seed).
//! * TCP segmentation: the L2-L4 headers are copied in front of each `gso_size` slice of the
//!   payload; IPv4 total length, identification (+i) and header checksum, or the IPv6 payload
//!   length, are rewritten; the TCP sequence number advances by the bytes before the slice; FIN
//!   and PSH stay only on the last segment and CWR only on the first; the TCP checksum is
//!   computed from scratch (pseudo-header included).
//! * UDP segmentation (`UDP_L4`, "USO"): the same with a UDP header whose length and checksum
//!   are rewritten per datagram. UFO (`gso_type` 3, IP fragmentation) is refused.
//!
//! ## Invariants
//! After `Plan::new` succeeds, `write` cannot index out of bounds: every offset it uses was
//! checked against the frame there, and every output length is at most [`packet::MAX_FRAME`].
//! Nothing here trusts `hdr_len` (the kernel fills it with the linear-data length, not the
//! header length): header lengths come from the headers themselves.
//! Limitation: for IPv6 with a routing header the pseudo-header uses the packet's destination
//! field, not the final destination.

use packet::MAX_FRAME;

/// Length of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_UDP` (UFO: IP fragmentation; not supported).
pub const GSO_UDP: u8 = 3;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4`.
pub const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN`, a flag or'ed into `gso_type`.
pub const GSO_ECN: u8 = 0x80;

/// The decoded `virtio_net_hdr`. Packet sockets use the host's byte order for its 16-bit
/// fields (legacy virtio), hence `from_ne_bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Decodes the 10 header bytes.
    pub fn parse(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16::from_ne_bytes([b[2], b[3]]),
            gso_size: u16::from_ne_bytes([b[4], b[5]]),
            csum_start: u16::from_ne_bytes([b[6], b[7]]),
            csum_offset: u16::from_ne_bytes([b[8], b[9]]),
        }
    }

    /// Decodes the 10 header bytes as a virtio 1.0 device sees them (little-endian fields), as
    /// a vhost-user guest writes them.
    pub fn parse_le(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16::from_le_bytes([b[2], b[3]]),
            gso_size: u16::from_le_bytes([b[4], b[5]]),
            csum_start: u16::from_le_bytes([b[6], b[7]]),
            csum_offset: u16::from_le_bytes([b[8], b[9]]),
        }
    }

    /// Whether the frame is complete as it is: no checksum to finish, nothing to segment.
    pub fn is_plain(&self) -> bool {
        self.flags & F_NEEDS_CSUM == 0 && self.gso_type & !GSO_ECN == GSO_NONE
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }
}

/// Why a received frame cannot be turned into ordinary frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadError {
    /// An output frame would not fit a packet buffer.
    TooBig,
    /// A `gso_type` this module does not segment.
    UnsupportedGso(u8),
    /// Headers or offsets that do not fit the frame or contradict each other.
    Malformed,
}

// ---------------------------------------------------------------------------------------------
// Internet checksum (RFC 1071). Summed as native-endian 32-bit words into a u64 and byte-swapped
// once at the end; the one's-complement sum does not care about byte order.

/// Adds `data` to a running sum. Every slice but the last one of a checksummed run must have
/// an even length.
#[inline]
pub fn csum_add(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 4];
        w[..rest.len()].copy_from_slice(rest);
        acc += u64::from(u32::from_ne_bytes(w));
    }
    acc
}

/// Folds a running sum to 16 bits, as a big-endian value (the checksum field is its
/// complement).
#[inline]
pub fn csum_fold(acc: u64) -> u16 {
    let mut s = (acc & 0xffff_ffff) + (acc >> 32);
    s = (s & 0xffff_ffff) + (s >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    let native = s as u16;
    u16::from_be_bytes(native.to_ne_bytes())
}

/// The Internet checksum of `data` (what goes into the field).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !csum_fold(csum_add(0, data))
}

// ---------------------------------------------------------------------------------------------

const ETH_P_IPV4: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum L3 {
    V4,
    V6,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum L4 {
    Tcp,
    Udp,
}

#[derive(Clone, Copy, Debug)]
struct Gso {
    l3: L3,
    l4: L4,
    /// Offsets in the *input* frame.
    l3_off: usize,
    l4_off: usize,
    /// End of the L4 header = start of the payload, in the input frame.
    hdr_end: usize,
    mss: usize,
    payload: usize,
    segs: usize,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Copy, completing the checksum at (start, offset) of the input frame if given.
    Plain(Option<(usize, usize)>),
    Segment(Gso),
}

/// A frame without segmentation (`t` bytes of tag to re-insert): the checksum to complete,
/// at (start, offset), if the vnet header asks for one.
#[inline]
fn plain_checksum(
    frame: &[u8],
    t: usize,
    v: &VnetHdr,
) -> Result<Option<(usize, usize)>, OffloadError> {
    if frame.len() + t > MAX_FRAME {
        return Err(OffloadError::TooBig);
    }
    if v.flags & F_NEEDS_CSUM == 0 {
        return Ok(None);
    }
    let start = usize::from(v.csum_start);
    let field = start + usize::from(v.csum_offset);
    if start < 14 || field + 2 > frame.len() {
        return Err(OffloadError::Malformed);
    }
    Ok(Some((start, usize::from(v.csum_offset))))
}

/// Where a frame's L3 header starts and its ethertype: after the Ethernet header and up
/// to two in-band VLAN tags.
#[inline]
fn l3_start(frame: &[u8]) -> Result<(usize, u16), OffloadError> {
    let mut off = 12;
    let mut ethertype = be16(frame, off).ok_or(OffloadError::Malformed)?;
    let mut tags = 0;
    while (ethertype == ETH_P_8021Q || ethertype == ETH_P_8021AD) && tags < 2 {
        off += 4;
        tags += 1;
        ethertype = be16(frame, off).ok_or(OffloadError::Malformed)?;
    }
    Ok((off + 2, ethertype))
}

/// The IP header at `l3_off`: its version, where its fixed part ends, and the L4 protocol
/// when it follows directly (IPv6 extension headers leave it unknown).
#[inline]
fn ip_header(
    frame: &[u8],
    ethertype: u16,
    l3_off: usize,
) -> Result<(L3, usize, Option<u8>), OffloadError> {
    match ethertype {
        ETH_P_IPV4 => {
            let vihl = *frame.get(l3_off).ok_or(OffloadError::Malformed)?;
            let ihl = usize::from(vihl & 0x0f) * 4;
            if vihl >> 4 != 4 || ihl < 20 {
                return Err(OffloadError::Malformed);
            }
            let proto = *frame.get(l3_off + 9).ok_or(OffloadError::Malformed)?;
            Ok((L3::V4, l3_off + ihl, Some(proto)))
        }
        ETH_P_IPV6 => {
            let nh = *frame.get(l3_off + 6).ok_or(OffloadError::Malformed)?;
            let direct = nh == IPPROTO_TCP || nh == IPPROTO_UDP;
            Ok((L3::V6, l3_off + 40, if direct { Some(nh) } else { None }))
        }
        _ => Err(OffloadError::Malformed),
    }
}

/// Where the L4 header starts: where the checksum starts if the kernel said so (this also
/// covers IPv6 extension headers), else right after the fixed L3 header, which must then
/// carry `l4` directly (`parsed` and `proto` from [`ip_header`]).
#[inline]
fn l4_start(v: &VnetHdr, parsed: usize, proto: Option<u8>, l4: L4) -> Result<usize, OffloadError> {
    let l4_off = if v.flags & F_NEEDS_CSUM != 0 {
        usize::from(v.csum_start)
    } else {
        if proto.is_none() {
            return Err(OffloadError::Malformed);
        }
        parsed
    };
    if l4_off < parsed {
        return Err(OffloadError::Malformed);
    }
    let want = match l4 {
        L4::Tcp => IPPROTO_TCP,
        L4::Udp => IPPROTO_UDP,
    };
    if l4_off == parsed && proto.is_some_and(|p| p != want) {
        return Err(OffloadError::Malformed);
    }
    Ok(l4_off)
}

/// The length of the L4 header at `l4_off`: TCP's data offset, UDP's 8 bytes.
#[inline]
fn l4_header_len(frame: &[u8], l4: L4, l4_off: usize) -> Result<usize, OffloadError> {
    match l4 {
        L4::Tcp => {
            let doff = *frame.get(l4_off + 12).ok_or(OffloadError::Malformed)?;
            let n = usize::from(doff >> 4) * 4;
            if n < 20 {
                return Err(OffloadError::Malformed);
            }
            Ok(n)
        }
        L4::Udp => Ok(8),
    }
}

impl Gso {
    /// The segmentation of `frame` (`t` bytes of tag to re-insert) as the vnet header's
    /// GSO type `gso` and size ask: its headers found and checked against the type, the
    /// payload cut into segments that each fit in a frame.
    #[inline]
    fn plan(frame: &[u8], t: usize, gso: u8, v: &VnetHdr) -> Result<Gso, OffloadError> {
        let l4 = match gso {
            GSO_TCPV4 | GSO_TCPV6 => L4::Tcp,
            GSO_UDP_L4 => L4::Udp,
            other => return Err(OffloadError::UnsupportedGso(other)),
        };
        let (l3_off, ethertype) = l3_start(frame)?;
        let (l3, parsed_l4_off, proto) = ip_header(frame, ethertype, l3_off)?;
        match (gso, l3) {
            (GSO_TCPV4, L3::V4) | (GSO_TCPV6, L3::V6) | (GSO_UDP_L4, _) => {}
            _ => return Err(OffloadError::Malformed),
        }
        let l4_off = l4_start(v, parsed_l4_off, proto, l4)?;
        let hdr_end = l4_off + l4_header_len(frame, l4, l4_off)?;
        if hdr_end > frame.len() {
            return Err(OffloadError::Malformed);
        }
        let mss = usize::from(v.gso_size);
        if mss == 0 {
            return Err(OffloadError::Malformed);
        }
        let payload = frame.len() - hdr_end;
        let segs = payload.div_ceil(mss).max(1);
        if hdr_end + t + mss.min(payload) > MAX_FRAME {
            return Err(OffloadError::TooBig);
        }
        Ok(Gso {
            l3,
            l4,
            l3_off,
            l4_off,
            hdr_end,
            mss,
            payload,
            segs,
        })
    }
}

/// How one received frame becomes one or more ordinary frames. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    frame: &'a [u8],
    tag: Option<[u8; 4]>,
    kind: Kind,
}

#[inline]
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

impl<'a> Plan<'a> {
    /// Plans the output for `frame` (starting at the Ethernet header), its stripped VLAN tag
    /// `tag` (TPID and TCI, big-endian, re-inserted after the MAC addresses), and its vnet
    /// header.
    pub fn new(
        frame: &'a [u8],
        tag: Option<[u8; 4]>,
        v: &VnetHdr,
    ) -> Result<Plan<'a>, OffloadError> {
        let t = if tag.is_some() { 4 } else { 0 };
        if frame.len() < 14 {
            return Err(OffloadError::Malformed);
        }
        let gso = v.gso_type & !GSO_ECN;
        let kind = if gso == GSO_NONE {
            Kind::Plain(plain_checksum(frame, t, v)?)
        } else {
            Kind::Segment(Gso::plan(frame, t, gso, v)?)
        };
        Ok(Plan { frame, tag, kind })
    }

    /// How many frames this plan yields.
    #[inline]
    pub fn count(&self) -> usize {
        match self.kind {
            Kind::Plain(_) => 1,
            Kind::Segment(g) => g.segs,
        }
    }

    #[inline]
    fn tag_len(&self) -> usize {
        if self.tag.is_some() {
            4
        } else {
            0
        }
    }

    /// The payload bytes of segment `i` (segmentation only).
    #[inline]
    fn seg_range(g: &Gso, i: usize) -> (usize, usize) {
        let start = (i * g.mss).min(g.payload);
        let end = (start + g.mss).min(g.payload);
        (g.hdr_end + start, g.hdr_end + end)
    }

    /// The length of output frame `i` (`i < count()`); never more than [`MAX_FRAME`].
    #[inline]
    pub fn len_of(&self, i: usize) -> usize {
        match self.kind {
            Kind::Plain(_) => self.frame.len() + self.tag_len(),
            Kind::Segment(g) => {
                let (s, e) = Self::seg_range(&g, i);
                g.hdr_end + self.tag_len() + (e - s)
            }
        }
    }

    /// Copies `src` (a piece of the frame starting at frame offset 0) into `out`, inserting
    /// the tag after the MAC addresses.
    #[inline]
    fn copy_head(&self, src: &[u8], out: &mut [u8]) {
        match self.tag {
            None => out[..src.len()].copy_from_slice(src),
            Some(tag) => {
                out[..12].copy_from_slice(&src[..12]);
                out[12..16].copy_from_slice(&tag);
                out[16..src.len() + 4].copy_from_slice(&src[12..]);
            }
        }
    }

    /// Writes output frame `i` into `out` (at least `len_of(i)` bytes) and returns its length.
    /// Returns 0 (writing nothing) if `i >= count()` or `out` is too short.
    pub fn write(&self, i: usize, out: &mut [u8]) -> usize {
        if i >= self.count() || out.len() < self.len_of(i) {
            return 0;
        }
        let t = self.tag_len();
        match self.kind {
            Kind::Plain(cs) => {
                let n = self.frame.len() + t;
                self.copy_head(self.frame, out);
                if let Some((start, coff)) = cs {
                    let start = start + t;
                    let field = start + coff;
                    let mut c = checksum(&out[start..n]);
                    // A UDP checksum of zero means "none"; send all-ones instead.
                    if coff == 6 && c == 0 {
                        c = 0xffff;
                    }
                    out[field..field + 2].copy_from_slice(&c.to_be_bytes());
                }
                n
            }
            Kind::Segment(g) => self.write_segment(&g, i, out),
        }
    }

    fn write_segment(&self, g: &Gso, i: usize, out: &mut [u8]) -> usize {
        let t = self.tag_len();
        let (ps, pe) = Self::seg_range(g, i);
        let hdr = g.hdr_end + t;
        let n = hdr + (pe - ps);
        self.copy_head(&self.frame[..g.hdr_end], out);
        out[hdr..n].copy_from_slice(&self.frame[ps..pe]);
        let l3 = g.l3_off + t;
        let l4 = g.l4_off + t;
        let l4_total = n - l4;
        // L3 lengths (and the IPv4 ID and header checksum).
        match g.l3 {
            L3::V4 => {
                let tot = (n - l3) as u16;
                out[l3 + 2..l3 + 4].copy_from_slice(&tot.to_be_bytes());
                let id = u16::from_be_bytes([out[l3 + 4], out[l3 + 5]]).wrapping_add(i as u16);
                out[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
                out[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
                let ihl = usize::from(out[l3] & 0x0f) * 4;
                let c = checksum(&out[l3..l3 + ihl]);
                out[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
            }
            L3::V6 => {
                let pl = (n - l3 - 40) as u16;
                out[l3 + 4..l3 + 6].copy_from_slice(&pl.to_be_bytes());
            }
        }
        // L4 header fields.
        let last = i + 1 == g.segs;
        let proto = match g.l4 {
            L4::Tcp => {
                let seq = u32::from_be_bytes([out[l4 + 4], out[l4 + 5], out[l4 + 6], out[l4 + 7]])
                    .wrapping_add((i * g.mss) as u32);
                out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
                if !last {
                    out[l4 + 13] &= !(TCP_FIN | TCP_PSH);
                }
                if i > 0 {
                    out[l4 + 13] &= !TCP_CWR;
                }
                out[l4 + 16..l4 + 18].copy_from_slice(&[0, 0]);
                IPPROTO_TCP
            }
            L4::Udp => {
                out[l4 + 4..l4 + 6].copy_from_slice(&(l4_total as u16).to_be_bytes());
                out[l4 + 6..l4 + 8].copy_from_slice(&[0, 0]);
                IPPROTO_UDP
            }
        };
        // Pseudo-header, then the L4 header and payload.
        let mut acc = match g.l3 {
            L3::V4 => csum_add(0, &out[l3 + 12..l3 + 20]),
            L3::V6 => csum_add(0, &out[l3 + 8..l3 + 40]),
        };
        let mut ph = [0u8; 8];
        ph[0..4].copy_from_slice(&(l4_total as u32).to_be_bytes());
        ph[7] = proto;
        acc = csum_add(acc, &ph);
        acc = csum_add(acc, &out[l4..n]);
        let mut c = !csum_fold(acc);
        let field = match g.l4 {
            L4::Tcp => l4 + 16,
            L4::Udp => {
                if c == 0 {
                    c = 0xffff;
                }
                l4 + 6
            }
        };
        out[field..field + 2].copy_from_slice(&c.to_be_bytes());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference checksum: big-endian 16-bit words, one at a time.
    fn ref_csum(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in data.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from_be_bytes([c[0], 0])
            };
            s += u32::from(w);
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn checksum_matches_reference() {
        let mut x: u32 = 12345;
        for len in 0..300 {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            assert_eq!(checksum(&data), ref_csum(&data), "len {len}");
        }
        assert_eq!(checksum(&[0xff; 64]), 0);
    }

    #[test]
    fn vnet_header_round_trip() {
        let h = VnetHdr {
            flags: 1,
            gso_type: 4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 54,
            csum_offset: 16,
        };
        assert_eq!(VnetHdr::parse(&h.to_bytes()), h);
    }
}
