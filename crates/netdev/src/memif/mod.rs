//! The `memif` port: shared-memory packet interfaces speaking the memif protocol, so that
//! DPDK's `net_memif`, VPP, libmemif and gomemif applications attach to a bridge unchanged.
//!
//! ## What
//! `type=memif options:socket=PATH options:id=N [role=server|client] [secret=S]
//! [ring-size=1024] [buffer-size=2048] [n_rxq=Q] [socket-abstract=false]`
//! (`socket-abstract=true`: the socket is a name in Linux's abstract namespace, DPDK's default,
//! instead of a file). As a *server* (the default: the switch owns
//! the socket) the port listens on `PATH`, shared with every other server interface on that
//! path, and waits for a client to connect with interface id `N`; as a *client* it connects
//! to a server on `PATH`, retrying every second. Either way the link is up exactly while a
//! peer is connected, and a peer that restarts simply connects again.
//!
//! ## How
//! Files, one job each: [`msg`] encodes and decodes control messages; [`ctl`] is the
//! handshake state machine of each role, checking every field; [`ring`] maps regions,
//! validates descriptors and runs the burst loops; [`conn`] holds one established
//! connection (regions, rings, eventfds, cursors) and the client's memory layout; [`sock`]
//! runs the control sockets on their own threads. This file is the [`Port`] the fabric sees.
//!
//! The control protocol never runs on a poll thread. A control thread per socket completes
//! the handshake, maps the memory and *publishes* the connection into the port's shared
//! state: a mutex-protected `Option<Arc<Conn>>` plus a generation counter. Each handle reads
//! the counter once per batch (one relaxed load) and re-fetches the `Arc` only when it
//! moved; a withdrawn connection stays mapped until the last handle has dropped it.
//!
//! ## Copies
//! Both directions copy, once. Receiving copies from the client's buffers into our own pool
//! buffers: the client owns that memory and may rewrite it at any time, so a packet must be
//! out of its reach before the pipeline parses it (and its buffer must go back to the client
//! at once, whatever the pipeline does with the packet). Transmitting copies our packet into
//! a buffer the peer offered: our pool buffers are not in shared memory, and exposing them
//! would let a client read other ports' traffic. Zero copy needs the pool itself in a region
//! shared per client, which is a later step.
//!
//! ## Containment
//! A client is untrusted: every descriptor and ring index is checked before any byte moves
//! (see [`ring`]); refused descriptors count in `rx_errors` (receive) and `tx_errors`
//! (transmit), and the packet is dropped; a peer that stops consuming costs `tx_dropped`,
//! never a wait. Region memfds must be sealed against shrinking so the mapping cannot fault.
//! Interrupts from the peer are consumed through an epoll descriptor, never by reading the
//! peer's eventfd. One window remains: we signal the peer's eventfd only after checking it
//! is non-blocking, but a peer that clears `O_NONBLOCK` between that check and our write
//! *and* has filled its eventfd counter to the maximum could stall the transmitting thread
//! until it reads.
//!
//! ## Threading
//! Handles ([`Port::share`]) transmit on ring `k % n` (handle `k`), receive queues move
//! between handles, and each ring's cursor is behind its own (uncontended) mutex.

pub mod conn;
pub mod ctl;
pub mod msg;
pub mod ring;
mod sock;

use crate::{check_options, LinkState, NetdevError, Options, Port, PortStats, RxqState};
use conn::Conn;
use packet::{Batch, Pool};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const KIND: &str = "memif";
const KNOWN: &[&str] = &[
    "socket",
    "socket-abstract",
    "id",
    "role",
    "secret",
    "ring-size",
    "buffer-size",
    "n_rxq",
];

/// Whether the port listens or connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Server,
    Client,
}

