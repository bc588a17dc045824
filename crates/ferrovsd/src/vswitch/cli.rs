//! The `ferrovs` structural verbs (`add-br`, `del-br`, `add-port`, `del-port`, `set-bridge`)
//! as database transactions, and the database side of the OpenFlow verbs (`set-controller`,
//! `del-controller`, `set-fail-mode`, `del-fail-mode`, and `set-openflow`'s `protocols`,
//! `fail_mode` and `datapath_id`): [`BridgeDb`] for [`Vswitch`].
//!
//! Each verb does what `ovs-vsctl` does — insert or delete Bridge/Port/Interface rows, bump
//! `next_cfg` — and then waits until the reconfiguration thread has applied that `next_cfg`,
//! so when the verb returns the datapath already looks the way the database says.
//!
//! Error handling (the decision): **validate everything before committing**, so a refused
//! command changes nothing, in the database or the datapath, and its message names the
//! problem as before (`add-port: no such bridge 'br9'`). Validation checks names, numbers and
//! VLANs, looks the bridge and port up in the current database contents, checks module
//! settings on a throw-away module instance, and — for `add-port` — actually opens the netdev
//! (unknown type, unknown option, missing device or file all fail here). The opened port is
//! handed to the reconfiguration through the [`super::reconfigure::Stash`], so the device is
//! not opened twice. If something still fails after the commit (a race with another client,
//! say), the verb reports the Interface `error` column as `ovs-vsctl` would show it and exits
//! non-zero; the configuration then stays in the database, as with `ovs-vsctl`.
//!
//! Threads: runs on a control-socket thread, serialised by the daemon's command mutex.

use super::db::txn_error;
use super::model::{self, map_of, string_of, uuids, Tables};
use super::Vswitch;
use crate::config::{parse_port_request, split_kv};
use crate::ofconn::cli::{proto_name, BridgeChange, BridgeDb};
use crate::ofconn::FailMode;
use datapath::{registry, VlanMode};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long a verb waits for the switch to apply its change.
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);

type Row = Map<String, Value>;

fn snapshot(vs: &Vswitch) -> Result<Tables, String> {
    vs.db.snapshot().ok_or_else(|| {
        "the configuration database is not available (not connected, or another daemon holds \
         the ovs_vswitchd lock)"
            .to_string()
    })
}

fn rows<'a>(t: &'a Tables, table: &str) -> impl Iterator<Item = (&'a String, &'a Row)> {
    t.get(table).into_iter().flat_map(|m| m.iter())
}

fn name_of(r: &Row) -> String {
    string_of(r.get("name")).unwrap_or_default()
}

fn find_bridge<'a>(t: &'a Tables, name: &str) -> Option<(&'a String, &'a Row)> {
    rows(t, "Bridge").find(|(_, r)| name_of(r) == name)
}

/// The bridge (name) owning port row `port_uuid`.
fn port_bridge(t: &Tables, port_uuid: &str) -> Option<String> {
    rows(t, "Bridge")
        .find(|(_, b)| uuids(b.get("ports")).iter().any(|p| p == port_uuid))
        .map(|(_, b)| name_of(b))
}

/// A port (or interface) named `name` in any bridge: (port uuid, bridge name).
fn find_port(t: &Tables, name: &str) -> Option<(String, String)> {
    for (pu, p) in rows(t, "Port") {
        let Some(br) = port_bridge(t, pu) else {
            continue;
        };
        if name_of(p) == name {
            return Some((pu.clone(), br));
        }
        for iu in uuids(p.get("interfaces")) {
            if t.get("Interface")
                .and_then(|m| m.get(&iu))
                .is_some_and(|i| name_of(i) == name)
            {
                return Some((pu.clone(), br));
            }
        }
    }
    None
}

fn str_map(pairs: &[(String, String)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// Commits `ops` plus a `next_cfg` bump and returns the new `next_cfg`.
fn commit(vs: &Vswitch, mut ops: Vec<Value>) -> Result<i64, String> {
    ops.push(json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["next_cfg", "+=", 1]]}));
    ops.push(json!({"op": "select", "table": "Open_vSwitch", "where": [],
                    "columns": ["next_cfg"]}));
    let r = vs.db.transact(ops, false)?;
    if let Some(e) = txn_error(&r) {
        return Err(e);
    }
    r.as_array()
        .and_then(|a| a.last())
        .and_then(|s| s.get("rows"))
        .and_then(|rows| rows.get(0))
        .and_then(|row| row.get("next_cfg"))
        .and_then(Value::as_i64)
        .ok_or_else(|| "the database has no Open_vSwitch row".to_string())
}

