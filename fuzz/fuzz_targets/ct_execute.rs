//! Fuzzes the connection tracker: arbitrary frames through `Conntrack::execute_one`, with
//! and without NAT, committing or not, in sequence so that later frames meet the
//! connections earlier ones created.
//!
//! Input: byte 0 picks the mode (bit 0 commit, bits 1-2 NAT none/apply/src/dst, bit 3
//! liberal TCP, bit 4 force, bits 5-7 zone, whose low two bits also pick the helper: none,
//! ftp, tftp, ftp); then frames, each prefixed by a big-endian
//! 16-bit length. Besides "never panics" it checks: the connection count never exceeds the
//! maximum; every packet is `+trk`; without a helper `+new`, `+est`, `+rel` and `+inv`
//! exclude each other as OVS's do, with one `+new` excludes `+est`; a packet that NAT rewrote still parses as trackable (its checksums were kept
//! right); IPv4 and IPv6 fragments also go through reassembly and a completed datagram is
//! tracked; dump, stats and both sweeps run on whatever state results.
#![no_main]

use conntrack::ct_state::*;
use conntrack::key::{parse, PacketMeta, Parsed};
use conntrack::{
    Config, Conntrack, CtRequest, Flush, Helper, Ipf, IpfConfig, IpfVerdict, Nat, NatRange,
};
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

thread_local! {
    static CT: Conntrack = Conntrack::new(Config { shards: 8, max_conns: 64 });
    static IPF: Ipf<usize> = Ipf::new(IpfConfig {
        min_frag_v4: 0,
        min_frag_v6: 0,
        max_frags: 16,
        ..IpfConfig::default()
    });
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let r4 = NatRange::new(
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        Some((1000, 1003)),
    )
    .expect("valid range");
    let r6 = NatRange::new(
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        None,
    )
    .expect("valid range");
    CT.with(|ct| {
        ct.flush(Flush::All);
        ct.set_tcp_seq_check(mode & 8 == 0);
        let mut now = 1_000u64;
        while rest.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            let frame_bytes = &rest[2..rest.len().min(2 + len)];
            rest = &rest[2 + frame_bytes.len()..];
            let mut frame = frame_bytes.to_vec();
            let mut key = packet::FlowKey::default();
            let offs = packet::extract_into(&mut key, &frame, 1);
            let Some(meta) = PacketMeta::from_flow(&key, &offs) else {
                continue;
            };
            let range = if meta.v6 { r6 } else { r4 };
            let nat = match (mode >> 1) & 3 {
                0 => None,
                1 => Some(Nat::Apply),
                2 => Some(Nat::Src(range)),
                _ => Some(Nat::Dst(range)),
            };
            let req = CtRequest {
                zone: u16::from(mode >> 5),
                commit: mode & 1 != 0,
                force: mode & 16 != 0,
                nat: nat.as_ref(),
                set_mark: Some((u32::from(mode), u32::MAX)),
                set_label: None,
                alg: [Helper::None, Helper::Ftp, Helper::Tftp, Helper::Ftp]
                    [usize::from(mode >> 5) & 3],
            };
            if meta.frag {
                // Fragments go through reassembly; a complete datagram is tracked.
                let verdict = IPF.with(|ipf| ipf.add(&frame, &meta, req.zone, 0, now));
                if let IpfVerdict::Complete(mut r) = verdict {
                    assert!(!r.fragments.is_empty());
                    let res = ct.execute_one(&mut r.frame, &r.meta, &req, now);
                    assert!(res.state & TRK != 0);
                }
            }
            let r = ct.execute_one(&mut frame, &meta, &req, now);
            now += 7;
            assert!(r.state & TRK != 0);
            let kinds = [NEW, EST, REL, INV]
                .iter()
                .filter(|&&b| r.state & b != 0)
                .count();
            if req.alg == Helper::None {
                assert_eq!(kinds, 1, "state {:#x}", r.state);
            } else {
                // A helper's related connections are `+new+rel`, `+est+rel`; a control
                // message that does not parse is `+inv` besides (`+new+inv` on the
                // segment that opened the connection), as in OVS.
                assert!(kinds >= 1, "state {:#x}", r.state);
                assert!(r.state & (NEW | EST) != NEW | EST, "state {:#x}", r.state);
            }
            assert!(ct.n_conns() <= 64);
            if r.state & (SNAT | DNAT) != 0 {
                assert_ne!(parse(&frame, &meta, req.zone), Parsed::Invalid);
            }
            if r.state & (SNAT | DNAT) == 0 && r.state & INV == 0 {
                // Untranslated packets are not touched.
                assert_eq!(frame, frame_bytes);
            }
        }
        let _ = ct.dump(None, true, now);
        let _ = ct.stats_text(None, true, now);
        let _ = ct.bkts_text(0);
        let _ = ct.sweep(now + 100_000_000, 10);
        let _ = IPF.with(|ipf| ipf.sweep(now + 100_000_000));
    });
});
