//! Rollback of groups and meters through the undo journal: a failed transaction leaves
//! groups, meters, their counters and the flows that refer to them exactly as they were,
//! and the journal holds only the ids the transaction touched.

use super::*;
use crate::switch::{Limits, RemovedReason};
use openflow::actions::OFPG_ALL;
use openflow::messages::err::group_mod_failed as g;
use openflow::messages::{OFPG_BUCKET_FIRST, OFPG_BUCKET_LAST, OFPM_ALL};
use openflow::oxm::Field;
use openflow::{
    Action, Bucket, BucketCommand, FlowMod, FlowModCommand, GroupBucketMod, GroupMod,
    GroupModCommand, GroupType, Instruction, Match, MeterBand, MeterFlags, MeterMod,
    MeterModCommand, OfError,
};

fn group(cmd: GroupModCommand, id: u32, outs: &[u32]) -> GroupMod {
    GroupMod {
        command: cmd,
        group_type: GroupType::Select,
        group_id: id,
        buckets: outs
            .iter()
            .map(|&p| Bucket::new(vec![Action::output(p)]))
            .collect(),
    }
}

fn meter(cmd: MeterModCommand, id: u32, rate: u32) -> MeterMod {
    MeterMod {
        command: cmd,
        flags: MeterFlags::KBPS | MeterFlags::STATS,
        meter_id: id,
        bands: vec![MeterBand::Drop {
            rate,
            burst_size: 0,
        }],
    }
}

/// `in_port=PORT` sending to group `g` and, if given, through meter `m`.
fn flow_to(port: u32, grp: Option<u32>, m: Option<u32>) -> FlowMod {
    let mut fm = FlowMod::new(FlowModCommand::Add);
    fm.priority = 100;
    fm.match_ = Match::new().with(Field::InPort, u128::from(port));
    let act = grp.map_or(Action::output(1), Action::Group);
    fm.instructions = m.map(Instruction::Meter).into_iter().collect();
    fm.instructions.push(Instruction::ApplyActions(vec![act]));
    fm.flags = openflow::FlowModFlags::SEND_FLOW_REM;
    fm
}

/// Everything observable of groups, meters and rules, counters and identities included.
#[derive(Debug, PartialEq)]
struct Seen {
    groups: Vec<String>,
    meters: Vec<String>,
    published: Vec<(u32, usize)>,
    rules: Vec<String>,
}

fn seen(o: &Ofproto) -> Seen {
    let groups = o
        .groups()
        .iter()
        .map(|(id, gr)| {
            format!(
                "{id} {:?} {:?} {} {:p} {:?} {:?}",
                gr.kind,
                gr.buckets,
                gr.created_ms,
                Arc::as_ptr(&gr.stats),
                gr.stats.get(),
                gr.stats.buckets()
            )
        })
        .collect();
    let meters = o
        .meters
        .iter()
        .map(|(id, m)| {
            let spec = o.meter_specs().get(id);
            format!("{id} {:p} {:?} {spec:?}", Arc::as_ptr(m), m.snapshot())
        })
        .collect();
    let table = o.meter_table();
    let published = (0..=40)
        .filter_map(|id| table.get(id).map(|m| (id, Arc::as_ptr(&m) as usize)))
        .collect();
    let mut rules: Vec<String> = o
        .tables()
        .iter()
        .flat_map(|t| t.iter())
        .map(|r| {
            format!(
                "{} {} {:p} {:?} {:?}",
                r.table_id,
                r.id,
                Arc::as_ptr(r),
                r.instructions,
                r.stats.get()
            )
        })
        .collect();
    rules.sort();
    Seen {
        groups,
        meters,
        published,
        rules,
    }
}

