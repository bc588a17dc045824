//! The W7 run: tunnel encapsulation or decapsulation on one core, in memory, through the
//! same two-bridge configuration OVS users write for native tunnelling:
//!
//! ```text
//! encap:  pcap --1--> [br-int] --2--> vx0 ==> LOCAL [br-phy] --2--> null
//! decap:  pcap --1--> [br-phy] --> LOCAL ==> vx0 --1--> [br-int] --2--> null
//! ```
//!
//! `br-int` runs `in_port=1,actions=output:2`; `br-phy` (whose internal port, a TAP device
//! the caller created with the local address, is the underlay) runs
//! `in_port=LOCAL,actions=output:2` and `in_port=2,actions=LOCAL` (encap), or
//! `in_port=1,actions=LOCAL` (decap). The tunnel port `vx0` (`vxlan` or `geneve`,
//! `remote_ip`, `key`) resolves its next hop as in the daemon: the route from the kernel's
//! table of the caller's network namespace, the remote's MAC from an ARP reply that arrives on
//! `br-phy`'s port 2 (injected here, as the remote would answer the switch's probe). The
//! source port is added only once the tunnel is resolved, so no packet is dropped for want of
//! a next hop.
//!
//! A packet crosses both bridges, so the figure is the sink's delivered packets (each packet
//! is received twice: once from the pcap, once from the internal port or the tunnel port),
//! and cycles per packet are per delivered packet.

use crate::w7gen::Endpoints;
use datapath::module::VlanMode;
use datapath::{cycles, PollSet};
use netdev::Options;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The direction a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Encap,
    Decap,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct W7Result {
    pub pcap: String,
    pub seconds: f64,
    pub mpps: f64,
    pub cycles_per_packet: f64,
    /// Packets the sink was given.
    pub delivered: u64,
    /// Packets the pcap port received.
    pub received: u64,
    /// The share of the window this thread was on a CPU (`/proc/thread-self/schedstat`),
    /// if known: below 1, other processes took its core.
    pub cpu_share: Option<f64>,
    /// The bridges' module counters over the interval, prefixed `int.` and `phy.`, and the
    /// tunnel port's drops.
    pub counters: Vec<(String, u64)>,
}

const INT: &str = "br-int";
const TUN: &str = "vx0";
const SRC: &str = "w7-rx";
const SINK: &str = "w7-tx";

fn flows(sw: &PollSet, u: &Arc<datapath::udpif::Udpif>, rules: &[&str]) -> Result<(), String> {
    let rules: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
    let now = sw.now_ms();
    // This thread runs the switch's only loop: the verbs revalidate inline.
    ofctl::run_as(u, "del-flows", &[], false, now, ofctl::Caller::PollThread)?;
    ofctl::run_as(
        u,
        "add-flows",
        &rules,
        false,
        now,
        ofctl::Caller::PollThread,
    )?;
    Ok(())
}

fn open(name: &str, kind: &str, kv: &[(&str, String)]) -> Result<Box<dyn netdev::Port>, String> {
    let mut o = Options::new();
    for (k, v) in kv {
        o.insert(k.to_string(), v.clone());
    }
    netdev::open(name, kind, &o).map_err(|e| format!("{name}: {e}"))
}

/// The ARP reply the remote endpoint sends to the switch's probe.
fn arp_reply(e: &Endpoints) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&e.local_mac);
    f[6..12].copy_from_slice(&e.remote_mac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    f[22..28].copy_from_slice(&e.remote_mac);
    f[28..32].copy_from_slice(&e.remote_ip.octets());
    f[32..38].copy_from_slice(&e.local_mac);
    f[38..42].copy_from_slice(&e.local_ip.octets());
    f
}

/// Nanoseconds this thread has run on a CPU.
fn oncpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn port_stats(sw: &PollSet, port: &str) -> netdev::PortStats {
    sw.bridges()
        .iter()
        .find_map(|b| b.find_port(port).and_then(|i| b.port_stats(i)))
        .unwrap_or_default()
}

