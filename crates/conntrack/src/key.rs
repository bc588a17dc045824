//! # Connection keys and packet parsing
//!
//! ## What
//! A [`ConnKey`] names one direction of a connection: zone, address family, protocol,
//! source and destination address, and the L4 identifiers (TCP/UDP/SCTP ports, or the ICMP
//! echo id with the message type and code). [`ConnKey::reverse`] gives the key that the
//! other direction's packets carry: addresses and ports swapped, and an ICMP query type
//! turned into its reply type (echo request 8 <-> echo reply 0, and so on). A connection is
//! found from either direction because the table holds both its keys.
//!
//! [`parse`] reads what tracking needs from a frame whose layers the flow extractor already
//! located ([`PacketMeta`]): the key, the TCP segment fields, and for ICMP errors the key of
//! the quoted datagram (reversed, so that it names the direction the error travels in) and
//! where the quoted headers sit, for NAT to rewrite them. [`crate::key4::parse_ports4`] is
//! its path for IPv4 UDP, UDP-Lite and SCTP packets, the tracker's usual case.
//!
//! ## Invariants
//! * IPv4 addresses occupy the first four bytes of `src`/`dst`; the other twelve are zero.
//! * Every read is a checked `get`: no byte sequence makes [`parse`] panic. A packet that
//!   cannot be tracked (truncated, a fragment, bad IPv4 header checksum, an ICMP type that
//!   is neither a query nor an error) parses to [`Parsed::Invalid`].
//!
//! ## Threading
//! Pure functions on borrowed bytes; safe from any thread.

use packet::flow::{FlowKey, Offsets, ETH_TYPE_IPV4, ETH_TYPE_IPV6, NW_FRAG_ANY};

/// IP protocol numbers the tracker knows by name.
pub const PROTO_ICMP: u8 = 1;
/// TCP.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;
/// ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;
/// SCTP (tracked with ports, as a generic protocol).
pub const PROTO_SCTP: u8 = 132;
/// UDP-Lite (tracked with ports, as a generic protocol).
pub const PROTO_UDPLITE: u8 = 136;

/// One direction of a connection. 42 bytes of fields, aligned to 8 (48 with the padding):
/// copied and hashed as whole words.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(C, align(8))]
pub struct ConnKey {
    /// Source address (IPv4 in the first four bytes).
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port, or the ICMP query id.
    pub sport: u16,
    /// Destination port, or the ICMP query id.
    pub dport: u16,
    /// Conntrack zone.
    pub zone: u16,
    /// IP protocol.
    pub proto: u8,
    /// True for IPv6.
    pub v6: bool,
    /// ICMP type of this direction's packets (0 for other protocols).
    pub icmp_type: u8,
    /// ICMP code.
    pub icmp_code: u8,
}

impl std::hash::Hash for ConnKey {
    /// Six 64-bit words (the hasher's cheapest input) instead of one call per field.
    /// Always inlined: out of line, the hasher's state goes through memory between the
    /// words (`Table::hash`).
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let w = |a: &[u8; 16], i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&a[i..i + 8]);
            u64::from_ne_bytes(b)
        };
        h.write_u64(w(&self.src, 0));
        h.write_u64(w(&self.src, 8));
        h.write_u64(w(&self.dst, 0));
        h.write_u64(w(&self.dst, 8));
        h.write_u64(
            u64::from(self.sport)
                | u64::from(self.dport) << 16
                | u64::from(self.zone) << 32
                | u64::from(self.proto) << 48
                | u64::from(self.v6) << 56,
        );
        h.write_u16(u16::from(self.icmp_type) | u16::from(self.icmp_code) << 8);
    }
}

