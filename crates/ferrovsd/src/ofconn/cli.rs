//! The daemon verbs of the connection layer: controllers, fail-mode and per-bridge OpenFlow
//! settings. (`snoop` and `monitor` are OpenFlow clients inside the `ferrovs` binary: they
//! connect to `<rundir>/<bridge>.snoop` and `.mgmt` directly.)
//!
//! Settings (`set-openflow BR KEY=VALUE...`), with OVS's column names where OVS has one:
//! `protocols` (comma list of OpenFlow10, OpenFlow13, OpenFlow14, OpenFlow15),
//! `inactivity_probe` (ms, at least 100), `max_backoff` (ms, at least 1000),
//! `controller_rate_limit` and `controller_burst_limit` (packet-ins per second / burst),
//! `datapath_id` (1-16 hex digits, or `auto`), `fail_mode`. Connection settings apply to
//! connections made afterwards. Every argument is validated before anything changes.
//!
//! What the configuration database holds — the controllers, `fail_mode`, `protocols` and the
//! datapath ID (`other_config:datapath-id`) — is written there, as `ovs-vsctl` writes it,
//! through a [`BridgeDb`]; the reconfiguration then applies it to the connection layer, and it
//! survives restarts. The verb returns once the change is applied. Only the settings the
//! database has no column for (probe, backoff, packet-in limits) are set here directly.

use super::{lock, BridgeOf, ConnMgr, FailMode};

/// A change to a bridge's OpenFlow columns in the configuration database; `None` leaves a
/// column as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BridgeChange {
    /// Controller targets (replacing the bridge's Controller rows; empty deletes them).
    pub controllers: Option<Vec<String>>,
    /// `fail_mode`: `Some(None)` clears it (the default, standalone).
    pub fail_mode: Option<Option<FailMode>>,
    /// `protocols`, by wire version.
    pub protocols: Option<Vec<u8>>,
    /// `other_config:datapath-id`: `Some(None)` removes it (derived from the MAC again).
    pub datapath_id: Option<Option<u64>>,
}

impl BridgeChange {
    fn is_empty(&self) -> bool {
        *self == BridgeChange::default()
    }
}

/// Where [`BridgeChange`]s go: the configuration database. Implementations commit the change
/// and wait until the switch has applied it.
pub trait BridgeDb {
    fn update_bridge(&self, bridge: &str, change: &BridgeChange) -> Result<(), String>;
}

/// The verbs and their usage.
pub const VERBS: &[(&str, &str)] = &[
    ("set-controller", "BR TARGET..."),
    ("del-controller", "BR"),
    ("get-controller", "BR"),
    ("set-fail-mode", "BR secure|standalone"),
    ("get-fail-mode", "BR"),
    ("del-fail-mode", "BR"),
    ("set-openflow", "BR KEY=VALUE..."),
    ("get-openflow", "BR"),
];

/// True if `m` is one of [`VERBS`].
pub fn is_verb(m: &str) -> bool {
    VERBS.iter().any(|v| v.0 == m)
}

fn usage(m: &str) -> String {
    let u = VERBS.iter().find(|v| v.0 == m).map(|v| v.1).unwrap_or("");
    format!("usage: {m} {u}")
}

/// Parses a `protocols` list.
pub fn parse_protocols(s: &str) -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n = match p {
            "OpenFlow10" => openflow::wire::OFP10,
            "OpenFlow13" => openflow::wire::OFP13,
            "OpenFlow14" => openflow::wire::OFP14,
            "OpenFlow15" => openflow::wire::OFP15,
            _ => {
                return Err(format!(
                    "unknown protocol '{p}' (OpenFlow10, OpenFlow13, OpenFlow14, OpenFlow15)"
                ))
            }
        };
        if !v.contains(&n) {
            v.push(n);
        }
    }
    if v.is_empty() {
        return Err("protocols: empty list".into());
    }
    v.sort_unstable();
    Ok(v)
}

