//! Reading the outer headers of a frame that may be a tunnel packet for this switch, and
//! popping them (the receive half of [`super`]; see its documentation).

use super::*;

/// What [`parse`] found in an outer frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub proto: Proto,
    /// UDP destination port (0 for GRE).
    pub dst_port: u16,
    /// Bytes of outer headers (including Geneve options) to pop.
    pub hdr_len: usize,
    /// A VXLAN header with the Group Policy extension's G bit: only a port with
    /// `exts=gbp` takes it (its ID and flags are in `meta`).
    pub gbp: bool,
    /// GRE carrying an L3 packet, not Ethernet: its EtherType (the GRE protocol, any
    /// value from 0x0600 but 0x6558). Only a `packet_type=legacy_l3` port takes it, and
    /// only such a packet.
    pub l3: Option<u16>,
    pub meta: TunMeta,
}

/// Copies the whole Geneve options that fit in `packet::TUN_OPTS_MAX` bytes into `meta`, in
/// order; a malformed option (its length past the end) ends the list.
fn keep_options(opts: &[u8], meta: &mut TunMeta) {
    let mut at = 0;
    while let Some(h) = opts.get(at..at + 4) {
        let len = 4 + usize::from(h[3] & 0x1f) * 4;
        let (Some(opt), Some(dst)) = (opts.get(at..at + len), meta.opts.get_mut(at..at + len))
        else {
            break;
        };
        dst.copy_from_slice(opt);
        at += len;
    }
    meta.opts_len = at as u8;
}

/// Reads the outer headers of a frame that may be a tunnel packet for this switch. `None` if
/// it is not one (not IPv4 or IPv6, a fragment, not UDP/GRE,
/// malformed, an unknown version). `udp_port_known` says whether a UDP destination port
/// belongs to a tunnel, and as which protocol.
pub fn parse(f: &[u8], udp_port_known: impl Fn(u16) -> Option<Proto>) -> Option<Parsed> {
    let (ip, ihl, next, mut meta) = if f.get(12..14) == Some(&ETH_P_IPV6.to_be_bytes()[..]) {
        let (ip, ihl, next) = outer_ipv6(f)?;
        (ip, ihl, next, outer_meta6(ip))
    } else {
        let (ip, ihl) = outer_ipv4(f)?;
        (ip, ihl, ip[9], outer_meta(ip))
    };
    let l4 = &ip[ihl..];
    let (proto, dst_port, l4_len, l3) = match next {
        IPPROTO_UDP => {
            let (proto, port, len) = udp_tunnel(l4, udp_port_known, &mut meta)?;
            (proto, port, len, None)
        }
        IPPROTO_GRE => {
            let (len, l3) = gre_header(l4, &mut meta)?;
            (Proto::Gre, 0, len, l3)
        }
        _ => return None,
    };
    Some(Parsed {
        proto,
        dst_port,
        hdr_len: ETH_LEN + ihl + l4_len,
        gbp: proto == Proto::Vxlan && l4[UDP_LEN] == VXLAN_GBP_BYTE,
        l3,
        meta,
    })
}

/// The IPv4 packet of `f` and its header length, if `f` holds an IPv4 packet's whole
/// header and the packet is not a fragment (fragments go to the host stack: OVS reassembles
/// first; not done here).
#[inline(always)]
fn ipv4_head(f: &[u8]) -> Option<(&[u8], usize)> {
    if f.len() < ETH_LEN + IP_LEN || f[12..14] != ETH_P_IP.to_be_bytes() {
        return None;
    }
    let ip = &f[ETH_LEN..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[0] >> 4 != 4 || ihl < IP_LEN || ip.len() < ihl {
        return None;
    }
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return None;
    }
    Some((ip, ihl))
}

/// Whether an IPv4 header of `ihl` bytes at `ip` is one OVS's `tnl_pop` takes: no options,
/// a header checksum that verifies.
#[inline(always)]
fn poppable_ipv4(ip: &[u8], ihl: usize) -> bool {
    ihl == IP_LEN && packet::csum::ipv4_header_ok(&ip[..IP_LEN])
}

