//! memif control sockets and the threads that run them.
//!
//! ## What
//! * A *server* socket (`role=server`, the default) is one listening `SOCK_SEQPACKET` unix
//!   socket per path, shared by every interface configured on that path (they differ by
//!   `id`): the process-wide registry [`server_for`] hands out the one [`Server`] per path,
//!   and the last interface to go away closes it and removes the socket file. Its control
//!   thread accepts clients, runs a [`ServerSession`] per connection and, when a session
//!   completes, maps the client's memory and publishes the [`Conn`] to the interface.
//! * A *client* interface (`role=client`) has a control thread of its own that connects to
//!   the path, retrying every second until a server answers and again after the server goes
//!   away, and runs a [`ClientSession`].
//!
//! ## Never blocking on a peer
//! Sockets are non-blocking; each message is one datagram, so there are no partial reads.
//! A peer that does not read its socket (a send that would block) is disconnected. A session
//! must complete its handshake within [`HANDSHAKE`]; at most [`MAX_SESSIONS`] connections are
//! held per server socket. A received descriptor is kept only where the protocol expects
//! one, at most one per message (extra descriptors and truncated control data end the
//! session); every received descriptor is closed-on-exec. A connection whose ring indices a
//! poll thread found impossible is ended by its control thread (checked at least every
//! 250 ms), with that reason.
//!
//! ## Threading
//! Control threads own their sessions and sockets. They meet the port's handles only in
//! the port's [`Shared`] state (publish/withdraw under a mutex plus a generation counter the
//! poll threads read once per batch). They hold only weak references to interfaces, so
//! deleting an interface is noticed (its session is disconnected) and never waits on them.

use super::conn::{eventfd, Conn};
use super::ctl::{ClientCfg, ClientSession, Iface, ServerSession, Step};
use super::msg::{self, Msg, MSG_SIZE};
use super::Shared;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a connection whose ring indices were found corrupt is ended.
const BROKEN: &str = "ring index out of range (corrupt ring)";

/// Time allowed from accept (or connect) to `CONNECTED`.
pub const HANDSHAKE: Duration = Duration::from_secs(5);
/// Most simultaneous control connections on one server socket.
pub const MAX_SESSIONS: usize = 64;
/// Client reconnection interval.
pub const RETRY: Duration = Duration::from_secs(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A control socket's address: a socket file, or a name in Linux's abstract socket namespace
/// (DPDK's default; the name is the path string, with no trailing NULs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addr {
    pub path: PathBuf,
    pub abstract_ns: bool,
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.abstract_ns { "@" } else { "" };
        write!(f, "{at}{}", self.path.display())
    }
}

fn sockaddr(addr: &Addr) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_un is plain data; all-zero is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let b = addr.path.as_os_str().as_bytes();
    let skip = usize::from(addr.abstract_ns);
    if b.is_empty() || b.len() + skip >= a.sun_path.len() || b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket path too long or empty",
        ));
    }
    for (d, s) in a.sun_path.iter_mut().skip(skip).zip(b) {
        *d = *s as libc::c_char;
    }
    let len = if addr.abstract_ns {
        std::mem::offset_of!(libc::sockaddr_un, sun_path) + 1 + b.len()
    } else {
        std::mem::size_of::<libc::sockaddr_un>()
    };
    Ok((a, len as libc::socklen_t))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn connect(addr: &Addr) -> io::Result<OwnedFd> {
    let (a, len) = sockaddr(addr)?;
    let s = seqpacket()?;
    // SAFETY: connect with a live sockaddr_un of `len` bytes.
    let r = unsafe { libc::connect(s.as_raw_fd(), (&a as *const libc::sockaddr_un).cast(), len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s)
}

/// Binds and listens on `addr`, removing a stale socket file (one nobody answers on).
fn listen(addr: &Addr) -> io::Result<OwnedFd> {
    let (a, len) = sockaddr(addr)?;
    let path = &addr.path;
    if !addr.abstract_ns && path.exists() {
        if connect(addr).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another process is listening on it",
            ));
        }
        std::fs::remove_file(path)?;
    }
    let s = seqpacket()?;
    // SAFETY: bind/listen with a live sockaddr_un of `len` bytes.
    unsafe {
        if libc::bind(s.as_raw_fd(), (&a as *const libc::sockaddr_un).cast(), len) < 0
            || libc::listen(s.as_raw_fd(), 16) < 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(s)
}

