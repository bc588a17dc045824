//! Status reports: what the datapath tells about itself, as plain data.
//!
//! The poll threads fill these structs (between two polls, see [`crate::pmd::PmdHandle::call`])
//! and hand them to the control plane, which lays them out as text or JSON (the daemon's
//! `render` module: `show`, `dump-ports`, `pmd-stats-show`, `dpif-netdev/pmd-rxq-show`,
//! `pmd-trace-show`). Nothing
//! here knows a output format; figures that are only arithmetic over counters (percentages,
//! averages) are left to the reader, figures that need the datapath's state (a queue's share
//! of its thread) are computed here.

use crate::bridge::BridgeStats;
use crate::module::VlanMode;
use crate::pollset::PmdStats;
use netdev::{LinkState, PortStats};

/// One bridge of `show`: its module and ports (in slot order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeReport {
    pub name: String,
    /// The switching-logic module's name (`openflow`, `learning`, ...).
    pub module: &'static str,
    pub ports: Vec<PortReport>,
}

/// One port of a [`BridgeReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortReport {
    /// The bridge's slot for it (the fabric's port number).
    pub slot: u16,
    pub name: String,
    pub ofport: u32,
    /// The netdev provider (`system`, `internal`, `pcap`, ...).
    pub kind: &'static str,
    /// The provider's options, as configured.
    pub options: Vec<(String, String)>,
    pub vlan: VlanMode,
    pub link_state: LinkState,
    pub mac: Option<[u8; 6]>,
    pub ifindex: Option<u32>,
}

/// `dump-ports BR`: the bridge's port counters (summed over every poll thread that has a
/// handle on the port), its module's counters and the fabric's.
#[derive(Clone, Debug)]
pub struct PortCountersReport {
    pub bridge: String,
    pub module: &'static str,
    pub module_counters: Vec<(&'static str, u64)>,
    /// The home thread's fabric counters of the bridge.
    pub fabric: BridgeStats,
    /// In slot order.
    pub ports: Vec<PortCounters>,
}

/// One port of a [`PortCountersReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortCounters {
    pub slot: u16,
    pub ofport: u32,
    pub name: String,
    pub stats: PortStats,
    /// The port type's own counters ([`netdev::Port::custom_stats`]).
    pub custom: Vec<(&'static str, u64)>,
}

/// The cache counters of a poll thread's `openflow` bridges, summed, since the last
/// `pmd-stats-clear` (OVS reports one datapath).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub emc_hits: u64,
    pub megaflow_hits: u64,
    pub subtable_lookups: u64,
    pub upcalls: u64,
    pub lost_upcalls: u64,
}

/// One poll thread of `pmd-stats-show`.
#[derive(Clone, Debug)]
pub struct PmdReport {
    /// The core it is pinned to (`None`: unpinned).
    pub core_id: Option<usize>,
    pub stats: PmdStats,
    /// Fabric counters summed over the thread's bridges.
    pub tx_packets: u64,
    pub tx_bursts: u64,
    pub module_drops: u64,
    pub cache: CacheCounters,
    /// The cycle counter's frequency.
    pub tsc_hz: u64,
    pub pool_buffers: usize,
    pub pool_in_use: usize,
}

/// One poll thread of `dpif-netdev/pmd-rxq-show`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmdRxqReport {
    pub core_id: Option<usize>,
    /// It polls a queue pinned to its core (and so no other queues).
    pub isolated: bool,
    /// Its busy share of the last measured interval, in percent.
    pub busy_pct: u64,
    /// Sorted by port name, then queue.
    pub rxqs: Vec<RxqLoad>,
}

/// One receive queue of a [`PmdRxqReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxqLoad {
    pub bridge: String,
    pub port: String,
    pub queue: u16,
    /// Its share of the thread's busy time in the last interval, scaled to the thread's
    /// busy percentage.
    pub usage_pct: u64,
    /// Cycles it used in the last interval.
    pub cycles: u64,
    /// The core `pmd-rxq-affinity` asked for, if any.
    pub pinned: Option<usize>,
}

/// What happened to one traced packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Packets traced on this bridge and thread before this one.
    pub seq: u64,
    /// The ingress port's name.
    pub in_port: String,
    /// The frame's length.
    pub len: usize,
    /// The module's decision, in its words.
    pub decision: String,
    /// The ports the packet (or its copies) was queued for, in the order sent.
    pub outputs: Vec<String>,
    /// The module dropped it.
    pub dropped: bool,
}

/// One poll thread's trace of a bridge: the packets still to trace and the records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTrace {
    /// Packets still to trace.
    pub budget: u64,
    /// The traced packets, oldest first.
    pub records: Vec<TraceRecord>,
}

/// What `pmd-trace-show BR` presents: the trace of bridge `bridge` on each poll thread that
/// serves it (the home thread first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceReport {
    pub bridge: String,
    pub threads: Vec<ThreadTrace>,
}