impl ConnKey {
    /// The key [`parse`] finds in `zone` for a packet whose flow key is `flow`, known from
    /// the flow key alone for TCP, UDP, UDP-Lite and SCTP packets that are not fragments
    /// (`None` otherwise). For prefetching: `parse` remains what decides.
    #[inline]
    pub fn from_flow(flow: &FlowKey, zone: u16) -> Option<ConnKey> {
        if flow.nw_frag & NW_FRAG_ANY != 0
            || !matches!(
                flow.nw_proto,
                PROTO_TCP | PROTO_UDP | PROTO_UDPLITE | PROTO_SCTP
            )
        {
            return None;
        }
        let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
        let v6 = match flow.dl_type {
            ETH_TYPE_IPV4 => {
                src[..4].copy_from_slice(&flow.nw_src);
                dst[..4].copy_from_slice(&flow.nw_dst);
                false
            }
            ETH_TYPE_IPV6 => {
                src = flow.ipv6_src;
                dst = flow.ipv6_dst;
                true
            }
            _ => return None,
        };
        Some(ConnKey {
            src,
            dst,
            sport: flow.tp_src,
            dport: flow.tp_dst,
            zone,
            proto: flow.nw_proto,
            v6,
            icmp_type: 0,
            icmp_code: 0,
        })
    }

    /// The key of the other direction.
    pub fn reverse(&self) -> ConnKey {
        ConnKey {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            zone: self.zone,
            proto: self.proto,
            v6: self.v6,
            icmp_type: if self.is_icmp() {
                reverse_icmp_type(self.v6, self.icmp_type)
            } else {
                self.icmp_type
            },
            icmp_code: self.icmp_code,
        }
    }

    /// True for ICMP or ICMPv6 keys.
    pub fn is_icmp(&self) -> bool {
        is_icmp_proto(self.proto)
    }

    /// True if the protocol carries ports (or an ICMP id) that NAT may change.
    pub fn has_ports(&self) -> bool {
        has_ports(self.proto)
    }

    /// The IPv4 source address (meaningful when `!v6`).
    pub fn src4(&self) -> [u8; 4] {
        [self.src[0], self.src[1], self.src[2], self.src[3]]
    }

    /// The IPv4 destination address (meaningful when `!v6`).
    pub fn dst4(&self) -> [u8; 4] {
        [self.dst[0], self.dst[1], self.dst[2], self.dst[3]]
    }
}

/// True for ICMP and ICMPv6.
pub fn is_icmp_proto(proto: u8) -> bool {
    proto == PROTO_ICMP || proto == PROTO_ICMPV6
}

/// True for protocols whose key has ports.
pub fn has_ports(proto: u8) -> bool {
    matches!(
        proto,
        PROTO_TCP | PROTO_UDP | PROTO_SCTP | PROTO_UDPLITE | PROTO_ICMP | PROTO_ICMPV6
    )
}

/// The reply type of an ICMP query type and vice versa; other types map to themselves.
pub fn reverse_icmp_type(v6: bool, t: u8) -> u8 {
    if v6 {
        match t {
            128 => 129,
            129 => 128,
            t => t,
        }
    } else {
        match t {
            8 => 0,
            0 => 8,
            13 => 14,
            14 => 13,
            15 => 16,
            16 => 15,
            t => t,
        }
    }
}

/// True if `t` is an ICMP query request that may open a connection.
pub fn icmp_is_request(v6: bool, t: u8) -> bool {
    if v6 {
        t == 128
    } else {
        matches!(t, 8 | 13 | 15)
    }
}

/// True if `t` is an ICMP query (request or reply) tracked by id.
pub fn icmp_is_query(v6: bool, t: u8) -> bool {
    if v6 {
        matches!(t, 128 | 129)
    } else {
        matches!(t, 0 | 8 | 13 | 14 | 15 | 16)
    }
}

/// True if `t` is an ICMP error that quotes the datagram it is about.
pub fn icmp_is_error(v6: bool, t: u8) -> bool {
    if v6 {
        matches!(t, 1..=4)
    } else {
        matches!(t, 3 | 4 | 5 | 11 | 12)
    }
}

