//! Fuzzes the flow extractor (and the checksum helpers it feeds) on arbitrary frames.
//!
//! Input: the first byte picks the ingress port, the rest is the frame. Besides "never
//! panics", it checks invariants that must hold for any bytes: extraction is deterministic
//! and its fast path agrees with the general parse, the word image round-trips, padding
//! stays zero, offsets lie inside the frame and in order, a frame cut after its L2 headers
//! keeps its L2 fields, a frame cut inside its IP datagram keeps exactly its L2 fields, and
//! a checksum written by `set_l4_checksum` verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packet::csum;
use packet::flow::{extract, extract_into, extract_into_general, FlowKey, MAX_VLAN_TAGS};

fn l2_only(k: &FlowKey) -> FlowKey {
    FlowKey {
        in_port: k.in_port,
        dl_dst: k.dl_dst,
        dl_src: k.dl_src,
        vlan_tpid: k.vlan_tpid,
        vlan_tci: k.vlan_tci,
        dl_type: k.dl_type,
        ..FlowKey::ZERO
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&port, frame)) = data.split_first() else {
        return;
    };
    let port = u32::from(port);
    let mut k = FlowKey::default();
    let offs = extract_into(&mut k, frame, port);
    assert_eq!(extract(frame, port), k);
    // The fast path for plain IPv4 gives what the general parse gives, from any prior key.
    for tags in 1..=MAX_VLAN_TAGS {
        let mut fast = FlowKey::from_words(&[!0; packet::FLOW_KEY_WORDS]);
        let mut general = fast;
        let fo = packet::flow::extract_into_with(&mut fast, frame, port, tags);
        let go = extract_into_general(&mut general, frame, port, tags);
        assert_eq!((fast, fo), (general, go));
    }
    assert_eq!(FlowKey::from_words(&k.to_words()), k);
    assert_eq!(k.in_port, port);
    assert_eq!((k.pad_l2, k.pad_l3, k.pad_l4, k.pad_ct), (0, 0, 0, 0));
    // Tunnel metadata comes with the packet, never from the frame's bytes.
    assert_eq!((k.tun_src, k.tun_dst), ([0; 4], [0; 4]));
    assert_eq!((k.tun_flags, k.tun_gbp_id, k.tun_gbp_flags), (0, 0, 0));
    assert!(k.mpls_n <= 4);
    let _ = k.hash(7);
    let _ = k.to_string();

    let pos = |o: Option<u16>| o.map(usize::from);
    for o in [offs.l2_5, offs.l3, offs.l4].into_iter().flatten() {
        assert!(usize::from(o) <= frame.len());
    }
    if let (Some(a), Some(b)) = (pos(offs.l2_5), pos(offs.l3)) {
        assert!(a <= b);
    }
    if let Some(l4) = pos(offs.l4) {
        assert!(pos(offs.l3).is_some_and(|l3| l3 < l4));
    }

    // Truncated copies. L2 fields depend only on the bytes before `l2_5`; a cut inside an
    // accepted IP datagram loses all of L3 and L4 (the IP length no longer fits).
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let ip_end = match (k.dl_type, pos(offs.l3)) {
        (0x0800, Some(l3)) => be16(l3 + 2).map(|len| l3 + len),
        (0x86dd, Some(l3)) => be16(l3 + 4).map(|len| l3 + 40 + len),
        _ => None,
    };
    for cut in [0, 13, frame.len() / 2, frame.len().saturating_sub(1)]
        .into_iter()
        .chain(pos(offs.l2_5))
        .chain(pos(offs.l3))
        .chain(pos(offs.l4))
        .chain(ip_end.map(|e| e - 1))
    {
        let Some(short) = frame.get(..cut) else {
            continue;
        };
        let t = extract(short, port);
        let _ = t.to_string();
        if cut < 14 {
            assert_eq!(
                t,
                FlowKey {
                    in_port: port,
                    ..FlowKey::ZERO
                }
            );
        }
        if pos(offs.l2_5).is_some_and(|l2_5| cut >= l2_5) {
            assert_eq!(l2_only(&t), l2_only(&k));
        }
        if let (Some(l3), Some(end)) = (pos(offs.l3), ip_end) {
            if cut >= l3 && cut < end {
                assert_eq!(t, l2_only(&k));
            }
        }
    }

    // Checksums: whatever set_l4_checksum writes must verify.
    if let (Some(l3), Some(l4)) = (pos(offs.l3), pos(offs.l4)) {
        let field = match k.nw_proto {
            6 => 16,
            17 => 6,
            _ => 2,
        };
        let mut copy = frame.to_vec();
        let pseudo = k.nw_proto != 1 || k.dl_type == 0x86dd;
        if csum::set_l4_checksum(&mut copy, l3, l4, field, k.nw_proto, pseudo) {
            assert!(csum::l4_checksum_ok(&copy, l3, l4, k.nw_proto, pseudo));
        }
        // CHECKSUM_PARTIAL: the field held a pseudo-header sum; the completed checksum plus
        // that sum must verify.
        let mut copy = frame.to_vec();
        let seed = frame
            .get(l4 + field..l4 + field + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]));
        if csum::complete_partial(&mut copy, l4, field) {
            let seed = u32::from(seed.expect("field inside the frame"));
            assert_eq!(csum::fold(csum::add(seed, &copy[l4..])), 0xffff);
        }
    }
});
