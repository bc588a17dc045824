//! All-or-nothing application of several changes (OpenFlow 1.4 bundles).
//!
//! [`Ofproto::atomically`] runs a closure that applies any number of flow_mods and
//! group_mods. If the closure fails, every table, group and meter is put back exactly as it
//! was before the closure ran, and flow-removed records and flow-monitor events the closure logged are dropped:
//! nothing observable remains of the attempt.
//!
//! ## How
//! Before the closure runs, every table starts a journal: the first change to a rule id
//! records the rule it had before (or that it had none). Groups and meters keep one journal
//! of the same kind ([`IdJournal`]): the first change to a group id records the group it
//! had before (or none), the first change to a meter id its live meter and meter_mod. The
//! flow-removed and flow-monitor logs (bounded rings), the learner counts and the rule id
//! counter are copied.
//! On failure each table replays its journal backwards: rules the closure added are removed,
//! rules it deleted or replaced (a modify makes a new `Arc` with the same id) are put back;
//! each journaled group and meter id gets its recorded value back (or goes, if it had
//! none), and each such meter is republished to the datapath.
//! A rule's counters live behind their own `Arc` and are shared by its replacements, so
//! restored rules keep their statistics; a group's and a live meter's counters likewise
//! live in the value the journal keeps, so restored groups and meters keep theirs. The cost
//! is proportional to what the closure changed, not to the size of the tables: a bundle of
//! ten flow_mods or group_mods costs the same against a million rules or 200K groups as
//! against none. Prepared adds ([`super::PreparedAdd`]) leave their
//! table's classifier unranked while the closure runs; it re-ranks once when the
//! transaction ends, committed or undone (`Table::commit_journal`, `Table::rollback`), so
//! nothing looks up a table mid-transaction (the copy being written is not published).
//! Transactions do not nest.
//!
//! ## Concurrency
//! `atomically` takes `&mut self`: the caller holds a write session for the whole
//! transaction (see [`super::versions`]), so readers (upcall handlers, the revalidator)
//! keep reading the published copy meanwhile and see either the state before or the state
//! after, never a partial one. [`Ofproto::version`] is bumped
//! after a rollback as after any change, so caches revalidate either way. The group and
//! meter ids the closure changed stay in the copy's change record (`IdChanges`): the
//! other copy replays them with the values the rollback restored.

use super::{FlowEvent, FlowRemoved, Ofproto};
use crate::group::Group;
use crate::meter::LiveMeter;
use openflow::MeterMod;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// The value each group and meter id had before a transaction first changed it (see the
/// module documentation). O(1) per change; nothing is recorded outside a transaction.
#[derive(Default)]
pub(crate) struct IdJournal {
    groups: HashMap<u32, Option<Arc<Group>>>,
    meters: HashMap<u32, (Option<Arc<LiveMeter>>, Option<MeterMod>)>,
}

/// What a failed transaction restores besides the tables' and the id journals.
struct Snapshot {
    removed: VecDeque<FlowRemoved>,
    flow_events: VecDeque<FlowEvent>,
    next_id: u64,
    learners: BTreeMap<(u8, u64), usize>,
}

impl Ofproto {
    /// Makes group `id` `g` (or removes it), journaling its old value inside a transaction
    /// and recording the id for the other copy. Every change to the group map goes here.
    pub(super) fn set_group(&mut self, id: u32, g: Option<Arc<Group>>) {
        let old = match g {
            Some(g) => self.groups.insert(id, g),
            None => self.groups.remove(&id),
        };
        if let Some(j) = self.undo.as_mut() {
            j.groups.entry(id).or_insert(old);
        }
        self.changed.group(id, self.groups.len());
    }

    /// Makes meter `id` `m` with its meter_mod `spec` (or removes both), journaling the old
    /// ones inside a transaction, recording the id for the other copy and publishing the
    /// meter to the datapath. Every change to the meter maps goes here.
    pub(super) fn set_meter(&mut self, id: u32, m: Option<(Arc<LiveMeter>, MeterMod)>) {
        let old = match m {
            Some((m, spec)) => (self.meters.insert(id, m), self.meter_specs.insert(id, spec)),
            None => (self.meters.remove(&id), self.meter_specs.remove(&id)),
        };
        if let Some(j) = self.undo.as_mut() {
            j.meters.entry(id).or_insert(old);
        }
        self.changed.meter(id, self.meters.len());
        self.publish_meter(id);
    }

