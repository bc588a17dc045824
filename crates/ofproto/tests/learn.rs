//! `learn`: the flow a packet teaches (match, actions, megaflow bits), adding and
//! refreshing it, `limit` with `result_dst`, `delete_learned`, and the checks OVS makes
//! when the learning flow is installed.

mod common;

use common::{switch, Udp4};
use ofproto::learn::LearnedFlow;
use ofproto::odp::DpAction;
use ofproto::{xlate, Ofproto};
use openflow::messages::err::{bad_action, OFPET_BAD_ACTION};
use openflow::text::{format_actions, format_match, parse_flow};
use openflow::FlowModCommand;
use packet::flow;
use std::sync::Arc;

/// The flows of `table`, as `match actions` text, sorted.
fn table(of: &Ofproto, id: u8) -> Vec<String> {
    let mut v: Vec<String> = of
        .table(id)
        .expect("table")
        .iter()
        .map(|r| {
            let acts = r.actions().cloned().collect::<Vec<_>>();
            format!(
                "cookie={:#x},priority={},{} actions={}",
                r.cookie,
                r.priority,
                format_match(&r.match_, None),
                format_actions(&acts)
            )
        })
        .collect();
    v.sort();
    v
}

/// A frame from MAC 02:00:00:00:00:`src` arriving on `in_port`.
fn frame(src: u8) -> Vec<u8> {
    let mut f = Udp4::default().bytes();
    f[11] = src;
    f
}

fn learned(of: &Ofproto, in_port: u32, src: u8) -> (Vec<Arc<LearnedFlow>>, ofproto::XlateOut) {
    let f = frame(src);
    let key = flow::extract(&f, in_port);
    let x = xlate(of, &key, Some(&f), None);
    let l = x
        .actions
        .iter()
        .filter_map(|a| match a {
            DpAction::Learn(l) => Some(Arc::clone(l)),
            _ => None,
        })
        .collect();
    (l, x)
}

const MAC_LEARNING: &str = "priority=10,actions=learn(table=1,idle_timeout=30,priority=5,cookie=0x7,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),resubmit(,1)";

#[test]
fn a_packet_teaches_its_source_mac_and_port() {
    let mut of = switch(&[MAC_LEARNING]);
    let (l, x) = learned(&of, 3, 0x11);
    assert_eq!(l.len(), 1, "{:?}", x.actions);
    // The megaflow pins what the flow was built from: the source MAC and the port.
    assert_eq!(x.wc.dl_src, [0xff; 6]);
    assert_ne!(x.wc.in_port, 0);
    of.apply_learned(&l[0], 1000).expect("learn");
    assert_eq!(
        table(&of, 1),
        ["cookie=0x7,priority=5,dl_dst=02:00:00:00:00:11 actions=output:3"]
    );
    let r = of
        .table(1)
        .and_then(|t| t.iter().next().cloned())
        .expect("rule");
    assert_eq!(r.idle_timeout, 30);
    // The same flow again only refreshes it: still one rule, same id, used now.
    let version = of.version();
    of.apply_learned(&l[0], 5000).expect("refresh");
    let r2 = of
        .table(1)
        .and_then(|t| t.iter().next().cloned())
        .expect("rule");
    assert_eq!(r2.id, r.id);
    assert_eq!(r2.stats.get().2, 5000);
    assert_eq!(of.version(), version, "a refresh changes no table");
    // Another host on another port: a second flow.
    let (l2, _) = learned(&of, 2, 0x22);
    of.apply_learned(&l2[0], 6000).expect("learn");
    assert_eq!(table(&of, 1).len(), 2);
    // The learned flow now forwards traffic to that MAC.
    let mut f = frame(0x33);
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x11]);
    let key = flow::extract(&f, 2);
    let x = xlate(&of, &key, Some(&f), None);
    assert!(x.actions.contains(&DpAction::Output(3)), "{:?}", x.actions);
}

