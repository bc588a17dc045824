//! [`Ofproto`]: one bridge's OpenFlow state — tables, groups, meters, ports — and the
//! OpenFlow 1.3 semantics of changing it (flow_mod, group_mod, meter_mod, expiry).
//!
//! Every change is validated completely before anything is modified: a flow_mod that fails
//! (bad match, unknown group, overlap...) returns the spec's error and leaves every table as
//! it was. Each successful change bumps [`Ofproto::version`], which caches use to know their
//! contents may be stale. [`Ofproto::atomically`] extends that to a sequence of changes
//! (bundles): all of them or none.

mod buckets;
mod learned;
mod txn;
pub mod versions;

use crate::group::Group;
use crate::meter::{Band, BandKind, LiveMeter, Meter, MeterMap, MeterTable};
use crate::rule::{Rule, RuleStats};
use crate::table::Table;
use classifier::Match as CMatch;
use openflow::actions::{
    OFPG_ALL, OFPG_ANY, OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL,
    OFPP_MAX, OFPP_NORMAL, OFPP_TABLE,
};
use openflow::messages::err;
use openflow::messages::{OFPM_ALL, OFPTT_ALL};
use openflow::{
    Action, FlowMod, FlowModCommand, FlowModFlags, GroupMod, GroupModCommand, Instruction, Match,
    MatchField, MeterBand, MeterFlags, MeterMod, MeterModCommand, OfError,
};
use packet::flow::FlowKey;
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// `delete_all` frees tables of at least this many rules on another thread.
const DEFER_FREE_RULES: usize = 10_000;

/// Number of flow tables (0..=254).
pub const N_TABLES: usize = 255;
/// How many flow-removed records and packet-ins are kept for the connection layer.
pub const LOG_CAPACITY: usize = 4096;

/// What ofproto knows of a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfPort {
    pub ofport: u32,
    pub name: String,
    /// Carrier up.
    pub live: bool,
    /// Excluded from FLOOD (OFPPC_NO_FLOOD).
    pub no_flood: bool,
    /// Administratively down (OFPPC_PORT_DOWN): nothing is sent to it, and it is not live
    /// for fast-failover, whatever its carrier says.
    pub admin_down: bool,
}

/// Why a rule left its table (`ofp_flow_removed_reason`, plus OVS's group/meter reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovedReason {
    IdleTimeout = 0,
    HardTimeout = 1,
    Delete = 2,
    GroupDelete = 3,
    MeterDelete = 4,
}

/// A rule that was removed, for flow_removed messages.
#[derive(Clone, Debug)]
pub struct FlowRemoved {
    pub rule: Arc<Rule>,
    pub reason: RemovedReason,
    pub at_ms: u64,
}

/// What happened to a rule, for flow monitors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEventKind {
    Added,
    Modified,
    Removed(RemovedReason),
}

/// A flow table change, logged while [`Ofproto::set_monitoring`] is on.
#[derive(Clone, Debug)]
pub struct FlowEvent {
    pub kind: FlowEventKind,
    /// The rule as it is after the change (as it was, for a removal).
    pub rule: Arc<Rule>,
}

/// A packet for the controller.
#[derive(Clone, Debug)]
pub struct PacketIn {
    pub data: Vec<u8>,
    pub total_len: usize,
    pub reason: crate::odp::PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub key: FlowKey,
    /// The pipeline fields when the packet was sent.
    pub meta: crate::odp::PipelineMeta,
    /// A `controller(...)` action's reason, controller id, user data and continuation.
    pub extra: Option<Box<crate::odp::PinExtra>>,
}

/// What a successful flow_mod did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowModResult {
    pub added: usize,
    pub modified: usize,
    pub deleted: usize,
}

