//! # netdev — port providers
//!
//! A *port* is where packets enter and leave a bridge. Every kind of port implements one trait,
//! [`Port`]: receive a batch, transmit a batch, report statistics and link state. The fabric
//! (`datapath`) never knows which kind it is talking to.
//!
//! | type | what it is |
//! |---|---|
//! | `null` | a sink that frees what it is given; with `rx_gen=LEN` also a generator |
//! | `pcap` | replays `rx_pcap=FILE` from memory (`infinite_rx=true` loops), writes `tx_pcap=FILE` |
//! | `system` | any Linux interface through AF_PACKET with TPACKET_V3 mmap rings |
//! | `internal` | a TAP device: the host stack's port on the bridge |
//! | `afxdp` | any Linux interface through AF_XDP sockets and an XDP redirect program |
//! | `memif` | a shared-memory packet interface (memif protocol) to another process |
//! | `dpdkvhostuser` | a VM's virtio-net NIC over vhost-user; the switch listens on `<rundir>/NAME` |
//! | `dpdkvhostuserclient` | the same, connecting to `vhost-server-path` and reconnecting |
//! | `vxlan`, `geneve`, `gre` | tunnel ports over an internal port's address (see [`tunnel`]) |
//!
//! ## Contract
//! * `rx_batch` appends at most `batch.room()` packets, taking buffers from the caller's pool;
//!   it never blocks. `tx_batch` consumes every packet of the batch (sent, or dropped and
//!   counted) and frees buffers into the caller's pool; it never blocks either.
//! * A port is used by one thread at a time (`&mut self`); it is `Send` so the control plane
//!   can open it on its own thread and hand it to a poll thread.
//! * Several poll threads: a port that can be shared gives out more *handles*
//!   ([`Port::share`]), one per thread. A handle transmits through a path of its own (its own
//!   socket, descriptor or queue), so threads never lock against each other to send. The
//!   port's receive queues ([`Port::n_rxq`]) move between handles as whole objects
//!   ([`Port::take_rxq`] / [`Port::put_rxq`]): each queue is polled by exactly one thread,
//!   and its receive counters travel with it. A port's counters are the sum over its handles.
//! * Counters follow OVS's interface statistics: what the port received and transmitted, and
//!   what it dropped or failed on, in each direction.
//! * Opening takes the port's `type` and `KEY=VALUE` options; an unknown key or a bad value is an
//!   error that names it, and nothing is left half-created.

pub mod afxdp;
mod bpf;
pub mod memif;
pub mod null;
pub mod offload;
pub mod pcap;
pub mod pcapfile;
mod rtnl;
mod sys;
pub mod system;
pub mod tap;
pub mod tunnel;
pub mod vhost;
mod xsk;

use packet::{Batch, Pool};
use std::collections::BTreeMap;
use std::fmt;

/// Interface counters, named as in OVS's `Interface:statistics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub rx_errors: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub tx_errors: u64,
}

impl PortStats {
    /// Adds another set of counters to this one.
    pub fn add(&mut self, o: &PortStats) {
        self.rx_packets += o.rx_packets;
        self.rx_bytes += o.rx_bytes;
        self.rx_dropped += o.rx_dropped;
        self.rx_errors += o.rx_errors;
        self.tx_packets += o.tx_packets;
        self.tx_bytes += o.tx_bytes;
        self.tx_dropped += o.tx_dropped;
        self.tx_errors += o.tx_errors;
    }
}

/// Carrier state of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Up,
    Down,
}

impl fmt::Display for LinkState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkState::Up => "up",
            LinkState::Down => "down",
        })
    }
}

/// Why a port could not be opened or configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetdevError {
    /// No provider for this `type`.
    UnknownType(String),
    /// An option this type does not have.
    UnknownOption { kind: &'static str, key: String },
    /// An option with a value that cannot be used; the message says why.
    BadOption { key: String, why: String },
    /// A required option is missing.
    MissingOption {
        kind: &'static str,
        key: &'static str,
    },
    /// The operating system refused (the message names the call and the errno text).
    Os(String),
}