#[test]
fn limit_and_result_dst() {
    let mut of = switch(&[
        "priority=10,actions=learn(table=1,limit=1,result_dst=NXM_NX_REG0[0],cookie=0x9,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),resubmit(,2)",
        "table=2,reg0=1,actions=output:1",
        "table=2,reg0=0,actions=output:2",
    ]);
    let (l, x) = learned(&of, 3, 0x11);
    assert_eq!(l.len(), 1);
    assert_eq!(common::outputs(&x.actions), [1], "learned: reg0[0] is 1");
    of.apply_learned(&l[0], 1).expect("learn");
    // The limit is reached for another source...
    let (l2, x2) = learned(&of, 3, 0x22);
    assert!(l2.is_empty(), "{:?}", x2.actions);
    assert_eq!(
        common::outputs(&x2.actions),
        [2],
        "not learned: reg0[0] is 0"
    );
    // ...and a flow learned before the limit was reached is refused when applied after.
    let mut fresh = switch(&[
        "priority=10,actions=learn(table=1,limit=1,result_dst=NXM_NX_REG0[0],cookie=0x9,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),resubmit(,2)",
    ]);
    let (a, _) = learned(&fresh, 3, 0x41);
    let (b, _) = learned(&fresh, 3, 0x42);
    assert_eq!(fresh.apply_learned(&a[0], 1), Ok(true));
    assert_eq!(fresh.apply_learned(&b[0], 1), Ok(false));
    assert_eq!(table(&fresh, 1).len(), 1);
    // The flow already there still counts as learned.
    let (l3, x3) = learned(&of, 3, 0x11);
    assert_eq!(l3.len(), 1);
    assert_eq!(common::outputs(&x3.actions), [1]);
    assert_eq!(table(&of, 1).len(), 1);
}

#[test]
fn delete_learned_removes_the_flows_with_the_last_learner() {
    let learner = |p: u32| {
        format!("priority=10,in_port={p},actions=learn(table=1,delete_learned,cookie=0x5,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])")
    };
    let mut of = switch(&[
        &learner(1),
        &learner(2),
        "table=1,priority=1,cookie=0x6,actions=drop",
    ]);
    for (port, src) in [(1, 0x11), (2, 0x22)] {
        let (l, _) = learned(&of, port, src);
        of.apply_learned(&l[0], 1).expect("learn");
    }
    assert_eq!(table(&of, 1).len(), 3);
    let del = |of: &mut Ofproto, p: u32| {
        let fm = parse_flow(&format!("in_port={p}"), FlowModCommand::DeleteStrict).expect("parse");
        let mut fm = fm;
        fm.priority = 10;
        of.flow_mod(&fm, 2).expect("delete");
    };
    // One learner left: the learned flows stay.
    del(&mut of, 1);
    assert_eq!(table(&of, 1).len(), 3);
    // The last one gone: the flows with its cookie go too, others stay.
    del(&mut of, 2);
    assert_eq!(table(&of, 1), ["cookie=0x6,priority=1, actions=drop"]);
}

#[test]
fn delete_learned_survives_a_failed_bundle_and_del_flows() {
    let mut of = switch(&[
        "priority=10,actions=learn(table=1,delete_learned,cookie=0x5,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])",
    ]);
    let (l, _) = learned(&of, 1, 0x11);
    of.apply_learned(&l[0], 1).expect("learn");
    // A bundle that deletes the learner and then fails: nothing happened.
    let r: Result<(), openflow::OfError> = of.atomically(|o| {
        let fm = parse_flow("", FlowModCommand::Delete).expect("parse");
        let mut fm = fm;
        fm.table_id = 0;
        o.flow_mod(&fm, 2)?;
        Err(openflow::OfError::bad_request(0))
    });
    assert!(r.is_err());
    assert_eq!(table(&of, 1).len(), 1);
    assert_eq!(table(&of, 0).len(), 1);
    // del-flows on table 0 alone takes the learned flow with it.
    let mut fm = parse_flow("", FlowModCommand::Delete).expect("parse");
    fm.table_id = 0;
    of.flow_mod(&fm, 3).expect("delete");
    assert!(table(&of, 1).is_empty());
}

#[test]
fn learn_fields_need_their_prerequisites() {
    let mut of = switch(&[]);
    let try_add = |of: &mut Ofproto, text: &str| {
        let fm = parse_flow(text, FlowModCommand::Add).expect("parse");
        of.flow_mod(&fm, 0)
    };
    // A source field whose prerequisite the learning flow's match lacks.
    let e = try_add(&mut of, "actions=learn(table=1,NXM_OF_IP_SRC[])").expect_err("no ip");
    assert_eq!(
        (e.type_, e.code),
        (OFPET_BAD_ACTION, bad_action::MATCH_INCONSISTENT)
    );
    // A destination whose prerequisite the learned match lacks.
    let e = try_add(&mut of, "ip,actions=learn(table=1,NXM_OF_IP_SRC[])").expect_err("no eth_type");
    assert_eq!(
        (e.type_, e.code),
        (OFPET_BAD_ACTION, bad_action::MATCH_INCONSISTENT)
    );
    // With eth_type set first, it installs.
    try_add(
        &mut of,
        "ip,actions=learn(table=1,eth_type=0x800,NXM_OF_IP_SRC[])",
    )
    .expect("valid");
}
