//! Connection tracking in the datapath parses a packet once: the pass's key and the
//! extractor's offsets go to the tracker and become the recirculated key (see
//! `datapath::ct`). These tests pin what that must not change:
//!
//! * the recirculated key built from the pass's key equals the one a fresh extraction of
//!   the packet gives, for any frame and any state of the pass's key (a proptest);
//! * an action that changes the packet before `ct` (a field rewrite, a VLAN push) or a `ct`
//!   that translates it (NAT) makes the next pass see the packet as it is now, through the
//!   caching datapath and the uncached pipeline alike;
//! * the tracker's verdicts through the pipeline (new, then established both ways).
//!
//! The tracker is the process's own, shared by the tests of this file: each test uses
//! addresses of its own.

use conntrack::{ConnKey, CtResult};
use datapath::udpif::Udpif;
use datapath::PollSet;
use packet::flow::{self, FlowKey};
use packet::Pool;
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::Log;

// ---------------------------------------------------------------------------------------
// The recirculated key: incremental == fresh
// ---------------------------------------------------------------------------------------

/// A frame: one of the tracker's test packets (IPv4/IPv6 TCP, UDP, ICMP, ICMP errors,
/// other protocols), maybe with VLAN tags, cut short or with bytes changed; or noise.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    use conntrack::testpkt::*;
    let base = (
        0u8..9,
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(kind, s, d, a, b, c, pl)| match kind {
            0 => tcp4(s, d, a, b, u32::from(c), 7, SYN | ACK, &pl),
            1 => udp4(s, d, a, b, &pl),
            2 => icmp4_echo(s, d, 8, a, b),
            3 => icmp4_error(s, d, 3, 3, &udp4(d, s, a, b, &pl)[14..]),
            4 => tcp6(v6addr(a), v6addr(b), a, b, 1, 2, ACK, &pl),
            5 => udp6(v6addr(a), v6addr(b), a, b, &pl),
            6 => icmp6_echo(v6addr(a), v6addr(b), 128, c, 1),
            7 => other4(s, d, 47, &pl),
            _ => pl,
        });
    (
        base,
        0u8..3,
        any::<u16>(),
        proptest::option::of(any::<prop::sample::Index>()),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    )
        .prop_map(|(mut f, tags, vid, cut, flips)| {
            for t in 0..tags {
                if f.len() >= 14 {
                    let tpid: u16 = if t == 0 { 0x8100 } else { 0x88a8 };
                    let tag = [(tpid >> 8) as u8, tpid as u8, (vid >> 8) as u8, vid as u8];
                    f.splice(12..12, tag);
                }
            }
            if let Some(c) = cut {
                if !f.is_empty() {
                    f.truncate(c.index(f.len()));
                }
            }
            for (at, v) in flips {
                if !f.is_empty() {
                    let i = at.index(f.len());
                    f[i] ^= v;
                }
            }
            f
        })
}

/// What a pass's key may hold besides what the extractor writes: metadata, registers,
/// tunnel fields, an earlier recirculation's id and `ct` fields.
fn dress(k: &mut FlowKey, w: &[u64; 12]) {
    k.recirc_id = w[0] as u32;
    k.pkt_mark = (w[0] >> 32) as u32;
    k.dp_hash = w[1] as u32;
    k.metadata = w[2];
    k.tunnel_id = w[3];
    for (i, r) in k.regs.iter_mut().enumerate() {
        *r = (w[4 + i / 2] >> (32 * (i % 2))) as u32;
    }
    k.tun_src = ((w[1] >> 32) as u32).to_be_bytes();
    k.tun_dst = (w[3] as u32).to_be_bytes();
    k.tun_opts_present = w[0] & 0xff;
    k.tun_opts[..8].copy_from_slice(&w[2].to_be_bytes());
    k.ct_state = w[1] as u8;
    k.ct_zone = (w[1] >> 8) as u16;
    k.ct_mark = w[2] as u32;
    k.ct_nw_proto = 17;
    k.ct_src[..8].copy_from_slice(&w[3].to_be_bytes());
    k.ct_dst[8..].copy_from_slice(&w[1].to_be_bytes());
    k.ct_tp_src = 5;
    k.ct_tp_dst = 6;
    k.ct_label[..8].copy_from_slice(&w[0].to_be_bytes());
}

