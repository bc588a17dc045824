//! OpenFlow connections: the per-bridge management socket, controller connections, and the
//! asynchronous messages (packet-in, flow-removed, port-status) that flow to them.
//!
//! ## Shape
//! [`ConnMgr`] is created once by the daemon and told when bridges running the `openflow`
//! module appear and disappear. For each such bridge it keeps a [`BridgeOf`]:
//!
//! * a **listener thread** for `<rundir>/<bridge>.mgmt` (what `ovs-ofctl BR` opens) and one
//!   for `<rundir>/<bridge>.snoop` (copies of every message on the bridge's connections);
//! * one thread per configured **controller target** ([`target`]): active targets
//!   (`tcp:`, `ssl:`, `unix:`) connect and reconnect with exponential backoff (1 s doubling up
//!   to `max_backoff`, 8 s by default); passive ones (`ptcp:`, `pssl:`, `punix:`) listen and
//!   accept; TLS ([`ssl`]) uses the database's `SSL` row, shared by all bridges;
//! * per accepted or established **connection** ([`conn`]) a reader thread, which runs
//!   the connection's I/O-free protocol [`session`] (hello/version negotiation, framing,
//!   echo keepalive and inactivity probe) and answers every request in order
//!   ([`handle`], which hands each job on: [`mods`], [`packet_out`], [`stats`],
//!   [`features`], [`bundle`], [`monitor`]; roles are [`role`]'s), and a writer thread fed
//!   by a bounded queue;
//! * a **dispatcher thread** that every few milliseconds drains the datapath's packet-in
//!   queue and ofproto's flow-removed log, watches the port table for changes, fans each
//!   event out to the connections that want it (role, async config, a per-connection
//!   packet-in token bucket), hands flow table changes to flow monitors ([`monitor`]),
//!   sends table vacancy events ([`status`]), and runs fail-open.
//!
//! ## What is shared with the datapath, and how
//! Only [`datapath::udpif::Udpif`] (the `Ofproto` behind its mutex, the packet-in queue and
//! `sync`) and the poll thread's [`Datapath`]. Requests lock the `Ofproto` for the time of
//! one change or one read; anything that touches ports or packets (port descriptions and
//! counters, packet-out) is a short closure run on the poll thread with
//! [`Datapath::call`]. Nothing here ever runs on the poll thread otherwise, and no lock held
//! here is one the fast path takes (the poll thread takes the `Ofproto` mutex only for meters
//! and table misses, briefly).
//!
//! ## Fail modes
//! `secure` changes nothing: the flows stay, misses go wherever the flows say (to a
//! controller that is not there: dropped). `standalone` (the default, as in OVS): when
//! controllers are configured but none has been connected for three inactivity-probe
//! intervals, ofproto's fail-open flag is set, which makes the pipeline a learning switch
//! (`NORMAL`) without touching the flow tables; the first controller to connect clears it.
//! The management socket never counts as a controller.
//!
//! ## Limits
//! Connections queue at most [`conn::OUT_QUEUE`] outgoing messages; an asynchronous message
//! that finds the queue full is dropped and counted (a request's reply waits instead).
//! Packet-ins are rate limited per connection (`controller_rate_limit` per second, burst
//! `controller_burst_limit`; 1000 and 100 by default); drops are counted in
//! `get-controller`.

pub mod bundle;
pub mod cli;
pub mod conn;
pub mod default_flow;
pub mod features;
pub mod handle;
pub mod mods;
pub mod monitor;
pub mod packet_out;
pub mod pin_meta;
pub mod resume;
pub mod role;
pub mod session;
pub mod spin;
pub mod ssl;
pub mod stats;
pub mod status;
pub mod target;

use crate::ofconn::conn::{Conn, ConnKind};
use datapath::udpif::Udpif;
use datapath::Datapath;
use openflow::wire::{self, Message, Port};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often listeners check their stop flag and the dispatcher looks for events.
pub const TICK: Duration = Duration::from_millis(5);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn log(msg: &str) {
    crate::vswitch::vlog::info("ofconn", msg);
}

/// `fail-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailMode {
    Standalone,
    Secure,
}

