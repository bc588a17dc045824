//! The reason a packet-in carries, as OVS decides it: `action` normally, `group` for an
//! output in a group bucket's own actions (not in what the bucket resubmits to),
//! `action_set` in the action set, `packet_out` anywhere in a packet-out's translation
//! (through `output:TABLE` too), and the explicit miss (6) for an output to the controller
//! from a table-miss rule: priority 0 with a catch-all match.

use ofproto::odp::{DpAction, PacketInReason};
use ofproto::xlate::packet_out;
use ofproto::{xlate, Ofproto};
use openflow::actions::{Action as OfAction, OFPP_CONTROLLER, OFPP_TABLE};

mod common;
use common::{switch, switch_with, Udp4};

/// Every packet-in reason of a translation, nested clones included, in order.
fn reasons(acts: &[DpAction]) -> Vec<(PacketInReason, Option<u8>)> {
    let mut v = Vec::new();
    for a in acts {
        match a {
            DpAction::Controller { reason, extra, .. } => {
                v.push((*reason, extra.as_ref().map(|x| x.reason)))
            }
            DpAction::Clone(inner) => v.extend(reasons(inner)),
            _ => {}
        }
    }
    v
}

fn run(of: &Ofproto) -> Vec<(PacketInReason, Option<u8>)> {
    let f = Udp4::default().bytes();
    let key = packet::flow::extract(&f, 1);
    reasons(&xlate(of, &key, Some(&f), None).actions)
}

#[test]
fn a_table_miss_rule_sends_explicit_misses() {
    use PacketInReason::*;
    // priority 0 and matching everything: the table-miss rule.
    assert_eq!(
        run(&switch(&["priority=0,actions=CONTROLLER:128"])),
        [(ExplicitMiss, None)]
    );
    // The Nicira controller action with the default reason too; another reason stays.
    assert_eq!(
        run(&switch(&["priority=0,actions=controller(userdata=01)"])),
        [(Action, Some(6))]
    );
    assert_eq!(
        run(&switch(&[
            "priority=0,actions=controller(reason=invalid_ttl)"
        ])),
        [(Action, Some(2))]
    );
    // Not a table-miss rule: a match, or a priority above 0.
    assert_eq!(
        run(&switch(&["priority=0,ip,actions=CONTROLLER:128"])),
        [(Action, None)]
    );
    assert_eq!(
        run(&switch(&["priority=1,actions=CONTROLLER:128"])),
        [(Action, None)]
    );
    // A table-miss rule that resubmits: the resubmitted rule's own output is an action; an
    // output after the resubmit is the miss rule's again.
    assert_eq!(
        run(&switch(&[
            "priority=0,actions=resubmit(,1),CONTROLLER:128",
            "table=1,priority=5,ip,actions=CONTROLLER:128",
        ])),
        [(Action, None), (ExplicitMiss, None)]
    );
}

#[test]
fn groups_and_the_action_set_have_their_own_reasons() {
    use PacketInReason::*;
    let of = switch_with(
        3,
        &[
            "group_id=1,type=all,bucket=output:CONTROLLER",
            "group_id=2,type=all,bucket=resubmit(,1)",
        ],
        &[
            "table=0,priority=9,udp,tp_dst=5001,actions=group:1,write_actions(output:CONTROLLER)",
            "table=0,priority=5,ip,actions=group:2",
            "table=1,priority=5,ip,actions=CONTROLLER:64",
        ],
    );
    assert_eq!(run(&of), [(Group, None), (ActionSet, None)]);
    // A resubmit from a bucket: the rule it reaches sends a plain action.
    let f = Udp4 {
        dport: 7,
        ..Udp4::default()
    }
    .bytes();
    let key = packet::flow::extract(&f, 1);
    let x = xlate(&of, &key, Some(&f), None);
    assert_eq!(reasons(&x.actions), [(Action, None)]);
}

#[test]
fn a_packet_out_reports_packet_out_also_through_the_table() {
    use PacketInReason::*;
    let of = switch(&["priority=5,ip,actions=CONTROLLER:64"]);
    let f = Udp4::default().bytes();
    let direct = packet_out(
        &of,
        1,
        &f,
        &[OfAction::Output {
            port: OFPP_CONTROLLER,
            max_len: 64,
        }],
        0,
    )
    .expect("translates");
    assert_eq!(reasons(&direct), [(PacketOut, None)]);
    let table = packet_out(
        &of,
        1,
        &f,
        &[OfAction::Output {
            port: OFPP_TABLE,
            max_len: 0,
        }],
        0,
    )
    .expect("translates");
    assert_eq!(reasons(&table), [(PacketOut, None)]);
}
