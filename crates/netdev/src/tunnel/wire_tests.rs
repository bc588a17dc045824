//! Unit tests of the tunnel wire formats.

use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn outer(proto: Proto, csum: bool) -> Outer {
    Outer {
        proto,
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        dst_port: proto.default_port(),
        tos: Some(0),
        ttl: 64,
        df: true,
        csum,
        gre_key: true,
    }
}

fn inner() -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[0xaa; 6]);
    f[6..12].copy_from_slice(&[0xbb; 6]);
    f[12] = 0x08;
    f[14] = 0x45;
    f[23] = 17;
    f
}

fn known(p: u16) -> Option<Proto> {
    match p {
        4789 => Some(Proto::Vxlan),
        6081 => Some(Proto::Geneve),
        _ => None,
    }
}

#[test]
fn push_then_parse_gives_back_the_key_addresses_and_inner_frame() {
    for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
        for csum in [false, true] {
            let t = Template::new(&outer(proto, csum));
            let mut pool = packet::Pool::new(1);
            let mut p = pool.alloc().expect("buffer");
            assert!(p.set_frame(&inner()));
            assert!(t.push(&mut p, 0x12_3456, &[]));
            let f = p.data().to_vec();
            // The outer IPv4 checksum verifies.
            assert!(csum::ipv4_header_ok(&f[14..34]), "{proto:?}");
            let r = parse(&f, known).expect("a tunnel packet");
            assert_eq!(r.proto, proto);
            assert_eq!(r.meta.id, 0x12_3456);
            assert_eq!(r.meta.src, [10, 0, 0, 1]);
            assert_eq!(r.meta.dst, [10, 0, 0, 2]);
            assert_eq!(&f[r.hdr_len..], &inner()[..]);
            if csum && proto != Proto::Gre {
                let s = csum::add(17 + (f.len() - 34) as u32, &f[26..34]);
                assert_eq!(csum::fold(csum::add(s, &f[34..])), 0xffff);
            }
        }
    }
}

#[test]
fn the_outer_checksum_covers_each_length_and_inherited_tos() {
    for tos in [None, Some(0x10)] {
        let t = Template::new(&Outer {
            tos,
            ..outer(Proto::Vxlan, false)
        });
        let mut pool = packet::Pool::new(1);
        for (len, inner_tos) in [(60, 0xb8u8), (1400, 0xff), (61, 0)] {
            let mut f = inner();
            f.resize(len, 0x5a);
            f[15] = inner_tos;
            let mut p = pool.alloc().expect("buffer");
            assert!(p.set_frame(&f));
            assert!(t.push(&mut p, 1, &[]));
            let d = p.data();
            assert!(csum::ipv4_header_ok(&d[14..34]), "{tos:?} {len}");
            assert_eq!(d[15], tos.unwrap_or(inner_tos));
            assert_eq!(usize::from(u16::from_be_bytes([d[16], d[17]])), len + 36);
            pool.free(p);
        }
    }
}

#[test]
fn flows_spread_over_source_ports_and_keep_theirs() {
    let t = Template::new(&outer(Proto::Vxlan, false));
    let mut pool = packet::Pool::new(1);
    let sport = |pool: &mut packet::Pool, i: u32| {
        let mut f = inner();
        f[30..34].copy_from_slice(&(0x0a00_0000 + i).to_be_bytes());
        f[34..36].copy_from_slice(&(1024 + (i % 50_000) as u16).to_be_bytes());
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&f));
        assert!(t.push(&mut p, 1, &[]));
        let d = p.data();
        let s = u16::from_be_bytes([d[34], d[35]]);
        pool.free(p);
        s
    };
    let ports: std::collections::BTreeSet<u16> = (0..1000).map(|i| sport(&mut pool, i)).collect();
    assert!(ports.len() > 950, "{} distinct source ports", ports.len());
    assert!(ports
        .iter()
        .all(|&p| (32768..61000).contains(&u32::from(p))));
    assert_eq!(sport(&mut pool, 7), sport(&mut pool, 7));
}

