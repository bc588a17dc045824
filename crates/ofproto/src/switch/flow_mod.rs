//! Applying a checked flow_mod: add, modify, delete, and rule expiry.

use super::*;
use crate::table::ClsRule;
use classifier::{Rule as CRule, RuleId};
use packet::flow::FLOW_KEY_WORDS;

/// The classifier rule an add flow_mod makes, whose match as a masked flow key is `cm`: the
/// [`Rule`] with the flow_mod's match and instructions (moved in from an owned flow_mod), not
/// yet given an id or times ([`Ofproto::add_rule`] does that). `masks` shares one mask among
/// rules built one after another (see [`super::MaskCache`]).
pub(super) fn cls_rule(
    fm: Cow<'_, FlowMod>,
    cm: &CMatch<FLOW_KEY_WORDS>,
    masks: &mut super::MaskCache,
) -> Arc<ClsRule> {
    let (table_id, priority, cookie, idle_timeout, hard_timeout, flags) = (
        fm.table_id,
        fm.priority,
        fm.cookie,
        fm.idle_timeout,
        fm.hard_timeout,
        fm.flags,
    );
    let (match_, instructions) = match fm {
        Cow::Owned(f) => (f.match_, f.instructions),
        Cow::Borrowed(f) => (f.match_.clone(), f.instructions.clone()),
    };
    let rule = Rule {
        id: 0,
        table_id,
        priority,
        match_,
        cookie,
        idle_timeout,
        hard_timeout,
        flags,
        instructions,
        created_ms: 0,
        modified_ms: 0,
        stats: Arc::new(RuleStats::default()),
    };
    Arc::new(CRule::prebuilt(
        RuleId::new(0),
        u32::from(priority),
        cm,
        masks,
        Arc::new(rule),
    ))
}

impl Ofproto {
    /// Applies an add flow_mod (already checked against the TLV table and validated): its
    /// rule is built (match placed by the TLV table) and added by [`Ofproto::add_rule`].
    pub(super) fn add(
        &mut self,
        fm: Cow<'_, FlowMod>,
        now_ms: u64,
    ) -> Result<FlowModResult, OfError> {
        let (key, mask) = crate::tun_md::match_to_key(&fm.match_, &self.tlv);
        let cm = CMatch::from_flow(&key, &mask);
        let rule = cls_rule(fm, &cm, &mut None);
        let tid = usize::from(rule.payload().table_id);
        let r = self.add_rule(rule, &cm, now_ms)?;
        // Looked up at once, inside a transaction too (only prepared adds wait for its end).
        if let Some(t) = self.tables.get_mut(tid) {
            t.rank();
        }
        Ok(r)
    }

    /// Adds `crule`, a rule built by [`cls_rule`] and held by nothing else, whose match as a
    /// masked flow key is `cm`: the one place both a flow_mod add and a bundle's prepared add
    /// ([`super::PreparedAdd`]) go through, so the same add gives the same errors and
    /// effects either way. Checks first ([`Ofproto::check_add`]: table id, instructions,
    /// overlap, table size); then the rule gets the next id and `now_ms` as its times, and
    /// replaces an identical rule (same match and priority) if there is one: the old rule's
    /// counters carry over unless the add says `reset_counts` ([`Ofproto::kept_counters`]),
    /// and no flow_removed is sent for it.
    pub(super) fn add_rule(
        &mut self,
        mut crule: Arc<ClsRule>,
        cm: &CMatch<FLOW_KEY_WORDS>,
        now_ms: u64,
    ) -> Result<FlowModResult, OfError> {
        let r = crule.payload();
        let (tid, flags) = (r.table_id, r.flags);
        let existing = self.check_add(tid, cm, &r.match_, r.priority, flags, &r.instructions)?;
        let kept = self.kept_counters(tid, existing, flags);
        let id = self.next_id;
        self.next_id += 1;
        // A rule from `cls_rule` and its payload are held by nothing else until inserted.
        let Some(c) = Arc::get_mut(&mut crule) else {
            unreachable!("a rule to add is unshared");
        };
        c.set_id(RuleId::new(id));
        let Some(r) = Arc::get_mut(c.payload_mut()) else {
            unreachable!("a rule to add is unshared");
        };
        r.id = id;
        r.created_ms = now_ms;
        r.modified_ms = now_ms;
        let new = Arc::clone(crule.payload());
        if let Some((packets, bytes, used_ms)) = kept {
            new.stats.credit(packets, bytes, used_ms);
        }
        let table = &mut self.tables[usize::from(tid)];
        let replaced = existing.and_then(|old| table.remove(old));
        table.insert_new(crule);
        if let Some(old) = replaced {
            self.unref_learns(&old);
        }
        self.ref_learns(&new);
        self.log_event(FlowEventKind::Added, &new);
        self.version += 1;
        Ok(FlowModResult {
            added: 1,
            ..Default::default()
        })
    }