/// Sends one message (with an optional descriptor) without blocking.
fn send(fd: RawFd, m: &Msg, pass: Option<RawFd>) -> io::Result<()> {
    let rec = msg::encode(m);
    let mut iov = libc::iovec {
        iov_base: rec.as_ptr() as *mut libc::c_void,
        iov_len: rec.len(),
    };
    let mut cbuf = [0u64; 4];
    // SAFETY: msghdr is plain data; all-zero is valid.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    if let Some(p) = pass {
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(4) } as usize;
        mh.msg_control = cbuf.as_mut_ptr().cast();
        mh.msg_controllen = space;
        // SAFETY: the control buffer (32 bytes) holds one cmsg with a 4-byte payload; the
        // header pointer comes from CMSG_FIRSTHDR over that buffer.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&mh);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut i32, p);
        }
    }
    // SAFETY: sendmsg with a msghdr pointing at live buffers.
    let r = unsafe { libc::sendmsg(fd, &mh, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What one receive gave.
enum Recv {
    Msg(Vec<u8>, Option<OwnedFd>),
    Again,
    Closed,
    Bad(String),
}

fn recv(fd: RawFd) -> Recv {
    let mut rec = [0u8; MSG_SIZE + 1];
    let mut iov = libc::iovec {
        iov_base: rec.as_mut_ptr().cast(),
        iov_len: rec.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: msghdr is plain data; all-zero is valid.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.as_mut_ptr().cast();
    mh.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: recvmsg into live buffers described by `mh`.
    let r = unsafe { libc::recvmsg(fd, &mut mh, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Recv::Again,
            _ => Recv::Closed,
        };
    }
    if r == 0 {
        return Recv::Closed;
    }
    // Take ownership of every descriptor received, so none leaks whatever happens next.
    let mut fds: Vec<OwnedFd> = Vec::new();
    // SAFETY: walks the cmsg list the kernel wrote into `cbuf`, within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&mh);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let n = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..n {
                    let f = std::ptr::read_unaligned((data as *const i32).add(i));
                    if f >= 0 {
                        fds.push(OwnedFd::from_raw_fd(f));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&mh, c);
        }
    }
    if mh.msg_flags & (libc::MSG_CTRUNC | libc::MSG_TRUNC) != 0 {
        return Recv::Bad("truncated control message".into());
    }
    if fds.len() > 1 {
        return Recv::Bad(format!("{} descriptors with one message", fds.len()));
    }
    Recv::Msg(rec[..r as usize].to_vec(), fds.pop())
}

fn disconnect(fd: RawFd, reason: &str) {
    let _ = send(
        fd,
        &Msg::Disconnect {
            code: 1,
            reason: reason.to_string(),
        },
        None,
    );
}

fn poll_in(fds: &[RawFd], timeout: Duration) -> Vec<libc::c_short> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: poll over a live array of pollfds.
    unsafe {
        libc::poll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            timeout.as_millis() as i32,
        );
    }
    p.iter().map(|x| x.revents).collect()
}

struct ServerInner {
    addr: Addr,
    ports: Mutex<HashMap<u32, Weak<Shared>>>,
    wake: OwnedFd,
    stop: AtomicBool,
}

/// A listening server socket shared by the interfaces on one path.
pub struct Server {
    inner: Arc<ServerInner>,
    thread: Option<JoinHandle<()>>,
}

static SERVERS: Mutex<Vec<(Addr, Weak<Server>)>> = Mutex::new(Vec::new());

/// The server socket on `path`, created (bound, listening, thread started) if needed.
pub fn server_for(addr: &Addr) -> io::Result<Arc<Server>> {
    let mut reg = lock(&SERVERS);
    reg.retain(|(_, w)| w.strong_count() > 0);
    if let Some(s) = reg
        .iter()
        .find(|(p, _)| p == addr)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(s);
    }
    let listener = listen(addr)?;
    let inner = Arc::new(ServerInner {
        addr: addr.clone(),
        ports: Mutex::new(HashMap::new()),
        wake: eventfd()?,
        stop: AtomicBool::new(false),
    });
    let i2 = inner.clone();
    let thread = std::thread::Builder::new()
        .name("memif-ctl".into())
        .spawn(move || server_loop(&i2, listener))?;
    let s = Arc::new(Server {
        inner,
        thread: Some(thread),
    });
    reg.push((addr.clone(), Arc::downgrade(&s)));
    Ok(s)
}

impl Server {
    /// Attaches interface `id`; false if the id is taken on this socket.
    pub fn attach(&self, id: u32, port: &Arc<Shared>) -> bool {
        let mut ports = lock(&self.inner.ports);
        if ports.get(&id).is_some_and(|w| w.strong_count() > 0) {
            return false;
        }
        ports.insert(id, Arc::downgrade(port));
        true
    }

    /// Detaches interface `id` (its session, if any, is disconnected).
    pub fn detach(&self, id: u32) {
        lock(&self.inner.ports).remove(&id);
        super::ring::signal(self.inner.wake.as_raw_fd());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Release);
        super::ring::signal(self.inner.wake.as_raw_fd());
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        if !self.inner.addr.abstract_ns {
            let _ = std::fs::remove_file(&self.inner.addr.path);
        }
    }
}

