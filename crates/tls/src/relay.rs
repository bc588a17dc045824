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
    let mut to_app: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    // peer_done: the peer sent close_notify or EOF; app_done: the application's end gave
    // EOF (close_notify queued); app_hup: it hung up while we were not reading it.
    let (mut peer_done, mut app_done, mut app_hup, mut app_shut) = (false, false, false, false);
    let mut grace_until: Option<Instant> = None;
    loop {
        flush_tls(conn, tcp).map_err(|e| format!("sending: {e}"))?;
        while !to_app.is_empty() {
            match app.write(&to_app) {
                Ok(n) => {
                    to_app.drain(..n);
                }
                Err(e) if would_block(&e) => break,
                // The application closed its end: nothing more to deliver.
                Err(_) => return Ok(()),
            }
        }
        if peer_done && to_app.is_empty() {
            if app_done && !conn.wants_write() {
                return Ok(());
            }
            if !app_shut {
                // Pass the peer's close on as EOF; the application may still write.
                let _ = app.shutdown(std::net::Shutdown::Write);
                app_shut = true;
            }
        }
        if (app_done || app_hup) && grace_until.is_none() {
            grace_until = Some(Instant::now() + GRACE);
        }
        let mut tcp_ev = 0;
        if !peer_done && to_app.len() < MAX_PENDING {
            tcp_ev |= READ;
        }
        if conn.wants_write() {
            tcp_ev |= WRITE;
        }
        let mut app_ev = 0;
        if !app_done && !conn.wants_write() {
            app_ev |= READ;
        }
        if !to_app.is_empty() {
            app_ev |= WRITE;
        }
        // While we do not read the application's end we still watch it for a hang-up.
        let app_watch = if app_ev == 0 && !app_done && !app_hup {
            libc::POLLRDHUP
        } else {
            app_ev
        };
        // Once the application is done, the peer has a grace period to finish.
        let timeout = match grace_until {
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err("the peer did not finish after the local side closed".into());
                }
                i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX)
            }
            None => -1,
        };
        let rev = poll(
            &[(tcp.as_raw_fd(), tcp_ev), (app.as_raw_fd(), app_watch)],
            timeout,
        )
        .map_err(|e| format!("poll: {e}"))?;
        if rev[0] & (READ | GONE) != 0 && tcp_ev & READ != 0 {
            if !read_tls(conn, tcp)? {
                peer_done = true;
            }
            loop {
                match conn.reader().read(&mut buf) {
                    Ok(0) => {
                        peer_done = true;
                        break;
                    }
                    Ok(n) => to_app.extend_from_slice(&buf[..n]),
                    Err(e) if would_block(&e) => break,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        peer_done = true;
                        break;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        if app_ev == 0 {
            if rev[1] & (libc::POLLRDHUP | GONE) != 0 {
                app_hup = true;
            }
        } else if rev[1] & (READ | GONE) != 0 && app_ev & READ != 0 {
            match app.read(&mut buf) {
                Ok(0) => {
                    conn.send_close_notify();
                    app_done = true;
                }
                Ok(n) => conn
                    .writer()
                    .write_all(&buf[..n])
                    .map_err(|e| e.to_string())?,
                Err(e) if would_block(&e) => {}
                Err(_) => {
                    conn.send_close_notify();
                    app_done = true;
                }
            }
        }
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