#[test]
fn geneve_options_go_out_and_come_back() {
    // OVN's option (class 0x0102, type 0x80: critical) and a non-critical one.
    let opts = [
        0x01, 0x02, 0x80, 0x01, 0x00, 0x01, 0x00, 0x02, 0xff, 0xff, 0x01, 0x02, 1, 2, 3, 4, 5, 6,
        7, 8,
    ];
    for csum in [false, true] {
        let t = Template::new(&outer(Proto::Geneve, csum));
        let mut pool = packet::Pool::new(1);
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&inner()));
        assert!(t.push(&mut p, 5, &opts));
        let f = p.data().to_vec();
        let g = 14 + 20 + 8;
        // Version 0, option length in 4-byte words, the C bit for the critical option.
        assert_eq!(&f[g..g + 8], &[0x05, 0x40, 0x65, 0x58, 0, 0, 5, 0]);
        assert_eq!(&f[g + 8..g + 28], &opts);
        assert_eq!(
            usize::from(u16::from_be_bytes([f[38], f[39]])),
            f.len() - 34
        );
        assert!(csum::ipv4_header_ok(&f[14..34]));
        if csum {
            let s = csum::add(17 + (f.len() - 34) as u32, &f[26..34]);
            assert_eq!(csum::fold(csum::add(s, &f[34..])), 0xffff);
        }
        let r = parse(&f, known).expect("a tunnel packet");
        assert_eq!(r.meta.opts(), &opts);
        assert_eq!(&f[r.hdr_len..], &inner()[..]);
    }
    // VXLAN has no options: they are left out.
    let t = Template::new(&outer(Proto::Vxlan, false));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 5, &opts));
    assert_eq!(p.len(), inner().len() + t.len());
    // Options beyond what a packet's metadata holds: the whole ones that fit are kept.
    let mut many = Vec::new();
    for i in 0..5u8 {
        many.extend_from_slice(&[0, i, 0, 1, i, i, i, i]);
    }
    let t = Template::new(&outer(Proto::Geneve, false));
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 5, &many));
    let r = parse(p.data(), known).expect("a tunnel packet");
    assert_eq!(r.meta.opts(), &many[..32]);
}

#[test]
fn truncations_and_junk_never_parse_out_of_bounds() {
    let t = Template::new(&outer(Proto::Geneve, false));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 7, &[]));
    let f = p.data().to_vec();
    for n in 0..f.len() {
        let _ = parse(&f[..n], known);
    }
    let mut g = f.clone();
    // Geneve option length pointing past the end.
    g[42] = 0x3f;
    assert_eq!(parse(&g, known), None);
    // A fragment is left to the host.
    let mut h = f.clone();
    h[20] = 0x20;
    assert_eq!(parse(&h, known), None);
    // Unknown UDP port.
    assert_eq!(parse(&f, |_| None), None);
}

fn outer6(proto: Proto, csum: bool) -> Outer {
    Outer {
        src: IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
        dst: IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
        tos: Some(0xb8),
        ttl: 17,
        ..outer(proto, csum)
    }
}

/// The UDP checksum of an IPv6 outer frame verifies (pseudo-header with both addresses).
fn udp6_ok(f: &[u8]) -> bool {
    let s = csum::add(17 + (f.len() - 54) as u32, &f[22..54]);
    csum::fold(csum::add(s, &f[54..])) == 0xffff
}