struct SrvConn {
    fd: OwnedFd,
    session: ServerSession,
    deadline: Option<Instant>,
    /// The interface this connection is connected to.
    port: Option<(u32, Weak<Shared>)>,
    /// The connection published for it.
    conn: Weak<Conn>,
}

fn server_loop(inner: &ServerInner, listener: OwnedFd) {
    let mut conns: Vec<SrvConn> = Vec::new();
    loop {
        let mut fds = vec![inner.wake.as_raw_fd(), listener.as_raw_fd()];
        fds.extend(conns.iter().map(|c| c.fd.as_raw_fd()));
        let rev = poll_in(&fds, Duration::from_millis(250));
        if inner.stop.load(Ordering::Acquire) {
            for c in &conns {
                disconnect(c.fd.as_raw_fd(), "interface deleted");
                withdraw(&c.port);
            }
            return;
        }
        if rev.first().is_some_and(|&r| r != 0) {
            super::ring::drain(inner.wake.as_raw_fd());
        }
        // Sessions first (their indices match `rev`), then new connections.
        let mut keep = Vec::with_capacity(conns.len());
        for (i, mut c) in conns.into_iter().enumerate() {
            let r = rev.get(i + 2).copied().unwrap_or(0);
            let result = if r != 0 {
                serve(inner, &mut c, &keep)
            } else {
                Ok(())
            };
            let result = result.and_then(|_| match (&c.port, c.deadline) {
                (Some((id, w)), _) if !attached(inner, *id, w) => Err("interface deleted".into()),
                (None, Some(d)) if Instant::now() > d => Err("handshake timed out".into()),
                _ if c.conn.upgrade().is_some_and(|x| x.is_broken()) => Err(BROKEN.into()),
                _ => Ok(()),
            });
            match result {
                Ok(()) => keep.push(c),
                Err(why) => {
                    if !why.is_empty() {
                        disconnect(c.fd.as_raw_fd(), &why);
                    }
                    withdraw(&c.port);
                }
            }
        }
        conns = keep;
        if rev.get(1).is_some_and(|&r| r != 0) {
            loop {
                // SAFETY: accept4 on our listening socket; no address wanted.
                let fd = unsafe {
                    libc::accept4(
                        listener.as_raw_fd(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    )
                };
                if fd < 0 {
                    break;
                }
                // SAFETY: a fresh descriptor owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                if conns.len() >= MAX_SESSIONS {
                    disconnect(fd.as_raw_fd(), "too many connections");
                    continue;
                }
                if send(fd.as_raw_fd(), &super::ctl::hello(), None).is_ok() {
                    conns.push(SrvConn {
                        fd,
                        session: ServerSession::new(),
                        deadline: Some(Instant::now() + HANDSHAKE),
                        port: None,
                        conn: Weak::new(),
                    });
                }
            }
        }
    }
}

/// Whether interface `id` is still the one `w` points at.
fn attached(inner: &ServerInner, id: u32, w: &Weak<Shared>) -> bool {
    w.strong_count() > 0 && lock(&inner.ports).get(&id).is_some_and(|x| x.ptr_eq(w))
}

fn withdraw(port: &Option<(u32, Weak<Shared>)>) {
    if let Some(p) = port.as_ref().and_then(|(_, w)| w.upgrade()) {
        p.publish(None, "peer disconnected");
    }
}

/// Reads everything pending on one server connection. `Err("")` closes quietly.
fn serve(inner: &ServerInner, c: &mut SrvConn, others: &[SrvConn]) -> Result<(), String> {
    for _ in 0..64 {
        let (rec, fd) = match recv(c.fd.as_raw_fd()) {
            Recv::Again => return Ok(()),
            Recv::Closed => return Err(String::new()),
            Recv::Bad(why) => return Err(why),
            Recv::Msg(r, f) => (r, f),
        };
        let m = msg::decode(&rec).map_err(|e| e.to_string())?;
        let lookup = |id: u32| -> Option<Iface> {
            let p = lock(&inner.ports).get(&id)?.upgrade()?;
            let claimed = others.iter().any(|o| {
                o.session.id() == Some(id) || o.port.as_ref().is_some_and(|(i, _)| *i == id)
            });
            Some(Iface {
                secret: p.cfg.secret,
                busy: claimed || p.is_up(),
            })
        };
        match c.session.on_msg(m, fd, &lookup)? {
            Step::Send(v) => {
                for (m, f) in v {
                    send(c.fd.as_raw_fd(), &m, f).map_err(|e| format!("send: {e}"))?;
                }
            }
            Step::Connect {
                id,
                regions,
                rings,
                peer,
            } => {
                let p = lock(&inner.ports)
                    .get(&id)
                    .and_then(|w| w.upgrade())
                    .ok_or("interface deleted")?;
                if p.is_up() {
                    return Err(format!("interface {id} is already connected"));
                }
                let conn = Conn::server(regions, rings, p.cfg.bsize, &p.epolls, peer)?;
                send(
                    c.fd.as_raw_fd(),
                    &Msg::Connected {
                        if_name: p.name.clone(),
                    },
                    None,
                )
                .map_err(|e| format!("send: {e}"))?;
                let conn = Arc::new(conn);
                c.conn = Arc::downgrade(&conn);
                p.publish(Some(conn), "");
                c.port = Some((id, Arc::downgrade(&p)));
                c.deadline = None;
            }
            Step::Connected { .. } => return Err("internal state".into()),
            Step::Closed(why) => {
                if let Some(p) = c.port.as_ref().and_then(|(_, w)| w.upgrade()) {
                    p.publish(None, &why);
                }
                c.port = None;
                return Err(String::new());
            }
        }
    }
    Ok(())
}

