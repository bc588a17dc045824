//! OpenFlow 1.3 pipeline semantics, written from the spec: flow_mod commands, errors,
//! instructions, the action set, TTL handling, groups, table-miss, timeouts.

use ofproto::odp::{DpAction, PacketInReason};
use ofproto::switch::{OfPort, RemovedReason};
use ofproto::table::TableMiss;
use ofproto::{xlate, Ofproto};
use openflow::messages::err;
use openflow::text::{parse_flow, parse_group, parse_meter};
use openflow::{FlowModCommand, GroupModCommand, MeterModCommand, OfError};
use packet::flow::{FlowKey, ETH_TYPE_IPV4, IPPROTO_TCP, VLAN_PRESENT};

mod common;
use common::outputs;

fn add(of: &mut Ofproto, text: &str) {
    let fm = parse_flow(text, FlowModCommand::Add).expect("parse");
    of.flow_mod(&fm, 0).expect("add");
}

fn try_fm(
    of: &mut Ofproto,
    text: &str,
    cmd: FlowModCommand,
) -> Result<ofproto::FlowModResult, OfError> {
    let fm = parse_flow(text, cmd).expect("parse");
    of.flow_mod(&fm, 0)
}

fn with_ports(n: u32) -> Ofproto {
    common::switch_with(n, &[], &[])
}

fn tcp(in_port: u32, dst: [u8; 4], dport: u16) -> FlowKey {
    FlowKey {
        in_port,
        dl_type: ETH_TYPE_IPV4,
        nw_src: [10, 0, 0, 1],
        nw_dst: dst,
        nw_proto: IPPROTO_TCP,
        nw_ttl: 64,
        tp_src: 1234,
        tp_dst: dport,
        ..FlowKey::ZERO
    }
}

#[test]
fn highest_priority_wins_and_counters_follow() {
    let mut of = with_ports(3);
    add(&mut of, "priority=10,ip,actions=output:2");
    add(&mut of, "priority=20,tcp,tp_dst=80,actions=output:3");
    let x = xlate(&of, &tcp(1, [10, 0, 0, 2], 80), None, None);
    assert_eq!(outputs(&x.actions), vec![3]);
    let x = xlate(&of, &tcp(1, [10, 0, 0, 2], 22), None, None);
    assert_eq!(outputs(&x.actions), vec![2]);
    assert_eq!(x.rules.len(), 1);
    x.rules[0].stats.credit(1, 60, 5);
    assert_eq!(x.rules[0].stats.get(), (1, 60, 5));
}

#[test]
fn identical_add_replaces_and_keeps_counters_unless_reset_counts() {
    let mut of = with_ports(3);
    add(&mut of, "priority=10,ip,actions=output:2");
    let r = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None).rules[0].clone();
    r.stats.credit(5, 300, 1);
    add(&mut of, "priority=10,ip,actions=output:3");
    assert_eq!(of.table(0).map(|t| t.len()), Some(1));
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert_eq!(outputs(&x.actions), vec![3]);
    assert_ne!(x.rules[0].id, r.id);
    // As OVS: the replacing rule carries the counters over...
    assert_eq!(x.rules[0].stats.get(), (5, 300, 1));
    // ...unless the add says reset_counts (as every OpenFlow 1.0 add does).
    add(&mut of, "priority=10,ip,reset_counts,actions=output:2");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert_eq!(outputs(&x.actions), vec![2]);
    assert_eq!(x.rules[0].stats.get().0, 0);
}

