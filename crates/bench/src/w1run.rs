//! The W1 run: a pcap replayed from memory (every packet copied into a fresh pool buffer)
//! through one bridge into a null sink, on the calling thread, for a fixed time.
//!
//! The same `PollSet` and poll loop the daemon runs are used, so the figure includes the real
//! per-batch fabric work: receive, module lookup, per-destination grouping, transmit, free.

use datapath::module::VlanMode;
use datapath::{cycles, PollSet};
use netdev::Options;
use packet::{Batch, Pool};
use std::time::{Duration, Instant};

/// What one run measured.
#[derive(Debug, Clone)]
pub struct W1Result {
    pub module: String,
    pub pcap: String,
    pub packets: u64,
    pub seconds: f64,
    pub mpps: f64,
    pub cycles_per_packet: f64,
    pub delivered: u64,
    /// The module's counters over the measured interval (EMC/megaflow hits, upcalls...).
    pub counters: Vec<(String, u64)>,
}

/// The W1 OpenFlow rule sets: `simple` is `in_port=1,actions=output:2`; `l3_4k` is 4096
/// `/32` destination rules plus a low-priority default, all to port 2. `@FILE` reads the
/// flows from FILE, one per line as `ovs-ofctl add-flows` takes them (W7, W8).
pub fn rules(set: &str) -> Result<Vec<String>, String> {
    if let Some(path) = set.strip_prefix('@') {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        return Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect());
    }
    match set {
        "simple" => Ok(vec!["in_port=1,actions=output:2".into()]),
        "l3_4k" => {
            let mut v: Vec<String> = (0..4096u32)
                .map(|i| {
                    format!(
                        "priority=100,ip,in_port=1,nw_dst=10.0.{}.{},actions=output:2",
                        i >> 8,
                        i & 0xff
                    )
                })
                .collect();
            v.push("priority=1,in_port=1,actions=output:2".into());
            Ok(v)
        }
        _ => Err(format!("unknown rule set '{set}' (simple, l3_4k, @FILE)")),
    }
}

/// The module verbs that set the W1 bridge up (port 1 -> port 2).
fn module_setup(module: &str, rule_set: &str) -> Result<Vec<(&'static str, Vec<String>)>, String> {
    Ok(match module {
        "patch" => vec![("patch-set", vec!["1".into(), "2".into()])],
        "openflow" => vec![("del-flows", vec![]), ("add-flows", rules(rule_set)?)],
        _ => vec![],
    })
}

/// Runs `module` on `pcap` for `secs` seconds (`rule_set` for the openflow module).
pub fn run(
    module_name: &str,
    pcap: &str,
    secs: f64,
    rule_set: &str,
    settings: &[(String, String)],
) -> Result<W1Result, String> {
    let mut sw = PollSet::new(datapath::pollset::DEFAULT_POOL);
    let ofctl::Created { logic, openflow } = ofctl::create(module_name)?;
    sw.add_bridge("w1", logic, None)?;
    for (k, v) in settings {
        sw.configure_bridge("w1", k, v)?;
    }
    let mut o = Options::new();
    o.insert("rx_pcap".into(), pcap.into());
    o.insert("infinite_rx".into(), "true".into());
    let rx = netdev::open("w1-rx", "pcap", &o).map_err(|e| e.to_string())?;
    sw.add_port("w1", rx, Some(1), VlanMode::Trunk(None))?;
    let tx = netdev::open("w1-tx", "null", &Options::new()).map_err(|e| e.to_string())?;
    sw.add_port("w1", tx, Some(2), VlanMode::Trunk(None))?;
    for (verb, args) in module_setup(module_name, rule_set)? {
        match &openflow {
            // This thread runs the switch's only loop: the verb revalidates inline.
            Some(u) => ofctl::run_as(
                u,
                verb,
                &args,
                false,
                sw.now_ms(),
                ofctl::Caller::PollThread,
            )
            .map(|_| ())?,
            None => sw.module_command("w1", verb, &args, false).map(|_| ())?,
        }
    }
    if module_name == "learning" {
        // Teach the bridge where the W1 destination MAC lives (behind the sink), as a
        // reply from that host would, so the run measures known-unicast forwarding.
        let mut pool = Pool::new(1);
        let mut b = Batch::new();
        let mut p = pool.alloc().ok_or("no buffer")?;
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&crate::w1gen::SRC_MAC);
        f[6..12].copy_from_slice(&crate::w1gen::DST_MAC);
        f[12] = 0x08;
        p.set_frame(&f);
        b.push(p).map_err(|_| "batch")?;
        let now = sw.now_ms();
        let br = sw.bridge_mut("w1").ok_or("bridge")?;
        let idx = br.find_port("w1-tx").ok_or("port")?;
        br.inject(idx, &mut b, &datapath::Ctx { now_ms: now }, &mut pool);
    }
    // Warm up for a tenth of the run, then measure.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs_f64(secs / 10.0) {
        sw.poll_once();
    }
    sw.pmd_stats_clear();
    let sink_before = tx_packets(&sw);
    let c_before = counters(&sw);
    let t0 = Instant::now();
    let c0 = cycles::now();
    let deadline = Duration::from_secs_f64(secs);
    let mut packets = 0u64;
    loop {
        for _ in 0..64 {
            packets += sw.poll_once() as u64;
        }
        if t0.elapsed() >= deadline {
            break;
        }
    }
    let c1 = cycles::now();
    let dt = t0.elapsed().as_secs_f64();
    let delivered = tx_packets(&sw) - sink_before;
    let c_after = counters(&sw);
    let counters = c_after
        .iter()
        .map(|(k, v)| {
            let before = c_before
                .iter()
                .find(|(k0, _)| k0 == k)
                .map(|x| x.1)
                .unwrap_or(0);
            (k.clone(), v.saturating_sub(before))
        })
        .collect();
    Ok(W1Result {
        module: module_name.into(),
        pcap: pcap.into(),
        packets,
        seconds: dt,
        mpps: packets as f64 / dt / 1e6,
        cycles_per_packet: (c1 - c0) as f64 / packets.max(1) as f64,
        delivered,
        counters,
    })
}

