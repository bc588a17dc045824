//! Several poll threads serving one bridge: queues spread and moved, every packet forwarded
//! once, counters summed over the threads.

use datapath::threads::Assign;
use datapath::{registry, Datapath, VlanMode};
use netdev::Options;
use std::time::{Duration, Instant};

fn pcap_with(frames: &[Vec<u8>], name: &str) -> String {
    let p = std::env::temp_dir().join(format!("ferrovs-mp-{}-{name}.pcap", std::process::id()));
    let mut w = netdev::pcapfile::PcapWriter::create(&p).expect("create pcap");
    for f in frames {
        w.write(0, 0, f).expect("write");
    }
    w.flush().expect("flush");
    p.display().to_string()
}

fn udp(i: u16) -> Vec<u8> {
    let mut f = netdev::null::udp_frame(64);
    f[34..36].copy_from_slice(&(1000 + i).to_be_bytes());
    f
}

fn wait_for(dp: &Datapath, what: impl Fn(&Datapath) -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if what(dp) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn setup(
    module_name: &str,
    n_rxq: usize,
    frames: usize,
    tag: &str,
    paced: bool,
) -> (Datapath, String) {
    let dp = Datapath::new(&[None, None], 4096).expect("threads");
    dp.set_assign(Assign::RoundRobin).expect("assign");
    let ofctl::Created { logic, openflow } = ofctl::create(module_name).expect("module");
    dp.add_bridge("br", logic, None).expect("bridge");
    let tx = netdev::open("sink", "null", &Options::new()).expect("sink");
    dp.add_port("br", tx, Some(2), VlanMode::Trunk(None))
        .expect("sink port");
    // New ports' queues are parked until placed, so nothing is received before the
    // module is configured and each queue is on its thread.
    let fr: Vec<Vec<u8>> = (0..frames as u16).map(udp).collect();
    let path = pcap_with(&fr, tag);
    let mut o = Options::new();
    o.insert("rx_pcap".into(), path.clone());
    o.insert("n_rxq".into(), n_rxq.to_string());
    if paced {
        // A slow endless replay: the module is set up long before most packets arrive.
        o.insert("infinite_rx".into(), "true".into());
        o.insert("rx_pps".into(), (2000 * n_rxq).to_string());
    }
    let rx = netdev::open("src", "pcap", &o).expect("pcap");
    dp.add_port("br", rx, Some(1), VlanMode::Trunk(None))
        .expect("src port");
    match module_name {
        "patch" => {
            dp.module_command("br", "patch-set", &["1".into(), "2".into()], false)
                .expect("patch");
        }
        _ => {
            let u = openflow.expect("an openflow bridge");
            let now = datapath::clock::now_ms();
            ofctl::run(&u, "del-flows", &[], false, now).expect("del");
            ofctl::run(
                &u,
                "add-flows",
                &["in_port=1,udp,actions=output:2".into()],
                false,
                now,
            )
            .expect("add");
        }
    }
    assert!(
        dp.is_replicated("br"),
        "{module_name} bridges are replicated"
    );
    (dp, path)
}

fn delivered(dp: &Datapath) -> u64 {
    let r = dp.port_counters_report("br").expect("dump");
    r.ports
        .iter()
        .filter(|p| p.name == "sink")
        .map(|p| p.stats.tx_packets)
        .sum()
}

#[test]
fn two_threads_share_a_patch_bridge() {
    let (dp, path) = setup("patch", 2, 100, "patch", true);
    assert!(
        wait_for(&dp, |d| delivered(d) >= 400),
        "got {}",
        delivered(&dp)
    );
    // Each thread received from its own queue and sent through its own sink handle.
    let per = dp.call_all(|sw| sw.pmd.packets).expect("stats");
    assert!(per.iter().all(|&p| p >= 100), "per thread: {per:?}");
    let remote = dp.remote_port_counters().expect("remote");
    let sink_remote = remote
        .iter()
        .find(|((b, _), st)| b == "br" && st.tx_packets > 0)
        .map(|(_, st)| st.tx_packets)
        .unwrap_or(0);
    assert!(
        sink_remote >= 100,
        "second thread's sink handle sent {sink_remote}"
    );
    let show = dp.rxq_report().expect("show");
    dp.shutdown();
    assert_eq!(show.len(), 2, "{show:?}");
    let queues: Vec<u16> = show.iter().flat_map(|p| &p.rxqs).map(|r| r.queue).collect();
    assert!(queues.contains(&0) && queues.contains(&1), "{show:?}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn openflow_replicas_cache_and_forward_on_each_thread() {
    let (dp, path) = setup("openflow", 2, 64, "of", true);
    assert!(
        wait_for(&dp, |d| delivered(d) >= 400),
        "got {}",
        delivered(&dp)
    );
    // Both threads installed megaflows of their own through the shared handler.
    let mf = dp
        .call_all(|sw| {
            sw.bridge("br")
                .map(|b| {
                    b.module
                        .counters()
                        .into_iter()
                        .find(|(k, _)| *k == "megaflows")
                        .map(|x| x.1)
                        .unwrap_or(0)
                })
                .unwrap_or(0)
        })
        .expect("counters");
    let per = dp.call_all(|sw| sw.pmd.packets).expect("stats");
    assert!(per.iter().all(|&p| p >= 100), "per thread: {per:?}");
    assert!(mf.iter().all(|&m| m >= 1), "megaflows per thread: {mf:?}");
    dp.shutdown();
    let _ = std::fs::remove_file(path);
}

#[test]
fn queues_move_and_rebalance_by_load() {
    let (dp, path) = setup("patch", 4, 40, "move", true);
    assert!(
        wait_for(&dp, |d| delivered(d) >= 200),
        "got {}",
        delivered(&dp)
    );
    let on: Vec<usize> = dp.rxqs().iter().map(|r| r.pmd).collect();
    assert_eq!(on.iter().filter(|&&k| k == 0).count(), 2, "{on:?}");
    // Pin queue 3 to the second thread's "core": here threads are unpinned, so the pin
    // cannot be honoured and the queue is placed like the others (never left unpolled).
    dp.set_affinity("src", "3:7").expect("affinity");
    assert_eq!(dp.rxqs().len(), 4);
    let show = dp.rxq_report().expect("show");
    let q3 = show.iter().flat_map(|p| &p.rxqs).find(|r| r.queue == 3);
    assert_eq!(q3.map(|r| r.pinned), Some(Some(7)), "{show:?}");
    assert!(show.iter().all(|p| p.core_id != Some(7)), "{show:?}");
    dp.del_port(Some("br"), "src").expect("del");
    assert!(dp.rxqs().is_empty());
    dp.shutdown();
    let _ = std::fs::remove_file(path);
}

#[test]
fn auto_rebalance_splits_the_busy_queues() {
    let dp = Datapath::new(&[None, None], 4096).expect("threads");
    dp.set_assign(Assign::RoundRobin).expect("assign");
    dp.add_bridge("br", registry::create("patch").expect("module"), None)
        .expect("bridge");
    let tx = netdev::open("sink", "null", &Options::new()).expect("sink");
    dp.add_port("br", tx, Some(9), VlanMode::Trunk(None))
        .expect("sink");
    let path = pcap_with(&(0..64).map(udp).collect::<Vec<_>>(), "lb");
    // Round-robin in name order puts a and c (endless, unpaced: busy) on the first thread
    // and b (a trickle) on the second.
    for (name, pps) in [("a", None), ("b", Some("100")), ("c", None)] {
        let mut o = Options::new();
        o.insert("rx_pcap".into(), path.clone());
        o.insert("infinite_rx".into(), "true".into());
        if let Some(p) = pps {
            o.insert("rx_pps".into(), p.into());
        }
        let p = netdev::open(name, "pcap", &o).expect("pcap");
        dp.add_port("br", p, None, VlanMode::Trunk(None))
            .expect("port");
    }
    let on = |dp: &Datapath, port: &str| {
        dp.rxqs()
            .iter()
            .find(|r| r.port == port)
            .map(|r| r.pmd)
            .expect("queue")
    };
    assert_eq!(on(&dp, "a"), on(&dp, "c"));
    assert_ne!(on(&dp, "a"), on(&dp, "b"));
    // Measured loads drive the next assignment; the busy queues end up apart.
    {
        let mut st = dp.lock();
        st.assign = Assign::Cycles;
        st.measure().expect("measure");
    }
    dp.set_auto_lb(datapath::threads::AutoLb {
        enabled: true,
        load_threshold: 50,
        improvement_threshold: 25,
    });
    // Each look measures the interval since the last one (a loaded test machine may need
    // several intervals to see the busy thread busy: with the poll threads preempted, a
    // trickle's iterations can measure as long as a busy queue's).
    let mut moved = false;
    for _ in 0..15 {
        std::thread::sleep(Duration::from_millis(400));
        if dp.auto_rebalance().expect("rebalance") {
            moved = true;
            break;
        }
    }
    assert!(moved, "{:?}", dp.rxqs());
    assert_ne!(on(&dp, "a"), on(&dp, "c"), "{:?}", dp.rxqs());
    // Balanced now: a second look never puts the busy queues back together (on a machine
    // loaded by other work it may still move the trickle, whose share is within the noise).
    std::thread::sleep(Duration::from_millis(500));
    let again = dp.auto_rebalance().expect("rebalance");
    assert_ne!(
        on(&dp, "a"),
        on(&dp, "c"),
        "moved again: {again}, {:?}",
        dp.rxqs()
    );
    dp.shutdown();
    let _ = std::fs::remove_file(path);
}
