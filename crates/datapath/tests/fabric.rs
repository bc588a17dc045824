//! The fabric's forwarding pass, through a recording test port: per-destination bursts,
//! flooding copies, drops, and that every buffer returns to the pool.

use datapath::module::VlanMode;
use datapath::registry;
use datapath::{Ctx, PollSet};
use netdev::{LinkState, Port, PortStats};
use packet::{Batch, Pool};
use std::sync::{Arc, Mutex};

/// What a test port saw: each transmitted burst as a list of frames.
type Log = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

struct TestPort {
    name: String,
    rx: Vec<Vec<u8>>,
    log: Log,
    stats: PortStats,
}

impl Port for TestPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &'static str {
        "test"
    }
    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let mut n = 0;
        while !batch.is_full() && !self.rx.is_empty() {
            let f = self.rx.remove(0);
            let Some(mut p) = pool.alloc() else { break };
            p.set_frame(&f);
            if batch.push(p).is_err() {
                break;
            }
            n += 1;
        }
        self.stats.rx_packets += n as u64;
        n
    }
    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let burst: Vec<Vec<u8>> = batch.packets().iter().map(|p| p.data().to_vec()).collect();
        self.stats.tx_packets += burst.len() as u64;
        if let Ok(mut l) = self.log.lock() {
            l.push(burst);
        }
        pool.free_batch(batch);
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
    fn link_state(&self) -> LinkState {
        LinkState::Up
    }
}

fn port(name: &str, rx: Vec<Vec<u8>>) -> (Box<dyn Port>, Log) {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    (
        Box::new(TestPort {
            name: name.into(),
            rx,
            log: Arc::clone(&log),
            stats: PortStats::default(),
        }),
        log,
    )
}

fn frame(dst: u8, src: u8, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
    f[12] = 0x08;
    f[20] = tag;
    f
}

fn bursts(l: &Log) -> Vec<Vec<Vec<u8>>> {
    l.lock().map(|v| v.clone()).unwrap_or_default()
}

#[test]
fn learning_groups_per_destination_and_floods_unknowns() {
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("learning").expect("module"), None)
        .expect("bridge");
    // Hosts 1, 2, 3 behind ports a, b, c; b and c announce themselves first.
    let (pa, la) = port("a", vec![]);
    let (pb, lb) = port("b", vec![frame(0xff, 2, 0)]);
    let (pc, lc) = port("c", vec![frame(0xff, 3, 0)]);
    for p in [pa, pb, pc] {
        sw.add_port("br", p, None, VlanMode::Trunk(None))
            .expect("port");
    }
    sw.poll_once();
    // Broadcasts from b and c were flooded: a saw both, b saw c's, c saw b's.
    assert_eq!(bursts(&la).concat().len(), 2);
    assert_eq!(bursts(&lb).concat(), vec![frame(0xff, 3, 0)]);
    assert_eq!(bursts(&lc).concat(), vec![frame(0xff, 2, 0)]);

    // Now a batch from a mixing destinations 2, 3 and an unknown 9.
    let mut b = Batch::new();
    let mut pool = Pool::new(16);
    let mix = [
        frame(2, 1, 1),
        frame(3, 1, 2),
        frame(2, 1, 3),
        frame(9, 1, 4),
        frame(3, 1, 5),
    ];
    for f in &mix {
        let mut p = pool.alloc().expect("buf");
        p.set_frame(f);
        b.push(p).map_err(|_| "full").expect("push");
    }
    let now = sw.now_ms();
    let sw_pool_before = sw.pool.available();
    let br = sw.bridge_mut("br").expect("br");
    let a = br.find_port("a").expect("a");
    br.inject(a, &mut b, &Ctx { now_ms: now }, &mut pool);
    // b got one burst with frames 1 and 3 (in order) plus the flooded unknown; c likewise.
    let lb_now = bursts(&lb);
    let lc_now = bursts(&lc);
    assert_eq!(lb_now.len(), 2, "one burst per destination per batch");
    assert_eq!(
        lb_now[1],
        vec![mix[0].clone(), mix[2].clone(), mix[3].clone()]
    );
    assert_eq!(
        lc_now[1],
        vec![mix[1].clone(), mix[3].clone(), mix[4].clone()]
    );
    // Nothing went back to a.
    assert_eq!(bursts(&la).concat().len(), 2);
    // Every buffer is back: the injected ones in `pool`, flood copies in either pool.
    assert_eq!(pool.outstanding() + sw.pool.outstanding(), 0);
    assert_eq!(sw.pool.available(), sw_pool_before);
    let stats = sw.bridge("br").expect("br").stats;
    assert_eq!(stats.flood_copies, 1 + 1 + 1);
}

