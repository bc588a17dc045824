//! The caching datapath against the uncached pipeline: for random rule sets and random
//! packet streams, with rule changes made mid-stream, every output port receives exactly the
//! same frames (same bytes, rewrites included) from both, and drops match. This is the
//! revalidation-correctness test: a stale megaflow used after a rule change was acknowledged
//! would deliver a frame the uncached pipeline does not.

use datapath::udpif::Udpif;
use datapath::PollSet;
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::{of, Log};

fn switch(cache: bool) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    // The daemon's default, OVS's: one tag parsed (this file is its own process).
    packet::flow::set_vlan_limit(1);
    let (sw, logs, u) = common::switch(cache, 8192, 4);
    of(
        &u,
        "add-group",
        Some("group_id=1,type=select,bucket=output:2,bucket=output:3,bucket=output:4"),
    )
    .expect("group");
    (sw, logs, u)
}

fn rule(kind: u8, p: u16, a: u8, port: u16) -> String {
    let out = a % 4 + 1;
    match kind % 12 {
        0 => format!("priority={p},ip,nw_dst=10.{a}.0.0/16,actions=output:{out}"),
        1 => format!("priority={p},tcp,tp_dst={port},actions=mod_tp_dst:9999,output:{out}"),
        2 => format!("priority={p},in_port={out},actions=output:{}", out % 4 + 1),
        3 => format!("priority={p},udp,tp_src={port},actions=dec_ttl,output:{out}"),
        4 => format!("priority={p},ip,nw_src=10.{a}.0.0/8,actions=mod_nw_src:1.2.3.4,output:{out}"),
        5 => format!("priority={p},ip,actions=group:1"),
        6 => format!(
            "priority={p},tcp,actions=push_vlan:0x8100,set_field:4097->vlan_vid,output:{out}"
        ),
        7 => format!("priority={p},ip,nw_ttl={},actions=drop", a % 3),
        8 => format!(
            "priority={p},ip,nw_dst=10.{a}.1.0/24,actions=write_metadata:0x1/0x1,goto_table:1"
        ),
        // A select group re-parses the packet as OVS's recirculation does: under
        // vlan-limit 1 a tagged frame with a pushed tag loses its IP header for table 1.
        10 => format!("priority={p},actions=push_vlan:0x8100,group:1,goto_table:1"),
        11 => format!("table=1,priority={p},ip,nw_dst=10.{a}.0.0/16,actions=output:{out}"),
        _ => format!(
            "table=1,priority={p},metadata=0x1,actions=output:{out},output:{}",
            (out % 4) + 1
        ),
    }
}

