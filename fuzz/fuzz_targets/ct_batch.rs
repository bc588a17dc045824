//! Fuzzes the connection tracker's batch paths against one packet at a time: the same
//! frames through `Conntrack::execute` (chunks of 16 parsed and prefetched ahead),
//! `execute_cached` (a poll thread's connection cache, settled connections without their
//! mutex) or `execute_one_cached` per packet (the datapath's `ct` action) on one tracker,
//! and through `execute_one` in order on another.
//!
//! Input: byte 0 as `ct_execute`'s mode (bit 0 commit, bits 1-2 NAT none/apply/src/dst,
//! bit 3 liberal TCP, bit 4 force, bits 5-7 zone); byte 1: bit 0 `execute_cached` instead
//! of `execute`, bit 1 a mark to set, bit 2 a label to set, bits 3-4 how many times the
//! batch runs (1-4, the later rounds meet the connections the earlier made), bit 5
//! `execute_one_cached` per packet (over bit 0), bit 6 the FTP helper, bit 7 (with bit 5)
//! `execute_flow_cached` per packet with the frame's flow key instead; then frames,
//! each prefixed by a big-endian 16-bit length (fragments and non-IP frames are left out).
//! Checks: without NAT (whose free-tuple search is seeded per tracker) the two trackers
//! give the same verdicts and leave the same bytes; always, every packet is `+trk` with
//! exactly one of `+new`, `+est`, `+rel`, `+inv` (with the FTP helper, at least one, and
//! `+new` never with `+est`), and the connection count stays under the maximum.
#![no_main]

use conntrack::ct_state::*;
use conntrack::key::PacketMeta;
use conntrack::{
    Config, ConnCache, Conntrack, CtInput, CtRequest, CtResult, Flush, Helper, Nat, NatRange,
};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};

thread_local! {
    static BATCH: Conntrack = Conntrack::new(Config { shards: 8, max_conns: 64 });
    static SINGLE: Conntrack = Conntrack::new(Config { shards: 8, max_conns: 64 });
    static CACHE: RefCell<ConnCache> = RefCell::new(ConnCache::new());
}

/// Most frames a batch takes (three chunks of 16 and some).
const MAX_FRAMES: usize = 56;

fuzz_target!(|data: &[u8]| {
    let [mode, opts, rest @ ..] = data else {
        return;
    };
    let (mode, opts) = (*mode, *opts);
    let mut rest = rest;
    let mut frames: Vec<(Vec<u8>, PacketMeta, packet::FlowKey, packet::flow::Offsets)> = Vec::new();
    while rest.len() >= 2 && frames.len() < MAX_FRAMES {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let f = &rest[2..rest.len().min(2 + len)];
        rest = &rest[2 + f.len()..];
        let mut key = packet::FlowKey::default();
        let offs = packet::extract_into(&mut key, f, 1);
        if let Some(meta) = PacketMeta::from_flow(&key, &offs).filter(|m| !m.frag) {
            frames.push((f.to_vec(), meta, key, offs));
        }
    }
    let range = NatRange::new(
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        Some((1000, 1003)),
    )
    .expect("valid range");
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
        set_mark: (opts & 2 != 0).then_some((u32::from(mode), u32::MAX)),
        set_label: (opts & 4 != 0).then_some((u128::from(opts), u128::MAX)),
        alg: if opts & 64 != 0 {
            Helper::Ftp
        } else {
            Helper::None
        },
    };
    let rounds = 1 + ((opts >> 3) & 3);
    BATCH.with(|bt| {
        SINGLE.with(|st| {
            CACHE.with(|cache| {
                let mut cache = cache.borrow_mut();
                for t in [bt, st] {
                    t.flush(Flush::All);
                    t.set_tcp_seq_check(mode & 8 == 0);
                }
                let mut now = 1_000u64;
                for _ in 0..rounds {
                    let mut bframes: Vec<Vec<u8>> = frames.iter().map(|f| f.0.clone()).collect();
                    let mut input: Vec<CtInput<'_>> = bframes
                        .iter_mut()
                        .zip(&frames)
                        .map(|(b, f)| CtInput {
                            frame: &mut b[..],
                            meta: Some(f.1),
                        })
                        .collect();
                    let mut got = vec![CtResult::default(); input.len()];
                    if opts & 32 != 0 {
                        for ((p, out), f) in input.iter_mut().zip(got.iter_mut()).zip(&frames) {
                            if opts & 128 != 0 {
                                bt.execute_flow_cached(
                                    &mut cache, p.frame, &f.2, &f.3, &req, now, out,
                                );
                            } else {
                                bt.execute_one_cached(
                                    &mut cache,
                                    p.frame,
                                    p.meta.as_ref(),
                                    &req,
                                    now,
                                    out,
                                );
                            }
                        }
                    } else if opts & 1 != 0 {
                        bt.execute_cached(&mut cache, &mut input, &req, now, &mut got);
                    } else {
                        bt.execute(&mut input, &req, now, &mut got);
                    }
                    drop(input);
                    for (i, (f, meta, _, _)) in frames.iter().enumerate() {
                        let mut one = f.clone();
                        let want = st.execute_one(&mut one, meta, &req, now);
                        let r = got[i];
                        assert!(r.state & TRK != 0);
                        let kinds = [NEW, EST, REL, INV]
                            .iter()
                            .filter(|&&b| r.state & b != 0)
                            .count();
                        if req.alg == Helper::None {
                            assert_eq!(kinds, 1, "state {:#x}", r.state);
                        } else {
                            assert!(kinds >= 1 && r.state & (NEW | EST) != NEW | EST);
                        }
                        if req.nat.is_none() {
                            assert_eq!(r, want, "packet {i}");
                            assert_eq!(bframes[i], one, "packet {i}");
                        }
                    }
                    assert!(bt.n_conns() <= 64 && st.n_conns() <= 64);
                    if req.nat.is_none() {
                        assert_eq!(bt.n_conns(), st.n_conns());
                    }
                    now += 1_000;
                }
                let _ = bt.sweep(now + 100_000_000, 64);
            });
        });
    });
});
