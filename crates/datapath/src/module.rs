//! The switching-logic interface: what a bridge's module must provide.
//!
//! mSwitch splits a switch into a *fabric* (moving batches between ports) and *switching logic*
//! (deciding where each packet goes). [`SwitchLogic`] is that second half. Its shape follows
//! the classic netmap bridge operations — a batch lookup, a configuration entry point, and
//! callbacks when a port comes or goes — but destinations are a typed [`Dest`] rather than
//! magic port numbers.
//!
//! ## Contract
//! * [`SwitchLogic::lookup`] is called once per received batch with one slot in `dests` per
//!   packet. It may rewrite packets in place (e.g. strip a VLAN tag) but must not reorder, add
//!   or remove them. It runs on the poll thread: no blocking, no allocation per packet.
//! * [`SwitchLogic::egress`] is called once per (destination port, burst) just before
//!   transmission when [`SwitchLogic::wants_egress`] is true; it may adapt packets to the port
//!   (add or remove a VLAN tag) and free those the port must not carry.
//! * Port indices are the bridge's dense slot numbers (`u16`), stable while the port exists.
//!   After [`SwitchLogic::port_removed`] the module must not name that index again until a
//!   later [`SwitchLogic::port_added`] reuses it.
//! * [`SwitchLogic::command`] runs a module-specific configuration or status verb; it is called
//!   on the poll thread between batches, so it sees a consistent state.

use packet::{Batch, Packet, Pool};
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

/// Where a module that processes packets itself ([`SwitchLogic::process`]) hands them over.
pub trait Emitter {
    /// Queues `pkt` for transmission on port slot `port` (freed if there is no such port).
    fn emit(&mut self, port: u16, pkt: Packet, pool: &mut Pool);
    /// Queues every packet of `pkts` (in order) for port slot `port`, leaving it empty: one
    /// call for a run of packets with the same destination.
    fn emit_run(&mut self, port: u16, pkts: &mut Batch, pool: &mut Pool) {
        for p in pkts.drain() {
            self.emit(port, p, pool);
        }
    }
    /// Frees a packet the module decided to drop (counted as a module drop).
    fn drop_packet(&mut self, pkt: Packet, pool: &mut Pool);
}

/// Switching logic. See the module documentation for the contract.
pub trait SwitchLogic: Send {
    /// The module's name (`learning`, `patch`, `tuple3`, ...).
    fn name(&self) -> &'static str;

    /// Chooses a destination for every packet of `batch` (`dests.len() == batch.len()`).
    fn lookup(&mut self, ctx: &Ctx, batch: &mut Batch, dests: &mut [Dest]);

    /// Whether the fabric should call [`SwitchLogic::process`] instead of
    /// [`SwitchLogic::lookup`]: for modules whose treatment of a packet is more than one
    /// destination (several outputs with rewrites in between, copies to a controller...).
    fn custom_process(&self) -> bool {
        false
    }

    /// Takes every packet of `batch` (all from port slot `in_port`) and emits or drops each
    /// one through `out`; the batch must be empty afterwards. Only called when
    /// [`SwitchLogic::custom_process`] is true.
    fn process(
        &mut self,
        _ctx: &Ctx,
        _in_port: u16,
        batch: &mut Batch,
        pool: &mut Pool,
        out: &mut dyn Emitter,
    ) {
        for p in batch.drain() {
            out.drop_packet(p, pool);
        }
    }

    /// Called on every poll iteration, after the ports were polled: lets a module emit
    /// packets that did not arrive in a receive batch (e.g. packets coming back from a slow
    /// path). Returns how many packets it handled.
    fn poll_pending(&mut self, _ctx: &Ctx, _pool: &mut Pool, _out: &mut dyn Emitter) -> usize {
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
        _out: &mut dyn Emitter,
    ) -> Result<(), String> {
        Err(format!("module '{}' does not run OpenFlow", self.name()))
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

    /// Whether [`SwitchLogic::egress`] must be called.
    fn wants_egress(&self) -> bool {
        false
    }

    /// Adapts a burst for port `port` before it is sent; may free packets into `pool`.
    fn egress(&mut self, _port: u16, _batch: &mut Batch, _pool: &mut Pool) {}

    /// A port joined the bridge.
    fn port_added(&mut self, _info: &PortInfo) {}

    /// A port left the bridge.
    fn port_removed(&mut self, _idx: u16) {}

    /// Periodic housekeeping (aging), called about once a second.
    fn run(&mut self, _ctx: &Ctx) {}

    /// Applies `KEY=VALUE` settings (from `add-br` or `set-bridge`). Unknown keys are errors.
    fn configure(&mut self, key: &str, value: &str) -> Result<(), String> {
        Err(format!(
            "module '{}' has no setting '{key}' (value '{value}')",
            self.name()
        ))
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
    ) -> Result<String, String> {
        Err(format!("module '{}' has no command '{verb}'", self.name()))
    }

    /// Module counters for `show --json` and `dump-ports` (name, value).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// The built-in modules.
pub const MODULES: &[&str] = &["openflow", "learning", "patch", "tuple3"];

/// Creates a built-in module by name.
pub fn create(name: &str) -> Result<Box<dyn SwitchLogic>, String> {
    match name {
        "openflow" => Ok(Box::new(crate::ofmodule::OpenFlow::new(true)?)),
        "learning" => Ok(Box::new(crate::learning::Learning::new())),
        "patch" => Ok(Box::new(crate::patch::Patch::new())),
        "tuple3" => Ok(Box::new(crate::tuple3::Tuple3::new())),
        _ => Err(format!(
            "unknown module '{name}' (known: {})",
            MODULES.join(", ")
        )),
    }
}
