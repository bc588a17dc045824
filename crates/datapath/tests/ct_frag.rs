//! Fragments at a `ct` action (`datapath::ipf`, `ofmodule::frag`): held until their
//! datagram is whole, then sent on by offset (as OVS) with the datagram's verdict; duplicates
//! and overlaps dropped alone; expired lists swept; NAT carried over to every fragment with
//! checksums right; reassembly off, or a refused fragment, is `+inv`; no pool buffer kept
//! or lost.
//!
//! The fragment lists are the process's, shared by the tests of this binary: one test
//! function runs the cases in turn (a sweep or a switch of one case must not see another's
//! lists), each with addresses of its own.

use conntrack::testpkt::{fragment4, fragment6, udp4, udp6, v6addr};
use conntrack::{Ipf, IpfConfig, IpfVerdict, PacketMeta};
use datapath::udpif::Udpif;
use datapath::PollSet;
use packet::csum;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::Log;

fn switch(cache: bool, flows: &[String]) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    let (sw, logs, u) = common::switch(cache, 1024, 3);
    for f in flows {
        common::of(&u, "add-flow", Some(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    (sw, logs, u)
}

fn take(log: &Log) -> Vec<Vec<u8>> {
    log.lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// Injects `frames` on `port`, one batch each, and returns what p1, p2 and p3 received.
fn send(sw: &mut PollSet, logs: &[Log], port: &str, frames: &[Vec<u8>]) -> [Vec<Vec<u8>>; 3] {
    for f in frames {
        sw.inject("br", port, std::slice::from_ref(f))
            .expect("inject");
        assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
    }
    [take(&logs[0]), take(&logs[1]), take(&logs[2])]
}

/// A firewall in `zone`: p1 may open connections (to p2), replies come back (to p1); the
/// tracker's verdict picks the port: new to p2, established from p1 to p3 (so that the
/// tests see the state), replies to p1; invalid from p1 to p3 as well (tests tell it from
/// established by what else they sent).
fn firewall(zone: u16) -> Vec<String> {
    let mut v = vec![];
    for ip in ["ip", "ipv6"] {
        v.extend([
            format!("priority=10,{ip},ct_state=-trk,actions=ct(zone={zone},table=1)"),
            format!("table=1,priority=10,{ip},in_port=1,ct_state=+trk+new,actions=ct(commit,zone={zone}),output:2"),
            format!("table=1,priority=10,{ip},in_port=1,ct_state=+trk+est,actions=output:3"),
            format!("table=1,priority=10,{ip},in_port=2,ct_state=+trk+est+rpl,actions=output:1"),
            format!("table=1,priority=10,{ip},in_port=1,ct_state=+trk+inv,actions=output:3"),
        ]);
    }
    v.push("table=1,priority=1,actions=drop".into());
    v
}

/// The datagram `frags` make, as a receiver reassembles them.
fn reassemble(frags: &[Vec<u8>]) -> Vec<u8> {
    let ipf = Ipf::new(IpfConfig::default());
    for (i, f) in frags.iter().enumerate() {
        let (k, o) = conntrack::testpkt::flow_of(f);
        let m = PacketMeta::from_flow(&k, &o).expect("ip");
        if let IpfVerdict::Complete(r) = ipf.add(f, &m, 0, i, 0) {
            return r.frame;
        }
    }
    panic!("incomplete");
}

/// Whether an IPv4 UDP frame's checksums are right.
fn udp4_ok(f: &[u8]) -> bool {
    let ip = &f[14..34];
    let l4 = &f[34..];
    let mut src = [0u8; 4];
    let mut dst = [0u8; 4];
    src.copy_from_slice(&ip[12..16]);
    dst.copy_from_slice(&ip[16..20]);
    let sum = csum::add(csum::pseudo_ipv4(src, dst, 17, l4.len() as u16), l4);
    csum::ipv4_header_ok(ip) && csum::fold(sum) == 0xffff
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

#[test]
fn fragments_through_ct() {
    for cache in [true, false] {
        held_then_sent_by_offset(cache);
        duplicates_and_overlaps_are_dropped_alone(cache);
        ipv6_fragments(cache);
        nat_reaches_every_fragment(cache);
    }
    expired_lists_are_swept();
    disabled_reassembly_makes_fragments_invalid();
}

fn zone(cache: bool, n: u16) -> u16 {
    n * 2 + u16::from(cache)
}

fn held_then_sent_by_offset(cache: bool) {
    let z = zone(cache, 10);
    let (mut sw, logs, _u) = switch(cache, &firewall(z));
    let a = [10, 90, z as u8, 1];
    let b = [10, 90, z as u8, 2];
    let whole = udp4(a, b, 4000, 53, &payload(4000, 1));
    let frags = fragment4(&whole, 1480);
    assert_eq!(frags.len(), 3);
    // Out of order: nothing leaves until the datagram is whole, then every fragment by
    // offset, unchanged, with the datagram's state (new: p2).
    let order = [2usize, 0, 1];
    for &i in &order[..2] {
        let got = send(&mut sw, &logs, "p1", std::slice::from_ref(&frags[i]));
        assert!(got.iter().all(|p| p.is_empty()), "cache={cache} {got:?}");
    }
    let got = send(&mut sw, &logs, "p1", std::slice::from_ref(&frags[order[2]]));
    assert_eq!(got[1], frags, "cache={cache}");
    assert!(got[0].is_empty() && got[2].is_empty());
    assert_eq!(sw.pool.outstanding(), 0, "cache={cache}");
    // A fragmented reply is established (p1); then the same datagram again too (p3).
    let reply = fragment4(&udp4(b, a, 53, 4000, &payload(3000, 2)), 1480);
    let got = send(&mut sw, &logs, "p2", &reply);
    assert_eq!(got[0], reply, "cache={cache}");
    let got = send(&mut sw, &logs, "p1", &frags);
    assert_eq!(got[2], frags, "cache={cache}");
    // An unfragmented datagram of the same connection as well.
    let small = udp4(a, b, 4000, 53, b"hello");
    let got = send(&mut sw, &logs, "p1", std::slice::from_ref(&small));
    assert_eq!(got[2], vec![small], "cache={cache}");
    assert_eq!(sw.pool.outstanding(), 0, "cache={cache}");
}

fn duplicates_and_overlaps_are_dropped_alone(cache: bool) {
    let z = zone(cache, 20);
    let (mut sw, logs, _u) = switch(cache, &firewall(z));
    let a = [10, 91, z as u8, 1];
    let b = [10, 91, z as u8, 2];
    let whole = udp4(a, b, 4001, 53, &payload(4000, 3));
    let frags = fragment4(&whole, 1480);
    let before = datapath::ipf::ipf().status().counts[0];
    // A duplicate of the first fragment, and a piece of another cut that overlaps it: each
    // refused alone, on as `+inv` (p3), the list kept.
    let other = fragment4(&whole, 1240);
    let got = send(
        &mut sw,
        &logs,
        "p1",
        &[
            frags[0].clone(),
            frags[0].clone(),
            other[1].clone(),
            frags[1].clone(),
        ],
    );
    assert_eq!(
        got[2],
        vec![frags[0].clone(), other[1].clone()],
        "cache={cache}"
    );
    assert!(got[0].is_empty() && got[1].is_empty(), "cache={cache}");
    let got = send(&mut sw, &logs, "p1", std::slice::from_ref(&frags[2]));
    assert_eq!(got[1], frags, "cache={cache}");
    let after = datapath::ipf::ipf().status().counts[0];
    assert_eq!(after.overlap - before.overlap, 2);
    // Made whole twice: at the `ct` of table 0 and at the committing `ct` of table 1.
    assert_eq!(after.completed - before.completed, 6);
    assert_eq!(sw.pool.outstanding(), 0, "cache={cache}");
}

fn ipv6_fragments(cache: bool) {
    let z = zone(cache, 30);
    let (mut sw, logs, _u) = switch(cache, &firewall(z));
    let (a, b) = (v6addr(0x3000 + z), v6addr(0x3100 + z));
    let whole = udp6(a, b, 4002, 53, &payload(3000, 4));
    let frags = fragment6(&whole, 1400, 0x1234_0000 + u32::from(z));
    assert_eq!(frags.len(), 3);
    let got = send(&mut sw, &logs, "p1", &[frags[1].clone(), frags[2].clone()]);
    assert!(got.iter().all(|p| p.is_empty()), "cache={cache}");
    let got = send(&mut sw, &logs, "p1", std::slice::from_ref(&frags[0]));
    assert_eq!(got[1], frags, "cache={cache}");
    let reply = fragment6(&udp6(b, a, 53, 4002, &payload(3000, 5)), 1400, 99);
    let got = send(&mut sw, &logs, "p2", &reply);
    assert_eq!(got[0], reply, "cache={cache}");
    assert_eq!(sw.pool.outstanding(), 0, "cache={cache}");
}

fn nat_reaches_every_fragment(cache: bool) {
    let z = zone(cache, 40);
    let flows = vec![
        format!("priority=10,ip,in_port=1,actions=ct(commit,zone={z},nat(src=10.92.{z}.99:30000-30000),table=1)"),
        format!("priority=10,ip,in_port=2,actions=ct(zone={z},nat,table=1)"),
        "table=1,priority=10,in_port=1,ct_state=+trk+snat,actions=output:2".into(),
        "table=1,priority=10,in_port=2,ct_state=+trk+est+rpl+dnat,actions=output:1".into(),
        "table=1,priority=1,actions=drop".into(),
    ];
    let (mut sw, logs, _u) = switch(cache, &flows);
    let a = [10, 92, z as u8, 1];
    let b = [10, 92, z as u8, 2];
    let nat = [10, 92, z as u8, 99];
    let whole = udp4(a, b, 4003, 53, &payload(4000, 6));
    let frags = fragment4(&whole, 1480);
    let got = send(
        &mut sw,
        &logs,
        "p1",
        &[frags[1].clone(), frags[0].clone(), frags[2].clone()],
    );
    let out = &got[1];
    assert_eq!(out.len(), 3, "cache={cache}");
    for f in out {
        assert_eq!(&f[26..30], &nat, "cache={cache}");
        assert!(csum::ipv4_header_ok(&f[14..34]));
    }
    // The first fragment carries the new port and the UDP checksum of the translated
    // datagram; the datagram a receiver makes of them checks.
    assert_eq!(&out[0][34..36], &30000u16.to_be_bytes());
    let got_whole = reassemble(out);
    assert!(udp4_ok(&got_whole), "cache={cache}");
    assert_eq!(&got_whole[42..], &whole[42..]);
    // The reply, to the NAT address, is translated back.
    let reply = fragment4(&udp4(b, nat, 53, 30000, &payload(3000, 7)), 1480);
    let got = send(&mut sw, &logs, "p2", &reply);
    assert_eq!(got[0].len(), 3, "cache={cache}");
    let back = reassemble(&got[0]);
    assert_eq!(&back[30..34], &a);
    assert_eq!(&back[36..38], &4003u16.to_be_bytes());
    assert!(udp4_ok(&back));
    assert_eq!(sw.pool.outstanding(), 0, "cache={cache}");
}

fn expired_lists_are_swept() {
    let (mut sw, logs, _u) = switch(true, &firewall(100));
    let whole = udp4([10, 93, 0, 1], [10, 93, 0, 2], 4004, 53, &payload(4000, 8));
    let frags = fragment4(&whole, 1480);
    let ipf = datapath::ipf::ipf();
    let held = ipf.held();
    let purged = ipf.status().counts[0].purged;
    let got = send(&mut sw, &logs, "p1", &frags[..2]);
    assert!(got.iter().all(|p| p.is_empty()));
    assert_eq!(ipf.held(), held + 2);
    assert_eq!(
        sw.pool.outstanding(),
        0,
        "held fragments keep no pool buffer"
    );
    assert!(ipf.dump_lists().contains("src=10.93.0.1,dst=10.93.0.2,"));
    // Not yet expired; then expired.
    assert_eq!(datapath::ipf::sweep(datapath::clock::now_ms()), 0);
    assert_eq!(datapath::ipf::sweep(datapath::clock::now_ms() + 16_000), 2);
    assert_eq!(ipf.held(), held);
    assert_eq!(ipf.status().counts[0].purged, purged + 2);
    // The last fragment alone is then held, not sent.
    let got = send(&mut sw, &logs, "p1", &frags[2..]);
    assert!(got.iter().all(|p| p.is_empty()));
    datapath::ipf::sweep(datapath::clock::now_ms() + 16_000);
}

fn disabled_reassembly_makes_fragments_invalid() {
    let (mut sw, logs, _u) = switch(true, &firewall(101));
    let whole = udp4([10, 94, 0, 1], [10, 94, 0, 2], 4005, 53, &payload(4000, 9));
    let frags = fragment4(&whole, 1480);
    let ipf = datapath::ipf::ipf();
    ipf.set_enabled(false, false);
    let got = send(&mut sw, &logs, "p1", &frags);
    ipf.set_enabled(false, true);
    assert_eq!(got[2], frags, "+inv, each as it came");
    assert!(got[1].is_empty());
    // Enabled again: the datagram is new.
    let got = send(&mut sw, &logs, "p1", &frags);
    assert_eq!(got[1], frags);
    assert_eq!(sw.pool.outstanding(), 0);
}
