//! Unit tests of GRE with L3 payloads (`packet_type=legacy_l3`).

use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn gre(src: IpAddr, dst: IpAddr, csum: bool, key: bool) -> Template {
    Template::new(&Outer {
        proto: Proto::Gre,
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        src,
        dst,
        dst_port: 0,
        tos: Some(0),
        ttl: 64,
        df: true,
        csum,
        gre_key: key,
    })
}

fn v4() -> (IpAddr, IpAddr) {
    (
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
    )
}

fn v6() -> (IpAddr, IpAddr) {
    (
        IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
        IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
    )
}

/// An IPv4 packet of 28 bytes (ICMP), TOS `tos`.
fn ip4(tos: u8) -> Vec<u8> {
    let mut ip = vec![0u8; 28];
    ip[0] = 0x45;
    ip[1] = tos;
    ip[2..4].copy_from_slice(&28u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 1;
    ip[12..16].copy_from_slice(&[192, 168, 1, 1]);
    ip[16..20].copy_from_slice(&[192, 168, 1, 2]);
    ip
}

/// `ip` behind an Ethernet header of EtherType `et`, after `tags` VLAN tags.
fn frame(et: u16, tags: usize, ip: &[u8]) -> Vec<u8> {
    let mut f = vec![0xaa; 6];
    f.extend_from_slice(&[0xbb; 6]);
    for _ in 0..tags {
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
    }
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

fn pushed_l3(t: &Template, f: &[u8], key: u64) -> Option<Vec<u8>> {
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(f));
    t.push_l3(&mut p, key).then(|| p.data().to_vec())
}

#[test]
fn an_l3_packet_goes_out_without_its_ethernet_header_and_comes_back_behind_a_zero_one() {
    for (src, dst) in [v4(), v6()] {
        for (csum, key) in [(false, false), (false, true), (true, true)] {
            let t = gre(src, dst, csum, key);
            for (et, tags) in [(0x0800, 0), (0x86dd, 1), (0x8847, 2)] {
                let ip = ip4(0);
                let f = pushed_l3(&t, &frame(et, tags, &ip), 0x1c8).expect("pushed");
                // Outer headers, then the L3 packet itself: the GRE protocol is its EtherType.
                assert_eq!(f.len(), t.len() + ip.len());
                assert_eq!(&f[t.len()..], &ip[..]);
                let l4 = t.len() - 4 - 4 * usize::from(csum) - 4 * usize::from(key);
                assert_eq!(f[l4 + 2..l4 + 4], et.to_be_bytes(), "{src} {et:#x}");
                if csum {
                    assert_eq!(csum::checksum(&f[l4..]), 0, "the GRE checksum covers it");
                }
                let r = parse(&f, |_| None).expect("a GRE packet");
                assert_eq!((r.proto, r.l3, r.hdr_len), (Proto::Gre, Some(et), t.len()));
                assert_eq!(r.meta.id, if key { 0x1c8 } else { 0 });
                // Popped: a zero-MAC Ethernet header of that EtherType, then the packet.
                let mut pool = packet::Pool::new(1);
                let mut p = pool.alloc().expect("buffer");
                assert!(p.set_frame(&f) && pop(&mut p, &r));
                assert_eq!(
                    p.data(),
                    &frame(et, 0, &ip)
                        .iter()
                        .enumerate()
                        .map(|(i, b)| {
                            if i < 12 {
                                0
                            } else {
                                *b
                            }
                        })
                        .collect::<Vec<_>>()[..]
                );
            }
        }
    }
}

#[test]
fn ethernet_in_gre_still_parses_as_ethernet() {
    let (src, dst) = v4();
    let t = gre(src, dst, false, true);
    let inner = frame(0x0800, 0, &ip4(0));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner) && t.push(&mut p, 5, &[]));
    let r = parse(p.data(), |_| None).expect("a GRE packet");
    assert_eq!(r.l3, None);
    assert!(pop(&mut p, &r));
    assert_eq!(p.data(), &inner[..]);
}