#[test]
fn patch_drops_unmapped_and_counts() {
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("patch").expect("module"), None)
        .expect("bridge");
    let (pa, la) = port("a", (0..300).map(|i| frame(2, 1, i as u8)).collect());
    let (pb, lb) = port("b", vec![frame(1, 2, 0)]);
    sw.add_port("br", pa, Some(1), VlanMode::Trunk(None))
        .expect("a");
    sw.add_port("br", pb, Some(2), VlanMode::Trunk(None))
        .expect("b");
    sw.module_command("br", "patch-set", &["1".into(), "2".into()], false)
        .expect("patch");
    sw.poll_once();
    sw.poll_once();
    let got: Vec<Vec<u8>> = bursts(&lb).concat();
    assert_eq!(got.len(), 300);
    assert_eq!(got[299], frame(2, 1, 43));
    assert!(bursts(&la).is_empty(), "b -> a is not patched");
    assert_eq!(sw.bridge("br").expect("br").stats.module_drops, 1);
    assert_eq!(sw.pool.outstanding(), 0);
    // Removing the destination port leaves no stale mapping behind.
    sw.del_port(Some("br"), "b").expect("del");
    let (pc, lc) = port("c", vec![]);
    sw.add_port("br", pc, Some(3), VlanMode::Trunk(None))
        .expect("c");
    let (pa2, _) = port("a2", vec![frame(2, 1, 0)]);
    sw.add_port("br", pa2, Some(4), VlanMode::Trunk(None))
        .expect("a2");
    sw.poll_once();
    assert!(bursts(&lc).is_empty());
}

#[test]
fn control_errors_change_nothing() {
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("learning").expect("m"), None)
        .expect("br");
    let (p, _) = port("x", vec![]);
    sw.add_port("br", p, Some(7), VlanMode::Trunk(None))
        .expect("x");
    let before = sw.report();
    let (p, _) = port("y", vec![]);
    assert!(sw
        .add_port("br", p, Some(7), VlanMode::Trunk(None))
        .is_err());
    let (p, _) = port("x", vec![]);
    assert!(sw.add_port("br", p, None, VlanMode::Trunk(None)).is_err());
    let (p, _) = port("z", vec![]);
    assert!(sw.add_port("nobr", p, None, VlanMode::Trunk(None)).is_err());
    assert!(sw
        .add_bridge("br", registry::create("patch").expect("m"), None)
        .is_err());
    assert!(sw.del_port(Some("br"), "nope").is_err());
    assert_eq!(sw.report(), before);
}

#[test]
fn mirrors_copy_both_sides_once_and_reserve_their_output() {
    use datapath::mirror::MirrorConfig;
    let mut sw = PollSet::new(1024);
    sw.add_bridge("br", registry::create("learning").expect("module"), None)
        .expect("bridge");
    // b and m announce themselves; a then sends to b's host, c sends to a broadcast.
    let (pa, la) = port("a", vec![]);
    let (pb, lb) = port("b", vec![frame(0xff, 2, 0)]);
    let (pc, _lc) = port("c", vec![]);
    let (pm, lm) = port("m", vec![frame(0xff, 7, 0)]);
    for p in [pa, pb, pc, pm] {
        sw.add_port("br", p, None, VlanMode::Trunk(None))
            .expect("port");
    }
    let cfg = [MirrorConfig {
        name: "m1".into(),
        select_src_port: vec!["a".into()],
        select_dst_port: vec!["a".into(), "b".into()],
        output_port: Some("m".into()),
        ..MirrorConfig::default()
    }];
    let missing = sw.set_mirrors("br", &cfg).expect("mirrors");
    assert!(missing.is_empty());
    // Before any traffic: m's own broadcast is dropped (it is reserved), b's broadcast is
    // flooded to a and c but not to m, and mirrored once as it leaves by a (a dst port).
    sw.poll_once();
    assert_eq!(bursts(&la).concat(), vec![frame(0xff, 2, 0)]);
    assert_eq!(bursts(&lb).concat(), Vec::<Vec<u8>>::new());
    assert_eq!(bursts(&lm).concat(), vec![frame(0xff, 2, 0)]);
    let (st, reserved) = sw.bridge("br").expect("br").mirror_stats();
    assert_eq!(st[0].1.tx_packets, 1);
    // m's own broadcast (received there), and b's flood copy for m.
    assert_eq!(reserved, 2);

    // a -> b: copied at ingress (a is a source) only, although b is a destination port too.
    let mut b = Batch::new();
    let mut pool = Pool::new(8);
    for t in 1..=3 {
        let mut p = pool.alloc().expect("buf");
        p.set_frame(&frame(2, 1, t));
        b.push(p).map_err(|_| "full").expect("push");
    }
    let now = sw.now_ms();
    let br = sw.bridge_mut("br").expect("br");
    let a = br.find_port("a").expect("a");
    br.inject(a, &mut b, &Ctx { now_ms: now }, &mut pool);
    let to_b: Vec<Vec<u8>> = (1..=3).map(|t| frame(2, 1, t)).collect();
    assert_eq!(bursts(&lb).concat(), to_b);
    assert_eq!(bursts(&lm).concat()[1..], to_b[..]);
    let (st, _) = sw.bridge("br").expect("br").mirror_stats();
    assert_eq!(st[0].1.tx_packets, 4);
    assert_eq!(st[0].1.tx_bytes, 4 * 60);
    // Removing the mirror frees the port for normal forwarding, and every buffer is back.
    sw.set_mirrors("br", &[]).expect("none");
    assert!(sw.bridge("br").expect("br").mirror_stats().0.is_empty());
    assert_eq!(pool.outstanding() + sw.pool.outstanding(), 0);
    // A mirror naming a port that is not on the bridge says so.
    let bad = [MirrorConfig {
        name: "m2".into(),
        select_all: true,
        output_port: Some("nope".into()),
        ..MirrorConfig::default()
    }];
    assert_eq!(sw.set_mirrors("br", &bad).expect("set"), ["nope"]);
}