#[test]
fn ipv6_outer_headers_go_out_and_come_back() {
    let opts = [0x01, 0x02, 0x80, 0x01, 0x00, 0x01, 0x00, 0x02];
    for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
        for csum in [false, true] {
            let t = Template::new(&outer6(proto, csum));
            assert!(t.is_ipv6());
            let mut pool = packet::Pool::new(1);
            let mut p = pool.alloc().expect("buffer");
            assert!(p.set_frame(&inner()));
            assert!(t.push(&mut p, 0x12_3456, &opts));
            let f = p.data().to_vec();
            // Ethernet type, version 6, traffic class 0xb8, flow label 0, payload length,
            // next header, hop limit.
            assert_eq!(&f[12..14], &[0x86, 0xdd], "{proto:?}");
            assert_eq!(&f[14..18], &[0x6b, 0x80, 0, 0]);
            assert_eq!(
                usize::from(u16::from_be_bytes([f[18], f[19]])),
                f.len() - 54
            );
            assert_eq!(f[20], if proto == Proto::Gre { 47 } else { 17 });
            assert_eq!(f[21], 17);
            let r = parse(&f, known).expect("a tunnel packet");
            assert_eq!(r.proto, proto);
            assert_eq!(r.meta.id, 0x12_3456);
            assert!(r.meta.is_ipv6());
            assert_eq!((r.meta.src, r.meta.dst), ([0; 4], [0; 4]));
            assert_eq!(
                Ipv6Addr::from(r.meta.ipv6_src),
                Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)
            );
            assert_eq!(
                Ipv6Addr::from(r.meta.ipv6_dst),
                Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)
            );
            assert_eq!((r.meta.tos, r.meta.ttl), (0xb8, 17));
            assert_eq!(&f[r.hdr_len..], &inner()[..]);
            if proto == Proto::Geneve {
                assert_eq!(r.meta.opts(), &opts);
            }
            if proto != Proto::Gre {
                // Filled with or without `csum=true`: OVS 3.1 always sums UDP over IPv6.
                assert_ne!(u16::from_be_bytes([f[60], f[61]]), 0, "{proto:?}");
                assert!(udp6_ok(&f), "{proto:?} csum={csum}");
                assert!(r.meta.flags & F_CSUM != 0);
                // The header `tnl_push` shows marks it so.
                let h = t.header(0x12_3456).expect("fixed TOS");
                assert_eq!(&h[60..62], &[0xff, 0xff]);
            }
        }
    }
}

#[test]
fn ipv6_inherits_the_inner_traffic_class_and_fits_the_longest_options_in_the_headroom() {
    let t = Template::new(&Outer {
        tos: None,
        ..outer6(Proto::Geneve, true)
    });
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    let mut f = inner();
    f[15] = 0x2e;
    assert!(p.set_frame(&f));
    // A received-size frame with the most options a packet carries: 102 bytes of outer
    // headers in front.
    let opts: Vec<u8> = (0..4u8).flat_map(|i| [0, i, 0, 1, i, i, i, i]).collect();
    assert_eq!(opts.len(), packet::TUN_OPTS_MAX);
    assert!(t.push(&mut p, 1, &opts));
    let d = p.data();
    assert_eq!(d.len(), 60 + 102);
    assert_eq!((d[14], d[15] & 0xf0), (0x62, 0xe0));
    assert!(udp6_ok(d));
    assert_eq!(parse(d, known).expect("parses").meta.tos, 0x2e);
}

#[test]
fn ipv6_truncations_and_fragments_stay_with_the_host() {
    let t = Template::new(&outer6(Proto::Vxlan, false));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 7, &[]));
    let f = p.data().to_vec();
    for n in 0..f.len() {
        let _ = parse(&f[..n], known);
    }
    // Payload length past the end.
    let mut g = f.clone();
    g[19] = g[19].wrapping_add(1);
    assert_eq!(parse(&g, known), None);
    // A Fragment header in front of UDP, or an unknown one.
    for next in [44, 50, 59] {
        let mut h = f.clone();
        h[20] = next;
        assert_eq!(parse(&h, known), None, "{next}");
    }
    // Not version 6.
    let mut v = f.clone();
    v[14] = 0x45;
    assert_eq!(parse(&v, known), None);
}