/// See the module documentation.
pub struct Ofproto {
    tables: Vec<Table>,
    groups: BTreeMap<u32, Group>,
    meters: BTreeMap<u32, Arc<LiveMeter>>,
    /// The meters as the datapath sees them, republished after each meter change.
    meter_table: MeterTable,
    meter_specs: BTreeMap<u32, MeterMod>,
    ports: BTreeMap<u32, OfPort>,
    next_id: u64,
    version: u64,
    /// Bumped by every change to groups, meters, ports or a table's settings: a lagging copy
    /// copies those only when it differs (see [`versions`]).
    meta_gen: u64,
    removed: VecDeque<FlowRemoved>,
    /// Flow table changes for flow monitors (empty unless `monitoring`).
    flow_events: VecDeque<FlowEvent>,
    monitoring: bool,
    /// Flow events dropped because nobody took them in time.
    pub flow_event_overflow: u64,
    packet_ins: VecDeque<PacketIn>,
    pub packet_in_overflow: u64,
    /// Send packets whose TTL would expire to the controller (OFPC_INVALID_TTL_TO_CONTROLLER).
    pub invalid_ttl_to_controller: bool,
    /// Bytes of a table-miss packet sent to the controller.
    pub miss_send_len: u16,
    /// Fail-open (standalone fail-mode with its controllers unreachable): every packet is
    /// switched by NORMAL, ignoring the tables. Set through [`Ofproto::set_fail_open`].
    fail_open: bool,
    /// The TLV table (`tun_metadata` maps), edited by Nicira TLV-table mods.
    pub tlv: crate::tlv::TlvTable,
    /// Recirculation ids and the pipeline state they resume with (shared by copies).
    pub recirc: Arc<crate::recirc::RecircIds>,
    /// Flows per (table, cookie) of `learn(...,delete_learned)` (see [`learned`]).
    learners: BTreeMap<(u8, u64), usize>,
    /// Pairs whose last learner went, for the operation's end to flush.
    dead_learned: Vec<(u8, u64)>,
}

impl Default for Ofproto {
    fn default() -> Self {
        Ofproto::new()
    }
}

fn fm_err(code: u16) -> OfError {
    OfError::flow_mod_failed(code)
}

impl Ofproto {
    /// An empty switch: no rules, groups, meters or ports.
    pub fn new() -> Ofproto {
        Ofproto {
            tables: (0..N_TABLES).map(|i| Table::new(i as u8)).collect(),
            groups: BTreeMap::new(),
            meters: BTreeMap::new(),
            meter_table: MeterTable::default(),
            meter_specs: BTreeMap::new(),
            ports: BTreeMap::new(),
            next_id: 1,
            version: 1,
            meta_gen: 0,
            removed: VecDeque::new(),
            flow_events: VecDeque::new(),
            monitoring: false,
            flow_event_overflow: 0,
            packet_ins: VecDeque::new(),
            packet_in_overflow: 0,
            invalid_ttl_to_controller: false,
            miss_send_len: 128,
            fail_open: false,
            tlv: crate::tlv::TlvTable::default(),
            recirc: Arc::default(),
            learners: BTreeMap::new(),
            dead_learned: Vec::new(),
        }
    }

    /// A new bridge's state as OVS sets it up: table 0 holds `priority=0,actions=NORMAL`.
    pub fn with_default_flow(now_ms: u64) -> Ofproto {
        let mut o = Ofproto::new();
        let mut fm = FlowMod::new(FlowModCommand::Add);
        fm.priority = 0;
        fm.instructions = vec![Instruction::ApplyActions(vec![Action::output(OFPP_NORMAL)])];
        // A constant, valid flow_mod: it cannot fail.
        let _ = o.flow_mod(&fm, now_ms);
        o
    }

    /// Changes whenever rules, groups, meters or ports change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether fail-open is engaged (see the field).
    pub fn fail_open(&self) -> bool {
        self.fail_open
    }

    /// Engages or releases fail-open; a change bumps the version so caches revalidate.
    pub fn set_fail_open(&mut self, on: bool) {
        if self.fail_open != on {
            self.fail_open = on;
            self.version += 1;
        }
    }

    /// The tables.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// One table.
    pub fn table(&self, id: u8) -> Option<&Table> {
        self.tables.get(usize::from(id))
    }

    /// One table, writable (its miss behaviour and name).
    pub fn table_mut(&mut self, id: u8) -> Option<&mut Table> {
        self.version += 1;
        self.meta_gen += 1;
        self.tables.get_mut(usize::from(id))
    }

    /// The groups.
    pub fn groups(&self) -> &BTreeMap<u32, Group> {
        &self.groups
    }

    /// A snapshot of every meter (configuration and counters).
    pub fn meters(&self) -> BTreeMap<u32, Meter> {
        self.meters
            .iter()
            .map(|(id, m)| (*id, m.snapshot()))
            .collect()
    }