fn verdict() -> impl Strategy<Value = Option<CtResult>> {
    proptest::option::of(
        (
            any::<u8>(),
            any::<u16>(),
            any::<u32>(),
            any::<u128>(),
            proptest::option::of((
                any::<[u8; 16]>(),
                any::<[u8; 16]>(),
                any::<(u16, u16, u8, u8, u8)>(),
                prop::sample::select(vec![1u8, 6, 17, 47, 58]),
            )),
        )
            .prop_map(|(state, zone, mark, label, orig)| CtResult {
                state: u32::from(state),
                zone,
                mark,
                label,
                orig: orig.map(|(src, dst, (sport, dport, t, c, v6), proto)| ConnKey {
                    src,
                    dst,
                    sport,
                    dport,
                    zone,
                    proto,
                    v6: v6 & 1 == 1,
                    icmp_type: t,
                    icmp_code: c,
                }),
                resize: 0,
            }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn recirculated_key_from_the_pass_key_equals_a_fresh_extraction(
        f in frame(),
        in_port in any::<u32>(),
        w in any::<[u64; 12]>(),
        id in 1u32..,
        res in verdict(),
    ) {
        let mut pool = Pool::new(2);
        let mut pkt = pool.alloc().expect("buffer");
        prop_assert!(pkt.set_frame(&f));
        let mut pass = FlowKey::ZERO;
        let offs = flow::extract_into(&mut pass, pkt.data(), in_port);
        dress(&mut pass, &w);
        let mut fresh = FlowKey::ZERO;
        let fresh_offs =
            datapath::ct::recirc_key_fresh(&mut fresh, &pkt, &pass, id, res.as_ref());
        // The slot starts with whatever an earlier packet left there.
        let mut built = pass;
        let built_offs =
            datapath::ct::recirc_key(&mut built, &pkt, &pass, Some(offs), id, res.as_ref());
        prop_assert_eq!(built, fresh);
        prop_assert_eq!(built_offs, fresh_offs);
        prop_assert_eq!(built.recirc_id, id);
        pool.free(pkt);
    }
}

// ---------------------------------------------------------------------------------------
// Through the pipeline
// ---------------------------------------------------------------------------------------

fn of(u: &Udpif, verb: &str, arg: &str) {
    common::of(u, verb, Some(arg)).unwrap_or_else(|e| panic!("{verb} {arg}: {e}"));
}

fn switch(cache: bool, flows: &[&str]) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    let (sw, logs, u) = common::switch(cache, 1024, 3);
    for f in flows {
        of(&u, "add-flow", f);
    }
    (sw, logs, u)
}

fn take(log: &Log) -> Vec<Vec<u8>> {
    log.lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// Injects `f` on p1 and returns what each of p2 and p3 received.
fn send(sw: &mut PollSet, logs: &[Log], f: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    sw.inject("br", "p1", &[f.to_vec()]).expect("inject");
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
    (take(&logs[1]), take(&logs[2]))
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    conntrack::testpkt::udp4(src, dst, sport, dport, b"payload!")
}

/// Several rounds, so that a flow is handled by the upcall first and then by the caches.
const ROUNDS: usize = 4;

#[test]
fn a_rewrite_before_ct_is_seen_by_the_next_pass() {
    for cache in [true, false] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                "priority=10,ip,ct_state=-trk,actions=mod_nw_src:10.61.9.9,ct(table=1)",
                "table=1,priority=10,ip,nw_src=10.61.9.9,ct_state=+trk+new,actions=output:2",
                "table=1,priority=1,actions=output:3",
            ],
        );
        let f = udp([10, 61, 0, 1], [10, 61, 0, 2], 1000, 53);
        for round in 0..ROUNDS {
            let (p2, p3) = send(&mut sw, &logs, &f);
            assert_eq!((p2.len(), p3.len()), (1, 0), "cache={cache} round {round}");
            assert_eq!(&p2[0][26..30], &[10, 61, 9, 9]);
        }
    }
}

