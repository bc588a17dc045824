//! The switching-logic interface: what a bridge's module must provide.
//!
//! mSwitch splits a switch into a *fabric* (moving batches between ports) and *switching logic*
//! (deciding where each packet goes). [`SwitchLogic`] is that second half. Its shape follows
//! the classic netmap bridge operations — a batch lookup, a configuration entry point, and
//! callbacks when a port comes or goes — but destinations are a typed [`Dest`] rather than
//! magic port numbers, and there is one forwarding entry point for every module.
//!
//! ## The forwarding contract (one for every module)
//! * [`SwitchLogic::forward`] is called once per received batch (every packet from one port,
//!   stamped with its slot). The module hands every packet to the fabric's [`Delivery`] sink,
//!   which groups them per destination port; the fabric sends each port's run as one burst
//!   once the module returns. Two ways to use the sink, mixed freely:
//!   - one destination per packet (`learning`, `patch`, `tuple3`): [`Delivery::by_dest`]
//!     takes a closure that fills one [`Dest`] per packet for the whole batch, then makes the
//!     second pass (mSwitch's two passes; a flood is copied per port);
//!   - several stages per packet (`openflow`: rewrites, several outputs, `NORMAL`,
//!     recirculation through its caches, `ct`, tunnel metadata): [`Delivery::emit`],
//!     [`Delivery::emit_run`], [`Delivery::flood`], [`Delivery::drop_packet`] as each output
//!     is decided. Recirculation and the `ct` stage run inside the module; a tunnel is a
//!     port.
//!
//!   A module may rewrite packets in place. It runs on the poll thread: no blocking, no
//!   allocation per packet. A module's egress stage (e.g. `learning`'s VLAN tagging per
//!   port) runs over the pass's bursts with [`Delivery::adapt_bursts`] before it returns.
//! * [`SwitchLogic::poll_pending`] (packets back from a slow path) and
//!   [`SwitchLogic::packet_out`] hand packets to the same sink.
//! * Tracing: with a trace armed on the bridge (`pmd-trace`), the fabric runs its traced
//!   instantiation of the forwarding pass and gives the module one packet at a time with
//!   [`Delivery::tracing`] set; the module may describe its decision with
//!   [`Delivery::note`] (the `openflow` module names the cache that answered and the
//!   actions). Modules that use [`Delivery::by_dest`] are described by their [`Dest`].
//! * Port indices are the bridge's dense slot numbers (`u16`), stable while the port exists.
//!   After [`SwitchLogic::port_removed`] the module must not name that index again until a
//!   later [`SwitchLogic::port_added`] reuses it.
//! * [`SwitchLogic::command`] runs a module-specific configuration or status verb; it is called
//!   on the poll thread between batches, so it sees a consistent state.
//! * Modules are found by name in [`crate::registry`]; this file knows none of them.

pub use crate::error::ModuleError;
use packet::{Batch, Pool};
use std::fmt;

/// Where one packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// Freed, counted as a module drop.
    Drop,
    /// One port (bridge slot index).
    Port(u16),
    /// Every port of the bridge except the ingress one.
    Flood,
}

/// Per-batch context the fabric gives a module.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// Milliseconds since the datapath started (monotonic).
    pub now_ms: u64,
}

/// VLAN behaviour of a port, as in OVS's Port `tag` / `trunks` columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VlanMode {
    /// Carries every VLAN tagged (untagged frames belong to VLAN 0), or only those listed.
    Trunk(Option<Vec<u16>>),
    /// Untagged access port in this VLAN.
    Access(u16),
}

impl VlanMode {
    /// True if this port carries `vlan`.
    pub fn carries(&self, vlan: u16) -> bool {
        match self {
            VlanMode::Access(t) => *t == vlan,
            VlanMode::Trunk(None) => true,
            VlanMode::Trunk(Some(set)) => set.contains(&vlan) || vlan == 0,
        }
    }
}

impl fmt::Display for VlanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VlanMode::Access(t) => write!(f, "tag={t}"),
            VlanMode::Trunk(None) => f.write_str("trunk"),
            VlanMode::Trunk(Some(s)) => {
                let v: Vec<String> = s.iter().map(|x| x.to_string()).collect();
                write!(f, "trunks={}", v.join(","))
            }
        }
    }
}

/// What a module is told about a port.
#[derive(Clone, Debug)]
pub struct PortInfo {
    pub idx: u16,
    pub ofport: u32,
    pub name: String,
    pub vlan: VlanMode,
}

/// Resolves the port names and numbers users type into slot indices, for module commands.
pub trait PortLookup {
    /// A port by name or OpenFlow port number.
    fn resolve(&self, name_or_ofport: &str) -> Option<PortInfo>;
    /// A port by slot index.
    fn info(&self, idx: u16) -> Option<PortInfo>;
}

/// A module-specific command the CLI can invoke (`ferrovs VERB BR ARGS...`).
#[derive(Clone, Copy, Debug)]
pub struct ModuleCommand {
    pub verb: &'static str,
    pub usage: &'static str,
}

