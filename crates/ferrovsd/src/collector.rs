//! UDP collectors, shared by the flow exporters ([`crate::sflow`], [`crate::ipfix`]).
//!
//! What: collector addresses as OVS writes them in the `sFlow` and `IPFIX` tables (`IP[:PORT]`
//! or `[IPv6][:PORT]`, the protocol's port by default), one unconnected UDP socket per address
//! family to send from, and the local address the host would use towards a collector.
//!
//! Sending never blocks for long and never fails the caller: a collector that is down or
//! unreachable loses the datagram, as with any UDP export.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// Parses a collector address; `default_port` when none is given.
pub fn parse_target(s: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let host = s.trim_start_matches('[').trim_end_matches(']');
    host.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, default_port))
        .map_err(|_| format!("'{s}' is not IP[:PORT]"))
}

/// The local address the host would send from towards `target`.
pub fn route_source(target: &SocketAddr) -> Option<IpAddr> {
    let any: SocketAddr = if target.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(target).ok()?;
    s.local_addr().ok().map(|l| l.ip())
}

/// One sending socket per address family.
pub struct Sockets {
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
}

impl Sockets {
    pub fn new() -> Sockets {
        Sockets {
            v4: UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok(),
            v6: UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).ok(),
        }
    }

    /// Sends `bytes` to every target (errors are the collectors' loss, see the module essay).
    pub fn send(&self, targets: &[SocketAddr], bytes: &[u8]) {
        for t in targets {
            let sock = if t.is_ipv4() { &self.v4 } else { &self.v6 };
            if let Some(s) = sock {
                let _ = s.send_to(bytes, t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let p = |s| parse_target(s, 4739);
        assert_eq!(p("10.0.0.1"), Ok("10.0.0.1:4739".parse().expect("addr")));
        assert_eq!(p("10.0.0.1:9"), Ok("10.0.0.1:9".parse().expect("addr")));
        assert_eq!(p("[::1]"), Ok("[::1]:4739".parse().expect("addr")));
        assert_eq!(p("[::1]:7"), Ok("[::1]:7".parse().expect("addr")));
        assert!(p("collector.example").is_err());
    }

    #[test]
    fn loopback_route_and_send() {
        let t: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        assert_eq!(route_source(&t), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        Sockets::new().send(&[rx.local_addr().expect("addr")], b"hello");
        let mut b = [0u8; 8];
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .expect("timeout");
        assert_eq!(rx.recv(&mut b).expect("recv"), 5);
    }
}