#[test]
fn a_vlan_pushed_before_ct_is_seen_by_the_tracker_and_the_next_pass() {
    for cache in [true, false] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                "priority=10,ip,ct_state=-trk,actions=push_vlan:0x8100,set_field:4196->vlan_vid,ct(table=1)",
                "table=1,priority=10,dl_vlan=100,ip,ct_state=+trk+new,actions=output:2",
                "table=1,priority=1,actions=output:3",
            ],
        );
        let f = udp([10, 62, 0, 1], [10, 62, 0, 2], 1000, 53);
        for round in 0..ROUNDS {
            let (p2, p3) = send(&mut sw, &logs, &f);
            assert_eq!((p2.len(), p3.len()), (1, 0), "cache={cache} round {round}");
            assert_eq!(p2[0].len(), f.len() + 4);
        }
    }
}

#[test]
fn a_nat_ct_is_seen_by_the_next_pass() {
    for (zone, cache) in [(61, true), (62, false)] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                &format!(
                    "priority=10,ip,ct_state=-trk,actions=ct(commit,zone={zone},nat(dst=10.63.0.99),table=1)"
                ),
                "table=1,priority=10,ip,nw_dst=10.63.0.99,ct_state=+trk+dnat,actions=output:2",
                "table=1,priority=1,actions=output:3",
            ],
        );
        let f = udp([10, 63, 0, 1], [10, 63, 0, 50], 1000, 53);
        for round in 0..ROUNDS {
            let (p2, p3) = send(&mut sw, &logs, &f);
            assert_eq!((p2.len(), p3.len()), (1, 0), "cache={cache} round {round}");
            assert_eq!(&p2[0][30..34], &[10, 63, 0, 99]);
        }
    }
}

#[test]
fn verdicts_through_the_pipeline_new_then_established_both_ways() {
    for (zone, cache) in [(71, true), (72, false)] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                &format!("priority=10,ip,ct_state=-trk,actions=ct(zone={zone},table=1)"),
                &format!(
                    "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit,zone={zone}),output:2"
                ),
                "table=1,priority=10,ip,ct_state=+trk+est,actions=output:3",
                "table=1,priority=1,actions=drop",
            ],
        );
        let a = udp([10, 64, 0, 1], [10, 64, 0, 2], 1000, 53);
        let b = udp([10, 64, 0, 2], [10, 64, 0, 1], 53, 1000);
        assert_eq!(
            send(&mut sw, &logs, &a),
            (vec![a.clone()], vec![]),
            "cache={cache}"
        );
        for round in 0..ROUNDS {
            assert_eq!(
                send(&mut sw, &logs, &b),
                (vec![], vec![b.clone()]),
                "{round}"
            );
            assert_eq!(
                send(&mut sw, &logs, &a),
                (vec![], vec![a.clone()]),
                "{round}"
            );
        }
        // A datagram with a bad UDP checksum is invalid: neither new nor established.
        let mut bad = a.clone();
        let n = bad.len();
        bad[n - 1] ^= 0x55;
        assert_eq!(
            send(&mut sw, &logs, &bad),
            (vec![], vec![]),
            "cache={cache}"
        );
    }
}

