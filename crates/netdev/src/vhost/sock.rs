//! The control thread of a vhost-user port: listening on (server) or connecting to (client)
//! the unix socket, and running one session at a time through the `vhost` crate's request
//! handler.
//!
//! ## How
//! *Server* (`dpdkvhostuser`): the port binds `<rundir>/<name>` (the name holds no `/` and
//! does not start with `.`, checked by the port); a stale socket file that nobody answers
//! on (a killed switch's) is replaced, a live one or any other kind of file is an error and
//! left alone. One frontend at a time: while a session runs, further connections wait in
//! the backlog. *Client* (`dpdkvhostuserclient`): the port connects to `vhost-server-path`,
//! and after a failure or the end of a session tries again every second, so a VM (or
//! testpmd) restarted on its side, or a restarted switch, finds its peer again without
//! anyone's help.
//!
//! A session reads one request at a time (`BackendReqHandler::handle_request`) after
//! `poll(2)` says the socket is readable, waking every 100 ms to notice that the port was
//! deleted. SET_VRING_ENABLE is honoured before SET_FEATURES too (QEMU and DPDK's
//! virtio-user send it then; the `vhost` crate refuses it, so the session peeks at it first).
//! A request the handler refuses, a malformed message or the frontend hanging up ends the
//! session: every ring is stopped, the memory unmapped (once the poll threads let
//! go of it) and the link goes down.
//!
//! ## Threading
//! One thread per port, named `vhost-NAME`; it holds a `Weak` on the port's shared state and
//! exits when the port is gone or `stop` is set.

use super::backend::Dev;
use super::{lock, Shared};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;
use vhost::vhost_user::message::FrontendReq;
use vhost::vhost_user::{BackendReqHandler, Error, VhostUserBackendReqHandlerMut};

const WAKE_MS: i32 = 100;
const RECONNECT: Duration = Duration::from_secs(1);

/// A running control thread.
pub struct Control {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The socket file we created (server), removed when the port goes.
    owned_path: Option<PathBuf>,
}

impl Drop for Control {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(p) = &self.owned_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Binds `path`, replacing a stale socket file: one nobody listens on, left behind by a
/// switch that was killed. Anything else there (a live socket, a regular file, a symbolic
/// link, a directory) is left alone and the port fails.
fn bind(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    match UnixListener::bind(path) {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if !std::fs::symlink_metadata(path)?.file_type().is_socket() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "a file that is not a socket is in the way",
                ));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "another process is listening on it",
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)
        }
        Err(e) => Err(e),
    }
}

/// Starts a server control thread on `path`.
pub fn serve(path: &Path, shared: Weak<Shared>, name: &str) -> std::io::Result<Control> {
    let l = bind(path)?;
    l.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let thread = std::thread::Builder::new()
        .name(format!("vhost-{name}"))
        .spawn(move || loop {
            if st.load(Ordering::Acquire) {
                return;
            }
            if !readable(l.as_raw_fd()) {
                continue;
            }
            match l.accept() {
                Ok((s, _)) => {
                    if !session(s, &shared, &st) {
                        return;
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(WAKE_MS as u64)),
            }
        })?;
    Ok(Control {
        stop,
        thread: Some(thread),
        owned_path: Some(path.to_path_buf()),
    })
}

/// Starts a client control thread that connects to `path` and reconnects.
pub fn connect(path: &Path, shared: Weak<Shared>, name: &str) -> std::io::Result<Control> {
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let path = path.to_path_buf();
    let thread = std::thread::Builder::new()
        .name(format!("vhost-{name}"))
        .spawn(move || loop {
            if st.load(Ordering::Acquire) {
                return;
            }
            match UnixStream::connect(&path) {
                Ok(s) => {
                    if !session(s, &shared, &st) {
                        return;
                    }
                }
                Err(e) => {
                    if let Some(sh) = shared.upgrade() {
                        *lock(&sh.last_reason) = format!("connect {}: {e}", path.display());
                    } else {
                        return;
                    }
                }
            }
            // Wait a second before the next attempt, noticing deletion meanwhile.
            let mut waited = Duration::ZERO;
            while waited < RECONNECT && !st.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(WAKE_MS as u64));
                waited += Duration::from_millis(WAKE_MS as u64);
            }
        })?;
    Ok(Control {
        stop,
        thread: Some(thread),
        owned_path: None,
    })
}

/// Waits up to WAKE_MS for `fd` to be readable (or hung up).
fn readable(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polls one live pollfd struct for at most WAKE_MS.
    let n = unsafe { libc::poll(&mut p, 1, WAKE_MS) };
    n > 0
}

/// The ring index and state of a SET_VRING_ENABLE request at the head of the socket, if one
/// is there whole (a 12-byte header and its 8-byte body), without consuming it.
fn peek_vring_enable(fd: i32) -> Option<(u32, u32)> {
    let mut b = [0u8; 20];
    // SAFETY: receives at most `b.len()` bytes into a live local buffer; MSG_PEEK leaves
    // them (and any file descriptors sent with them) queued for the request handler.
    let n = unsafe {
        libc::recv(
            fd,
            b.as_mut_ptr().cast(),
            b.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n != b.len() as isize {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (word(0) == FrontendReq::SET_VRING_ENABLE as u32 && word(8) == 8).then(|| (word(12), word(16)))
}

/// Runs one session to its end. Returns false if the port is gone (the thread should exit).
fn session(s: UnixStream, shared: &Weak<Shared>, stop: &AtomicBool) -> bool {
    let Some(sh) = shared.upgrade() else {
        return false;
    };
    if s.set_nonblocking(false).is_err() {
        return true;
    }
    lock(&sh.last_reason).clear();
    let dev = Arc::new(Mutex::new(Dev::new(sh.clone())));
    drop(sh);
    let mut h = BackendReqHandler::from_stream(s, dev.clone());
    let reason = loop {
        if stop.load(Ordering::Acquire) {
            break "interface deleted".to_string();
        }
        if shared.strong_count() == 0 {
            break "interface deleted".to_string();
        }
        if !readable(h.as_raw_fd()) {
            continue;
        }
        let enable = peek_vring_enable(h.as_raw_fd());
        match h.handle_request() {
            Ok(()) => {}
            // QEMU enables its rings while it sets the device up, before SET_FEATURES acks
            // VHOST_USER_F_PROTOCOL_FEATURES, and does not repeat it when it starts them; the
            // `vhost` crate refuses SET_VRING_ENABLE until then. The state is kept, as DPDK's
            // vhost library (and so OVS) keeps it: without it the rings never run.
            Err(Error::InactiveFeature(_)) if enable.is_some_and(|(_, num)| num <= 1) => {
                if let Some((index, num)) = enable {
                    if let Err(e) = lock(&dev).set_vring_enable(index, num == 1) {
                        break format!("session ended: {e}");
                    }
                }
            }
            // Any other request for something not negotiated: the message was read whole
            // and nothing was done; DPDK's vhost library goes on too.
            Err(
                Error::InactiveFeature(_)
                | Error::InactiveOperation(_)
                | Error::InvalidOperation(_),
            ) => {
                if let Some(sh) = shared.upgrade() {
                    sh.ignored.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(Error::Disconnected | Error::PartialMessage) => {
                break "frontend disconnected".to_string()
            }
            Err(e) => break format!("session ended: {e}"),
        }
    };
    let mut d = lock(&dev);
    d.reset();
    if let Some(sh) = shared.upgrade() {
        let mut r = lock(&sh.last_reason);
        *r = if r.is_empty() {
            reason
        } else {
            format!("{reason}: {r}")
        };
    }
    true
}