pub use crate::bridge::Delivery;

/// Switching logic. See the module documentation for the contract.
pub trait SwitchLogic: Send {
    /// The module's name (`learning`, `patch`, `tuple3`, ...).
    fn name(&self) -> &'static str;

    /// The forwarding contract: takes every packet of `batch` (all received on port slot
    /// [`Delivery::in_port`], in order, each stamped with it) and hands each one — or copies
    /// of it, or nothing — to `out`, which groups them per destination port and sends each
    /// port's run as one burst after the pass. The batch must be empty afterwards.
    ///
    /// A module that picks one [`Dest`] per packet calls [`Delivery::by_dest`] with a
    /// closure filling the destinations of the whole batch (mSwitch's two passes); one that
    /// runs several stages per packet (rewrites, several outputs, recirculation, `ct`)
    /// calls [`Delivery::emit`], [`Delivery::emit_run`], [`Delivery::flood`] and
    /// [`Delivery::drop_packet`] as it decides. When [`Delivery::tracing`] is true the batch
    /// holds one packet being traced, and the module may describe its decision with
    /// [`Delivery::note`].
    ///
    /// Runs on the poll thread: no blocking, no allocation per packet.
    fn forward(&mut self, ctx: &Ctx, batch: &mut Batch, pool: &mut Pool, out: &mut Delivery<'_>);

    /// [`SwitchLogic::forward`] for a *uniform* batch: an encapsulating tunnel port's outer
    /// packets of one header template (see `netdev::tunnel::direct`), which differ only in
    /// their L4 source port, lengths and checksums. A module may decide once for the whole
    /// batch when its decision provably ignores those fields; the default forwards it
    /// packet by packet.
    fn forward_uniform(
        &mut self,
        ctx: &Ctx,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) {
        self.forward(ctx, batch, pool, out);
    }

    /// Called on every poll iteration, after the ports were polled: lets a module emit
    /// packets that did not arrive in a receive batch (e.g. packets coming back from a slow
    /// path). Returns how many packets it handled.
    fn poll_pending(&mut self, _ctx: &Ctx, _pool: &mut Pool, _out: &mut Delivery<'_>) -> usize {
        0
    }

    /// A replica of this module for another poll thread serving the same bridge: it shares
    /// what must be shared (tables, learned addresses) and owns its caches and counters. It
    /// learns the bridge's ports through [`SwitchLogic::port_added`] as they are attached to
    /// its copy of the bridge. `None` (the default): the module's state belongs to one
    /// thread, so its bridge is served by one poll thread.
    fn fork(&mut self) -> Option<Box<dyn SwitchLogic>> {
        None
    }

    /// Runs a packet-out: `frame` as if it came in on OpenFlow port `in_port`
    /// (`OFPP_CONTROLLER` for none), through datapath `actions` the control plane already
    /// translated from the OpenFlow ones (on its own thread, so the poll thread never waits
    /// for the OpenFlow state). Only the `openflow` module supports it.
    fn packet_out(
        &mut self,
        _ctx: &Ctx,
        _in_port: u32,
        _frame: &[u8],
        _actions: &[ofproto::DpAction],
        _pool: &mut Pool,
        _out: &mut Delivery<'_>,
    ) -> Result<(), ModuleError> {
        Err(ModuleError::NotOpenFlow(self.name()))
    }

    /// True while the module has packets in flight outside the poll thread (e.g. upcalls).
    fn busy(&self) -> bool {
        false
    }

    /// The poll thread goes to sleep (`true`: no batch is in progress until it wakes) or
    /// woke up (`false`).
    fn park(&mut self, _parked: bool) {}

    /// A port's carrier went up or down.
    fn port_status(&mut self, _idx: u16, _up: bool) {}

    /// A port joined the bridge.
    fn port_added(&mut self, _info: &PortInfo) {}

    /// A port left the bridge.
    fn port_removed(&mut self, _idx: u16) {}

    /// Periodic housekeeping (aging), called about once a second.
    fn run(&mut self, _ctx: &Ctx) {}

    /// Applies `KEY=VALUE` settings (from `add-br` or `set-bridge`). Unknown keys are errors.
    fn configure(&mut self, key: &str, value: &str) -> Result<(), ModuleError> {
        Err(ModuleError::NoSuchSetting {
            module: self.name(),
            key: key.to_string(),
            value: value.to_string(),
        })
    }

    /// The verbs [`SwitchLogic::command`] accepts.
    fn commands(&self) -> &'static [ModuleCommand] {
        &[]
    }

    /// Runs a module verb with its arguments (after the bridge name).
    fn command(
        &mut self,
        verb: &str,
        _args: &[String],
        _json: bool,
        _ctx: &Ctx,
        _ports: &dyn PortLookup,
    ) -> Result<String, ModuleError> {
        Err(ModuleError::NoSuchVerb {
            module: self.name(),
            verb: verb.to_string(),
        })
    }

    /// Module counters for `show --json` and `dump-ports` (name, value).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
