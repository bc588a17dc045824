//! TLS for ferrovs's OpenFlow (`ssl:`, `pssl:`) and OVSDB (`pssl:`) connections.
//!
//! What: Open vSwitch's TLS, with rustls. A configuration is three PEM files — a private
//! key, its certificate and a CA certificate — loaded by [`TlsConfig::load`] (or through a
//! [`ConfigCache`], which reloads when the files change). Both sides authenticate: a server
//! demands a client certificate, and every peer's certificate must chain to the CA
//! certificate; names are not checked (see [`config`]).
//!
//! How: the daemon's connection code works on blocking std streams, with one reader and one
//! writer thread per connection (`try_clone`). Rather than teach it TLS, [`accept`] and
//! [`connect`] run the handshake on the caller's thread (at most [`HANDSHAKE_TIMEOUT`]) and
//! then hand back one end of a `UnixStream::pair()`; a relay thread per connection
//! ([`relay`]) moves bytes between the other end and the TLS session with `poll(2)`. The
//! returned stream behaves as the TCP socket would: EOF when the peer closes or TLS fails,
//! and shutting it down (or dropping it) closes the TLS connection with a `close_notify`.
//!
//! Invariants: nothing from the peer can panic this crate; every failure is a `String` for
//! the caller (handshake) or a log line (after it). The relay's buffers are bounded (see
//! [`relay`]), and a handshake that does not finish in time is abandoned.

pub mod config;
pub mod relay;

pub use config::{ConfigCache, TlsConfig, TlsFiles};

use rustls::{ClientConnection, Connection, ServerConnection};
use rustls_pki_types::ServerName;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn peer_of(tcp: &TcpStream) -> String {
    tcp.peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn finish(mut conn: Connection, mut tcp: TcpStream) -> Result<UnixStream, String> {
    let peer = peer_of(&tcp);
    relay::handshake(&mut conn, &mut tcp, Instant::now() + HANDSHAKE_TIMEOUT)?;
    let (app, ours) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    std::thread::Builder::new()
        .name("tls-relay".into())
        .spawn(move || relay::relay(conn, tcp, ours, &peer))
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    Ok(app)
}

/// Serves TLS on an accepted socket: handshake (the client must present a certificate that
/// chains to the CA), then a plaintext stream. The error says why the handshake failed.
pub fn accept(tcp: TcpStream, cfg: &TlsConfig) -> Result<UnixStream, String> {
    let conn = ServerConnection::new(Arc::clone(&cfg.server)).map_err(|e| e.to_string())?;
    finish(Connection::Server(conn), tcp)
}

/// Runs TLS as a client on a connected socket (the server's certificate must chain to the CA;
/// `server_name`, a host name or an address, is only sent as SNI when it is a name).
pub fn connect(tcp: TcpStream, server_name: &str, cfg: &TlsConfig) -> Result<UnixStream, String> {
    let host = server_name.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| format!("'{server_name}' is not a host name or an address"))?;
    let conn = ClientConnection::new(Arc::clone(&cfg.client), name).map_err(|e| e.to_string())?;
    finish(Connection::Client(conn), tcp)
}
