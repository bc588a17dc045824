//! The TLV table, group and meter mods.

use super::*;

impl Ofproto {
    /// Applies a TLV-table mod: refused whole with `NXTTMFC_INVALID_TLV_DEL` if it would
    /// unmap a field some rule uses (see [`crate::tlv`]).
    pub fn tlv_mod(
        &mut self,
        command: openflow::wire::nicira::TlvTableCommand,
        maps: &[openflow::wire::nicira::TlvMap],
    ) -> Result<(), OfError> {
        let in_use = self.tables.iter().flat_map(|t| t.iter()).fold(0, |acc, r| {
            acc | crate::tlv::fields_used(&r.match_, &r.instructions)
        });
        self.tlv.apply_in_use(command, maps, in_use)?;
        self.version += 1;
        Ok(())
    }

    // ---- groups ---------------------------------------------------------------------

    /// Applies a group_mod. An add beyond [`Limits::groups`] is refused with
    /// `OFPGMFC_OUT_OF_GROUPS` (a modify never adds, whatever its type); a group of more
    /// than [`MAX_BUCKETS`] buckets or [`MAX_GROUP_ACTIONS`] actions with
    /// `OFPGMFC_OUT_OF_BUCKETS`.
    pub fn group_mod(&mut self, gm: &GroupMod, now_ms: u64) -> Result<(), OfError> {
        use err::group_mod_failed as g;
        gm.validate()?;
        match gm.command {
            GroupModCommand::Add | GroupModCommand::Modify => {
                let exists = self.groups.contains_key(&gm.group_id);
                if gm.command == GroupModCommand::Add && exists {
                    return Err(OfError::group_mod_failed(g::GROUP_EXISTS));
                }
                if gm.command == GroupModCommand::Modify && !exists {
                    return Err(OfError::group_mod_failed(g::UNKNOWN_GROUP));
                }
                if !exists && self.groups.len() >= self.limits.groups as usize {
                    return Err(OfError::group_mod_failed(g::OUT_OF_GROUPS));
                }
                let actions: usize = gm.buckets.iter().map(|b| b.actions.len()).sum();
                if gm.buckets.len() > MAX_BUCKETS || actions > MAX_GROUP_ACTIONS {
                    return Err(OfError::group_mod_failed(g::OUT_OF_BUCKETS));
                }
                for b in &gm.buckets {
                    for a in &b.actions {
                        if let Action::Group(c) = a {
                            if *c == gm.group_id || self.reaches(*c, gm.group_id) {
                                return Err(OfError::group_mod_failed(g::LOOP));
                            }
                            if !self.groups.contains_key(c) {
                                return Err(OfError::group_mod_failed(g::UNKNOWN_GROUP));
                            }
                        }
                    }
                    // A bucket has no match to be inconsistent with: its set_field
                    // prerequisites are checked per packet by xlate.
                    self.check_actions_inner(&Match::new(), &b.actions, false, false)?;
                }
                let mut grp = Group::new(gm.group_id, gm.group_type, gm.buckets.clone(), now_ms);
                if let Some(old) = self.groups.get(&gm.group_id) {
                    // A modify keeps the group's creation time.
                    grp.created_ms = old.created_ms;
                }
                self.set_group(gm.group_id, Some(Arc::new(grp)));
            }
            GroupModCommand::Delete if gm.group_id == OFPG_ALL => {
                // Every rule that sends to a group sends to one of these: the rules the
                // tables' group indexes hold go, in one batch per table.
                let ids: Vec<u32> = self.groups.keys().copied().collect();
                for &id in &ids {
                    self.set_group(id, None);
                }
                if !ids.is_empty() {
                    self.delete_group_rules(None, now_ms);
                }
            }
            GroupModCommand::Delete => {
                let id = gm.group_id;
                if self.groups.contains_key(&id) {
                    self.set_group(id, None);
                    self.delete_group_rules(Some(id), now_ms);
                }
            }
        }
        self.version += 1;
        self.flush_learned(now_ms);
        Ok(())
    }

    /// Each group's `ref_count` for group stats, from the tables' group indexes (see
    /// [`crate::group_index`]): O(groups some rule names), not a pass over the rules. As in
    /// OVS 3.1, it counts group actions in rules, nested ones (`clone(group:1)`) included
    /// and each occurrence once (`actions=group:1,group:1` counts 2); a group chaining to
    /// another does not count. Groups no rule names are absent.
    pub fn group_ref_counts(&self) -> std::collections::HashMap<u32, u32, classifier::IdBuild> {
        let mut n = std::collections::HashMap::default();
        for t in self.tables.iter().filter(|t| !t.group_index().is_empty()) {
            for (g, c) in t.group_index().ref_counts() {
                let e: &mut u32 = n.entry(g).or_insert(0);
                *e = e.saturating_add(u32::try_from(c).unwrap_or(u32::MAX));
            }
        }
        n
    }

