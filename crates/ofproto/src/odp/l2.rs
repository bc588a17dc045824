//! Rewrites of the Ethernet header, VLAN tags, MPLS labels and PBB headers (the ones that
//! may move the headers after them), and the TTL copies between MPLS and IP.

use super::*;

pub(super) fn rd16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk::<2>()?))
}

pub(super) fn wr16(b: &mut [u8], at: usize, v: u16) -> bool {
    match b.get_mut(at..at + 2) {
        Some(s) => {
            s.copy_from_slice(&v.to_be_bytes());
            true
        }
        None => false,
    }
}

/// Offset of the last EtherType field (after VLAN tags), or None for a runt.
pub(super) fn ethertype_at(d: &[u8]) -> Option<usize> {
    ethertype_after(d, 2)
}

/// Offset of the EtherType field after at most `tags` VLAN tags, or None for a runt.
pub(super) fn ethertype_after(d: &[u8], tags: u8) -> Option<usize> {
    let mut at = 12;
    for _ in 0..tags.min(2) {
        match rd16(d, at)? {
            flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD => at += 4,
            _ => break,
        }
    }
    rd16(d, at).map(|_| at)
}

/// Ethernet addresses and type, VLAN tags; true when header positions changed.
#[inline]
pub(super) fn apply_eth_vlan(pkt: &mut Packet, a: &DpAction) -> bool {
    match a {
        DpAction::SetEthSrc(m) => {
            if let Some(s) = pkt.data_mut().get_mut(6..12) {
                s.copy_from_slice(m);
            }
            false
        }
        DpAction::SetEthDst(m) => {
            if let Some(s) = pkt.data_mut().get_mut(0..6) {
                s.copy_from_slice(m);
            }
            false
        }
        DpAction::SetEthType(t) => {
            if let Some(at) = ethertype_at(pkt.data()) {
                wr16(pkt.data_mut(), at, *t);
            }
            true
        }
        DpAction::PushVlan { tpid, tci } => {
            if pkt.len() >= 14 {
                if let Some(tag) = pkt.insert_at(12, 4) {
                    tag[0..2].copy_from_slice(&tpid.to_be_bytes());
                    tag[2..4].copy_from_slice(&tci.to_be_bytes());
                }
            }
            true
        }
        DpAction::PopVlan => {
            if matches!(
                rd16(pkt.data(), 12),
                Some(flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD)
            ) && pkt.len() >= 18
            {
                pkt.remove_at(12, 4);
            }
            true
        }
        DpAction::SetVlanTci { tci, mask } => {
            let d = pkt.data_mut();
            if matches!(
                rd16(d, 12),
                Some(flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD)
            ) {
                if let Some(old) = rd16(d, 14) {
                    wr16(d, 14, (old & !mask) | (tci & mask));
                }
            }
            false
        }
        _ => false,
    }
}

/// MPLS labels and PBB headers; true when header positions changed.
#[inline]
pub(super) fn apply_mpls_pbb(pkt: &mut Packet, a: &DpAction) -> bool {
    match a {
        DpAction::PushMpls {
            ethertype,
            lse,
            tags,
        } => {
            let Some(et) = ethertype_after(pkt.data(), *tags) else {
                return false;
            };
            if let Some(l) = pkt.insert_at(et + 2, 4) {
                l.copy_from_slice(&lse.to_be_bytes());
                wr16(pkt.data_mut(), et, *ethertype);
            }
            true
        }
        DpAction::PopMpls(ethertype) => {
            let Some(et) = ethertype_at(pkt.data()) else {
                return false;
            };
            if matches!(
                rd16(pkt.data(), et),
                Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
            ) && pkt.len() >= et + 6
            {
                pkt.remove_at(et + 2, 4);
                // The EtherType field moved forward by 4 with the bytes before it.
                wr16(pkt.data_mut(), et, *ethertype);
            }
            true
        }
        DpAction::SetMplsLse { lse, mask } => {
            let Some(et) = ethertype_at(pkt.data()) else {
                return false;
            };
            let d = pkt.data_mut();
            if matches!(
                rd16(d, et),
                Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
            ) {
                if let Some(s) = d.get_mut(et + 2..et + 6) {
                    let old = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                    s.copy_from_slice(&((old & !mask) | (lse & mask)).to_be_bytes());
                }
            }
            false
        }
        DpAction::PushPbb { isid } => {
            if pkt.len() < 12 {
                return false;
            }
            let mut macs = [0u8; 12];
            macs.copy_from_slice(&pkt.data()[0..12]);
            if let Some(h) = pkt.push_front(18) {
                h[0..12].copy_from_slice(&macs);
                h[12..14].copy_from_slice(&flow::ETH_TYPE_PBB.to_be_bytes());
                h[14..18].copy_from_slice(&(isid & 0x00ff_ffff).to_be_bytes());
            }
            true
        }
        DpAction::PopPbb => {
            if rd16(pkt.data(), 12) == Some(flow::ETH_TYPE_PBB) && pkt.len() >= 18 + 14 {
                pkt.pull_front(18);
            }
            true
        }
        DpAction::SetPbbIsid(isid) => {
            // The I-TAG may follow a B-TAG (an S-VLAN tag): its TCI is the 4 bytes after its
            // EtherType, the I-SID their low 24 bits.
            let Some(at) = ethertype_at(pkt.data()) else {
                return false;
            };
            if rd16(pkt.data(), at) == Some(flow::ETH_TYPE_PBB) {
                if let Some(s) = pkt.data_mut().get_mut(at + 3..at + 6) {
                    s.copy_from_slice(&isid.to_be_bytes()[1..4]);
                }
            }
            false
        }
        _ => false,
    }
}

/// Copies TTLs between the outermost MPLS entry and what lies beneath it.
pub(super) fn copy_ttl(pkt: &mut Packet, outwards: bool) {
    let Some(et) = ethertype_at(pkt.data()) else {
        return;
    };
    if !matches!(
        rd16(pkt.data(), et),
        Some(flow::ETH_TYPE_MPLS | flow::ETH_TYPE_MPLS_MCAST)
    ) {
        return;
    }
    let top = et + 2;
    let d = pkt.data_mut();
    let Some(lse) = d
        .get(top..top + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return;
    };
    let below = top + 4;
    if lse & 0x100 == 0 {
        // Another label stack entry beneath: its TTL is the last byte.
        let Some(&inner) = d.get(below + 3) else {
            return;
        };
        if outwards {
            d[top + 3] = inner;
        } else {
            d[below + 3] = (lse & 0xff) as u8;
        }
        return;
    }
    // Bottom of stack: IPv4 or IPv6 beneath, told apart by the version nibble.
    match d.get(below).map(|b| b >> 4) {
        Some(4) => {
            let Some(&ttl) = d.get(below + 8) else { return };
            if outwards {
                d[top + 3] = ttl;
            } else if let Some(old_w) = rd16(d, below + 8) {
                let new_w = (((lse & 0xff) as u16) << 8) | (old_w & 0xff);
                wr16(d, below + 8, new_w);
                fix_ipv4_hdr(d, below, old_w, new_w);
            }
        }
        Some(6) => {
            let Some(&hl) = d.get(below + 7) else { return };
            if outwards {
                d[top + 3] = hl;
            } else {
                d[below + 7] = (lse & 0xff) as u8;
            }
        }
        _ => {}
    }
}