fn frame(w: u64, id: u32) -> Vec<u8> {
    let src = [10, (w % 3) as u8, (w >> 8) as u8 % 2, 1];
    let dst = [10, ((w >> 16) % 3) as u8, ((w >> 24) % 3) as u8, 5];
    let tcp = (w >> 32) & 1 == 0;
    let sport = 1000 + ((w >> 33) % 4) as u16;
    let dport = 2000 + ((w >> 36) % 4) as u16;
    let ttl = ((w >> 40) % 3) as u8 + 1;
    let mut f = vec![0u8; 14];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12] = 0x08;
    let payload = id.to_be_bytes();
    let l4_len = if tcp { 20 } else { 8 } + payload.len();
    let total = 20 + l4_len;
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0,
        0,
        ttl,
        if tcp { 6 } else { 17 },
        0,
        0,
    ];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = packet::csum::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    if tcp {
        l4.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        l4.extend_from_slice(&(l4_len as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
    }
    l4.extend_from_slice(&payload);
    f.extend_from_slice(&l4);
    let l3 = 14;
    let l4o = 34;
    let cs = if tcp { 16 } else { 6 };
    packet::csum::set_l4_checksum(&mut f, l3, l4o, cs, if tcp { 6 } else { 17 }, true);
    // One packet in four carries an 802.1Q tag (VID 1 or 2).
    if (w >> 44).is_multiple_of(4) {
        let vid = 1 + ((w >> 46) & 1) as u8;
        f.splice(12..12, [0x81, 0x00, 0, vid]);
    }
    f
}

fn sorted(logs: &[Log]) -> Vec<Vec<Vec<u8>>> {
    logs.iter()
        .map(|l| {
            let mut v = l.lock().map(|x| x.clone()).unwrap_or_default();
            v.sort();
            v
        })
        .collect()
}

type Rules = Vec<(u8, u16, u8, u16)>;
type Changes = Vec<(u8, u16, u8, u16, bool)>;
type Stream = Vec<(u64, u8)>;

/// Runs one case: the rules, then the stream in rounds with a rule change between rounds,
/// on the cached and the uncached datapath; every port must get the same frames. `batched`
/// injects each round's packets of one port as one batch (up to hundreds of packets: the
/// lookup's chunks, the previous-megaflow check, the EMC and the per-port collection of
/// outputs all see several packets), else one packet at a time.
fn run_case(
    rules: &Rules,
    changes: &Changes,
    stream: &Stream,
    batched: bool,
) -> Result<(), TestCaseError> {
    let (mut cached, clogs, cu) = switch(true);
    let (mut plain, plogs, pu) = switch(false);
    // Both sides are given the same changes; one refused is refused by both.
    let apply = |u: &Udpif, verb: &str, text: &str| {
        let _ = of(u, verb, Some(text));
    };
    for (k, p, a, port) in rules {
        let t = rule(*k, *p, *a, *port);
        apply(&cu, "add-flow", &t);
        apply(&pu, "add-flow", &t);
    }
    let chunk = stream.len() / (changes.len() + 1) + 1;
    let mut id = 0u32;
    for (round, part) in stream.chunks(chunk).enumerate() {
        if batched {
            // Twice: first mostly misses (upcalls), then mostly cache hits.
            for _ in 0..2 {
                for in_port in 1..=4u8 {
                    let frames: Vec<Vec<u8>> = part
                        .iter()
                        .filter(|(_, p)| *p == in_port)
                        .map(|(w, _)| {
                            id += 1;
                            frame(*w, id)
                        })
                        .collect();
                    let port = format!("p{in_port}");
                    cached.inject("br", &port, &frames).expect("inject");
                    plain.inject("br", &port, &frames).expect("inject");
                }
                prop_assert!(
                    cached.settle(Duration::from_secs(10)),
                    "upcalls did not settle"
                );
                plain.settle(Duration::from_secs(1));
            }
        } else {
            for (w, in_port) in part {
                id += 1;
                let f = frame(*w, id);
                let port = format!("p{in_port}");
                cached
                    .inject("br", &port, std::slice::from_ref(&f))
                    .expect("inject");
                plain
                    .inject("br", &port, std::slice::from_ref(&f))
                    .expect("inject");
            }
            prop_assert!(
                cached.settle(Duration::from_secs(10)),
                "upcalls did not settle"
            );
            plain.settle(Duration::from_secs(1));
        }
        // A rule change mid-stream, acknowledged before the next packets.
        if let Some((k, p, a, port, delete)) = changes.get(round) {
            let t = rule(*k, *p, *a, *port);
            if *delete {
                let m = t.split(",actions=").next().unwrap_or("").to_string();
                apply(&cu, "del-flows", &m);
                apply(&pu, "del-flows", &m);
            } else {
                apply(&cu, "add-flow", &t);
                apply(&pu, "add-flow", &t);
            }
        }
    }
    prop_assert!(cached.settle(Duration::from_secs(10)));
    let (a, b) = (sorted(&clogs), sorted(&plogs));
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        prop_assert_eq!(x.len(), y.len(), "port {} frame count", i + 1);
        prop_assert_eq!(x, y, "port {} frames", i + 1);
    }
    cached.shutdown();
    plain.shutdown();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn cached_and_uncached_datapaths_forward_identically(
        rules in prop::collection::vec((any::<u8>(), 1u16..200, 0u8..3, 1000u16..1004), 1..16),
        changes in prop::collection::vec((any::<u8>(), 1u16..200, 0u8..3, 1000u16..1004, any::<bool>()), 1..6),
        stream in prop::collection::vec((any::<u64>(), 1u8..5), 20..120),
    ) {
        run_case(&rules, &changes, &stream, false)?;
    }

    #[test]
    fn cached_and_uncached_datapaths_forward_identically_in_batches(
        rules in prop::collection::vec((any::<u8>(), 1u16..200, 0u8..3, 1000u16..1004), 1..16),
        changes in prop::collection::vec((any::<u8>(), 1u16..200, 0u8..3, 1000u16..1004, any::<bool>()), 1..4),
        stream in prop::collection::vec((any::<u64>(), 1u8..5), 200..1200),
    ) {
        run_case(&rules, &changes, &stream, true)?;
    }
}