/// Groups 1..=20 (group 20 chains to 1), meters 1..=10, a flow per group 1..=10 (the first
/// five metered), some traffic counted on each.
fn switch() -> Ofproto {
    let mut o = Ofproto::with_default_flow(0);
    for id in 1..=10 {
        assert!(o
            .meter_mod(&meter(MeterModCommand::Add, id, 100 * id), 0)
            .is_ok());
    }
    for id in 1..=19 {
        assert!(o
            .group_mod(&group(GroupModCommand::Add, id, &[1, 2]), 0)
            .is_ok());
    }
    let chain = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::All,
        group_id: 20,
        buckets: vec![Bucket::new(vec![Action::Group(1)])],
    };
    assert!(o.group_mod(&chain, 0).is_ok());
    for id in 1..=10 {
        let m = (id <= 5).then_some(id);
        assert!(o.flow_mod(&flow_to(id, Some(id), m), 0).is_ok());
    }
    for gr in o.groups().values() {
        gr.stats.credit(1, u64::from(gr.id), 100 * u64::from(gr.id));
    }
    for m in o.meters.values() {
        m.apply(100, 1);
    }
    for r in o.tables()[0].iter() {
        r.stats.credit(3, 300, 5);
    }
    o
}

/// Runs `f` as a transaction that must fail, and checks that nothing of it remains.
fn fails_and_leaves_nothing(o: &mut Ofproto, f: impl FnOnce(&mut Ofproto) -> Result<(), OfError>) {
    let before = seen(o);
    let version = o.version();
    assert!(o.take_removed().is_empty());
    assert!(o.atomically(f).is_err());
    assert_eq!(seen(o), before);
    assert!(o.version() > version, "caches revalidate after a rollback");
    assert!(
        o.take_removed().is_empty(),
        "no flow_removed for undone deletes"
    );
    assert!(o.undo.is_none());
}

#[test]
fn a_failed_transaction_restores_groups_added_modified_and_deleted() {
    let mut o = switch();
    fails_and_leaves_nothing(&mut o, |o| {
        o.group_mod(&group(GroupModCommand::Add, 30, &[3]), 0)?;
        o.group_mod(&group(GroupModCommand::Modify, 2, &[4, 5, 6]), 5)?;
        // Modified twice: the journal keeps the first value.
        o.group_mod(&group(GroupModCommand::Modify, 2, &[7]), 6)?;
        // Deleting group 3 deletes its flow; group 4 is deleted and added again.
        o.group_mod(&group(GroupModCommand::Delete, 3, &[]), 7)?;
        o.group_mod(&group(GroupModCommand::Delete, 4, &[]), 7)?;
        o.group_mod(&group(GroupModCommand::Add, 4, &[9]), 8)?;
        assert!(o.groups().contains_key(&30));
        assert_eq!(o.tables()[0].len(), 9);
        // The journal holds the ids touched, not the table.
        assert_eq!(o.undo.as_ref().map(|j| j.groups.len()), Some(4));
        // Group 99 does not exist.
        o.flow_mod(&flow_to(50, Some(99), None), 9).map(|_| ())
    });
}

#[test]
fn a_group_add_over_the_limit_at_the_end_undoes_the_bundle() {
    let mut o = switch();
    o.set_limits(Limits {
        groups: 25,
        ..o.limits()
    });
    fails_and_leaves_nothing(&mut o, |o| {
        for id in 21..=25 {
            o.group_mod(&group(GroupModCommand::Add, id, &[1]), 1)?;
        }
        o.flow_mod(&flow_to(21, Some(21), Some(1)), 1)?;
        let r = o.group_mod(&group(GroupModCommand::Add, 26, &[1]), 1);
        assert_eq!(r, Err(OfError::group_mod_failed(g::OUT_OF_GROUPS)));
        r
    });
    assert_eq!(o.groups().len(), 20);
}

#[test]
fn a_bad_bucket_undoes_the_bundle() {
    let mut o = switch();
    fails_and_leaves_nothing(&mut o, |o| {
        o.group_mod(&group(GroupModCommand::Modify, 5, &[8]), 1)?;
        // A bucket that sends to a group that does not exist.
        let mut bad = group(GroupModCommand::Modify, 6, &[]);
        bad.buckets = vec![Bucket::new(vec![Action::Group(77)])];
        let r = o.group_mod(&bad, 1);
        assert_eq!(r, Err(OfError::group_mod_failed(g::UNKNOWN_GROUP)));
        r
    });
    // A loop through the chained group is refused the same way.
    fails_and_leaves_nothing(&mut o, |o| {
        let mut l = group(GroupModCommand::Modify, 1, &[]);
        l.buckets = vec![Bucket::new(vec![Action::Group(20)])];
        o.group_mod(&l, 1)
    });
}

