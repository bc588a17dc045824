//! Single-pass encapsulation's underlay half: an outer burst a tunnel port hands over is
//! forwarded on its first packet's decision when that decision is one output and ignores
//! the L4 source port (the one key field a uniform burst's packets differ in), and packet by
//! packet otherwise; rule changes take effect on the next burst, and the counters of the
//! megaflow (so of the OpenFlow rule) and of the port count every packet.

use datapath::udpif::{self, Udpif};
use datapath::PollSet;
use std::time::Duration;

mod common;

use common::Log;

/// A UDP frame to MAC 02:00:00:00:00:`dst` with L4 source port `sport`.
fn outer(dst: u8, sport: u16) -> Vec<u8> {
    let mut f = netdev::null::udp_frame(64);
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f
}

fn burst(n: u16) -> Vec<Vec<u8>> {
    (0..n).map(|i| outer(2, 49152 + i)).collect()
}

fn len(l: &Log) -> usize {
    l.lock().map(|l| l.len()).unwrap_or(0)
}

fn of(u: &Udpif, verb: &str, arg: &str) {
    common::of(u, verb, Some(arg)).unwrap_or_else(|e| panic!("{verb} {arg}: {e}"));
}

fn send(sw: &mut PollSet, frames: &[Vec<u8>], uniform: bool) {
    sw.inject_encapsulated("br", "p1", frames, uniform)
        .expect("inject");
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
}

fn packets_of(u: &Udpif, priority: u64) -> u64 {
    let out = common::of(u, "dump-flows", None).expect("dump-flows");
    out.lines()
        .find(|l| l.contains(&format!("priority={priority},")))
        .and_then(|l| l.split("n_packets=").nth(1))
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no rule with priority {priority} in {out}"))
}

fn counter(sw: &PollSet, name: &str) -> u64 {
    sw.bridge("br")
        .map(|b| b.module.counters())
        .and_then(|c| c.into_iter().find(|(k, _)| *k == name))
        .map_or(0, |(_, v)| v)
}

#[test]
fn a_uniform_burst_goes_where_its_first_packet_goes_until_a_rule_changes() {
    let (mut sw, logs, u) = common::switch(true, 1024, 3);
    of(&u, "add-flow", "priority=10,in_port=1,actions=output:2");
    // The first burst misses: the slow path sees every packet and installs the megaflow.
    send(&mut sw, &burst(32), true);
    assert_eq!(len(&logs[1]), 32);
    // The next ones take the megaflow's decision once per burst (a packet with another
    // destination MAC, which this rule ignores, goes the same way).
    let mut b = burst(32);
    b[5] = outer(9, 1);
    send(&mut sw, &b, true);
    send(&mut sw, &burst(20), true);
    assert_eq!(len(&logs[1]), 84);
    assert_eq!(len(&logs[2]), 0);
    assert_eq!(counter(&sw, "megaflow_hits") + counter(&sw, "emc_hits"), 52);
    udpif::round(&u);
    assert_eq!(packets_of(&u, 10), 84, "the rule counts every packet");
    // A drop rule for the outer packets takes effect on the next burst.
    of(&u, "add-flow", "priority=20,in_port=1,udp,actions=drop");
    udpif::round(&u);
    send(&mut sw, &burst(32), true);
    assert_eq!(len(&logs[1]), 84, "dropped after the rule change");
    udpif::round(&u);
    assert_eq!(packets_of(&u, 20), 32);
    assert_eq!(packets_of(&u, 10), 84);
}

#[test]
fn a_decision_that_depends_on_the_source_port_is_made_per_packet() {
    let (mut sw, logs, u) = common::switch(true, 1024, 3);
    of(&u, "add-flow", "priority=10,in_port=1,actions=output:2");
    of(
        &u,
        "add-flow",
        "priority=20,in_port=1,udp,tp_src=49155,actions=output:3",
    );
    for _ in 0..3 {
        send(&mut sw, &burst(8), true);
    }
    assert_eq!(len(&logs[1]), 21);
    assert_eq!(len(&logs[2]), 3);
    udpif::round(&u);
    assert_eq!(packets_of(&u, 20), 3);
    assert_eq!(packets_of(&u, 10), 21);
}

#[test]
fn several_outputs_and_non_uniform_bursts_are_forwarded_per_packet() {
    let (mut sw, logs, u) = common::switch(true, 1024, 3);
    of(
        &u,
        "add-flow",
        "priority=10,in_port=1,dl_dst=02:00:00:00:00:02,actions=output:2,output:3",
    );
    of(&u, "add-flow", "priority=5,in_port=1,actions=output:3");
    for _ in 0..2 {
        send(&mut sw, &burst(8), true);
    }
    assert_eq!((len(&logs[1]), len(&logs[2])), (16, 16));
    // Not uniform: every packet is looked up, whatever the first one's decision.
    let mut b = burst(8);
    b[3] = outer(9, 1);
    send(&mut sw, &b, false);
    send(&mut sw, &b, false);
    assert_eq!((len(&logs[1]), len(&logs[2])), (30, 32));
}

#[test]
fn normal_decides_once_for_a_uniform_burst_when_it_names_a_port() {
    let (mut sw, logs, u) = common::switch(true, 1024, 3);
    of(&u, "add-flow", "actions=NORMAL");
    // Unknown destination: flooded (packet by packet) to p2 and p3.
    send(&mut sw, &burst(8), true);
    assert_eq!((len(&logs[1]), len(&logs[2])), (8, 8));
    // p2 answers from 02:00:00:00:00:02: learnt there, bursts now go to p2 alone.
    let mut back = netdev::null::udp_frame(64);
    back[..6].copy_from_slice(&netdev::null::udp_frame(64)[6..12]);
    back[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    sw.inject("br", "p2", &[back]).expect("inject");
    assert!(sw.settle(Duration::from_secs(10)));
    assert_eq!(len(&logs[0]), 1, "the reply reached p1");
    for _ in 0..3 {
        send(&mut sw, &burst(16), true);
    }
    assert_eq!((len(&logs[1]), len(&logs[2])), (56, 8));
}
