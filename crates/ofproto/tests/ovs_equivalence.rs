//! Forwarding differences from OVS 3.1 found by the differential harness
//! (tests/integration/helpers/ovsdiff.py), one test each, under the daemon's `vlan-limit=1`
//! (this file is its own process, so the process-wide limit is safe to set):
//! * a fragment, the first included, is looked up with its L4 ports zero (OVS's default
//!   `frag_handling=normal`), and whether a packet is a fragment is part of every IP megaflow;
//! * a pop leaves a frame shorter than 60 bytes as it is (OVS does not pad);
//! * IP rewrites after a push find the IP header behind the new tag;
//! * a pop after a push brings the matched tag back, for action prerequisites.

use ofproto::odp::DpAction;
use ofproto::Ofproto;
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow::{self, ETH_TYPE_IPV4, ETH_TYPE_VLAN, NW_FRAG_ANY};

mod common;
use common::{forward, Udp4};

fn switch(rules: &[&str]) -> Ofproto {
    flow::set_vlan_limit(1);
    common::switch(rules)
}

/// Ethernet (+ tags) / IPv4 (TTL 64, `frag` = flags and offset word) / UDP 5000 -> `dport`.
fn udp(tags: &[u16], frag: u16, dport: u16) -> Vec<u8> {
    let tags = tags.iter().map(|t| (ETH_TYPE_VLAN, *t)).collect();
    Udp4 {
        tags,
        id: 1,
        frag,
        dport,
        ..Udp4::default()
    }
    .bytes()
}

#[test]
fn fragments_are_looked_up_without_ports() {
    let of = switch(&[
        "priority=20,udp,tp_dst=443,actions=output:2",
        "priority=10,actions=output:3",
    ]);
    let (_, whole) = forward(&of, &udp(&[], 0, 443));
    assert!(
        whole.actions.contains(&DpAction::Output(2)),
        "{:?}",
        whole.actions
    );
    // More fragments follow (MF): the first fragment has its ports, but is looked up
    // without them, so the port rule does not match.
    let (_, first) = forward(&of, &udp(&[], 0x2000, 443));
    assert!(
        first.actions.contains(&DpAction::Output(3)),
        "{:?}",
        first.actions
    );
    // Both megaflows say whether the packet was a fragment, so neither serves the other.
    assert_eq!(whole.wc.nw_frag & NW_FRAG_ANY, NW_FRAG_ANY);
    assert_eq!(first.wc.nw_frag & NW_FRAG_ANY, NW_FRAG_ANY);
}

#[test]
fn a_pop_leaves_a_short_frame_short() {
    let of = switch(&["priority=10,in_port=1,dl_vlan=5,actions=pop_vlan,output:2"]);
    let mut f = udp(&[5], 0, 53);
    f.resize(60, 0);
    let (out, _) = forward(&of, &f);
    assert_eq!(out.len(), 56, "OVS sends 56 bytes; the NIC pads");
    assert_eq!(&out[12..14], &ETH_TYPE_IPV4.to_be_bytes());
}

#[test]
fn ip_rewrites_after_a_push_find_the_ip_header() {
    let of = switch(&[
        "priority=10,in_port=1,ip,actions=push_vlan:0x8100,dec_ttl,mod_nw_tos:32,output:2",
    ]);
    // One tag in, a second pushed: the TTL and TOS rewrites reach the IPv4 header behind both.
    let (out, x) = forward(&of, &udp(&[5], 0, 53));
    let ip = &out[22..];
    assert_eq!(ip[8], 63, "TTL: {:?}", x.actions);
    assert_eq!(ip[1] & 0xfc, 32, "TOS: {:?}", x.actions);
    assert_eq!(
        packet::csum::checksum(&ip[..20]),
        0,
        "header checksum still valid"
    );
}

#[test]
fn a_pop_after_a_push_brings_the_matched_tag_back_for_prerequisites() {
    // OVS accepts this (the matched tag is there again after the pop); the VLAN PCP set
    // needs a tag.
    let mut of = switch(&[]);
    let fm = parse_flow(
        "priority=5,dl_vlan=10,actions=push_vlan:0x8100,pop_vlan,set_field:4->vlan_pcp,output:2",
        FlowModCommand::Add,
    )
    .expect("parse");
    of.flow_mod(&fm, 0).expect("accepted, as by OVS");
    // Without the matched tag the same actions are inconsistent, as in OVS.
    let fm = parse_flow(
        "priority=5,actions=push_vlan:0x8100,pop_vlan,set_field:4->vlan_pcp,output:2",
        FlowModCommand::Add,
    )
    .expect("parse");
    assert!(of.flow_mod(&fm, 0).is_err());
}
