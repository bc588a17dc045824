//! Where OVS 3.1 forwards differently from the letter of the OpenFlow specification, ferrovs
//! forwards as OVS does (controllers are written against OVS). One test per difference found
//! by running the same rules and packets through both switches:
//! * `mod_vlan_vid` (and OpenFlow 1.0's set_vlan_vid, which arrive as a VID set with
//!   OFPVID_PRESENT) on an untagged packet pushes an 802.1Q tag;
//! * `push_vlan` starts the new tag at VID 0, PCP 0 instead of copying the outer tag;
//! * with OVS's default `vlan-limit=1` only the outer tag of a double-tagged frame is parsed,
//!   so its L3/L4 fields are not there to match;
//! * a flow holds two tags: a push onto two known tags discards the inner one from the packet
//!   too (found by tests/integration/helpers/ovsdiff.py).

use ofproto::odp::DpAction;
use ofproto::{xlate, Ofproto};
use packet::flow::{self, FlowKey, ETH_TYPE_IPV4, ETH_TYPE_VLAN, VLAN_PRESENT};

mod common;
use common::{switch, Udp4};

/// An Ethernet/IPv4/UDP frame behind the given tags (TPID, TCI).
fn frame(tags: &[(u16, u16)]) -> Vec<u8> {
    Udp4 {
        tags: tags.to_vec(),
        ..Udp4::default()
    }
    .bytes()
}

/// Runs `f` in on port 1 through the pipeline and its datapath actions; returns the frame
/// that leaves and the actions.
fn forward(of: &Ofproto, f: &[u8]) -> (Vec<u8>, Vec<DpAction>) {
    let (out, x) = common::forward(of, f);
    (out, x.actions)
}

fn outer_tag(f: &[u8]) -> Option<(u16, u16)> {
    let k = flow::extract(f, 0);
    (k.vlan_tci[0] & VLAN_PRESENT != 0).then(|| (k.vlan_tpid[0], k.vlan_tci[0] & !VLAN_PRESENT))
}

#[test]
fn mod_vlan_vid_pushes_a_tag_on_an_untagged_packet() {
    let of = switch(&["priority=10,in_port=1,actions=mod_vlan_vid:10,output:2"]);
    let (out, acts) = forward(&of, &frame(&[]));
    assert_eq!(outer_tag(&out), Some((ETH_TYPE_VLAN, 10)), "{acts:?}");
    // A tagged packet keeps its one tag, with the new VID and its PCP.
    let (out, _) = forward(&of, &frame(&[(ETH_TYPE_VLAN, 0x6005)]));
    assert_eq!(outer_tag(&out), Some((ETH_TYPE_VLAN, 0x600a)));
    assert_eq!(flow::extract(&out, 0).vlan_tci[1], 0, "no second tag");
}

#[test]
fn push_vlan_starts_the_new_tag_at_vid_0_pcp_0() {
    let of = switch(&[
        "priority=10,in_port=1,actions=push_vlan:0x8100,output:2",
        "priority=20,in_port=1,dl_vlan=7,actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:3",
    ]);
    // Tagged VID 5 PCP 3: the new outer tag is VID 0, PCP 0; the old one stays inner.
    let (out, _) = forward(&of, &frame(&[(ETH_TYPE_VLAN, 0x6005)]));
    let k = flow::extract(&out, 0);
    assert_eq!(k.vlan_tci, [VLAN_PRESENT, 0x6005 | VLAN_PRESENT]);
    // Then a VID set: PCP still 0 (the specification would have copied 3).
    let (out, _) = forward(&of, &frame(&[(ETH_TYPE_VLAN, 0x6007)]));
    let k = flow::extract(&out, 0);
    assert_eq!(k.vlan_tci[0], 100 | VLAN_PRESENT);
    assert_eq!(k.vlan_tci[1], 0x6007 | VLAN_PRESENT);
}

#[test]
fn vlan_limit_one_leaves_the_inner_tag_unparsed() {
    let qinq = frame(&[(0x88a8, 10), (ETH_TYPE_VLAN, 20)]);
    let mut k = FlowKey::ZERO;
    flow::extract_into_with(&mut k, &qinq, 1, 1);
    assert_eq!(k.vlan_tci, [10 | VLAN_PRESENT, 0]);
    assert_eq!(
        k.dl_type, ETH_TYPE_VLAN,
        "the inner tag's TPID is the EtherType"
    );
    assert_eq!(k.nw_dst, [0; 4], "nothing after the limit is parsed");
    flow::extract_into_with(&mut k, &qinq, 1, 2);
    assert_eq!(k.vlan_tci, [10 | VLAN_PRESENT, 20 | VLAN_PRESENT]);
    assert_eq!((k.dl_type, k.nw_dst), (ETH_TYPE_IPV4, [10, 0, 0, 2]));
    // So an IP rule does not match a double-tagged frame under the limit.
    let of = switch(&[
        "priority=20,ip,actions=output:2",
        "priority=10,actions=output:3",
    ]);
    flow::extract_into_with(&mut k, &qinq, 1, 1);
    let x = xlate(&of, &k, Some(&qinq), None);
    assert!(x.actions.contains(&DpAction::Output(3)), "{:?}", x.actions);
    flow::extract_into_with(&mut k, &qinq, 1, 2);
    let x = xlate(&of, &k, Some(&qinq), None);
    assert!(x.actions.contains(&DpAction::Output(2)), "{:?}", x.actions);
}

#[test]
fn a_push_onto_two_tags_drops_the_inner_one() {
    let of = switch(&[
        "priority=10,in_port=1,actions=push_vlan:0x8100,set_field:4116->vlan_vid,push_vlan:0x8100,set_field:4126->vlan_vid,output:2",
    ]);
    // One tag (VID 5) in; two pushes: OVS's flow keeps [30, 20] and the packet follows.
    let (out, acts) = forward(&of, &frame(&[(ETH_TYPE_VLAN, 0x6005)]));
    let mut k = FlowKey::ZERO;
    flow::extract_into_with(&mut k, &out, 0, 2);
    assert_eq!(
        k.vlan_tci,
        [30 | VLAN_PRESENT, 20 | VLAN_PRESENT],
        "{acts:?}"
    );
    assert_eq!(k.dl_type, ETH_TYPE_IPV4, "no third tag: {out:02x?}");
    assert_eq!(k.nw_dst, [10, 0, 0, 2]);
}