#[test]
fn a_failed_delete_of_every_group_and_meter_is_undone() {
    let mut o = switch();
    fails_and_leaves_nothing(&mut o, |o| {
        o.group_mod(&group(GroupModCommand::Delete, OFPG_ALL, &[]), 1)?;
        o.meter_mod(&meter(MeterModCommand::Delete, OFPM_ALL, 0), 1)?;
        assert!(o.groups().is_empty());
        assert!(o.meter_table().get(1).is_none());
        // Only the default flow is left.
        assert_eq!(o.tables()[0].len(), 1);
        Err(OfError::bad_request(0))
    });
    // Committed, the same deletes remove the flows too, each reported once.
    let r: Result<(), OfError> = o.atomically(|o| {
        o.group_mod(&group(GroupModCommand::Delete, OFPG_ALL, &[]), 1)?;
        o.meter_mod(&meter(MeterModCommand::Delete, OFPM_ALL, 0), 1)
    });
    assert!(r.is_ok());
    assert!(o.groups().is_empty() && o.meters.is_empty());
    let removed = o.take_removed();
    assert_eq!(removed.len(), 10);
    assert!(removed
        .iter()
        .all(|r| r.reason == RemovedReason::GroupDelete));
    assert!((1..=10).all(|id| o.meter_table().get(id).is_none()));
}

#[test]
fn a_failed_transaction_restores_meters_and_the_datapath_meter_table() {
    let mut o = switch();
    fails_and_leaves_nothing(&mut o, |o| {
        o.meter_mod(&meter(MeterModCommand::Add, 20, 5), 1)?;
        o.meter_mod(&meter(MeterModCommand::Modify, 2, 5), 1)?;
        o.meter_mod(&meter(MeterModCommand::Modify, 2, 6), 1)?;
        // Meter 3 goes with its flow; meter 4 goes and comes back.
        o.meter_mod(&meter(MeterModCommand::Delete, 3, 0), 1)?;
        o.meter_mod(&meter(MeterModCommand::Delete, 4, 0), 1)?;
        o.meter_mod(&meter(MeterModCommand::Add, 4, 1), 1)?;
        assert!(o.meter_table().get(20).is_some());
        assert!(o.meter_table().get(3).is_none());
        assert_eq!(o.undo.as_ref().map(|j| j.meters.len()), Some(4));
        o.meter_mod(&meter(MeterModCommand::Modify, 33, 1), 1)
    });
}

#[test]
fn a_failed_transaction_restores_inserted_and_removed_buckets() {
    let mut o = switch();
    let bm = |command, id, at, buckets| GroupBucketMod {
        command,
        group_type: GroupType::Select,
        group_id: id,
        command_bucket_id: at,
        buckets,
    };
    let mut b = Bucket::new(vec![Action::output(9)]);
    b.bucket_id = 40;
    fails_and_leaves_nothing(&mut o, |o| {
        o.group_bucket_mod(&bm(BucketCommand::Insert, 7, OFPG_BUCKET_FIRST, vec![b]), 1)?;
        o.group_bucket_mod(&bm(BucketCommand::Remove, 8, OFPG_BUCKET_LAST, vec![]), 1)?;
        assert_eq!(o.groups()[&7].buckets.len(), 3);
        assert_eq!(o.groups()[&8].buckets.len(), 1);
        // Bucket 12 is in no group.
        o.group_bucket_mod(&bm(BucketCommand::Remove, 9, 12, vec![]), 1)
    });
}

