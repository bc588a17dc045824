//! Checking a flow_mod (match, instructions, actions) against the switch before anything changes.

use super::*;

impl Ofproto {
    /// Checks that `fm` would succeed, without changing anything.
    pub fn check_flow_mod(&self, fm: &FlowMod) -> Result<(), OfError> {
        self.tlv.check_flow(&fm.match_, &fm.instructions)?;
        if self.tlv.needs_normalize(&fm.match_) {
            let fm = FlowMod {
                match_: self.tlv.normalize(&fm.match_),
                ..fm.clone()
            };
            return self.check_flow_mod(&fm);
        }
        fm.validate()?;
        match fm.command {
            FlowModCommand::Add => {
                let (key, mask) = crate::tun_md::match_to_key(&fm.match_, &self.tlv);
                let cm = CMatch::from_flow(&key, &mask);
                let (m, insts) = (&fm.match_, &fm.instructions);
                self.check_add(fm.table_id, &cm, m, fm.priority, fm.flags, insts)?;
                Ok(())
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                let sel = self.select(fm);
                if sel.is_empty() {
                    return self.check_instructions(&fm.match_, &fm.instructions);
                }
                for (tid, id) in sel {
                    if let Some(r) = self.tables[usize::from(tid)].get(id) {
                        self.check_instructions(&r.match_, &fm.instructions)?;
                    }
                }
                Ok(())
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => Ok(()),
        }
    }

    /// Checks an add against the switch, in this order: table id, the instructions
    /// ([`Ofproto::check_instructions`]), overlap (with `check_overlap`: a rule of the same
    /// priority whose match overlaps, other than the identical one), table size (unless it
    /// replaces). `cm` is the match `m` as a masked flow key. Returns the id of the identical
    /// rule (same match and priority) the add would replace, if any. Shared by every add
    /// path ([`Ofproto::add_rule`]) and by [`Ofproto::check_flow_mod`].
    pub(super) fn check_add(
        &self,
        tid: u8,
        cm: &CMatch<{ packet::flow::FLOW_KEY_WORDS }>,
        m: &Match,
        priority: u16,
        flags: FlowModFlags,
        insts: &[Instruction],
    ) -> Result<Option<u64>, OfError> {
        let Some(table) = self.tables.get(usize::from(tid)) else {
            return Err(fm_err(err::flow_mod_failed::BAD_TABLE_ID));
        };
        self.check_instructions(m, insts)?;
        let existing = table.find_strict_keyed(cm, m, priority).map(|r| r.id);
        if flags.contains(FlowModFlags::CHECK_OVERLAP) {
            let overlap = table
                .iter()
                .any(|r| r.priority == priority && Some(r.id) != existing && r.match_.overlaps(m));
            if overlap {
                return Err(fm_err(err::flow_mod_failed::OVERLAP));
            }
        }
        if existing.is_none() && table.len() >= table.max_entries {
            return Err(fm_err(err::flow_mod_failed::TABLE_FULL));
        }
        Ok(existing)
    }

    /// Checks instructions against switch state: groups and meters exist, output ports
    /// are usable, set_field prerequisites hold given the match and preceding actions.
    pub(super) fn check_instructions(
        &self,
        m: &Match,
        insts: &[Instruction],
    ) -> Result<(), OfError> {
        for i in insts {
            match i {
                Instruction::Meter(id) if !self.meters.contains_key(id) => {
                    return Err(OfError::meter_mod_failed(
                        err::meter_mod_failed::UNKNOWN_METER,
                    ));
                }
                Instruction::ApplyActions(acts) | Instruction::WriteActions(acts) => {
                    self.check_actions(m, acts, false)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Checks a list of actions (`packet_out` allows output to TABLE).
    pub fn check_actions(
        &self,
        m: &Match,
        acts: &[Action],
        packet_out: bool,
    ) -> Result<(), OfError> {
        self.check_actions_inner(m, acts, packet_out, true)
    }

    pub(super) fn check_actions_inner(
        &self,
        m: &Match,
        acts: &[Action],
        packet_out: bool,
        prereqs: bool,
    ) -> Result<(), OfError> {
        self.tlv.check_actions(acts)?;
        // Copied only when an action changes what is known (most lists change nothing).
        let mut m = Cow::Borrowed(m);
        // VLAN fields known before each push, so that a pop brings them back (as OVS
        // tracks its tag stack: `dl_vlan=10,actions=push_vlan,pop_vlan,mod_vlan_pcp:4` still
        // knows the tag is there).
        let mut vlan_stack = VlanStack::new();
        for a in acts {
            a.validate()?;
            match *a {
                Action::Meter(id) if !self.meters.contains_key(&id) => {
                    return Err(OfError::meter_mod_failed(
                        err::meter_mod_failed::UNKNOWN_METER,
                    ));
                }
                Action::Output { port, .. } if !out_port_ok(port, packet_out) => {
                    return Err(OfError::bad_action(err::bad_action::BAD_OUT_PORT));
                }
                Action::Group(g) if !self.groups.contains_key(&g) => {
                    return Err(OfError::bad_action(err::bad_action::BAD_OUT_GROUP));
                }
                Action::PushVlan(_) => push_vlan(m.to_mut(), &mut vlan_stack),
                Action::PopVlan => pop_vlan(m.to_mut(), &mut vlan_stack),
                Action::PushMpls(et) | Action::PopMpls(et) => {
                    m.to_mut()
                        .set_exact(openflow::Field::EthType, u128::from(et));
                }
                Action::PushPbb(et) => {
                    m.to_mut()
                        .set_exact(openflow::Field::EthType, u128::from(et));
                }
                Action::Move { src, dst }
                    if prereqs
                        && !(m.prereqs_met_deep(src.field) && m.prereqs_met_deep(dst.field)) =>
                {
                    return Err(OfError::bad_action(err::bad_action::MATCH_INCONSISTENT));
                }
                Action::StackPush(sf) | Action::StackPop(sf)
                    if prereqs && !m.prereqs_met_deep(sf.field) =>
                {
                    return Err(OfError::bad_action(err::bad_action::MATCH_INCONSISTENT));
                }
                Action::Ct(ref ct) if prereqs => ct.validate_with(&m)?,
                // As OVS: a lookup on the connection's tuple needs a flow that matches a
                // valid connection.
                Action::Resubmit { ct: true, .. } if prereqs && !m.ct_valid() => {
                    return Err(OfError::bad_action(err::bad_action::MATCH_INCONSISTENT));
                }
                Action::Learn(ref l) if prereqs => learned::check_learn(&m, l)?,
                Action::OutputReg { src, .. } if prereqs && !m.prereqs_met_deep(src.field) => {
                    return Err(OfError::bad_action(err::bad_action::MATCH_INCONSISTENT));
                }
                // What a clone does stays inside it: its actions see the match as it is
                // here, and nothing they change is seen after.
                Action::Clone(ref inner) => {
                    self.check_actions_inner(&m, inner, packet_out, prereqs)?
                }
                Action::SetField { field, value, .. } => {
                    if prereqs && !m.prereqs_met_deep(field) {
                        return Err(OfError::bad_action(err::bad_action::MATCH_INCONSISTENT));
                    }
                    if matches!(field, openflow::Field::EthType | openflow::Field::IpProto) {
                        m.to_mut().set_exact(field, value);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Whether an `output` may name `port` (`TABLE` only in a packet-out).
pub(super) fn out_port_ok(port: u32, packet_out: bool) -> bool {
    (port > 0 && port <= OFPP_MAX)
        || matches!(
            port,
            OFPP_IN_PORT | OFPP_NORMAL | OFPP_FLOOD | OFPP_ALL | OFPP_CONTROLLER | OFPP_LOCAL
        )
        || (packet_out && port == OFPP_TABLE)
}

/// The VLAN fields a `check_actions` walk knows, saved per pushed tag.
type VlanStack = Vec<(Option<MatchField>, Option<MatchField>)>;

/// After a `push_vlan`: a tag is present, its PCP unknown; what was known is saved.
fn push_vlan(m: &mut Match, stack: &mut VlanStack) {
    stack.push((
        m.get(openflow::Field::VlanVid).cloned(),
        m.get(openflow::Field::VlanPcp).cloned(),
    ));
    m.remove(openflow::Field::VlanPcp);
    m.set_masked(
        openflow::Field::VlanVid,
        u128::from(openflow::oxm::OFPVID_PRESENT),
        u128::from(openflow::oxm::OFPVID_PRESENT),
    );
}

/// After a `pop_vlan`: the fields known before the matching push come back.
fn pop_vlan(m: &mut Match, stack: &mut VlanStack) {
    m.remove(openflow::Field::VlanVid);
    m.remove(openflow::Field::VlanPcp);
    if let Some((vid, pcp)) = stack.pop() {
        for f in [vid, pcp].into_iter().flatten() {
            m.set_masked(f.field, f.value, f.mask_bits());
        }
    }
}
