//! Connection targets: parsing OVS's target syntax, active connectors with backoff, passive
//! listeners, and the snoop socket.
//!
//! * `tcp:IP[:PORT]` and `unix:PATH` are active: a thread connects (3 s timeout), runs the
//!   connection to its end on the same thread, and retries after 1 s, doubling each failed
//!   attempt up to the bridge's `max_backoff`; a connection that lasted 10 s or more resets
//!   the backoff. The default port is 6653.
//! * `ptcp:[PORT][:IP]` and `punix:PATH` are passive: a non-blocking listener polled every
//!   [`super::TICK`] (so stopping needs no wake-up trick) hands each accepted socket to a new
//!   connection thread.
//!
//! * `ssl:IP[:PORT]` and `pssl:[PORT][:IP]` are the same over TLS, with the files of the
//!   database's `SSL` row (see [`super::ssl`]).
//!
//! Every loop checks its stop flag at least every few milliseconds; a stopped target closes
//! its listener (and removes a `punix` socket file).

use super::conn::{self, ConnKind};
use super::{lock, spawn, BridgeOf, TICK};
use connlimit::{Backoff, Slots};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// OpenFlow's IANA port.
pub const DEFAULT_PORT: u16 = 6653;

/// An active target.
#[derive(Clone, Debug)]
pub enum Active {
    Tcp(String),
    Unix(PathBuf),
    Ssl(String),
}

/// A passive target.
#[derive(Clone, Debug)]
pub enum Passive {
    Tcp(String),
    Unix(PathBuf),
    Ssl(String),
}

/// A parsed target.
#[derive(Clone, Debug)]
pub enum Target {
    Active(Active),
    Passive(Passive),
}

fn host_port(rest: &str, passive: bool) -> Result<String, String> {
    if passive {
        // ptcp:[PORT][:IP]
        let (port, ip) = match rest.split_once(':') {
            Some((p, ip)) => (p, ip),
            None => (rest, "0.0.0.0"),
        };
        let port: u16 = if port.is_empty() {
            DEFAULT_PORT
        } else {
            port.parse().map_err(|_| format!("bad port '{port}'"))?
        };
        let ip = ip.trim_start_matches('[').trim_end_matches(']');
        Ok(if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        })
    } else {
        // tcp:IP[:PORT]
        let (ip, port) = if let Some(r) = rest.strip_prefix('[') {
            let (ip, after) = r.split_once(']').ok_or("unbalanced '['")?;
            (ip.to_string(), after.strip_prefix(':').unwrap_or(""))
        } else {
            match rest.rsplit_once(':') {
                Some((ip, p)) => (ip.to_string(), p),
                None => (rest.to_string(), ""),
            }
        };
        if ip.is_empty() {
            return Err("missing IP address".into());
        }
        let port: u16 = if port.is_empty() {
            DEFAULT_PORT
        } else {
            port.parse().map_err(|_| format!("bad port '{port}'"))?
        };
        Ok(if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        })
    }
}

impl Target {
    /// Parses `tcp:`, `ssl:`, `unix:`, `ptcp:`, `pssl:` or `punix:` targets.
    pub fn parse(s: &str) -> Result<Target, String> {
        let bad = |why: String| format!("'{s}': {why}");
        let (kind, rest) = s
            .split_once(':')
            .ok_or_else(|| bad("expected tcp:, ssl:, unix:, ptcp:, pssl: or punix:".into()))?;
        Ok(match kind {
            "tcp" => Target::Active(Active::Tcp(host_port(rest, false).map_err(bad)?)),
            "ptcp" => Target::Passive(Passive::Tcp(host_port(rest, true).map_err(bad)?)),
            "ssl" => Target::Active(Active::Ssl(host_port(rest, false).map_err(bad)?)),
            "pssl" => Target::Passive(Passive::Ssl(host_port(rest, true).map_err(bad)?)),
            "unix" | "punix" if rest.is_empty() => return Err(bad("missing path".into())),
            "unix" => Target::Active(Active::Unix(PathBuf::from(rest))),
            "punix" => Target::Passive(Passive::Unix(PathBuf::from(rest))),
            _ => {
                return Err(bad(
                    "expected tcp:, ssl:, unix:, ptcp:, pssl: or punix:".into()
                ))
            }
        })
    }
}

/// A listening socket.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
    /// `pssl:`: accepted sockets still need their handshake.
    Ssl(TcpListener),
}

impl Passive {
    /// Binds the listener (non-blocking).
    pub fn bind(&self) -> Result<Listener, String> {
        match self {
            Passive::Tcp(a) | Passive::Ssl(a) => {
                let l = TcpListener::bind(a).map_err(|e| format!("listening on {a}: {e}"))?;
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(match self {
                    Passive::Ssl(_) => Listener::Ssl(l),
                    _ => Listener::Tcp(l),
                })
            }
            Passive::Unix(p) => {
                let _ = std::fs::remove_file(p);
                let l = UnixListener::bind(p)
                    .map_err(|e| format!("listening on {}: {e}", p.display()))?;
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(Listener::Unix(l))
            }
        }
    }
}

