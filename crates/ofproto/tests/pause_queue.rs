//! The queue across `controller(pause)` and `NXT_RESUME`, as OVS 3.1's userspace datapath
//! runs it (queue N is skb priority N; a received packet's is 0): the continuation carries
//! no queue, so the resumed packet starts on queue 0 whatever `set_queue` or `enqueue` did
//! before the pause; a `set_queue` after the resume point applies to the outputs after it,
//! and a `pop_queue` there goes back to 0. The comments give the datapath actions OVS 3.1
//! executes for the resumed packet (its `dpif` debug log, `execute ...`);
//! tests/integration/test_pause_queue_ovs.py compares the two switches side by side.

mod common;

use ofproto::continuation::Continuation;
use ofproto::odp::DpAction;
use ofproto::xlate::resume;
use ofproto::{xlate, Ofproto, XlateOut};
use packet::flow;

use DpAction::{Output, SetQueue};

/// Four live ports and `rules`.
fn switch(rules: &[&str]) -> Ofproto {
    common::switch_with(4, &[], rules)
}

/// An Ethernet/IPv4/UDP frame 10.0.0.1 -> 10.0.0.2.
fn udp4() -> Vec<u8> {
    common::Udp4::default().bytes()
}

/// The first pass of a packet from port 1 (its datapath actions, the packet-in last
/// dropped) and the continuation its packet-in carries.
fn pause(of: &Ofproto) -> (Vec<DpAction>, Continuation) {
    let f = udp4();
    let x: XlateOut = xlate(of, &flow::extract(&f, 1), Some(&f), None);
    let mut acts = x.actions;
    let Some(DpAction::Controller { extra: Some(e), .. }) = acts.pop() else {
        panic!("no packet-in last: {acts:?}");
    };
    let cont = Continuation::decode(&e.continuation, &of.recirc.key()).expect("decodes");
    (acts, cont)
}

/// The datapath actions of the packet resumed unchanged, as `ovs-ofctl monitor ... resume`
/// resumes it.
fn resumed(of: &Ofproto, cont: &Continuation) -> Vec<DpAction> {
    let f = udp4();
    let y = resume(of, &flow::extract(&f, 1), Some(&f), cont, None);
    assert!(!y.failed, "{:?}", y.actions);
    y.actions
}

#[test]
fn set_queue_before_the_pause_does_not_reach_the_resumed_outputs() {
    let of =
        switch(&["in_port=1,actions=set_queue:5,controller(pause),output:2,pop_queue,output:3"]);
    // OVS's first pass: set(skb_priority(0x5)),userspace(...controller...).
    let (first, cont) = pause(&of);
    assert_eq!(first, [SetQueue(5)]);
    // OVS: execute 2,3 — both on queue 0, the pop changes nothing.
    assert_eq!(resumed(&of, &cont), [Output(2), Output(3)]);
}

#[test]
fn enqueue_before_the_pause_does_not_reach_the_resumed_outputs() {
    let of = switch(&["in_port=1,actions=set_queue:7,enqueue:2:5,controller(pause),output:3"]);
    // OVS's first pass: set(skb_priority(0x5)),2,set(skb_priority(0x7)),userspace(...).
    let (first, cont) = pause(&of);
    assert_eq!(first, [SetQueue(7), SetQueue(5), Output(2), SetQueue(7)]);
    // OVS: execute 3.
    assert_eq!(resumed(&of, &cont), [Output(3)]);
}

#[test]
fn set_queue_after_the_resume_point_applies_and_pops_to_zero() {
    let of = switch(&[
        "in_port=1,actions=set_queue:5,controller(pause),set_queue:6,output:2,pop_queue,output:3",
    ]);
    let (_, cont) = pause(&of);
    // OVS: execute set(skb_priority(0x6)),2,set(skb_priority(0)),3.
    assert_eq!(
        resumed(&of, &cont),
        [SetQueue(6), Output(2), SetQueue(0), Output(3)]
    );
}

#[test]
fn pop_queue_after_the_resume_point_is_queue_zero() {
    let of = switch(&["in_port=1,actions=set_queue:5,controller(pause),pop_queue,output:2"]);
    let (_, cont) = pause(&of);
    // OVS: execute 2.
    assert_eq!(resumed(&of, &cont), [Output(2)]);
}

#[test]
fn enqueue_after_the_resume_point_goes_back_to_zero() {
    let of = switch(&["in_port=1,actions=controller(pause),enqueue:2:5,output:3"]);
    let (_, cont) = pause(&of);
    // OVS: execute set(skb_priority(0x5)),2,set(skb_priority(0)),3.
    assert_eq!(
        resumed(&of, &cont),
        [SetQueue(5), Output(2), SetQueue(0), Output(3)]
    );
}

#[test]
fn a_queue_set_before_a_resubmit_to_the_pause_does_not_come_back() {
    let of = switch(&[
        "table=0,in_port=1,actions=set_queue:5,resubmit(,1),output:3",
        "table=1,actions=controller(pause),output:2",
    ]);
    let (_, cont) = pause(&of);
    assert_eq!(cont.frames.len(), 2);
    // OVS: execute 2,3.
    assert_eq!(resumed(&of, &cont), [Output(2), Output(3)]);
}

/// A write-actions instruction after the pause runs at the end of the resumed pipeline, on
/// queue 0. OVS 3.1 differs here (docs/ovs-equivalence.md): it writes the instruction into
/// its continuation's action list, and its own decoder then refuses the `NXT_RESUME`
/// (`OFPBAC_BAD_LEN`); over OpenFlow 1.0 it leaves the instruction out and drops the packet.
#[test]
fn write_actions_after_the_pause_runs_on_queue_zero() {
    let of = switch(&["in_port=1,actions=set_queue:5,controller(pause),write_actions(output:2)"]);
    let (_, cont) = pause(&of);
    assert_eq!(resumed(&of, &cont), [Output(2)]);
}
