//! The recirculation shortcut (`ofmodule::skip`): a packet whose pass ends in `recirc` goes
//! straight to the megaflow the poll thread knows for the recirculated pass. These tests pin
//! that it is taken, and that it decides as the recirculated pass would:
//!
//! * the recirculated megaflow's counters (and so its rule's statistics) count every packet;
//! * a changed rule takes the traffic at once (the known megaflow is dead);
//! * a connection whose `ct_mark` changed, or whose packet turned invalid, is not sent where
//!   the known megaflow (still live) sends the old verdict;
//! * the word-by-word view of the recirculated key equals the key the queue would get, and a
//!   candidate megaflow's check made ready for its recirculation id (`ct::RecircCheck`)
//!   decides as the megaflow's compact compare on that key.
//!
//! The tracker is the process's own, shared by the tests of this file and the others: each
//! test uses addresses and zones of its own.

use conntrack::{ConnKey, CtResult};
use datapath::udpif::{self, Udpif};
use datapath::PollSet;
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::Log;

fn of(u: &Udpif, verb: &str, arg: Option<&str>) -> String {
    common::of(u, verb, arg).unwrap_or_else(|e| panic!("{verb} {arg:?}: {e}"))
}

fn switch(flows: &[&str]) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    let (sw, logs, u) = common::switch(true, 1024, 3);
    for f in flows {
        of(&u, "add-flow", Some(f));
    }
    (sw, logs, u)
}

fn take(log: &Log) -> Vec<Vec<u8>> {
    log.lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// Injects `f` on `port` and returns how many frames each of p1, p2 and p3 received.
fn send(sw: &mut PollSet, logs: &[Log], port: &str, f: &[u8]) -> [usize; 3] {
    sw.inject("br", port, &[f.to_vec()]).expect("inject");
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
    [
        take(&logs[0]).len(),
        take(&logs[1]).len(),
        take(&logs[2]).len(),
    ]
}

fn counter(sw: &PollSet, name: &str) -> u64 {
    sw.bridge("br")
        .map(|b| b.module.counters())
        .and_then(|c| c.into_iter().find(|(k, _)| *k == name))
        .map_or(0, |(_, v)| v)
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    conntrack::testpkt::udp4(src, dst, sport, dport, b"payload!")
}

/// The `n_packets` of the table-1 rule with `priority`, after a revalidation round pushed the
/// megaflows' counters to the rules.
fn rule_packets(u: &Udpif, priority: u64) -> u64 {
    udpif::round(u);
    let out = of(u, "dump-flows", Some("table=1"));
    let needle = format!("priority={priority},");
    let line = out
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no rule with priority {priority} in {out}"));
    line.split("n_packets=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no n_packets in {line}"))
}

const EST: &[&str] = &[
    "priority=10,ip,ct_state=-trk,actions=ct(zone=91,table=1)",
    "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit,zone=91),output:2",
    "table=1,priority=20,ip,ct_state=+trk+est,actions=output:3",
    "table=1,priority=1,actions=drop",
];

#[test]
fn established_packets_take_the_shortcut_and_their_rule_counts_them() {
    let (mut sw, logs, u) = switch(EST);
    let a = udp([10, 91, 0, 1], [10, 91, 0, 2], 1000, 53);
    let b = udp([10, 91, 0, 2], [10, 91, 0, 1], 53, 1000);
    assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 1, 0]);
    // The reply establishes the connection (UDP is `+new` until one is seen).
    assert_eq!(send(&mut sw, &logs, "p2", &b), [0, 0, 1]);
    let rounds = 10;
    for round in 0..rounds {
        assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 0, 1], "round {round}");
    }
    // The first established packet goes through the upcall, the second through the queue
    // (and teaches the shortcut its megaflow): the others take the shortcut.
    let shortcuts = counter(&sw, "recirc_shortcuts");
    assert!(shortcuts >= rounds - 2, "{shortcuts} shortcuts");
    assert_eq!(counter(&sw, "recirculations"), rounds + 2);
    assert_eq!(
        rule_packets(&u, 20),
        rounds + 1,
        "the +est rule's statistics"
    );
    assert_eq!(rule_packets(&u, 10), 1, "the +new rule's statistics");
}

