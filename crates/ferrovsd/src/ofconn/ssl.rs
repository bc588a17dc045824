//! TLS for controller connections: `ssl:IP[:PORT]` and `pssl:[PORT][:IP]`.
//!
//! What: the key, certificate and CA certificate come from the database's `SSL` table (the
//! `Open_vSwitch` row's `ssl` column, as `ovs-vsctl set-ssl` writes it), exactly as
//! ovs-vswitchd takes them; the reconfiguration hands them to [`SslState::set`] on every pass.
//! One [`SslState`] is shared by the connection manager and all its bridges.
//!
//! How: an active `ssl:` target connects over TCP and runs the client handshake
//! ([`connect`]); a passive `pssl:` target accepts TCP connections, and the connection's own
//! thread runs the server handshake ([`ready`]) before the OpenFlow code sees the stream, so a
//! slow or hostile client never holds up the accept loop. Either way the OpenFlow code gets a
//! [`Stream::Tls`]: the plaintext end of the `tls` crate's relay.
//!
//! The configuration is looked up for every connection attempt through a
//! [`tls::ConfigCache`], so `set-ssl` and replaced files apply to the next connection without
//! restarting targets. Without an SSL row, or with files that do not load, an active target
//! reports the error in its status (`get-controller`, the log) and retries with its usual
//! backoff; a passive one logs it and closes each connection it accepts.

use super::target::Stream;
use super::BridgeOf;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tls::{ConfigCache, TlsConfig, TlsFiles};

/// The SSL settings in force. See the module documentation.
#[derive(Default)]
pub struct SslState {
    files: Mutex<Option<TlsFiles>>,
    cache: ConfigCache,
}

impl SslState {
    /// Sets the files (from the `SSL` row; `None` without one).
    pub fn set(&self, files: Option<TlsFiles>) {
        *super::lock(&self.files) = files;
    }

    /// The configuration for a new connection.
    pub fn config(&self) -> Result<Arc<TlsConfig>, String> {
        let files = super::lock(&self.files).clone().ok_or(
            "SSL is not configured: the Open_vSwitch table has no ssl row \
             (set one with ovs-vsctl set-ssl KEY CERT CACERT)",
        )?;
        self.cache.get(&files)
    }
}

/// Connects to `addr` (`IP:PORT` or `[IP6]:PORT`) and runs the client handshake.
pub fn connect(b: &BridgeOf, addr: &str) -> std::io::Result<Stream> {
    let cfg = b.ssl.config().map_err(std::io::Error::other)?;
    let sa: SocketAddr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address"))?;
    let tcp = TcpStream::connect_timeout(&sa, Duration::from_secs(3))?;
    let host = sa.ip().to_string();
    let s = tls::connect(tcp, &host, &cfg).map_err(std::io::Error::other)?;
    Ok(Stream::Tls(s, sa.to_string()))
}

/// Finishes an accepted stream: a `pssl:` connection gets its server handshake; any other
/// stream is returned as it is. `None` (after a log line) when TLS fails.
pub fn ready(b: &BridgeOf, s: Stream) -> Option<Stream> {
    let Stream::TlsPending(tcp) = s else {
        return Some(s);
    };
    let peer = tcp
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let r = b
        .ssl
        .config()
        .and_then(|cfg| tls::accept(tcp, &cfg).map_err(|e| format!("TLS handshake: {e}")));
    match r {
        Ok(u) => Some(Stream::Tls(u, peer)),
        Err(e) => {
            super::log(&format!(
                "bridge {}: refused a pssl connection from {peer}: {e}",
                b.name
            ));
            None
        }
    }
}
