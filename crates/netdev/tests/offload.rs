//! Checksum completion and GSO segmentation on synthetic frames, checked with etherparse as an
//! independent oracle. No kernel needed.

use etherparse::{NetHeaders, PacketBuilder, PacketHeaders, PayloadSlice, TransportHeader};
use netdev::offload::{
    csum_add, csum_fold, OffloadError, Plan, VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_NONE, GSO_TCPV4,
    GSO_TCPV6, GSO_UDP, GSO_UDP_L4,
};
use packet::MAX_FRAME;

const SRC4: [u8; 4] = [10, 1, 2, 3];
const DST4: [u8; 4] = [10, 9, 8, 7];
const SRC6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn gso_hdr(gso_type: u8, mss: u16, csum_start: u16, csum_offset: u16) -> VnetHdr {
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type,
        hdr_len: 0,
        gso_size: mss,
        csum_start,
        csum_offset,
    }
}

/// Writes every output frame of a plan.
fn run(plan: &Plan<'_>) -> Vec<Vec<u8>> {
    (0..plan.count())
        .map(|i| {
            let mut out = vec![0u8; MAX_FRAME];
            let n = plan.write(i, &mut out);
            assert_eq!(n, plan.len_of(i));
            assert!(n <= MAX_FRAME);
            out.truncate(n);
            out
        })
        .collect()
}

/// Checks one TCP segment's lengths and checksums; returns (seq, flags byte, payload).
fn check_tcp(seg: &[u8]) -> (u32, u8, Vec<u8>) {
    let h = PacketHeaders::from_ethernet_slice(seg).expect("parses");
    let Some(TransportHeader::Tcp(tcp)) = &h.transport else {
        panic!("not tcp")
    };
    let PayloadSlice::Tcp(data) = h.payload else {
        panic!("no tcp payload")
    };
    let want = match &h.net {
        Some(NetHeaders::Ipv4(ip, _)) => {
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "ipv4 csum");
            assert_eq!(
                usize::from(ip.total_len),
                seg.len() - 14 - if h.vlan.is_some() { 4 } else { 0 }
            );
            tcp.calc_checksum_ipv4(ip, data).expect("size")
        }
        Some(NetHeaders::Ipv6(ip, _)) => {
            assert_eq!(
                usize::from(ip.payload_length),
                seg.len() - 54 - if h.vlan.is_some() { 4 } else { 0 }
            );
            tcp.calc_checksum_ipv6(ip, data).expect("size")
        }
        None => panic!("no ip"),
    };
    assert_eq!(tcp.checksum, want, "tcp checksum");
    let flags = seg[seg.len() - data.len() - tcp.header_len() + 13];
    (tcp.sequence_number, flags, data.to_vec())
}

#[test]
fn tcp4_super_packet_is_cut_into_mss_segments() {
    let body = payload(5000);
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(SRC4, DST4, 64)
        .tcp(40000, 5201, 0xffff_f000, 512)
        .ack(77)
        .psh()
        .fin()
        .cwr()
        .options_raw(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2])
        .expect("options");
    let mut f = Vec::new();
    b.write(&mut f, &body).expect("build");
    // IPv4 ID 0x1234, to watch it advance per segment.
    f[18] = 0x12;
    f[19] = 0x34;
    let v = gso_hdr(GSO_TCPV4 | GSO_ECN, 1448, 34, 16);
    let plan = Plan::new(&f, None, &v).expect("plan");
    assert_eq!(plan.count(), 4);
    let segs = run(&plan);
    let mut all = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let (seq, flags, data) = check_tcp(s);
        assert_eq!(
            seq,
            0xffff_f000u32.wrapping_add(1448 * i as u32),
            "seq wraps"
        );
        let last = i == segs.len() - 1;
        assert_eq!(flags & 0x01 != 0, last, "FIN only on the last");
        assert_eq!(flags & 0x08 != 0, last, "PSH only on the last");
        assert_eq!(flags & 0x80 != 0, i == 0, "CWR only on the first");
        assert!(flags & 0x10 != 0, "ACK everywhere");
        assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1234 + i as u16);
        assert_eq!(data.len(), if last { 5000 - 3 * 1448 } else { 1448 });
        all.extend_from_slice(&data);
    }
    assert_eq!(all, body);
}