#[test]
fn a_changed_rule_takes_the_traffic_at_once() {
    let (mut sw, logs, u) = switch(EST);
    let a = udp([10, 92, 0, 1], [10, 92, 0, 2], 1000, 53);
    let b = udp([10, 92, 0, 2], [10, 92, 0, 1], 53, 1000);
    assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 1, 0]);
    assert_eq!(send(&mut sw, &logs, "p2", &b), [0, 0, 1]);
    for round in 0..4 {
        assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 0, 1], "round {round}");
    }
    assert!(counter(&sw, "recirc_shortcuts") > 0);
    of(
        &u,
        "add-flow",
        Some("table=1,priority=20,ip,ct_state=+trk+est,actions=output:2"),
    );
    udpif::round(&u);
    for round in 0..4 {
        assert_eq!(
            send(&mut sw, &logs, "p1", &a),
            [0, 1, 0],
            "after, round {round}"
        );
    }
}

#[test]
fn a_connection_whose_mark_changed_or_an_invalid_packet_is_not_sent_the_old_way() {
    let (mut sw, logs, _u) = switch(&[
        "priority=10,ip,ct_state=-trk,actions=ct(zone=93,table=1)",
        // What comes in on p3 marks its connection.
        "priority=20,in_port=3,ip,ct_state=-trk,actions=ct(commit,zone=93,exec(set_field:0x5->ct_mark),table=2)",
        "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit,zone=93),output:2",
        "table=1,priority=20,ip,ct_state=+trk+est,ct_mark=0,actions=output:3",
        "table=1,priority=20,ip,ct_state=+trk+est,ct_mark=5,actions=output:2",
        "table=1,priority=1,actions=drop",
        "table=2,priority=1,actions=drop",
    ]);
    let a = udp([10, 93, 0, 1], [10, 93, 0, 2], 1000, 53);
    let b = udp([10, 93, 0, 2], [10, 93, 0, 1], 53, 1000);
    assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 1, 0]);
    assert_eq!(send(&mut sw, &logs, "p2", &b), [0, 0, 1]);
    for round in 0..4 {
        assert_eq!(send(&mut sw, &logs, "p1", &a), [0, 0, 1], "round {round}");
    }
    let before = counter(&sw, "recirc_shortcuts");
    assert!(before > 0);
    // The mark changes; the megaflow of `ct_mark=0` stays live.
    assert_eq!(send(&mut sw, &logs, "p3", &a), [0, 0, 0]);
    for round in 0..4 {
        assert_eq!(
            send(&mut sw, &logs, "p1", &a),
            [0, 1, 0],
            "marked, round {round}"
        );
    }
    assert!(counter(&sw, "recirc_shortcuts") > before + 1);
    // A datagram with a bad UDP checksum is `+inv`: dropped, not sent as established.
    let mut bad = a.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x55;
    assert_eq!(send(&mut sw, &logs, "p1", &bad), [0, 0, 0]);
}

