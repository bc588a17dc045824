//! All-or-nothing application of several changes (OpenFlow 1.4 bundles).
//!
//! [`Ofproto::atomically`] runs a closure that applies any number of flow_mods and
//! group_mods. If the closure fails, every table, group and meter is put back exactly as it
//! was before the closure ran, and flow-removed records and flow-monitor events the closure logged are dropped:
//! nothing observable remains of the attempt.
//!
//! ## How
//! Before the closure runs, the transaction takes a snapshot: every table's rules (as
//! `Arc`s, so this copies pointers, not rules), the group and meter maps, the flow-removed
//! log, the flow-monitor event log and the rule id counter. Restoring compares each table with its snapshot by rule id
//! and pointer: rules the closure added are removed, rules it deleted or replaced (a
//! modify makes a new `Arc` with the same id) are put back. A rule's counters live behind
//! their own `Arc` and are shared by its replacements, so restored rules keep their
//! statistics. The cost is one pass over the rules at the start, and on failure one pass
//! over the rules again.
//!
//! ## Concurrency
//! `atomically` takes `&mut self`: the caller holds the `Ofproto` lock for the whole
//! transaction, so readers (the poll thread's table misses, the revalidator) see either
//! the state before or the state after, never a partial one. [`Ofproto::version`] is bumped
//! after a rollback as after any change, so caches revalidate either way.

use super::{FlowEvent, FlowRemoved, Ofproto};
use crate::group::Group;
use crate::meter::Meter;
use crate::rule::Rule;
use openflow::MeterMod;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// What a failed transaction restores.
struct Snapshot {
    rules: Vec<Vec<Arc<Rule>>>,
    groups: BTreeMap<u32, Group>,
    meters: BTreeMap<u32, Meter>,
    meter_specs: BTreeMap<u32, MeterMod>,
    removed: VecDeque<FlowRemoved>,
    flow_events: VecDeque<FlowEvent>,
    next_id: u64,
}

impl Ofproto {
    /// Runs `f` on this switch; if it fails, undoes everything it changed (see the module
    /// documentation) and returns its error.
    pub fn atomically<T, E>(
        &mut self,
        f: impl FnOnce(&mut Ofproto) -> Result<T, E>,
    ) -> Result<T, E> {
        let snap = Snapshot {
            rules: self
                .tables
                .iter()
                .map(|t| t.iter().cloned().collect())
                .collect(),
            groups: self.groups.clone(),
            meters: self.meters.clone(),
            meter_specs: self.meter_specs.clone(),
            removed: self.removed.clone(),
            flow_events: self.flow_events.clone(),
            next_id: self.next_id,
        };
        let r = f(self);
        if r.is_err() {
            self.restore(snap);
        }
        r
    }

