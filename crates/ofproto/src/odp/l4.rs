//! Rewrites of transport ports, ICMP type and code and ND fields, with their checksums
//! (incremental for TCP/UDP/ICMP, recomputed for ND and SCTP).

use super::*;

/// Transport ports, ICMP type/code and ND target/options (headers stay put).
#[inline]
pub(super) fn apply_l4(pkt: &mut Packet, a: &DpAction, offs: &mut Option<Offsets>) -> bool {
    match a {
        DpAction::SetTpSrc(v) => {
            set_l4_u16(pkt, offsets(pkt, offs), 0, *v);
            false
        }
        DpAction::SetTpDst(v) => {
            set_l4_u16(pkt, offsets(pkt, offs), 2, *v);
            false
        }
        DpAction::SetIcmpType(t) => {
            set_icmp(pkt, offsets(pkt, offs), 0, *t);
            false
        }
        DpAction::SetIcmpCode(c) => {
            set_icmp(pkt, offsets(pkt, offs), 1, *c);
            false
        }
        DpAction::SetNdTarget(t) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Target(*t));
            false
        }
        DpAction::SetNdSll(m) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Option(1, *m));
            false
        }
        DpAction::SetNdTll(m) => {
            set_nd(pkt, offsets(pkt, offs), NdField::Option(2, *m));
            false
        }
        _ => false,
    }
}

/// The L4 protocol and header offset of an IP packet, if it has an L4 header.
pub(super) fn l4_of(pkt: &Packet, o: Offsets) -> Option<(u8, usize, usize)> {
    let l3 = usize::from(o.l3?);
    let l4 = usize::from(o.l4?);
    let d = pkt.data();
    let proto = if is_ip(pkt, o, 4) {
        *d.get(l3 + 9)?
    } else if is_ip(pkt, o, 6) {
        // The last next-header before the L4 header.
        let mut k = flow::FlowKey::ZERO;
        flow::extract_into(&mut k, d, 0);
        k.nw_proto
    } else {
        return None;
    };
    Some((proto, l3, l4))
}

/// Where the transport checksum sits, for protocols whose checksum covers addresses.
pub(super) fn l4_csum_field(proto: u8) -> Option<usize> {
    match proto {
        flow::IPPROTO_TCP => Some(16),
        flow::IPPROTO_UDP => Some(6),
        flow::IPPROTO_ICMPV6 => Some(2),
        _ => None,
    }
}

pub(super) fn fix_l4_for_addr<const N: usize>(
    pkt: &mut Packet,
    o: Offsets,
    old: &[u8; N],
    new: &[u8; N],
) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if o.l4.is_none() {
        return;
    }
    if proto == flow::IPPROTO_SCTP {
        sctp_recompute(pkt.data_mut(), l4, l3);
        return;
    }
    let Some(f) = l4_csum_field(proto) else {
        return;
    };
    let v4 = is_ip(pkt, o, 4);
    let d = pkt.data_mut();
    if let Some(c) = rd16(d, l4 + f) {
        if proto == flow::IPPROTO_UDP && v4 && c == 0 {
            return;
        }
        let mut n = csum::update_bytes(c, old, new);
        if proto == flow::IPPROTO_UDP && n == 0 {
            n = 0xffff;
        }
        wr16(d, l4 + f, n);
    }
}

/// Updates the checksum of an L4 header of protocol `old` whose pseudo-header protocol
/// became `new` (the checksum stays where the old protocol keeps it).
pub(super) fn fix_l4_for_proto(d: &mut [u8], v4: bool, old: u8, l4: usize, new: u8) {
    let Some(f) = l4_csum_field(old) else {
        return;
    };
    if let Some(c) = rd16(d, l4 + f) {
        if old == flow::IPPROTO_UDP && v4 && c == 0 {
            return;
        }
        let mut n = csum::update16(c, u16::from(old), u16::from(new));
        if old == flow::IPPROTO_UDP && n == 0 {
            n = 0xffff;
        }
        wr16(d, l4 + f, n);
    }
}