    /// The counters (packets, bytes, last use) an add that replaces the identical rule
    /// `existing` in table `tid` carries over: all of them unless the add says
    /// `reset_counts` (an OpenFlow 1.0 add always does); the new rule's duration starts
    /// afresh either way (OpenFlow 1.3 §6.4, as OVS).
    pub(super) fn kept_counters(
        &self,
        tid: u8,
        existing: Option<u64>,
        flags: FlowModFlags,
    ) -> Option<(u64, u64, u64)> {
        if flags.contains(FlowModFlags::RESET_COUNTS) {
            return None;
        }
        let old = self.tables.get(usize::from(tid))?.get(existing?)?;
        Some(old.stats.get())
    }

    /// Rules a modify/delete selects: strict = same match and priority; otherwise every
    /// rule whose match refines the flow_mod's. Cookie, out_port and out_group filter.
    pub(super) fn select(&self, fm: &FlowMod) -> Vec<(u8, u64)> {
        let strict = fm.command.is_strict();
        let tables: Vec<u8> = if fm.table_id == OFPTT_ALL {
            (0..N_TABLES as u8).collect()
        } else {
            vec![fm.table_id]
        };
        let mut out = Vec::new();
        for tid in tables {
            let Some(t) = self.tables.get(usize::from(tid)) else {
                continue;
            };
            // Strict: the one rule with this match and priority, found by hash, so OVN's
            // strict modifies and deletes cost the same in a table of any size.
            let candidates: Box<dyn Iterator<Item = &Arc<Rule>>> = if strict {
                Box::new(
                    t.find_strict(&fm.match_, fm.priority, &self.tlv)
                        .into_iter(),
                )
            } else if fm.command.is_delete() && fm.out_group != OFPG_ANY {
                // Only the rules naming the group, through the group index.
                Box::new(
                    t.rules_of_group(fm.out_group)
                        .filter(|r| r.match_.refines(&fm.match_)),
                )
            } else {
                Box::new(t.iter().filter(|r| r.match_.refines(&fm.match_)))
            };
            for r in candidates {
                if (r.cookie & fm.cookie_mask) != (fm.cookie & fm.cookie_mask) {
                    continue;
                }
                if fm.command.is_delete() {
                    if fm.out_port != OFPP_ANY && !r.outputs_to(fm.out_port) {
                        continue;
                    }
                    if fm.out_group != OFPG_ANY && !r.uses_group(fm.out_group) {
                        continue;
                    }
                }
                out.push((tid, r.id));
            }
        }
        out
    }

