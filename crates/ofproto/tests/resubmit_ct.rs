//! `resubmit(,TABLE,ct)`: the table is looked up with the packet's addresses, IP protocol
//! and ports replaced by the connection's original-direction ones, and only the lookup
//! sees them (the matched rule's actions see the packet as it is), as in OVS; the bits the
//! lookup examined are wildcarded on the connection fields they came from.

use ofproto::odp::DpAction;
use ofproto::xlate;
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow::{FlowKey, ETH_TYPE_IPV4, ETH_TYPE_IPV6};

mod common;
use common::switch_with;

/// An established TCP connection 10.0.0.1:1000 -> VIP 10.0.0.99:8080 whose packet, after
/// DNAT, goes 10.0.0.1:1000 -> 10.0.0.2:80.
fn dnat_key() -> FlowKey {
    let mut k = FlowKey {
        in_port: 1,
        dl_type: ETH_TYPE_IPV4,
        nw_proto: 6,
        nw_src: [10, 0, 0, 1],
        nw_dst: [10, 0, 0, 2],
        nw_ttl: 64,
        tp_src: 1000,
        tp_dst: 80,
        ct_state: 0x22, // +trk+est
        ct_nw_proto: 6,
        ct_tp_src: 1000,
        ct_tp_dst: 8080,
        ..FlowKey::ZERO
    };
    k.ct_src[..4].copy_from_slice(&[10, 0, 0, 1]);
    k.ct_dst[..4].copy_from_slice(&[10, 0, 0, 99]);
    k
}

const LB: &[&str] = &[
    "table=0,priority=10,ip,ct_state=+trk+est,actions=resubmit(,1,ct),output:3",
    // Matches the original direction (the VIP), then looks at the packet's real dst.
    "table=1,priority=20,tcp,nw_dst=10.0.0.99,tp_dst=8080,\
     actions=move:NXM_OF_IP_DST[]->NXM_NX_REG1[],resubmit(,2)",
    "table=1,priority=10,actions=drop",
    "table=2,reg1=0x0a000002,actions=output:2",
    "table=2,reg1=0x0a000063,actions=output:1",
];

#[test]
fn the_lookup_sees_the_original_tuple_and_the_actions_the_packet() {
    let of = switch_with(3, &[], LB);
    let x = xlate(&of, &dnat_key(), None, None);
    assert_eq!(x.actions, vec![DpAction::Output(2), DpAction::Output(3)]);
    // The VIP and port the lookup matched are pinned on the connection fields...
    assert_eq!(x.wc.ct_dst[..4], [0xff; 4]);
    assert_eq!(x.wc.ct_tp_dst, 0xffff);
    assert_eq!(x.wc.ct_nw_proto, 0xff);
    // ...and the packet's own dst on its own field (the `move` read it).
    assert_eq!(x.wc.nw_dst, [0xff; 4]);
    assert_eq!(x.final_flow.nw_dst, [10, 0, 0, 2]);
    // A plain resubmit sees the packet: no VIP, table 1 drops.
    let plain: Vec<String> = LB
        .iter()
        .map(|f| f.replace("resubmit(,1,ct)", "resubmit(,1)"))
        .collect();
    let refs: Vec<&str> = plain.iter().map(String::as_str).collect();
    let of = switch_with(3, &[], &refs);
    let y = xlate(&of, &dnat_key(), None, None);
    assert_eq!(y.actions, vec![DpAction::Output(3)]);
}

#[test]
fn ipv6_swaps_the_ipv6_addresses() {
    let of = switch_with(
        3,
        &[],
        &[
            "table=0,ipv6,ct_state=+trk+est,actions=resubmit(,1,ct)",
            "table=1,tcp6,ipv6_dst=2001:db8::99,actions=output:2",
            "table=1,priority=0,actions=output:3",
        ],
    );
    let mut k = dnat_key();
    k.dl_type = ETH_TYPE_IPV6;
    k.ipv6_src[15] = 1;
    k.ipv6_dst[15] = 2;
    k.ct_src = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    k.ct_dst = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99,
    ];
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
}

/// Without a connection tuple (or not IP) the resubmit is skipped, as in OVS, and the
/// actions after it run.
#[test]
fn without_a_tuple_the_resubmit_is_skipped() {
    let of = switch_with(3, &[], LB);
    let mut k = dnat_key();
    k.ct_nw_proto = 0;
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(3)]);
    assert_eq!(x.wc.ct_nw_proto, 0xff, "the decision depends on it");
}

/// As OVS checks it: a flow with `resubmit(,,ct)` must match a valid connection.
#[test]
fn the_flow_must_match_a_valid_connection() {
    let add = |f: &str| {
        let mut of = ofproto::Ofproto::new();
        let fm = parse_flow(f, FlowModCommand::Add).expect("parses");
        of.flow_mod(&fm, 0).map(|_| ())
    };
    let inconsistent = openflow::messages::OfError::bad_action(
        openflow::messages::err::bad_action::MATCH_INCONSISTENT,
    );
    assert_eq!(add("ip,actions=resubmit(,3,ct)"), Err(inconsistent));
    assert_eq!(
        add("ip,ct_state=+trk,actions=resubmit(,3,ct)"),
        Err(inconsistent)
    );
    assert!(add("ip,ct_state=+trk+est,actions=resubmit(,3,ct)").is_ok());
    assert!(add("ip,ct_state=+trk-inv,actions=resubmit(1,3,ct)").is_ok());
    assert!(add("ip,actions=resubmit(,3)").is_ok());
}
