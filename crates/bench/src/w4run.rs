//! W4, flow setup: a storm of new flows (one megaflow each: the rules match the UDP source
//! port exactly) arriving on one port while an established flow is offered at a fixed rate
//! on another. Reports how many megaflows the slow path installs per second, and how much
//! of the established flow's rate survives the storm (the goal: at least 90%).
//!
//! Phase 1 runs the established flow alone; phase 2 adds the storm. Both phases measure the
//! established flow's delivered packets on its own sink port.

use datapath::module::VlanMode;
use datapath::PollSet;
use netdev::Options;
use std::time::{Duration, Instant};

/// What one W4 run measured.
#[derive(Debug, Clone)]
pub struct W4Result {
    pub offered_pps: u64,
    pub alone_pps: f64,
    pub storm_pps: f64,
    pub retained: f64,
    pub storm_rx_pps: f64,
    pub installs_per_s: f64,
    pub xlates_per_s: f64,
    pub handler_xlates: u64,
    pub lost_upcalls: u64,
    pub flow_limit_hits: u64,
    pub megaflows: u64,
}

fn count(sw: &PollSet, port: &str) -> u64 {
    sw.bridge("w4")
        .and_then(|b| b.find_port(port).and_then(|i| b.port_stats(i)))
        .map(|s| s.tx_packets)
        .unwrap_or(0)
}

fn rx(sw: &PollSet, port: &str) -> u64 {
    sw.bridge("w4")
        .and_then(|b| b.find_port(port).and_then(|i| b.port_stats(i)))
        .map(|s| s.rx_packets)
        .unwrap_or(0)
}

fn counter(sw: &PollSet, name: &str) -> u64 {
    sw.bridge("w4")
        .and_then(|b| {
            b.module
                .counters()
                .into_iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v)
        })
        .unwrap_or(0)
}

fn run_for(sw: &mut PollSet, secs: f64) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs_f64(secs) {
        for _ in 0..16 {
            sw.poll_once();
        }
    }
}

/// Runs W4: `established` (a one-flow pcap) offered at `offered_pps`, `storm` (a many-flow
/// pcap) at full speed, `secs` per phase.
pub fn run(
    established: &str,
    storm: &str,
    offered_pps: u64,
    secs: f64,
) -> Result<W4Result, String> {
    let mut sw = PollSet::new(datapath::pollset::DEFAULT_POOL);
    let ofctl::Created { logic, openflow } = ofctl::create("openflow")?;
    let u = openflow.ok_or("the openflow module has OpenFlow state")?;
    sw.add_bridge("w4", logic, None)?;
    let null = |sw: &mut PollSet, name: &str, ofport: u32| -> Result<(), String> {
        let p = netdev::open(name, "null", &Options::new()).map_err(|e| e.to_string())?;
        sw.add_port("w4", p, Some(ofport), VlanMode::Trunk(None))?;
        Ok(())
    };
    null(&mut sw, "est-out", 2)?;
    null(&mut sw, "storm-out", 4)?;
    let rules: Vec<String> = vec![
        "priority=10,udp,in_port=3,tp_src=1024,actions=output:4".into(),
        "priority=5,in_port=3,actions=output:4".into(),
        "priority=5,in_port=1,actions=output:2".into(),
    ];
    // This thread runs the switch's only loop: the verbs revalidate inline.
    let now = sw.now_ms();
    ofctl::run_as(&u, "del-flows", &[], false, now, ofctl::Caller::PollThread)?;
    ofctl::run_as(
        &u,
        "add-flows",
        &rules,
        false,
        now,
        ofctl::Caller::PollThread,
    )?;
    let mut o = Options::new();
    o.insert("rx_pcap".into(), established.into());
    o.insert("infinite_rx".into(), "true".into());
    o.insert("rx_pps".into(), offered_pps.to_string());
    let est = netdev::open("est-in", "pcap", &o).map_err(|e| e.to_string())?;
    sw.add_port("w4", est, Some(1), VlanMode::Trunk(None))?;
    // Phase 1: the established flow alone.
    run_for(&mut sw, secs / 5.0);
    let c0 = count(&sw, "est-out");
    let t0 = Instant::now();
    run_for(&mut sw, secs);
    let alone = (count(&sw, "est-out") - c0) as f64 / t0.elapsed().as_secs_f64();
    // Phase 2: the storm starts.
    let mut o = Options::new();
    o.insert("rx_pcap".into(), storm.into());
    o.insert("infinite_rx".into(), "true".into());
    let st = netdev::open("storm-in", "pcap", &o).map_err(|e| e.to_string())?;
    let xlates0 = counter(&sw, "handler_xlates");
    let installed0 = counter(&sw, "installed");
    let lost0 = counter(&sw, "lost_upcalls");
    let limit0 = counter(&sw, "flow_limit_hits");
    sw.add_port("w4", st, Some(3), VlanMode::Trunk(None))?;
    let c1 = count(&sw, "est-out");
    let s1 = rx(&sw, "storm-in");
    let t1 = Instant::now();
    run_for(&mut sw, secs);
    let dt = t1.elapsed().as_secs_f64();
    let during = (count(&sw, "est-out") - c1) as f64 / dt;
    let storm_rx = (rx(&sw, "storm-in") - s1) as f64 / dt;
    let xlates = counter(&sw, "handler_xlates") - xlates0;
    let installed = counter(&sw, "installed") - installed0;
    let r = W4Result {
        offered_pps,
        alone_pps: alone,
        storm_pps: during,
        retained: if alone > 0.0 { during / alone } else { 0.0 },
        storm_rx_pps: storm_rx,
        installs_per_s: installed as f64 / dt,
        xlates_per_s: xlates as f64 / dt,
        handler_xlates: xlates,
        lost_upcalls: counter(&sw, "lost_upcalls") - lost0,
        flow_limit_hits: counter(&sw, "flow_limit_hits") - limit0,
        megaflows: counter(&sw, "megaflows"),
    };
    sw.shutdown();
    Ok(r)
}