/// Per-bridge OpenFlow settings as the connection manager applies them (fail mode, allowed
/// versions, probe and backoff times, packet-in rate limits, datapath id). Not the database's
/// view of a bridge (`vswitch::model::BridgeCfg`, a `Bridge` row with its ports): the
/// reconfiguration resolves that row's OpenFlow columns into this (`vswitch::ofbridge`).
#[derive(Clone, Debug)]
pub struct OfSettings {
    pub fail_mode: FailMode,
    /// Allowed wire versions.
    pub versions: Vec<u8>,
    pub inactivity_probe_ms: u64,
    pub max_backoff_ms: u64,
    pub rate_limit: u32,
    pub burst_limit: u32,
    /// A datapath id set by the user (else derived from the LOCAL port's MAC).
    pub datapath_id: Option<u64>,
}

impl Default for OfSettings {
    fn default() -> Self {
        OfSettings {
            fail_mode: FailMode::Standalone,
            versions: wire::VERSIONS.to_vec(),
            inactivity_probe_ms: 5000,
            max_backoff_ms: 8000,
            rate_limit: 1000,
            burst_limit: 100,
            datapath_id: None,
        }
    }
}

/// A port as OpenFlow describes it, from the poll thread's port table.
#[derive(Clone, Debug)]
pub struct PortView {
    pub desc: Port,
    pub stats: netdev::PortStats,
    pub link_up: bool,
}

/// One configured controller target and its thread.
struct Controller {
    target: String,
    stop: Arc<AtomicBool>,
    status: Arc<Mutex<String>>,
    thread: Option<JoinHandle<()>>,
}

/// One bridge's OpenFlow side. See the module documentation.
pub struct BridgeOf {
    pub name: String,
    pub udpif: Arc<Udpif>,
    pub pmd: Arc<Datapath>,
    pub cfg: Mutex<OfSettings>,
    pub conns: Mutex<Vec<Arc<Conn>>>,
    pub snoops: Mutex<Vec<crossbeam_channel::Sender<Vec<u8>>>>,
    /// The master election (see [`role`]); held while a role request is applied.
    pub roles: Mutex<role::Election>,
    /// `OFPPC_*` bits set by port_mod, per OpenFlow port.
    pub port_config: Mutex<HashMap<u32, u32>>,
    /// OpenFlow 1.4 table configuration set by table_mod (see [`status`]).
    pub tables: Mutex<BTreeMap<u8, status::TableCfg>>,
    pub port_dirty: AtomicBool,
    pub stop: AtomicBool,
    pub created: Instant,
    pub next_conn: AtomicU64,
    /// The SSL settings for `ssl:` and `pssl:` targets (shared with the manager).
    pub ssl: Arc<ssl::SslState>,
    /// The IPFIX exporters' counters (shared by every bridge; see [`crate::ipfix::board`]).
    pub ipfix: Arc<crate::ipfix::board::Board>,
    /// What the flow table was last reset for ([`default_flow`]); `None` until the first
    /// settings are applied.
    pub settled: Mutex<Option<default_flow::Settled>>,
    controllers: Mutex<Vec<Controller>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    mgmt_path: PathBuf,
    snoop_path: PathBuf,
}

impl BridgeOf {
    /// The datapath id: configured, else 0x0000 followed by the LOCAL port's MAC.
    pub fn datapath_id(&self) -> u64 {
        if let Some(d) = lock(&self.cfg).datapath_id {
            return d;
        }
        let mac = self
            .ports()
            .ok()
            .and_then(|ps| {
                ps.into_iter()
                    .find(|p| p.desc.port_no == openflow::actions::OFPP_LOCAL)
                    .map(|p| p.desc.hw_addr)
            })
            .unwrap_or([0; 6]);
        mac.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
    }