/// The port's configuration, parsed from its options.
#[derive(Clone, Debug)]
pub struct Config {
    pub socket: PathBuf,
    /// The socket's name is in the abstract namespace (no file).
    pub socket_abstract: bool,
    pub id: u32,
    pub role: Role,
    pub secret: [u8; msg::SECRET_SIZE],
    pub log2_ring: u8,
    /// Buffer size a client creates; largest descriptor length a server accepts.
    pub bsize: u32,
    pub n_rxq: usize,
}

fn bad(key: &str, why: String) -> NetdevError {
    NetdevError::BadOption {
        key: key.into(),
        why,
    }
}

/// Parses and checks the options (every error names its key).
pub fn parse_options(opts: &Options) -> Result<Config, NetdevError> {
    check_options(KIND, opts, KNOWN)?;
    let socket = opts.get("socket").ok_or(NetdevError::MissingOption {
        kind: KIND,
        key: "socket",
    })?;
    if socket.is_empty() || socket.len() >= 108 || !socket.starts_with('/') {
        return Err(bad(
            "socket",
            format!("'{socket}' is not an absolute path under 108 bytes"),
        ));
    }
    let socket_abstract = match opts.get("socket-abstract") {
        None => false,
        Some(v) => crate::parse_bool("socket-abstract", v)?,
    };
    let id = opts.get("id").ok_or(NetdevError::MissingOption {
        kind: KIND,
        key: "id",
    })?;
    let id = id
        .parse::<u32>()
        .map_err(|_| bad("id", format!("'{id}' is not a 32-bit interface id")))?;
    let role = match opts.get("role").map(String::as_str) {
        None | Some("server") | Some("master") => Role::Server,
        Some("client") | Some("slave") => Role::Client,
        Some(v) => return Err(bad("role", format!("'{v}' is not server or client"))),
    };
    let secret = match opts.get("secret") {
        None => [0; msg::SECRET_SIZE],
        Some(s) => msg::secret_field(s)
            .ok_or_else(|| bad("secret", format!("longer than {} bytes", msg::SECRET_SIZE)))?,
    };
    let log2_ring = match opts.get("ring-size") {
        None => 10,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n.is_power_of_two() && (2..=1 << ring::MAX_LOG2_RING).contains(&n) => {
                n.trailing_zeros() as u8
            }
            _ => {
                return Err(bad(
                    "ring-size",
                    format!(
                        "'{v}' is not a power of two in 2..={}",
                        1 << ring::MAX_LOG2_RING
                    ),
                ))
            }
        },
    };
    let bsize = match opts.get("buffer-size") {
        None => 2048,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if (128..=65535).contains(&n) && n % 64 == 0 => n,
            _ => {
                return Err(bad(
                    "buffer-size",
                    format!("'{v}' is not a multiple of 64 in 128..=65535"),
                ))
            }
        },
    };
    let n_rxq = crate::parse_n_rxq(opts, ctl::MAX_QUEUES)?;
    Ok(Config {
        socket: PathBuf::from(socket),
        socket_abstract,
        id,
        role,
        secret,
        log2_ring,
        bsize,
        n_rxq,
    })
}

/// What the handles of one port share with each other and with its control thread.
pub struct Shared {
    name: String,
    cfg: Config,
    conn: Mutex<Option<Arc<Conn>>>,
    gen: AtomicU64,
    up: AtomicBool,
    /// One epoll descriptor per receive queue (the queue's `rxq_fd`), with `notify` in it.
    epolls: Vec<Arc<OwnedFd>>,
    notify: OwnedFd,
    /// Handles handed out (to pick each one's transmit ring).
    handles: AtomicUsize,
    connects: AtomicU64,
    last_reason: Mutex<String>,
    /// Keeps the control socket alive while the port exists.
    server: Mutex<Option<Arc<sock::Server>>>,
    client: Mutex<Option<sock::Client>>,
}

