//! Groups and meters changed across write sessions: both copies end up equal, sharing the
//! same counters, and the datapath's meter table holds the published copy's meters.

use super::*;
use crate::meter::MeterTable;
use openflow::actions::OFPG_ALL;
use openflow::messages::OFPM_ALL;
use openflow::{
    Action, Bucket, GroupMod, GroupModCommand, GroupType, MeterBand, MeterFlags, MeterMod,
    MeterModCommand, OfError,
};
use std::sync::Arc;

fn group(cmd: GroupModCommand, id: u32, outs: &[u32]) -> GroupMod {
    GroupMod {
        command: cmd,
        group_type: GroupType::Select,
        group_id: id,
        buckets: outs
            .iter()
            .map(|&p| {
                let mut b = Bucket::new(vec![Action::output(p)]);
                b.weight = 10;
                b
            })
            .collect(),
    }
}

fn chained(id: u32, to: u32) -> GroupMod {
    GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::All,
        group_id: id,
        buckets: vec![Bucket::new(vec![Action::Group(to)])],
    }
}

fn meter(cmd: MeterModCommand, id: u32, rate: u32) -> MeterMod {
    MeterMod {
        command: cmd,
        flags: MeterFlags::KBPS,
        meter_id: id,
        bands: vec![MeterBand::Drop {
            rate,
            burst_size: 0,
        }],
    }
}

/// What a copy holds of groups and meters, comparable across copies.
type State = (Vec<(u32, String)>, Vec<(u32, MeterMod)>, Vec<u32>);

fn state(of: &Ofproto) -> State {
    (
        of.groups()
            .iter()
            .map(|(id, g)| (*id, format!("{:?} {:?}", g.kind, g.buckets)))
            .collect(),
        of.meter_specs()
            .iter()
            .map(|(id, m)| (*id, m.clone()))
            .collect(),
        of.meters.keys().copied().collect(),
    )
}

/// Checks that the published copy is `want`, then that after the next session's catch-up
/// both copies hold the same groups and meters, sharing their counters, and that the
/// datapath's meter table runs exactly those meters.
fn check(v: &Versions, want: &State, table: &MeterTable) {
    assert_eq!(&state(&v.read()), want, "published copy");
    // An empty session catches the other copy up and publishes it.
    drop(v.write());
    let a = v.copies[0].read().unwrap_or_else(|e| e.into_inner());
    let b = v.copies[1].read().unwrap_or_else(|e| e.into_inner());
    assert_eq!(&state(&a), want, "copy 0");
    assert_eq!(&state(&b), want, "copy 1");
    for (id, g) in a.groups() {
        assert!(Arc::ptr_eq(&g.stats, &b.groups()[id].stats), "group {id}");
    }
    for (id, m) in &a.meters {
        assert!(Arc::ptr_eq(m, &b.meters[id]), "meter {id}");
        let published = table.get(*id);
        assert!(published.is_some_and(|p| Arc::ptr_eq(&p, m)), "table {id}");
    }
    for id in 1..=16 {
        assert_eq!(table.get(id).is_some(), a.meters.contains_key(&id), "{id}");
    }
}