fn counters(sw: &PollSet, phy: &str) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for (br, tag) in [(INT, "int."), (phy, "phy.")] {
        if let Some(b) = sw.bridge(br) {
            for (k, n) in b.module.counters() {
                v.push((format!("{tag}{k}"), n));
            }
        }
    }
    let t = port_stats(sw, TUN);
    v.push(("tunnel.tx_dropped".into(), t.tx_dropped));
    v.push(("tunnel.tx_errors".into(), t.tx_errors));
    v.push(("tunnel.rx_dropped".into(), t.rx_dropped));
    v.push((
        "tunnel.unmatched".into(),
        netdev::tunnel::table::unmatched(),
    ));
    v
}

/// Runs W7 in direction `dir` on `pcap` for `secs` seconds. `underlay` names an existing
/// TAP device holding `e.local_ip` (its MAC `e.local_mac`) in the caller's network
/// namespace. With `capture`, the sink records what it is sent into that pcap instead, and
/// the capture is replayed once at 200,000 packets per second (no timing: a check of what
/// the switch sends).
pub fn run(
    dir: Dir,
    pcap: &str,
    secs: f64,
    e: &Endpoints,
    underlay: &str,
    capture: Option<&str>,
) -> Result<W7Result, String> {
    let (mut sw, u_int, u_phy) = bridges(dir, e, underlay)?;
    let tunnel = open(
        TUN,
        &e.proto,
        &[
            ("remote_ip", e.remote_ip.to_string()),
            ("key", e.vni.to_string()),
        ],
    )?;
    let sink = match capture {
        Some(f) => open(SINK, "pcap", &[("tx_pcap", f.to_string())])?,
        None => open(SINK, "null", &[])?,
    };
    let mut src_opts = vec![
        ("rx_pcap", pcap.to_string()),
        ("infinite_rx", (capture.is_none()).to_string()),
    ];
    if capture.is_some() {
        // Paced, so the slow path keeps up with the first packets of every flow.
        src_opts.push(("rx_pps", "200000".to_string()));
    }
    let trunk = || VlanMode::Trunk(None);
    let src_bridge = match dir {
        Dir::Encap => {
            sw.add_port(INT, tunnel, Some(2), trunk())?;
            sw.add_port(underlay, sink, Some(2), trunk())?;
            flows(&sw, &u_int, &["in_port=1,actions=output:2"])?;
            flows(
                &sw,
                &u_phy,
                &["in_port=LOCAL,actions=output:2", "in_port=2,actions=LOCAL"],
            )?;
            resolve_tunnel(&mut sw, e, underlay)?;
            INT
        }
        Dir::Decap => {
            sw.add_port(INT, tunnel, Some(1), trunk())?;
            sw.add_port(INT, sink, Some(2), trunk())?;
            flows(&sw, &u_int, &["in_port=1,actions=output:2"])?;
            flows(&sw, &u_phy, &["in_port=1,actions=LOCAL"])?;
            underlay
        }
    };
    let src = open(SRC, "pcap", &src_opts)?;
    sw.add_port(src_bridge, src, Some(1), trunk())?;
    if capture.is_some() {
        Ok(replay_once(sw, pcap, underlay))
    } else {
        Ok(measure(sw, pcap, secs, underlay))
    }
}

type Udpif = Arc<datapath::udpif::Udpif>;

/// The two bridges, `br-int` and `br-phy` (named after the underlay, whose port is its
/// internal port), in the packets' order so that one poll carries a batch all the way.
fn bridges(dir: Dir, e: &Endpoints, underlay: &str) -> Result<(PollSet, Udpif, Udpif), String> {
    let mut sw = PollSet::new(datapath::pollset::DEFAULT_POOL);
    let int = ofctl::create("openflow")?;
    let phy = ofctl::create("openflow")?;
    let u_int = int
        .openflow
        .ok_or("openflow module without OpenFlow state")?;
    let u_phy = phy
        .openflow
        .ok_or("openflow module without OpenFlow state")?;
    let local = open(underlay, "internal", &[])?;
    if local.mac() != Some(e.local_mac) {
        return Err(format!(
            "{underlay}: MAC {:02x?} is not the configured local MAC {:02x?}",
            local.mac(),
            e.local_mac
        ));
    }
    if dir == Dir::Encap {
        sw.add_bridge(INT, int.logic, None)?;
        sw.add_bridge(underlay, phy.logic, Some(local))?;
    } else {
        sw.add_bridge(underlay, phy.logic, Some(local))?;
        sw.add_bridge(INT, int.logic, None)?;
    }
    Ok((sw, u_int, u_phy))
}