    /// The bridge's ports (OpenFlow numbering), read on the poll thread.
    pub fn ports(&self) -> Result<Vec<PortView>, String> {
        let br = self.name.clone();
        let v = self.pmd.call(move |sw| {
            let b = sw
                .bridge(&br)
                .ok_or_else(|| format!("no such bridge '{br}'"))?;
            Ok::<_, String>(
                b.ports()
                    .map(|(slot, s)| {
                        let up = s.port.link_state() == netdev::LinkState::Up;
                        (
                            datapath::ofmodule::to_of(s.ofport),
                            s.port.name().to_string(),
                            s.port.mac().unwrap_or([0; 6]),
                            up,
                            s.port.stats(),
                            slot,
                        )
                    })
                    .collect::<Vec<_>>(),
            )
        })??;
        // What the port's handles on the other poll threads counted.
        let remote = self.pmd.remote_port_counters().unwrap_or_default();
        let mut v: Vec<_> = v
            .into_iter()
            .map(|(no, name, mac, up, mut st, slot)| {
                if let Some(x) = remote.get(&(self.name.clone(), slot)) {
                    st.add(x);
                }
                (no, name, mac, up, st)
            })
            .collect();
        v.sort_by_key(|p| p.0);
        let cfg = lock(&self.port_config).clone();
        Ok(v.into_iter()
            .map(|(no, name, mac, up, stats)| {
                let config = cfg.get(&no).copied().unwrap_or(0);
                // 10 Gb/s full duplex, copper, as a virtual port reports.
                let feat = 0x40 | 0x800;
                PortView {
                    desc: Port {
                        port_no: no,
                        hw_addr: mac,
                        name,
                        config,
                        state: if up { 4 } else { 1 },
                        curr: feat,
                        advertised: 0,
                        supported: 0,
                        peer: 0,
                        curr_speed: 10_000_000,
                        max_speed: 0,
                        ethernet: true,
                        props: Vec::new(),
                    },
                    stats,
                    link_up: up,
                }
            })
            .collect())
    }

    /// Sends an asynchronous message to every connection `wants` accepts (the closure
    /// also builds the per-connection message, or `None` to skip it).
    pub fn broadcast(&self, mut f: impl FnMut(&Conn) -> Option<Message>) {
        let conns: Vec<Arc<Conn>> = lock(&self.conns).clone();
        for c in conns {
            if let Some(m) = f(&c) {
                c.send_async(&m);
            }
        }
    }

    /// Copies raw bytes to every snoop connection.
    pub fn snoop(&self, bytes: &[u8]) {
        let mut s = lock(&self.snoops);
        if s.is_empty() {
            return;
        }
        s.retain(|tx| match tx.try_send(bytes.to_vec()) {
            Ok(()) | Err(crossbeam_channel::TrySendError::Full(_)) => true,
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
        });
    }

    /// True if a controller (not a management client) has a negotiated connection.
    pub fn controller_connected(&self) -> bool {
        lock(&self.conns)
            .iter()
            .any(|c| c.kind.is_controller() && c.is_up())
    }

    /// True if any controller target is configured (connected or not).
    pub fn has_controllers(&self) -> bool {
        !lock(&self.controllers).is_empty()
    }

    fn stop_controllers(&self) -> Vec<JoinHandle<()>> {
        let mut cs = lock(&self.controllers);
        let mut hs = Vec::new();
        for mut c in cs.drain(..) {
            c.stop.store(true, Ordering::Release);
            if let Some(h) = c.thread.take() {
                hs.push(h);
            }
        }
        // Close the connections those targets made.
        for c in lock(&self.conns).iter() {
            if c.kind.is_controller() {
                c.close();
            }
        }
        hs
    }
}

/// See the module documentation.
pub struct ConnMgr {
    rundir: PathBuf,
    pmd: Arc<Datapath>,
    bridges: Mutex<BTreeMap<String, Arc<BridgeOf>>>,
    ssl: Arc<ssl::SslState>,
    /// The IPFIX exporters' counters, for `NXST_IPFIX_*` statistics.
    pub ipfix: Arc<crate::ipfix::board::Board>,
}

fn bind_unix(path: &Path) -> Result<UnixListener, String> {
    let _ = std::fs::remove_file(path);
    let l = UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
    l.set_nonblocking(true)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(l)
}

impl ConnMgr {
    /// A manager that puts sockets in `rundir`.
    pub fn new(rundir: &Path, pmd: Arc<Datapath>) -> Arc<ConnMgr> {
        Arc::new(ConnMgr {
            rundir: rundir.to_path_buf(),
            pmd,
            bridges: Mutex::new(BTreeMap::new()),
            ssl: Arc::default(),
            ipfix: Arc::default(),
        })
    }

    /// Sets the key, certificate and CA certificate files for TLS targets (`None`: no `SSL`
    /// row). New connections use them; existing ones keep their session.
    pub fn set_ssl(&self, files: Option<tls::TlsFiles>) {
        self.ssl.set(files);
    }

    /// The OpenFlow side of bridge `name`.
    pub fn bridge(&self, name: &str) -> Result<Arc<BridgeOf>, String> {
        lock(&self.bridges)
            .get(name)
            .cloned()
            .ok_or_else(|| format!("bridge '{name}' does not exist or does not run OpenFlow"))
    }

