//! Exact-byte tests of the flow extractor: hand-built frames for the protocols the
//! etherparse oracle cannot cover (ARP, MPLS, QinQ with 802.1ad, SCTP, Neighbor Discovery,
//! 802.3/SNAP) and for the edge cases (IPv6 extension-header order bits, fragments,
//! truncation, malformed options).

use packet::csum;
use packet::flow::*;

const DST: [u8; 6] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55];
const SRC: [u8; 6] = [0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb];

fn eth(ty: u16) -> Vec<u8> {
    let mut v = DST.to_vec();
    v.extend_from_slice(&SRC);
    v.extend_from_slice(&ty.to_be_bytes());
    v
}

/// IPv4 header (IHL 5 unless `opts` given) for an L4 payload of `l4_len` bytes.
fn ipv4(proto: u8, frag: u16, opts: &[u8], l4_len: usize) -> Vec<u8> {
    let ihl = 5 + opts.len() / 4;
    let total = (ihl * 4 + l4_len) as u16;
    let mut v = vec![0x40 | ihl as u8, 0xb9];
    v.extend_from_slice(&total.to_be_bytes());
    v.extend_from_slice(&[0x12, 0x34]);
    v.extend_from_slice(&frag.to_be_bytes());
    v.extend_from_slice(&[63, proto, 0, 0, 192, 168, 1, 10, 10, 0, 0, 1]);
    v.extend_from_slice(opts);
    let c = csum::checksum(&v);
    v[10..12].copy_from_slice(&c.to_be_bytes());
    v
}

const S6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const D6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// IPv6 header: traffic class 0xa5, flow label 0x12345, hop limit 255.
fn ipv6(nh: u8, plen: usize) -> Vec<u8> {
    let mut v = vec![0x6a, 0x51, 0x23, 0x45];
    v.extend_from_slice(&(plen as u16).to_be_bytes());
    v.extend_from_slice(&[nh, 255]);
    v.extend_from_slice(&S6);
    v.extend_from_slice(&D6);
    v
}