#[test]
fn an_inherited_tos_comes_from_the_l3_packet_under_its_tags() {
    let (src, dst) = v4();
    let t = Template::new(&Outer {
        tos: None,
        ..Outer {
            proto: Proto::Gre,
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src,
            dst,
            dst_port: 0,
            tos: None,
            ttl: 64,
            df: false,
            csum: false,
            gre_key: false,
        }
    });
    let f = pushed_l3(&t, &frame(0x0800, 1, &ip4(0xb8)), 0).expect("pushed");
    assert_eq!(f[15], 0xb8);
    assert!(csum::ipv4_header_ok(&f[14..34]));
}

#[test]
fn what_has_no_ethertype_is_not_sent_and_low_protocols_are_not_read() {
    let (src, dst) = v4();
    let t = gre(src, dst, false, false);
    // An 802.3 frame (a length where the EtherType goes), and frames too short for it.
    assert!(pushed_l3(&t, &frame(0x0050, 0, &ip4(0)), 0).is_none());
    assert!(pushed_l3(&t, &[0u8; 13], 0).is_none());
    assert!(pushed_l3(&t, &frame(0x8100, 0, &[0, 7]), 0).is_none());
    // No other protocol's template pushes L3 packets.
    let vx = Template::new(&Outer {
        proto: Proto::Vxlan,
        src_mac: [0; 6],
        dst_mac: [0; 6],
        src,
        dst,
        dst_port: 4789,
        tos: Some(0),
        ttl: 64,
        df: false,
        csum: false,
        gre_key: false,
    });
    assert!(pushed_l3(&vx, &frame(0x0800, 0, &ip4(0)), 0).is_none());
    // A received GRE protocol under 0x0600 is no EtherType: not a packet for a port.
    let mut f = pushed_l3(&t, &frame(0x0800, 0, &ip4(0)), 0).expect("pushed");
    f[36..38].copy_from_slice(&0x05ffu16.to_be_bytes());
    assert!(parse(&f, |_| None).is_none());
    // An empty L3 payload is popped (OVS takes it); an Ethernet one needs its header.
    let bare = &f[..t.len()];
    let mut l3 = bare.to_vec();
    l3[16..18].copy_from_slice(&24u16.to_be_bytes());
    l3[36..38].copy_from_slice(&0x0800u16.to_be_bytes());
    l3[24..26].copy_from_slice(&[0, 0]);
    let c = csum::checksum(&l3[14..34]);
    l3[24..26].copy_from_slice(&c.to_be_bytes());
    let r = parse(&l3, |_| None).expect("an empty L3 payload");
    assert_eq!((r.l3, r.hdr_len), (Some(0x0800), l3.len()));
    l3[36..38].copy_from_slice(&0x6558u16.to_be_bytes());
    assert!(parse(&l3, |_| None).is_none());
}

#[test]
fn the_tnl_push_header_of_an_l3_port_names_the_ethertype() {
    let (src, dst) = v4();
    let t = gre(src, dst, false, true);
    let h = t.header_l3(0x1c8, 0x86dd).expect("a fixed TOS");
    assert_eq!(h[36..38], [0x86, 0xdd]);
    assert_eq!(h[38..42], 0x1c8u32.to_be_bytes());
    // Everything else is the Ethernet header's.
    let mut e = t.header(0x1c8).expect("a fixed TOS");
    e[36..38].copy_from_slice(&[0x86, 0xdd]);
    assert_eq!(h, e);
}

#[test]
fn l3_start_skips_up_to_two_tags() {
    assert_eq!(l3_start(&frame(0x0800, 0, &[])), Some((14, 0x0800)));
    assert_eq!(l3_start(&frame(0x86dd, 1, &[])), Some((18, 0x86dd)));
    assert_eq!(l3_start(&frame(0x0800, 2, &[])), Some((22, 0x0800)));
    // A third tag is read as the EtherType, as OVS's flow extraction reads two.
    assert_eq!(l3_start(&frame(0x0800, 3, &[])), Some((22, 0x8100)));
    assert_eq!(l3_start(&frame(0x0800, 0, &[])[..13]), None);
}