pub(super) fn set_l4_u16(pkt: &mut Packet, o: Offsets, field: usize, v: u16) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if !matches!(
        proto,
        flow::IPPROTO_TCP | flow::IPPROTO_UDP | flow::IPPROTO_SCTP
    ) {
        return;
    }
    let v4 = is_ip(pkt, o, 4);
    let d = pkt.data_mut();
    let Some(old) = rd16(d, l4 + field) else {
        return;
    };
    wr16(d, l4 + field, v);
    if proto == flow::IPPROTO_SCTP {
        sctp_recompute(d, l4, l3);
        return;
    }
    if let Some(f) = l4_csum_field(proto) {
        if let Some(c) = rd16(d, l4 + f) {
            if proto == flow::IPPROTO_UDP && v4 && c == 0 {
                return;
            }
            let mut n = csum::update16(c, old, v);
            if proto == flow::IPPROTO_UDP && n == 0 {
                n = 0xffff;
            }
            wr16(d, l4 + f, n);
        }
    }
}

pub(super) fn set_icmp(pkt: &mut Packet, o: Offsets, field: usize, v: u8) {
    let Some((proto, _l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if proto != flow::IPPROTO_ICMP && proto != flow::IPPROTO_ICMPV6 {
        return;
    }
    let d = pkt.data_mut();
    let Some(old_w) = rd16(d, l4) else {
        return;
    };
    let new_w = if field == 0 {
        (u16::from(v) << 8) | (old_w & 0xff)
    } else {
        (old_w & 0xff00) | u16::from(v)
    };
    wr16(d, l4, new_w);
    if let Some(c) = rd16(d, l4 + 2) {
        wr16(d, l4 + 2, csum::update16(c, old_w, new_w));
    }
}

pub(super) enum NdField {
    Target([u8; 16]),
    /// Option type (1 = source, 2 = target link-layer address) and the address.
    Option(u8, [u8; 6]),
}

pub(super) fn set_nd(pkt: &mut Packet, o: Offsets, f: NdField) {
    let Some((proto, l3, l4)) = l4_of(pkt, o) else {
        return;
    };
    if proto != flow::IPPROTO_ICMPV6 {
        return;
    }
    let d = pkt.data_mut();
    let Some(&ty) = d.get(l4) else {
        return;
    };
    if ty != flow::ICMPV6_ND_NS && ty != flow::ICMPV6_ND_NA {
        return;
    }
    match f {
        NdField::Target(t) => {
            if let Some(s) = d.get_mut(l4 + 8..l4 + 24) {
                s.copy_from_slice(&t);
            }
        }
        NdField::Option(kind, mac) => {
            let mut at = l4 + 24;
            while let (Some(&t), Some(&len)) = (d.get(at), d.get(at + 1)) {
                if len == 0 {
                    break;
                }
                if t == kind && len == 1 {
                    if let Some(s) = d.get_mut(at + 2..at + 8) {
                        s.copy_from_slice(&mac);
                    }
                    break;
                }
                at += usize::from(len) * 8;
            }
        }
    }
    csum::set_l4_checksum(d, l3, l4, 2, flow::IPPROTO_ICMPV6, true);
}

/// CRC32c (Castagnoli), bitwise: SCTP rewrites are rare enough not to need a table.
pub(super) fn crc32c(data: &[u8]) -> u32 {
    let mut crc: u32 = !0;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let m = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0x82f6_3b78 & m);
        }
    }
    !crc
}

/// Recomputes an SCTP packet's CRC32c over the SCTP header and chunks (to the IP length).
pub(super) fn sctp_recompute(d: &mut [u8], l4: usize, l3: usize) {
    let end = match d.get(l3).map(|b| b >> 4) {
        Some(4) => rd16(d, l3 + 2).map(|n| l3 + usize::from(n)),
        Some(6) => rd16(d, l3 + 4).map(|n| l3 + 40 + usize::from(n)),
        _ => None,
    };
    let Some(end) = end.filter(|e| *e <= d.len() && *e >= l4 + 12) else {
        return;
    };
    if let Some(s) = d.get_mut(l4 + 8..l4 + 12) {
        s.copy_from_slice(&[0; 4]);
    }
    let c = crc32c(&d[l4..end]);
    if let Some(s) = d.get_mut(l4 + 8..l4 + 12) {
        // SCTP stores the CRC32c in little-endian byte order on the wire.
        s.copy_from_slice(&c.to_le_bytes());
    }
}
