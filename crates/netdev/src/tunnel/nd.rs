//! Neighbour discovery for the underlay: what the neighbour cache learns from the ARP
//! replies/requests and IPv6 Neighbor Advertisements an underlay port hands to the host
//! (OVS's `tnl_arp_snoop` and `tnl_nd_snoop`), and the probes the switch sends itself for a
//! next hop it does not know: an ARP request, or a Neighbor Solicitation to the target's
//! solicited-node multicast address with our link-layer address (RFC 4861).

use packet::csum;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const ICMPV6: u8 = 58;
const ND_NS: u8 = 135;
const ND_NA: u8 = 136;
const OPT_SLL: u8 = 1;
const OPT_TLL: u8 = 2;

/// The (address, MAC) pair a frame teaches: the sender of an ARP packet, or the target of
/// a Neighbor Advertisement with its target link-layer address option.
pub fn snoop(d: &[u8]) -> Option<(IpAddr, [u8; 6])> {
    if d.len() >= 42 && d[12..14] == [0x08, 0x06] && d[14..22] == [0, 1, 8, 0, 6, 4, 0, d[21]] {
        let ip = Ipv4Addr::new(d[28], d[29], d[30], d[31]);
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&d[22..28]);
        return Some((IpAddr::V4(ip), mac));
    }
    snoop_na(d)
}

/// A Neighbor Advertisement (no extension headers, hop limit 255, code 0): its target and
/// target link-layer address.
fn snoop_na(d: &[u8]) -> Option<(IpAddr, [u8; 6])> {
    let icmp = d.get(54..)?;
    if d[12..14] != [0x86, 0xdd] || d[20] != ICMPV6 || d[21] != 255 {
        return None;
    }
    if icmp.len() < 24 || icmp[0] != ND_NA || icmp[1] != 0 {
        return None;
    }
    let mut target = [0u8; 16];
    target.copy_from_slice(&icmp[8..24]);
    let mut at = 24;
    while let Some(h) = icmp.get(at..at + 2) {
        let len = usize::from(h[1]) * 8;
        if len == 0 {
            return None;
        }
        if h[0] == OPT_TLL && len == 8 {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(icmp.get(at + 2..at + 8)?);
            return Some((IpAddr::V6(Ipv6Addr::from(target)), mac));
        }
        at += len;
    }
    None
}

/// An ARP request for `target` from `mac`/`src`.
pub fn arp_request(mac: [u8; 6], src: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[22..28].copy_from_slice(&mac);
    f[28..32].copy_from_slice(&src.octets());
    f[38..42].copy_from_slice(&target.octets());
    f
}

/// A Neighbor Solicitation for `target` from `mac`/`src`, to the target's solicited-node
/// multicast address, with the source link-layer address option.
pub fn neighbor_solicitation(mac: [u8; 6], src: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
    let t = target.octets();
    let mut dst = [0u8; 16];
    dst[..2].copy_from_slice(&[0xff, 0x02]);
    dst[11..13].copy_from_slice(&[0x01, 0xff]);
    dst[13..].copy_from_slice(&t[13..]);
    let mut f = vec![0u8; 14 + 40 + 32];
    f[0..6].copy_from_slice(&[0x33, 0x33, 0xff, t[13], t[14], t[15]]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f[14] = 0x60;
    f[18..20].copy_from_slice(&32u16.to_be_bytes());
    f[20] = ICMPV6;
    f[21] = 255;
    f[22..38].copy_from_slice(&src.octets());
    f[38..54].copy_from_slice(&dst);
    let icmp = 54;
    f[icmp] = ND_NS;
    f[icmp + 8..icmp + 24].copy_from_slice(&t);
    f[icmp + 24] = OPT_SLL;
    f[icmp + 25] = 1;
    f[icmp + 26..icmp + 32].copy_from_slice(&mac);
    let s = csum::add(u32::from(ICMPV6) + 32, &f[22..54]);
    let c = !csum::fold(csum::add(s, &f[icmp..]));
    f[icmp + 2..icmp + 4].copy_from_slice(&c.to_be_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const PEER: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().expect("v6")
    }

    /// The Neighbor Advertisement a peer answers `ns` with (solicited, override, TLL).
    fn answer(ns: &[u8], with_tll: bool) -> Vec<u8> {
        let mut f = ns.to_vec();
        f[0..6].copy_from_slice(&ns[6..12]);
        f[6..12].copy_from_slice(&PEER);
        let target: [u8; 16] = ns[62..78].try_into().expect("16 bytes");
        f[22..38].copy_from_slice(&target);
        f[38..54].copy_from_slice(&ns[22..38]);
        f[54] = ND_NA;
        f[58] = 0x60;
        f[78] = OPT_TLL;
        f[80..86].copy_from_slice(&PEER);
        if !with_tll {
            f.truncate(78);
            f[18..20].copy_from_slice(&24u16.to_be_bytes());
        }
        f
    }

    #[test]
    fn a_solicitation_is_well_formed_and_its_advertisement_is_learnt() {
        let ns = neighbor_solicitation(MAC, v6("fd00::1"), v6("fd00::12:3456"));
        // To 33:33:ff:12:34:56 / ff02::1:ff12:3456, hop limit 255.
        assert_eq!(&ns[0..6], &[0x33, 0x33, 0xff, 0x12, 0x34, 0x56]);
        assert_eq!(
            Ipv6Addr::from(<[u8; 16]>::try_from(&ns[38..54]).expect("16")),
            v6("ff02::1:ff12:3456")
        );
        assert_eq!((ns[20], ns[21]), (58, 255));
        // The ICMPv6 checksum verifies and the packet parses as an NS with our SLL.
        let s = csum::add(58 + 32, &ns[22..54]);
        assert_eq!(csum::fold(csum::add(s, &ns[54..])), 0xffff);
        let k = packet::flow::extract(&ns, 1);
        assert_eq!((k.tp_src, k.arp_sha), (135, MAC));
        assert_eq!(k.nd_target, v6("fd00::12:3456").octets());
        // Our own solicitation teaches nothing; the answer does.
        assert_eq!(snoop(&ns), None);
        let na = answer(&ns, true);
        assert_eq!(snoop(&na), Some((IpAddr::V6(v6("fd00::12:3456")), PEER)));
        // Without a target link-layer address, or with a bad option, nothing is learnt.
        assert_eq!(snoop(&answer(&ns, false)), None);
        let mut bad = na.clone();
        bad[79] = 0;
        assert_eq!(snoop(&bad), None);
        // A forwarded NA (hop limit not 255) is not trusted.
        let mut fwd = na.clone();
        fwd[21] = 254;
        assert_eq!(snoop(&fwd), None);
        for n in 0..na.len() {
            let _ = snoop(&na[..n]);
        }
    }

    #[test]
    fn arp_packets_teach_their_sender() {
        let f = arp_request(MAC, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(snoop(&f), Some((IpAddr::from([10, 0, 0, 1]), MAC)));
    }
}
