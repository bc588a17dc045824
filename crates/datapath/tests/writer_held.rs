//! Nothing in the datapath waits for the OpenFlow writer: with a write session held (as a
//! long bundle commit holds it), every per-packet path keeps going, the handler translates
//! new flows and installs their megaflows against the published state, and the revalidator
//! runs its rounds.
//!
//! Not a benchmark: the assertions are about progress while the writer is held (packets out
//! of each port, meter and packet-in counters moving, a port added, megaflows installed,
//! rounds run), not about rates.

use datapath::ofmodule::OpenFlow;
use datapath::udpif::Udpif;
use datapath::{Datapath, VlanMode};
use netdev::Options;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pcap_with(frames: &[Vec<u8>], name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ferrovs-wh-{}-{name}.pcap", std::process::id()));
    let mut w = netdev::pcapfile::PcapWriter::create(&p).expect("create pcap");
    for f in frames {
        w.write(0, 0, f).expect("write");
    }
    w.flush().expect("flush");
    p.display().to_string()
}

/// A UDP frame to port `dport` from source MAC `src` (last byte).
fn udp(dport: u16, src: u8) -> Vec<u8> {
    let mut f = netdev::null::udp_frame(64);
    f[11] = src;
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f
}

fn tx(dp: &Datapath, br: &str, name: &str) -> u64 {
    let r = dp.port_counters_report(br).expect("dump");
    r.ports
        .iter()
        .filter(|p| p.name == name)
        .map(|p| p.stats.tx_packets)
        .sum()
}

fn counter(dp: &Datapath, br: &str, name: &'static str) -> u64 {
    let b = br.to_string();
    dp.call(move |sw| {
        sw.bridge(&b)
            .and_then(|x| x.module.counters().into_iter().find(|(k, _)| *k == name))
            .map(|x| x.1)
            .unwrap_or(0)
    })
    .expect("counters")
}

