//! The handshake driver and the relay thread between a TLS socket and a plain one.
//!
//! [`handshake`] runs on the caller's thread: the TCP socket is made non-blocking and
//! `poll(2)` waits for what rustls wants (to read, to write) until the handshake completes,
//! fails, or the deadline passes. [`relay`] then runs on a thread of its own for the life of
//! the connection, with two sockets: the TCP socket carrying TLS records, and our end of a
//! `UnixStream::pair()` carrying plaintext, whose other end the connection code reads and
//! writes as it would a TCP socket.
//!
//! Each turn of the relay loop first flushes what is pending (TLS records to the peer,
//! plaintext to the application), then polls only for what it can take in:
//! * from the peer only while less than [`MAX_PENDING`] bytes of plaintext wait for the
//!   application, so a slow reader stops us reading the network and TCP flow control pushes
//!   back on the peer;
//! * from the application only once every TLS record has been written, so a peer that stops
//!   reading stops the application's writes (whose write timeout then closes it).
//!
//! Both buffers are therefore bounded (by `MAX_PENDING` plus one read, and by [`CHUNK`]
//! plus record overhead). Closing is per direction, as with TCP: the peer's `close_notify`
//! (or EOF) becomes EOF for the application once its plaintext is delivered, and the
//! application's EOF (shutdown or close) becomes a `close_notify`. The relay ends, closing
//! both sockets, when both directions are closed, when the application's end is gone and
//! nothing more can be delivered, when the peer has not finished [`GRACE`] after the
//! application's close, or on any TLS or socket error, which is logged with the peer's
//! address.

use rustls::Connection;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// Plaintext read from the application per turn.
pub const CHUNK: usize = 16 * 1024;
/// How long a peer that takes no records may keep a connection whose local side closed.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(30);
/// Plaintext from the peer waiting for the application before we stop reading the peer.
pub const MAX_PENDING: usize = 64 * 1024;

/// One `poll(2)` over up to two descriptors: `events` per descriptor (0: not polled).
/// Returns the `revents`, or an error other than `EINTR`.
fn poll(fds: &[(RawFd, i16)], timeout_ms: i32) -> io::Result<Vec<i16>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd: if events == 0 { -1 } else { fd },
            events,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: `pfds` is a valid, initialised array of `pfds.len()` pollfd structures that
        // lives across the call; poll(2) only writes their `revents` fields.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return Ok(pfds.iter().map(|p| p.revents).collect());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

const READ: i16 = libc::POLLIN;
const WRITE: i16 = libc::POLLOUT;
const GONE: i16 = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted
}

/// Writes every queued TLS record the socket takes now. `Ok(false)` if it would block.
fn flush_tls(conn: &mut Connection, tcp: &mut TcpStream) -> io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(tcp) {
            Ok(_) => {}
            Err(e) if would_block(&e) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads records from the peer and processes them. `Ok(false)` at end of stream. On a TLS
/// error the alert rustls queued is sent (best effort) before the error is returned.
fn read_tls(conn: &mut Connection, tcp: &mut TcpStream) -> Result<bool, String> {
    match conn.read_tls(tcp) {
        Ok(0) => return Ok(false),
        Ok(_) => {}
        Err(e) if would_block(&e) => return Ok(true),
        Err(e) => return Err(e.to_string()),
    }
    if let Err(e) = conn.process_new_packets() {
        let _ = flush_tls(conn, tcp);
        return Err(e.to_string());
    }
    Ok(true)
}

/// Drives the handshake to its end. See the module documentation.
pub fn handshake(
    conn: &mut Connection,
    tcp: &mut TcpStream,
    deadline: Instant,
) -> Result<(), String> {
    tcp.set_nonblocking(true).map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    while conn.is_handshaking() {
        flush_tls(conn, tcp).map_err(|e| e.to_string())?;
        let mut events = 0;
        if conn.wants_read() {
            events |= READ;
        }
        if conn.wants_write() {
            events |= WRITE;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the TLS handshake timed out".into());
        }
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        let rev = poll(&[(tcp.as_raw_fd(), events)], ms).map_err(|e| e.to_string())?;
        if rev[0] & (READ | GONE) != 0 && !read_tls(conn, tcp)? {
            return Err("the peer closed the connection during the TLS handshake".into());
        }
    }
    Ok(())
}

/// The relay loop; `Err` says why it ended abnormally, for the log.
fn run(conn: &mut Connection, tcp: &mut TcpStream, app: &mut UnixStream) -> Result<(), String> {
    app.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut r = Relay {
        conn,
        tcp,
        app,
        to_app: Vec::new(),
        buf: vec![0u8; CHUNK],
        peer_done: false,
        app_done: false,
        app_hup: false,
        app_shut: false,
        grace_until: None,
    };
    loop {
        flush_tls(r.conn, r.tcp).map_err(|e| format!("sending: {e}"))?;
        if !r.write_app() || r.pass_on_close() {
            return Ok(());
        }
        let ev = r.interest();
        let timeout = r.poll_timeout()?;
        let rev = poll(
            &[
                (r.tcp.as_raw_fd(), ev.tcp),
                (r.app.as_raw_fd(), ev.app_watch),
            ],
            timeout,
        )
        .map_err(|e| format!("poll: {e}"))?;
        if rev[0] & (READ | GONE) != 0 && ev.tcp & READ != 0 {
            r.read_peer()?;
        }
        r.read_app(ev.app, rev[1])?;
    }
}

/// One connection's relay state.
struct Relay<'a> {
    conn: &'a mut Connection,
    tcp: &'a mut TcpStream,
    app: &'a mut UnixStream,
    /// Plaintext from the peer not yet taken by the application.
    to_app: Vec<u8>,
    buf: Vec<u8>,
    /// The peer sent close_notify or EOF.
    peer_done: bool,
    /// The application's end gave EOF (close_notify queued).
    app_done: bool,
    /// The application hung up while we were not reading it.
    app_hup: bool,
    /// The peer's close was passed on to the application.
    app_shut: bool,
    /// Once the application is done, the peer has until then to finish.
    grace_until: Option<Instant>,
}