/// Parses the Bridge `protocols` column: as [`parse_protocols`], but OpenFlow 1.1 and
/// 1.2 (which the schema allows and ferrovs does not speak) are left out, so a bridge
/// set as OVS's tools set it (`OpenFlow10,OpenFlow11,...,OpenFlow15`) speaks the rest; a
/// list of only those two is refused.
pub fn parse_db_protocols(names: &[String]) -> Result<Vec<u8>, String> {
    let spoken: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|p| !matches!(*p, "OpenFlow11" | "OpenFlow12"))
        .collect();
    if spoken.is_empty() {
        return Err(format!(
            "protocols: {} (OpenFlow 1.1 and 1.2 are not spoken; add OpenFlow10, OpenFlow13, OpenFlow14 or OpenFlow15)",
            names.join(",")
        ));
    }
    parse_protocols(&spoken.join(","))
}

/// The database's name of wire version `v`.
pub fn proto_name(v: u8) -> &'static str {
    match v {
        1 => "OpenFlow10",
        4 => "OpenFlow13",
        5 => "OpenFlow14",
        6 => "OpenFlow15",
        _ => "?",
    }
}

fn parse_fail_mode(s: &str) -> Result<FailMode, String> {
    match s {
        "secure" => Ok(FailMode::Secure),
        "standalone" => Ok(FailMode::Standalone),
        _ => Err(format!("'{s}': fail mode must be secure or standalone")),
    }
}

/// Parses a `datapath_id` value: 1-16 hex digits (optionally `0x`), or `auto` (`None`).
fn parse_datapath_id(v: &str) -> Result<Option<u64>, String> {
    if v == "auto" {
        return Ok(None);
    }
    let h = v.trim_start_matches("0x");
    if h.is_empty() || h.len() > 16 {
        return Err(format!("datapath_id: '{v}' is not 1-16 hex digits"));
    }
    u64::from_str_radix(h, 16)
        .map(Some)
        .map_err(|_| format!("datapath_id: '{v}' is not 1-16 hex digits"))
}

/// Runs one verb; database settings go through `db`.
pub fn run(
    mgr: &ConnMgr,
    db: &dyn BridgeDb,
    method: &str,
    args: &[String],
) -> Result<String, String> {
    let Some((br, rest)) = args.split_first() else {
        return Err(usage(method));
    };
    let b = mgr.bridge(br)?;
    match method {
        "set-controller" => {
            if rest.is_empty() {
                return Err(usage(method));
            }
            for t in rest {
                super::target::Target::parse(t)?;
                crate::policy::check_controller(br, t)?;
            }
            let change = BridgeChange {
                controllers: Some(rest.to_vec()),
                ..BridgeChange::default()
            };
            db.update_bridge(br, &change)?;
            Ok(String::new())
        }
        "del-controller" => {
            if !rest.is_empty() {
                return Err(usage(method));
            }
            let change = BridgeChange {
                controllers: Some(Vec::new()),
                ..BridgeChange::default()
            };
            db.update_bridge(br, &change)?;
            Ok(String::new())
        }
        "get-controller" => {
            let mut s = String::new();
            for (t, st) in mgr.get_controllers(br)? {
                s.push_str(&format!("{t}\t{st}\n"));
            }
            Ok(s)
        }
        "set-fail-mode" => {
            let [m] = rest else {
                return Err(usage(method));
            };
            let change = BridgeChange {
                fail_mode: Some(Some(parse_fail_mode(m)?)),
                ..BridgeChange::default()
            };
            db.update_bridge(br, &change)?;
            Ok(String::new())
        }
        "del-fail-mode" => {
            if !rest.is_empty() {
                return Err(usage(method));
            }
            let change = BridgeChange {
                fail_mode: Some(None),
                ..BridgeChange::default()
            };
            db.update_bridge(br, &change)?;
            Ok(String::new())
        }
        "get-fail-mode" => Ok(match lock(&b.cfg).fail_mode {
            FailMode::Secure => "secure\n".into(),
            FailMode::Standalone => "standalone\n".into(),
        }),
        "set-openflow" => set_openflow(&b, db, br, rest),
        "get-openflow" => Ok(get_openflow(&b)),
        _ => Err(format!("unknown verb {method}")),
    }
}

