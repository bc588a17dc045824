//! The loop for megaflows of `[ct(..), recirc(..)]` (`ofmodule::ctrun`) against the general
//! action loop: the same traffic, in the same batches, through a module with it and one
//! without it (`OpenFlow::set_ct_runs(false)`), must leave the same frames on each port,
//! with the same counters, the same rule statistics and the same connections in the
//! tracker. Where the handler thread answers upcalls meanwhile, when a megaflow is
//! installed (so which packets are upcalls and in which order packets waiting for one
//! leave) depends on timing: those runs compare each port's frames as a multiset and the
//! passes (cache hits plus upcalls); batches that only hit megaflows compare the order. The
//! recirculation shortcuts taken are left out of the compared counters for the same reason
//! (each megaflow's remembered candidate comes from the first, timed run); the test of one
//! connection back and forth counts them.
//!
//! The tracker is the process's own: the tests of this file take turns (`TURN`), and each
//! run starts from an empty tracker.

use conntrack::testpkt::{self, ACK, FIN, RST, SYN};
use datapath::module::VlanMode;
use datapath::ofmodule::OpenFlow;
use datapath::udpif::{self, Udpif};
use datapath::PollSet;
use proptest::prelude::*;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

mod common;

use common::{Log, Sink};

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

const PLAIN: &[&str] = &[
    "table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1)",
    "table=0,priority=20,udp,tp_dst=53,ct_state=-trk,actions=ct(zone=7,table=1)",
    "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit),output:2",
    "table=1,priority=10,ip,ct_state=+trk+est,actions=output:2",
    "table=1,priority=20,ip,ct_state=+trk+est+rpl,actions=output:3",
    "table=1,priority=1,actions=drop",
];

const NAT: &[&str] = &[
    "table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1,nat)",
    "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit,nat(src=10.78.0.1)),output:2",
    "table=1,priority=10,ip,ct_state=+trk+est,actions=output:2",
    "table=1,priority=20,ip,ct_state=+trk+est+rpl,actions=output:3",
    "table=1,priority=1,actions=drop",
];

/// One packet: connection (0, 1: UDP; 2: UDP to port 53; 3: TCP), direction, TCP flags.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    conn: u8,
    reply: bool,
    flags: u16,
}

fn frame(p: Pkt) -> Vec<u8> {
    let a = [10, 77, p.conn, 1];
    let b = [10, 77, p.conn, 2];
    let (sport, dport) = match p.conn {
        2 => (4000, 53),
        c => (4000 + u16::from(c), 80),
    };
    let (src, dst, sport, dport) = if p.reply {
        (b, a, dport, sport)
    } else {
        (a, b, sport, dport)
    };
    if p.conn == 3 {
        let seq = if p.reply { 5000 } else { 1000 };
        testpkt::tcp4(src, dst, sport, dport, seq, 0, p.flags, b"")
    } else {
        testpkt::udp4(src, dst, sport, dport, b"payload!")
    }
}

fn pkt() -> impl Strategy<Value = Pkt> {
    (
        0u8..4,
        any::<bool>(),
        prop::sample::select(vec![SYN, SYN | ACK, ACK, RST, FIN | ACK]),
    )
        .prop_map(|(conn, reply, flags)| Pkt { conn, reply, flags })
}

/// What a run left: frames per port, the module's counters, each rule's counters, the
/// tracker's connections.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// Each port's frames, sorted.
    ports: Vec<Vec<Vec<u8>>>,
    /// Per batch, each port's frames in the order they left.
    order: Vec<Vec<Vec<Vec<u8>>>>,
    counters: Vec<(&'static str, u64)>,
    rules: Vec<String>,
    conns: String,
    /// Upcalls in the measured run (none: nothing depended on timing).
    upcalls: u64,
    /// Recirculation shortcuts taken in the measured run (not in `counters`).
    shortcuts: u64,
}

/// Each rule's (n_packets, n_bytes), after a revalidation round pushed the megaflows'
/// counters to the rules, by the rest of its line.
fn rules(u: &Udpif) -> Vec<(String, u64, u64)> {
    udpif::round(u);
    common::of(u, "dump-flows", None)
        .expect("dump-flows")
        .lines()
        .filter_map(|l| {
            let n = l
                .split("n_packets=")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            let b = l
                .split("n_bytes=")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            let r = l.split("priority=").nth(1)?;
            Some((r.to_string(), n, b))
        })
        .collect()
}

fn counters(sw: &PollSet) -> Vec<(&'static str, u64)> {
    sw.bridge("br")
        .map(|b| b.module.counters())
        .unwrap_or_default()
}

