//! vhost-user ports: the virtual NIC of a VM (QEMU, or DPDK's `net_virtio_user`) attached
//! to a bridge, with OVS's type names so libvirt, os-vif and every NFV stack configure it
//! unchanged.
//!
//! ## What
//! * `type=dpdkvhostuser`: the switch is the vhost-user *server*; the socket is
//!   `<rundir>/<interface name>`, as OVS puts it in its run directory, and the VM connects.
//! * `type=dpdkvhostuserclient options:vhost-server-path=PATH`: the VM side listens and the
//!   switch connects, retrying every second, so a restarted switch (or VM) finds its peer
//!   again without restarting the other.
//! * Options: `tx-retries-max=N` (0..=32, default 8, as OVS: extra looks for guest buffers
//!   when its receive queue is full), `n_rxq=K` (1..=16, default 1: how many poll threads
//!   may share the guest's transmit queues; guest queue pair `p` belongs to receive queue
//!   `p % K`).
//! * The link is up while queue pair 0 runs in both directions; `statistics` count what the
//!   guest sent (`rx_*`) and what it was given (`tx_*`), drops and refused descriptors, and
//!   (a custom statistic, [`COALESCED`]) how many of the frames given went in super-packets.
//!
//! ## How
//! Files, one job each: [`mem`] maps the guest memory the frontend shares and translates
//! its addresses; [`vring`] holds a virtqueue and runs the burst loops (the descriptor
//! walker); [`backend`] is the vhost-user device state behind the `vhost` crate's request
//! decoder; [`sock`] runs the control thread. This file is the [`Port`] the fabric sees.
//!
//! The guest decides how many queue pairs it uses (`MQ`, up to [`MAX_QP`]): the control
//! thread publishes how many pairs are usable, handle `k` transmits on pair `k % pairs`, and
//! the guest's transmit queues are spread over the port's receive queues. Everything is in
//! poll mode: we never ask the guest to kick us (the `kick` eventfds are kept, not read; a
//! packed ring's device event area says so) and we signal its `call` eventfd only when it
//! asked to be told (`needs_notification`, which honours `EVENT_IDX`). Rings are split, or
//! packed when the frontend acks `VIRTIO_F_RING_PACKED` (`vring::packed`).
//!
//! ## Copies
//! Both directions copy once: the guest may rewrite its buffers at any moment, so a frame is
//! copied out of its reach before the pipeline parses it, and our pool buffers are never
//! exposed to a guest.
//!
//! ## Threading
//! Each virtqueue sits behind its own mutex ([`Shared::vrings`]): the control thread holds it
//! to reconfigure the ring, a poll thread takes it with `try_lock` for one burst and skips
//! the ring when the control thread has it (receive), or spins briefly before dropping
//! (transmit, where two handles may share a guest queue when there are more poll threads
//! than queue pairs).

pub mod backend;
pub mod mem;
mod sock;
pub mod vring;

use crate::{check_options, LinkState, NetdevError, Options, Port, PortStats, RxqState};
use packet::{Batch, Pool};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use vring::Vring;

/// Queue pairs a guest may use.
pub const MAX_QP: usize = 16;
/// Server role type name.
pub const KIND_SERVER: &str = "dpdkvhostuser";
/// Client role type name.
pub const KIND_CLIENT: &str = "dpdkvhostuserclient";
const KNOWN_SERVER: &[&str] = &["tx-retries-max", "n_rxq"];
const KNOWN_CLIENT: &[&str] = &["vhost-server-path", "tx-retries-max", "n_rxq"];
/// OVS's default for `tx-retries-max`, and its ceiling.
const TX_RETRIES_DEFAULT: u32 = 8;
const TX_RETRIES_MAX: u32 = 32;
/// Attempts at a transmit ring another poll thread holds before dropping the burst.
const TX_SPINS: u32 = 1024;
/// The custom statistic counting frames (of `tx_packets`) that reached the guest coalesced
/// into TCP super-packets (`vring::coalesce`), named as OVS names its own port counters
/// (`ovs_tx_retries`, `ovs_tx_failure_drops`).
pub const COALESCED: &str = "ovs_tx_coalesced_packets";