fn frame(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn base(k: &FlowKey) -> FlowKey {
    FlowKey {
        in_port: k.in_port,
        dl_dst: DST,
        dl_src: SRC,
        ..FlowKey::ZERO
    }
}

#[test]
fn arp_request() {
    let arp = [
        0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01, // eth/ipv4, request
        0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 192, 168, 1, 10, // sender
        0, 0, 0, 0, 0, 0, 192, 168, 1, 1, // target
    ];
    let f = frame(&[&eth(0x0806), &arp, &[0; 18]]);
    let k = extract(&f, 3);
    let want = FlowKey {
        in_port: 3,
        dl_type: 0x0806,
        nw_proto: 1,
        nw_src: [192, 168, 1, 10],
        nw_dst: [192, 168, 1, 1],
        arp_sha: SRC,
        ..base(&k)
    };
    assert_eq!(k, want);
    assert_eq!(
        k.to_string(),
        "in_port=3,dl_src=66:77:88:99:aa:bb,dl_dst=00:11:22:33:44:55,dl_type=0x0806,\
         arp_spa=192.168.1.10,arp_tpa=192.168.1.1,arp_op=1,arp_sha=66:77:88:99:aa:bb,\
         arp_tha=00:00:00:00:00:00"
    );
    // Non-Ethernet hardware type, big opcode, truncation.
    let mut bad = arp;
    bad[1] = 6;
    assert_eq!(extract(&frame(&[&eth(0x0806), &bad]), 3).nw_src, [0; 4]);
    let mut big = arp;
    big[6] = 1;
    let kb = extract(&frame(&[&eth(0x0806), &big]), 3);
    assert_eq!((kb.nw_proto, kb.nw_src), (0, [192, 168, 1, 10]));
    assert_eq!(
        extract(&frame(&[&eth(0x0806), &arp[..27]]), 3),
        FlowKey {
            dl_type: 0x0806,
            ..want_l2(3)
        }
    );
    // RARP uses the same layout.
    assert_eq!(
        extract(&frame(&[&eth(0x8035), &arp]), 3).nw_dst,
        [192, 168, 1, 1]
    );
}

fn want_l2(in_port: u32) -> FlowKey {
    FlowKey {
        in_port,
        dl_dst: DST,
        dl_src: SRC,
        ..FlowKey::ZERO
    }
}

#[test]
fn qinq_and_single_tags() {
    let udp = [0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0];
    let ip = ipv4(17, 0, &[], 8);
    // 802.1ad outer (PCP 5, DEI 1, VID 100) + 802.1Q inner (PCP 0, VID 200).
    let f = frame(&[
        &eth(0x88a8),
        &[0xb0, 0x64, 0x81, 0x00],
        &[0x00, 0xc8, 0x08, 0x00],
        &ip,
        &udp,
    ]);
    let k = extract(&f, 1);
    assert_eq!(k.vlan_tpid, [0x88a8, 0x8100]);
    // DEI is replaced by the present bit.
    assert_eq!(k.vlan_tci, [0xb064, 0x10c8]);
    assert_eq!(k.dl_type, 0x0800);
    assert_eq!((k.tp_src, k.tp_dst, k.nw_proto), (12345, 53, 17));
    assert_eq!(
        k.to_string(),
        "in_port=1,vlan_tpid=0x88a8,dl_vlan=100,dl_vlan_pcp=5,dl_vlan1=200,dl_vlan_pcp1=0,\
         dl_src=66:77:88:99:aa:bb,dl_dst=00:11:22:33:44:55,dl_type=0x0800,nw_src=192.168.1.10,\
         nw_dst=10.0.0.1,nw_proto=17,nw_tos=184,nw_ecn=1,nw_ttl=63,nw_frag=no,tp_src=12345,tp_dst=53"
    );
    let o = extract_into(&mut FlowKey::default(), &f, 1);
    assert_eq!(
        o,
        Offsets {
            l2_5: Some(22),
            l3: Some(22),
            l4: Some(42)
        }
    );

    // VID 0 with the present bit differs from no tag.
    let f0 = frame(&[&eth(0x8100), &[0x00, 0x00, 0x08, 0x00], &ip, &udp]);
    let k0 = extract(&f0, 1);
    assert_eq!((k0.vlan_tpid, k0.vlan_tci), ([0x8100, 0], [0x1000, 0]));

    // A third tag is not parsed: dl_type is its TPID and there is no L3.
    let f3 = frame(&[
        &eth(0x88a8),
        &[0, 1, 0x81, 0x00],
        &[0, 2, 0x81, 0x00],
        &[0, 3, 0x08, 0x00],
        &ip,
    ]);
    let k3 = extract(&f3, 1);
    assert_eq!((k3.dl_type, k3.nw_proto), (0x8100, 0));
    assert_eq!(k3.vlan_tci, [0x1001, 0x1002]);

    // A tag cut short is not recorded; dl_type stays the TPID.
    let kt = extract(&frame(&[&eth(0x8100), &[0, 5, 0x08]]), 1);
    assert_eq!((kt.dl_type, kt.vlan_tci), (0x8100, [0, 0]));
}

#[test]
fn mpls_stacks() {
    // Two labels: 1000 (TC 3, TTL 64) and 2000 (bottom, TTL 63), then an IPv4 header that
    // must not be looked at.
    let l1 = (1000u32 << 12) | (3 << 9) | 64;
    let l2 = (2000u32 << 12) | (1 << 8) | 63;
    let f = frame(&[
        &eth(0x8847),
        &l1.to_be_bytes(),
        &l2.to_be_bytes(),
        &ipv4(6, 0, &[], 0),
    ]);
    let k = extract(&f, 2);
    assert_eq!(
        k,
        FlowKey {
            dl_type: 0x8847,
            mpls_n: 2,
            mpls_lse: [l1, l2, 0, 0],
            ..want_l2(2)
        }
    );
    assert_eq!(
        k.to_string(),
        "in_port=2,dl_src=66:77:88:99:aa:bb,dl_dst=00:11:22:33:44:55,dl_type=0x8847,\
         mpls_label=1000,mpls_tc=3,mpls_ttl=64,mpls_bos=0,mpls_lse1=0x007d013f"
    );
    // Five labels: the first four are kept (the fourth without BoS says there is more).
    let lab = |n: u32, bos: bool| (n << 12) | (u32::from(bos) << 8) | 1;
    let mut f5 = eth(0x8848);
    for i in 0..5 {
        f5.extend_from_slice(&lab(i + 16, i == 4).to_be_bytes());
    }
    let k5 = extract(&f5, 2);
    assert_eq!(k5.mpls_n, 4);
    assert_eq!(
        k5.mpls_lse,
        [
            lab(16, false),
            lab(17, false),
            lab(18, false),
            lab(19, false)
        ]
    );
    // Truncated in the second entry: one entry kept.
    let kt = extract(&f5[..14 + 6], 2);
    assert_eq!((kt.mpls_n, kt.mpls_lse), (1, [lab(16, false), 0, 0, 0]));
    // Empty stack.
    assert_eq!(extract(&f5[..14], 2).mpls_n, 0);
}

#[test]
fn ipv4_options_fragments_and_truncation() {
    let tcp = [
        0x01, 0xbb, 0xc3, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0xff, 0xff, 0, 0, 0, 0,
    ];
    let opts = [0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00]; // router alert, nop x3, eol
    let ip = ipv4(6, 0x4000, &opts, tcp.len()); // DF set
    let f = frame(&[&eth(0x0800), &ip, &tcp, &[0xee; 6]]);
    let k = extract(&f, 7);
    let want = FlowKey {
        dl_type: 0x0800,
        nw_src: [192, 168, 1, 10],
        nw_dst: [10, 0, 0, 1],
        nw_proto: 6,
        nw_tos: 0xb9,
        nw_ttl: 63,
        tp_src: 443,
        tp_dst: 50000,
        tcp_flags: 0x012,
        ..want_l2(7)
    };
    assert_eq!(k, want);
    assert_eq!(
        extract_into(&mut FlowKey::default(), &f, 7).l4,
        Some(14 + 28)
    );

    // First fragment (MF, offset 0): L4 parsed, nw_frag=first.
    let first = frame(&[&eth(0x0800), &ipv4(6, 0x2000, &[], 20), &tcp]);
    let kf = extract(&first, 7);
    assert_eq!((kf.nw_frag, kf.tp_src), (NW_FRAG_ANY, 443));
    assert!(kf.to_string().contains("nw_frag=first,tp_src=443"));
    // Later fragment: no L4 even though bytes are there.
    let later = frame(&[&eth(0x0800), &ipv4(6, 0x00b9, &[], 20), &tcp]);
    let kl = extract(&later, 7);
    assert_eq!(
        (kl.nw_frag, kl.tp_src, kl.tcp_flags),
        (NW_FRAG_ANY | NW_FRAG_LATER, 0, 0)
    );
    assert!(kl.to_string().ends_with("nw_frag=later"));
    assert_eq!(extract_into(&mut FlowKey::default(), &later, 7).l4, None);

    // Truncated IPv4 header: dl_type set, every L3 field zero.
    let l2only = FlowKey {
        dl_type: 0x0800,
        ..want_l2(7)
    };
    assert_eq!(extract(&f[..14 + 19], 7), l2only);
    // Total length longer than the frame.
    assert_eq!(extract(&f[..f.len() - 7], 7), l2only);
    // IHL < 5, IHL past total length, wrong version.
    for (byte, val) in [(14, 0x44u8), (14, 0x4f), (14, 0x65)] {
        let mut g = f.clone();
        g[byte] = val;
        assert_eq!(extract(&g, 7), l2only, "byte {byte:#x}");
    }
    // TCP data offset below 5 or past the segment: ports are not trusted.
    for doff in [0x40u8, 0xf0] {
        let mut t = tcp;
        t[12] = doff;
        let g = frame(&[&eth(0x0800), &ip, &t]);
        let kg = extract(&g, 7);
        assert_eq!((kg.nw_proto, kg.tp_src, kg.tcp_flags), (6, 0, 0));
    }
}

#[test]
fn icmp_types_and_families() {
    let icmp = [8, 0, 0, 0, 0, 1, 0, 1];
    let k = extract(&frame(&[&eth(0x0800), &ipv4(1, 0, &[], 8), &icmp]), 1);
    assert_eq!((k.tp_src, k.tp_dst), (8, 0));
    assert!(k.to_string().ends_with("icmp_type=8,icmp_code=0"));
    // Fewer than 8 ICMP bytes: not parsed.
    let k = extract(&frame(&[&eth(0x0800), &ipv4(1, 0, &[], 4), &icmp[..4]]), 1);
    assert_eq!((k.nw_proto, k.tp_src), (1, 0));
    // ICMPv6 inside IPv4 is not ICMP.
    let k = extract(
        &frame(&[
            &eth(0x0800),
            &ipv4(58, 0, &[], 8),
            &[135, 0, 0, 0, 0, 0, 0, 0],
        ]),
        1,
    );
    assert_eq!((k.nw_proto, k.tp_src), (58, 0));
    // ICMPv4 inside IPv6 is not ICMP either.
    let k = extract(&frame(&[&eth(0x86dd), &ipv6(1, 8), &icmp]), 1);
    assert_eq!((k.nw_proto, k.tp_src), (1, 0));
}

#[test]
fn sctp_ports() {
    let sctp = [0x0b, 0x59, 0x0b, 0x5a, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb];
    let k = extract(
        &frame(&[&eth(0x0800), &ipv4(132, 0, &[], sctp.len()), &sctp]),
        1,
    );
    assert_eq!((k.nw_proto, k.tp_src, k.tp_dst), (132, 2905, 2906));
    assert!(k.to_string().ends_with(
        "nw_proto=132,nw_tos=184,nw_ecn=1,nw_ttl=63,nw_frag=no,tp_src=2905,tp_dst=2906"
    ));
    let k6 = extract(&frame(&[&eth(0x86dd), &ipv6(132, 12), &sctp[..12]]), 1);
    assert_eq!((k6.tp_src, k6.tp_dst), (2905, 2906));
    // An SCTP common header cut short.
    let k = extract(
        &frame(&[&eth(0x0800), &ipv4(132, 0, &[], 11), &sctp[..11]]),
        1,
    );
    assert_eq!((k.nw_proto, k.tp_src), (132, 0));
}

#[test]
fn ipv6_base_fields() {
    let udp = [0x00, 0x35, 0x30, 0x39, 0, 8, 0, 0];
    let f = frame(&[&eth(0x86dd), &ipv6(17, 8), &udp, &[0; 4]]);
    let k = extract(&f, 4);
    let want = FlowKey {
        dl_type: 0x86dd,
        ipv6_src: S6,
        ipv6_dst: D6,
        ipv6_label: 0x12345,
        nw_tos: 0xa5,
        nw_ttl: 255,
        nw_proto: 17,
        tp_src: 53,
        tp_dst: 12345,
        ..want_l2(4)
    };
    assert_eq!(k, want);
    assert_eq!(
        k.to_string(),
        "in_port=4,dl_src=66:77:88:99:aa:bb,dl_dst=00:11:22:33:44:55,dl_type=0x86dd,\
         ipv6_src=2001:db8::1,ipv6_dst=fe80::2,ipv6_label=0x12345,nw_proto=17,nw_tos=164,\
         nw_ecn=1,nw_ttl=255,nw_frag=no,tp_src=53,tp_dst=12345"
    );
    // Payload length past the frame: the whole IPv6 header is rejected.
    let l2only = FlowKey {
        dl_type: 0x86dd,
        ..want_l2(4)
    };
    assert_eq!(
        extract(&frame(&[&eth(0x86dd), &ipv6(17, 9), &udp]), 4),
        l2only
    );
    assert_eq!(extract(&f[..14 + 39], 4), l2only);
}

/// An 8-byte options-style extension header (hop-by-hop, destination, routing).
fn ext8(nh: u8) -> [u8; 8] {
    [nh, 0, 1, 4, 0, 0, 0, 0]
}

#[test]
fn ipv6_extension_chain_in_order() {
    let tcp = [
        0, 22, 0x9c, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0, 0, 0, 0, 0, 0,
    ];
    // hop -> dest -> routing (16 bytes) -> fragment (offset 0, M) -> AH (16 bytes) -> dest -> TCP
    let routing = [60 - 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]; // nh patched below
    let mut routing = routing;
    routing[0] = 44;
    let frag = [51, 0, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef];
    let ah = [60, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0xaa, 0xbb, 0xcc, 0xdd];
    let exts = frame(&[&ext8(60), &ext8(43), &routing, &frag, &ah, &ext8(6)]);
    let f = frame(&[&eth(0x86dd), &ipv6(0, exts.len() + tcp.len()), &exts, &tcp]);
    let mut k = FlowKey::ZERO;
    let o = extract_into(&mut k, &f, 1);
    assert_eq!(
        k.ipv6_exthdr,
        EXTHDR_HOP | EXTHDR_DEST | EXTHDR_ROUTER | EXTHDR_FRAG | EXTHDR_AUTH
    );
    assert_eq!(
        (k.nw_proto, k.nw_frag, k.tp_src, k.tcp_flags),
        (6, NW_FRAG_ANY, 22, 2)
    );
    assert_eq!(o.l4, Some((14 + 40 + exts.len()) as u16));
    assert!(k
        .to_string()
        .contains(",nw_frag=first,ipv6_exthdr=0x07c,tp_src=22,"));
}

#[test]
fn ipv6_extension_order_bits() {
    let udp = [0, 1, 0, 2, 0, 8, 0, 0];
    let run = |first: u8, exts: &[&[u8]]| {
        let e = exts.concat();
        let f = frame(&[&eth(0x86dd), &ipv6(first, e.len() + 8), &e, &udp]);
        extract(&f, 1)
    };
    // Hop-by-hop not first: UNSEQ.
    let k = run(60, &[&ext8(0), &ext8(17)]);
    assert_eq!(k.ipv6_exthdr, EXTHDR_DEST | EXTHDR_HOP | EXTHDR_UNSEQ);
    assert_eq!((k.nw_proto, k.tp_dst), (17, 2));
    // Two routing headers: UNREP.
    let k = run(43, &[&ext8(43), &ext8(17)]);
    assert_eq!(k.ipv6_exthdr, EXTHDR_ROUTER | EXTHDR_UNREP);
    // Two destination headers around a routing header: allowed.
    let k = run(60, &[&ext8(43), &ext8(60), &ext8(17)]);
    assert_eq!(k.ipv6_exthdr, EXTHDR_DEST | EXTHDR_ROUTER);
    // Two destination headers back to back: UNREP.
    let k = run(60, &[&ext8(60), &ext8(17)]);
    assert_eq!(k.ipv6_exthdr, EXTHDR_DEST | EXTHDR_UNREP);
    // Routing after fragment: UNSEQ.
    let k = run(44, &[&[43, 0, 0, 0, 0, 0, 0, 1], &ext8(17)]);
    assert_eq!(k.ipv6_exthdr, EXTHDR_FRAG | EXTHDR_ROUTER | EXTHDR_UNSEQ);
    // No next header.
    let k = run(0, &[&ext8(59)]);
    assert_eq!(
        (k.ipv6_exthdr, k.nw_proto),
        (EXTHDR_HOP | EXTHDR_NONEXT, 59)
    );
    let k = run(59, &[]);
    assert_eq!(
        (k.ipv6_exthdr, k.nw_proto, k.tp_src),
        (EXTHDR_NONEXT, 59, 0)
    );
    // ESP ends the chain.
    let k = run(0, &[&ext8(50), &[0, 0, 1, 0, 0, 0, 0, 1]]);
    assert_eq!(
        (k.ipv6_exthdr, k.nw_proto, k.tp_src),
        (EXTHDR_HOP | EXTHDR_ESP, 50, 0)
    );
}

#[test]
fn ipv6_fragments_and_truncated_extensions() {
    let udp = [0, 1, 0, 2, 0, 8, 0, 0];
    // Later fragment: nw_proto is the fragment header's next header, no L4, chain stops.
    let frag_later = [17, 0, 0x05, 0x08, 0, 0, 0, 7]; // offset 0xa1, M=0
    let f = frame(&[&eth(0x86dd), &ipv6(44, 16), &frag_later, &udp]);
    let k = extract(&f, 1);
    assert_eq!(
        (k.nw_frag, k.nw_proto, k.tp_src, k.ipv6_exthdr),
        (NW_FRAG_ANY | NW_FRAG_LATER, 17, 0, EXTHDR_FRAG)
    );
    assert_eq!(extract_into(&mut FlowKey::default(), &f, 1).l4, None);
    // Atomic fragment (offset 0, M=0) still counts as a fragment.
    let atomic = [17, 0, 0, 0, 0, 0, 0, 7];
    let k = extract(&frame(&[&eth(0x86dd), &ipv6(44, 16), &atomic, &udp]), 1);
    assert_eq!((k.nw_frag, k.tp_dst), (NW_FRAG_ANY, 2));
    // An extension header longer than the payload: fixed fields kept, no L4.
    let long = [17, 1, 0, 0, 0, 0, 0, 0]; // claims 16 bytes
    let k = extract(&frame(&[&eth(0x86dd), &ipv6(0, 8), &long]), 1);
    assert_eq!(
        (k.ipv6_src, k.nw_ttl, k.nw_proto, k.ipv6_exthdr, k.tp_src),
        (S6, 255, 0, EXTHDR_HOP, 0)
    );
    // Payload too short for even the first two bytes of an extension header.
    let k = extract(&frame(&[&eth(0x86dd), &ipv6(43, 4), &[17, 0, 0, 0]]), 1);
    assert_eq!(
        (k.nw_proto, k.ipv6_exthdr, k.ipv6_label),
        (43, EXTHDR_ROUTER, 0x12345)
    );
}

fn nd(ty: u8, target: [u8; 16], opts: &[u8]) -> Vec<u8> {
    let mut icmp = vec![ty, 0, 0, 0, 0x60, 0, 0, 0];
    icmp.extend_from_slice(&target);
    icmp.extend_from_slice(opts);
    frame(&[&eth(0x86dd), &ipv6(58, icmp.len()), &icmp])
}

#[test]
fn neighbor_discovery() {
    let t: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99];
    let sll = [1, 1, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01];
    let tll = [2, 1, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
    let nonce = [14, 1, 1, 2, 3, 4, 5, 6];

    let k = extract(&nd(135, t, &[&nonce[..], &sll[..]].concat()), 1);
    assert_eq!((k.tp_src, k.tp_dst, k.nw_proto), (135, 0, 58));
    assert_eq!(k.nd_target, t);
    assert_eq!(k.arp_sha, [0xde, 0xad, 0xbe, 0xef, 0x00, 0x01]);
    assert_eq!(k.arp_tha, [0; 6]);
    assert!(k
        .to_string()
        .ends_with("icmp_type=135,icmp_code=0,nd_target=fe80::99,nd_sll=de:ad:be:ef:00:01"));

    let k = extract(&nd(136, t, &tll), 1);
    assert_eq!(
        (k.nd_target, k.arp_tha, k.arp_sha),
        (t, [2, 0, 0, 0, 0, 2], [0; 6])
    );
    assert!(k
        .to_string()
        .ends_with("nd_target=fe80::99,nd_tll=02:00:00:00:00:02"));

    // No options at all, and a trailing fragment shorter than an option: target only.
    let k = extract(&nd(135, t, &[1, 1, 2]), 1);
    assert_eq!((k.nd_target, k.arp_sha), (t, [0; 6]));

    // Malformed: zero-length option, option past the end, duplicate SLL. The ICMP type and
    // code stay, the ND fields are cleared.
    for bad in [
        [&[1u8, 0, 0, 0, 0, 0, 0, 0][..], &sll[..]].concat(),
        [&sll[..], &[3, 2, 0, 0, 0, 0, 0, 0][..]].concat(),
        [&sll[..], &sll[..]].concat(),
    ] {
        let k = extract(&nd(135, t, &bad), 1);
        assert_eq!(
            (k.tp_src, k.nd_target, k.arp_sha),
            (135, [0; 16], [0; 6]),
            "{bad:?}"
        );
    }
    // A longer SLL option (not 8 bytes) is skipped, not used.
    let k = extract(
        &nd(
            135,
            t,
            &[2, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        ),
        1,
    );
    assert_eq!((k.nd_target, k.arp_tha), (t, [0; 6]));
    // Target cut short: no ND fields.
    let short = nd(135, t, &[]);
    let mut short = short[..short.len() - 1].to_vec();
    short[18..20].copy_from_slice(&23u16.to_be_bytes());
    let k = extract(&short, 1);
    assert_eq!((k.tp_src, k.nd_target), (135, [0; 16]));
    // Non-zero code: not ND.
    let mut f = nd(135, t, &sll);
    f[14 + 40 + 1] = 1;
    assert_eq!(extract(&f, 1).nd_target, [0; 16]);
}

#[test]
fn ieee_802_3_and_snap() {
    // 802.3 with an LLC header (STP): dl_type 0x05ff, nothing else.
    let mut f = eth(0x0026);
    f.extend_from_slice(&[0x42, 0x42, 0x03, 0, 0, 0, 0, 0]);
    let k = extract(&f, 1);
    assert_eq!(
        k,
        FlowKey {
            dl_type: DL_TYPE_NONE,
            ..want_l2(1)
        }
    );
    // LLC/SNAP with a zero OUI carries an EtherType that is parsed as usual.
    let udp = [0, 7, 0, 9, 0, 8, 0, 0];
    let mut s = eth(0x0030);
    s.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    s.extend_from_slice(&ipv4(17, 0, &[], 8));
    s.extend_from_slice(&udp);
    let k = extract(&s, 1);
    assert_eq!((k.dl_type, k.nw_proto, k.tp_dst), (0x0800, 17, 9));
    assert_eq!(extract_into(&mut FlowKey::default(), &s, 1).l3, Some(22));
    // SNAP with a non-zero OUI, or a SNAP type below 0x600: not decoded.
    let mut o = s.clone();
    o[19] = 0x0c;
    assert_eq!(extract(&o, 1).dl_type, DL_TYPE_NONE);
    let mut t = s.clone();
    t[20] = 0x05;
    assert_eq!(extract(&t, 1).dl_type, DL_TYPE_NONE);
}

#[test]
fn short_frames() {
    for n in 0..14 {
        assert_eq!(
            extract(&[0xab; 14][..n], 5),
            FlowKey {
                in_port: 5,
                ..FlowKey::ZERO
            }
        );
    }
    let k = extract(&eth(0x0800), 5);
    assert_eq!(
        k,
        FlowKey {
            dl_type: 0x0800,
            ..want_l2(5)
        }
    );
    // extract_into overwrites whatever the key held before, metadata included.
    let mut k = FlowKey {
        recirc_id: 9,
        tp_src: 4,
        ..FlowKey::ZERO
    };
    let o = extract_into(&mut k, &[], 2);
    assert_eq!(
        k,
        FlowKey {
            in_port: 2,
            ..FlowKey::ZERO
        }
    );
    assert_eq!(o, Offsets::default());
}

#[test]
fn checksum_of_extracted_frames() {
    // set_l4_checksum fills in what l4_checksum_ok then accepts, using extractor offsets.
    let tcp = [
        0x01, 0xbb, 0xc3, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0xff, 0xff, 0, 0, 0, 0,
    ];
    let mut f4 = frame(&[&eth(0x0800), &ipv4(6, 0, &[], 24), &tcp, b"data", &[0; 8]]);
    let mut f6 = frame(&[&eth(0x86dd), &ipv6(0, 8 + 24), &ext8(6), &tcp, b"data"]);
    for f in [&mut f4, &mut f6] {
        let mut k = FlowKey::ZERO;
        let o = extract_into(&mut k, f, 1);
        let (l3, l4) = (
            usize::from(o.l3.expect("l3")),
            usize::from(o.l4.expect("l4")),
        );
        assert!(!csum::l4_checksum_ok(f, l3, l4, k.nw_proto, true));
        assert!(csum::set_l4_checksum(f, l3, l4, 16, k.nw_proto, true));
        assert!(csum::l4_checksum_ok(f, l3, l4, k.nw_proto, true));
    }
    // Cross-check against etherparse's own TCP checksum for the IPv4 frame.
    let h = etherparse::SlicedPacket::from_ethernet(&f4).expect("parse");
    let (Some(etherparse::NetSlice::Ipv4(ip)), Some(etherparse::TransportSlice::Tcp(t))) =
        (h.net, h.transport)
    else {
        panic!("not tcp/ipv4");
    };
    let want = t
        .to_header()
        .calc_checksum_ipv4(&ip.header().to_header(), t.payload())
        .expect("checksum");
    assert_eq!(t.checksum(), want);
}

#[test]
fn pbb_isid_is_read_and_nothing_beneath() {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xe7];
    f.extend_from_slice(&[0x60, 0xab, 0xcd, 0xef]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3, 0x08, 0x00]);
    f.resize(80, 0);
    let k = packet::flow::extract(&f, 1);
    assert_eq!(k.dl_type, 0x88e7);
    assert_eq!(k.pbb_isid, 0x00ab_cdef);
    assert_eq!(k.nw_src, [0; 4]);
    let k = packet::flow::extract(&f[..16], 1);
    assert_eq!(k.pbb_isid, 0);
}