/// Waits for `cfg`, then reports the `error` column of the interfaces named `names`.
fn settle(vs: &Vswitch, cfg: i64, names: &[&str]) -> Result<String, String> {
    vs.wait_applied(cfg, APPLY_TIMEOUT)?;
    let t = snapshot(vs)?;
    for (_, i) in rows(&t, "Interface") {
        let n = name_of(i);
        if !names.contains(&n.as_str()) {
            continue;
        }
        if let Some(e) = string_of(i.get("error")) {
            return Err(format!("Error detected while setting up '{n}': {e}"));
        }
    }
    Ok(String::new())
}

/// Checks a bridge or port name (see [`crate::policy::check_name`]).
pub fn valid_name(n: &str) -> Result<(), String> {
    crate::policy::check_name(n)
}

fn kv_pairs(words: &[String]) -> Result<Vec<(String, String)>, String> {
    words
        .iter()
        .map(|w| split_kv(w).map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// Checks module settings on a throw-away instance of `module_name`.
fn probe_settings(module_name: &str, pairs: &[(String, String)]) -> Result<(), String> {
    let mut m = registry::create(module_name)?;
    for (k, v) in pairs {
        if k == "datapath-id" {
            model::parse_dpid(v)
                .ok_or_else(|| format!("datapath-id: '{v}' is not 16 hex digits"))?;
            continue;
        }
        if model::BRIDGE_KEYS.contains(&k.as_str()) {
            continue;
        }
        m.configure(k, v)?;
    }
    Ok(())
}

/// `add-br BR [module=M] [KEY=VALUE...]`.
pub fn add_br(vs: &Vswitch, args: &[String], usage: &str) -> Result<String, String> {
    let Some((br, kvs)) = args.split_first() else {
        return Err(usage.to_string());
    };
    valid_name(br)?;
    let pairs = kv_pairs(kvs)?;
    let module_name = pairs
        .iter()
        .find(|(k, _)| k == "module")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "openflow".into());
    probe_settings(&module_name, &pairs)?;
    let t = snapshot(vs)?;
    if find_bridge(&t, br).is_some() {
        return Err(format!("bridge '{br}' already exists"));
    }
    if let Some((_, owner)) = find_port(&t, br) {
        return Err(format!("'{br}' is already a port of bridge '{owner}'"));
    }
    let ops = vec![
        json!({"op": "insert", "table": "Interface", "uuid-name": "iface",
               "row": {"name": br, "type": "internal"}}),
        json!({"op": "insert", "table": "Port", "uuid-name": "port",
               "row": {"name": br, "interfaces": ["named-uuid", "iface"]}}),
        json!({"op": "insert", "table": "Bridge", "uuid-name": "br",
               "row": {"name": br, "ports": ["named-uuid", "port"],
                       "other_config": str_map(&pairs)}}),
        json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
               "mutations": [["bridges", "insert", ["set", [["named-uuid", "br"]]]]]}),
    ];
    let cfg = commit(vs, ops)?;
    settle(vs, cfg, &[br])
}

/// `del-br BR`.
pub fn del_br(vs: &Vswitch, args: &[String], usage: &str) -> Result<String, String> {
    let [br] = args else {
        return Err(usage.to_string());
    };
    let t = snapshot(vs)?;
    let Some((bu, brow)) = find_bridge(&t, br) else {
        return Err(format!("no such bridge '{br}'"));
    };
    let mut ops = vec![json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [["bridges", "delete", ["set", [["uuid", bu]]]]]})];
    ops.push(delete("Bridge", bu));
    for pu in uuids(brow.get("ports")) {
        if let Some(p) = t.get("Port").and_then(|m| m.get(&pu)) {
            for iu in uuids(p.get("interfaces")) {
                ops.push(delete("Interface", &iu));
            }
        }
        ops.push(delete("Port", &pu));
    }
    let cfg = commit(vs, ops)?;
    vs.wait_applied(cfg, APPLY_TIMEOUT)?;
    Ok(String::new())
}

fn delete(table: &str, uuid: &str) -> Value {
    json!({"op": "delete", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]]})
}

