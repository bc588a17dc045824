use super::*;

#[test]
fn field_offsets_are_pinned() {
    let expect = [
        (offset_of!(FlowKey, in_port), 0),
        (offset_of!(FlowKey, recirc_id), 4),
        (offset_of!(FlowKey, pkt_mark), 8),
        (offset_of!(FlowKey, dp_hash), 12),
        (offset_of!(FlowKey, metadata), 16),
        (offset_of!(FlowKey, tunnel_id), 24),
        (offset_of!(FlowKey, regs), 32),
        (offset_of!(FlowKey, dl_dst), 96),
        (offset_of!(FlowKey, dl_src), 102),
        (offset_of!(FlowKey, vlan_tpid), 108),
        (offset_of!(FlowKey, vlan_tci), 112),
        (offset_of!(FlowKey, dl_type), 116),
        (offset_of!(FlowKey, mpls_n), 118),
        (offset_of!(FlowKey, pad_l2), 119),
        (offset_of!(FlowKey, mpls_lse), 120),
        (offset_of!(FlowKey, pbb_isid), 136),
        (offset_of!(FlowKey, tun_src), 140),
        (offset_of!(FlowKey, nw_src), 144),
        (offset_of!(FlowKey, nw_dst), 148),
        (offset_of!(FlowKey, ipv6_src), 152),
        (offset_of!(FlowKey, ipv6_dst), 168),
        (offset_of!(FlowKey, ipv6_label), 184),
        (offset_of!(FlowKey, nw_proto), 188),
        (offset_of!(FlowKey, nw_tos), 189),
        (offset_of!(FlowKey, nw_ttl), 190),
        (offset_of!(FlowKey, nw_frag), 191),
        (offset_of!(FlowKey, ipv6_exthdr), 192),
        (offset_of!(FlowKey, tun_flags), 194),
        (offset_of!(FlowKey, tun_gbp_id), 196),
        (offset_of!(FlowKey, tun_gbp_flags), 198),
        (offset_of!(FlowKey, pad_l3), 199),
        (offset_of!(FlowKey, tp_src), 200),
        (offset_of!(FlowKey, tp_dst), 202),
        (offset_of!(FlowKey, tcp_flags), 204),
        (offset_of!(FlowKey, pad_l4), 206),
        (offset_of!(FlowKey, nd_target), 208),
        (offset_of!(FlowKey, arp_sha), 224),
        (offset_of!(FlowKey, arp_tha), 230),
        (offset_of!(FlowKey, tun_dst), 236),
        (offset_of!(FlowKey, ct_state), 240),
        (offset_of!(FlowKey, ct_nw_proto), 241),
        (offset_of!(FlowKey, ct_zone), 242),
        (offset_of!(FlowKey, ct_mark), 244),
        (offset_of!(FlowKey, ct_tp_src), 248),
        (offset_of!(FlowKey, ct_tp_dst), 250),
        (offset_of!(FlowKey, pad_ct), 252),
        (offset_of!(FlowKey, ct_label), 256),
        (offset_of!(FlowKey, ct_src), 272),
        (offset_of!(FlowKey, ct_dst), 288),
        (offset_of!(FlowKey, tun_opts_present), 304),
        (offset_of!(FlowKey, tun_opts), 312),
        (offset_of!(FlowKey, tun_ipv6_src), 328),
        (offset_of!(FlowKey, tun_ipv6_dst), 344),
    ];
    for (i, (got, want)) in expect.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
}