#[test]
fn the_tnl_push_header_is_what_push_writes_with_the_per_packet_words_zero() {
    let mut pool = packet::Pool::new(4);
    for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
        let t = Template::new(&outer(proto, false));
        let h = t.header(0x1092).expect("fixed TOS");
        assert_eq!(h.len(), t.len());
        let mut p = pool.alloc().expect("packet");
        assert!(p.set_frame(&inner()));
        assert!(t.push(&mut p, 0x1092, &[]));
        let d = p.data();
        for (i, (a, b)) in h.iter().zip(d).enumerate() {
            // IPv4 total length and checksum, UDP source port and length (and checksum)
            // are per packet.
            let per_packet = matches!(i, 16 | 17 | 24 | 25)
                || (proto != Proto::Gre && matches!(i, 34..=35 | 38..=41));
            if !per_packet {
                assert_eq!(a, b, "{proto:?} byte {i}");
            } else {
                assert_eq!(*a, 0, "{proto:?} byte {i}");
            }
        }
        pool.free(p);
    }
    // The VNI sits where VXLAN and Geneve carry it; GRE's key word after the flags.
    let v = Template::new(&outer(Proto::Vxlan, false))
        .header(0x1092)
        .expect("fixed TOS");
    assert_eq!(&v[46..50], &[0, 0x10, 0x92, 0]);
    assert_eq!(&v[42..46], &[8, 0, 0, 0]);
    let g = Template::new(&outer(Proto::Gre, false))
        .header(0x1092)
        .expect("fixed TOS");
    assert_eq!(&g[38..42], &[0, 0, 0x10, 0x92]);
    // `csum=true` on a UDP tunnel: the checksum field shows 0xffff, as OVS 3.1's template
    // does (the pushed packet carries the real sum); without it, zero.
    for proto in [Proto::Vxlan, Proto::Geneve] {
        let h = Template::new(&outer(proto, true))
            .header(0x1092)
            .expect("fixed TOS");
        assert_eq!(&h[40..42], &[0xff, 0xff], "{proto:?}");
    }
    assert_eq!(&v[40..42], &[0, 0]);
    // An inherited TOS differs by packet: no single header.
    let mut o = outer(Proto::Vxlan, false);
    o.tos = None;
    assert!(Template::new(&o).header(1).is_none());
}

#[test]
fn the_fixed_offset_push_writes_what_the_general_one_does() {
    // Inner frames: IPv4 UDP of several lengths and TOS, IPv6, and a non-IP frame.
    let mut frames = Vec::new();
    for (len, tos) in [(60, 0u8), (61, 0xb8), (1514, 3)] {
        let mut f = inner();
        f.resize(len, 0x5a);
        f[15] = tos;
        f[34..38].copy_from_slice(&(len as u32 * 7919).to_be_bytes());
        frames.push(f);
    }
    let mut v6 = inner();
    v6[12..16].copy_from_slice(&[0x86, 0xdd, 0x6a, 0x50]);
    frames.push(v6);
    let mut arp = inner();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    frames.push(arp);
    for proto in [Proto::Vxlan, Proto::Geneve] {
        for tos in [Some(0x10), None] {
            let fast = Template::new(&Outer {
                tos,
                ..outer(proto, false)
            });
            assert!(fast.v4_udp);
            let general = Template {
                v4_udp: false,
                ..fast.clone()
            };
            for f in &frames {
                let mut pool = packet::Pool::new(2);
                let (mut a, mut b) = (pool.alloc().expect("a"), pool.alloc().expect("b"));
                assert!(a.set_frame(f) && b.set_frame(f));
                assert!(fast.push(&mut a, 0xab_cdef, &[]));
                assert!(general.push(&mut b, 0xab_cdef, &[]));
                assert_eq!(a.data(), b.data(), "{proto:?} tos {tos:?}");
            }
        }
    }
    // Checksums, IPv6 and GRE keep the general push.
    assert!(!Template::new(&outer(Proto::Vxlan, true)).v4_udp);
    assert!(!Template::new(&outer(Proto::Gre, false)).v4_udp);
    assert!(!Template::new(&outer6(Proto::Vxlan, false)).v4_udp);
}

