//! OVSDB's `sFlow` table, as ovs-vswitchd reads it.
//!
//! What: a bridge's `sflow` column names at most one `sFlow` row: `targets` (collectors,
//! `IP[:PORT]` or `[IPv6][:PORT]`, port 6343 by default), `sampling` (one packet in N, 400 by
//! default), `header` (bytes of each sampled packet, 128 by default), `polling` (seconds
//! between counter samples, 30 by default; 0 turns them off) and `agent` (the address the
//! datagrams name: an IP address, or an interface whose IPv4 address is used; unset or
//! unusable: the local address the host would use to reach the first collector).
//!
//! Bad values are refused with a warning that names the column; a row without one usable
//! target exports nothing. Parsing is pure except for the agent, resolved by [`resolve`].

use crate::vswitch::model::Tables;
use std::net::{IpAddr, SocketAddr};

/// sFlow's collector port.
pub const DEFAULT_PORT: u16 = 6343;
const DEFAULT_SAMPLING: u32 = 400;
const DEFAULT_HEADER: u16 = 128;
const DEFAULT_POLLING: u32 = 30;

/// One bridge's sFlow settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SflowConfig {
    pub agent: Option<String>,
    pub sampling: u32,
    pub header: u16,
    pub polling: u32,
    pub targets: Vec<SocketAddr>,
}

/// Each bridge's sFlow row, by bridge name (bridges without one are left out), and warnings.
pub fn from_tables(t: &Tables) -> (Vec<(String, SflowConfig)>, Vec<String>) {
    crate::collector::export_rows(t, "sflow", "sFlow", "sFlow", |r| {
        let max_header = i64::from(datapath::sample::MAX_HEADER);
        let sampling = r.int("sampling", 1, u32::MAX.into(), DEFAULT_SAMPLING.into());
        let header = r.int("header", 1, max_header, DEFAULT_HEADER.into());
        let polling = r.int("polling", 0, 86_400, DEFAULT_POLLING.into());
        let targets = r.targets(DEFAULT_PORT);
        (!targets.is_empty()).then(|| SflowConfig {
            agent: r.string("agent"),
            sampling: sampling as u32,
            header: header as u16,
            polling: polling as u32,
            targets,
        })
    })
}

/// The agent address of `cfg` (see the module documentation), or why the configured agent
/// could not be used (the fallback is then returned with the message).
pub fn resolve(cfg: &SflowConfig) -> (IpAddr, Option<String>) {
    let mut why = None;
    if let Some(a) = &cfg.agent {
        if let Ok(ip) = a.parse::<IpAddr>() {
            return (ip, None);
        }
        match netdev::interface_ipv4(a) {
            Ok(ip) => return (IpAddr::V4(ip), None),
            Err(e) => why = Some(format!("agent {a}: {e}")),
        }
    }
    let route = cfg.targets.first().and_then(crate::collector::route_source);
    (
        route.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        why,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tables(sflow: serde_json::Value) -> Tables {
        let mut t = Tables::new();
        let row = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        t.entry("Bridge".into()).or_default().insert(
            "b1".into(),
            row(json!({"name": "br0", "sflow": ["uuid", "s1"]})),
        );
        t.entry("Bridge".into())
            .or_default()
            .insert("b2".into(), row(json!({"name": "br1"})));
        t.entry("sFlow".into())
            .or_default()
            .insert("s1".into(), row(sflow));
        t
    }

    #[test]
    fn defaults_and_targets() {
        let (c, w) = from_tables(&tables(json!({
            "targets": ["set", ["127.0.0.1:6344", "10.0.0.9", "[::1]:7000", "bogus"]]
        })));
        assert_eq!(c.len(), 1);
        let (name, c) = &c[0];
        assert_eq!(name, "br0");
        assert_eq!((c.sampling, c.header, c.polling), (400, 128, 30));
        assert_eq!(
            c.targets,
            vec![
                "10.0.0.9:6343".parse::<SocketAddr>().expect("addr"),
                "127.0.0.1:6344".parse().expect("addr"),
                "[::1]:7000".parse().expect("addr"),
            ]
        );
        assert_eq!(
            w,
            vec!["bridge br0: sFlow: target 'bogus' is not IP[:PORT]; ignored"]
        );
    }

    #[test]
    fn out_of_range_values_fall_back_with_a_warning() {
        let (c, w) = from_tables(&tables(json!({
            "targets": "127.0.0.1:6343", "sampling": 0, "header": 1000, "polling": 5,
            "agent": "lo"
        })));
        let c = &c[0].1;
        assert_eq!((c.sampling, c.header, c.polling), (400, 128, 5));
        assert_eq!(c.agent.as_deref(), Some("lo"));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("sampling=0"), "{w:?}");
        assert!(w[1].contains("header=1000"), "{w:?}");
    }

    #[test]
    fn no_target_no_export() {
        let (c, w) = from_tables(&tables(json!({"targets": ["set", []]})));
        assert!(c.is_empty());
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn agent_resolution() {
        let mut c = SflowConfig {
            agent: Some("192.0.2.7".into()),
            sampling: 1,
            header: 128,
            polling: 0,
            targets: vec!["127.0.0.1:6343".parse().expect("addr")],
        };
        assert_eq!(resolve(&c), ("192.0.2.7".parse().expect("ip"), None));
        c.agent = Some("lo".into());
        assert_eq!(resolve(&c), ("127.0.0.1".parse().expect("ip"), None));
        c.agent = Some("no-such-if0".into());
        let (ip, why) = resolve(&c);
        assert_eq!(ip, "127.0.0.1".parse::<IpAddr>().expect("ip"));
        assert!(why.is_some_and(|w| w.contains("no-such-if0")));
    }
}