fn wait_for(what: impl Fn() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A bridge `br` with an OpenFlow module (cached or not) on `dp`, a paced endless source
/// replaying `frames` on ofport 1 and null sinks; returns its shared OpenFlow state.
fn bridge(
    dp: &Datapath,
    br: &str,
    cache: bool,
    frames: &[Vec<u8>],
    sinks: &[(&str, u32)],
) -> (Arc<Udpif>, String) {
    let m = OpenFlow::new(cache).expect("module");
    let udpif = Arc::clone(m.udpif());
    dp.add_bridge(br, Box::new(m), None).expect("bridge");
    for (name, ofport) in sinks {
        let p = netdev::open(name, "null", &Options::new()).expect("sink");
        dp.add_port(br, p, Some(*ofport), VlanMode::Trunk(None))
            .expect("sink port");
    }
    let path = pcap_with(frames, br);
    let mut o = Options::new();
    o.insert("rx_pcap".into(), path.clone());
    o.insert("infinite_rx".into(), "true".into());
    o.insert("rx_pps".into(), "40000".into());
    let rx = netdev::open(&format!("{br}src"), "pcap", &o).expect("pcap");
    dp.add_port(br, rx, Some(1), VlanMode::Trunk(None))
        .expect("src port");
    (udpif, path)
}

/// An OpenFlow verb from the control plane's side (this thread), as the daemon runs it.
fn cmd(u: &Udpif, verb: &str, args: &[&str]) {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    ofctl::run(u, verb, &a, false, datapath::clock::now_ms())
        .unwrap_or_else(|e| panic!("{verb} {args:?}: {e}"));
}

#[test]
fn cached_paths_forward_while_the_writer_is_held() {
    let dp = Arc::new(Datapath::new(&[None], 8192).expect("threads"));
    let frames: Vec<Vec<u8>> = (0..64)
        // Source MACs 0x10.. never equal the destination (..:02), so NORMAL never learns it
        // on the ingress port (whatever went through the default NORMAL flow first): it floods.
        .map(|i| udp(1000 + (i % 4) as u16, 0x10 + i as u8))
        .collect();
    let (udpif, path) = bridge(
        &dp,
        "wh",
        true,
        &frames,
        &[("whout", 2), ("whmtr", 3), ("whctl", 4), ("whnrm", 5)],
    );
    cmd(&udpif, "del-flows", &[]);
    cmd(
        &udpif,
        "add-meter",
        &["meter=1,pktps,bands=type=drop,rate=10000000"],
    );
    cmd(
        &udpif,
        "add-flows",
        &[
            "udp,tp_dst=1000,actions=output:2",
            "udp,tp_dst=1001,actions=meter:1,output:3",
            "udp,tp_dst=1002,actions=controller,output:4",
            "in_port=1,udp,tp_dst=1003,actions=NORMAL",
        ],
    );
    let sinks = ["whout", "whmtr", "whctl", "whnrm"];
    assert!(
        wait_for(|| sinks.iter().all(|p| tx(&dp, "wh", p) > 100)),
        "traffic set up: {:?}, counters {:?}",
        sinks.map(|p| tx(&dp, "wh", p)),
        dp.call(|sw| sw.bridge("wh").map(|b| b.module.counters()))
    );
    let meter_in = || {
        udpif
            .meters
            .get(1)
            .map(|m| m.snapshot().packet_in_count)
            .unwrap_or(0)
    };
    udpif.take_packet_ins();

    // Hold the writer for half a second, as a long bundle commit would.
    let held = udpif.of();
    let before: Vec<u64> = ["whout", "whmtr", "whctl", "whnrm"]
        .iter()
        .map(|p| tx(&dp, "wh", p))
        .collect();
    let m0 = meter_in();
    // A port added meanwhile: the fabric's call returns (the poll thread does not wait to
    // tell the OpenFlow state), the state learns of it once free.
    let (done_tx, done_rx) = mpsc::channel();
    let dp2 = Arc::clone(&dp);
    std::thread::spawn(move || {
        let p = netdev::open("whlate", "null", &Options::new()).expect("late");
        let r = dp2.add_port("wh", p, Some(6), VlanMode::Trunk(None));
        let _ = done_tx.send(r);
    });
    let added = done_rx.recv_timeout(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(500));
    let after: Vec<u64> = ["whout", "whmtr", "whctl", "whnrm"]
        .iter()
        .map(|p| tx(&dp, "wh", p))
        .collect();
    let m1 = meter_in();
    let pins = udpif.take_packet_ins().len();
    drop(held);

    assert!(
        matches!(added, Ok(Ok(_))),
        "adding a port while the OpenFlow state is held: {added:?}"
    );
    for ((name, b), a) in ["output", "meter", "controller", "NORMAL"]
        .iter()
        .zip(&before)
        .zip(&after)
    {
        assert!(
            a > b,
            "{name} path stopped while the writer was held: {b} -> {a}"
        );
    }
    assert!(
        m1 > m0,
        "the meter ran while the writer was held: {m0} -> {m1}"
    );
    assert!(pins > 0, "no packet-in queued while the writer was held");
    assert!(
        wait_for(|| udpif.of().ports().contains_key(&6)),
        "the port added meanwhile reached the OpenFlow state"
    );
    if let Ok(dp) = Arc::try_unwrap(dp) {
        dp.shutdown();
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn uncached_pipeline_forwards_while_the_writer_is_held() {
    let dp = Datapath::new(&[None], 8192).expect("threads");
    let frames: Vec<Vec<u8>> = (0..16).map(|i| udp(2000, 0x10 + i as u8)).collect();
    let (c, p1) = bridge(&dp, "whc", true, &frames, &[("whcout", 2)]);
    let (un, p2) = bridge(&dp, "whu", false, &frames, &[("whuout", 2)]);
    for u in [&c, &un] {
        cmd(u, "del-flows", &[]);
        cmd(u, "add-flows", &["in_port=1,actions=output:2"]);
    }
    assert!(
        wait_for(|| tx(&dp, "whc", "whcout") > 100 && tx(&dp, "whu", "whuout") > 100),
        "traffic set up"
    );
    let held = un.of();
    let c0 = tx(&dp, "whc", "whcout");
    let u0 = tx(&dp, "whu", "whuout");
    let x0 = counter(&dp, "whu", "uncached_xlates");
    std::thread::sleep(Duration::from_millis(400));
    let c1 = tx(&dp, "whc", "whcout");
    let u1 = tx(&dp, "whu", "whuout");
    let x1 = counter(&dp, "whu", "uncached_xlates");
    drop(held);
    assert!(
        c1 > c0,
        "the other bridge on the thread stopped: {c0} -> {c1}"
    );
    // The uncached pipeline translates every packet against the published state.
    assert!(
        u1 > u0 && x1 > x0,
        "the uncached bridge stopped while the writer was held: tx {u0} -> {u1}, xlates {x0} -> {x1}"
    );
    dp.shutdown();
    let _ = std::fs::remove_file(p1);
    let _ = std::fs::remove_file(p2);
}

/// A bridge whose source is added while the writer is held: every flow it brings is new, so
/// forwarding it needs the handler to translate and the megaflows to be installed.
fn late_source(dp: &Datapath, br: &str, ofport: u32, frames: &[Vec<u8>]) -> (String, bool) {
    let path = pcap_with(frames, &format!("{br}{ofport}"));
    let mut o = Options::new();
    o.insert("rx_pcap".into(), path.clone());
    o.insert("infinite_rx".into(), "true".into());
    o.insert("rx_pps".into(), "20000".into());
    let rx = netdev::open(&format!("{br}src{ofport}"), "pcap", &o).expect("pcap");
    let added = dp
        .add_port(br, rx, Some(ofport), VlanMode::Trunk(None))
        .is_ok();
    (path, added)
}

#[test]
fn new_flows_are_set_up_while_the_writer_is_held_or_a_long_bundle_commits() {
    let dp = Datapath::new(&[None], 8192).expect("threads");
    let m = OpenFlow::new(true).expect("module");
    let udpif = Arc::clone(m.udpif());
    dp.add_bridge("whn", Box::new(m), None).expect("bridge");
    let sink = netdev::open("whnout", "null", &Options::new()).expect("sink");
    dp.add_port("whn", sink, Some(2), VlanMode::Trunk(None))
        .expect("sink port");
    cmd(&udpif, "del-flows", &[]);
    // The exact tp_dst rule makes every destination port its own megaflow.
    cmd(
        &udpif,
        "add-flows",
        &[
            "priority=200,udp,tp_dst=1,actions=drop",
            "priority=100,udp,actions=output:2",
        ],
    );
    let installed = || {
        udpif
            .stats
            .installed
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let rounds = || {
        udpif
            .stats
            .rounds
            .load(std::sync::atomic::Ordering::Relaxed)
    };

    // 1. A write session held: a source added meanwhile brings 500 new flows.
    let frames: Vec<Vec<u8>> = (0..500).map(|i| udp(3000 + i as u16, 0x10)).collect();
    let held = udpif.of();
    let (i0, r0) = (installed(), rounds());
    let (p1, added) = late_source(&dp, "whn", 1, &frames);
    assert!(added, "source port added");
    let set_up = wait_for(|| installed() >= i0 + 400 && tx(&dp, "whn", "whnout") > 400);
    udpif.kick();
    let revalidated = wait_for(|| rounds() > r0 + 1);
    let (i1, t1) = (installed(), tx(&dp, "whn", "whnout"));
    drop(held);
    assert!(
        set_up,
        "new flows were not set up while the writer was held: {i0} -> {i1} megaflows, {t1} out"
    );
    assert!(
        revalidated,
        "the revalidator stopped while the writer was held"
    );

    // 2. A bundle of 200,000 flow_mods commits (into table 1, so table 0's answers stay):
    //    flows from a second new source are set up while it runs.
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (started_tx, started_rx) = mpsc::channel();
    let committer = {
        let udpif = Arc::clone(&udpif);
        let running = Arc::clone(&running);
        std::thread::spawn(move || {
            let mut of = udpif.of();
            let r: Result<(), openflow::OfError> = of.atomically(|of| {
                for i in 0..200_000u32 {
                    let mut fm = openflow::FlowMod::new(openflow::FlowModCommand::Add);
                    fm.table_id = 1;
                    fm.priority = 100;
                    fm.match_ = openflow::Match::new()
                        .with(openflow::oxm::Field::EthType, 0x0800)
                        .with(openflow::oxm::Field::Ipv4Dst, u128::from(0x0a00_0000 | i));
                    of.flow_mod(&fm, 0)?;
                    if i == 0 {
                        let _ = started_tx.send(());
                    }
                }
                Ok(())
            });
            drop(of);
            running.store(false, std::sync::atomic::Ordering::SeqCst);
            r.is_ok()
        })
    };
    started_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("bundle started");
    let i2 = installed();
    let frames: Vec<Vec<u8>> = (0..300).map(|i| udp(5000 + i as u16, 0x11)).collect();
    let (p3, added) = late_source(&dp, "whn", 3, &frames);
    assert!(added, "source port added");
    // Set up while the commit still runs: checked in the same step.
    let during =
        wait_for(|| installed() >= i2 + 100 && running.load(std::sync::atomic::Ordering::SeqCst));
    let (i3, still) = (
        installed(),
        running.load(std::sync::atomic::Ordering::SeqCst),
    );
    assert!(committer.join().expect("committer"), "the bundle committed");
    assert!(
        during,
        "no new flow set up during the bundle commit: {i2} -> {i3} megaflows (commit running: {still})"
    );
    // 3. A port added right after that publication: the poll thread does not replay the
    //    200,000 changes to apply it (its bounded session is refused); the revalidator's
    //    next round applies it, and it reaches the published state.
    let (p4, added) = late_source(&dp, "whn", 4, &frames);
    assert!(added, "source port added");
    assert!(
        wait_for(|| udpif.snapshot().ports().contains_key(&4)),
        "a port added after a large publication never reached the OpenFlow state"
    );
    assert_eq!(udpif.of().table(1).map(|t| t.len()), Some(200_000));
    dp.shutdown();
    let _ = std::fs::remove_file(p1);
    let _ = std::fs::remove_file(p3);
    let _ = std::fs::remove_file(p4);
}