impl fmt::Display for NetdevError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetdevError::UnknownType(t) => write!(
                f,
                "unknown port type '{t}' (known: {})",
                PORT_TYPES.join(", ")
            ),
            NetdevError::UnknownOption { kind, key } => {
                write!(f, "unknown option '{key}' for port type '{kind}'")
            }
            NetdevError::BadOption { key, why } => write!(f, "bad value for '{key}': {why}"),
            NetdevError::MissingOption { kind, key } => {
                write!(f, "port type '{kind}' needs option '{key}'")
            }
            NetdevError::Os(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for NetdevError {}

/// The port types this build knows.
pub const PORT_TYPES: &[&str] = &[
    "system",
    "internal",
    "afxdp",
    "memif",
    "dpdkvhostuser",
    "dpdkvhostuserclient",
    "pcap",
    "null",
    "vxlan",
    "geneve",
    "gre",
];

static RUNDIR: std::sync::RwLock<Option<std::path::PathBuf>> = std::sync::RwLock::new(None);

/// Sets the directory where ports put the sockets they own (`dpdkvhostuser`); the daemon
/// calls it with its `--rundir` before opening ports.
pub fn set_rundir(dir: &std::path::Path) {
    *RUNDIR.write().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
}

/// The run directory set by [`set_rundir`], else `$FERROVS_RUNDIR`, else `/run/ferrovs`.
pub fn rundir() -> std::path::PathBuf {
    if let Some(d) = RUNDIR.read().unwrap_or_else(|e| e.into_inner()).clone() {
        return d;
    }
    std::env::var_os("FERROVS_RUNDIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/run/ferrovs"))
}

/// A port provider. See the module documentation for the contract.
pub trait Port: Send {
    /// The port's name (the interface name for `system`/`internal`).
    fn name(&self) -> &str;

    /// The provider type, as given to `add-port type=`.
    fn kind(&self) -> &'static str;

    /// Receives up to `batch.room()` packets into buffers from `pool`; returns how many.
    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize;

    /// Transmits (or drops and counts) every packet of `batch`, freeing buffers into `pool`.
    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch);

    /// Current counters.
    fn stats(&self) -> PortStats;

    /// Counters particular to this port type, by name, as OVS's custom statistics: added to
    /// the interface's `statistics` column and shown by `dump-ports`. They count for the
    /// whole port, so any handle reports the same values (unlike [`Port::stats`], which each
    /// handle keeps for itself). None by default.
    fn custom_stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Carrier state. Ports without a carrier notion are always up.
    fn link_state(&self) -> LinkState {
        LinkState::Up
    }

    /// Whether the fabric should poll this port for received packets at all.
    fn has_rx(&self) -> bool {
        true
    }

    /// The port's Ethernet address, where it has one.
    fn mac(&self) -> Option<[u8; 6]> {
        None
    }

    /// The kernel interface index, for ports backed by a kernel interface.
    fn ifindex(&self) -> Option<u32> {
        None
    }

    /// The options the port was opened with, for `show`.
    fn options(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Number of receive queues. Each can be polled by a different thread.
    fn n_rxq(&self) -> usize {
        1
    }

    /// Receives from queue `q`, if this handle holds it (otherwise returns 0).
    fn rxq_batch(&mut self, q: usize, pool: &mut Pool, batch: &mut Batch) -> usize {
        if q == 0 {
            self.rx_batch(pool, batch)
        } else {
            0
        }
    }

    /// A descriptor that polls readable (`poll(2)`) when receive queue `q` of this handle
    /// has packets, so an idle poll thread can sleep until traffic arrives. `None` if the
    /// queue has none (the thread then sleeps in short naps instead).
    fn rxq_fd(&self, _q: usize) -> Option<std::os::fd::RawFd> {
        None
    }

    /// A handle on the same port for another poll thread: it transmits through its own path
    /// (no lock shared with this handle on the fast path) and holds no receive queue until
    /// one is put into it. `None` when the port cannot be shared between threads.
    fn share(&mut self) -> Option<Box<dyn Port>> {
        None
    }

    /// Takes receive queue `q` out of this handle, to be put into another handle of the same
    /// port ([`Port::put_rxq`]). `None` if this handle does not hold it or cannot give it up.
    fn take_rxq(&mut self, _q: usize) -> Option<RxqState> {
        None
    }

    /// Puts receive queue `q` (taken from another handle of this port) into this handle.
    /// Gives the state back if it does not belong to this port type.
    fn put_rxq(&mut self, _q: usize, s: RxqState) -> Result<(), RxqState> {
        Err(s)
    }

    /// Writes out anything buffered (e.g. a pcap file) and releases kernel resources.
    /// Called before the port is dropped; dropping must also be safe without it.
    fn close(&mut self) {}
}

