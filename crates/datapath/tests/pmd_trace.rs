//! The fast-path trace (`pmd-trace BR N`, `pmd-trace-show BR`): the next N packets a bridge
//! receives are recorded with the module's decision and where they went — for the
//! `openflow` module, which cache answered (upcall, megaflow classifier, the previous
//! packet's megaflow, EMC) and the datapath actions; for a module answering with a
//! destination, that destination. Packets after the budget are not recorded, and traced
//! packets are forwarded as untraced ones are.

use datapath::bridge::trace::TraceRecord;
use datapath::module::VlanMode;
use datapath::{registry, PollSet};
use std::time::Duration;

mod common;

use common::{Log, Sink};

/// An Ethernet/IPv4/UDP frame to MAC 02:00:00:00:00:`dst` from 02:00:00:00:00:`src`.
fn frame(dst: u8, src: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x08, 0x00];
    f.extend_from_slice(&[
        0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 26, 0, 0]);
    f.resize(60, 0);
    f
}

fn count(log: &Log) -> usize {
    log.lock().map(|l| l.len()).unwrap_or(0)
}

fn send(sw: &mut PollSet, port: &str, f: Vec<u8>) {
    sw.inject("br", port, &[f]).expect("inject");
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
}

fn records(sw: &PollSet) -> Vec<TraceRecord> {
    sw.bridge("br")
        .and_then(|b| b.trace())
        .map(|t| t.records.iter().cloned().collect())
        .unwrap_or_default()
}

fn cmd(sw: &mut PollSet, verb: &str, args: &[&str]) -> String {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    sw.module_command("br", verb, &a, false)
        .unwrap_or_else(|e| panic!("{verb}: {e}"))
}

#[test]
fn openflow_trace_names_the_cache_that_answered() {
    let (mut sw, logs, u) = common::switch(true, 1024, 3);
    sw.configure_bridge("br", "emc-insert-inv-prob", "1")
        .expect("emc");
    for f in [
        "dl_dst=02:00:00:00:00:02,actions=output:2",
        "dl_dst=02:00:00:00:00:03,actions=output:2,output:3",
    ] {
        common::of(&u, "add-flow", Some(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    cmd(&mut sw, "pmd-trace", &["6"]);
    let (a, b, none) = (frame(2, 1), frame(3, 1), frame(9, 1));
    // Each flow's first packet goes to the slow path; the next ones hit the megaflow
    // classifier (and enter the EMC), the previous packet's megaflow, or the EMC.
    for f in [&a, &b, &a, &b, &b, &a] {
        send(&mut sw, "p1", f.clone());
    }
    // Past the budget: forwarded, not traced.
    send(&mut sw, "p1", a.clone());
    send(&mut sw, "p1", none.clone());
    let r = records(&sw);
    let d: Vec<&str> = r.iter().map(|r| r.decision.as_str()).collect();
    assert_eq!(r.len(), 6, "{d:?}");
    assert!(d[0].starts_with("upcall"), "{d:?}");
    assert!(d[1].starts_with("upcall"), "{d:?}");
    assert!(d[2].starts_with("megaflow hit (dpcls)"), "{d:?}");
    assert!(d[3].starts_with("megaflow hit (dpcls)"), "{d:?}");
    assert!(
        d[4].starts_with("megaflow hit (the previous packet's)"),
        "{d:?}"
    );
    assert!(d[5].starts_with("emc hit"), "{d:?}");
    assert!(d[2].ends_with("actions:2"), "{d:?}");
    assert!(d[3].ends_with("actions:2,3"), "{d:?}");
    assert!(r.iter().all(|r| r.in_port == "p1" && r.len == 60));
    // An upcalled packet leaves later, from the slow path's answer.
    assert!(r[0].outputs.is_empty() && !r[0].dropped);
    assert_eq!(r[2].outputs, vec!["p2"]);
    let mut outs = r[3].outputs.clone();
    outs.sort();
    assert_eq!(outs, vec!["p2", "p3"]);
    assert_eq!(r[5].outputs, vec!["p2"]);
    // Every packet was forwarded: four of flow a to p2, three of flow b to p2 and p3.
    assert_eq!((count(&logs[1]), count(&logs[2])), (4 + 3, 3));
    // `pmd-trace-show`'s report: the budget is spent, the records are the ones above.
    let report = sw.trace_report("br").expect("report");
    assert_eq!(report.budget, 0);
    assert_eq!(report.records, r);
    assert_eq!(report.records[5].seq, 5);
    // Disarmed: records gone, nothing traced.
    cmd(&mut sw, "pmd-trace", &["0"]);
    send(&mut sw, "p1", a);
    assert!(records(&sw).is_empty());
}

#[test]
fn learning_trace_shows_destinations_and_drops() {
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("learning").expect("module"), None)
        .expect("bridge");
    let mut logs = Vec::new();
    for p in ["p1", "p2", "p3"] {
        let (s, l) = Sink::new(p);
        sw.add_port("br", Box::new(s), None, VlanMode::Trunk(None))
            .expect("port");
        logs.push(l);
    }
    cmd(&mut sw, "pmd-trace", &["3"]);
    // Unknown destination: flooded. Then 2 answers from p2: learned, to p1. A frame to
    // a host on its own ingress port is dropped.
    send(&mut sw, "p1", frame(2, 1));
    send(&mut sw, "p2", frame(1, 2));
    send(&mut sw, "p2", frame(2, 2));
    let r = records(&sw);
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].decision, "flood");
    let mut outs = r[0].outputs.clone();
    outs.sort();
    assert_eq!(outs, vec!["p2", "p3"]);
    assert_eq!(r[1].decision, "port p1");
    assert_eq!(
        (r[1].in_port.as_str(), r[1].outputs.clone()),
        ("p2", vec!["p1".to_string()])
    );
    assert_eq!(r[2].decision, "drop");
    assert!(r[2].dropped && r[2].outputs.is_empty());
    assert_eq!(count(&logs[0]), 1);
    let report = sw.trace_report("br").expect("report");
    assert_eq!((report.budget, report.records), (0, r));
    assert!(
        sw.module_command("br", "pmd-trace-show", &[], true)
            .is_err(),
        "pmd-trace-show is a report, not a verb"
    );
    assert_eq!(sw.pool.outstanding(), 0);
}
