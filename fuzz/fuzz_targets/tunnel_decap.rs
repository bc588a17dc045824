//! Fuzzes the reading of tunnel packets' outer headers (VXLAN, Geneve, GRE over IPv4 or
//! IPv6), which every
//! frame an underlay bridge sends to its host goes through while tunnel ports exist: it must
//! never panic, the header length it reports must leave an inner Ethernet frame, and
//! re-encapsulating that frame with the key, addresses and Geneve options read must read back
//! the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdev::tunnel::wire::{parse, refused_ipv4, Outer, Proto, Template};

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
    assert!(r.hdr_len + 14 <= data.len());
    let inner = &data[r.hdr_len..];
    let _ = packet::flow::extract(inner, 1);
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
    let mut pool = packet::Pool::new(1);
    let Some(mut p) = pool.alloc() else {
        return;
    };
    if p.set_frame(inner) && t.push(&mut p, r.meta.id, r.meta.opts()) {
        let again = parse(p.data(), known).expect("a frame we encapsulated parses");
        assert_eq!(again.meta.id, r.meta.id);
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
