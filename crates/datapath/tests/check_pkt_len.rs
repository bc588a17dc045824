//! `check_pkt_larger` through the megaflow cache: small and large packets of one flow share
//! one cached megaflow (one translation) and still go where their length says, because the
//! cached actions hold both answers and the datapath picks per packet.

use datapath::PollSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

mod common;

use common::Log;

/// An Ethernet/IPv4/UDP frame of `len` bytes (at least 60), one flow whatever the length.
fn frame(len: usize) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (len - 14) as u16;
    let t = total.to_be_bytes();
    f.extend_from_slice(&[
        0x45, 0, t[0], t[1], 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    let u = (total - 20).to_be_bytes();
    f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, u[0], u[1], 0, 0]);
    f.resize(len, 0xab);
    f
}

fn count(log: &Log) -> usize {
    log.lock().map(|l| l.len()).unwrap_or(0)
}

fn send(sw: &mut PollSet, f: Vec<u8>) {
    sw.inject("br", "p1", &[f]).expect("inject");
    assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
}

#[test]
fn small_and_large_packets_of_one_megaflow_part_ways() {
    for cache in [true, false] {
        let (mut sw, logs, u) = common::switch(cache, 1024, 3);
        for f in [
            "table=0,in_port=1,ip,actions=check_pkt_larger(1000)->NXM_NX_REG9[1],resubmit(,1)",
            "table=1,priority=10,reg9=0x2/0x2,actions=output:2",
            "table=1,priority=5,actions=output:3",
        ] {
            common::of(&u, "add-flow", Some(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
        send(&mut sw, frame(100));
        assert_eq!((count(&logs[1]), count(&logs[2])), (0, 1), "cache={cache}");
        let xlates = u.stats.xlates.load(Ordering::Relaxed);
        for round in 1..=3 {
            send(&mut sw, frame(1500));
            assert_eq!(
                count(&logs[1]),
                2 * round - 1,
                "cache={cache}: large to port 2"
            );
            send(&mut sw, frame(1000));
            assert_eq!(
                count(&logs[2]),
                1 + round,
                "cache={cache}: 1000 is not larger"
            );
            send(&mut sw, frame(1001));
            assert_eq!(count(&logs[1]), 2 * round, "cache={cache}: 1001 is larger");
        }
        if cache {
            // Every packet after the first hit the megaflow the first one installed.
            assert_eq!(
                u.stats.xlates.load(Ordering::Relaxed),
                xlates,
                "re-translated"
            );
            assert_eq!(u.idx().len(), 1, "one megaflow");
        }
    }
}