impl Shared {
    fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// Publishes a new connection (or withdraws it) and wakes the poll threads.
    fn publish(&self, c: Option<Arc<Conn>>, reason: &str) {
        let up = c.is_some();
        *lock(&self.conn) = c;
        self.up.store(up, Ordering::Release);
        self.gen.fetch_add(1, Ordering::Release);
        if up {
            self.connects.fetch_add(1, Ordering::Relaxed);
        }
        if !reason.is_empty() {
            *lock(&self.last_reason) = reason.to_string();
        }
        ring::signal(self.notify.as_raw_fd());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A handle on a memif port. See the module documentation.
pub struct MemifPort {
    shared: Arc<Shared>,
    /// The connection this handle uses and the generation it was fetched at.
    conn: Option<Arc<Conn>>,
    gen: u64,
    /// Receive queues this handle holds.
    rxqs: Vec<bool>,
    /// Which transmit ring this handle uses.
    txk: usize,
    stats: PortStats,
    idle: u32,
    /// The port's first handle: closing it detaches the interface from its socket.
    primary: bool,
}

/// A receive queue in transit between handles (the cursors live in the connection).
struct MemifRxq;

impl MemifPort {
    /// Opens a memif port named `name`. See the module documentation for the options.
    pub fn open(name: &str, opts: &Options) -> Result<MemifPort, NetdevError> {
        let cfg = parse_options(opts)?;
        let os = |what: &str, e: std::io::Error| {
            NetdevError::Os(format!("{KIND} port '{name}': {what}: {e}"))
        };
        let notify = conn::eventfd().map_err(|e| os("eventfd", e))?;
        let mut epolls = Vec::new();
        for _ in 0..cfg.n_rxq {
            let ep = conn::epoll().map_err(|e| os("epoll_create", e))?;
            conn::epoll_ctl(ep.as_raw_fd(), notify.as_raw_fd(), true);
            epolls.push(Arc::new(ep));
        }
        let shared = Arc::new(Shared {
            name: name.to_string(),
            cfg: cfg.clone(),
            conn: Mutex::new(None),
            gen: AtomicU64::new(0),
            up: AtomicBool::new(false),
            epolls,
            notify,
            handles: AtomicUsize::new(1),
            connects: AtomicU64::new(0),
            last_reason: Mutex::new(String::new()),
            server: Mutex::new(None),
            client: Mutex::new(None),
        });
        match cfg.role {
            Role::Server => {
                let addr = sock::Addr {
                    path: cfg.socket.clone(),
                    abstract_ns: cfg.socket_abstract,
                };
                let srv = sock::server_for(&addr)
                    .map_err(|e| bad("socket", format!("cannot listen on '{addr}': {e}")))?;
                if !srv.attach(cfg.id, &shared) {
                    return Err(bad(
                        "id",
                        format!(
                            "id {} is already used on socket '{}'",
                            cfg.id,
                            cfg.socket.display()
                        ),
                    ));
                }
                *lock(&shared.server) = Some(srv);
            }
            Role::Client => {
                let c = sock::Client::start(
                    sock::Addr {
                        path: cfg.socket.clone(),
                        abstract_ns: cfg.socket_abstract,
                    },
                    ctl::ClientCfg {
                        id: cfg.id,
                        secret: cfg.secret,
                        name: name.to_string(),
                        n_queues: cfg.n_rxq,
                        log2: cfg.log2_ring,
                        bsize: cfg.bsize,
                    },
                    Arc::downgrade(&shared),
                )
                .map_err(|e| os("starting the control thread", e))?;
                *lock(&shared.client) = Some(c);
            }
        }
        Ok(MemifPort {
            shared,
            conn: None,
            gen: 0,
            rxqs: vec![true; cfg.n_rxq],
            txk: 0,
            stats: PortStats::default(),
            idle: 0,
            primary: true,
        })
    }

    /// Refreshes this handle's connection if the control thread published a new one.
    #[inline]
    fn refresh(&mut self) {
        let g = self.shared.gen.load(Ordering::Acquire);
        if g != self.gen {
            self.gen = g;
            self.conn = lock(&self.shared.conn).clone();
        }
    }

    /// How many times a peer connected.
    pub fn connects(&self) -> u64 {
        self.shared.connects.load(Ordering::Relaxed)
    }

    /// Why the last connection ended (empty if none did).
    pub fn last_reason(&self) -> String {
        lock(&self.shared.last_reason).clone()
    }

    fn detach(&mut self) {
        self.conn = None;
        if !self.primary {
            return;
        }
        self.primary = false;
        if let Some(s) = lock(&self.shared.server).take() {
            s.detach(self.shared.cfg.id);
        }
        drop(lock(&self.shared.client).take());
        self.shared.publish(None, "interface deleted");
    }
}

impl Port for MemifPort {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn kind(&self) -> &'static str {
        KIND
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
        self.refresh();
        let Some(c) = &self.conn else {
            // Not connected: consume wake-ups now and then so a sleeping thread sleeps.
            self.idle = self.idle.wrapping_add(1);
            if self.idle.is_multiple_of(64) {
                if let Some(ep) = self.shared.epolls.get(q) {
                    conn::epoll_drain(ep.as_raw_fd());
                }
            }
            return 0;
        };
        let b = c.rx(q, self.rxqs.len(), pool, batch);
        self.stats.rx_packets += b.packets;
        self.stats.rx_bytes += b.bytes;
        self.stats.rx_errors += b.errors;
        self.stats.rx_dropped += b.dropped;
        b.packets as usize
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        self.refresh();
        let Some(c) = &self.conn else {
            self.stats.tx_dropped += batch.len() as u64;
            pool.free_batch(batch);
            return;
        };
        let b = c.tx(self.txk, pool, batch);
        self.stats.tx_packets += b.packets;
        self.stats.tx_bytes += b.bytes;
        self.stats.tx_errors += b.errors;
        self.stats.tx_dropped += b.dropped;
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn link_state(&self) -> LinkState {
        if self.shared.is_up() {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    fn options(&self) -> Vec<(String, String)> {
        let c = &self.shared.cfg;
        vec![
            ("socket".into(), c.socket.display().to_string()),
            ("socket-abstract".into(), c.socket_abstract.to_string()),
            ("id".into(), c.id.to_string()),
            (
                "role".into(),
                match c.role {
                    Role::Server => "server".into(),
                    Role::Client => "client".into(),
                },
            ),
            ("ring-size".into(), (1u32 << c.log2_ring).to_string()),
            ("buffer-size".into(), c.bsize.to_string()),
            ("n_rxq".into(), c.n_rxq.to_string()),
        ]
    }

    fn n_rxq(&self) -> usize {
        self.rxqs.len()
    }

    fn rxq_fd(&self, q: usize) -> Option<RawFd> {
        if !self.rxqs.get(q).copied().unwrap_or(false) {
            return None;
        }
        self.shared.epolls.get(q).map(|e| e.as_raw_fd())
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        let k = self.shared.handles.fetch_add(1, Ordering::Relaxed);
        Some(Box::new(MemifPort {
            shared: self.shared.clone(),
            conn: None,
            gen: 0,
            rxqs: vec![false; self.rxqs.len()],
            txk: k,
            stats: PortStats::default(),
            idle: 0,
            primary: false,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        let held = self.rxqs.get_mut(q)?;
        if !*held {
            return None;
        }
        *held = false;
        Some(Box::new(MemifRxq))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        match self.rxqs.get_mut(q) {
            Some(h) if !*h && s.is::<MemifRxq>() => {
                *h = true;
                Ok(())
            }
            _ => Err(s),
        }
    }

    fn close(&mut self) {
        self.detach();
    }
}

impl Drop for MemifPort {
    fn drop(&mut self) {
        self.detach();
    }
}

#[cfg(test)]
mod tests;