#[test]
fn modify_and_modify_strict_select_as_specified() {
    let mut of = with_ports(4);
    add(&mut of, "priority=10,ip,nw_dst=10.0.0.1,actions=output:2");
    add(&mut of, "priority=20,ip,nw_dst=10.0.0.1,actions=output:2");
    add(&mut of, "priority=10,ip,nw_dst=10.0.0.2,actions=output:2");
    let r = xlate(&of, &tcp(1, [10, 0, 0, 1], 1), None, None).rules[0].clone();
    r.stats.credit(3, 100, 1);
    // Strict: only the priority-10 10.0.0.1 rule.
    let res = try_fm(
        &mut of,
        "priority=10,ip,nw_dst=10.0.0.1,actions=output:3",
        FlowModCommand::ModifyStrict,
    )
    .expect("mod");
    assert_eq!(res.modified, 1);
    // Non-strict on ip: every rule that refines "ip" — all three.
    let res = try_fm(&mut of, "ip,actions=output:4", FlowModCommand::Modify).expect("mod");
    assert_eq!(res.modified, 3);
    let x = xlate(&of, &tcp(1, [10, 0, 0, 1], 1), None, None);
    assert_eq!(outputs(&x.actions), vec![4]);
    // Counters survive a modify...
    assert_eq!(x.rules[0].stats.get().0, 3);
    // ...unless reset_counts is given.
    try_fm(
        &mut of,
        "ip,reset_counts,actions=output:4",
        FlowModCommand::Modify,
    )
    .expect("mod");
    assert_eq!(x.rules[0].stats.get().0, 0);
    // A modify that selects nothing adds nothing (OpenFlow 1.1+).
    let res = try_fm(&mut of, "udp,actions=output:1", FlowModCommand::Modify).expect("mod");
    assert_eq!(res, ofproto::FlowModResult::default());
    assert_eq!(of.table(0).map(|t| t.len()), Some(3));
}

#[test]
fn delete_filters_cookie_out_port_and_strictness() {
    let mut of = with_ports(4);
    add(
        &mut of,
        "cookie=0x11,priority=10,ip,nw_dst=10.0.0.1,actions=output:2",
    );
    add(
        &mut of,
        "cookie=0x12,priority=10,ip,nw_dst=10.0.0.2,actions=output:3",
    );
    add(
        &mut of,
        "cookie=0x21,priority=10,ip,nw_dst=10.0.0.3,actions=output:3",
    );
    add(
        &mut of,
        "cookie=0x22,priority=30,ip,nw_dst=10.0.0.3,actions=output:3",
    );
    // Cookie 0x1X under mask 0xf0.
    let res = try_fm(&mut of, "cookie=0x10/0xf0", FlowModCommand::Delete).expect("del");
    assert_eq!(res.deleted, 2);
    // out_port filter: nothing outputs to 2 any more.
    let res = try_fm(&mut of, "out_port=2", FlowModCommand::Delete).expect("del");
    assert_eq!(res.deleted, 0);
    // Strict delete needs the priority.
    let res = try_fm(
        &mut of,
        "priority=30,ip,nw_dst=10.0.0.3",
        FlowModCommand::DeleteStrict,
    )
    .expect("del");
    assert_eq!(res.deleted, 1);
    let res = try_fm(&mut of, "", FlowModCommand::Delete).expect("del all");
    assert_eq!(res.deleted, 1);
}

#[test]
fn errors_follow_the_spec_and_change_nothing() {
    let mut of = with_ports(2);
    add(&mut of, "priority=5,ip,actions=output:1");
    let before = of.version();
    let e = |r: Result<ofproto::FlowModResult, OfError>| r.expect_err("error");
    // goto_table must go forward.
    let r = try_fm(&mut of, "table=3,actions=goto_table:2", FlowModCommand::Add);
    assert_eq!(
        e(r),
        OfError::bad_instruction(err::bad_instruction::BAD_TABLE_ID)
    );
    // Unknown group / meter.
    let r = try_fm(&mut of, "actions=group:9", FlowModCommand::Add);
    assert_eq!(e(r), OfError::bad_action(err::bad_action::BAD_OUT_GROUP));
    let r = try_fm(&mut of, "actions=meter:9,output:1", FlowModCommand::Add);
    assert_eq!(
        e(r),
        OfError::meter_mod_failed(err::meter_mod_failed::UNKNOWN_METER)
    );
    // set_field of a field the match does not establish.
    let r = try_fm(
        &mut of,
        "ip,actions=set_field:80->tcp_dst",
        FlowModCommand::Add,
    );
    assert_eq!(
        e(r),
        OfError::bad_action(err::bad_action::MATCH_INCONSISTENT)
    );
    // Overlap check: same priority, overlapping matches.
    let r = try_fm(
        &mut of,
        "priority=5,tcp,check_overlap,actions=output:2",
        FlowModCommand::Add,
    );
    assert_eq!(
        e(r),
        OfError::flow_mod_failed(err::flow_mod_failed::OVERLAP)
    );
    add(&mut of, "priority=5,tcp,actions=output:2");
    let mut fm = parse_flow("priority=5,udp,actions=output:2", FlowModCommand::Add).expect("parse");
    fm.flags.insert(openflow::FlowModFlags::CHECK_OVERLAP);
    assert_eq!(
        of.flow_mod(&fm, 0).err(),
        Some(OfError::flow_mod_failed(err::flow_mod_failed::OVERLAP))
    );
    // A match whose prerequisites are missing (built directly: the text parser refuses it).
    let mut fm = parse_flow("actions=output:1", FlowModCommand::Add).expect("parse");
    fm.match_.set_exact(openflow::Field::TcpDst, 80);
    assert_eq!(
        of.flow_mod(&fm, 0).err(),
        Some(OfError::bad_match(err::bad_match::BAD_PREREQ))
    );
    // Only the plain tcp add above changed anything.
    assert_eq!(of.table(0).map(|t| t.len()), Some(2));
    assert!(of.version() > before);
}