/// `set-openflow BRIDGE KEY=VALUE...`.
fn set_openflow(
    b: &BridgeOf,
    db: &dyn BridgeDb,
    br: &str,
    rest: &[String],
) -> Result<String, String> {
    if rest.is_empty() {
        return Err(usage("set-openflow"));
    }
    // Validate everything first; then the database part, then the rest.
    let mut change = BridgeChange::default();
    let mut conn = lock(&b.cfg).clone();
    for kv in rest {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("'{kv}' is not KEY=VALUE"))?;
        let num = |lo: u64| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n >= lo && *n <= u64::from(u32::MAX))
                .ok_or_else(|| format!("{k}: '{v}' is not a number >= {lo}"))
        };
        match k {
            "protocols" => change.protocols = Some(parse_protocols(v)?),
            "inactivity_probe" => conn.inactivity_probe_ms = num(100)?,
            "max_backoff" => conn.max_backoff_ms = num(1000)?,
            "controller_rate_limit" => conn.rate_limit = num(1)? as u32,
            "controller_burst_limit" => conn.burst_limit = num(1)? as u32,
            "fail_mode" => change.fail_mode = Some(Some(parse_fail_mode(v)?)),
            "datapath_id" => change.datapath_id = Some(parse_datapath_id(v)?),
            _ => {
                return Err(format!(
                    "unknown key '{k}' (protocols, inactivity_probe, max_backoff, controller_rate_limit, controller_burst_limit, datapath_id, fail_mode)"
                ))
            }
        }
    }
    if !change.is_empty() {
        db.update_bridge(br, &change)?;
    }
    // Only the settings without a database column: the rest was just applied from
    // the database and must not be overwritten with the copy taken above.
    let mut cfg = lock(&b.cfg);
    cfg.inactivity_probe_ms = conn.inactivity_probe_ms;
    cfg.max_backoff_ms = conn.max_backoff_ms;
    cfg.rate_limit = conn.rate_limit;
    cfg.burst_limit = conn.burst_limit;
    Ok(String::new())
}

/// `get-openflow BRIDGE`.
fn get_openflow(b: &BridgeOf) -> String {
    let cfg = lock(&b.cfg).clone();
    let protos: Vec<&str> = cfg.versions.iter().map(|v| proto_name(*v)).collect();
    format!(
        "datapath_id={:016x}\nprotocols={}\nfail_mode={}\ninactivity_probe={}\nmax_backoff={}\ncontroller_rate_limit={}\ncontroller_burst_limit={}\nfail_open={}\n",
        b.datapath_id(),
        protos.join(","),
        if cfg.fail_mode == FailMode::Secure { "secure" } else { "standalone" },
        cfg.inactivity_probe_ms,
        cfg.max_backoff_ms,
        cfg.rate_limit,
        cfg.burst_limit,
        b.udpif.of().fail_open(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn database_protocols_leave_out_versions_not_spoken() {
        let all = names(&[
            "OpenFlow10",
            "OpenFlow11",
            "OpenFlow12",
            "OpenFlow13",
            "OpenFlow14",
            "OpenFlow15",
        ]);
        assert_eq!(parse_db_protocols(&all), Ok(vec![1, 4, 5, 6]));
        let err = parse_db_protocols(&names(&["OpenFlow11", "OpenFlow12"])).unwrap_err();
        assert!(err.contains("OpenFlow11,OpenFlow12"), "{err}");
        assert!(parse_db_protocols(&names(&["OpenFlow16"])).is_err());
        assert!(parse_protocols("OpenFlow11").is_err());
    }
}