    pub(super) fn modify(&mut self, fm: &FlowMod, now_ms: u64) -> Result<FlowModResult, OfError> {
        let sel = self.select(fm);
        // Validate the new instructions against every selected rule's match first.
        for &(tid, id) in &sel {
            if let Some(r) = self.tables[usize::from(tid)].get(id) {
                self.check_instructions(&r.match_, &fm.instructions)?;
            }
        }
        if sel.is_empty() {
            self.check_instructions(&fm.match_, &fm.instructions)?;
        }
        let reset = fm.flags.contains(FlowModFlags::RESET_COUNTS);
        for &(tid, id) in &sel {
            let t = &mut self.tables[usize::from(tid)];
            let Some(old) = t.get(id).cloned() else {
                continue;
            };
            if reset {
                old.stats.reset();
            }
            let new = Rule {
                id: old.id,
                table_id: old.table_id,
                priority: old.priority,
                match_: old.match_.clone(),
                cookie: old.cookie,
                idle_timeout: old.idle_timeout,
                hard_timeout: old.hard_timeout,
                flags: old.flags,
                instructions: fm.instructions.clone(),
                created_ms: old.created_ms,
                modified_ms: now_ms,
                stats: Arc::clone(&old.stats),
            };
            let new = Arc::new(new);
            t.replace(Arc::clone(&new));
            self.ref_learns(&new);
            self.unref_learns(&old);
            self.log_event(FlowEventKind::Modified, &new);
        }
        if !sel.is_empty() {
            self.version += 1;
        }
        Ok(FlowModResult {
            modified: sel.len(),
            ..Default::default()
        })
    }

    pub(super) fn delete(&mut self, fm: &FlowMod, reason: RemovedReason, now_ms: u64) -> usize {
        if fm.command == FlowModCommand::Delete
            && fm.match_.is_empty()
            && fm.cookie_mask == 0
            && fm.out_port == OFPP_ANY
            && fm.out_group == OFPG_ANY
        {
            return self.delete_all(fm.table_id, reason, now_ms);
        }
        let sel = self.select(fm);
        for &(tid, id) in &sel {
            if let Some(r) = self.tables[usize::from(tid)].remove(id) {
                self.unref_learns(&r);
                self.removed(r, reason, now_ms);
            }
        }
        if !sel.is_empty() {
            self.version += 1;
        }
        sel.len()
    }

    /// Deletes every rule of table `table_id` (or of all tables): each table is swapped for
    /// an empty one, the rules are reported as removed, and the old tables are freed on a
    /// short-lived thread when they are large, as OVS defers frees past its RCU grace
    /// period. The rules are listed only when one asks for a flow-removed message, a flow
    /// monitor listens or some rule learns: otherwise `del-flows` of a million rules costs
    /// O(tables).
    pub(super) fn delete_all(&mut self, table_id: u8, reason: RemovedReason, now_ms: u64) -> usize {
        let mut n = 0;
        let mut notify = false;
        let mut graveyard = Vec::new();
        for t in &mut self.tables {
            if (table_id != OFPTT_ALL && t.id != table_id) || t.is_empty() {
                continue;
            }
            n += t.len();
            notify |= t.any_send_flow_rem();
            graveyard.push(t.take_all());
        }
        if n == 0 {
            return 0;
        }
        // The rules are looked at one by one only if one may have to be reported or may
        // have learned: a table of 100K rules is not walked otherwise.
        let wanted = self.monitoring;
        if wanted || !self.learners.is_empty() || notify {
            for old in &graveyard {
                for r in old.iter().map(|r| r.payload()) {
                    self.unref_learns(r);
                    if wanted || r.flags.contains(FlowModFlags::SEND_FLOW_REM) {
                        self.removed(Arc::clone(r), reason, now_ms);
                    }
                }
            }
        }
        self.version += 1;
        versions::free_later(graveyard);
        n
    }

    /// Deletes the rules that send to group `g` (to any group if `None`), as a group delete
    /// does, logging each removal as `GroupDelete`. The tables' group indexes name them
    /// (see [`crate::group_index`]): O(rules removed) whatever else the tables hold, not a
    /// pass over every rule per group.
    pub(super) fn delete_group_rules(&mut self, g: Option<u32>, now_ms: u64) -> usize {
        let mut victims = Vec::new();
        let mut whole = Vec::new();
        for (i, t) in self.tables.iter().enumerate() {
            let ix = t.group_index();
            let n = g.map_or(ix.len(), |g| ix.n_rules_of(g));
            if n == 0 {
                continue;
            }
            if n == t.len() {
                whole.push(i);
            } else if let Some(g) = g {
                victims.extend(ix.rules_of(g).map(|id| (t.id, id)));
            } else {
                victims.extend(ix.rules().map(|id| (t.id, id)));
            }
        }
        self.delete_listed(whole, victims, RemovedReason::GroupDelete, now_ms)
    }