/// A connected byte stream.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Accepted on a `pssl:` listener, before the handshake ([`super::ssl::ready`]).
    TlsPending(TcpStream),
    /// The plaintext side of a TLS connection, and the peer's address.
    Tls(UnixStream, String),
}

impl Stream {
    /// Another handle on the same socket.
    pub fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::TlsPending(s) => Stream::TlsPending(s.try_clone()?),
            Stream::Tls(s, p) => Stream::Tls(s.try_clone()?, p.clone()),
        })
    }

    /// Blocking mode with a read timeout.
    pub fn set_read_timeout(&self, d: Duration) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => {
                s.set_nonblocking(false)?;
                let _ = s.set_nodelay(true);
                s.set_read_timeout(Some(d))
            }
            Stream::Unix(s) | Stream::Tls(s, _) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(d))
            }
        }
    }

    /// Write timeout (a peer that stops reading cannot hold a writer forever).
    pub fn set_write_timeout(&self, d: Duration) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.set_write_timeout(Some(d)),
            Stream::Unix(s) | Stream::Tls(s, _) => s.set_write_timeout(Some(d)),
        }
    }

    /// Shuts both directions down (wakes a blocked reader).
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) | Stream::Tls(s, _) => s.shutdown(Shutdown::Both),
        };
    }

    /// The peer, for logs and `get-controller`.
    pub fn peer(&self) -> String {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s
                .peer_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| "?".into()),
            Stream::Unix(_) => "unix".into(),
            Stream::Tls(_, p) => format!("ssl {p}"),
        }
    }
}

impl Stream {
    /// Reads what has already arrived without waiting (`recv` with `MSG_DONTWAIT`):
    /// `WouldBlock` if nothing has.
    pub fn read_now(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.as_raw_fd(),
            Stream::Unix(s) | Stream::Tls(s, _) => s.as_raw_fd(),
        };
        // SAFETY: `b` is valid for writes of `b.len()` bytes and `fd` is open while `self`
        // lives.
        let n = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT) };
        usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
    }
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.read(b),
            Stream::Unix(s) | Stream::Tls(s, _) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.write(b),
            Stream::Unix(s) | Stream::Tls(s, _) => s.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) | Stream::TlsPending(s) => s.flush(),
            Stream::Unix(s) | Stream::Tls(s, _) => s.flush(),
        }
    }
}

/// Waits up to `ms` for a connection to be ready on a non-blocking listener, so accepting
/// costs no latency while `stop` is still checked every `ms`.
fn wait_readable(fd: std::os::fd::RawFd, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd for a descriptor the caller's listener keeps open.
    unsafe {
        libc::poll(&mut p, 1, ms);
    }
}

impl Listener {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Listener::Tcp(l) | Listener::Ssl(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }
}

/// How long an accept loop waits for a connection before checking whether to stop.
const ACCEPT_WAIT_MS: i32 = 100;

fn accept(l: &Listener) -> std::io::Result<Stream> {
    match l {
        Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
        Listener::Ssl(l) => l.accept().map(|(s, _)| Stream::TlsPending(s)),
    }
}

/// Connections one listener serves at once; a newcomer beyond that closes the one idle longest
/// (see the `connlimit` crate).
pub const MAX_CONNECTIONS: usize = 256;
/// Snoop clients per bridge.
pub const MAX_SNOOPS: usize = 16;

