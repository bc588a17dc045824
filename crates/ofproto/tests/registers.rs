//! The pipeline's registers: `reg0`..`reg15` and their `xreg`/`xxreg` views, written by
//! `load`/`set_field`/`move`/`pop` and read by matches, `move` and `push`; the per-packet
//! register stack; and the megaflow wildcards those reads leave.

use ofproto::{xlate, XlateOut};
use openflow::text::parse_flow;
use openflow::FlowModCommand;
use packet::flow;

mod common;
use common::{forward as run, switch, Udp4};

/// An Ethernet/IPv4/UDP frame 10.0.0.1 -> 10.0.0.2, MACs 02:..:01 -> 02:..:02.
fn udp4() -> Vec<u8> {
    Udp4::default().bytes()
}

fn outputs(x: &XlateOut) -> Vec<u32> {
    common::outputs(&x.actions)
}

#[test]
fn high_registers_load_and_match() {
    let of = switch(&[
        "table=0,in_port=1,actions=load:0x1234->reg9,load:0xab->reg15[8..15],resubmit(,1)",
        "table=1,priority=10,reg9=0x1234,reg15=0xab00/0xff00,actions=output:2",
        "table=1,priority=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
    assert_eq!(x.final_flow.regs[9], 0x1234);
    assert_eq!(x.final_flow.regs[15], 0xab00);
}

#[test]
fn xreg_and_xxreg_are_views_of_the_registers() {
    // xreg1 = reg2 << 32 | reg3; xxreg1 = reg4..reg7, most significant first.
    let of = switch(&[
        "table=0,in_port=1,actions=set_field:0x1122334455667788->xreg1,\
         set_field:0x000000010000000200000003000000ff->xxreg1,resubmit(,1)",
        "table=1,priority=10,reg2=0x11223344,reg3=0x55667788,reg4=1,reg5=2,reg6=3,reg7=0xff,\
         actions=output:2",
        "table=1,priority=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
    // And a match written on the views selects the same registers.
    let of = switch(&[
        "table=0,in_port=1,actions=load:0x55667788->reg3,load:0x11223344->reg2,\
         load:0xff->reg7,resubmit(,1)",
        "table=1,priority=10,xreg1=0x1122334455667788,xxreg1=0xff/0xff,actions=output:2",
        "table=1,priority=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
}

#[test]
fn partial_loads_keep_the_other_bits() {
    let of = switch(&[
        "table=0,in_port=1,actions=load:0xffffffff->reg0,load:0->reg0[4..11],\
         load:0x3->xxreg0[62..63],resubmit(,1)",
        "table=1,actions=output:2",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(x.final_flow.regs[0], 0xffff_f00f);
    // Bits 62..63 of xxreg0 are the top two bits of reg2.
    assert_eq!(x.final_flow.regs[2], 0xc000_0000);
}

#[test]
fn move_copies_bits_into_packet_fields_and_unwildcards_the_source() {
    // The low byte of the IPv4 source (1) becomes the low byte of the Ethernet destination.
    let of = switch(&["table=0,in_port=1,ip,actions=move:NXM_OF_IP_SRC[]->reg3,\
         move:reg3[0..7]->NXM_OF_ETH_DST[0..7],output:2"]);
    let (out, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
    assert_eq!(&out[..6], &[2, 0, 0, 0, 0, 1]);
    // The result depends on the source address, so the megaflow must match all of it.
    assert_eq!(x.wc.nw_src, [0xff; 4]);
    // The IP checksum still verifies after the MAC rewrite (nothing else changed).
    assert_eq!(&out[6..], &udp4()[6..]);
}

#[test]
fn move_between_registers_and_views() {
    let of = switch(&[
        "table=0,in_port=1,actions=load:0xdeadbeef->reg0,move:reg0->xreg4[32..63],\
         move:xreg4[32..47]->xxreg3[0..15],resubmit(,1)",
        "table=1,priority=10,reg8=0xdeadbeef,reg15=0xbeef,actions=output:2",
        "table=1,priority=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
}

#[test]
fn push_and_pop_swap_registers_through_the_stack() {
    let of = switch(&[
        "table=0,ip,in_port=1,actions=load:1->reg0,load:2->reg1,push:reg0,push:reg1,\
         pop:reg0,pop:reg1,push:NXM_OF_IP_DST[0..7],pop:reg12[24..31],resubmit(,1)",
        "table=1,priority=10,reg0=2,reg1=1,reg12=0x02000000,actions=output:2",
        "table=1,priority=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
    // The pushed IP destination bits are part of the decision.
    assert_eq!(x.wc.nw_dst[3], 0xff);
}

#[test]
fn popping_an_empty_stack_drops_the_packet() {
    let of = switch(&["table=0,in_port=1,actions=output:3,push:reg0,pop:reg1,pop:reg2,output:2"]);
    let key = flow::extract(&udp4(), 1);
    let mut trace = Vec::new();
    let x = xlate(&of, &key, None, Some(&mut trace));
    assert!(x.actions.is_empty(), "{:?}", x.actions);
    assert!(
        trace.iter().any(|l| l.contains("stack underflow")),
        "{trace:?}"
    );
}

#[test]
fn a_bucket_works_on_a_copy_of_the_stack() {
    let mut of = switch(&[]);
    let gm = openflow::text::parse_group(
        "group_id=1,type=all,bucket=actions=pop:reg0,bucket=actions=pop:reg1",
        openflow::GroupModCommand::Add,
    )
    .expect("group");
    of.group_mod(&gm, 0).expect("group add");
    let fm = parse_flow(
        "table=0,in_port=1,actions=load:7->reg5,push:reg5,group:1,pop:reg2,resubmit(,1)",
        FlowModCommand::Add,
    )
    .expect("parse");
    of.flow_mod(&fm, 0).expect("add");
    for r in [
        "table=1,priority=10,reg2=7,actions=output:2",
        "table=1,priority=1,actions=output:3",
    ] {
        of.flow_mod(&parse_flow(r, FlowModCommand::Add).expect("parse"), 0)
            .expect("add");
    }
    // Each bucket pops its own copy; the entry is still there for the flow's own pop.
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2]);
}

#[test]
fn move_needs_its_fields_prerequisites() {
    let mut of = switch(&[]);
    let fm = parse_flow(
        "in_port=1,actions=move:NXM_OF_TCP_SRC[]->reg0[0..15]",
        FlowModCommand::Add,
    )
    .expect("parse");
    let e = of.flow_mod(&fm, 0).expect_err("tcp_src without tcp");
    assert_eq!(
        e,
        openflow::OfError::bad_action(openflow::messages::err::bad_action::MATCH_INCONSISTENT)
    );
    let fm = parse_flow(
        "tcp,in_port=1,actions=move:NXM_OF_TCP_SRC[]->reg0[16..31],pop:NXM_OF_TCP_DST[]",
        FlowModCommand::Add,
    )
    .expect("parse");
    of.flow_mod(&fm, 0)
        .expect("tcp establishes the prerequisite");
}

#[test]
fn moves_and_stack_actions_are_refused_in_write_actions() {
    let fm = parse_flow(
        "in_port=1,actions=write_actions(push:reg0)",
        FlowModCommand::Add,
    )
    .expect("parse");
    let mut of = switch(&[]);
    assert!(of.flow_mod(&fm, 0).is_err());
}

#[test]
fn in_port_is_saved_and_restored_through_its_16_bit_view() {
    // OVN's pattern: save in_port, clear it so a later output may use the ingress port,
    // restore it.
    let of = switch(&[
        "table=0,in_port=1,actions=push:NXM_OF_IN_PORT[],load:0x3->NXM_OF_IN_PORT[],\
         resubmit(,1),pop:NXM_OF_IN_PORT[],resubmit(,2)",
        "table=1,in_port=3,actions=output:2",
        "table=2,in_port=1,actions=output:3",
    ]);
    let (_, x) = run(&of, &udp4());
    assert_eq!(outputs(&x), vec![2, 3]);
    assert_eq!(x.final_flow.in_port, 1);
    // The 16-bit view of LOCAL is 0xfffe; writing it back gives LOCAL again.
    let of = switch(&[
        "table=0,in_port=LOCAL,actions=push:NXM_OF_IN_PORT[],load:0->NXM_OF_IN_PORT[],\
         pop:NXM_OF_IN_PORT[],resubmit(,1)",
        "table=1,in_port=LOCAL,actions=output:2",
    ]);
    let key = flow::extract(&udp4(), openflow::actions::OFPP_LOCAL);
    let x = xlate(&of, &key, None, None);
    assert_eq!(outputs(&x), vec![2]);
}