#[test]
fn a_committed_transaction_keeps_its_groups_and_meters() {
    let mut o = switch();
    let r: Result<(), OfError> = o.atomically(|o| {
        o.group_mod(&group(GroupModCommand::Add, 30, &[3]), 1)?;
        o.group_mod(&group(GroupModCommand::Delete, 3, &[]), 1)?;
        o.meter_mod(&meter(MeterModCommand::Modify, 2, 5), 1)
    });
    assert!(r.is_ok());
    assert!(o.undo.is_none());
    assert!(o.groups().contains_key(&30) && !o.groups().contains_key(&3));
    let m2 = o.meters.get(&2).cloned();
    let published = o.meter_table().get(2);
    assert!(m2.zip(published).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)));
    assert_eq!(o.tables()[0].len(), 10);
    // Outside a transaction nothing is journaled.
    assert!(o
        .group_mod(&group(GroupModCommand::Add, 31, &[3]), 1)
        .is_ok());
    assert!(o.undo.is_none());
}

#[test]
fn group_ref_counts_count_group_actions_as_ovs_does() {
    let mut o = switch();
    // Group 1 named twice in one rule (apply and write actions), 1 and 2 by another, 3
    // inside nested clones: each occurrence counts.
    let mut fm = flow_to(30, Some(1), None);
    fm.instructions
        .push(Instruction::WriteActions(vec![Action::Group(1)]));
    assert!(o.flow_mod(&fm, 0).is_ok());
    let mut fm = flow_to(31, Some(1), None);
    fm.instructions = vec![Instruction::ApplyActions(vec![
        Action::Group(1),
        Action::Group(2),
        Action::Clone(vec![
            Action::Clone(vec![Action::Group(3)]),
            Action::Group(3),
        ]),
    ])];
    assert!(o.flow_mod(&fm, 0).is_ok());
    let n = o.group_ref_counts();
    assert_eq!(n.get(&1), Some(&4));
    assert_eq!(n.get(&2), Some(&2));
    assert_eq!(n.get(&3), Some(&3));
    // Group 20 chains to 1 but no rule sends to it; 11..=19 have no rule either.
    assert_eq!(n.get(&20), None);
    assert_eq!(n.get(&11), None);
    for id in 1..=20 {
        let one = o.group_ref_count(id);
        assert_eq!(one, n.get(&id).copied().unwrap_or(0), "group {id}");
    }
    // A rule that sends to a group only inside a clone goes with the group.
    assert!(o
        .group_mod(&group(GroupModCommand::Delete, 3, &[]), 0)
        .is_ok());
    // It took its two rules with it: the default flow and nine of the ten plus the rule
    // for port 30 are left.
    assert!(o.tables()[0].iter().all(|r| !r.uses_group(3)));
    assert_eq!(o.tables()[0].len(), 11);
}

#[test]
fn deleting_groups_whose_flows_fill_a_table_swaps_the_table_out_and_undoes_it() {
    // Table 3 holds only flows to groups 1..=4; table 0 also has its default flow.
    let mut o = switch();
    for id in 1..=4 {
        let mut fm = flow_to(40 + id, Some(id), None);
        fm.table_id = 3;
        assert!(o.flow_mod(&fm, 0).is_ok());
    }
    assert!(o.take_removed().is_empty());
    fails_and_leaves_nothing(&mut o, |o| {
        o.group_mod(&group(GroupModCommand::Delete, OFPG_ALL, &[]), 1)?;
        assert!(o.tables()[3].is_empty());
        assert_eq!(o.tables()[0].len(), 1);
        Err(OfError::bad_request(0))
    });
    // Through both copies: the table emptied on one is emptied on the other.
    let v = crate::switch::versions::Versions::new(o);
    {
        let mut w = v.write();
        assert!(w
            .group_mod(&group(GroupModCommand::Delete, OFPG_ALL, &[]), 1)
            .is_ok());
        let removed = w.take_removed();
        assert_eq!(removed.len(), 14);
        assert!(removed
            .iter()
            .all(|r| r.reason == RemovedReason::GroupDelete));
    }
    for _ in 0..2 {
        let w = v.write();
        assert!(w.groups().is_empty());
        assert!(w.tables()[3].is_empty());
        assert_eq!(w.tables()[0].len(), 1, "the default flow stays");
    }
}