    fn restore(&mut self, snap: Snapshot) {
        for (t, before) in self.tables.iter_mut().zip(snap.rules) {
            let want: HashMap<u64, &Arc<Rule>> = before.iter().map(|r| (r.id, r)).collect();
            let added: Vec<u64> = t
                .iter()
                .filter(|r| !want.contains_key(&r.id))
                .map(|r| r.id)
                .collect();
            for id in added {
                t.remove(id);
            }
            let changed: Vec<Arc<Rule>> = before
                .iter()
                .filter(|r| t.get(r.id).is_none_or(|cur| !Arc::ptr_eq(cur, r)))
                .cloned()
                .collect();
            if !changed.is_empty() {
                t.insert_many(changed);
            }
        }
        self.groups = snap.groups;
        self.meters = snap.meters;
        self.meter_specs = snap.meter_specs;
        self.removed = snap.removed;
        self.flow_events = snap.flow_events;
        self.next_id = snap.next_id;
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::actions::OFPP_ANY;
    use openflow::oxm::Field;
    use openflow::{
        Action, Bucket, FlowMod, FlowModCommand, FlowModFlags, GroupMod, GroupModCommand,
        GroupType, Instruction, Match, OfError,
    };

    fn flow(cmd: FlowModCommand, port: u32, out: u32) -> FlowMod {
        let mut fm = FlowMod::new(cmd);
        fm.priority = 100;
        fm.match_ = Match::new().with(Field::InPort, u128::from(port));
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(out)])];
        fm.flags = FlowModFlags::SEND_FLOW_REM;
        fm
    }

    fn dump(o: &Ofproto) -> Vec<String> {
        o.tables()
            .iter()
            .flat_map(|t| t.rules())
            .map(|r| {
                format!(
                    "{} {} {:?} {:?}",
                    r.table_id, r.id, r.match_, r.instructions
                )
            })
            .collect()
    }

    #[test]
    fn a_failed_transaction_leaves_rules_groups_and_log_as_they_were() {
        let mut o = Ofproto::with_default_flow(0);
        o.flow_mod(&flow(FlowModCommand::Add, 1, 2), 0)
            .expect("add");
        o.flow_mod(&flow(FlowModCommand::Add, 2, 1), 0)
            .expect("add");
        let gm = GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::All,
            group_id: 7,
            buckets: vec![Bucket::new(vec![Action::output(1)])],
        };
        o.group_mod(&gm, 0).expect("group");
        let before = dump(&o);
        let groups_before = o.groups().len();
        let r: Result<(), OfError> = o.atomically(|o| {
            o.flow_mod(&flow(FlowModCommand::Add, 3, 1), 1)?;
            o.flow_mod(&flow(FlowModCommand::Modify, 1, 3), 1)?;
            o.flow_mod(&flow(FlowModCommand::DeleteStrict, 2, OFPP_ANY), 1)?;
            o.group_mod(
                &GroupMod {
                    command: GroupModCommand::Delete,
                    ..gm.clone()
                },
                1,
            )?;
            // Refers to a group that does not exist: fails.
            let mut bad = flow(FlowModCommand::Add, 4, 1);
            bad.instructions = vec![Instruction::ApplyActions(vec![Action::Group(99)])];
            o.flow_mod(&bad, 1)?;
            Ok(())
        });
        assert!(r.is_err());
        assert_eq!(dump(&o), before);
        assert_eq!(o.groups().len(), groups_before);
        assert!(
            o.take_removed().is_empty(),
            "no flow_removed for undone deletes"
        );
        // The ids handed out are reused, so nothing of the attempt shows.
        o.flow_mod(&flow(FlowModCommand::Add, 5, 1), 2)
            .expect("add");
    }

    #[test]
    fn flow_events_are_logged_while_monitoring_and_undone_with_the_transaction() {
        use crate::switch::{FlowEventKind, RemovedReason};
        let mut o = Ofproto::new();
        o.flow_mod(&flow(FlowModCommand::Add, 1, 2), 0)
            .expect("add");
        assert!(o.take_flow_events().is_empty(), "nothing logged while off");
        o.set_monitoring(true);
        o.flow_mod(&flow(FlowModCommand::Add, 2, 1), 0)
            .expect("add");
        o.flow_mod(&flow(FlowModCommand::Modify, 2, 3), 0)
            .expect("modify");
        o.flow_mod(&flow(FlowModCommand::DeleteStrict, 1, OFPP_ANY), 0)
            .expect("delete");
        let kinds: Vec<FlowEventKind> = o.take_flow_events().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                FlowEventKind::Added,
                FlowEventKind::Modified,
                FlowEventKind::Removed(RemovedReason::Delete)
            ]
        );
        let r: Result<(), OfError> = o.atomically(|o| {
            o.flow_mod(&flow(FlowModCommand::Add, 5, 1), 1)?;
            Err(OfError::bad_request(0))
        });
        assert!(r.is_err());
        assert!(
            o.take_flow_events().is_empty(),
            "an undone change is not reported"
        );
    }

    #[test]
    fn a_successful_transaction_keeps_its_changes() {
        let mut o = Ofproto::new();
        let r: Result<(), OfError> = o.atomically(|o| {
            o.flow_mod(&flow(FlowModCommand::Add, 1, 2), 0)?;
            o.flow_mod(&flow(FlowModCommand::Add, 2, 1), 0)?;
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(dump(&o).len(), 2);
    }
}