/// Where the layers of a frame start and what the flow extractor found, as the tracker
/// needs it. Build it with [`PacketMeta::from_flow`] or by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketMeta {
    /// Start of the IPv4/IPv6 header.
    pub l3: u16,
    /// Start of the L4 header (after IPv6 extension headers); `None` for later fragments.
    pub l4: Option<u16>,
    /// The (last) IP protocol.
    pub nw_proto: u8,
    /// True for IPv6.
    pub v6: bool,
    /// True for any fragment (first or later).
    pub frag: bool,
    /// True when the L4 checksum is known good or not yet filled in (offload): skip the
    /// check. When false the tracker verifies TCP/UDP/ICMP checksums as OVS does.
    pub l4_csum_trusted: bool,
}

impl PacketMeta {
    /// From the flow extractor's key and offsets; `None` for non-IP frames.
    pub fn from_flow(key: &FlowKey, offs: &Offsets) -> Option<PacketMeta> {
        let v6 = match key.dl_type {
            ETH_TYPE_IPV4 => false,
            ETH_TYPE_IPV6 => true,
            _ => return None,
        };
        Some(PacketMeta {
            l3: offs.l3?,
            l4: offs.l4,
            nw_proto: key.nw_proto,
            v6,
            frag: key.nw_frag & NW_FRAG_ANY != 0,
            l4_csum_trusted: false,
        })
    }
}

/// TCP fields the state machine reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSeg {
    /// Flags (the low 9 bits of the offset/flags word).
    pub flags: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Window (unscaled).
    pub win: u16,
    /// Payload length.
    pub len: u32,
    /// Window scale option: `Some(shift)` when present in the header.
    pub wscale: Option<u8>,
}

/// Where an ICMP error's quoted datagram sits in the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quoted {
    /// Start of the quoted IP header.
    pub l3: usize,
    /// Start of the quoted L4 header.
    pub l4: usize,
    /// End of the quoted bytes (the outer datagram's end).
    pub end: usize,
}

/// What [`parse`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A packet of a connection (or one that may open one).
    Conn {
        /// Its key.
        key: ConnKey,
        /// TCP fields, for TCP.
        tcp: Option<TcpSeg>,
    },
    /// An ICMP error; `key` is the reverse of the quoted datagram's key, i.e. the key the
    /// error would carry if it were a packet of that connection in its own direction.
    IcmpError {
        /// Lookup key.
        key: ConnKey,
        /// Where the quoted headers are.
        quoted: Quoted,
    },
    /// Cannot be tracked: the packet is `+inv`.
    Invalid,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at.checked_add(2)?)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
}

/// The L3 part of a key and the end of the datagram: (src, dst, ip_end).
fn l3_addrs(frame: &[u8], l3: usize, v6: bool) -> Option<([u8; 16], [u8; 16], usize)> {
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    if v6 {
        let h = frame.get(l3..)?.first_chunk::<40>()?;
        src.copy_from_slice(&h[8..24]);
        dst.copy_from_slice(&h[24..40]);
        let end = l3 + 40 + usize::from(u16::from_be_bytes([h[4], h[5]]));
        Some((src, dst, end))
    } else {
        let h = frame.get(l3..)?.first_chunk::<20>()?;
        src[..4].copy_from_slice(&h[12..16]);
        dst[..4].copy_from_slice(&h[16..20]);
        let end = l3 + usize::from(u16::from_be_bytes([h[2], h[3]]));
        Some((src, dst, end))
    }
}

/// The window scale option of a TCP header at `l4` with header length `hlen`.
fn tcp_wscale(frame: &[u8], l4: usize, hlen: usize) -> Option<u8> {
    let opts = frame.get(l4 + 20..l4 + hlen)?;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = usize::from(*opts.get(i + 1)?);
                if kind == 3 && len == 3 {
                    return opts.get(i + 2).map(|s| (*s).min(14));
                }
                i += len.max(2);
            }
        }
    }
    None
}

/// Parses `frame` for tracking in `zone`.
#[inline(always)]
pub fn parse(frame: &[u8], meta: &PacketMeta, zone: u16) -> Parsed {
    let mut out = Parsed::Invalid;
    parse_into(frame, meta, zone, &mut out);
    out
}