/// Answers the switch's ARP probe as the remote would, until the tunnel has its outer
/// headers (route, source address, next-hop MAC); gives up after 10 s.
fn resolve_tunnel(sw: &mut PollSet, e: &Endpoints, underlay: &str) -> Result<(), String> {
    let t0 = Instant::now();
    let mut last: Option<Instant> = None;
    while !netdev::tunnel::resolved(TUN) {
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(format!(
                "tunnel {TUN} not resolved after 10 s (does {underlay} hold {}/24 and \
                 is it up?)\n{}{}",
                e.local_ip,
                netdev::tunnel::route_show(),
                netdev::tunnel::neigh_show()
            ));
        }
        if last.is_none_or(|l| l.elapsed() > Duration::from_millis(200)) {
            sw.inject(underlay, SINK, &[arp_reply(e)])?;
            last = Some(Instant::now());
        }
        sw.poll_once();
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// `--capture`: replays the pcap once and stops when nothing has moved for half a second.
fn replay_once(mut sw: PollSet, pcap: &str, underlay: &str) -> W7Result {
    let t0 = Instant::now();
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(500) && t0.elapsed() < Duration::from_secs(30) {
        if sw.poll_once() > 0 {
            quiet = Instant::now();
        }
    }
    let delivered = port_stats(&sw, SINK).tx_packets;
    let received = port_stats(&sw, SRC).rx_packets;
    let counters = counters(&sw, underlay);
    sw.shutdown();
    W7Result {
        pcap: pcap.into(),
        seconds: t0.elapsed().as_secs_f64(),
        mpps: 0.0,
        cycles_per_packet: 0.0,
        cpu_share: None,
        delivered,
        received,
        counters,
    }
}

/// Warms up for a tenth of the run (the slow path installs the flows), then measures for
/// `secs` seconds.
fn measure(mut sw: PollSet, pcap: &str, secs: f64, underlay: &str) -> W7Result {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs_f64((secs / 10.0).max(0.2)) {
        sw.poll_once();
    }
    let d0 = port_stats(&sw, SINK).tx_packets;
    let r0 = port_stats(&sw, SRC).rx_packets;
    let k0 = counters(&sw, underlay);
    let on0 = oncpu_ns();
    let t0 = Instant::now();
    let c0 = cycles::now();
    let deadline = Duration::from_secs_f64(secs);
    loop {
        for _ in 0..64 {
            sw.poll_once();
        }
        if t0.elapsed() >= deadline {
            break;
        }
    }
    let c1 = cycles::now();
    let dt = t0.elapsed().as_secs_f64();
    let on1 = oncpu_ns();
    let delivered = port_stats(&sw, SINK).tx_packets - d0;
    let received = port_stats(&sw, SRC).rx_packets - r0;
    let counters = counters(&sw, underlay)
        .into_iter()
        .map(|(k, v)| {
            let before = k0.iter().find(|(k0, _)| *k0 == k).map_or(0, |x| x.1);
            (k, v.saturating_sub(before))
        })
        .collect();
    sw.shutdown();
    W7Result {
        pcap: pcap.into(),
        seconds: dt,
        mpps: delivered as f64 / dt / 1e6,
        cycles_per_packet: (c1 - c0) as f64 / delivered.max(1) as f64,
        cpu_share: on0
            .zip(on1)
            .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9 / dt),
        delivered,
        received,
        counters,
    }
}
