//! Rewrites of IPv4, IPv6 and ARP header fields, with the checksums they touch.

use super::*;

/// IP and ARP addresses, the ARP opcode and the IPv6 flow label (headers stay put).
#[inline]
pub(super) fn apply_ip_addr(pkt: &mut Packet, a: &DpAction, offs: &mut Option<Offsets>) -> bool {
    match a {
        DpAction::SetIpv4Src(v) => {
            set_ipv4_addr(pkt, offsets(pkt, offs), 12, *v);
            false
        }
        DpAction::SetIpv4Dst(v) => {
            set_ipv4_addr(pkt, offsets(pkt, offs), 16, *v);
            false
        }
        DpAction::SetArpSpa(v) => {
            set_arp(pkt, offsets(pkt, offs), 14, v);
            false
        }
        DpAction::SetArpTpa(v) => {
            set_arp(pkt, offsets(pkt, offs), 24, v);
            false
        }
        DpAction::SetArpSha(v) => {
            set_arp(pkt, offsets(pkt, offs), 8, v);
            false
        }
        DpAction::SetArpTha(v) => {
            set_arp(pkt, offsets(pkt, offs), 18, v);
            false
        }
        DpAction::SetArpOp(v) => {
            set_arp(pkt, offsets(pkt, offs), 6, &v.to_be_bytes());
            false
        }
        DpAction::SetIpv6Src(v) => {
            set_ipv6_addr(pkt, offsets(pkt, offs), 8, v);
            false
        }
        DpAction::SetIpv6Dst(v) => {
            set_ipv6_addr(pkt, offsets(pkt, offs), 24, v);
            false
        }
        DpAction::SetIpv6Label(v) => {
            let o = offsets(pkt, offs);
            if let (Some(l3), true) = (o.l3, is_ip(pkt, o, 6)) {
                let l3 = usize::from(l3);
                if let Some(h) = pkt.data_mut().get_mut(l3..l3 + 4) {
                    let old = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let new = (old & 0xfff0_0000) | (v & 0x000f_ffff);
                    h.copy_from_slice(&new.to_be_bytes());
                }
            }
            false
        }
        _ => false,
    }
}

/// TOS, TTL and protocol number; true when header positions changed.
#[inline]
pub(super) fn apply_ip_hdr(pkt: &mut Packet, a: &DpAction, offs: &mut Option<Offsets>) -> bool {
    match a {
        DpAction::SetIpTos { tos, mask } => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            if is_ip(pkt, o, 4) {
                let d = pkt.data_mut();
                if let (Some(old_w), Some(&old)) = (rd16(d, l3), d.get(l3 + 1)) {
                    let new = (old & !mask) | (tos & mask);
                    d[l3 + 1] = new;
                    let new_w = (old_w & 0xff00) | u16::from(new);
                    fix_ipv4_hdr(d, l3, old_w, new_w);
                }
            } else if is_ip(pkt, o, 6) {
                let d = pkt.data_mut();
                if let Some(h) = d.get_mut(l3..l3 + 4) {
                    let w = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let old = ((w >> 20) & 0xff) as u8;
                    let new = (old & !mask) | (tos & mask);
                    let w = (w & !0x0ff0_0000) | (u32::from(new) << 20);
                    h.copy_from_slice(&w.to_be_bytes());
                }
            }
            false
        }
        DpAction::SetIpTtl(ttl) => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            if is_ip(pkt, o, 4) {
                let d = pkt.data_mut();
                if let Some(old_w) = rd16(d, l3 + 8) {
                    let new_w = (u16::from(*ttl) << 8) | (old_w & 0xff);
                    wr16(d, l3 + 8, new_w);
                    fix_ipv4_hdr(d, l3, old_w, new_w);
                }
            } else if is_ip(pkt, o, 6) {
                if let Some(b) = pkt.data_mut().get_mut(l3 + 7) {
                    *b = *ttl;
                }
            }
            false
        }
        DpAction::SetIpProto(p) => {
            let o = offsets(pkt, offs);
            let Some(l3) = o.l3.map(usize::from) else {
                return false;
            };
            let old_l4 = l4_of(pkt, o);
            let v4 = is_ip(pkt, o, 4);
            let old = if v4 {
                let d = pkt.data_mut();
                let Some(old_w) = rd16(d, l3 + 8) else {
                    return false;
                };
                let new_w = (old_w & 0xff00) | u16::from(*p);
                wr16(d, l3 + 8, new_w);
                fix_ipv4_hdr(d, l3, old_w, new_w);
                (old_w & 0xff) as u8
            } else if is_ip(pkt, o, 6) {
                let Some(b) = pkt.data_mut().get_mut(l3 + 6) else {
                    return false;
                };
                std::mem::replace(b, *p)
            } else {
                return false;
            };
            // The transport checksum covers the protocol number through the pseudo-header;
            // the header itself stays what it was, so its checksum is updated in place. With
            // IPv6 extension headers the rewritten byte is not the one the pseudo-header uses.
            if let Some((proto, _, l4)) = old_l4.filter(|(proto, ..)| *proto == old) {
                fix_l4_for_proto(pkt.data_mut(), v4, proto, l4, *p);
            }
            true
        }
        _ => false,
    }
}