/// [`parse`] into `out`, the caller's slot: the key is written once where it is used, not
/// built in an `Option` and moved out of it (a 64-byte value, copied on each move).
#[inline(always)]
pub fn parse_into(frame: &[u8], meta: &PacketMeta, zone: u16, out: &mut Parsed) {
    if parse_inner(frame, meta, zone, out).is_none() {
        *out = Parsed::Invalid;
    }
}

/// Writes what it finds into `out` and returns `Some`; `None` (with `out` unspecified) for
/// an invalid packet.
#[inline(always)]
fn parse_inner(frame: &[u8], meta: &PacketMeta, zone: u16, out: &mut Parsed) -> Option<()> {
    if meta.frag {
        return None;
    }
    let l3 = usize::from(meta.l3);
    let l4 = usize::from(meta.l4?);
    let v6 = meta.v6;
    let (src, dst, end) = l3_addrs(frame, l3, v6)?;
    if end > frame.len() || l4 > end {
        return None;
    }
    if !v6 && !packet::csum::ipv4_header_ok(frame.get(l3..l4)?) {
        return None;
    }
    let proto = meta.nw_proto;
    // Each branch builds its key in one expression from values in registers (the ports
    // read last), so that it is stored in few wide writes: a key written field by field
    // and read back at once as words (copied, hashed) stalls on store forwarding.
    let key_with = |sport: u16, dport: u16| ConnKey {
        src,
        dst,
        sport,
        dport,
        zone,
        proto,
        v6,
        icmp_type: 0,
        icmp_code: 0,
    };
    let l4_ok = |pseudo: bool| {
        meta.l4_csum_trusted || packet::csum::l4_checksum_ok(frame, l3, l4, proto, pseudo)
    };
    match proto {
        PROTO_TCP => {
            // The fixed header in one bounds check (a header shorter than 20 bytes is
            // invalid whatever its offset says), its fields read from it.
            let t = frame.get(l4..end)?.first_chunk::<20>()?;
            let off = usize::from(t[12] >> 4) * 4;
            if off < 20 || l4 + off > end || !l4_ok(true) {
                return None;
            }
            let w16 = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
            let w32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
            let key = key_with(w16(0), w16(2));
            let seg = TcpSeg {
                flags: w16(12) & 0x1ff,
                seq: w32(4),
                ack: w32(8),
                win: w16(14),
                len: u32::try_from(end - l4 - off).ok()?,
                wscale: tcp_wscale(frame, l4, off),
            };
            *out = Parsed::Conn {
                key,
                tcp: Some(seg),
            };
            Some(())
        }
        PROTO_UDP | PROTO_UDPLITE | PROTO_SCTP => {
            // The first 8 bytes in one bounds check.
            let u = frame.get(l4..end)?.first_chunk::<8>()?;
            // A zero UDP checksum over IPv4 means "none".
            let has_sum = u[6] | u[7] != 0 || v6;
            if proto == PROTO_UDP && has_sum && !l4_ok(true) {
                return None;
            }
            let key = key_with(
                u16::from_be_bytes([u[0], u[1]]),
                u16::from_be_bytes([u[2], u[3]]),
            );
            *out = Parsed::Conn { key, tcp: None };
            Some(())
        }
        PROTO_ICMP | PROTO_ICMPV6 => {
            if (proto == PROTO_ICMPV6) != v6 || l4 + 8 > end || !l4_ok(v6) {
                return None;
            }
            let t = *frame.get(l4)?;
            let code = *frame.get(l4 + 1)?;
            if icmp_is_query(v6, t) {
                if code != 0 {
                    return None;
                }
                let id = be16(frame, l4 + 4)?;
                let key = ConnKey {
                    icmp_type: t,
                    icmp_code: code,
                    ..key_with(id, id)
                };
                *out = Parsed::Conn { key, tcp: None };
                Some(())
            } else if icmp_is_error(v6, t) {
                *out = parse_quoted(frame, l4 + 8, end, &key_with(0, 0))?;
                Some(())
            } else {
                None
            }
        }
        _ => {
            *out = Parsed::Conn {
                key: key_with(0, 0),
                tcp: None,
            };
            Some(())
        }
    }
}

