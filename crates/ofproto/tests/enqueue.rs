//! OpenFlow 1.0's `enqueue` and Nicira's `pop_queue` in the pipeline, as OVS 3.1 translates
//! them (its userspace datapath: queue N is skb priority N, a received packet's is 0): the
//! packet leaves the port with the queue, later outputs go back to the queue in force
//! before; the input port named by number is skipped, `IN_PORT` is not. `out_port`
//! selects flows that enqueue to the port. Bad ports and action sets are refused.

use ofproto::odp::DpAction;
use ofproto::{xlate, Ofproto};
use openflow::actions::{OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_NORMAL};
use openflow::messages::err::bad_action;
use openflow::text::parse_flow;
use openflow::{Action, FlowModCommand, Instruction, OfError};
use packet::flow::FlowKey;

mod common;

use DpAction::{Output, SetQueue};

fn key(in_port: u32) -> FlowKey {
    FlowKey {
        in_port,
        ..FlowKey::ZERO
    }
}

fn with(rules: &[&str]) -> Ofproto {
    common::switch_with(4, &[], rules)
}

/// The datapath actions for a packet from `in_port`, and the trace's lines.
fn run(of: &Ofproto, in_port: u32) -> (Vec<DpAction>, String) {
    let mut t = Vec::new();
    let x = xlate(of, &key(in_port), None, Some(&mut t));
    (x.actions, t.join("\n"))
}

#[test]
fn enqueue_sends_on_the_queue_and_the_queue_does_not_stick() {
    let of = with(&[
        "in_port=1,actions=enqueue:2:5,output:3",
        "in_port=2,actions=set_queue:4,enqueue:3:5,output:1",
        "in_port=4,actions=set_queue:3,output:2,pop_queue,output:1",
    ]);
    // OVS: set(skb_priority(0x5)),2,set(skb_priority(0)),3
    let (a, trace) = run(&of, 1);
    assert_eq!(a, [SetQueue(5), Output(2), SetQueue(0), Output(3)]);
    assert!(trace.contains("enqueue:2:5"), "{trace}");
    // OVS: set(skb_priority(0x5)),3,set(skb_priority(0x4)),1
    let (a, _) = run(&of, 2);
    assert_eq!(
        a,
        [SetQueue(4), SetQueue(5), Output(3), SetQueue(4), Output(1)]
    );
    // OVS: set(skb_priority(0x3)),2,set(skb_priority(0)),1; its trace notes the pop.
    let (a, trace) = run(&of, 4);
    assert_eq!(a, [SetQueue(3), Output(2), SetQueue(0), Output(1)]);
    assert!(
        trace.contains("pop_queue\n") && trace.contains("-> queue = 0"),
        "{trace}"
    );
}

#[test]
fn enqueue_to_the_input_port_by_number_is_skipped_but_in_port_is_not() {
    // OVS: set(skb_priority(0x6)),3
    let of = with(&["in_port=3,actions=enqueue:3:5,enqueue:IN_PORT:6"]);
    let (a, trace) = run(&of, 3);
    assert_eq!(a, [SetQueue(6), Output(3), SetQueue(0)]);
    assert!(trace.contains("skipping output to input port"), "{trace}");
}

#[test]
fn a_queue_set_inside_clone_stays_there() {
    let of = with(&["in_port=1,actions=clone(set_queue:7),enqueue:2:5"]);
    let (a, _) = run(&of, 1);
    assert_eq!(
        a,
        [
            DpAction::Clone(vec![SetQueue(7)]),
            SetQueue(5),
            Output(2),
            SetQueue(0)
        ]
    );
}

fn flow_mod(actions: Vec<Action>) -> openflow::FlowMod {
    let mut fm = parse_flow("priority=1,actions=drop", FlowModCommand::Add).expect("parse");
    fm.instructions = vec![Instruction::ApplyActions(actions)];
    fm
}

#[test]
fn ports_ovs_refuses_are_bad_out_port() {
    let mut of = with(&[]);
    let bad = Err(OfError::bad_action(bad_action::BAD_OUT_PORT));
    for port in [OFPP_FLOOD, OFPP_CONTROLLER, OFPP_NORMAL, OFPP_ANY, 0xff00] {
        let fm = flow_mod(vec![Action::Enqueue { port, queue: 1 }]);
        assert_eq!(of.flow_mod(&fm, 0).map(|_| ()), bad, "{port:#x}");
    }
    for port in [0, 2, 1000, OFPP_IN_PORT] {
        let fm = flow_mod(vec![Action::Enqueue { port, queue: 1 }]);
        assert!(of.flow_mod(&fm, 0).is_ok(), "{port:#x}");
    }
    // Not in an action set (OVS: "disallowed action in action set").
    let mut fm = flow_mod(vec![]);
    fm.instructions = vec![Instruction::WriteActions(vec![Action::Enqueue {
        port: 2,
        queue: 1,
    }])];
    assert_eq!(
        of.flow_mod(&fm, 0).map(|_| ()),
        Err(OfError::bad_action(bad_action::BAD_TYPE))
    );
}

#[test]
fn out_port_selects_flows_that_enqueue_to_it() {
    let mut of = with(&[
        "priority=1,in_port=1,actions=enqueue:2:5",
        "priority=2,in_port=2,actions=clone(enqueue:2:5)",
        "priority=3,in_port=3,actions=enqueue:3:5,output:4",
    ]);
    let del = |q: &str| parse_flow(q, FlowModCommand::Delete).expect("parse");
    of.flow_mod(&del("out_port=2"), 0).expect("delete");
    let left: Vec<u16> = of.tables()[0].rules().map(|r| r.priority).collect();
    assert_eq!(left, [3]);
    of.flow_mod(&del("out_port=3"), 0).expect("delete");
    assert_eq!(of.tables()[0].rules().count(), 0);
}
