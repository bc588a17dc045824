//! UDP collectors, shared by the flow exporters ([`crate::sflow`], [`crate::ipfix`]).
//!
//! What: collector addresses as OVS writes them in the `sFlow` and `IPFIX` tables (`IP[:PORT]`
//! or `[IPv6][:PORT]`, the protocol's port by default), one unconnected UDP socket per address
//! family to send from, and the local address the host would use towards a collector.
//!
//! Sending never blocks for long and never fails the caller: a collector that is down or
//! unreachable loses the datagram, as with any UDP export.
//!
//! Also what both exporters do with the database: [`export_rows`] reads each bridge's row of
//! their table (numbers range-checked, targets parsed, warnings naming the column), and
//! [`Applied`] remembers what was applied, so a pass that changes nothing costs nothing.

use crate::vswitch::model::{int_of, set_items, string_of, uuids, Tables};
use serde_json::{Map, Value};
use std::collections::HashMap;
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

    /// Sends `bytes` to every target (errors are the collectors' loss, see the module essay);
    /// returns how many sends went out and how many failed, for the exporters' counters.
    pub fn send(&self, targets: &[SocketAddr], bytes: &[u8]) -> (u64, u64) {
        let (mut sent, mut failed) = (0, 0);
        for t in targets {
            let sock = if t.is_ipv4() { &self.v4 } else { &self.v6 };
            match sock.as_ref().map(|s| s.send_to(bytes, t)) {
                Some(Ok(_)) => sent += 1,
                _ => failed += 1,
            }
        }
        (sent, failed)
    }
}

/// One bridge's row of an exporter's table, read with the shared checks.
pub struct ExportRow<'a> {
    pub bridge: String,
    row: &'a Map<String, Value>,
    what: &'static str,
    warnings: &'a mut Vec<String>,
}

impl<'a> ExportRow<'a> {
    /// Row `row` of the exporter `what`, read for bridge `bridge`.
    pub fn new(
        bridge: String,
        row: &'a Map<String, Value>,
        what: &'static str,
        warnings: &'a mut Vec<String>,
    ) -> ExportRow<'a> {
        ExportRow {
            bridge,
            row,
            what,
            warnings,
        }
    }

    /// Logs `msg` about this row ("bridge BR: WHAT: msg").
    pub fn warn(&mut self, msg: String) {
        self.warnings
            .push(format!("bridge {}: {}: {msg}", self.bridge, self.what));
    }

    /// Integer column `col`: `def` when unset or outside `min..=max` (with a warning).
    pub fn int(&mut self, col: &str, min: i64, max: i64, def: i64) -> i64 {
        match int_of(self.row.get(col)) {
            None => def,
            Some(v) if (min..=max).contains(&v) => v,
            Some(v) => {
                self.warn(format!(
                    "{col}={v} is out of range {min}..{max}; using {def}"
                ));
                def
            }
        }
    }

    /// String column `col`, unset or empty as `None`.
    pub fn string(&self, col: &str) -> Option<String> {
        string_of(self.row.get(col)).filter(|s| !s.is_empty())
    }

    /// The `targets` column: parsed, sorted, without duplicates; bad ones warned about.
    pub fn targets(&mut self, default_port: u16) -> Vec<SocketAddr> {
        let mut out = Vec::new();
        for v in set_items(self.row.get("targets")) {
            let Some(s) = v.as_str() else { continue };
            match parse_target(s, default_port) {
                Ok(a) => out.push(a),
                Err(e) => self.warn(format!("target {e}; ignored")),
            }
        }
        out.sort();
        out.dedup();
        if out.is_empty() {
            self.warn("no usable target; nothing is exported".into());
        }
        out
    }
}

/// For every bridge whose `column` names a row of `table`, the settings `read` makes of it
/// (`None`: that bridge does not export), by bridge name; and the warnings. `what` names the
/// exporter in warnings.
pub fn export_rows<C>(
    t: &Tables,
    column: &str,
    table: &str,
    what: &'static str,
    mut read: impl FnMut(&mut ExportRow<'_>) -> Option<C>,
) -> (Vec<(String, C)>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let (Some(bridges), Some(rows)) = (t.get("Bridge"), t.get(table)) else {
        return (out, warnings);
    };
    for br in bridges.values() {
        let Some(bridge) = string_of(br.get("name")) else {
            continue;
        };
        let Some(row) = uuids(br.get(column)).first().and_then(|u| rows.get(u)) else {
            continue;
        };
        let mut r = ExportRow {
            bridge,
            row,
            what,
            warnings: &mut warnings,
        };
        if let Some(c) = read(&mut r) {
            out.push((r.bridge, c));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    (out, warnings)
}

/// What an exporter last applied: per bridge, its settings and the sampler id it was given.
pub struct Applied<C> {
    map: HashMap<String, (C, u32)>,
    next_id: u32,
}

impl<C> Default for Applied<C> {
    fn default() -> Self {
        Applied {
            map: HashMap::new(),
            next_id: 0,
        }
    }
}

impl<C: PartialEq> Applied<C> {
    /// `None` when `wanted` is what was applied and the ports did not change; otherwise the
    /// bridges that stop exporting (forgotten here; their samplers are the caller's to remove).
    pub fn changes(&mut self, wanted: &[(String, C)], ports_changed: bool) -> Option<Vec<String>> {
        let same = wanted.len() == self.map.len()
            && wanted
                .iter()
                .all(|(b, c)| self.map.get(b).is_some_and(|(a, _)| a == c));
        if same && !ports_changed {
            return None;
        }
        let gone: Vec<String> = self
            .map
            .keys()
            .filter(|b| !wanted.iter().any(|(w, _)| w == *b))
            .cloned()
            .collect();
        for b in &gone {
            self.map.remove(b);
        }
        Some(gone)
    }

    /// The sampler id of `bridge`: the one it has, or a new one.
    pub fn id(&mut self, bridge: &str) -> u32 {
        match self.map.get(bridge) {
            Some((_, id)) => *id,
            None => {
                self.next_id += 1;
                self.next_id
            }
        }
    }

    /// Records that `bridge` exports with `cfg` under sampler `id`.
    pub fn insert(&mut self, bridge: String, cfg: C, id: u32) {
        self.map.insert(bridge, (cfg, id));
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
    fn applied_reports_changes_once() {
        let mut a: Applied<u32> = Applied::default();
        let w = vec![("br0".to_string(), 1u32), ("br1".to_string(), 2)];
        assert_eq!(a.changes(&w, false), Some(vec![]));
        for (b, c) in &w {
            let id = a.id(b);
            a.insert(b.clone(), *c, id);
        }
        assert_eq!(a.changes(&w, false), None);
        assert_eq!(a.changes(&w, true), Some(vec![]));
        let id0 = a.id("br0");
        assert_eq!(a.changes(&w[..1], false), Some(vec!["br1".to_string()]));
        assert_eq!(a.id("br0"), id0);
        assert_ne!(a.id("br1"), id0);
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