/// Accepts connections until `stop` (or the bridge stops), each on its own thread, at most
/// [`MAX_CONNECTIONS`] at once; accept errors back off.
pub fn accept_loop(b: &Arc<BridgeOf>, l: Listener, kind: ConnKind, stop: &AtomicBool) {
    let name = match &kind {
        ConnKind::Controller(t) => format!("bridge {}: {t}", b.name),
        ConnKind::Mgmt => format!("bridge {}: {}.mgmt", b.name, b.name),
    };
    let slots = Slots::new(name.clone(), MAX_CONNECTIONS);
    let mut backoff = Backoff::new(name);
    while !stop.load(Ordering::Acquire) && !b.stop.load(Ordering::Acquire) {
        match accept(&l) {
            Ok(s) => {
                backoff.ok();
                let Ok(k) = s.try_clone() else { continue };
                let Some(slot) = slots.admit(Box::new(move || k.shutdown())) else {
                    continue;
                };
                let (b2, k2) = (Arc::clone(b), kind.clone());
                let r = spawn("ofconn", move || {
                    let Some(s) = super::ssl::ready(&b2, s) else {
                        return;
                    };
                    let never = AtomicBool::new(false);
                    conn::run(&b2, s, k2, &never, Some(&slot));
                });
                if let Err(e) = r {
                    super::log(&e);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait_readable(l.raw_fd(), ACCEPT_WAIT_MS)
            }
            Err(e) => backoff.failed(&e),
        }
    }
    if let (Listener::Unix(u), ConnKind::Controller(t)) = (&l, &kind) {
        if let (Ok(Target::Passive(Passive::Unix(p))), Ok(_)) = (Target::parse(t), u.local_addr()) {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn connect(b: &BridgeOf, a: &Active) -> std::io::Result<Stream> {
    match a {
        Active::Tcp(addr) => {
            let sa: SocketAddr = addr.to_socket_addrs()?.next().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address")
            })?;
            TcpStream::connect_timeout(&sa, Duration::from_secs(3)).map(Stream::Tcp)
        }
        Active::Unix(p) => UnixStream::connect(p).map(Stream::Unix),
        Active::Ssl(addr) => super::ssl::connect(b, addr),
    }
}

/// Connects, runs the connection, and reconnects with backoff until `stop`.
pub fn active_loop(b: &Arc<BridgeOf>, a: &Active, stop: &AtomicBool, status: &Mutex<String>) {
    let target = match a {
        Active::Tcp(x) => format!("tcp:{x}"),
        Active::Unix(p) => format!("unix:{}", p.display()),
        Active::Ssl(x) => format!("ssl:{x}"),
    };
    let mut backoff = Duration::from_secs(1);
    let stopped = || stop.load(Ordering::Acquire) || b.stop.load(Ordering::Acquire);
    while !stopped() {
        match connect(b, a) {
            Ok(s) => {
                *lock(status) = "connected".into();
                let t0 = Instant::now();
                let kind = ConnKind::Controller(configured_name(b, &target));
                conn::run(b, s, kind, stop, None);
                *lock(status) = "disconnected".into();
                if t0.elapsed() >= Duration::from_secs(10) {
                    backoff = Duration::from_secs(1);
                }
            }
            Err(e) => {
                let now = format!("connecting (last error: {e})");
                let mut st = lock(status);
                if *st != now {
                    super::log(&format!("bridge {}: {target}: {e}", b.name));
                }
                *st = now;
            }
        }
        let max = Duration::from_millis(lock(&b.cfg).max_backoff_ms.max(1000));
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stopped() {
            std::thread::sleep(TICK * 4);
        }
        backoff = (backoff * 2).min(max);
    }
}

/// The target string as the user configured it (for matching connections to targets).
fn configured_name(b: &BridgeOf, normalised: &str) -> String {
    lock(&b.controllers)
        .iter()
        .find(|c| {
            Target::parse(&c.target).ok().is_some_and(|t| match t {
                Target::Active(Active::Tcp(x)) => format!("tcp:{x}") == normalised,
                Target::Active(Active::Unix(p)) => format!("unix:{}", p.display()) == normalised,
                Target::Active(Active::Ssl(x)) => format!("ssl:{x}") == normalised,
                _ => false,
            })
        })
        .map(|c| c.target.clone())
        .unwrap_or_else(|| normalised.to_string())
}

/// Serves `<bridge>.snoop`: each client gets a hello, then a raw copy of every message
/// sent or received on the bridge's connections.
pub fn snoop_loop(b: &Arc<BridgeOf>, l: UnixListener) {
    let mut backoff = Backoff::new(format!("bridge {}: snoop", b.name));
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    while !b.stop.load(Ordering::Acquire) {
        match l.accept() {
            Ok((s, _)) => {
                backoff.ok();
                if live.load(Ordering::Acquire) >= MAX_SNOOPS {
                    super::log(&format!(
                        "bridge {}: {MAX_SNOOPS} snoop clients already; refusing another",
                        b.name
                    ));
                    continue;
                }
                live.fetch_add(1, Ordering::AcqRel);
                let live2 = Arc::clone(&live);
                let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(4096);
                let versions = lock(&b.cfg).versions.clone();
                let b2 = Arc::clone(b);
                let r = spawn("ofsnoop-conn", move || {
                    serve_snoop(&b2, Stream::Unix(s), &versions, &rx);
                    live2.fetch_sub(1, Ordering::AcqRel);
                });
                match r {
                    Ok(_) => lock(&b.snoops).push(tx),
                    Err(e) => {
                        live.fetch_sub(1, Ordering::AcqRel);
                        super::log(&e);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait_readable(std::os::fd::AsRawFd::as_raw_fd(&l), ACCEPT_WAIT_MS)
            }
            Err(e) => backoff.failed(&e),
        }
    }
}

/// One snoop client: a hello, then every copied message until it stops reading or the bridge
/// stops.
fn serve_snoop(
    b: &BridgeOf,
    mut s: Stream,
    versions: &[u8],
    rx: &crossbeam_channel::Receiver<Vec<u8>>,
) {
    let _ = s.set_write_timeout(Duration::from_secs(2));
    let hello = openflow::wire::Message::Hello(openflow::wire::Hello::for_versions(versions));
    let top = versions
        .iter()
        .copied()
        .max()
        .unwrap_or(openflow::wire::OFP13);
    if let Ok(h) = openflow::wire::encode(&hello, top, 0) {
        if s.write_all(&h).is_err() {
            return;
        }
    }
    while !b.stop.load(Ordering::Acquire) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => {
                if s.write_all(&m).is_err() {
                    break;
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    s.shutdown();
}
