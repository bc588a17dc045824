//! Translation of `ct`, `ct_clear` and recirculated packets: the datapath actions, the
//! frozen pipeline state a recirculation id stands for, and the megaflow wildcards.

use ofproto::odp::DpAction;
use ofproto::xlate;
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow::{FlowKey, ETH_TYPE_IPV4};

mod common;
use common::switch;

fn tcp_key(in_port: u32) -> FlowKey {
    FlowKey {
        in_port,
        dl_type: ETH_TYPE_IPV4,
        nw_proto: 6,
        nw_src: [10, 0, 0, 1],
        nw_dst: [10, 0, 0, 2],
        nw_ttl: 64,
        tp_src: 1000,
        tp_dst: 80,
        ..FlowKey::ZERO
    }
}

const FIREWALL: &[&str] = &[
    "table=0,priority=90,ip,ct_state=-trk,actions=load:0x7->NXM_NX_REG3[],ct(table=1,zone=NXM_NX_REG3[0..15])",
    "table=1,priority=100,ip,ct_state=+trk+new,reg3=7,actions=ct(commit,zone=7,exec(set_field:0x1->ct_mark)),output:2",
    "table=1,priority=100,ip,ct_state=+trk+est,actions=output:3",
    "table=1,priority=10,actions=drop",
];

#[test]
fn ct_with_table_recirculates_with_the_frozen_registers() {
    let of = switch(FIREWALL);
    let k = tcp_key(1);
    let x = xlate(&of, &k, None, None);
    let [DpAction::Ct(ct), DpAction::Recirc(id)] = x.actions.as_slice() else {
        panic!("{:?}", x.actions)
    };
    assert_eq!(ct.zone, 7);
    assert!(!ct.commit && ct.nat.is_none());
    assert_ne!(*id, 0);
    // Every megaflow pins the pass, and this one the untracked state it matched.
    assert_eq!(x.wc.recirc_id, u32::MAX);
    assert_eq!(x.wc.ct_state & 0x20, 0x20);
    // The ct fields are gone after the ct in this pass.
    assert_eq!(x.final_flow.ct_state, 0);

    // The recirculated packet: a new connection in zone 7 resumes in table 1 with reg3=7.
    let mut r = k;
    r.recirc_id = *id;
    r.ct_state = 0x21;
    r.ct_zone = 7;
    let y = xlate(&of, &r, None, None);
    let [DpAction::Ct(c2), DpAction::Output(2)] = y.actions.as_slice() else {
        panic!("{:?}", y.actions)
    };
    assert!(c2.commit);
    assert_eq!(c2.zone, 7);
    assert_eq!(c2.set_mark, Some((1, u32::MAX)));
    assert_eq!(y.wc.recirc_id, u32::MAX);
    // Established: the other flow.
    r.ct_state = 0x22;
    let z = xlate(&of, &r, None, None);
    assert_eq!(z.actions, vec![DpAction::Output(3)]);
    // Same frozen state, same id.
    let again = xlate(&of, &k, None, None);
    assert_eq!(again.actions, x.actions);
    // A first-pass megaflow cannot serve a recirculated packet and the other way round.
    assert_ne!(k.recirc_id & x.wc.recirc_id, r.recirc_id & x.wc.recirc_id);
}

#[test]
fn unknown_recirculation_id_drops() {
    let of = switch(FIREWALL);
    let mut k = tcp_key(1);
    k.recirc_id = 0x999;
    let x = xlate(&of, &k, None, None);
    assert!(x.actions.is_empty(), "{:?}", x.actions);
}

#[test]
fn nat_and_label_writes_fold_into_the_action() {
    let of = switch(&[
        "table=0,ip,actions=ct(commit,nat(src=10.9.0.1-10.9.0.3:2000-2999,random),\
         exec(set_field:0x5/0xf->ct_label,set_field:0x30/0xf0->ct_label,set_field:2->ct_mark))",
    ]);
    let x = xlate(&of, &tcp_key(1), None, None);
    let [DpAction::Ct(ct)] = x.actions.as_slice() else {
        panic!("{:?}", x.actions)
    };
    assert_eq!(ct.set_label, Some((0x35, 0xff)));
    assert_eq!(ct.set_mark, Some((2, u32::MAX)));
    match ct.nat {
        Some(conntrack::Nat::Src(r)) => {
            assert_eq!(r.addr_min.to_string(), "10.9.0.1");
            assert_eq!(r.addr_max.to_string(), "10.9.0.3");
            assert_eq!((r.port_min, r.port_max), (2000, 2999));
            assert!(r.random);
        }
        ref other => panic!("{other:?}"),
    }
    assert_eq!(
        x.actions[0].to_string(),
        "ct(commit,mark=0x2/0xffffffff,label=0x35/0xff,nat(src=10.9.0.1-10.9.0.3:2000-2999,random))"
    );
}