fn sample() -> FlowKey {
    FlowKey {
        in_port: 0x0102_0304,
        recirc_id: 5,
        pkt_mark: 6,
        dp_hash: 7,
        metadata: 0x1122_3344_5566_7788,
        tunnel_id: 0x99aa_bbcc_ddee_ff00,
        regs: core::array::from_fn(|i| 0x10 + i as u32),
        dl_dst: [1, 2, 3, 4, 5, 6],
        dl_src: [7, 8, 9, 10, 11, 12],
        vlan_tpid: [0x88a8, 0x8100],
        vlan_tci: [0x1005, 0x3006],
        dl_type: 0x86dd,
        mpls_n: 2,
        pad_l2: 0,
        mpls_lse: [0xaaaa_aaaa, 0xbbbb_bbbb, 0xcccc_cccc, 0xdddd_dddd],
        pbb_isid: 0x00ab_cdef,
        tun_src: [0; 4],
        nw_src: [10, 0, 0, 1],
        nw_dst: [10, 0, 0, 2],
        ipv6_src: [0x20; 16],
        ipv6_dst: [0x30; 16],
        ipv6_label: 0xfffff,
        nw_proto: 6,
        nw_tos: 0xb8,
        nw_ttl: 64,
        nw_frag: 1,
        ipv6_exthdr: 0x1ff,
        tun_flags: 0,
        tun_gbp_id: 0,
        tun_gbp_flags: 0,
        pad_l3: 0,
        tp_src: 80,
        tp_dst: 443,
        tcp_flags: 0x12,
        pad_l4: 0,
        nd_target: [0x40; 16],
        arp_sha: [0xa; 6],
        arp_tha: [0xb; 6],
        tun_dst: [0; 4],
        ct_state: 0x22,
        ct_nw_proto: 6,
        ct_zone: 9,
        ct_mark: 0x55,
        ct_tp_src: 1000,
        ct_tp_dst: 80,
        pad_ct: 0,
        ct_label: [0x66; 16],
        ct_src: [0x77; 16],
        ct_dst: [0x88; 16],
        tun_opts_present: 0x99,
        tun_opts: [0xaa; TUN_OPTS_LEN],
        tun_ipv6_src: [0xbb; 16],
        tun_ipv6_dst: [0xcc; 16],
    }
}

#[test]
fn words_round_trip_and_match_fields() {
    let k = sample();
    let w = k.to_words();
    assert_eq!(FlowKey::from_words(&w), k);
    assert_eq!(
        w[0],
        u64::from_ne_bytes({
            let mut b = [0; 8];
            b[..4].copy_from_slice(&k.in_port.to_ne_bytes());
            b[4..].copy_from_slice(&k.recirc_id.to_ne_bytes());
            b
        })
    );
    assert_eq!(w[2], k.metadata);
    assert_eq!(w[3], k.tunnel_id);
    assert_eq!(
        w[4],
        u64::from_ne_bytes({
            let mut b = [0; 8];
            b[..4].copy_from_slice(&k.regs[0].to_ne_bytes());
            b[4..].copy_from_slice(&k.regs[1].to_ne_bytes());
            b
        })
    );
    assert_eq!(
        FlowKey::from_words(&FlowKey::ZERO.to_words()),
        FlowKey::ZERO
    );
    assert_eq!(FlowKey::ZERO, FlowKey::default());
}

#[test]
fn extraction_clears_a_previous_connection_tracking_block() {
    let mut k = sample();
    let frame = [0u8; 60];
    extract_into(&mut k, &frame, 3);
    assert_eq!(k.ct_state, 0);
    assert_eq!(k.ct_src, [0; 16]);
    assert_eq!(
        k.as_words()[CT_WORDS_START..],
        [0; FLOW_KEY_WORDS - CT_WORDS_START]
    );
    assert_eq!(k, extract(&frame, 3));
}

#[test]
fn the_tail_is_live_for_recirculation_tunnel_options_and_ipv6_tunnels() {
    let mut k = FlowKey::ZERO;
    assert!(!k.has_tail());
    k.tun_ipv6_dst[15] = 1;
    assert!(k.has_tail());
    k.tun_ipv6_dst = [0; 16];
    k.tun_ipv6_src[0] = 0xfd;
    assert!(k.has_tail());
    k.tun_ipv6_src = [0; 16];
    k.tun_opts_present = 1;
    assert!(k.has_tail());
    k.tun_opts_present = 0;
    k.recirc_id = 3;
    assert!(k.has_tail());
    // A key without any of them is zero from the ct block on.
    let k = extract(&[0u8; 60], 1);
    assert!(!k.has_tail());
    assert_eq!(
        k.as_words()[CT_WORDS_START..],
        [0; FLOW_KEY_WORDS - CT_WORDS_START]
    );
}