fn counters(sw: &PollSet) -> Vec<(String, u64)> {
    sw.bridge("w1")
        .map(|b| {
            b.module
                .counters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        })
        .unwrap_or_default()
}

fn tx_packets(sw: &PollSet) -> u64 {
    sw.bridge("w1")
        .and_then(|b| b.find_port("w1-tx").and_then(|i| b.port_stats(i)))
        .map(|s| s.tx_packets)
        .unwrap_or(0)
}

/// Runs W1 on several poll threads, one per entry of `cores`, through the daemon's
/// multi-thread datapath ([`datapath::Datapath`]): the pcap port gets one receive queue per
/// thread (each replaying the whole capture from its own offset, so every thread sees every
/// flow), queues are assigned round-robin, and each thread transmits into its own handle on
/// the null sink. The figure is the sum of the threads' received packets over the interval.
pub fn run_pmds(
    module_name: &str,
    pcap: &str,
    secs: f64,
    rule_set: &str,
    settings: &[(String, String)],
    cores: &[usize],
) -> Result<W1Result, String> {
    let cs: Vec<Option<usize>> = cores.iter().map(|&c| Some(c)).collect();
    let dp = datapath::Datapath::new(&cs, datapath::pollset::DEFAULT_POOL)
        .map_err(|e| format!("cannot start poll threads: {e}"))?;
    dp.set_assign(datapath::threads::Assign::RoundRobin)?;
    let r = run_on(
        &dp,
        module_name,
        pcap,
        secs,
        rule_set,
        settings,
        cores.len(),
    );
    dp.shutdown();
    r
}

fn run_on(
    dp: &datapath::Datapath,
    module_name: &str,
    pcap: &str,
    secs: f64,
    rule_set: &str,
    settings: &[(String, String)],
    n: usize,
) -> Result<W1Result, String> {
    let ofctl::Created { logic, openflow } = ofctl::create(module_name)?;
    dp.add_bridge("w1", logic, None)?;
    for (k, v) in settings {
        dp.configure_bridge("w1", k, v)?;
    }
    let tx = netdev::open("w1-tx", "null", &Options::new()).map_err(|e| e.to_string())?;
    dp.add_port("w1", tx, Some(2), VlanMode::Trunk(None))?;
    for (verb, args) in module_setup(module_name, rule_set)? {
        match &openflow {
            Some(u) => ofctl::run(u, verb, &args, false, datapath::clock::now_ms()).map(|_| ())?,
            None => dp.module_command("w1", verb, &args, false).map(|_| ())?,
        }
    }
    if n > 1 && !dp.is_replicated("w1") {
        return Err(format!(
            "module '{module_name}' serves a bridge from one poll thread only"
        ));
    }
    let mut o = Options::new();
    o.insert("rx_pcap".into(), pcap.into());
    o.insert("infinite_rx".into(), "true".into());
    o.insert("n_rxq".into(), n.to_string());
    let rx = netdev::open("w1-rx", "pcap", &o).map_err(|e| e.to_string())?;
    dp.add_port("w1", rx, Some(1), VlanMode::Trunk(None))?;
    std::thread::sleep(Duration::from_secs_f64(secs / 10.0));
    dp.pmd_stats_clear()?;
    let c_before = sum_counters(dp)?;
    let sink_before = sink(dp)?;
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let packets: u64 = dp.call_all(|sw| sw.pmd.packets)?.into_iter().sum();
    let dt = t0.elapsed().as_secs_f64();
    let cyc: u64 = dp
        .call_all(|sw| sw.pmd.busy_cycles + sw.pmd.idle_cycles)?
        .into_iter()
        .sum();
    let delivered = sink(dp)?.saturating_sub(sink_before);
    let c_after = sum_counters(dp)?;
    let counters = c_after
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(*c_before.get(k).unwrap_or(&0))))
        .collect();
    Ok(W1Result {
        module: module_name.into(),
        pcap: pcap.into(),
        packets,
        seconds: dt,
        mpps: packets as f64 / dt / 1e6,
        cycles_per_packet: cyc as f64 / packets.max(1) as f64,
        delivered,
        counters,
    })
}

fn sum_counters(
    dp: &datapath::Datapath,
) -> Result<std::collections::BTreeMap<String, u64>, String> {
    let mut m = std::collections::BTreeMap::new();
    for c in dp.call_all(|sw| counters(sw))? {
        for (k, v) in c {
            *m.entry(k).or_insert(0) += v;
        }
    }
    Ok(m)
}

fn sink(dp: &datapath::Datapath) -> Result<u64, String> {
    Ok(dp.call_all(|sw| tx_packets(sw))?.into_iter().sum())
}