#[test]
fn tcp6_super_packet_is_cut_into_mss_segments() {
    let body = payload(4000);
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv6(SRC6, DST6, 64)
        .tcp(40000, 5201, 1000, 512)
        .ack(1)
        .psh();
    let mut f = Vec::new();
    b.write(&mut f, &body).expect("build");
    let v = gso_hdr(GSO_TCPV6, 1000, 54, 16);
    let plan = Plan::new(&f, None, &v).expect("plan");
    assert_eq!(plan.count(), 4);
    let mut all = Vec::new();
    for (i, s) in run(&plan).iter().enumerate() {
        let (seq, flags, data) = check_tcp(s);
        assert_eq!(seq, 1000 + 1000 * i as u32);
        assert_eq!(flags & 0x08 != 0, i == 3);
        all.extend_from_slice(&data);
    }
    assert_eq!(all, body);
}

#[test]
fn vlan_tag_is_reinserted_into_every_segment() {
    let body = payload(3000);
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(SRC4, DST4, 64)
        .tcp(1, 2, 3, 4);
    let mut f = Vec::new();
    b.write(&mut f, &body).expect("build");
    // The kernel reports csum_start relative to the untagged frame it hands us.
    let v = gso_hdr(GSO_TCPV4, 1400, 34, 16);
    let plan = Plan::new(&f, Some([0x81, 0x00, 0x00, 0x2a]), &v).expect("plan");
    let segs = run(&plan);
    assert_eq!(segs.len(), 3);
    for s in &segs {
        assert_eq!(&s[12..16], &[0x81, 0x00, 0x00, 0x2a]);
        let h = PacketHeaders::from_ethernet_slice(s).expect("parses");
        assert!(h.vlan.is_some());
        check_tcp(s);
    }
}

#[test]
fn udp_l4_super_packet_becomes_datagrams() {
    let body = payload(3000);
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(SRC4, DST4, 64)
        .udp(5000, 6000);
    let mut f = Vec::new();
    b.write(&mut f, &body).expect("build");
    let v = gso_hdr(GSO_UDP_L4, 1200, 34, 6);
    let plan = Plan::new(&f, None, &v).expect("plan");
    let segs = run(&plan);
    assert_eq!(segs.len(), 3);
    let mut all = Vec::new();
    for s in &segs {
        let h = PacketHeaders::from_ethernet_slice(s).expect("parses");
        let (Some(NetHeaders::Ipv4(ip, _)), Some(TransportHeader::Udp(udp))) =
            (&h.net, &h.transport)
        else {
            panic!("not udp/ipv4")
        };
        let PayloadSlice::Udp(data) = h.payload else {
            panic!("no payload")
        };
        assert_eq!(ip.header_checksum, ip.calc_header_checksum());
        assert_eq!(usize::from(udp.length), 8 + data.len());
        assert_eq!(
            udp.checksum,
            udp.calc_checksum_ipv4(ip, data).expect("size")
        );
        all.extend_from_slice(data);
    }
    assert_eq!(all, body);
}

/// The folded pseudo-header sum the kernel leaves in the field for CHECKSUM_PARTIAL.
fn seed_v4(proto: u8, l4_len: usize) -> u16 {
    let mut ph = Vec::new();
    ph.extend_from_slice(&SRC4);
    ph.extend_from_slice(&DST4);
    ph.extend_from_slice(&[0, proto]);
    ph.extend_from_slice(&(l4_len as u16).to_be_bytes());
    csum_fold(csum_add(0, &ph))
}

#[test]
fn partial_checksums_are_completed() {
    for (proto, coff) in [(6u8, 16usize), (17, 6)] {
        let body = payload(333);
        let b =
            PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(SRC4, DST4, 64);
        let mut f = Vec::new();
        if proto == 6 {
            b.tcp(10, 20, 30, 40).write(&mut f, &body).expect("build");
        } else {
            b.udp(10, 20).write(&mut f, &body).expect("build");
        }
        let good = f.clone();
        let seed = seed_v4(proto, f.len() - 34);
        f[34 + coff..34 + coff + 2].copy_from_slice(&seed.to_be_bytes());
        assert_ne!(f, good);
        let v = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_NONE,
            csum_start: 34,
            csum_offset: coff as u16,
            ..VnetHdr::default()
        };
        let plan = Plan::new(&f, None, &v).expect("plan");
        assert_eq!(plan.count(), 1);
        assert_eq!(run(&plan)[0], good, "proto {proto}");
        // The same with a re-inserted VLAN tag: the checksum start moves by 4.
        let plan = Plan::new(&f, Some([0x81, 0, 0, 5]), &v).expect("plan");
        let out = &run(&plan)[0];
        assert_eq!(&out[..12], &good[..12]);
        assert_eq!(&out[16..], &good[12..]);
    }
}