/// `add-port BR PORT [type=T] [ofport=N] [tag=N|trunks=N,...] [KEY=VALUE...]`.
pub fn add_port(vs: &Vswitch, args: &[String], usage: &str) -> Result<String, String> {
    let [br, port, words @ ..] = args else {
        return Err(usage.to_string());
    };
    valid_name(port)?;
    let req = parse_port_request(words)?;
    let t = snapshot(vs)?;
    let Some((bu, brow)) = find_bridge(&t, br) else {
        return Err(format!("no such bridge '{br}'"));
    };
    if let Some((_, owner)) = find_port(&t, port) {
        return Err(format!("port '{port}' already exists on bridge '{owner}'"));
    }
    if find_bridge(&t, port).is_some() {
        return Err(format!("'{port}' is the name of a bridge"));
    }
    if let Some(n) = req.ofport {
        for pu in uuids(brow.get("ports")) {
            let Some(p) = t.get("Port").and_then(|m| m.get(&pu)) else {
                continue;
            };
            for iu in uuids(p.get("interfaces")) {
                let Some(i) = t.get("Interface").and_then(|m| m.get(&iu)) else {
                    continue;
                };
                let used = [
                    model::int_of(i.get("ofport_request")),
                    model::int_of(i.get("ofport")),
                ]
                .contains(&Some(i64::from(n)));
                if used {
                    return Err(format!(
                        "ofport {n} is already used by port '{}'",
                        name_of(i)
                    ));
                }
            }
        }
    }
    crate::policy::check_port(&req.kind, &req.options)?;
    let opened = netdev::open(port, &req.kind, &req.options).map_err(|e| e.to_string())?;
    vs.stash.put(&req.kind, &req.options, opened);
    let options: Vec<(String, String)> = req
        .options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut iface = json!({"name": port,
        "type": if req.kind == "system" { "" } else { req.kind.as_str() },
        "options": str_map(&options)});
    if let Some(n) = req.ofport {
        iface["ofport_request"] = json!(n);
    }
    let mut prow = json!({"name": port, "interfaces": ["named-uuid", "iface"]});
    match &req.vlan {
        VlanMode::Access(tag) => prow["tag"] = json!(tag),
        VlanMode::Trunk(Some(list)) => prow["trunks"] = json!(["set", list]),
        VlanMode::Trunk(None) => {}
    }
    let ops = vec![
        json!({"op": "insert", "table": "Interface", "uuid-name": "iface", "row": iface}),
        json!({"op": "insert", "table": "Port", "uuid-name": "port", "row": prow}),
        json!({"op": "mutate", "table": "Bridge", "where": [["_uuid", "==", ["uuid", bu]]],
               "mutations": [["ports", "insert", ["set", [["named-uuid", "port"]]]]]}),
    ];
    let cfg = match commit(vs, ops) {
        Ok(c) => c,
        Err(e) => {
            vs.stash.discard(port);
            return Err(e);
        }
    };
    settle(vs, cfg, &[port])
}

/// `del-port [BR] PORT`.
pub fn del_port(vs: &Vswitch, args: &[String], usage: &str) -> Result<String, String> {
    let (br, port) = match args {
        [p] => (None, p),
        [b, p] => (Some(b), p),
        _ => return Err(usage.to_string()),
    };
    let t = snapshot(vs)?;
    if let Some(b) = br {
        if find_bridge(&t, b).is_none() {
            return Err(format!("no such bridge '{b}'"));
        }
    }
    let found = find_port(&t, port).filter(|(_, owner)| br.is_none_or(|b| b == owner));
    let Some((pu, owner)) = found else {
        return Err(match br {
            Some(b) => format!("bridge '{b}' has no port '{port}'"),
            None => format!("no port named '{port}'"),
        });
    };
    if owner == *port {
        return Err(format!(
            "port '{port}' is the bridge's own internal port; delete the bridge instead"
        ));
    }
    let Some((bu, _)) = find_bridge(&t, &owner) else {
        return Err(format!("no such bridge '{owner}'"));
    };
    let mut ops = vec![
        json!({"op": "mutate", "table": "Bridge", "where": [["_uuid", "==", ["uuid", bu]]],
               "mutations": [["ports", "delete", ["set", [["uuid", pu]]]]]}),
        delete("Port", &pu),
    ];
    if let Some(p) = t.get("Port").and_then(|m| m.get(&pu)) {
        for iu in uuids(p.get("interfaces")) {
            ops.push(delete("Interface", &iu));
        }
    }
    let cfg = commit(vs, ops)?;
    vs.wait_applied(cfg, APPLY_TIMEOUT)?;
    Ok(String::new())
}