/// OVN commits a load-balanced connection with the backend copied from a register into
/// the label; a move from a packet field pins that field in the megaflow.
#[test]
fn moves_into_mark_and_label_fold_with_the_set_fields() {
    let of = switch(&[
        "table=0,ip,actions=load:0x12345678->NXM_NX_REG3[],ct(commit,zone=NXM_NX_REG13[0..15],\
         nat(src),exec(set_field:0/0x1->ct_mark,move:NXM_NX_XXREG0[0..31]->NXM_NX_CT_LABEL[96..127],\
         move:NXM_OF_IP_DST[24..31]->NXM_NX_CT_MARK[8..15]))",
    ]);
    let x = xlate(&of, &tcp_key(1), None, None);
    let [DpAction::Ct(ct)] = x.actions.as_slice() else {
        panic!("{:?}", x.actions)
    };
    assert_eq!(
        ct.set_label,
        Some((0x1234_5678u128 << 96, 0xffff_ffffu128 << 96))
    );
    // nw_dst 10.0.0.2: its top byte (10) into mark bits 8..15; bit 0 cleared.
    assert_eq!(ct.set_mark, Some((10 << 8, 0xff01)));
    assert_eq!(x.wc.nw_dst, [0xff, 0, 0, 0], "the moved bits are pinned");
    // Only when committing, as in OVS.
    let fm = parse_flow(
        "ip,actions=ct(exec(move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]))",
        FlowModCommand::Add,
    );
    let refused = fm.map(|fm| ofproto::Ofproto::new().flow_mod(&fm, 0).is_err());
    assert!(refused.unwrap_or(true));
}

#[test]
fn ct_clear_forgets_the_state() {
    let of = switch(&[
        "table=0,priority=10,ip,ct_state=+trk+est,actions=ct_clear,resubmit(,1)",
        "table=1,priority=10,ip,ct_state=-trk,actions=output:2",
        "table=1,priority=5,actions=drop",
    ]);
    let mut k = tcp_key(1);
    k.recirc_id = 0;
    k.ct_state = 0x22;
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
}

/// `nat(src)` without addresses (OVN's commits when the datapath has `ct_zero_snat`) is the
/// all-zero SNAT, printed as OVS prints it.
#[test]
fn nat_src_without_addresses_is_the_zero_snat() {
    let of = switch(&["table=0,ip,actions=ct(commit,zone=5,nat(src))"]);
    let x = xlate(&of, &tcp_key(1), None, None);
    let [DpAction::Ct(ct)] = x.actions.as_slice() else {
        panic!("{:?}", x.actions)
    };
    match ct.nat {
        Some(conntrack::Nat::Src(r)) => assert!(r.is_keep()),
        ref other => panic!("{other:?}"),
    }
    assert_eq!(x.actions[0].to_string(), "ct(commit,zone=5,nat(src))");
}

/// `alg=ftp|tftp` reaches the datapath action as the tracker's helper, printed as OVS's
/// datapath prints it (`helper=ftp`). As in OVS, the flow must match the helper's protocol.
#[test]
fn alg_becomes_the_helper() {
    let udp_key = FlowKey {
        nw_proto: 17,
        tp_dst: 69,
        ..tcp_key(1)
    };
    for (flow, key, helper, text) in [
        (
            "tcp",
            tcp_key(1),
            conntrack::Helper::Ftp,
            "ct(commit,zone=3,helper=ftp)",
        ),
        (
            "udp",
            udp_key,
            conntrack::Helper::Tftp,
            "ct(commit,zone=3,helper=tftp)",
        ),
    ] {
        let alg = if flow == "tcp" { "ftp" } else { "tftp" };
        let of = switch(&[&format!(
            "table=0,{flow},actions=ct(commit,zone=3,alg={alg})"
        )]);
        let x = xlate(&of, &key, None, None);
        let [DpAction::Ct(ct)] = x.actions.as_slice() else {
            panic!("{:?}", x.actions)
        };
        assert_eq!(ct.alg, helper);
        assert_eq!(ct.request().alg, helper);
        assert_eq!(x.actions[0].to_string(), text);
    }
    let of = switch(&["table=0,ip,actions=ct(commit)"]);
    let x = xlate(&of, &tcp_key(1), None, None);
    let [DpAction::Ct(ct)] = x.actions.as_slice() else {
        panic!("{:?}", x.actions)
    };
    assert_eq!(ct.alg, conntrack::Helper::None);
}