/// IP version of the L3 header, if it is IPv4 or IPv6.
pub(super) fn is_ip(pkt: &Packet, o: Offsets, version: u8) -> bool {
    o.l3.and_then(|l3| pkt.data().get(usize::from(l3)))
        .is_some_and(|b| b >> 4 == version)
        && ethertype_at(pkt.data())
            .and_then(|at| rd16(pkt.data(), at))
            .is_some_and(|t| {
                (version == 4 && t == flow::ETH_TYPE_IPV4)
                    || (version == 6 && t == flow::ETH_TYPE_IPV6)
            })
}

/// Updates the IPv4 header checksum after the 16-bit word `old` became `new`.
pub(super) fn fix_ipv4_hdr(d: &mut [u8], l3: usize, old: u16, new: u16) {
    if let Some(c) = rd16(d, l3 + 10) {
        wr16(d, l3 + 10, csum::update16(c, old, new));
    }
}

pub(super) fn set_ipv4_addr(pkt: &mut Packet, o: Offsets, field: usize, v: [u8; 4]) {
    if !is_ip(pkt, o, 4) {
        return;
    }
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let d = pkt.data_mut();
    let Some(s) = d.get_mut(l3 + field..l3 + field + 4) else {
        return;
    };
    let old = [s[0], s[1], s[2], s[3]];
    s.copy_from_slice(&v);
    if let Some(c) = rd16(d, l3 + 10) {
        wr16(d, l3 + 10, csum::update_bytes(c, &old, &v));
    }
    fix_l4_for_addr(pkt, o, &old, &v);
}

pub(super) fn set_ipv6_addr(pkt: &mut Packet, o: Offsets, field: usize, v: &[u8; 16]) {
    if !is_ip(pkt, o, 6) {
        return;
    }
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let Some(s) = pkt.data_mut().get_mut(l3 + field..l3 + field + 16) else {
        return;
    };
    let mut old = [0u8; 16];
    old.copy_from_slice(s);
    s.copy_from_slice(v);
    fix_l4_for_addr(pkt, o, &old, v);
}

pub(super) fn set_arp<const N: usize>(pkt: &mut Packet, o: Offsets, field: usize, v: &[u8; N]) {
    let Some(l3) = o.l3.map(usize::from) else {
        return;
    };
    let is_arp = ethertype_at(pkt.data())
        .and_then(|at| rd16(pkt.data(), at))
        .is_some_and(|t| t == flow::ETH_TYPE_ARP || t == flow::ETH_TYPE_RARP);
    if !is_arp {
        return;
    }
    if let Some(s) = pkt.data_mut().get_mut(l3 + field..l3 + field + N) {
        s.copy_from_slice(v);
    }
}