#[test]
fn instructions_metadata_goto_and_the_action_set_order() {
    let mut of = with_ports(3);
    add(
        &mut of,
        "table=0,priority=1,actions=write_metadata:0x5/0xff,write_actions(output:3),goto_table:1",
    );
    add(&mut of, "table=1,priority=1,metadata=0x5,actions=write_actions(output:2,set_field:7->vlan_vid,push_vlan:0x8100)");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    // The set executes push_vlan, then set_field, then output (spec order), whatever the
    // order written; output:2 replaced output:3.
    assert_eq!(
        x.actions,
        vec![
            DpAction::PushVlan {
                tpid: 0x8100,
                tci: 0
            },
            DpAction::SetVlanTci {
                tci: 7,
                mask: 0x0fff
            },
            DpAction::Output(2),
        ]
    );
    assert_eq!(x.final_flow.vlan_tci[0], VLAN_PRESENT | 7);
    assert_eq!(x.final_flow.metadata, 5);
    // A value with bits outside its mask is accepted, as OVS does; only masked bits land.
    add(
        &mut of,
        "table=0,priority=2,udp,actions=write_metadata:0x1ff/0xf0,goto_table:1",
    );
    add(&mut of, "table=1,priority=2,metadata=0xf0,actions=output:3");
    let mut u = tcp(1, [1, 1, 1, 1], 1);
    u.nw_proto = 17;
    let x = xlate(&of, &u, None, None);
    assert_eq!(x.final_flow.metadata, 0xf0);
    assert_eq!(x.actions, vec![DpAction::Output(3)]);
    // clear_actions empties the set.
    add(
        &mut of,
        "table=1,priority=9,metadata=0x5,tcp,actions=clear_actions",
    );
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert!(x.actions.is_empty(), "{:?}", x.actions);
}

#[test]
fn a_group_in_the_action_set_suppresses_output() {
    let mut of = with_ports(3);
    let g = parse_group(
        "group_id=1,type=indirect,bucket=output:3",
        GroupModCommand::Add,
    )
    .expect("g");
    of.group_mod(&g, 0).expect("group");
    add(&mut of, "actions=write_actions(output:2,group:1)");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert_eq!(x.actions, vec![DpAction::Clone(vec![DpAction::Output(3)])]);
}

#[test]
fn ttl_decrement_and_expiry() {
    let mut of = with_ports(2);
    add(&mut of, "ip,actions=output:1,dec_ttl,output:2");
    let x = xlate(&of, &tcp(3, [1, 1, 1, 1], 1), None, None);
    assert_eq!(
        x.actions,
        vec![
            DpAction::Output(1),
            DpAction::SetIpTtl(63),
            DpAction::Output(2)
        ]
    );
    assert_eq!(x.wc.nw_ttl, 0xff, "the result depends on the TTL");
    let mut k = tcp(3, [1, 1, 1, 1], 1);
    k.nw_ttl = 1;
    // Expired: what was output before stays, nothing after runs.
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(1)]);
    of.invalid_ttl_to_controller = true;
    let x = xlate(&of, &k, None, None);
    assert!(matches!(
        x.actions.last(),
        Some(DpAction::Controller {
            reason: PacketInReason::InvalidTtl,
            ..
        })
    ));
}

