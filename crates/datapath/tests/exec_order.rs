//! Datapath actions run in full: an output that is not the last thing done to a packet does
//! not end the action list. OVS sends `output:3,group:1` with an `all` group whose bucket
//! outputs to 3 twice to port 3, and `output:2,controller` to port 2 and the controller; the
//! executor once let the last plain output take the packet and stop, dropping a later clone
//! (group bucket) or packet-in. Found by the differential harness against OVS 3.1.

use datapath::udpif::Udpif;
use datapath::PollSet;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::Log;

fn of(u: &Udpif, verb: &str, arg: &str) {
    common::of(u, verb, Some(arg)).unwrap_or_else(|e| panic!("{verb} {arg}: {e}"));
}

fn switch(cache: bool) -> (PollSet, Vec<Log>, Arc<Udpif>) {
    common::switch(cache, 1024, 3)
}

fn frame(dst_last: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst_last, 0, 0, 0, 0, 0, 9, 0x88, 0xb5];
    f.resize(60, 0xab);
    f
}

fn count(log: &Log) -> usize {
    log.lock().map(|l| l.len()).unwrap_or(0)
}

#[test]
fn an_output_before_a_group_or_controller_does_not_end_the_actions() {
    for cache in [false, true] {
        let (mut sw, logs, u) = switch(cache);
        of(&u, "add-group", "group_id=1,type=all,bucket=output:3");
        of(
            &u,
            "add-flow",
            "in_port=1,dl_dst=00:00:00:00:00:01,actions=output:3,group:1",
        );
        of(
            &u,
            "add-flow",
            "in_port=1,dl_dst=00:00:00:00:00:02,actions=output:2,controller",
        );
        for round in 0..3 {
            sw.inject("br", "p1", &[frame(1)]).expect("inject");
            assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
            assert_eq!(count(&logs[2]), 2 * (round + 1), "cache={cache}: port 3");
            sw.inject("br", "p1", &[frame(2)]).expect("inject");
            assert!(sw.settle(Duration::from_secs(10)), "upcalls did not settle");
            assert_eq!(count(&logs[1]), round + 1, "cache={cache}: port 2");
            let pins = u.take_packet_ins();
            assert_eq!(pins.len(), 1, "cache={cache}: packet-ins");
            assert_eq!(pins[0].data, frame(2));
        }
    }
}