fn verdict() -> impl Strategy<Value = Option<CtResult>> {
    proptest::option::of(
        (
            any::<u32>(),
            any::<u16>(),
            any::<u32>(),
            any::<u128>(),
            proptest::option::of((
                any::<[u8; 16]>(),
                any::<[u8; 16]>(),
                any::<(u16, u16, u8, u8)>(),
                prop::sample::select(vec![1u8, 6, 17, 47, 58]),
            )),
        )
            .prop_map(|(state, zone, mark, label, orig)| CtResult {
                state,
                zone,
                mark,
                label,
                orig: orig.map(|(src, dst, (sport, dport, t, c), proto)| ConnKey {
                    src,
                    dst,
                    sport,
                    dport,
                    zone,
                    proto,
                    v6: false,
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
    fn the_word_view_equals_the_recirculated_key(
        words in proptest::collection::vec(any::<u64>(), FLOW_KEY_WORDS),
        id in 1u32..,
        res in verdict(),
    ) {
        let words: [u64; FLOW_KEY_WORDS] = words.try_into().expect("45 words");
        let first = FlowKey::from_words(&words);
        let mut built = first;
        datapath::ct::recirculate_in_place(&mut built, id, res.as_ref());
        let view = datapath::ct::RecircWords::new(&first, id, res.as_ref());
        for (i, w) in built.as_words().iter().enumerate() {
            prop_assert_eq!(view.word(i), *w, "word {}", i);
        }
    }
}

/// Which words a megaflow's mask reads: the ones a recirculation writes (0: `in_port` and
/// `recirc_id`; the metadata and register words; the connection-tracking stage) and a few
/// of the pass's own.
fn mask_words() -> impl Strategy<Value = Vec<(usize, u64)>> {
    let ct = packet::flow::CT_WORDS_START;
    let meta = std::mem::offset_of!(FlowKey, metadata) / 8;
    let regs = std::mem::offset_of!(FlowKey, regs) / 8;
    let idx = prop::sample::select(vec![
        0,
        1,
        2,
        meta,
        regs,
        regs + 1,
        ct,
        ct + 1,
        ct + 2,
        ct + 5,
        ct + 7,
        FLOW_KEY_WORDS - 1,
    ]);
    let mask = prop_oneof![
        Just(u64::MAX),
        Just(0xffff_ffff_0000_0000),
        Just(0x0000_0000_ffff_ffff),
        Just(0xff),
        1u64..,
    ];
    proptest::collection::vec((idx, mask), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn a_candidates_check_equals_its_compact_compare_on_the_recirculated_key(
        words in proptest::collection::vec(any::<u64>(), FLOW_KEY_WORDS),
        id in 1u32..4,
        mid in 1u32..4,
        res in verdict(),
        masks in mask_words(),
        flips in proptest::collection::vec(any::<prop::sample::Index>(), 0..2),
        pass_masks in mask_words(),
    ) {
        let words: [u64; FLOW_KEY_WORDS] = words.try_into().expect("45 words");
        let first = FlowKey::from_words(&words);
        let mut built = first;
        datapath::ct::recirculate_in_place(&mut built, id, res.as_ref());
        // The megaflow's flow: the recirculated key (so that it often matches), under the
        // id `mid`, with a word changed now and then.
        let mut flow = built;
        flow.recirc_id = mid;
        let mut fw = *flow.as_words();
        for f in &flips {
            let i = f.index(FLOW_KEY_WORDS);
            fw[i] ^= 1 << (i % 64);
        }
        let mut mw = [0u64; FLOW_KEY_WORDS];
        for (i, m) in &masks {
            mw[*i] |= *m;
        }
        let m = datapath::dpcls::Megaflow::new(
            1,
            FlowKey::from_words(&fw),
            FlowKey::from_words(&mw),
            vec![ofproto::odp::DpAction::Output(2)],
            vec![],
            vec![],
            1,
            0,
        );
        let want = m.covers_words(|i| built.as_words()[i]).expect("a compact compare");
        let view = datapath::ct::RecircWords::new(&first, id, res.as_ref());
        let check = datapath::ct::RecircCheck::new(m.compact_words(), id);
        let got = check.is_some_and(|c| c.covers(&view));
        prop_assert_eq!(got, want);
        // The check made ready for the packets of a pass's megaflow that covers `first`
        // (the shortcut's plan): decided on the pass's words where that mask reads them,
        // then the verdict's first word where it is all that is left.
        let mut pw = [0u64; FLOW_KEY_WORDS];
        for (i, m) in &pass_masks {
            pw[*i] |= *m;
        }
        let pass = datapath::dpcls::Megaflow::new(
            2,
            first,
            FlowKey::from_words(&pw),
            vec![ofproto::odp::DpAction::Output(3)],
            vec![],
            vec![],
            1,
            0,
        );
        if let Some(c) = check {
            match c.first_on(&pass.mask, &pass.key) {
                Some(false) => prop_assert!(!got),
                Some(true) => {
                    if let Some((mask, val)) = c.ct0_only() {
                        prop_assert_eq!(got, view.ct(0) & mask == val);
                    }
                }
                None => {}
            }
        }
    }
}
