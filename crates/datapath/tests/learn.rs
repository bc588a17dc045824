//! `learn` through the datapath: packets whose flow runs a `learn` get their flows into
//! the table (handed over by the megaflow's action, applied by the next write session, the
//! revalidator's if no other comes), and those flows then forward traffic. With the
//! megaflow cache and without it.

use datapath::PollSet;
use std::time::{Duration, Instant};

mod common;

use common::of;

/// A frame from 02:00:00:00:00:`src` to 02:00:00:00:00:`dst`.
fn frame(src: u8, dst: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.resize(60, 0xab);
    f
}

fn send(sw: &mut PollSet, port: &str, frames: &[Vec<u8>]) {
    for f in frames {
        sw.inject("br", port, std::slice::from_ref(f))
            .expect("inject");
    }
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
}

#[test]
fn learned_flows_reach_the_table_and_forward() {
    for cache in [true, false] {
        let (mut sw, logs, u) = common::switch(cache, 1024, 2);
        for f in [
            "table=0,in_port=1,actions=learn(table=1,hard_timeout=60,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:2",
            "table=0,in_port=2,actions=resubmit(,1)",
        ] {
            of(&u, "add-flow", Some(f)).expect("flow");
        }
        // Three hosts behind port 1, each sending several frames.
        let frames: Vec<Vec<u8>> = (0..30).map(|i| frame(0x11 + (i % 3) as u8, 0x99)).collect();
        send(&mut sw, "p1", &frames);
        assert_eq!(
            logs[1].lock().map(|l| l.len()).unwrap_or(0),
            30,
            "cache={cache}"
        );
        let t0 = Instant::now();
        let n = || u.snapshot().table(1).map_or(0, |t| t.len());
        while n() < 3 && t0.elapsed() < Duration::from_secs(10) {
            sw.poll_once();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(n(), 3, "cache={cache}: learned flows in table 1");
        let dump = of(&u, "dump-flows", Some("table=1")).expect("dump");
        for m in 0x11..=0x13 {
            assert!(
                dump.contains(&format!("dl_dst=02:00:00:00:00:{m:02x} actions=output:1")),
                "cache={cache}: {dump}"
            );
        }
        // Replies to a learned host go to port 1 only.
        send(&mut sw, "p2", &[frame(0x99, 0x12)]);
        assert_eq!(
            logs[0].lock().map(|l| l.len()).unwrap_or(0),
            1,
            "cache={cache}"
        );
        assert_eq!(
            u.learn_overflow.load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        assert_eq!(u.learn_failed.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
