//! The flow identity of a sampled frame, read from its first bytes only (an sFlow or IPFIX
//! sample keeps the first 128 or so): unlike [`crate::flow::extract`], which drops what a
//! truncated datagram claims, this keeps every field the bytes hold.
//!
//! What: Ethernet addresses, the EtherType after at most two VLAN tags (the outer VLAN id
//! kept), and for IPv4/IPv6 the addresses, protocol, traffic class, TTL/hop limit, the
//! transport ports (TCP, UDP, SCTP) or ICMP type and code, and the IP length (octets counted
//! per record). A header cut short, or one that is not what its EtherType says, keeps what
//! was read so far (an IPv4 header cut before its addresses is no IP at all). Pure and bounds-checked: the
//! bytes come from the wire.

use std::net::IpAddr;

/// What a flow record is keyed on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SampledKey {
    pub ingress: u32,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub ethertype: u16,
    pub vlan: u16,
    pub ip: Option<SampledIp>,
}

/// The IP part of a [`SampledKey`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SampledIp {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    pub tos: u8,
    pub ttl: u8,
    pub src_port: u16,
    pub dst_port: u16,
    /// ICMP type << 8 | code (ICMP and ICMPv6), else 0.
    pub icmp: u16,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The key of `frame` (at least its first bytes) received on `ingress`, and its IP length
/// (0 for a frame without an IP header).
pub fn parse(ingress: u32, frame: &[u8]) -> Option<(SampledKey, u32)> {
    let dst_mac: [u8; 6] = frame.get(0..6)?.try_into().ok()?;
    let src_mac: [u8; 6] = frame.get(6..12)?.try_into().ok()?;
    let mut at = 12;
    let mut ethertype = be16(frame, at)?;
    let mut vlan = 0;
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        if vlan == 0 {
            vlan = be16(frame, at + 2).unwrap_or(0) & 0x0fff;
        }
        at += 4;
        ethertype = be16(frame, at).unwrap_or(0);
    }
    let l3 = at + 2;
    let mut key = SampledKey {
        ingress,
        src_mac,
        dst_mac,
        ethertype,
        vlan,
        ip: None,
    };
    let ip = match ethertype {
        0x0800 => ipv4(frame.get(l3..).unwrap_or(&[])),
        0x86dd => ipv6(frame.get(l3..).unwrap_or(&[])),
        _ => None,
    };
    let len = ip.as_ref().map_or(0, |(_, l)| *l);
    key.ip = ip.map(|(k, _)| k);
    Some((key, len))
}

fn ipv4(b: &[u8]) -> Option<(SampledIp, u32)> {
    let vihl = *b.first()?;
    if vihl >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 || b.len() < 20 {
        return None;
    }
    let src: [u8; 4] = b.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = b.get(16..20)?.try_into().ok()?;
    let proto = b[9];
    // Later fragments carry no transport header.
    let first = be16(b, 6)? & 0x1fff == 0;
    let mut k = SampledIp {
        src: IpAddr::from(src),
        dst: IpAddr::from(dst),
        proto,
        tos: b[1],
        ttl: b[8],
        src_port: 0,
        dst_port: 0,
        icmp: 0,
    };
    if first {
        transport(&mut k, b.get(ihl..).unwrap_or(&[]), 1);
    }
    Some((k, u32::from(be16(b, 2)?)))
}

fn ipv6(b: &[u8]) -> Option<(SampledIp, u32)> {
    if b.first()? >> 4 != 6 || b.len() < 40 {
        return None;
    }
    let src: [u8; 16] = b.get(8..24)?.try_into().ok()?;
    let dst: [u8; 16] = b.get(24..40)?.try_into().ok()?;
    let mut k = SampledIp {
        src: IpAddr::from(src),
        dst: IpAddr::from(dst),
        proto: b[6],
        tos: ((be16(b, 0)? >> 4) & 0xff) as u8,
        ttl: b[7],
        src_port: 0,
        dst_port: 0,
        icmp: 0,
    };
    transport(&mut k, &b[40..], 58);
    Some((k, u32::from(be16(b, 4)?) + 40))
}

fn transport(k: &mut SampledIp, l4: &[u8], icmp_proto: u8) {
    match k.proto {
        6 | 17 | 132 => {
            k.src_port = be16(l4, 0).unwrap_or(0);
            k.dst_port = be16(l4, 2).unwrap_or(0);
        }
        p if p == icmp_proto => k.icmp = be16(l4, 0).unwrap_or(0),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: u16, l3: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(l3);
        f
    }

    #[test]
    fn udp_over_ipv4_in_a_vlan() {
        let mut ip = vec![
            0x45, 0x10, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        ip.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 8, 0, 0]);
        let mut f = eth(0x8100, &[0x20, 0x0a]);
        f.extend_from_slice(&0x0800u16.to_be_bytes());
        f.extend_from_slice(&ip);
        let (k, len) = parse(3, &f).expect("key");
        assert_eq!((k.ingress, k.vlan, k.ethertype, len), (3, 10, 0x0800, 28));
        assert_eq!(k.src_mac, [2, 0, 0, 0, 0, 1]);
        let ip = k.ip.expect("ip");
        assert_eq!(ip.src, "10.0.0.1".parse::<IpAddr>().expect("ip"));
        assert_eq!((ip.proto, ip.tos, ip.ttl), (17, 0x10, 64));
        assert_eq!((ip.src_port, ip.dst_port, ip.icmp), (12345, 53, 0));
    }

    #[test]
    fn icmpv6_and_truncations() {
        let mut ip = vec![0x60, 0, 0, 0, 0, 8, 58, 255];
        ip.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        ip.extend_from_slice(&[128, 0, 0, 0]);
        let f = eth(0x86dd, &ip);
        let (k, len) = parse(1, &f).expect("key");
        assert_eq!(len, 48);
        let i = k.ip.expect("ip");
        assert_eq!((i.proto, i.ttl, i.icmp), (58, 255, 128 << 8));
        // Every truncation parses to something or nothing, never a panic; L2 survives.
        for n in 0..f.len() {
            let r = parse(1, &f[..n]);
            assert_eq!(r.is_some(), n >= 14, "{n}");
        }
        assert!(parse(1, &f[..30]).expect("l2").0.ip.is_none());
    }

    #[test]
    fn later_fragments_have_no_ports() {
        let mut ip = vec![
            0x45, 0, 0, 28, 0, 0, 0, 5, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        ip.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 8, 0, 0]);
        let (k, _) = parse(1, &eth(0x0800, &ip)).expect("key");
        assert_eq!(k.ip.expect("ip").src_port, 0);
    }
}