#[test]
fn geneve_oam_sets_the_o_bit_and_reads_back() {
    let mut pool = packet::Pool::new(2);
    for csum in [false, true] {
        let t = Template::new(&outer(Proto::Geneve, csum));
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&inner()));
        assert!(t.push_flagged(&mut p, 5, &[], true));
        let f = p.data().to_vec();
        assert_eq!(f[43] & 0x80, 0x80, "O bit");
        let r = parse(&f, known).expect("a tunnel packet");
        assert!(r.meta.flags & F_OAM != 0);
        if csum {
            let s = csum::add(17 + (f.len() - 34) as u32, &f[26..34]);
            assert_eq!(
                csum::fold(csum::add(s, &f[34..])),
                0xffff,
                "sum covers the bit"
            );
        }
        // Without it, the same push as before; VXLAN has no such bit.
        let mut q = pool.alloc().expect("buffer");
        assert!(q.set_frame(&inner()));
        assert!(t.push_flagged(&mut q, 5, &[], false));
        assert_eq!(q.data()[43] & 0x80, 0);
        pool.free(p);
        pool.free(q);
    }
    let v = Template::new(&outer(Proto::Vxlan, false));
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(v.push_flagged(&mut p, 5, &[], true));
    assert_eq!(&p.data()[42..46], &[8, 0, 0, 0]);
    pool.free(p);
}

#[test]
fn vxlan_group_policy_goes_out_and_comes_back_with_the_checksum_right() {
    let mut pool = packet::Pool::new(1);
    for o in [
        outer(Proto::Vxlan, false),
        outer(Proto::Vxlan, true),
        outer6(Proto::Vxlan, false),
    ] {
        let t = Template::new(&o);
        let l4 = if t.is_ipv6() { 54 } else { 34 };
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&inner()));
        assert!(t.push(&mut p, 0x1234, &[]));
        // Reserved flag bits are not sent: only D (0x40) and A (0x08).
        t.set_gbp(&mut p, 0xbeef, 0x49);
        let f = p.data().to_vec();
        assert_eq!(f[l4 + 8..l4 + 12], [0x88, 0x48, 0xbe, 0xef]);
        if t.is_ipv6() {
            assert!(udp6_ok(&f));
        } else if o.csum {
            let s = csum::add(17 + (f.len() - 34) as u32, &f[26..34]);
            assert_eq!(csum::fold(csum::add(s, &f[34..])), 0xffff);
        } else {
            assert_eq!(f[40..42], [0, 0]);
        }
        let r = parse(&f, known).expect("a tunnel packet");
        assert!(r.gbp);
        assert_eq!(
            (r.meta.id, r.meta.gbp_id, r.meta.gbp_flags),
            (0x1234, 0xbeef, 0x48)
        );
        assert_eq!(&f[r.hdr_len..], &inner()[..]);
        // `tnl_push` shows the same header word.
        let h = t.header_gbp(0x1234, 0xbeef, 0x48).expect("fixed TOS");
        assert_eq!(h[l4 + 8..l4 + 12], f[l4 + 8..l4 + 12]);
        pool.free(p);
    }
    // Nothing to send: no G bit (as Linux), and a plain header reads as no group policy.
    let t = Template::new(&outer(Proto::Vxlan, true));
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 7, &[]));
    let before = p.data().to_vec();
    t.set_gbp(&mut p, 0, 0x01);
    assert_eq!(p.data(), &before[..]);
    let r = parse(&before, known).expect("a tunnel packet");
    assert!(!r.gbp);
    assert_eq!((r.meta.gbp_id, r.meta.gbp_flags), (0, 0));
    assert_eq!(t.header_gbp(7, 0, 0), t.header(7));
    pool.free(p);
    // Another protocol has no such header.
    let g = Template::new(&outer(Proto::Geneve, false));
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(g.push(&mut p, 7, &[]));
    let before = p.data().to_vec();
    g.set_gbp(&mut p, 5, 0x08);
    assert_eq!(p.data(), &before[..]);
    pool.free(p);
}