#[test]
fn ipv6_tunnel_addresses_display_after_the_ipv4_ones() {
    let mut k = FlowKey::ZERO;
    k.tun_ipv6_src = std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1).octets();
    k.tun_ipv6_dst = std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).octets();
    let s = k.to_string();
    assert!(
        s.contains("tun_ipv6_src=fd00::1,tun_ipv6_dst=fd00::2"),
        "{s}"
    );
}

#[test]
fn masking_clears_unmasked_bits() {
    let k = sample();
    let mask = FlowKey {
        in_port: u32::MAX,
        tp_dst: 0xff00,
        ..FlowKey::ZERO
    };
    let m = k.masked(&mask);
    assert_eq!(
        m,
        FlowKey {
            in_port: k.in_port,
            tp_dst: 443 & 0xff00,
            ..FlowKey::ZERO
        }
    );
}

#[test]
fn hash_is_deterministic_and_spreads() {
    let k = sample();
    assert_eq!(k.hash(0), k.hash(0));
    assert_ne!(k.hash(0), k.hash(1));
    // Every single-bit flip of the key changes the hash (no collisions expected among
    // 1280 neighbours of one key with a decent 32-bit hash).
    let base = k.to_words();
    let h0 = hash_words(&base, 7);
    let mut seen = std::collections::HashSet::new();
    for w in 0..FLOW_KEY_WORDS {
        for bit in 0..64 {
            let mut x = base;
            x[w] ^= 1 << bit;
            let h = hash_words(&x, 7);
            assert_ne!(h, h0);
            seen.insert(h);
        }
    }
    assert!(seen.len() >= FLOW_KEY_WORDS * 64 - 2, "{}", seen.len());
}

#[test]
fn display_tcp() {
    let mut k = sample();
    k.vlan_tpid = [0; 2];
    k.vlan_tci = [0; 2];
    k.dl_type = ETH_TYPE_IPV4;
    k.recirc_id = 0;
    k.pkt_mark = 0;
    k.dp_hash = 0;
    k.metadata = 0;
    k.tunnel_id = 0;
    k.tun_ipv6_src = [0; 16];
    k.tun_ipv6_dst = [0; 16];
    k.regs = [0; N_REGS];
    k.regs[2] = 0x2a;
    k.pbb_isid = 0;
    k.in_port = 1;
    k.nw_frag = 0;
    k.ct_state = 0;
    k.tun_opts_present = 0;
    assert_eq!(
        k.to_string(),
        "in_port=1,reg2=0x2a,dl_src=07:08:09:0a:0b:0c,dl_dst=01:02:03:04:05:06,dl_type=0x0800,\
         nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_proto=6,nw_tos=184,nw_ecn=0,nw_ttl=64,\
         nw_frag=no,tp_src=80,tp_dst=443,tcp_flags=0x012"
    );
}