#[test]
fn reserved_ports() {
    let mut of = with_ports(3);
    add(&mut of, "priority=3,in_port=1,actions=output:1");
    add(&mut of, "priority=2,in_port=2,actions=in_port");
    add(&mut of, "priority=1,actions=flood");
    // Output to the ingress port by number is skipped; IN_PORT is allowed.
    assert!(outputs(&xlate(&of, &tcp(1, [0; 4], 0), None, None).actions).is_empty());
    assert_eq!(
        outputs(&xlate(&of, &tcp(2, [0; 4], 0), None, None).actions),
        vec![2]
    );
    assert_eq!(
        outputs(&xlate(&of, &tcp(3, [0; 4], 0), None, None).actions),
        vec![1, 2]
    );
    // no_flood ports are left out of FLOOD.
    of.set_port(OfPort {
        ofport: 2,
        name: "p2".into(),
        live: true,
        no_flood: true,
        admin_down: false,
    });
    assert_eq!(
        outputs(&xlate(&of, &tcp(3, [0; 4], 0), None, None).actions),
        vec![1]
    );
}

#[test]
fn administratively_down_ports_get_nothing_and_are_not_live() {
    let mut of = with_ports(3);
    add(&mut of, "priority=2,in_port=1,actions=output:2,output:3");
    add(&mut of, "priority=1,actions=flood");
    let down = OfPort {
        ofport: 2,
        name: "p2".into(),
        live: true,
        no_flood: false,
        admin_down: true,
    };
    of.set_port(down.clone());
    assert_eq!(
        outputs(&xlate(&of, &tcp(1, [0; 4], 0), None, None).actions),
        vec![3]
    );
    assert_eq!(
        outputs(&xlate(&of, &tcp(3, [0; 4], 0), None, None).actions),
        vec![1]
    );
    assert!(!of.port_live(2));
    // A carrier change keeps the administrative state.
    of.set_port(OfPort {
        live: false,
        ..down.clone()
    });
    of.set_port(OfPort { live: true, ..down });
    assert!(!of.port_live(2));
}

#[test]
fn group_types() {
    let mut of = with_ports(5);
    for g in [
        "group_id=1,type=all,bucket=output:2,bucket=output:3",
        "group_id=2,type=select,bucket=weight:1,actions=output:2,bucket=weight:1,actions=output:3",
        "group_id=3,type=ff,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3",
    ] {
        of.group_mod(&parse_group(g, GroupModCommand::Add).expect("parse"), 0).expect("group");
    }
    add(&mut of, "priority=1,in_port=1,actions=group:1");
    add(&mut of, "priority=1,in_port=4,actions=group:2");
    add(&mut of, "priority=1,in_port=5,actions=group:3");
    let x = xlate(&of, &tcp(1, [0; 4], 0), None, None);
    assert_eq!(
        x.actions,
        vec![
            DpAction::Clone(vec![DpAction::Output(2)]),
            DpAction::Clone(vec![DpAction::Output(3)])
        ]
    );
    // Select: a flow always takes the same bucket; many flows use both.
    let mut seen = std::collections::HashSet::new();
    for i in 0..64u16 {
        let k = tcp(4, [10, 0, 0, 1], 1000 + i);
        let a = xlate(&of, &k, None, None).actions;
        assert_eq!(a, xlate(&of, &k, None, None).actions);
        seen.insert(a);
    }
    assert_eq!(seen.len(), 2);
    let x = xlate(&of, &tcp(4, [10, 0, 0, 1], 1), None, None);
    assert_ne!(x.wc.tp_dst, 0, "select hashing depends on the ports");
    // Fast failover: first live bucket; port 2 down moves traffic to 3.
    assert_eq!(
        xlate(&of, &tcp(5, [0; 4], 0), None, None).actions,
        vec![DpAction::Clone(vec![DpAction::Output(2)])]
    );
    of.set_port(OfPort {
        ofport: 2,
        name: "p2".into(),
        live: false,
        no_flood: false,
        admin_down: false,
    });
    assert_eq!(
        xlate(&of, &tcp(5, [0; 4], 0), None, None).actions,
        vec![DpAction::Clone(vec![DpAction::Output(3)])]
    );
    // Deleting a group deletes the flows that use it.
    let del = parse_group("group_id=1", GroupModCommand::Delete).expect("parse");
    of.group_mod(&del, 0).expect("del");
    assert!(xlate(&of, &tcp(1, [0; 4], 0), None, None)
        .actions
        .is_empty());
    // Groups may not loop.
    let a = parse_group(
        "group_id=10,type=indirect,bucket=output:1",
        GroupModCommand::Add,
    )
    .expect("p");
    of.group_mod(&a, 0).expect("add");
    let b = parse_group(
        "group_id=11,type=indirect,bucket=group:10",
        GroupModCommand::Add,
    )
    .expect("p");
    of.group_mod(&b, 0).expect("add");
    let loop_ = parse_group(
        "group_id=10,type=indirect,bucket=group:11",
        GroupModCommand::Modify,
    )
    .expect("p");
    assert_eq!(
        of.group_mod(&loop_, 0),
        Err(OfError::group_mod_failed(err::group_mod_failed::LOOP))
    );
}