    /// The OpenFlow state of every bridge running the openflow module, by name.
    pub fn udpifs(&self) -> BTreeMap<String, Arc<Udpif>> {
        lock(&self.bridges)
            .iter()
            .map(|(n, b)| (n.clone(), Arc::clone(&b.udpif)))
            .collect()
    }

    /// A bridge running the openflow module was added: open its sockets and threads.
    pub fn bridge_added(&self, name: &str, udpif: Arc<Udpif>) -> Result<(), String> {
        self.bridge_removed(name);
        // Packet-ins carry whole frames; each connection truncates to its miss_send_len.
        udpif.of().miss_send_len = openflow::actions::OFPCML_NO_BUFFER;
        let mgmt_path = self.rundir.join(format!("{name}.mgmt"));
        let snoop_path = self.rundir.join(format!("{name}.snoop"));
        let mgmt = bind_unix(&mgmt_path)?;
        let snoop = bind_unix(&snoop_path)?;
        let b = Arc::new(BridgeOf {
            name: name.to_string(),
            udpif,
            pmd: Arc::clone(&self.pmd),
            cfg: Mutex::new(OfSettings::default()),
            conns: Mutex::new(Vec::new()),
            snoops: Mutex::new(Vec::new()),
            roles: Mutex::new(role::Election::default()),
            port_config: Mutex::new(HashMap::new()),
            tables: Mutex::new(BTreeMap::new()),
            port_dirty: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            created: Instant::now(),
            next_conn: AtomicU64::new(1),
            ssl: Arc::clone(&self.ssl),
            ipfix: Arc::clone(&self.ipfix),
            settled: Mutex::new(None),
            controllers: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            mgmt_path,
            snoop_path,
        });
        let mut threads = Vec::new();
        let b1 = Arc::clone(&b);
        threads.push(spawn("ofmgmt", move || {
            target::accept_loop(&b1, target::Listener::Unix(mgmt), ConnKind::Mgmt, &b1.stop)
        })?);
        let b2 = Arc::clone(&b);
        threads.push(spawn("ofsnoop", move || target::snoop_loop(&b2, snoop))?);
        let b3 = Arc::clone(&b);
        threads.push(spawn("ofdispatch", move || dispatch_loop(&b3))?);
        *lock(&b.threads) = threads;
        lock(&self.bridges).insert(name.to_string(), b);
        Ok(())
    }

    /// A bridge went away (or is being replaced): stop everything and remove its sockets.
    pub fn bridge_removed(&self, name: &str) {
        let Some(b) = lock(&self.bridges).remove(name) else {
            return;
        };
        stop_bridge(&b);
    }

    /// Stops every bridge's connections (daemon exit).
    pub fn shutdown(&self) {
        let all: Vec<Arc<BridgeOf>> = std::mem::take(&mut *lock(&self.bridges))
            .into_values()
            .collect();
        for b in all {
            stop_bridge(&b);
        }
    }

    /// Replaces the controller targets of `br`.
    pub fn set_controllers(&self, br: &str, targets: &[String]) -> Result<(), String> {
        let b = self.bridge(br)?;
        let same = {
            let cs = lock(&b.controllers);
            cs.len() == targets.len() && cs.iter().zip(targets).all(|(c, t)| &c.target == t)
        };
        if same {
            return Ok(());
        }
        let parsed: Vec<target::Target> = targets
            .iter()
            .map(|t| target::Target::parse(t))
            .collect::<Result<_, _>>()?;
        for h in b.stop_controllers() {
            let _ = h.join();
        }
        let mut cs = lock(&b.controllers);
        for (t, text) in parsed.into_iter().zip(targets) {
            let stop = Arc::new(AtomicBool::new(false));
            let status = Arc::new(Mutex::new("connecting".to_string()));
            let (b2, s2, st2) = (Arc::clone(&b), Arc::clone(&stop), Arc::clone(&status));
            let thread = match t {
                target::Target::Active(a) => spawn("ofctl-active", move || {
                    target::active_loop(&b2, &a, &s2, &st2)
                })?,
                target::Target::Passive(p) => {
                    let l = p.bind()?;
                    *lock(&status) = "listening".into();
                    let kind = ConnKind::Controller(text.clone());
                    spawn("ofctl-passive", move || {
                        let _keep = st2;
                        target::accept_loop(&b2, l, kind, &s2)
                    })?
                }
            };
            cs.push(Controller {
                target: text.clone(),
                stop,
                status,
                thread: Some(thread),
            });
        }
        Ok(())
    }