/// Frames near the fast path's shape: Ethernet type, IPv4 version/IHL byte, total length,
/// fragment field and protocol each either the common value, a near miss or random.
fn near_fast_frame() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let ty =
        prop_oneof![8 => Just(0x0800u16), 1 => Just(0x8100), 1 => Just(0x86dd), 1 => any::<u16>()];
    let vihl = prop_oneof![8 => Just(0x45u8), 1 => Just(0x46), 1 => Just(0x44), 1 => any::<u8>()];
    let frag = prop_oneof![
        4 => Just(0u16),
        4 => Just(0x4000),
        1 => Just(0x2000),
        1 => Just(0x0001),
        1 => any::<u16>()
    ];
    let proto = prop_oneof![
        Just(IPPROTO_UDP),
        Just(IPPROTO_TCP),
        Just(IPPROTO_ICMP),
        any::<u8>()
    ];
    let body = proptest::collection::vec(any::<u8>(), 0..96);
    // The IPv4 total length: the bytes after the Ethernet header, give or take a few.
    let slack = prop_oneof![
        6 => Just(0i32),
        2 => -30i32..30,
        1 => any::<u16>().prop_map(i32::from)
    ];
    // Sometimes cut the frame short, inside or before the headers.
    let cut = prop_oneof![4 => Just(0usize), 1 => 1usize..60];
    (ty, vihl, frag, proto, body, slack, cut).prop_map(
        |(ty, vihl, frag, proto, body, slack, cut)| {
            let mut f = body;
            f.resize(f.len().max(34), 0x5a);
            f[12..14].copy_from_slice(&ty.to_be_bytes());
            f[14] = vihl;
            let total = (f.len() as i32 - 14 + slack).clamp(0, 0xffff) as u16;
            f[16..18].copy_from_slice(&total.to_be_bytes());
            f[20..22].copy_from_slice(&frag.to_be_bytes());
            f[23] = proto;
            // TCP data offsets around the legal range.
            if let Some(doff) = f.get_mut(46) {
                *doff = (*doff & 0x0f) | ((*doff % 8 + 3) << 4);
            }
            let keep = f.len().saturating_sub(cut);
            f.truncate(keep);
            f
        },
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// The fast path gives what the general parse gives, key (into a dirty key: every
    /// word is written) and offsets, for any frame and VLAN limit.
    #[test]
    fn the_fast_path_is_the_general_parse(
        frame in proptest::prop_oneof![
            near_fast_frame(),
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
        ],
        in_port in proptest::prelude::any::<u32>(),
        max_tags in 1usize..=2,
    ) {
        let (mut fast, mut general) = (sample(), sample());
        let fo = extract_into_with(&mut fast, &frame, in_port, max_tags);
        let go = extract_into_general(&mut general, &frame, in_port, max_tags);
        proptest::prop_assert_eq!(fast, general);
        proptest::prop_assert_eq!(fo, go);
    }
}

#[test]
fn the_fast_path_takes_udp_and_tcp_over_plain_ipv4() {
    // An untagged IPv4/UDP frame with Ethernet padding after the datagram, and the same
    // datagram as TCP (20-byte header) and as a first fragment (the general path).
    let mut udp = vec![0u8; 60];
    udp[..12].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    udp[12..14].copy_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
    udp[14] = 0x45;
    udp[15] = 0xb8;
    udp[16..18].copy_from_slice(&28u16.to_be_bytes());
    udp[22] = 64;
    udp[23] = IPPROTO_UDP;
    udp[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    udp[34..38].copy_from_slice(&[0x12, 0x34, 0x00, 0x35]);
    let mut k = sample();
    let o = extract_into(&mut k, &udp, 9);
    let want = FlowKey {
        in_port: 9,
        dl_dst: [1, 2, 3, 4, 5, 6],
        dl_src: [7, 8, 9, 10, 11, 12],
        dl_type: ETH_TYPE_IPV4,
        nw_src: [10, 0, 0, 1],
        nw_dst: [10, 0, 0, 2],
        nw_proto: IPPROTO_UDP,
        nw_tos: 0xb8,
        nw_ttl: 64,
        tp_src: 0x1234,
        tp_dst: 53,
        ..FlowKey::ZERO
    };
    assert_eq!(k, want);
    assert_eq!(
        o,
        Offsets {
            l2_5: Some(14),
            l3: Some(14),
            l4: Some(34)
        }
    );
    let mut tcp = udp.clone();
    tcp[16..18].copy_from_slice(&40u16.to_be_bytes());
    tcp[23] = IPPROTO_TCP;
    tcp[46] = 0x50;
    tcp[47] = 0x12;
    extract_into(&mut k, &tcp, 9);
    assert_eq!(
        k,
        FlowKey {
            nw_proto: IPPROTO_TCP,
            tcp_flags: 0x012,
            ..want
        }
    );
    let mut frag = udp.clone();
    frag[20] = 0x20;
    extract_into(&mut k, &frag, 9);
    assert_eq!(
        k,
        FlowKey {
            nw_frag: NW_FRAG_ANY,
            ..want
        }
    );
}