#[test]
fn table_miss_and_vlan_through_tables() {
    let mut of = with_ports(2);
    // No rule: drop. mod-table controller: packet-in with reason no_match.
    assert!(xlate(&of, &tcp(1, [0; 4], 0), None, None)
        .actions
        .is_empty());
    if let Some(t) = of.table_mut(0) {
        t.miss = TableMiss::Controller;
    }
    assert!(matches!(
        xlate(&of, &tcp(1, [0; 4], 0), None, None)
            .actions
            .as_slice(),
        [DpAction::Controller {
            reason: PacketInReason::NoMatch,
            ..
        }]
    ));
    // A pushed VLAN is visible to later tables.
    add(
        &mut of,
        "table=0,actions=push_vlan:0x8100,set_field:4196->vlan_vid,goto_table:1",
    );
    add(&mut of, "table=1,dl_vlan=100,actions=pop_vlan,output:2");
    let x = xlate(&of, &tcp(1, [0; 4], 0), None, None);
    assert_eq!(outputs(&x.actions), vec![2]);
    assert_eq!(x.final_flow.vlan_tci, [0, 0]);
}

#[test]
fn timeouts_expire_and_log_flow_removed() {
    let mut of = with_ports(2);
    let mut fm = parse_flow(
        "priority=1,ip,idle_timeout=10,actions=output:1",
        FlowModCommand::Add,
    )
    .expect("p");
    fm.flags.insert(openflow::FlowModFlags::SEND_FLOW_REM);
    of.flow_mod(&fm, 0).expect("add");
    let mut fm = parse_flow(
        "priority=2,udp,hard_timeout=5,actions=output:2",
        FlowModCommand::Add,
    )
    .expect("p");
    fm.flags.insert(openflow::FlowModFlags::SEND_FLOW_REM);
    of.flow_mod(&fm, 0).expect("add");
    // The idle flow is used at 8 s, so it lives until 18 s; the hard one dies at 5 s.
    let k = tcp(1, [0; 4], 0);
    xlate(&of, &k, None, None).rules[0]
        .stats
        .credit(1, 60, 8_000);
    assert_eq!(of.expire(4_999), 0);
    assert_eq!(of.expire(5_000), 1);
    assert_eq!(of.expire(17_999), 0);
    assert_eq!(of.expire(18_000), 1);
    let log = of.take_removed();
    assert_eq!(
        log.iter().map(|r| r.reason).collect::<Vec<_>>(),
        vec![RemovedReason::HardTimeout, RemovedReason::IdleTimeout]
    );
}

#[test]
fn no_packet_and_byte_counts_flags_are_honoured() {
    let mut of = with_ports(2);
    let mut fm = parse_flow("priority=1,ip,actions=output:1", FlowModCommand::Add).expect("p");
    fm.flags.insert(openflow::FlowModFlags::NO_PKT_COUNTS);
    of.flow_mod(&fm, 0).expect("add");
    let r = xlate(&of, &tcp(2, [0; 4], 0), None, None).rules[0].clone();
    r.credit(3, 180, 7);
    assert_eq!(r.stats.get(), (0, 180, 7));
}