#[test]
fn a_vxlan_header_with_other_flags_is_no_tunnel_packet() {
    let t = Template::new(&outer(Proto::Vxlan, false));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 7, &[]));
    let f = p.data().to_vec();
    // G and I with reserved bits in the flags byte: the D and A bits only are read.
    let mut g = f.clone();
    g[42..46].copy_from_slice(&[0x88, 0xff, 0, 9]);
    let r = parse(&g, known).expect("group policy");
    assert!(r.gbp);
    assert_eq!((r.meta.gbp_id, r.meta.gbp_flags), (9, 0x48));
    // Other bits in the first byte, or policy bits without G: refused.
    for bad in [
        [0x0c, 0, 0, 0],
        [0x8c, 0, 0, 0],
        [0x08, 0x48, 0, 0],
        [0x08, 0, 0, 1],
    ] {
        let mut b = f.clone();
        b[42..46].copy_from_slice(&bad);
        assert_eq!(parse(&b, known), None, "{bad:x?}");
    }
    pool.free(p);
}

#[test]
fn ipv6_extension_headers_before_udp_are_popped_with_the_outer_headers() {
    let t = Template::new(&outer6(Proto::Vxlan, false));
    let mut pool = packet::Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    assert!(p.set_frame(&inner()));
    assert!(t.push(&mut p, 7, &[]));
    let f = p.data().to_vec();
    // Hop-by-hop options (8 bytes), a routing header (24), AH (12 + 4 of ICV), then UDP.
    let mut ext = vec![43, 0, 1, 4, 0, 0, 0, 0];
    ext.extend([
        51, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    ext.extend([17, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut g = f[..54].to_vec();
    g[20] = 0;
    g.extend(&ext);
    g.extend(&f[54..]);
    let plen = u16::from_be_bytes([g[18], g[19]]) + ext.len() as u16;
    g[18..20].copy_from_slice(&plen.to_be_bytes());
    let r = parse(&g, known).expect("a tunnel packet");
    assert_eq!(r.hdr_len, f.len() - inner().len() + ext.len());
    assert_eq!(&g[r.hdr_len..], &inner()[..]);
    assert_eq!(r.meta.id, 7);
    // A header running past the payload is no tunnel packet.
    let mut h = g.clone();
    h[55] = 200;
    assert_eq!(parse(&h, known), None);
    for n in 54..g.len() {
        let _ = parse(&g[..n], known);
    }
}

#[test]
fn ip_options_or_a_bad_header_checksum_are_refused_not_left_to_the_host() {
    for proto in [Proto::Vxlan, Proto::Geneve, Proto::Gre] {
        let t = Template::new(&outer(proto, false));
        let mut pool = packet::Pool::new(1);
        let mut p = pool.alloc().expect("buffer");
        assert!(p.set_frame(&inner()));
        assert!(t.push(&mut p, 7, &[]));
        let f = p.data().to_vec();
        assert!(parse(&f, known).is_some(), "{proto:?}");
        assert!(!refused_ipv4(&f, known, true), "{proto:?}");
        // A bad header checksum.
        let mut bad = f.clone();
        bad[24] ^= 0x01;
        assert_eq!(parse(&bad, known), None, "{proto:?}");
        assert!(refused_ipv4(&bad, known, true), "{proto:?}");
        // Not to a tunnel (an unknown UDP port, GRE without a GRE port): the host's.
        assert!(!refused_ipv4(&bad, |_| None, false), "{proto:?}");
        // Four bytes of options (NOP, NOP, NOP, End), the checksum right.
        let mut opt = f[..34].to_vec();
        opt.extend_from_slice(&[1, 1, 1, 0]);
        opt.extend_from_slice(&f[34..]);
        opt[14] = 0x46;
        let total = u16::from_be_bytes([opt[16], opt[17]]) + 4;
        opt[16..18].copy_from_slice(&total.to_be_bytes());
        opt[24..26].copy_from_slice(&[0, 0]);
        let c = csum::checksum(&opt[14..38]);
        opt[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(csum::ipv4_header_ok(&opt[14..38]));
        assert_eq!(parse(&opt, known), None, "{proto:?}");
        assert!(refused_ipv4(&opt, known, true), "{proto:?}");
        // A fragment stays with the host, bad checksum or not.
        let mut frag = bad.clone();
        frag[20] |= 0x20;
        assert!(!refused_ipv4(&frag, known, true), "{proto:?}");
        for n in 0..f.len() {
            let _ = refused_ipv4(&bad[..n], known, true);
        }
    }
}