    /// True if meter `id` exists.
    pub fn has_meter(&self, id: u32) -> bool {
        self.meters.contains_key(&id)
    }

    /// The meter_mod each meter was last configured with (for dump-meters).
    pub fn meter_specs(&self) -> &BTreeMap<u32, MeterMod> {
        &self.meter_specs
    }

    /// The datapath's handle on the meters: it runs them from any thread without the
    /// lock this `Ofproto` is kept behind (see [`crate::meter`]).
    pub fn meter_table(&self) -> MeterTable {
        self.meter_table.clone()
    }

    /// Publishes the meters to the datapath after a change.
    pub(crate) fn publish_meters(&self) {
        let map: MeterMap = self
            .meters
            .iter()
            .map(|(id, m)| (*id, Arc::clone(m)))
            .collect();
        self.meter_table.publish(map);
    }

    /// The ports.
    pub fn ports(&self) -> &BTreeMap<u32, OfPort> {
        &self.ports
    }

    /// Adds or updates a port.
    pub fn set_port(&mut self, p: OfPort) {
        if self.ports.get(&p.ofport) != Some(&p) {
            self.ports.insert(p.ofport, p);
            self.version += 1;
            self.meta_gen += 1;
        }
    }

    /// Removes a port.
    pub fn remove_port(&mut self, ofport: u32) {
        if self.ports.remove(&ofport).is_some() {
            self.version += 1;
            self.meta_gen += 1;
        }
    }

    /// True if the port exists, has carrier and is not administratively down.
    pub fn port_live(&self, ofport: u32) -> bool {
        self.ports
            .get(&ofport)
            .is_some_and(|p| p.live && !p.admin_down)
    }

    /// Takes the flow-removed records logged so far.
    pub fn take_removed(&mut self) -> Vec<FlowRemoved> {
        self.removed.drain(..).collect()
    }

    /// Queues a packet for the controller (bounded; overflow is counted).
    pub fn push_packet_in(&mut self, p: PacketIn) {
        if self.packet_ins.len() >= LOG_CAPACITY {
            self.packet_in_overflow += 1;
            return;
        }
        self.packet_ins.push_back(p);
    }

    /// Takes the queued packet-ins.
    pub fn take_packet_ins(&mut self) -> Vec<PacketIn> {
        self.packet_ins.drain(..).collect()
    }

    /// Turns the flow event log on or off (off empties it).
    pub fn set_monitoring(&mut self, on: bool) {
        self.monitoring = on;
        if !on {
            self.flow_events.clear();
        }
    }

    /// Takes the flow events logged so far.
    pub fn take_flow_events(&mut self) -> Vec<FlowEvent> {
        self.flow_events.drain(..).collect()
    }

    fn log_event(&mut self, kind: FlowEventKind, rule: &Arc<Rule>) {
        if !self.monitoring {
            return;
        }
        if self.flow_events.len() >= LOG_CAPACITY {
            self.flow_events.pop_front();
            self.flow_event_overflow += 1;
        }
        self.flow_events.push_back(FlowEvent {
            kind,
            rule: Arc::clone(rule),
        });
    }

    /// Logs a rule's removal for flow monitors and, if it asked, for flow_removed.
    fn removed(&mut self, r: Arc<Rule>, reason: RemovedReason, at_ms: u64) {
        self.log_event(FlowEventKind::Removed(reason), &r);
        if r.flags.contains(FlowModFlags::SEND_FLOW_REM) {
            self.log_removed(r, reason, at_ms);
        }
    }

    fn log_removed(&mut self, rule: Arc<Rule>, reason: RemovedReason, at_ms: u64) {
        if self.removed.len() >= LOG_CAPACITY {
            self.removed.pop_front();
        }
        self.removed.push_back(FlowRemoved {
            rule,
            reason,
            at_ms,
        });
    }

    // ---- flow_mod -------------------------------------------------------------------

    /// Applies a flow_mod at time `now_ms`.
    pub fn flow_mod(&mut self, fm: &FlowMod, now_ms: u64) -> Result<FlowModResult, OfError> {
        self.flow_mod_cow(Cow::Borrowed(fm), now_ms)
    }