#[test]
fn meters_and_their_flows() {
    let mut of = with_ports(2);
    let m = parse_meter(
        "meter=1,pktps,burst,bands=type=drop,rate=10,burst_size=2",
        MeterModCommand::Add,
    )
    .expect("m");
    of.meter_mod(&m, 0).expect("meter");
    assert_eq!(
        of.meter_mod(&m, 0),
        Err(OfError::meter_mod_failed(
            err::meter_mod_failed::METER_EXISTS
        ))
    );
    add(&mut of, "ip,actions=meter:1,output:2");
    let x = xlate(&of, &tcp(1, [0; 4], 0), None, None);
    assert_eq!(x.actions, vec![DpAction::Meter(1), DpAction::Output(2)]);
    assert_eq!(of.meter_flow_count(1), 1);
    let del = parse_meter("meter=1", MeterModCommand::Delete).expect("m");
    of.meter_mod(&del, 0).expect("del");
    assert_eq!(
        of.table(0).map(|t| t.len()),
        Some(0),
        "flows using a deleted meter go too"
    );
}

/// A TTL exception ends the action list of the table it happens in, not the pipeline: after
/// `resubmit` into a table whose `dec_ttl` expires, the resubmitting table goes on (OVS 3.1
/// sends this packet to port 2; found by the differential harness).
#[test]
fn ttl_expiry_in_a_resubmitted_table_ends_only_that_table() {
    let mut of = with_ports(3);
    add(
        &mut of,
        "table=0,priority=1,ip,actions=resubmit(,2),output:2",
    );
    add(&mut of, "table=2,priority=1,ip,actions=dec_ttl,output:1");
    let mut k = tcp(3, [1, 1, 1, 1], 1);
    k.nw_ttl = 1;
    let x = xlate(&of, &k, None, None);
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
    // In the first table it ends that table's actions: nothing is sent.
    add(&mut of, "table=0,priority=2,ip,actions=dec_ttl,output:2");
    let x = xlate(&of, &k, None, None);
    assert!(x.actions.is_empty(), "{:?}", x.actions);
    // With TTL to spare, both outputs happen.
    k.nw_ttl = 64;
    add(
        &mut of,
        "table=0,priority=3,ip,actions=resubmit(,2),output:2",
    );
    let x = xlate(&of, &k, None, None);
    assert_eq!(
        x.actions,
        vec![
            DpAction::SetIpTtl(63),
            DpAction::Output(1),
            DpAction::Output(2)
        ]
    );
}

/// OVN chains `resubmit(,N+1)` through more tables than the depth limit (a switch's
/// ingress and egress, a router, the next switch). As in OVS, a resubmit to a later table
/// does not nest, so a 200-table forward chain gets its packet out.
#[test]
fn a_forward_resubmit_chain_longer_than_the_depth_limit_runs() {
    let mut of = with_ports(3);
    for t in 0..200 {
        add(&mut of, &format!("table={t},actions=resubmit(,{})", t + 1));
    }
    add(&mut of, "table=200,actions=output:2");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert!(!x.failed);
    assert_eq!(x.actions, vec![DpAction::Output(2)]);
}

/// A resubmit to the same or an earlier table nests: a loop fails the translation after
/// 64 levels and the packet is dropped, outputs before the failure included (OVS: "over max
/// translation depth 64").
#[test]
fn a_resubmit_loop_fails_the_translation() {
    let mut of = with_ports(3);
    add(&mut of, "table=0,actions=output:2,resubmit(,1)");
    add(&mut of, "table=1,actions=resubmit(,0)");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert!(x.failed);
    assert!(x.actions.is_empty(), "{:?}", x.actions);
}

/// Forward resubmits still count towards the total: 70 x 70 of them (over 4096) fail the
/// translation, as OVS's "over 4096 resubmit actions".
#[test]
fn too_many_resubmits_in_all_fail_the_translation() {
    let mut of = with_ports(3);
    let fan = |t: u8| vec![format!("resubmit(,{t})"); 70].join(",");
    add(&mut of, &format!("table=0,actions={}", fan(1)));
    add(&mut of, &format!("table=1,actions={}", fan(2)));
    add(&mut of, "table=2,actions=output:2");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert!(x.failed);
    assert!(x.actions.is_empty());
    // 50 x 50 stays under the limit and outputs 2,500 times.
    let mut of = with_ports(3);
    let fan = |t: u8| vec![format!("resubmit(,{t})"); 50].join(",");
    add(&mut of, &format!("table=0,actions={}", fan(1)));
    add(&mut of, &format!("table=1,actions={}", fan(2)));
    add(&mut of, "table=2,actions=output:2");
    let x = xlate(&of, &tcp(1, [1, 1, 1, 1], 1), None, None);
    assert!(!x.failed);
    assert_eq!(x.actions.len(), 2500);
}
