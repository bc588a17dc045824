//! [`Ofproto`]: one bridge's OpenFlow state — tables, groups, meters, ports — and the
//! OpenFlow 1.3 semantics of changing it (flow_mod, group_mod, meter_mod, expiry).
//!
//! Every change is validated completely before anything is modified: a flow_mod that fails
//! (bad match, unknown group, overlap...) returns the spec's error and leaves every table as
//! it was. Each successful change bumps [`Ofproto::version`], which caches use to know their
//! contents may be stale. [`Ofproto::atomically`] extends that to a sequence of changes
//! (bundles): all of them or none.
//!
//! ## Files
//! This file holds the state and its accessors and the flow_mod entry points; `check` the
//! validation of a flow_mod, `flow_mod` its application (add, modify, delete, expiry),
//! `group_meter` the TLV, group and meter mods, `buckets`, `learned`, `txn` (bundles) and
//! `versions` (the published snapshots) one job each.

mod adopt;
mod buckets;
mod learned;
mod prepared;
mod txn;
pub mod versions;

mod check;
mod flow_mod;
mod group_meter;

use crate::group::Group;
use crate::meter::{Band, BandKind, LiveMeter, Meter, MeterTable};
use crate::rule::{Rule, RuleStats};
use crate::table::Table;
pub use adopt::BuiltAdds;
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
pub use prepared::{MaskCache, PreparedAdd};
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// `delete_all` frees tables of at least this many rules on another thread.
const DEFER_FREE_RULES: usize = 10_000;

/// Number of flow tables (0..=254).
pub const N_TABLES: usize = 255;
/// How many flow-removed records and packet-ins are kept for the connection layer.
pub const LOG_CAPACITY: usize = 4096;

/// The most groups and meters a bridge holds, and the most bands a meter has. A group_mod or
/// meter_mod that adds one beyond its limit is refused (`OFPGMFC_OUT_OF_GROUPS`,
/// `OFPMMFC_OUT_OF_METERS`, `OFPMMFC_OUT_OF_BANDS`) and changes nothing; the group and meter
/// features replies report these numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Groups of every type together ([`DEFAULT_MAX_GROUPS`] unless set).
    pub groups: u32,
    /// Meters ([`MAX_METERS`] unless set).
    pub meters: u32,
}

/// The most groups by default. OVN gives each load balancer's backend set its own select
/// group (tens of thousands in large deployments); a group costs its buckets' actions plus
/// a few hundred bytes (see docs/ovs-equivalence.md), held once (the writer's and the
/// readers' copies share it) plus an entry in each copy's map, so a full table of small
/// groups stays in the hundreds of megabytes.
pub const DEFAULT_MAX_GROUPS: u32 = 1 << 18;
/// The most buckets in a group, and bucket actions in all: more than one group_mod can
/// carry (a message is at most 64 KiB, a bucket at least 16 bytes, an action 8), so only
/// insert-bucket commands meet them. A group then costs at most what one message can ask for.
pub const MAX_BUCKETS: usize = 4096;
/// See [`MAX_BUCKETS`].
pub const MAX_GROUP_ACTIONS: usize = 8192;
/// The most meters: OVS's userspace datapath's number (262,144).
pub const MAX_METERS: u32 = 1 << 18;
/// The most bands in one meter, as OVS's userspace datapath.
pub const MAX_BANDS: usize = 8;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            groups: DEFAULT_MAX_GROUPS,
            meters: MAX_METERS,
        }
    }
}

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
    /// Shared with the other copy (see [`versions`]): a group is built once.
    groups: BTreeMap<u32, Arc<Group>>,
    meters: BTreeMap<u32, Arc<LiveMeter>>,
    /// The meters as the datapath sees them, republished after each meter change.
    meter_table: MeterTable,
    meter_specs: BTreeMap<u32, MeterMod>,
    ports: BTreeMap<u32, OfPort>,
    next_id: u64,
    version: u64,
    /// Bumped by every change to ports, limits or a table's settings: a lagging copy copies
    /// those only when it differs (see [`versions`]).
    meta_gen: u64,
    /// The group and meter ids changed since the last publication (see [`versions`]).
    changed: versions::IdChanges,
    /// Inside [`Ofproto::atomically`], the old values of the groups and meters it changed.
    undo: Option<txn::IdJournal>,
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
    /// How many groups and meters it takes.
    limits: Limits,
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
            changed: versions::IdChanges::default(),
            undo: None,
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
            limits: Limits::default(),
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

    /// How many groups and meters this switch takes.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sets how many groups and meters this switch takes. Lowering a limit below what is
    /// installed removes nothing: further adds are refused until enough are deleted.
    pub fn set_limits(&mut self, limits: Limits) {
        if self.limits != limits {
            self.limits = limits;
            self.meta_gen += 1;
        }
    }

    /// The groups.
    pub fn groups(&self) -> &BTreeMap<u32, Arc<Group>> {
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

    /// Publishes meter `id` to the datapath after a change to it (its shard only).
    pub(crate) fn publish_meter(&self, id: u32) {
        self.meter_table.set(id, self.meters.get(&id).cloned());
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
}
