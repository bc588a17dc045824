//! `pssl:PORT[:IP]` remotes: JSON-RPC sessions over TLS.
//!
//! What: [`Server::listen_tls`] listens on TCP like `ptcp:` and runs the server side of a TLS
//! handshake on each accepted connection (a thread per connection, at most
//! [`tls::HANDSHAKE_TIMEOUT`]), then serves the plaintext end of the `tls` crate's relay as an
//! ordinary session. The configuration comes from a [`TlsSource`] called for every
//! connection, so the embedder decides where the files come from (command-line paths, or
//! columns of this very database) and new files apply to the next connection.
//!
//! A connection whose handshake fails (no configuration, a client certificate from another
//! CA, garbage bytes, a timeout) is logged and closed; it never becomes a session, so it can
//! neither read nor change the database.

use super::{accept_loop, Listener, Server, READ_TICK};
use connlimit::Slots;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

/// Where a TLS remote gets its configuration, per connection.
pub type TlsSource = Arc<dyn Fn() -> Result<Arc<tls::TlsConfig>, String> + Send + Sync>;

/// `PORT[:IP]` (IP defaults to 127.0.0.1, as for `ptcp:`) as a socket address.
fn passive_addr(target: &str, rest: &str) -> io::Result<String> {
    let (port, ip) = match rest.split_once(':') {
        Some((p, ip)) => (p, ip.trim_start_matches('[').trim_end_matches(']')),
        None => (rest, "127.0.0.1"),
    };
    let port: u16 = port.parse().map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("bad port in {target}"))
    })?;
    Ok(if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    })
}

impl Server {
    /// Listens on `pssl:PORT[:IP]` (port 0 picks a free one). See the module documentation.
    pub fn listen_tls(&self, target: &str, source: TlsSource) -> io::Result<Listener> {
        let rest = target.strip_prefix("pssl:").ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{target} is not pssl:PORT[:IP]"),
            )
        })?;
        let listener = TcpListener::bind(passive_addr(target, rest)?)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let server = self.clone();
        let name = format!("ovsdb pssl:{local}");
        let slots = Slots::new(name.clone(), self.shared.config.max_sessions);
        let thread = accept_loop(
            "ovsdb-listen-tls",
            name,
            stop.clone(),
            move || listener.accept().map(|(s, _)| s),
            move |s| server.spawn_tls(s, &slots, &source),
        )?;
        Ok(Listener {
            stop,
            wake: Some(Box::new(move || TcpStream::connect(local).is_ok())),
            thread: Some(thread),
            local: local.to_string(),
        })
    }

    /// Takes a session slot (a handshake in progress counts, so handshakes are bounded
    /// like sessions), then handshakes on a thread of its own and serves the plaintext.
    fn spawn_tls(&self, s: TcpStream, slots: &Arc<Slots>, source: &TlsSource) {
        let Ok(k) = s.try_clone() else {
            return;
        };
        let Some(slot) = slots.admit(Box::new(move || {
            let _ = k.shutdown(Shutdown::Both);
        })) else {
            return;
        };
        let (server, source) = (self.clone(), source.clone());
        let r = thread::Builder::new()
            .name("ovsdb-tls".into())
            .spawn(move || {
                let peer = s
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                let plain = match source().and_then(|cfg| tls::accept(s, &cfg)) {
                    Ok(p) => p,
                    Err(e) => {
                        log::warn!(target: "ovsdb", "pssl: refused a connection from {peer}: {e}");
                        return;
                    }
                };
                let (Ok(w), Ok(k)) = (plain.try_clone(), plain.try_clone()) else {
                    return;
                };
                let _ = w.set_write_timeout(Some(server.shared.config.write_timeout));
                let _ = plain.set_read_timeout(Some(READ_TICK));
                let probe = server.shared.config.probe_interval;
                server.spawn_session(
                    plain,
                    w,
                    Arc::new(move || {
                        let _ = k.shutdown(Shutdown::Both);
                    }),
                    Some(slot),
                    probe,
                );
            });
        if let Err(e) = r {
            log::warn!(target: "ovsdb", "cannot start a thread: {e}");
        }
    }
}