/// What a turn polls for: the TCP socket's events, the application's, and what is
/// actually watched on the application's end.
struct Interest {
    tcp: i16,
    app: i16,
    app_watch: i16,
}

impl Relay<'_> {
    /// Gives the application what the peer sent, as far as it takes it. `false` when the
    /// application closed its end: nothing more to deliver.
    fn write_app(&mut self) -> bool {
        while !self.to_app.is_empty() {
            match self.app.write(&self.to_app) {
                Ok(n) => {
                    self.to_app.drain(..n);
                }
                Err(e) if would_block(&e) => break,
                Err(_) => return false,
            }
        }
        true
    }

    /// Once the peer is done and everything is delivered: passes the close on as EOF (the
    /// application may still write). `true` when both sides are done and flushed.
    fn pass_on_close(&mut self) -> bool {
        if self.peer_done && self.to_app.is_empty() {
            if self.app_done && !self.conn.wants_write() {
                return true;
            }
            if !self.app_shut {
                let _ = self.app.shutdown(std::net::Shutdown::Write);
                self.app_shut = true;
            }
        }
        false
    }

    /// Reads the peer while the application keeps up, the application while the peer's
    /// records are sent; watches the application for a hang-up while not reading it.
    fn interest(&self) -> Interest {
        let mut tcp = 0;
        if !self.peer_done && self.to_app.len() < MAX_PENDING {
            tcp |= READ;
        }
        if self.conn.wants_write() {
            tcp |= WRITE;
        }
        let mut app = 0;
        if !self.app_done && !self.conn.wants_write() {
            app |= READ;
        }
        if !self.to_app.is_empty() {
            app |= WRITE;
        }
        let app_watch = if app == 0 && !self.app_done && !self.app_hup {
            libc::POLLRDHUP
        } else {
            app
        };
        Interest {
            tcp,
            app,
            app_watch,
        }
    }

    /// The poll timeout: none until the application is done, then what is left of the
    /// peer's grace period; `Err` once it is over.
    fn poll_timeout(&mut self) -> Result<i32, String> {
        if (self.app_done || self.app_hup) && self.grace_until.is_none() {
            self.grace_until = Some(Instant::now() + GRACE);
        }
        let Some(t) = self.grace_until else {
            return Ok(-1);
        };
        let left = t.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the peer did not finish after the local side closed".into());
        }
        Ok(i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX))
    }

    /// Takes the peer's records and queues their plaintext for the application.
    fn read_peer(&mut self) -> Result<(), String> {
        if !read_tls(self.conn, self.tcp)? {
            self.peer_done = true;
        }
        loop {
            match self.conn.reader().read(&mut self.buf) {
                Ok(0) => {
                    self.peer_done = true;
                    return Ok(());
                }
                Ok(n) => self.to_app.extend_from_slice(&self.buf[..n]),
                Err(e) if would_block(&e) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.peer_done = true;
                    return Ok(());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Notes a hang-up of the application's end when it was only watched (`app_ev` 0),
    /// else reads it and queues what it wrote as TLS records; its EOF queues close_notify.
    fn read_app(&mut self, app_ev: i16, rev: i16) -> Result<(), String> {
        if app_ev == 0 {
            if rev & (libc::POLLRDHUP | GONE) != 0 {
                self.app_hup = true;
            }
            return Ok(());
        }
        if rev & (READ | GONE) == 0 || app_ev & READ == 0 {
            return Ok(());
        }
        match self.app.read(&mut self.buf) {
            Ok(0) => {
                self.conn.send_close_notify();
                self.app_done = true;
            }
            Ok(n) => self
                .conn
                .writer()
                .write_all(&self.buf[..n])
                .map_err(|e| e.to_string())?,
            Err(e) if would_block(&e) => {}
            Err(_) => {
                self.conn.send_close_notify();
                self.app_done = true;
            }
        }
        Ok(())
    }
}

/// Relays between `tcp` and `app` until either side ends. See the module documentation.
pub fn relay(mut conn: Connection, mut tcp: TcpStream, mut app: UnixStream, peer: &str) {
    if let Err(e) = run(&mut conn, &mut tcp, &mut app) {
        log::info!(target: "tls", "{peer}: TLS connection closed: {e}");
    }
    let _ = flush_tls(&mut conn, &mut tcp);
    let _ = tcp.shutdown(std::net::Shutdown::Both);
    let _ = app.shutdown(std::net::Shutdown::Both);
}