/// `batches` through a switch with `flows`, twice: the first time installs the megaflows
/// the traffic needs; the second, from an empty tracker, is the outcome.
fn run(ct_runs: bool, flows: &[&str], batches: &[Vec<Pkt>]) -> Outcome {
    let mut sw = PollSet::new(1024);
    let mut m = OpenFlow::new(true).expect("module");
    m.set_ct_runs(ct_runs);
    let u: Arc<Udpif> = Arc::clone(m.udpif());
    sw.add_bridge("br", Box::new(m), None).expect("bridge");
    let mut logs: Vec<Log> = Vec::new();
    for p in 1..=3u32 {
        let (port, log) = Sink::new(&format!("p{p}"));
        sw.add_port("br", Box::new(port), Some(p), VlanMode::Trunk(None))
            .expect("port");
        logs.push(log);
    }
    common::of(&u, "del-flows", None).expect("del-flows");
    for f in flows {
        common::of(&u, "add-flow", Some(f)).expect("add-flow");
    }
    let mut order = Vec::new();
    let (mut c0, mut r0) = (Vec::new(), Vec::new());
    for round in 0..2 {
        datapath::ct::tracker().flush(conntrack::Flush::All);
        order.clear();
        c0 = counters(&sw);
        r0 = rules(&u);
        for b in batches {
            let frames: Vec<Vec<u8>> = b.iter().map(|p| frame(*p)).collect();
            sw.inject("br", "p1", &frames).expect("inject");
            assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
            let left: Vec<Vec<Vec<u8>>> = logs
                .iter()
                .map(|l| {
                    l.lock()
                        .map(|mut v| std::mem::take(&mut *v))
                        .unwrap_or_default()
                })
                .collect();
            if round == 1 {
                order.push(left);
            }
        }
    }
    let mut ports = vec![Vec::new(); logs.len()];
    for left in &order {
        for (all, l) in ports.iter_mut().zip(left) {
            all.extend(l.iter().cloned());
        }
    }
    for p in ports.iter_mut() {
        p.sort();
    }
    let c1 = counters(&sw);
    let delta = |name: &str| {
        let get = |c: &[(&str, u64)]| c.iter().find(|(k, _)| *k == name).map_or(0, |c| c.1);
        get(&c1) - get(&c0)
    };
    let mut counters: Vec<(&'static str, u64)> = c1
        .iter()
        // Which packets were upcalls, and what the handler and revalidator threads did
        // meanwhile, depend on timing (see the module documentation).
        .filter(|(k, _)| {
            !matches!(
                *k,
                "revalidated"
                    | "killed_changed"
                    | "killed_idle"
                    | "flow_limit"
                    | "megaflows"
                    | "masks"
                    | "megaflow_hits"
                    | "subtable_lookups"
                    | "emc_hits"
                    | "upcalls"
                    | "handler_xlates"
                    | "handler_reused"
                    | "installed"
                    // A shortcut takes the megaflow a recirculation found last, remembered
                    // per megaflow since the first run: which one that is depends on the
                    // order the handler installed them in. The frames, rules and
                    // connections compared show that every shortcut decided as the lookup
                    // would; `one_connection_back_and_forth...` counts them where the
                    // first run is fixed.
                    | "recirc_shortcuts"
            )
        })
        .map(|(k, _)| (*k, delta(k)))
        .collect();
    counters.push((
        "passes",
        delta("emc_hits") + delta("megaflow_hits") + delta("upcalls"),
    ));
    let rules = rules(&u)
        .into_iter()
        .map(|(r, n, b)| {
            let (n0, b0) = r0.iter().find(|x| x.0 == r).map_or((0, 0), |x| (x.1, x.2));
            format!("{r} {} {}", n - n0, b - b0)
        })
        .collect();
    let conns = datapath::ct::tracker().dump(None, false, datapath::clock::now_ms());
    Outcome {
        ports,
        order,
        upcalls: delta("upcalls"),
        shortcuts: delta("recirc_shortcuts"),
        counters,
        rules,
        conns,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_ct_recirc_loop_decides_as_the_general_one(
        nat in any::<bool>(),
        batches in prop::collection::vec(prop::collection::vec(pkt(), 1..48), 1..6),
    ) {
        let _turn = turn();
        let flows = if nat { NAT } else { PLAIN };
        let general = run(false, flows, &batches);
        let special = run(true, flows, &batches);
        prop_assert!(
            general.ports.iter().map(Vec::len).sum::<usize>() > 0
                || batches.iter().all(|b| b.iter().all(|p| p.conn == 3)),
            "nothing forwarded: {general:?}"
        );
        let frames = |o: &Outcome| o.ports.iter().map(Vec::len).sum::<usize>();
        prop_assert_eq!(frames(&general), frames(&special));
        if general.upcalls == 0 && special.upcalls == 0 {
            prop_assert_eq!(&general.ports, &special.ports);
            prop_assert_eq!(&general.order, &special.order);
            prop_assert_eq!(&general.rules, &special.rules);
            prop_assert_eq!(&general.conns, &special.conns);
            prop_assert_eq!(&general.counters, &special.counters);
        }
    }
}

/// The same traffic as W8 (a): one connection's datagram and its reply, batch after batch.
/// The recirculation shortcut and the collected outputs are taken, as in the general loop.
#[test]
fn one_connection_back_and_forth_takes_the_shortcut_in_both_loops() {
    let one = |reply| Pkt {
        conn: 0,
        reply,
        flags: 0,
    };
    let batch: Vec<Pkt> = (0..32).map(|i| one(i % 2 == 1)).collect();
    let batches = vec![batch; 6];
    let _turn = turn();
    let general = run(false, PLAIN, &batches);
    let special = run(true, PLAIN, &batches);
    // The measured run finds every megaflow installed and learned: from the second batch
    // (the first is new connections, committed), every packet's second pass is a shortcut.
    assert_eq!(special.upcalls, 0, "{:?}", special.counters);
    assert_eq!(special.shortcuts, 5 * 32, "{:?}", special.counters);
    assert_eq!(general.shortcuts, special.shortcuts);
    assert_eq!(general.ports[1].len() + general.ports[2].len(), 6 * 32);
    assert_eq!(general, special);
    assert_eq!(special.order[5][2].len(), 16, "each batch's replies to p3");
}