    /// [`Ofproto::flow_mod`] of a flow_mod the caller no longer needs: an add keeps its match
    /// and instructions instead of copying them (a bundle of 100K adds then leaves no 100K
    /// freed copies behind).
    pub fn flow_mod_owned(&mut self, fm: FlowMod, now_ms: u64) -> Result<FlowModResult, OfError> {
        self.flow_mod_cow(Cow::Owned(fm), now_ms)
    }

    fn flow_mod_cow(
        &mut self,
        fm: Cow<'_, FlowMod>,
        now_ms: u64,
    ) -> Result<FlowModResult, OfError> {
        self.tlv.check_flow(&fm.match_, &fm.instructions)?;
        if self.tlv.needs_normalize(&fm.match_) {
            let mut fm = fm.into_owned();
            fm.match_ = self.tlv.normalize(&fm.match_);
            return self.flow_mod_cow(Cow::Owned(fm), now_ms);
        }
        fm.validate()?;
        let r = self.flow_mod_inner(fm, now_ms);
        self.flush_learned(now_ms);
        r
    }

    fn flow_mod_inner(
        &mut self,
        fm: Cow<'_, FlowMod>,
        now_ms: u64,
    ) -> Result<FlowModResult, OfError> {
        match fm.command {
            FlowModCommand::Add => self.add(fm, now_ms),
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => self.modify(&fm, now_ms),
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                let n = self.delete(&fm, RemovedReason::Delete, now_ms);
                Ok(FlowModResult {
                    deleted: n,
                    ..Default::default()
                })
            }
        }
    }

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
                let Some(table) = self.tables.get(usize::from(fm.table_id)) else {
                    return Err(fm_err(err::flow_mod_failed::BAD_TABLE_ID));
                };
                self.check_instructions(&fm.match_, &fm.instructions)?;
                if fm.flags.contains(FlowModFlags::CHECK_OVERLAP) {
                    let existing = table
                        .find_strict(&fm.match_, fm.priority, &self.tlv)
                        .map(|r| r.id);
                    if table.iter().any(|r| {
                        r.priority == fm.priority
                            && Some(r.id) != existing
                            && r.match_.overlaps(&fm.match_)
                    }) {
                        return Err(fm_err(err::flow_mod_failed::OVERLAP));
                    }
                }
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

    /// Checks instructions against switch state: groups and meters exist, output ports
    /// are usable, set_field prerequisites hold given the match and preceding actions.
    fn check_instructions(&self, m: &Match, insts: &[Instruction]) -> Result<(), OfError> {
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

    fn check_actions_inner(
        &self,
        m: &Match,
        acts: &[Action],
        packet_out: bool,
        prereqs: bool,
    ) -> Result<(), OfError> {
        self.tlv.check_actions(acts)?;
        let mut m = m.clone();
        // VLAN fields known before each push, so that a pop brings them back (as OVS
        // tracks its tag stack: `dl_vlan=10,actions=push_vlan,pop_vlan,mod_vlan_pcp:4` still
        // knows the tag is there).
        let mut vlan_stack: Vec<(Option<MatchField>, Option<MatchField>)> = Vec::new();
        for a in acts {
            a.validate()?;
            match *a {
                Action::Meter(id) if !self.meters.contains_key(&id) => {
                    return Err(OfError::meter_mod_failed(
                        err::meter_mod_failed::UNKNOWN_METER,
                    ));
                }
                Action::Output { port, .. } => {
                    let ok = (port > 0 && port <= OFPP_MAX)
                        || matches!(
                            port,
                            OFPP_IN_PORT
                                | OFPP_NORMAL
                                | OFPP_FLOOD
                                | OFPP_ALL
                                | OFPP_CONTROLLER
                                | OFPP_LOCAL
                        )
                        || (packet_out && port == OFPP_TABLE);
                    if !ok {
                        return Err(OfError::bad_action(err::bad_action::BAD_OUT_PORT));
                    }
                }
                Action::Group(g) if !self.groups.contains_key(&g) => {
                    return Err(OfError::bad_action(err::bad_action::BAD_OUT_GROUP));
                }
                Action::PushVlan(_) => {
                    vlan_stack.push((
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
                Action::PopVlan => {
                    m.remove(openflow::Field::VlanVid);
                    m.remove(openflow::Field::VlanPcp);
                    if let Some((vid, pcp)) = vlan_stack.pop() {
                        for f in [vid, pcp].into_iter().flatten() {
                            m.set_masked(f.field, f.value, f.mask_bits());
                        }
                    }
                }
                Action::PushMpls(et) | Action::PopMpls(et) => {
                    m.set_exact(openflow::Field::EthType, u128::from(et));
                }
                Action::PushPbb(et) => {
                    m.set_exact(openflow::Field::EthType, u128::from(et));
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
                        m.set_exact(field, value);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn make_rule(&mut self, fm: Cow<'_, FlowMod>, table_id: u8, now_ms: u64) -> Rule {
        let id = self.next_id;
        self.next_id += 1;
        let (priority, cookie, idle_timeout, hard_timeout, flags) = (
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
        Rule {
            id,
            table_id,
            priority,
            match_,
            cookie,
            idle_timeout,
            hard_timeout,
            flags,
            instructions,
            created_ms: now_ms,
            modified_ms: now_ms,
            stats: Arc::new(RuleStats::default()),
        }
    }

    fn add(&mut self, fm: Cow<'_, FlowMod>, now_ms: u64) -> Result<FlowModResult, OfError> {
        let tid = fm.table_id;
        if usize::from(tid) >= N_TABLES {
            return Err(fm_err(err::flow_mod_failed::BAD_TABLE_ID));
        }
        self.check_instructions(&fm.match_, &fm.instructions)?;
        let table = &self.tables[usize::from(tid)];
        let existing = table
            .find_strict(&fm.match_, fm.priority, &self.tlv)
            .map(|r| r.id);
        if fm.flags.contains(FlowModFlags::CHECK_OVERLAP) {
            let overlap = table.iter().any(|r| {
                r.priority == fm.priority && Some(r.id) != existing && r.match_.overlaps(&fm.match_)
            });
            if overlap {
                return Err(fm_err(err::flow_mod_failed::OVERLAP));
            }
        }
        if existing.is_none() && table.len() >= table.max_entries {
            return Err(fm_err(err::flow_mod_failed::TABLE_FULL));
        }
        let rule = self.make_rule(fm, tid, now_ms);
        let table = &mut self.tables[usize::from(tid)];
        // An identical entry is replaced: the new one starts with fresh counters and
        // duration, and no flow_removed is sent for the old one (OpenFlow 1.3 §6.4).
        let replaced = existing.and_then(|old| table.remove(old));
        let rule = Arc::new(rule);
        let (key, mask) = crate::tun_md::match_to_key(&rule.match_, &self.tlv);
        table.insert(Arc::clone(&rule), CMatch::from_flow(&key, &mask));
        if let Some(old) = replaced {
            self.unref_learns(&old);
        }
        self.ref_learns(&rule);
        self.log_event(FlowEventKind::Added, &rule);
        self.version += 1;
        Ok(FlowModResult {
            added: 1,
            ..Default::default()
        })
    }

    /// Rules a modify/delete selects: strict = same match and priority; otherwise every
    /// rule whose match refines the flow_mod's. Cookie, out_port and out_group filter.
    fn select(&self, fm: &FlowMod) -> Vec<(u8, u64)> {
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

    fn modify(&mut self, fm: &FlowMod, now_ms: u64) -> Result<FlowModResult, OfError> {
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

    fn delete(&mut self, fm: &FlowMod, reason: RemovedReason, now_ms: u64) -> usize {
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
    /// period, so `del-flows` of a million rules answers in the time it takes to list them.
    fn delete_all(&mut self, table_id: u8, reason: RemovedReason, now_ms: u64) -> usize {
        let mut n = 0;
        let mut graveyard = Vec::new();
        for t in &mut self.tables {
            if (table_id != OFPTT_ALL && t.id != table_id) || t.is_empty() {
                continue;
            }
            n += t.len();
            graveyard.push(t.take_all());
        }
        if n == 0 {
            return 0;
        }
        let wanted = self.monitoring;
        for old in &graveyard {
            for r in old.iter().map(|r| r.payload()) {
                self.unref_learns(r);
                if wanted || r.flags.contains(FlowModFlags::SEND_FLOW_REM) {
                    self.removed(Arc::clone(r), reason, now_ms);
                }
            }
        }
        self.version += 1;
        if n >= DEFER_FREE_RULES {
            let spawned = std::thread::Builder::new()
                .name("free-rules".into())
                .spawn(move || drop(graveyard));
            // If no thread can be made, the closure (and the tables) drop here instead.
            drop(spawned);
        }
        n
    }

    fn delete_where(
        &mut self,
        pred: impl Fn(&Rule) -> bool,
        reason: RemovedReason,
        now_ms: u64,
    ) -> usize {
        let mut victims = Vec::new();
        for t in &self.tables {
            for r in t.iter() {
                if pred(r) {
                    victims.push((t.id, r.id));
                }
            }
        }
        for &(tid, id) in &victims {
            if let Some(r) = self.tables[usize::from(tid)].remove(id) {
                self.unref_learns(&r);
                self.removed(r, reason, now_ms);
            }
        }
        if !victims.is_empty() {
            self.version += 1;
        }
        victims.len()
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

    /// Applies a group_mod.
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
                let grp = Group::new(gm.group_id, gm.group_type, gm.buckets.clone(), now_ms);
                match self.groups.get_mut(&gm.group_id) {
                    Some(old) if gm.command == GroupModCommand::Modify => {
                        let created = old.created_ms;
                        *old = grp;
                        old.created_ms = created;
                    }
                    _ => {
                        self.groups.insert(gm.group_id, grp);
                    }
                }
            }
            GroupModCommand::Delete => {
                let ids: Vec<u32> = if gm.group_id == OFPG_ALL {
                    self.groups.keys().copied().collect()
                } else {
                    vec![gm.group_id]
                };
                for id in ids {
                    if self.groups.remove(&id).is_some() {
                        self.delete_where(|r| r.uses_group(id), RemovedReason::GroupDelete, now_ms);
                    }
                }
            }
        }
        self.version += 1;
        self.meta_gen += 1;
        self.flush_learned(now_ms);
        Ok(())
    }

    /// True if group `from` reaches group `to` through chained group actions.
    fn reaches(&self, from: u32, to: u32) -> bool {
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

    /// Applies a meter_mod.
    pub fn meter_mod(&mut self, mm: &MeterMod, now_ms: u64) -> Result<(), OfError> {
        use err::meter_mod_failed as m;
        mm.validate()?;
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
                self.meters.insert(
                    mm.meter_id,
                    Arc::new(LiveMeter::new(
                        mm.meter_id,
                        pktps,
                        burst,
                        stats,
                        &bands,
                        now_us,
                    )),
                );
                self.meter_specs.insert(mm.meter_id, mm.clone());
            }
            MeterModCommand::Modify => match self.meters.get_mut(&mm.meter_id) {
                Some(meter) => {
                    *meter = Arc::new(meter.reconfigured(pktps, burst, stats, &bands, now_us));
                    self.meter_specs.insert(mm.meter_id, mm.clone());
                }
                None => return Err(OfError::meter_mod_failed(m::UNKNOWN_METER)),
            },
            MeterModCommand::Delete => {
                let ids: Vec<u32> = if mm.meter_id == OFPM_ALL {
                    self.meters.keys().copied().collect()
                } else {
                    vec![mm.meter_id]
                };
                for id in ids {
                    if self.meters.remove(&id).is_some() {
                        self.meter_specs.remove(&id);
                        self.delete_where(
                            |r| r.meter() == Some(id),
                            RemovedReason::MeterDelete,
                            now_ms,
                        );
                    }
                }
            }
        }
        self.publish_meters();
        self.version += 1;
        self.meta_gen += 1;
        self.flush_learned(now_ms);
        Ok(())
    }

    /// Number of rules using each meter, in one pass over the tables.
    pub fn meter_flow_counts(&self) -> std::collections::HashMap<u32, usize> {
        let mut n = std::collections::HashMap::new();
        for id in self
            .tables
            .iter()
            .flat_map(|t| t.iter())
            .filter_map(|r| r.meter())
        {
            *n.entry(id).or_insert(0) += 1;
        }
        n
    }

    /// Number of rules using meter `id`.
    pub fn meter_flow_count(&self, id: u32) -> usize {
        self.tables
            .iter()
            .flat_map(|t| t.iter())
            .filter(|r| r.meter() == Some(id))
            .count()
    }
}