    /// The controller targets of `br` with their state.
    pub fn get_controllers(&self, br: &str) -> Result<Vec<(String, String)>, String> {
        let b = self.bridge(br)?;
        let conns = lock(&b.conns).clone();
        let out = lock(&b.controllers)
            .iter()
            .map(|c| {
                let mut st = lock(&c.status).clone();
                for k in conns.iter().filter(|k| k.kind.target() == Some(&c.target)) {
                    st.push_str(&format!("; {}", k.describe()));
                }
                (c.target.clone(), st)
            })
            .collect();
        Ok(out)
    }
}

fn stop_bridge(b: &Arc<BridgeOf>) {
    b.stop.store(true, Ordering::Release);
    let mut hs = b.stop_controllers();
    for c in lock(&b.conns).iter() {
        c.close();
    }
    hs.extend(lock(&b.threads).drain(..));
    for h in hs {
        let _ = h.join();
    }
    lock(&b.snoops).clear();
    let _ = std::fs::remove_file(&b.mgmt_path);
    let _ = std::fs::remove_file(&b.snoop_path);
    // Leave the datapath as a plain switch again.
    b.udpif.of().set_fail_open(false);
}

pub(crate) fn spawn(
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| format!("cannot start a thread: {e}"))
}

/// The dispatcher: asynchronous messages and fail-open. See the module documentation.
fn dispatch_loop(b: &Arc<BridgeOf>) {
    let mut last_ports: Option<BTreeMap<u32, PortView>> = None;
    let mut last_port_check = Instant::now() - Duration::from_secs(1);
    let mut last_of_ports: Vec<ofproto::OfPort> = Vec::new();
    let mut last_connected = Instant::now();
    let mut fail_open = false;
    let mut monitoring = false;
    while !b.stop.load(Ordering::Acquire) {
        std::thread::sleep(TICK);
        // Packet-ins.
        let pins: Vec<ofproto::switch::PacketIn> = b.udpif.take_packet_ins();
        for p in &pins {
            b.broadcast(|c| c.packet_in(p));
        }
        // Flow-removed.
        let removed = b.udpif.of().take_removed();
        for r in &removed {
            b.broadcast(|c| c.flow_removed(r));
        }
        monitor::dispatch(b, &mut monitoring);
        status::check_vacancy(b);
        // Ports: a cheap look at ofproto's table every 50 ms; the poll thread is asked for
        // full descriptions only when something changed (or port_mod asked for it).
        if last_port_check.elapsed() >= Duration::from_millis(50) {
            last_port_check = Instant::now();
            let now_of: Vec<ofproto::OfPort> = b.udpif.of().ports().values().cloned().collect();
            let cfg_dirty = conn::take_port_dirty(b);
            if last_ports.is_none() || now_of != last_of_ports || cfg_dirty {
                if let Ok(ps) = b.ports() {
                    let cur: BTreeMap<u32, PortView> =
                        ps.into_iter().map(|p| (p.desc.port_no, p)).collect();
                    if let Some(prev) = &last_ports {
                        port_changes(b, prev, &cur);
                    }
                    last_ports = Some(cur);
                    last_of_ports = now_of;
                }
            }
        }
        // Fail-open.
        let cfg = lock(&b.cfg).clone();
        let has_targets = !lock(&b.controllers).is_empty();
        if b.controller_connected() || !has_targets {
            last_connected = Instant::now();
        }
        let want = cfg.fail_mode == FailMode::Standalone
            && has_targets
            && last_connected.elapsed() >= Duration::from_millis(3 * cfg.inactivity_probe_ms);
        if want != fail_open {
            fail_open = want;
            log(&format!(
                "bridge {}: {} fail-open mode",
                b.name,
                if want { "entering" } else { "leaving" }
            ));
            b.udpif.of().set_fail_open(want);
            b.udpif.kick();
        }
    }
}

fn port_changes(b: &BridgeOf, prev: &BTreeMap<u32, PortView>, cur: &BTreeMap<u32, PortView>) {
    let send = |reason: u8, p: &Port| {
        b.broadcast(|c| c.port_status(reason, p));
    };
    for (no, p) in cur {
        match prev.get(no) {
            None => send(0, &p.desc),
            Some(o) if o.desc != p.desc => send(2, &p.desc),
            _ => {}
        }
    }
    for (no, p) in prev {
        if !cur.contains_key(no) {
            send(1, &p.desc);
        }
    }
}
