//! MPLS push and pop as OVS 3.1 does them, found by the differential harness
//! (tests/integration/helpers/ovsdiff.py with MPLS rules and packets):
//! * `pop_mpls:0x0800` on a two-label packet pops both labels (OVS's flow holds no label
//!   once the EtherType is not MPLS); it used to pop one and leave a label behind 0x0800;
//! * `push_mpls` onto an IP packet takes the TC from the DSCP's low three bits;
//! * a push onto three labels fails the translation: dropped, and a packet-out is refused.

use ofproto::odp::{apply_all, DpAction};
use ofproto::switch::OfPort;
use ofproto::{xlate, Ofproto};
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow::{self, ETH_TYPE_IPV4, ETH_TYPE_MPLS};
use packet::Pool;

fn switch(rules: &[&str]) -> Ofproto {
    flow::set_vlan_limit(1);
    let mut of = Ofproto::new();
    for p in 1..=3 {
        of.set_port(OfPort {
            ofport: p,
            name: format!("p{p}"),
            live: true,
            no_flood: false,
            admin_down: false,
        });
    }
    for r in rules {
        let fm = parse_flow(r, FlowModCommand::Add).expect("parse");
        of.flow_mod(&fm, 0).expect("add");
    }
    of
}

/// IPv4/UDP (TOS `tos`, TTL 64) behind the given label stack entries, outermost first.
fn frame(labels: &[u32], tos: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    let ty = if labels.is_empty() {
        ETH_TYPE_IPV4
    } else {
        ETH_TYPE_MPLS
    };
    f.extend_from_slice(&ty.to_be_bytes());
    for l in labels {
        f.extend_from_slice(&l.to_be_bytes());
    }
    let mut ip = vec![
        0x45, tos, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    let c = packet::csum::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
    f
}

fn forward(of: &Ofproto, f: &[u8]) -> (Vec<u8>, ofproto::XlateOut) {
    let key = flow::extract(f, 1);
    let x = xlate(of, &key, Some(f), None);
    let mut pool = Pool::new(1);
    let mut p = pool.alloc().expect("buffer");
    p.set_frame(f);
    apply_all(&mut p, &x.actions);
    let out = p.data().to_vec();
    pool.free(p);
    (out, x)
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