#[test]
fn a_round_larger_than_a_batch_or_from_two_ports_keeps_every_packet_and_its_key() {
    for cache in [true, false] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                // Two recirculations per packet: a round holds twice the batch.
                "priority=10,ip,ct_state=-trk,actions=ct(zone=81,table=1),ct(zone=81,table=2)",
                "table=1,priority=10,in_port=1,ip,ct_state=+trk,actions=output:2",
                "table=1,priority=10,in_port=2,ip,ct_state=+trk,actions=output:3",
                "table=2,priority=10,in_port=1,ip,ct_state=+trk,actions=output:3",
                "table=2,priority=10,in_port=2,ip,ct_state=+trk,actions=output:1",
            ],
        );
        let frames: Vec<Vec<u8>> = (0..200)
            .map(|i| udp([10, 81, 0, 1], [10, 81, 0, 2], 1000 + i, 53))
            .collect();
        let back: Vec<Vec<u8>> = (0..3)
            .map(|i| udp([10, 81, 0, 2], [10, 81, 0, 1], 53, 1000 + i))
            .collect();
        for round in 0..ROUNDS {
            // Both ports' packets before the switch settles: their upcall answers come
            // back together, and one round holds both ports' recirculations.
            sw.inject("br", "p1", &frames).expect("inject");
            sw.inject("br", "p2", &back).expect("inject");
            assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
            // Every frame is a flow of its own, and flows may pass each other (one waiting
            // for an upcall while a later one hits the cache, as in OVS): compare the frames
            // each port got, not their order.
            let sorted = |mut v: Vec<Vec<u8>>| {
                v.sort();
                v
            };
            let (p1, p2, p3) = (take(&logs[0]), take(&logs[1]), take(&logs[2]));
            let (frames, back) = (sorted(frames.clone()), sorted(back.clone()));
            assert_eq!(
                sorted(p2),
                frames,
                "cache={cache} round {round}: table 1 of p1's"
            );
            let (from1, from2): (Vec<_>, Vec<_>) =
                p3.into_iter().partition(|f| f[26..30] == [10, 81, 0, 1]);
            assert_eq!(
                sorted(from1),
                frames,
                "cache={cache} round {round}: table 2 of p1's"
            );
            assert_eq!(
                sorted(from2),
                back,
                "cache={cache} round {round}: table 1 of p2's"
            );
            assert_eq!(
                sorted(p1),
                back,
                "cache={cache} round {round}: table 2 of p2's"
            );
        }
    }
}

/// A `ct` with `nat` that translates nothing (a new packet before its commit) leaves the
/// pass's layers to the next pass; one that translates (a reply of an SNAT connection) makes
/// the next pass see the translated packet.
#[test]
fn a_nat_ct_that_translates_nothing_keeps_the_layers_and_one_that_does_not() {
    for (zone, cache, net) in [(65, true, 65u8), (66, false, 66)] {
        let (mut sw, logs, _u) = switch(
            cache,
            &[
                &format!("priority=10,ip,ct_state=-trk,actions=ct(zone={zone},nat,table=1)"),
                &format!(
                    "table=1,priority=20,ip,ct_state=+trk+new,nw_src=10.{net}.0.1,actions=ct(commit,zone={zone},nat(src=10.{net}.9.9)),output:2"
                ),
                &format!(
                    "table=1,priority=20,ip,ct_state=+trk+est+rpl+dnat,nw_dst=10.{net}.0.1,actions=output:3"
                ),
                "table=1,priority=1,actions=drop",
            ],
        );
        for (round, sport) in (1000..1000 + ROUNDS as u16).enumerate() {
            let f = udp([10, net, 0, 1], [10, net, 0, 2], sport, 53);
            let (p2, p3) = send(&mut sw, &logs, &f);
            assert_eq!((p2.len(), p3.len()), (1, 0), "cache={cache} round {round}");
            assert_eq!(&p2[0][26..30], &[10, net, 9, 9]);
            let nat_port = [p2[0][34], p2[0][35]];
            let r = conntrack::testpkt::udp4(
                [10, net, 0, 2],
                [10, net, 9, 9],
                53,
                u16::from_be_bytes(nat_port),
                b"payload!",
            );
            let (p2, p3) = send(&mut sw, &logs, &r);
            assert_eq!(
                (p2.len(), p3.len()),
                (0, 1),
                "reply, cache={cache} round {round}"
            );
            assert_eq!(&p3[0][30..34], &[10, net, 0, 1]);
            assert_eq!(u16::from_be_bytes([p3[0][36], p3[0][37]]), sport);
        }
    }
}
