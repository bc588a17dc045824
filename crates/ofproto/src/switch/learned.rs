//! The flow table's side of `learn`: adding the flows packets learned, and
//! `delete_learned`.
//!
//! [`Ofproto::apply_learned`] adds a [`LearnedFlow`] as OVS does a learned flow_mod: a flow
//! with the same match and priority that already does the same is only refreshed (its idle
//! timer restarts); one that differs is replaced; a new one is added unless the learn's
//! `limit` of flows with its table and cookie is reached.
//!
//! `delete_learned`: the switch counts, per (table, cookie), the flows whose actions hold a
//! `learn(table=T,cookie=C,delete_learned)` (`learners`). Every place a rule enters or leaves
//! a table adjusts the count ([`Ofproto::ref_learns`], [`Ofproto::unref_learns`]); a count
//! reaching zero queues the pair, and the public operation that removed the last such flow
//! ends by deleting table T's flows with cookie C ([`Ofproto::flush_learned`]). The counts
//! make this O(1) per rule change however large the tables are; the deletion itself costs a
//! scan of table T, as any delete by cookie does.

use super::{Ofproto, RemovedReason};
use crate::learn::LearnedFlow;
use crate::rule::Rule;
use openflow::actions::field_writable;
use openflow::actions::{OFPG_ANY, OFPP_ANY};
use openflow::learn::{Learn, LearnDst, LearnSrc};
use openflow::messages::err::bad_action;
use openflow::{Action, FlowMod, FlowModCommand, FlowModFlags, Instruction, Match, OfError};

/// Checks a learn's fields against the learning flow's match `m` as OVS does: each source
/// field's prerequisites must hold in `m`; each destination's must hold in the learned
/// match as the specs before it build it (only their constants count); load destinations
/// must be writable.
pub(super) fn check_learn(m: &Match, l: &Learn) -> Result<(), OfError> {
    let inconsistent = || Err(OfError::bad_action(bad_action::MATCH_INCONSISTENT));
    let mut dm = Match::new();
    for s in &l.specs {
        if let LearnSrc::Field(sf) = s.src {
            if !m.prereqs_met_deep(sf.field) {
                return inconsistent();
            }
        }
        match s.dst {
            LearnDst::Match(d) => {
                if !dm.prereqs_met_deep(d.field) {
                    return inconsistent();
                }
                if let LearnSrc::Imm(v) = s.src {
                    crate::learn::match_bits(&mut dm, &d, v);
                }
            }
            LearnDst::Load(d) => {
                if !field_writable(d.field) {
                    return Err(OfError::bad_action(bad_action::BAD_SET_ARGUMENT));
                }
                if !dm.prereqs_met_deep(d.field) {
                    return inconsistent();
                }
            }
            LearnDst::Output => {}
        }
    }
    Ok(())
}

/// The (table, cookie) pairs of the `delete_learned` learns in `r`'s actions.
pub(super) fn learn_refs(r: &Rule) -> Vec<(u8, u64)> {
    fn walk(acts: &[Action], out: &mut Vec<(u8, u64)>) {
        for a in acts {
            match a {
                Action::Learn(l) if l.delete_learned() => out.push((l.table_id, l.cookie)),
                Action::Clone(inner) => walk(inner, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for i in &r.instructions {
        if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
            walk(a, &mut out);
        }
    }
    out
}

impl Ofproto {
    /// Counts a rule that entered a table.
    pub(super) fn ref_learns(&mut self, r: &Rule) {
        for k in learn_refs(r) {
            *self.learners.entry(k).or_insert(0) += 1;
        }
    }

    /// Uncounts a rule that left a table; a pair whose count reaches zero is queued for
    /// [`Ofproto::flush_learned`].
    pub(super) fn unref_learns(&mut self, r: &Rule) {
        if self.learners.is_empty() {
            // No rule learns: nothing to walk `r`'s actions for.
            return;
        }
        for k in learn_refs(r) {
            if let Some(n) = self.learners.get_mut(&k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.learners.remove(&k);
                    self.dead_learned.push(k);
                }
            }
        }
    }

    /// Deletes the learned flows whose last `delete_learned` learner went (and, in turn,
    /// what those flows learned).
    pub(super) fn flush_learned(&mut self, now_ms: u64) {
        while let Some((table_id, cookie)) = self.dead_learned.pop() {
            if self.learners.contains_key(&(table_id, cookie)) {
                continue;
            }
            let mut fm = FlowMod::new(FlowModCommand::Delete);
            fm.table_id = table_id;
            fm.cookie = cookie;
            fm.cookie_mask = u64::MAX;
            fm.out_port = OFPP_ANY;
            fm.out_group = OFPG_ANY;
            self.delete(&fm, RemovedReason::Delete, now_ms);
        }
    }

    /// Whether learning `f` now would succeed: no limit, the flow is already there, or
    /// fewer than `limit` flows of its table have its cookie.
    pub fn learn_allowed(&self, f: &LearnedFlow) -> bool {
        if f.limit == 0 {
            return true;
        }
        let Some(t) = self.tables.get(usize::from(f.table_id)) else {
            return false;
        };
        if t.find_strict(&f.match_, f.priority, &self.tlv).is_some() {
            return true;
        }
        t.iter().filter(|r| r.cookie == f.cookie).count() < f.limit as usize
    }

    /// Adds or refreshes a learned flow at `now_ms` (see the module documentation).
    /// Returns whether it is in the table afterwards.
    pub fn apply_learned(&mut self, f: &LearnedFlow, now_ms: u64) -> Result<bool, OfError> {
        let insts = vec![Instruction::ApplyActions(f.actions.clone())];
        let flags = if f.send_flow_rem {
            FlowModFlags::SEND_FLOW_REM
        } else {
            FlowModFlags::empty()
        };
        if let Some(r) = self
            .tables
            .get(usize::from(f.table_id))
            .and_then(|t| t.find_strict(&f.match_, f.priority, &self.tlv))
        {
            if r.instructions == insts
                && r.cookie == f.cookie
                && r.idle_timeout == f.idle_timeout
                && r.hard_timeout == f.hard_timeout
                && r.flags == flags
            {
                r.stats.credit(0, 0, now_ms);
                return Ok(true);
            }
        } else if !self.learn_allowed(f) {
            return Ok(false);
        }
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.table_id = f.table_id;
        fm.priority = f.priority;
        fm.idle_timeout = f.idle_timeout;
        fm.hard_timeout = f.hard_timeout;
        fm.cookie = f.cookie;
        fm.flags = flags;
        fm.match_ = f.match_.clone();
        fm.instructions = insts;
        self.flow_mod(&fm, now_ms)?;
        Ok(true)
    }
}