#[test]
fn groups_and_meters_changed_across_sessions_are_the_same_in_both_copies() {
    let v = Versions::new(Ofproto::new());
    let table = v.read().meter_table();
    let publish = |f: &dyn Fn(&mut Ofproto) -> Result<(), OfError>| -> State {
        let mut w = v.write();
        assert!(f(&mut w).is_ok());
        state(&w)
    };
    // Session 1: adds.
    let want = publish(&|o| {
        for id in 1..=5 {
            o.group_mod(&group(GroupModCommand::Add, id, &[1, 2, 3, 4]), 0)?;
        }
        for id in 1..=3 {
            o.meter_mod(&meter(MeterModCommand::Add, id, 1000 * id), 0)?;
        }
        Ok(())
    });
    assert_eq!(want.0.len(), 5);
    check(&v, &want, &table);
    // Session 2 (the other copy): modify, delete, a chained add.
    let want = publish(&|o| {
        o.group_mod(&group(GroupModCommand::Modify, 2, &[7]), 0)?;
        o.group_mod(&group(GroupModCommand::Delete, 3, &[]), 0)?;
        o.group_mod(&chained(6, 1), 0)?;
        o.meter_mod(&meter(MeterModCommand::Modify, 2, 5), 0)?;
        o.meter_mod(&meter(MeterModCommand::Delete, 3, 0), 0)
    });
    assert_eq!(
        want.0.iter().map(|g| g.0).collect::<Vec<_>>(),
        [1, 2, 4, 5, 6]
    );
    check(&v, &want, &table);
    // Session 3: a transaction that changes groups and meters, then fails: nothing of it
    // remains, in either copy or in the meter table.
    let before = state(&v.read());
    let after = publish(&|o| {
        let r: Result<(), OfError> = o.atomically(|o| {
            o.group_mod(&group(GroupModCommand::Add, 7, &[1]), 0)?;
            o.group_mod(&group(GroupModCommand::Modify, 1, &[9]), 0)?;
            o.group_mod(&group(GroupModCommand::Delete, 4, &[]), 0)?;
            o.meter_mod(&meter(MeterModCommand::Add, 4, 1), 0)?;
            o.meter_mod(&meter(MeterModCommand::Modify, 1, 1), 0)?;
            o.meter_mod(&meter(MeterModCommand::Delete, 2, 0), 0)?;
            // Group 8 does not exist: the transaction fails here.
            o.group_mod(&chained(9, 8), 0)
        });
        assert!(r.is_err());
        Ok(())
    });
    assert_eq!(after, before);
    check(&v, &before, &table);
    // Session 4: a transaction that succeeds, then more changes in the same session.
    let want = publish(&|o| {
        o.atomically(|o| {
            o.group_mod(&group(GroupModCommand::Add, 7, &[1]), 0)?;
            o.meter_mod(&meter(MeterModCommand::Add, 4, 1), 0)
        })?;
        o.group_mod(&group(GroupModCommand::Modify, 7, &[2, 3]), 0)?;
        o.meter_mod(&meter(MeterModCommand::Delete, 1, 0), 0)
    });
    check(&v, &want, &table);
    // Session 5: delete everything; session 6: add again under old ids.
    let want = publish(&|o| {
        o.group_mod(&group(GroupModCommand::Delete, OFPG_ALL, &[]), 0)?;
        o.meter_mod(&meter(MeterModCommand::Delete, OFPM_ALL, 0), 0)
    });
    assert_eq!(want, (Vec::new(), Vec::new(), Vec::new()));
    check(&v, &want, &table);
    let want = publish(&|o| {
        o.group_mod(&group(GroupModCommand::Add, 1, &[5]), 0)?;
        o.meter_mod(&meter(MeterModCommand::Add, 2, 77), 0)
    });
    check(&v, &want, &table);
}

#[test]
fn a_session_of_many_changes_to_few_groups_is_replayed_whole() {
    let v = Versions::new(Ofproto::new());
    let table = v.read().meter_table();
    let want = {
        let mut w = v.write();
        for i in 0..3000u32 {
            let cmd = if i == 0 {
                GroupModCommand::Add
            } else {
                GroupModCommand::Modify
            };
            assert!(w.group_mod(&group(cmd, 1, &[i + 1]), 0).is_ok());
        }
        // The id list outgrew the map and gave way to a whole copy.
        assert!(w.changed.all);
        assert!(w.meter_mod(&meter(MeterModCommand::Add, 3, 10), 0).is_ok());
        state(&w)
    };
    check(&v, &want, &table);
    // The record starts again as a list after each publication.
    let mut w = v.write();
    assert!(w
        .group_mod(&group(GroupModCommand::Add, 2, &[1]), 0)
        .is_ok());
    assert!(!w.changed.all);
    let want = state(&w);
    drop(w);
    check(&v, &want, &table);
}

#[test]
fn a_switch_changed_outside_versions_starts_with_an_empty_record() {
    let mut of = Ofproto::new();
    for id in 1..=3 {
        assert!(of
            .group_mod(&group(GroupModCommand::Add, id, &[1]), 0)
            .is_ok());
    }
    assert_eq!(of.changed.groups.len(), 3);
    let v = Versions::new(of);
    let table = v.read().meter_table();
    let want = state(&v.read());
    check(&v, &want, &table);
}