/// The outer IPv4 datagram of `f` (up to its total length) and its header length, if it is
/// a well-formed one that is not a fragment, without options, its header checksum right
/// (else [`refused_ipv4`] tells whether it is dropped or the host's).
#[inline]
fn outer_ipv4(f: &[u8]) -> Option<(&[u8], usize)> {
    let (ip, ihl) = ipv4_head(f)?;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total < ihl || ip.len() < total || !poppable_ipv4(ip, ihl) {
        return None;
    }
    Some((&ip[..total], ihl))
}

/// Whether `f` is an unfragmented IPv4 packet to a tunnel's UDP port (or GRE, when
/// `any_gre`) that carries IP options or a bad header checksum. OVS's `tnl_pop` drops such a
/// packet ("ip options not supported on tunnel packets", "invalid checksum"); so does
/// ferrovs (counted), instead of handing it to the host. [`parse`] refuses it.
pub fn refused_ipv4(
    f: &[u8],
    udp_port_known: impl Fn(u16) -> Option<Proto>,
    any_gre: bool,
) -> bool {
    let Some((ip, ihl)) = ipv4_head(f) else {
        return false;
    };
    let to_tunnel = match ip[9] {
        IPPROTO_UDP => ip
            .get(ihl + 2..ihl + 4)
            .is_some_and(|p| udp_port_known(u16::from_be_bytes([p[0], p[1]])).is_some()),
        IPPROTO_GRE => any_gre,
        _ => false,
    };
    to_tunnel && !poppable_ipv4(ip, ihl)
}

/// The outer IPv6 packet of `f` (up to its payload length), the length of its headers and
/// the protocol after them, if it is a well-formed one. Hop-by-hop, routing and
/// destination options headers and AH are skipped, as OVS pops everything up to the
/// transport header; a Fragment header ends the walk (the packet is then no tunnel
/// packet: it goes to the host, as OVS's `tnl_pop` megaflow takes only `frag=no`).
#[inline]
fn outer_ipv6(f: &[u8]) -> Option<(&[u8], usize, u8)> {
    let ip = f.get(ETH_LEN..)?;
    if ip.len() < IP6_LEN || ip[0] >> 4 != 6 {
        return None;
    }
    let end = IP6_LEN + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    let ip = ip.get(..end)?;
    let (mut next, mut at) = (ip[6], IP6_LEN);
    // Each step moves on by at least 8 bytes and reads within `ip`, so this ends.
    while matches!(next, 0 | 43 | 60 | 51) {
        let h = ip.get(at..at + 2)?;
        at += if next == 51 {
            (usize::from(h[1]) + 2) * 4
        } else {
            (usize::from(h[1]) + 1) * 8
        };
        next = h[0];
    }
    (at <= ip.len()).then_some((ip, at, next))
}

/// The tunnel metadata the outer IPv6 header gives: addresses, traffic class, hop limit.
#[inline]
fn outer_meta6(ip: &[u8]) -> TunMeta {
    let mut m = TunMeta {
        tos: (ip[0] << 4) | (ip[1] >> 4),
        ttl: ip[7],
        ..TunMeta::default()
    };
    m.ipv6_src.copy_from_slice(&ip[8..24]);
    m.ipv6_dst.copy_from_slice(&ip[24..40]);
    m
}

/// The tunnel metadata the outer IPv4 header gives: addresses, TOS, TTL, don't-fragment.
#[inline]
fn outer_meta(ip: &[u8]) -> TunMeta {
    TunMeta {
        id: 0,
        src: [ip[12], ip[13], ip[14], ip[15]],
        dst: [ip[16], ip[17], ip[18], ip[19]],
        flags: if ip[6] & 0x40 != 0 {
            F_DONT_FRAGMENT
        } else {
            0
        },
        tos: ip[1],
        ttl: ip[8],
        ..TunMeta::default()
    }
}