/// A receive queue in transit between two handles of one port (see [`Port::take_rxq`]).
/// Only the port type that made it can use it.
pub type RxqState = Box<dyn std::any::Any + Send>;

/// Parses the `n_rxq` option: `1..=max`, default 1.
pub fn parse_n_rxq(opts: &Options, max: usize) -> Result<usize, NetdevError> {
    match opts.get("n_rxq") {
        None => Ok(1),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| NetdevError::BadOption {
                key: "n_rxq".into(),
                why: format!("'{v}' is not a queue count in 1..={max}"),
            }),
    }
}

/// Options given to a port at creation (`KEY=VALUE`), in order-independent form.
pub type Options = BTreeMap<String, String>;

/// Checks that every key of `opts` is in `known`.
pub fn check_options(
    kind: &'static str,
    opts: &Options,
    known: &[&str],
) -> Result<(), NetdevError> {
    for k in opts.keys() {
        if !known.contains(&k.as_str()) {
            return Err(NetdevError::UnknownOption {
                kind,
                key: k.clone(),
            });
        }
    }
    Ok(())
}

/// Parses a boolean option value (`true/false/yes/no/1/0/on/off`).
pub fn parse_bool(key: &str, v: &str) -> Result<bool, NetdevError> {
    match v {
        "true" | "yes" | "1" | "on" => Ok(true),
        "false" | "no" | "0" | "off" => Ok(false),
        _ => Err(NetdevError::BadOption {
            key: key.to_string(),
            why: format!("'{v}' is not a boolean (true/false)"),
        }),
    }
}

/// The IPv4 address of host interface `name` (for agents that name an interface, such as
/// sFlow's `agent` column), or why there is none.
pub fn interface_ipv4(name: &str) -> Result<std::net::Ipv4Addr, String> {
    use std::os::fd::AsRawFd;
    sys::ifreq(name).ok_or_else(|| format!("'{name}' is not a valid interface name"))?;
    let ctl = sys::ctl_socket().map_err(|e| format!("socket(AF_INET): {e}"))?;
    sys::if_ipv4(ctl.as_raw_fd(), name).map_err(|e| format!("interface {name}: {e}"))
}

/// Opens a port of type `kind` named `name` with `opts`.
pub fn open(name: &str, kind: &str, opts: &Options) -> Result<Box<dyn Port>, NetdevError> {
    match kind {
        "null" => Ok(Box::new(null::NullPort::open(name, opts)?)),
        "pcap" => Ok(Box::new(pcap::PcapPort::open(name, opts)?)),
        "system" => Ok(Box::new(system::SystemPort::open(name, opts)?)),
        "internal" => Ok(Box::new(tunnel::underlay::UnderlayPort::wrap(Box::new(
            tap::TapPort::open(name, opts)?,
        )))),
        "afxdp" => Ok(Box::new(afxdp::AfxdpPort::open(name, opts)?)),
        "memif" => Ok(Box::new(memif::MemifPort::open(name, opts)?)),
        vhost::KIND_SERVER | vhost::KIND_CLIENT => {
            Ok(Box::new(vhost::VhostPort::open(name, kind, opts)?))
        }
        _ => match tunnel::proto_of(kind) {
            Some(p) => Ok(Box::new(tunnel::TunnelPort::open(name, p, opts)?)),
            None => Err(NetdevError::UnknownType(kind.to_string())),
        },
    }
}
