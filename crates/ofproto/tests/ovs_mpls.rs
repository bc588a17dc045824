//! MPLS push and pop as OVS 3.1 does them, found by the differential harness
//! (tests/integration/helpers/ovsdiff.py with MPLS rules and packets):
//! * `pop_mpls:0x0800` on a two-label packet pops both labels (OVS's flow holds no label
//!   once the EtherType is not MPLS); it used to pop one and leave a label behind 0x0800;
//! * `push_mpls` onto an IP packet takes the TC from the DSCP's low three bits;
//! * a push onto three labels fails the translation: dropped, and a packet-out is refused.

use ofproto::odp::DpAction;
use ofproto::Ofproto;
use packet::flow::{self, ETH_TYPE_IPV4, ETH_TYPE_MPLS};

mod common;
use common::{forward, Udp4};

fn switch(rules: &[&str]) -> Ofproto {
    flow::set_vlan_limit(1);
    common::switch(rules)
}

/// IPv4/UDP (TOS `tos`, TTL 64) behind the given label stack entries, outermost first.
fn frame(labels: &[u32], tos: u8) -> Vec<u8> {
    let f = Udp4 {
        labels: labels.to_vec(),
        tos,
        id: 1,
        dport: 53,
        ..Udp4::default()
    };
    f.bytes()
}

/// Label 16 (not bottom of stack, TTL 1) over label 100 (bottom, TTL 1).
const TWO: [u32; 2] = [16 << 12 | 1, 100 << 12 | 0x100 | 1];

#[test]
fn a_pop_to_ipv4_pops_every_label() {
    let of = switch(&["priority=10,mpls,actions=pop_mpls:0x0800,output:2"]);
    let (out, x) = forward(&of, &frame(&TWO, 0));
    assert_eq!(out, frame(&[], 0), "{:?}", x.actions);
    let pops: Vec<&DpAction> = x
        .actions
        .iter()
        .filter(|a| matches!(a, DpAction::PopMpls(_)))
        .collect();
    assert_eq!(
        pops,
        vec![
            &DpAction::PopMpls(ETH_TYPE_MPLS),
            &DpAction::PopMpls(ETH_TYPE_IPV4)
        ]
    );
    // A pop to MPLS takes one label only.
    let of = switch(&["priority=10,mpls,actions=pop_mpls:0x8847,output:2"]);
    let (out, _) = forward(&of, &frame(&TWO, 0));
    assert_eq!(out, frame(&TWO[1..], 0));
}

#[test]
fn a_push_takes_tc_from_the_dscp_low_bits_and_ttl_from_ip() {
    let of = switch(&["priority=10,ip,actions=push_mpls:0x8847,output:2"]);
    // TOS 40: DSCP 10, whose low three bits are 2.
    let (out, x) = forward(&of, &frame(&[], 40));
    let lse = u32::from_be_bytes([out[14], out[15], out[16], out[17]]);
    assert_eq!(lse, 2 << 9 | 0x100 | 64, "{lse:#x} {:?}", x.actions);
    assert_eq!(
        x.final_flow.nw_dst, [0; 4],
        "the flow forgets L3 under a label"
    );
}

#[test]
fn a_push_onto_three_labels_fails() {
    let of = switch(&["priority=10,mpls,actions=output:3,push_mpls:0x8847,output:2"]);
    let three = [16 << 12 | 1, 17 << 12 | 1, 100 << 12 | 0x100 | 1];
    let f = frame(&three, 0);
    let (_, x) = forward(&of, &f);
    assert!(x.failed);
    assert!(x.actions.is_empty(), "{:?}", x.actions);
    let err = ofproto::xlate::packet_out(
        &of,
        1,
        &f,
        &[openflow::Action::Output {
            port: openflow::actions::OFPP_TABLE,
            max_len: 0,
        }],
        0,
    );
    assert!(err.is_err());
    // Two labels: the push is fine.
    let (_, x) = forward(&of, &frame(&TWO, 0));
    assert!(!x.failed);
}