/// A UDP datagram to a tunnel port: its protocol, destination port and the length of the
/// UDP and tunnel headers; the VNI, checksum and OAM flags and Geneve options go to `meta`.
#[inline]
fn udp_tunnel(
    l4: &[u8],
    udp_port_known: impl Fn(u16) -> Option<Proto>,
    meta: &mut TunMeta,
) -> Option<(Proto, u16, usize)> {
    if l4.len() < UDP_LEN + 8 {
        return None;
    }
    let dport = u16::from_be_bytes([l4[2], l4[3]]);
    let proto = udp_port_known(dport)?;
    if u16::from_be_bytes([l4[6], l4[7]]) != 0 {
        meta.flags |= F_CSUM;
    }
    let t = &l4[UDP_LEN..];
    let hlen = match proto {
        Proto::Vxlan => {
            if u32::from_be_bytes([t[0], t[1], t[2], t[3]]) != VXLAN_FLAGS {
                // Group Policy: G and I, the D and A bits (others of that byte are
                // ignored, as Linux ignores them), the ID. Whether the port takes it is
                // the caller's question (`Parsed::gbp`).
                if t[0] != VXLAN_GBP_BYTE {
                    return None;
                }
                meta.gbp_flags = t[1] & GBP_FLAGS;
                meta.gbp_id = u16::from_be_bytes([t[2], t[3]]);
            }
            8
        }
        Proto::Geneve => {
            if t[0] >> 6 != 0 || u16::from_be_bytes([t[2], t[3]]) != ETH_P_TEB {
                return None;
            }
            if t[1] & 0x80 != 0 {
                meta.flags |= F_OAM;
            }
            8 + usize::from(t[0] & 0x3f) * 4
        }
        Proto::Gre => return None,
    };
    meta.id = u64::from(u32::from_be_bytes([t[4], t[5], t[6], 0]) >> 8);
    meta.flags |= F_KEY;
    if t.len() < hlen + ETH_LEN {
        return None;
    }
    if proto == Proto::Geneve {
        keep_options(&t[8..hlen], meta);
    }
    Some((proto, dport, UDP_LEN + hlen))
}

/// A GRE header: its length, and the EtherType of an L3 payload (`None`: Ethernet, protocol
/// 0x6558); the key and checksum flag go to `meta`. As OVS, any protocol from 0x0600 is an
/// EtherType; a lower one is no GRE packet this switch takes.
#[inline]
fn gre_header(l4: &[u8], meta: &mut TunMeta) -> Option<(usize, Option<u16>)> {
    if l4.len() < 4 {
        return None;
    }
    let flags = u16::from_be_bytes([l4[0], l4[1]]);
    let proto = u16::from_be_bytes([l4[2], l4[3]]);
    // Version 0, no routing, no recursion or reserved bits.
    if flags & !(GRE_CSUM | GRE_KEY | GRE_SEQ) != 0 || proto < ETH_TYPE_MIN {
        return None;
    }
    let l3 = (proto != ETH_P_TEB).then_some(proto);
    let mut n = 4;
    if flags & GRE_CSUM != 0 {
        meta.flags |= F_CSUM;
        n += 4;
    }
    if flags & GRE_KEY != 0 {
        if l4.len() < n + 4 {
            return None;
        }
        meta.id = u64::from(u32::from_be_bytes([l4[n], l4[n + 1], l4[n + 2], l4[n + 3]]));
        meta.flags |= F_KEY;
        n += 4;
    }
    if flags & GRE_SEQ != 0 {
        n += 4;
    }
    // An Ethernet payload holds at least its header; an L3 one may be empty (OVS pops it).
    if l4.len() < n + if l3.is_some() { 0 } else { ETH_LEN } {
        return None;
    }
    Some((n, l3))
}

/// Pops outer headers `r` from `pkt` (which [`parse`] read); an L3 payload (GRE
/// `legacy_l3`) gets the Ethernet header a `legacy_l3` port shows it with, as OVS's
/// pipeline sees it: zero MACs and the GRE protocol as EtherType (written over the last
/// bytes of the outer headers, so nothing moves). `false` if `pkt` is shorter than `r`.
#[inline]
pub fn pop(pkt: &mut packet::Packet, r: &Parsed) -> bool {
    let Some(et) = r.l3 else {
        return pkt.pull_front(r.hdr_len);
    };
    if r.hdr_len < ETH_LEN || !pkt.pull_front(r.hdr_len - ETH_LEN) {
        return false;
    }
    match pkt.data_mut().get_mut(..ETH_LEN) {
        Some(h) => {
            h[..12].fill(0);
            h[12..].copy_from_slice(&et.to_be_bytes());
            true
        }
        None => false,
    }
}