/// `set-bridge BR KEY=VALUE...`: module settings (and `module`, `datapath-id`) in the
/// Bridge's `other_config`.
pub fn set_bridge(vs: &Vswitch, args: &[String], usage: &str) -> Result<String, String> {
    let Some((br, kvs)) = args.split_first() else {
        return Err(usage.to_string());
    };
    if kvs.is_empty() {
        return Err(usage.to_string());
    }
    let pairs = kv_pairs(kvs)?;
    let t = snapshot(vs)?;
    let Some((bu, brow)) = find_bridge(&t, br) else {
        return Err(format!("no such bridge '{br}'"));
    };
    let current = map_of(brow.get("other_config"));
    let module_name = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "module")
        .map(|(_, v)| v.clone())
        .or_else(|| current.get("module").cloned())
        .unwrap_or_else(|| "openflow".into());
    probe_settings(&module_name, &pairs)?;
    let keys: Vec<&String> = pairs.iter().map(|(k, _)| k).collect();
    let ops = vec![json!({"op": "mutate", "table": "Bridge",
        "where": [["_uuid", "==", ["uuid", bu]]],
        "mutations": [["other_config", "delete", ["set", keys]],
                      ["other_config", "insert", str_map(&pairs)]]})];
    let cfg = commit(vs, ops)?;
    settle(vs, cfg, &[])
}

/// The OpenFlow columns of a bridge, written as `ovs-vsctl` writes them: `set-controller`
/// replaces the bridge's Controller rows (deleting the old ones), `set-fail-mode` and
/// `del-fail-mode` set or clear `fail_mode`, `protocols` is a set of version names and the
/// datapath ID is `other_config:datapath-id` as 16 hex digits. One transaction, then the
/// verb waits until the switch has applied it.
impl BridgeDb for Vswitch {
    fn update_bridge(&self, bridge: &str, change: &BridgeChange) -> Result<(), String> {
        let t = snapshot(self)?;
        let Some((bu, brow)) = find_bridge(&t, bridge) else {
            return Err(format!("no such bridge '{bridge}'"));
        };
        let mut ops = Vec::new();
        let mut row = Map::new();
        if let Some(targets) = &change.controllers {
            let mut refs = Vec::new();
            for (i, target) in targets.iter().enumerate() {
                let name = format!("controller{i}");
                ops.push(
                    json!({"op": "insert", "table": "Controller", "uuid-name": name,
                                "row": {"target": target}}),
                );
                refs.push(json!(["named-uuid", name]));
            }
            row.insert("controller".into(), json!(["set", refs]));
        }
        if let Some(mode) = &change.fail_mode {
            let v = match mode {
                Some(FailMode::Secure) => json!("secure"),
                Some(FailMode::Standalone) => json!("standalone"),
                None => json!(["set", []]),
            };
            row.insert("fail_mode".into(), v);
        }
        if let Some(versions) = &change.protocols {
            let names: Vec<&str> = versions.iter().map(|v| proto_name(*v)).collect();
            row.insert("protocols".into(), json!(["set", names]));
        }
        if !row.is_empty() {
            ops.push(json!({"op": "update", "table": "Bridge",
                            "where": [["_uuid", "==", ["uuid", bu]]], "row": row}));
        }
        if change.controllers.is_some() {
            for cu in uuids(brow.get("controller")) {
                ops.push(delete("Controller", &cu));
            }
        }
        if let Some(dpid) = change.datapath_id {
            let mut mutations = vec![json!(["other_config", "delete", ["set", ["datapath-id"]]])];
            if let Some(d) = dpid {
                mutations.push(json!([
                    "other_config",
                    "insert",
                    str_map(&[("datapath-id".into(), format!("{d:016x}"))])
                ]));
            }
            ops.push(json!({"op": "mutate", "table": "Bridge",
                            "where": [["_uuid", "==", ["uuid", bu]]], "mutations": mutations}));
        }
        if ops.is_empty() {
            return Ok(());
        }
        let cfg = commit(self, ops)?;
        settle(self, cfg, &[]).map(|_| ())
    }
}
