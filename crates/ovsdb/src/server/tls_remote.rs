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

use super::{Listener, Server};
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

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
        let stop2 = stop.clone();
        let server = self.clone();
        let thread = thread::Builder::new()
            .name("ovsdb-listen-tls".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        break;
                    }
                    match conn {
                        Ok(s) => {
                            let (server, source) = (server.clone(), source.clone());
                            let r = thread::Builder::new()
                                .name("ovsdb-tls".into())
                                .spawn(move || server.serve_tls(s, &source));
                            if let Err(e) = r {
                                log::warn!(target: "ovsdb", "cannot start a thread: {e}");
                            }
                        }
                        Err(e) => {
                            log::warn!(target: "ovsdb", "accept failed: {e}");
                            thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })?;
        Ok(Listener {
            stop,
            wake: Some(Box::new(move || TcpStream::connect(local).is_ok())),
            thread: Some(thread),
            local: local.to_string(),
        })
    }

    /// Handshake, then a session on the plaintext stream.
    fn serve_tls(&self, s: TcpStream, source: &TlsSource) {
        let peer = s
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        let plain = source().and_then(|cfg| tls::accept(s, &cfg));
        let plain = match plain {
            Ok(p) => p,
            Err(e) => {
                log::warn!(target: "ovsdb", "pssl: refused a connection from {peer}: {e}");
                return;
            }
        };
        let (Ok(w), Ok(k)) = (plain.try_clone(), plain.try_clone()) else {
            return;
        };
        let _ = w.set_write_timeout(Some(self.shared.config.write_timeout));
        self.serve_stream(
            plain,
            w,
            Arc::new(move || {
                let _ = k.shutdown(Shutdown::Both);
            }),
        );
    }
}
