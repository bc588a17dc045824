//! Fuzzes the reading of tunnel packets' outer headers (VXLAN, Geneve, GRE over IPv4 or
//! IPv6), which every
//! frame an underlay bridge sends to its host goes through while tunnel ports exist: it must
//! never panic, the header length it reports must leave an inner Ethernet frame (or, for GRE
//! carrying an L3 packet, the L3 packet, which `pop` shows behind a zero-MAC Ethernet header
//! of its EtherType), and re-encapsulating that frame with the key, addresses and Geneve
//! options read (an L3 one as a `legacy_l3` port does) must read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::tunnel::wire::{parse, pop, refused_ipv4, Outer, Proto, Template};

fn known(p: u16) -> Option<Proto> {
    match p {
        4789 => Some(Proto::Vxlan),
        6081 => Some(Proto::Geneve),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    // Most inputs get their outer IPv4 header checksum made right (bit 1 of the first byte
    // clear): `parse` refuses a header that does not verify, and the fuzzer would seldom
    // reach past it.
    let mut buf = data.to_vec();
    if buf.len() >= 34 && buf[12..14] == [0x08, 0x00] && buf[0] & 2 == 0 {
        let end = 14 + usize::from(buf[14] & 0x0f) * 4;
        if end >= 34 && end <= buf.len() {
            buf[24..26].copy_from_slice(&[0, 0]);
            let c = packet::csum::checksum(&buf[14..end]);
            buf[24..26].copy_from_slice(&c.to_be_bytes());
        }
    }
    let data = &buf[..];
    let refused = refused_ipv4(data, known, true);
    let Some(r) = parse(data, known) else {
        return;
    };
    assert!(!refused, "a refused frame never parses");
    let mut pool = packet::Pool::new(1);
    let Some(mut p) = pool.alloc() else {
        return;
    };
    if let Some(et) = r.l3 {
        assert!(r.proto == Proto::Gre && et >= 0x600 && et != 0x6558);
        assert!(r.hdr_len <= data.len());
        // Popped, the L3 packet is shown behind a zero-MAC Ethernet header (a frame
        // longer than a buffer never reaches a port).
        if !p.set_frame(data) {
            return;
        }
        assert!(pop(&mut p, &r));
        assert_eq!(&p.data()[..12], &[0; 12]);
        assert_eq!(p.data()[12..14], et.to_be_bytes());
        assert_eq!(&p.data()[14..], &data[r.hdr_len..]);
        let _ = packet::flow::extract(p.data(), 1);
    } else {
        assert!(r.hdr_len + 14 <= data.len());
        let _ = packet::flow::extract(&data[r.hdr_len..], 1);
    }
    let inner = &data[r.hdr_len..];
    // The outer family is the frame's: an IPv6 one keeps its addresses in the IPv6 pair.
    let ipv6 = data[12..14] == [0x86, 0xdd];
    if ipv6 {
        assert_eq!((r.meta.src, r.meta.dst), ([0; 4], [0; 4]));
    } else {
        assert_eq!((r.meta.ipv6_src, r.meta.ipv6_dst), ([0; 16], [0; 16]));
    }
    let (src, dst): (std::net::IpAddr, std::net::IpAddr) = if ipv6 {
        (r.meta.ipv6_src.into(), r.meta.ipv6_dst.into())
    } else {
        (r.meta.src.into(), r.meta.dst.into())
    };
    let t = Template::new(&Outer {
        proto: r.proto,
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        src,
        dst,
        dst_port: if r.proto == Proto::Gre { 0 } else { r.dst_port },
        tos: Some(r.meta.tos),
        ttl: r.meta.ttl.max(1),
        df: true,
        csum: data.first().is_some_and(|b| b & 1 == 1),
        gre_key: true,
    });
    // An L3 payload goes back in as a legacy_l3 port sends it: from the frame `pop` made.
    // (Not a VLAN EtherType: the header `pop` made would read as a tag.)
    let pushed = if let Some(et) = r.l3 {
        !matches!(et, 0x8100 | 0x88a8) && t.push_l3(&mut p, r.meta.id)
    } else {
        p.set_frame(inner) && t.push(&mut p, r.meta.id, r.meta.opts())
    };
    if pushed {
        let again = parse(p.data(), known).expect("a frame we encapsulated parses");
        assert_eq!((again.meta.id, again.l3), (r.meta.id, r.l3));
        if r.proto == Proto::Geneve {
            // The whole options kept come back the same.
            assert_eq!(again.meta.opts(), r.meta.opts());
        }
        assert_eq!((again.meta.src, again.meta.dst), (r.meta.src, r.meta.dst));
        assert_eq!(
            (again.meta.ipv6_src, again.meta.ipv6_dst),
            (r.meta.ipv6_src, r.meta.ipv6_dst)
        );
        assert_eq!(&p.data()[again.hdr_len..], inner);
    }
});