    /// Deletes the rules that use meter `m` (any meter if `None`), as a meter delete does,
    /// logging each removal as `MeterDelete`. The tables' meter indexes name them (see
    /// [`crate::meter_index`]): O(rules removed), not a pass over every rule per meter.
    pub(super) fn delete_meter_rules(&mut self, m: Option<u32>, now_ms: u64) -> usize {
        let mut victims = Vec::new();
        let mut whole = Vec::new();
        for (i, t) in self.tables.iter().enumerate() {
            let ix = t.meter_index();
            let n = m.map_or(ix.len(), |m| ix.n_rules_of(m));
            if n == 0 {
                continue;
            }
            if n == t.len() {
                whole.push(i);
            } else if let Some(m) = m {
                victims.extend(ix.rules_of(m).map(|id| (t.id, id)));
            } else {
                victims.extend(ix.rules().map(|id| (t.id, id)));
            }
        }
        self.delete_listed(whole, victims, RemovedReason::MeterDelete, now_ms)
    }

    /// Deletes tables `whole` entirely and the rules `victims` (table, id) from the others,
    /// logging each removal with `reason`. A table all of whose rules go is swapped out
    /// whole, as [`Ofproto::delete_all`] does (a `del-groups` whose flows fill their tables
    /// removes nothing from a classifier one rule at a time, here or in the other copy's
    /// catch-up); other tables lose their victims in one batch each (one re-ranking).
    fn delete_listed(
        &mut self,
        whole: Vec<usize>,
        mut victims: Vec<(u8, u64)>,
        reason: RemovedReason,
        now_ms: u64,
    ) -> usize {
        let mut n = 0;
        let mut graveyard = Vec::new();
        for i in whole {
            let Some(t) = self.tables.get_mut(i) else {
                continue;
            };
            let old = t.take_all();
            n += old.len();
            for r in old.iter().map(|r| r.payload()) {
                self.unref_learns(r);
                self.removed(Arc::clone(r), reason, now_ms);
            }
            graveyard.push(old);
        }
        // Table by table, each table's victims in id order (the order the rules were
        // added): flow-removed records come in that order.
        victims.sort_unstable();
        let mut rest = victims.as_slice();
        while let Some(&(tid, _)) = rest.first() {
            let k = rest.iter().take_while(|(t, _)| *t == tid).count();
            let (these, tail) = rest.split_at(k);
            rest = tail;
            let ids: Vec<u64> = these.iter().map(|(_, id)| *id).collect();
            let Some(t) = self.tables.get_mut(usize::from(tid)) else {
                continue;
            };
            for r in t.remove_many(&ids) {
                n += 1;
                self.unref_learns(&r);
                self.removed(r, reason, now_ms);
            }
        }
        if n > 0 {
            self.version += 1;
        }
        versions::free_later(graveyard);
        n
    }

    /// Removes rules whose idle or hard timeout has passed. Returns how many.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let mut victims = Vec::new();
        for t in &self.tables {
            for r in t.timed() {
                let hard = r.hard_timeout != 0
                    && now_ms.saturating_sub(r.created_ms) >= u64::from(r.hard_timeout) * 1000;
                let (_, _, used) = r.stats.get();
                let last = used.max(r.created_ms);
                let idle = r.idle_timeout != 0
                    && now_ms.saturating_sub(last) >= u64::from(r.idle_timeout) * 1000;
                if hard {
                    victims.push((t.id, r.id, RemovedReason::HardTimeout));
                } else if idle {
                    victims.push((t.id, r.id, RemovedReason::IdleTimeout));
                }
            }
        }
        for &(tid, id, why) in &victims {
            if let Some(r) = self.tables[usize::from(tid)].remove(id) {
                self.unref_learns(&r);
                self.removed(r, why, now_ms);
            }
        }
        if !victims.is_empty() {
            self.version += 1;
        }
        self.flush_learned(now_ms);
        victims.len()
    }
}
