//! Revalidation moves traffic to a new rule even when the new rule's actions are the same as
//! the old one's (so the new rule's counters are right).

use datapath::module::VlanMode;
use datapath::ofmodule::OpenFlow;
use datapath::udpif::{self, Udpif};
use datapath::PollSet;
use netdev::Options;
use std::sync::Arc;
use std::time::Duration;

fn udp(i: u16) -> Vec<u8> {
    let mut f = netdev::null::udp_frame(64);
    f[34..36].copy_from_slice(&(2000 + i).to_be_bytes());
    f
}

/// An OpenFlow verb, from the thread that runs the switch's loop.
fn of(u: &Udpif, verb: &str, args: &[&str], json: bool) -> String {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    ofctl::run_as(
        u,
        verb,
        &a,
        json,
        datapath::clock::now_ms(),
        ofctl::Caller::PollThread,
    )
    .unwrap_or_else(|e| panic!("{verb}: {e}"))
}

fn packets_of(u: &Udpif, priority: u64) -> u64 {
    let out = of(u, "dump-flows", &[], true);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    v.as_array()
        .expect("flows")
        .iter()
        .find(|f| f["priority"].as_u64() == Some(priority))
        .and_then(|f| f["n_packets"].as_u64())
        .unwrap_or_else(|| panic!("no rule with priority {priority} in {out}"))
}

#[test]
fn a_shadowing_rule_with_the_same_actions_gets_the_traffic() {
    let mut sw = PollSet::new(1024);
    let m = OpenFlow::new(true).expect("module");
    let u: Arc<Udpif> = Arc::clone(m.udpif());
    sw.add_bridge("br", Box::new(m), None).expect("bridge");
    for (n, p) in [("a", 1), ("b", 2)] {
        let port = netdev::open(n, "null", &Options::new()).expect("null");
        sw.add_port("br", port, Some(p), VlanMode::Trunk(None))
            .expect("port");
    }
    of(&u, "del-flows", &[], false);
    // The rule added below has the same match and actions as this one: the megaflow's mask
    // and actions stay the same, only the rule it comes from changes.
    of(&u, "add-flow", &["priority=10,udp,actions=drop"], false);
    let frames: Vec<Vec<u8>> = (0..10).map(|_| udp(1)).collect();
    sw.inject("br", "a", &frames).expect("inject");
    assert!(sw.settle(Duration::from_secs(5)));
    udpif::round(&u);
    assert_eq!(packets_of(&u, 10), 10);

    // Same treatment, higher priority: the megaflow must be retranslated, not kept.
    of(&u, "add-flow", &["priority=100,udp,actions=drop"], false);
    udpif::round(&u);
    sw.inject("br", "a", &frames).expect("inject");
    assert!(sw.settle(Duration::from_secs(5)));
    udpif::round(&u);
    assert_eq!(packets_of(&u, 100), 10, "the new rule's counters");
    assert_eq!(packets_of(&u, 10), 10, "the old rule got nothing more");
}