    /// Runs `f` on this switch; if it fails, undoes everything it changed (see the module
    /// documentation) and returns its error.
    pub fn atomically<T, E>(
        &mut self,
        f: impl FnOnce(&mut Ofproto) -> Result<T, E>,
    ) -> Result<T, E> {
        for t in &mut self.tables {
            t.begin_journal();
        }
        self.undo = Some(IdJournal::default());
        let snap = Snapshot {
            removed: self.removed.clone(),
            flow_events: self.flow_events.clone(),
            next_id: self.next_id,
            learners: self.learners.clone(),
        };
        let r = f(self);
        let undo = self.undo.take().unwrap_or_default();
        if r.is_err() {
            self.restore(snap, undo);
        } else {
            for t in &mut self.tables {
                t.commit_journal();
            }
        }
        r
    }

    fn restore(&mut self, snap: Snapshot, undo: IdJournal) {
        for t in &mut self.tables {
            t.rollback();
        }
        // Outside the transaction now: these changes are not journaled, but recorded for
        // the other copy like any other.
        for (id, g) in undo.groups {
            self.set_group(id, g);
        }
        for (id, (m, spec)) in undo.meters {
            match (m, spec) {
                (Some(m), Some(spec)) => self.set_meter(id, Some((m, spec))),
                _ => self.set_meter(id, None),
            }
        }
        self.removed = snap.removed;
        self.flow_events = snap.flow_events;
        self.next_id = snap.next_id;
        self.learners = snap.learners;
        self.dead_learned.clear();
        self.version += 1;
    }
}

#[cfg(test)]
#[path = "txn_ids_tests.rs"]
mod ids_tests;

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

    #[test]
    fn a_delete_of_everything_reports_exactly_the_rules_that_ask() {
        let mut o = Ofproto::with_default_flow(0);
        let quiet = |port| {
            let mut fm = flow(FlowModCommand::Add, port, 1);
            fm.flags = FlowModFlags::empty();
            fm
        };
        // 1 asks and goes first; 2 is added quiet and replaced by one that asks; 3 the
        // other way round; 4 never asks.
        o.flow_mod(&flow(FlowModCommand::Add, 1, 1), 0)
            .expect("add");
        o.flow_mod(&quiet(2), 0).expect("add");
        o.flow_mod(&flow(FlowModCommand::Add, 2, 1), 0)
            .expect("replace");
        o.flow_mod(&flow(FlowModCommand::Add, 3, 1), 0)
            .expect("add");
        o.flow_mod(&quiet(3), 0).expect("replace");
        o.flow_mod(&quiet(4), 0).expect("add");
        o.flow_mod(&flow(FlowModCommand::DeleteStrict, 1, OFPP_ANY), 0)
            .expect("delete");
        assert_eq!(o.take_removed().len(), 1);
        o.flow_mod(&FlowMod::new(FlowModCommand::Delete), 0)
            .expect("delete all");
        let gone: Vec<String> = o
            .take_removed()
            .iter()
            .map(|r| format!("{:?}", r.rule.match_))
            .collect();
        assert_eq!(
            gone,
            [format!("{:?}", flow(FlowModCommand::Add, 2, 1).match_)]
        );
        // None asks now: nothing is reported.
        o.flow_mod(&quiet(5), 0).expect("add");
        o.flow_mod(&FlowMod::new(FlowModCommand::Delete), 0)
            .expect("delete all");
        assert!(o.take_removed().is_empty());
    }

    #[test]
    fn a_failed_delete_of_everything_is_undone_too() {
        // More rules than the delete-all fast path frees in place.
        let mut o = Ofproto::with_default_flow(0);
        let n = super::super::DEFER_FREE_RULES as u32 + 500;
        for port in 1..=n {
            o.flow_mod(&flow(FlowModCommand::Add, port, 1), 0)
                .expect("add");
        }
        let before = dump(&o);
        let r: Result<(), OfError> = o.atomically(|o| {
            o.flow_mod(&FlowMod::new(FlowModCommand::Delete), 1)?;
            assert_eq!(o.tables()[0].len(), 0);
            o.flow_mod(&flow(FlowModCommand::Add, 1, 9), 1)?;
            Err(OfError::bad_request(0))
        });
        assert!(r.is_err());
        assert_eq!(dump(&o), before);
        // A committed transaction keeps its changes and stops journaling.
        let r: Result<(), OfError> = o.atomically(|o| {
            o.flow_mod(&FlowMod::new(FlowModCommand::Delete), 1)?;
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(o.tables()[0].len(), 0);
    }
}