    /// Group `id`'s `ref_count` (see [`Ofproto::group_ref_counts`]): O(tables).
    pub fn group_ref_count(&self, id: u32) -> u32 {
        let n: u64 = self
            .tables
            .iter()
            .map(|t| t.group_index().ref_count(id))
            .sum();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// True if group `from` reaches group `to` through chained group actions.
    pub(super) fn reaches(&self, from: u32, to: u32) -> bool {
        let mut stack = vec![from];
        let mut seen = std::collections::HashSet::new();
        while let Some(g) = stack.pop() {
            if g == to {
                return true;
            }
            if !seen.insert(g) {
                continue;
            }
            if let Some(grp) = self.groups.get(&g) {
                stack.extend(grp.chained());
            }
        }
        false
    }

    /// True if group `g` is live (fast-failover watch semantics): some bucket is live.
    pub fn group_live(&self, g: u32, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        self.groups
            .get(&g)
            .is_some_and(|grp| grp.buckets.iter().any(|b| self.bucket_live(b, depth + 1)))
    }

    /// True if a bucket's watched port and group are live (unwatched means live).
    pub fn bucket_live(&self, b: &openflow::Bucket, depth: u32) -> bool {
        let port_ok = b.watch_port == OFPP_ANY || self.port_live(b.watch_port);
        let group_ok = b.watch_group == OFPG_ANY || self.group_live(b.watch_group, depth);
        port_ok && group_ok
    }

    // ---- meters ---------------------------------------------------------------------

    /// Applies a meter_mod. A meter of more than [`MAX_BANDS`] bands is refused with
    /// `OFPMMFC_OUT_OF_BANDS`, an add beyond [`Limits::meters`] with
    /// `OFPMMFC_OUT_OF_METERS`, as OVS's userspace datapath does.
    pub fn meter_mod(&mut self, mm: &MeterMod, now_ms: u64) -> Result<(), OfError> {
        use err::meter_mod_failed as m;
        mm.validate()?;
        if mm.command != MeterModCommand::Delete && mm.bands.len() > MAX_BANDS {
            return Err(OfError::meter_mod_failed(m::OUT_OF_BANDS));
        }
        let pktps = mm.flags.contains(MeterFlags::PKTPS);
        let burst = mm.flags.contains(MeterFlags::BURST);
        let stats = mm.flags.contains(MeterFlags::STATS);
        let bands: Vec<Band> = mm
            .bands
            .iter()
            .map(|b| match *b {
                MeterBand::Drop { rate, burst_size } => {
                    Band::new(BandKind::Drop, rate, burst_size, burst)
                }
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level,
                } => Band::new(BandKind::DscpRemark { prec_level }, rate, burst_size, burst),
            })
            .collect();
        let now_us = now_ms * 1000;
        match mm.command {
            MeterModCommand::Add => {
                if self.meters.contains_key(&mm.meter_id) {
                    return Err(OfError::meter_mod_failed(m::METER_EXISTS));
                }
                if self.meters.len() >= self.limits.meters as usize {
                    return Err(OfError::meter_mod_failed(m::OUT_OF_METERS));
                }
                let live = LiveMeter::new(mm.meter_id, pktps, burst, stats, &bands, now_us);
                self.set_meter(mm.meter_id, Some((Arc::new(live), mm.clone())));
            }
            MeterModCommand::Modify => match self.meters.get(&mm.meter_id) {
                Some(meter) => {
                    let live = meter.reconfigured(pktps, burst, stats, &bands, now_us);
                    self.set_meter(mm.meter_id, Some((Arc::new(live), mm.clone())));
                }
                None => return Err(OfError::meter_mod_failed(m::UNKNOWN_METER)),
            },
            MeterModCommand::Delete if mm.meter_id == OFPM_ALL => {
                // The rules using any meter, through the tables' meter indexes.
                let ids: Vec<u32> = self.meters.keys().copied().collect();
                for &id in &ids {
                    self.set_meter(id, None);
                }
                if !ids.is_empty() {
                    self.delete_meter_rules(None, now_ms);
                }
            }
            MeterModCommand::Delete => {
                let id = mm.meter_id;
                if self.meters.contains_key(&id) {
                    self.set_meter(id, None);
                    self.delete_meter_rules(Some(id), now_ms);
                }
            }
        }
        self.version += 1;
        self.flush_learned(now_ms);
        Ok(())
    }

    /// Number of rules using each meter, from the tables' meter indexes.
    pub fn meter_flow_counts(&self) -> std::collections::HashMap<u32, usize> {
        let mut n = std::collections::HashMap::new();
        for (id, k) in self.tables.iter().flat_map(|t| t.meter_index().counts()) {
            *n.entry(id).or_insert(0) += k;
        }
        n
    }

    /// Number of rules using meter `id`.
    pub fn meter_flow_count(&self, id: u32) -> usize {
        self.tables
            .iter()
            .map(|t| t.meter_index().n_rules_of(id))
            .sum()
    }
}

#[cfg(test)]
#[path = "group_index_tests.rs"]
mod group_index_tests;