/// What the handles of one port share with each other and with its control thread.
pub struct Shared {
    name: String,
    /// Virtqueues by index: `2p` is the guest's receive queue of pair `p`, `2p + 1` its
    /// transmit queue.
    pub(crate) vrings: Vec<Mutex<Vring>>,
    /// Queue pairs usable for transmitting (contiguous from 0).
    pub(crate) pairs: AtomicUsize,
    /// Pairs worth polling for receive (highest running pair + 1).
    pub(crate) polled: AtomicUsize,
    pub(crate) up: AtomicBool,
    pub(crate) connects: AtomicU64,
    pub(crate) last_reason: Mutex<String>,
    /// Requests for features that were not negotiated (answered with an error, session kept).
    pub(crate) ignored: AtomicU64,
    /// Frames given to the guest inside super-packets ([`COALESCED`]).
    coalesced: AtomicU64,
    handles: AtomicUsize,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes a ring's mutex without waiting (`None` if someone holds it).
fn try_lock(m: &Mutex<Vring>) -> Option<std::sync::MutexGuard<'_, Vring>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

#[derive(Clone, Debug)]
struct Config {
    client: bool,
    path: PathBuf,
    tx_retries: u32,
    n_rxq: usize,
}

fn bad(key: &str, why: String) -> NetdevError {
    NetdevError::BadOption {
        key: key.into(),
        why,
    }
}

fn parse_options(name: &str, kind: &'static str, opts: &Options) -> Result<Config, NetdevError> {
    let client = kind == KIND_CLIENT;
    check_options(kind, opts, if client { KNOWN_CLIENT } else { KNOWN_SERVER })?;
    let tx_retries = match opts.get("tx-retries-max") {
        None => TX_RETRIES_DEFAULT,
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= TX_RETRIES_MAX)
            .ok_or_else(|| {
                bad(
                    "tx-retries-max",
                    format!("'{v}' is not a count in 0..={TX_RETRIES_MAX}"),
                )
            })?,
    };
    let n_rxq = crate::parse_n_rxq(opts, MAX_QP)?;
    let path = if client {
        match opts.get("vhost-server-path") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => {
                return Err(NetdevError::MissingOption {
                    kind,
                    key: "vhost-server-path",
                })
            }
        }
    } else {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(bad("name", format!("'{name}' cannot name a socket file")));
        }
        crate::rundir().join(name)
    };
    Ok(Config {
        client,
        path,
        tx_retries,
        n_rxq,
    })
}

/// A handle on a vhost-user port. See the module documentation.
pub struct VhostPort {
    shared: Arc<Shared>,
    kind: &'static str,
    cfg: Arc<Config>,
    /// Receive queues this handle holds.
    rxqs: Vec<bool>,
    /// Which queue pair this handle transmits on (modulo the usable pairs).
    txk: usize,
    stats: PortStats,
    /// The control thread; held by the first handle only.
    control: Option<sock::Control>,
}

/// A receive queue in transit between handles (the rings' state lives in `Shared`).
struct VhostRxq;

impl VhostPort {
    /// Opens a `dpdkvhostuser` or `dpdkvhostuserclient` port.
    pub fn open(name: &str, kind: &str, opts: &Options) -> Result<VhostPort, NetdevError> {
        let kind = if kind == KIND_CLIENT {
            KIND_CLIENT
        } else {
            KIND_SERVER
        };
        let cfg = parse_options(name, kind, opts)?;
        let shared = Arc::new(Shared {
            name: name.to_string(),
            vrings: (0..2 * MAX_QP)
                .map(|_| Mutex::new(Vring::default()))
                .collect(),
            pairs: AtomicUsize::new(0),
            polled: AtomicUsize::new(0),
            up: AtomicBool::new(false),
            connects: AtomicU64::new(0),
            last_reason: Mutex::new(String::new()),
            ignored: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            handles: AtomicUsize::new(1),
        });
        let weak = Arc::downgrade(&shared);
        let control = if cfg.client {
            sock::connect(&cfg.path, weak, name).map_err(|e| {
                NetdevError::Os(format!("{kind} port '{name}': control thread: {e}"))
            })?
        } else {
            sock::serve(&cfg.path, weak, name).map_err(|e| {
                NetdevError::Os(format!(
                    "{kind} port '{name}': cannot listen on {}: {e}",
                    cfg.path.display()
                ))
            })?
        };
        Ok(VhostPort {
            shared,
            kind,
            rxqs: vec![true; cfg.n_rxq],
            cfg: Arc::new(cfg),
            txk: 0,
            stats: PortStats::default(),
            control: Some(control),
        })
    }