#[test]
fn frames_without_offload_are_copied_as_is() {
    let f = payload(200);
    let plan = Plan::new(&f, None, &VnetHdr::default()).expect("plan");
    assert_eq!(run(&plan)[0], f);
    let mut short = vec![0u8; 10];
    assert_eq!(plan.write(0, &mut short), 0, "short buffer writes nothing");
    assert_eq!(
        plan.write(1, &mut vec![0u8; 300]),
        0,
        "past the end writes nothing"
    );
}

#[test]
fn unsupported_and_bad_frames_are_refused() {
    let body = payload(3000);
    let mut f = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(SRC4, DST4, 64)
        .udp(1, 2)
        .write(&mut f, &body)
        .expect("build");
    let e = Plan::new(&f, None, &gso_hdr(GSO_UDP, 1400, 34, 6)).err();
    assert_eq!(e, Some(OffloadError::UnsupportedGso(GSO_UDP)));
    let e = Plan::new(&f, None, &gso_hdr(0x42, 1400, 34, 6)).err();
    assert_eq!(e, Some(OffloadError::UnsupportedGso(0x42)));
    // TCP GSO on a UDP packet, and a segment size larger than a buffer.
    let e = Plan::new(&f, None, &gso_hdr(GSO_TCPV4, 1400, 34, 16)).err();
    assert_eq!(e, Some(OffloadError::Malformed));
    let e = Plan::new(&f, None, &gso_hdr(GSO_UDP_L4, 2900, 34, 6)).err();
    assert_eq!(e, Some(OffloadError::TooBig));
    let e = Plan::new(&f, None, &gso_hdr(GSO_UDP_L4, 0, 34, 6)).err();
    assert_eq!(e, Some(OffloadError::Malformed));
    // A plain frame too big for a buffer; a checksum field past the end.
    let e = Plan::new(&f, None, &VnetHdr::default()).err();
    assert_eq!(e, Some(OffloadError::TooBig));
    let small = &f[..100];
    let v = VnetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 90,
        csum_offset: 16,
        ..VnetHdr::default()
    };
    assert_eq!(
        Plan::new(small, None, &v).err(),
        Some(OffloadError::Malformed)
    );
    assert_eq!(
        Plan::new(&f[..10], None, &VnetHdr::default()).err(),
        Some(OffloadError::Malformed)
    );
}

#[test]
fn never_panics_on_garbage() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut base = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(SRC4, DST4, 64)
        .tcp(1, 2, 3, 4)
        .write(&mut base, &payload(4000))
        .expect("build");
    let mut out = vec![0u8; MAX_FRAME];
    for _ in 0..20_000 {
        let len = (next() % 4200) as usize;
        let mut f: Vec<u8> = base.iter().take(len).copied().collect();
        // Corrupt a few header bytes.
        for _ in 0..(next() % 4) {
            if !f.is_empty() {
                let at = (next() % 80) as usize % f.len();
                f[at] = next() as u8;
            }
        }
        let r = next();
        let v = VnetHdr {
            flags: (r & 1) as u8,
            gso_type: [0, 1, 3, 4, 5, 0x81][(r >> 1) as usize % 6],
            hdr_len: (r >> 8) as u16,
            gso_size: [0u16, 1, 7, 536, 1448, 2000, 65535][(r >> 16) as usize % 7],
            csum_start: (r >> 24) as u16 % 128,
            csum_offset: [6u16, 16, 2, 200, 65535][(r >> 40) as usize % 5],
        };
        let tag = if r >> 63 != 0 {
            Some([0x81, 0, 0, 1])
        } else {
            None
        };
        if let Ok(p) = Plan::new(&f, tag, &v) {
            // Tiny MSS values make thousands of segments; a sample is enough.
            for i in (0..p.count()).step_by(1 + p.count() / 8) {
                assert!(p.len_of(i) <= MAX_FRAME);
                assert_eq!(p.write(i, &mut out), p.len_of(i));
            }
        }
    }
}