/// The quoted datagram of an ICMP error starting at `q3`, inside an outer packet whose key
/// (addresses, zone, family) is `outer`.
fn parse_quoted(frame: &[u8], q3: usize, end: usize, outer: &ConnKey) -> Option<Parsed> {
    let v6 = outer.v6;
    let (src, dst, _) = {
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        if v6 {
            let h = frame.get(q3..end)?.first_chunk::<40>()?;
            if h[0] >> 4 != 6 {
                return None;
            }
            src.copy_from_slice(&h[8..24]);
            dst.copy_from_slice(&h[24..40]);
        } else {
            let h = frame.get(q3..end)?.first_chunk::<20>()?;
            if h[0] >> 4 != 4 {
                return None;
            }
            src[..4].copy_from_slice(&h[12..16]);
            dst[..4].copy_from_slice(&h[16..20]);
        }
        (src, dst, ())
    };
    // The quoted datagram was sent to or by the error's recipient: its source is the
    // error's destination.
    if src != outer.dst {
        return None;
    }
    let (proto, q4) = if v6 {
        // Extension headers in quoted datagrams are not followed (OVS does the same).
        (*frame.get(q3 + 6)?, q3 + 40)
    } else {
        let ihl = usize::from(*frame.get(q3)? & 0x0f) * 4;
        let fo = be16(frame, q3 + 6)? & 0x1fff;
        if ihl < 20 || fo != 0 {
            return None;
        }
        (*frame.get(q3 + 9)?, q3 + ihl)
    };
    if q4 + 8 > end {
        return None;
    }
    let mut inner = ConnKey {
        src,
        dst,
        zone: outer.zone,
        proto,
        v6,
        ..ConnKey::default()
    };
    match proto {
        PROTO_TCP | PROTO_UDP | PROTO_UDPLITE | PROTO_SCTP => {
            inner.sport = be16(frame, q4)?;
            inner.dport = be16(frame, q4 + 2)?;
        }
        PROTO_ICMP | PROTO_ICMPV6 => {
            if (proto == PROTO_ICMPV6) != v6 {
                return None;
            }
            let t = *frame.get(q4)?;
            if !icmp_is_query(v6, t) {
                // No error about an error.
                return None;
            }
            let id = be16(frame, q4 + 4)?;
            inner.sport = id;
            inner.dport = id;
            inner.icmp_type = t;
            inner.icmp_code = *frame.get(q4 + 1)?;
        }
        _ => {}
    }
    Some(Parsed::IcmpError {
        key: inner.reverse(),
        quoted: Quoted {
            l3: q3,
            l4: q4,
            end,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpkt::*;

    #[test]
    fn tcp_key_and_segment() {
        let f = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 100, 0, SYN, b"");
        let (k, o) = flow_of(&f);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        let Parsed::Conn { key, tcp } = parse(&f, &m, 7) else {
            panic!("not a conn");
        };
        assert_eq!(key.src4(), [10, 0, 0, 1]);
        assert_eq!(key.dst4(), [10, 0, 0, 2]);
        assert_eq!(
            (key.sport, key.dport, key.zone, key.proto),
            (1234, 80, 7, 6)
        );
        let t = tcp.unwrap();
        assert_eq!((t.flags, t.seq, t.len, t.wscale), (SYN, 100, 0, Some(7)));
        assert_eq!(key.reverse().reverse(), key);
        assert_eq!(key.reverse().sport, 80);
    }

    #[test]
    fn bad_checksums_and_fragments_are_invalid() {
        let mut f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 5, 6, b"abc");
        let (k, o) = flow_of(&f);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        assert!(matches!(parse(&f, &m, 0), Parsed::Conn { .. }));
        let n = f.len();
        f[n - 1] ^= 1;
        assert_eq!(parse(&f, &m, 0), Parsed::Invalid);
        let trusted = PacketMeta {
            l4_csum_trusted: true,
            ..m
        };
        assert!(matches!(parse(&f, &trusted, 0), Parsed::Conn { .. }));
        let frag = PacketMeta { frag: true, ..m };
        assert_eq!(parse(&f, &frag, 0), Parsed::Invalid);
        f[14 + 10] ^= 1; // IPv4 header checksum
        assert_eq!(parse(&f, &trusted, 0), Parsed::Invalid);
    }

    #[test]
    fn icmp_echo_and_error() {
        let req = icmp4_echo([10, 0, 0, 1], [10, 0, 0, 2], 8, 0x77, 1);
        let (k, o) = flow_of(&req);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        let Parsed::Conn { key, .. } = parse(&req, &m, 0) else {
            panic!()
        };
        assert_eq!((key.sport, key.dport, key.icmp_type), (0x77, 0x77, 8));
        let rep = icmp4_echo([10, 0, 0, 2], [10, 0, 0, 1], 0, 0x77, 1);
        let (k2, o2) = flow_of(&rep);
        let m2 = PacketMeta::from_flow(&k2, &o2).unwrap();
        let Parsed::Conn { key: rkey, .. } = parse(&rep, &m2, 0) else {
            panic!()
        };
        assert_eq!(rkey, key.reverse());

        // A port unreachable from 10.0.0.2 about a UDP datagram 10.0.0.1:5 -> 10.0.0.2:6.
        let inner = udp4([10, 0, 0, 1], [10, 0, 0, 2], 5, 6, b"abcdefgh");
        let err = icmp4_error([10, 0, 0, 2], [10, 0, 0, 1], 3, 3, &inner[14..]);
        let (k3, o3) = flow_of(&err);
        let m3 = PacketMeta::from_flow(&k3, &o3).unwrap();
        let Parsed::IcmpError { key, quoted } = parse(&err, &m3, 0) else {
            panic!("{:?}", parse(&err, &m3, 0))
        };
        assert_eq!(key.src4(), [10, 0, 0, 2]);
        assert_eq!((key.sport, key.dport, key.proto), (6, 5, 17));
        assert_eq!(quoted.l3, 14 + 20 + 8);
        assert_eq!(quoted.l4, quoted.l3 + 20);
        // An error whose quoted source is not the error's destination is not related.
        let err2 = icmp4_error([10, 0, 0, 2], [10, 0, 0, 9], 3, 3, &inner[14..]);
        let (k4, o4) = flow_of(&err2);
        let m4 = PacketMeta::from_flow(&k4, &o4).unwrap();
        assert_eq!(parse(&err2, &m4, 0), Parsed::Invalid);
    }

    #[test]
    fn ipv6_tcp_and_icmpv6() {
        let a = v6addr(1);
        let b = v6addr(2);
        let f = tcp6(a, b, 40000, 443, 1, 0, SYN, b"");
        let (k, o) = flow_of(&f);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        let Parsed::Conn { key, .. } = parse(&f, &m, 0) else {
            panic!()
        };
        assert!(key.v6);
        assert_eq!((key.src, key.dst, key.sport), (a, b, 40000));
        let e = icmp6_echo(a, b, 128, 9, 1);
        let (k, o) = flow_of(&e);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        let Parsed::Conn { key, .. } = parse(&e, &m, 0) else {
            panic!("{:?}", parse(&e, &m, 0))
        };
        assert_eq!((key.icmp_type, key.reverse().icmp_type), (128, 129));
    }

    #[test]
    fn truncated_never_panics() {
        let f = tcp4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, 3, 4, SYN | ACK, b"xyz");
        let (k, o) = flow_of(&f);
        let m = PacketMeta::from_flow(&k, &o).unwrap();
        for cut in 0..f.len() {
            assert_eq!(parse(&f[..cut], &m, 0), Parsed::Invalid, "cut {cut}");
        }
    }
}