    /// How many times the link came up.
    pub fn connects(&self) -> u64 {
        self.shared.connects.load(Ordering::Relaxed)
    }

    /// Why the last session ended, or why connecting fails (empty if nothing went wrong).
    pub fn last_reason(&self) -> String {
        lock(&self.shared.last_reason).clone()
    }

    /// The socket path (listened on or connected to).
    pub fn socket_path(&self) -> &std::path::Path {
        &self.cfg.path
    }
}

impl Port for VhostPort {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn kind(&self) -> &'static str {
        self.kind
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let mut n = 0;
        for q in 0..self.rxqs.len() {
            if batch.is_full() {
                break;
            }
            n += self.rxq_batch(q, pool, batch);
        }
        n
    }

    fn rxq_batch(&mut self, q: usize, pool: &mut Pool, batch: &mut Batch) -> usize {
        if !self.rxqs.get(q).copied().unwrap_or(false) {
            return 0;
        }
        let polled = self.shared.polled.load(Ordering::Acquire);
        let mut n = 0;
        let mut p = q;
        while p < polled && !batch.is_full() {
            if let Some(mut v) = try_lock(&self.shared.vrings[2 * p + 1]) {
                if v.live() {
                    let b = vring::rx_burst(&mut v, pool, batch);
                    self.stats.rx_packets += b.packets;
                    self.stats.rx_bytes += b.bytes;
                    self.stats.rx_errors += b.errors;
                    self.stats.rx_dropped += b.dropped;
                    n += b.packets as usize;
                }
            }
            p += self.rxqs.len();
        }
        n
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        let pairs = self.shared.pairs.load(Ordering::Acquire);
        if pairs == 0 {
            self.stats.tx_dropped += batch.len() as u64;
            pool.free_batch(batch);
            return;
        }
        let m = &self.shared.vrings[2 * (self.txk % pairs)];
        let mut g = None;
        for _ in 0..TX_SPINS {
            g = try_lock(m);
            if g.is_some() {
                break;
            }
            std::hint::spin_loop();
        }
        match g {
            Some(mut v) if v.live() => {
                let b = vring::tx_burst(&mut v, pool, batch, self.cfg.tx_retries);
                self.stats.tx_packets += b.packets;
                self.stats.tx_bytes += b.bytes;
                self.stats.tx_errors += b.errors;
                self.stats.tx_dropped += b.dropped;
                if b.coalesced > 0 {
                    self.shared
                        .coalesced
                        .fetch_add(b.coalesced, Ordering::Relaxed);
                }
            }
            _ => {
                self.stats.tx_dropped += batch.len() as u64;
                pool.free_batch(batch);
            }
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn custom_stats(&self) -> Vec<(&'static str, u64)> {
        vec![(COALESCED, self.shared.coalesced.load(Ordering::Relaxed))]
    }

    fn link_state(&self) -> LinkState {
        if self.shared.up.load(Ordering::Acquire) {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    fn options(&self) -> Vec<(String, String)> {
        let mut o = Vec::new();
        if self.cfg.client {
            o.push((
                "vhost-server-path".into(),
                self.cfg.path.display().to_string(),
            ));
        }
        o.push(("tx-retries-max".into(), self.cfg.tx_retries.to_string()));
        o.push(("n_rxq".into(), self.cfg.n_rxq.to_string()));
        o
    }

    fn n_rxq(&self) -> usize {
        self.rxqs.len()
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        let k = self.shared.handles.fetch_add(1, Ordering::Relaxed);
        Some(Box::new(VhostPort {
            shared: self.shared.clone(),
            kind: self.kind,
            cfg: self.cfg.clone(),
            rxqs: vec![false; self.rxqs.len()],
            txk: k,
            stats: PortStats::default(),
            control: None,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        let held = self.rxqs.get_mut(q)?;
        if !*held {
            return None;
        }
        *held = false;
        Some(Box::new(VhostRxq))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        match self.rxqs.get_mut(q) {
            Some(h) if !*h && s.is::<VhostRxq>() => {
                *h = true;
                Ok(())
            }
            _ => Err(s),
        }
    }

    fn close(&mut self) {
        // Stops the control thread, ends the session and removes our socket file.
        self.control = None;
    }
}

#[cfg(test)]
mod tests;