/// A client interface's control thread.
pub struct Client {
    stop: Arc<AtomicBool>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Client {
    pub fn start(addr: Addr, cfg: ClientCfg, port: Weak<Shared>) -> io::Result<Client> {
        let stop = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(eventfd()?);
        let (s2, w2) = (stop.clone(), wake.clone());
        let thread = std::thread::Builder::new()
            .name("memif-client".into())
            .spawn(move || client_loop(&addr, &cfg, &port, &s2, &w2))?;
        Ok(Client {
            stop,
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        super::ring::signal(self.wake.as_raw_fd());
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

fn client_loop(
    addr: &Addr,
    cfg: &ClientCfg,
    port: &Weak<Shared>,
    stop: &AtomicBool,
    wake: &OwnedFd,
) {
    while !stop.load(Ordering::Acquire) {
        if let Ok(s) = connect(addr) {
            let why = client_session(&s, cfg, port, stop, wake);
            if let Some(p) = port.upgrade() {
                p.publish(None, &why);
            }
            if stop.load(Ordering::Acquire) {
                disconnect(s.as_raw_fd(), "interface deleted");
                return;
            }
        }
        poll_in(&[wake.as_raw_fd()], RETRY);
        super::ring::drain(wake.as_raw_fd());
    }
}

/// Runs one client connection until it ends; returns why.
fn client_session(
    s: &OwnedFd,
    cfg: &ClientCfg,
    port: &Weak<Shared>,
    stop: &AtomicBool,
    wake: &OwnedFd,
) -> String {
    let mut session = ClientSession::new(cfg.clone());
    let deadline = Instant::now() + HANDSHAKE;
    let mut connected = false;
    let mut conn: Weak<Conn> = Weak::new();
    loop {
        if stop.load(Ordering::Acquire) {
            return "interface deleted".into();
        }
        if conn.upgrade().is_some_and(|x| x.is_broken()) {
            disconnect(s.as_raw_fd(), BROKEN);
            return BROKEN.into();
        }
        if !connected && Instant::now() > deadline {
            disconnect(s.as_raw_fd(), "handshake timed out");
            return "handshake timed out".into();
        }
        let rev = poll_in(
            &[wake.as_raw_fd(), s.as_raw_fd()],
            Duration::from_millis(250),
        );
        if rev.first().is_some_and(|&r| r != 0) {
            super::ring::drain(wake.as_raw_fd());
        }
        if rev.get(1).is_none_or(|&r| r == 0) {
            continue;
        }
        loop {
            let rec = match recv(s.as_raw_fd()) {
                Recv::Again => break,
                Recv::Closed => return "server closed the connection".into(),
                Recv::Bad(why) => {
                    disconnect(s.as_raw_fd(), &why);
                    return why;
                }
                // The server never sends descriptors: any that came are closed here.
                Recv::Msg(r, _) => r,
            };
            let step = msg::decode(&rec)
                .map_err(|e| e.to_string())
                .and_then(|m| session.on_msg(m));
            match step {
                Ok(Step::Send(v)) => {
                    for (m, f) in v {
                        if let Err(e) = send(s.as_raw_fd(), &m, f) {
                            return format!("send: {e}");
                        }
                    }
                }
                Ok(Step::Connected { mem, peer }) => {
                    let Some(p) = port.upgrade() else {
                        return "interface deleted".into();
                    };
                    let c = Arc::new(Conn::client(*mem, &p.epolls, peer));
                    conn = Arc::downgrade(&c);
                    p.publish(Some(c), "");
                    connected = true;
                }
                Ok(Step::Closed(why)) => return why,
                Ok(Step::Connect { .. }) => return "internal state".into(),
                Err(why) => {
                    disconnect(s.as_raw_fd(), &why);
                    return why;
                }
            }
        }
    }
}
