//! The daemon verbs of the connection layer: controllers, fail-mode and per-bridge OpenFlow
//! settings. (`snoop` and `monitor` are OpenFlow clients inside the `ferrovs` binary: they
//! connect to `<rundir>/<bridge>.snoop` and `.mgmt` directly.)
//!
//! Settings (`set-openflow BR KEY=VALUE...`), with OVS's column names where OVS has one:
//! `protocols` (comma list of OpenFlow10, OpenFlow13, OpenFlow14, OpenFlow15),
//! `inactivity_probe` (ms, at least 100), `max_backoff` (ms, at least 1000),
//! `controller_rate_limit` and `controller_burst_limit` (packet-ins per second / burst),
//! `datapath_id` (16 hex digits, or `auto`), `fail_mode`. Connection settings apply to
//! connections made afterwards. Every argument is validated before anything changes.

use super::{lock, ConnMgr, FailMode};

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

fn proto_name(v: u8) -> &'static str {
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

/// Runs one verb.
pub fn run(mgr: &ConnMgr, method: &str, args: &[String]) -> Result<String, String> {
    let Some((br, rest)) = args.split_first() else {
        return Err(usage(method));
    };
    let b = mgr.bridge(br)?;
    match method {
        "set-controller" => {
            if rest.is_empty() {
                return Err(usage(method));
            }
            mgr.set_controllers(br, rest)?;
            Ok(String::new())
        }
        "del-controller" => {
            mgr.set_controllers(br, &[])?;
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
            lock(&b.cfg).fail_mode = parse_fail_mode(m)?;
            Ok(String::new())
        }
        "del-fail-mode" => {
            lock(&b.cfg).fail_mode = FailMode::Standalone;
            Ok(String::new())
        }
        "get-fail-mode" => Ok(match lock(&b.cfg).fail_mode {
            FailMode::Secure => "secure\n".into(),
            FailMode::Standalone => "standalone\n".into(),
        }),
        "set-openflow" => {
            if rest.is_empty() {
                return Err(usage(method));
            }
            let mut cfg = lock(&b.cfg).clone();
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
                    "protocols" => cfg.versions = parse_protocols(v)?,
                    "inactivity_probe" => cfg.inactivity_probe_ms = num(100)?,
                    "max_backoff" => cfg.max_backoff_ms = num(1000)?,
                    "controller_rate_limit" => cfg.rate_limit = num(1)? as u32,
                    "controller_burst_limit" => cfg.burst_limit = num(1)? as u32,
                    "fail_mode" => cfg.fail_mode = parse_fail_mode(v)?,
                    "datapath_id" => {
                        cfg.datapath_id = if v == "auto" {
                            None
                        } else {
                            let h = v.trim_start_matches("0x");
                            if h.is_empty() || h.len() > 16 {
                                return Err(format!("datapath_id: '{v}' is not 1-16 hex digits"));
                            }
                            Some(u64::from_str_radix(h, 16).map_err(|_| {
                                format!("datapath_id: '{v}' is not 1-16 hex digits")
                            })?)
                        }
                    }
                    _ => {
                        return Err(format!(
                            "unknown key '{k}' (protocols, inactivity_probe, max_backoff, controller_rate_limit, controller_burst_limit, datapath_id, fail_mode)"
                        ))
                    }
                }
            }
            *lock(&b.cfg) = cfg;
            Ok(String::new())
        }
        "get-openflow" => {
            let cfg = lock(&b.cfg).clone();
            let protos: Vec<&str> = cfg.versions.iter().map(|v| proto_name(*v)).collect();
            Ok(format!(
                "datapath_id={:016x}\nprotocols={}\nfail_mode={}\ninactivity_probe={}\nmax_backoff={}\ncontroller_rate_limit={}\ncontroller_burst_limit={}\nfail_open={}\n",
                b.datapath_id(),
                protos.join(","),
                if cfg.fail_mode == FailMode::Secure { "secure" } else { "standalone" },
                cfg.inactivity_probe_ms,
                cfg.max_backoff_ms,
                cfg.rate_limit,
                cfg.burst_limit,
                b.udpif.of().fail_open(),
            ))
        }
        _ => Err(format!("unknown verb {method}")),
    }
}
