//! Status written back to the database: what the switch actually did with the configuration.
//!
//! What: after each reconfiguration pass (and every [`STATS_INTERVAL`] for counters),
//! [`read_datapath`] collects every port's live state from the poll thread, and [`ops`] turns
//! it into `update` operations for the columns ovs-vswitchd maintains:
//! - Interface `ofport` (−1 when the interface could not be set up, as OVS writes), `ifindex`,
//!   `mac_in_use`, `admin_state`, `link_state`, `error`, and `statistics` (OVS's counter names,
//!   plus the port type's custom statistics, `netdev::Port::custom_stats`);
//! - Bridge `datapath_id` (16 hex digits);
//! - Controller `is_connected` and `role`, when the connection layer reports them;
//! - Open_vSwitch `cur_cfg` raised to the `next_cfg` the pass applied (what `ovs-vsctl` without
//!   `--no-wait` waits for), and the version columns (`ovs_version`, `db_version`,
//!   `iface_types`, `datapath_types`);
//! - Datapath `capabilities` of every row `Open_vSwitch:datapaths` names under a datapath type
//!   ferrovs runs (`netdev`, and `system`, which it runs the same way), from
//!   [`datapath::capabilities`] (ovn-controller reads them before programming stateful flows).
//!
//! Only columns whose value differs from the snapshot are written, so a pass that changes
//! nothing writes nothing, and the commit our own write causes (which wakes the reconfiguration
//! thread again) converges at once. Values are compared in a normal form (a one-element set
//! is its element; map pairs sorted by key) because servers may send either spelling.
//!
//! Threads: runs on the reconfiguration thread; reads the datapath through one
//! [`datapath::Datapath::call`].

use super::model::{BridgeCfg, Desired, IfaceCfg, Tables};
use super::ofhooks::OfConfigSink;
use super::reconfigure::Outcome;
use datapath::{Datapath, LOCAL_OFPORT};
use netdev::PortStats;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Duration;

/// How often interface statistics are refreshed.
pub const STATS_INTERVAL: Duration = Duration::from_secs(5);

/// One datapath port's live state.
#[derive(Debug, Clone)]
pub struct PortStatus {
    pub bridge: String,
    pub ofport: u32,
    pub mac: Option<[u8; 6]>,
    pub ifindex: Option<u32>,
    pub up: bool,
    pub stats: PortStats,
    /// The port type's own counters, added to `statistics` under their names.
    pub custom: Vec<(&'static str, u64)>,
}

/// Every datapath port by name (the bridge's internal port under the bridge's name).
pub fn read_datapath(pmd: &Datapath) -> HashMap<String, PortStatus> {
    let remote = pmd.remote_port_counters().unwrap_or_default();
    pmd.call(move |sw| {
        let mut m = HashMap::new();
        for b in sw.bridges() {
            for (slot, s) in b.ports() {
                let mut stats = s.port.stats();
                if let Some(x) = remote.get(&(b.name.clone(), slot)) {
                    stats.add(x);
                }
                m.insert(
                    s.port.name().to_string(),
                    PortStatus {
                        bridge: b.name.clone(),
                        ofport: s.ofport,
                        mac: s.port.mac(),
                        ifindex: s.port.ifindex(),
                        up: s.port.link_state() == netdev::LinkState::Up,
                        stats,
                        custom: s.port.custom_stats(),
                    },
                );
            }
        }
        m
    })
    .unwrap_or_default()
}

fn empty_set() -> Value {
    json!(["set", []])
}

/// The normal form used to compare wire values.
fn norm(v: &Value) -> Value {
    match v {
        Value::Array(a) if a.len() == 2 && a[0] == "set" => match a[1].as_array() {
            Some(items) if items.len() == 1 => norm(&items[0]),
            Some(items) => json!(["set", items.iter().map(norm).collect::<Vec<_>>()]),
            None => v.clone(),
        },
        Value::Array(a) if a.len() == 2 && a[0] == "map" => {
            let mut pairs: Vec<Value> = a[1].as_array().cloned().unwrap_or_default();
            pairs.sort_by(|x, y| x[0].to_string().cmp(&y[0].to_string()));
            json!(["map", pairs])
        }
        _ => v.clone(),
    }
}

fn stats_map(s: &PortStats, custom: &[(&'static str, u64)]) -> Value {
    let mut pairs = vec![
        json!(["rx_bytes", s.rx_bytes]),
        json!(["rx_dropped", s.rx_dropped]),
        json!(["rx_errors", s.rx_errors]),
        json!(["rx_packets", s.rx_packets]),
        json!(["tx_bytes", s.tx_bytes]),
        json!(["tx_dropped", s.tx_dropped]),
        json!(["tx_errors", s.tx_errors]),
        json!(["tx_packets", s.tx_packets]),
    ];
    pairs.extend(custom.iter().map(|(k, v)| json!([k, v])));
    json!(["map", pairs])
}

/// Adds `col: want` to `row` if the snapshot's value differs.
pub(super) fn diff(
    row: &mut Map<String, Value>,
    have: Option<&Map<String, Value>>,
    col: &str,
    want: Value,
) {
    let cur = have.and_then(|h| h.get(col)).map(norm);
    if cur.as_ref() != Some(&norm(&want)) {
        row.insert(col.to_string(), want);
    }
}

pub(super) fn update(table: &str, uuid: &str, row: Map<String, Value>) -> Value {
    json!({"op": "update", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]],
           "row": Value::Object(row)})
}

fn fmt_mac(m: [u8; 6]) -> String {
    crate::render::fmt_mac(m)
}

/// The status updates for one pass. See the module documentation.
pub fn ops(
    snap: &Tables,
    d: &Desired,
    out: &Outcome,
    dp: &HashMap<String, PortStatus>,
    with_stats: bool,
    of: &dyn OfConfigSink,
) -> Vec<Value> {
    let empty = Default::default();
    let ifaces = snap.get("Interface").unwrap_or(&empty);
    let bridges = snap.get("Bridge").unwrap_or(&empty);
    let controllers = snap.get("Controller").unwrap_or(&empty);
    let mut ops = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for b in &d.bridges {
        for p in &b.ports {
            for i in &p.ifaces {
                seen.insert(i.uuid.clone());
                let have = ifaces.get(&i.uuid);
                let row = interface_row(b, i, have, out.iface_errors.get(&i.uuid), dp, with_stats);
                if !row.is_empty() {
                    ops.push(update("Interface", &i.uuid, row));
                }
            }
        }
        let mut row = Map::new();
        if let Some(dpid) = out.datapath_ids.get(&b.name) {
            diff(
                &mut row,
                bridges.get(&b.uuid),
                "datapath_id",
                json!(format!("{dpid:016x}")),
            );
        }
        if !row.is_empty() {
            ops.push(update("Bridge", &b.uuid, row));
        }
        let st = of.controller_status(&b.name);
        for c in &b.controllers {
            let Some(s) = st.iter().find(|s| s.target == c.target) else {
                continue;
            };
            let mut row = Map::new();
            let have = controllers.get(&c.uuid);
            diff(&mut row, have, "is_connected", json!(s.is_connected));
            if let Some(r) = &s.role {
                diff(&mut row, have, "role", json!(r));
            }
            if !row.is_empty() {
                ops.push(update("Controller", &c.uuid, row));
            }
        }
    }
    for (u, e) in &out.iface_errors {
        if seen.contains(u) {
            continue;
        }
        let mut row = Map::new();
        let have = ifaces.get(u);
        diff(&mut row, have, "ofport", json!(-1));
        diff(&mut row, have, "error", json!(e));
        if !row.is_empty() {
            ops.push(update("Interface", u, row));
        }
    }
    root_ops(snap, d, &mut ops);
    ops
}

/// The changed columns of interface `i` of bridge `b` (`have` is its row): its port's
/// state from the datapath, or its error.
fn interface_row(
    b: &BridgeCfg,
    i: &IfaceCfg,
    have: Option<&Map<String, Value>>,
    err: Option<&String>,
    dp: &HashMap<String, PortStatus>,
    with_stats: bool,
) -> Map<String, Value> {
    let mut row = Map::new();
    let live = dp
        .get(&i.name)
        .filter(|s| s.bridge == b.name && (i.name != b.name || s.ofport == LOCAL_OFPORT));
    match (err, live) {
        (None, Some(s)) => {
            diff(&mut row, have, "ofport", json!(i64::from(s.ofport)));
            diff(&mut row, have, "ifindex", json!(s.ifindex.unwrap_or(0)));
            diff(
                &mut row,
                have,
                "mac_in_use",
                s.mac.map(|m| json!(fmt_mac(m))).unwrap_or_else(empty_set),
            );
            diff(&mut row, have, "admin_state", json!("up"));
            diff(
                &mut row,
                have,
                "link_state",
                json!(if s.up { "up" } else { "down" }),
            );
            diff(&mut row, have, "error", empty_set());
            let no_stats = have
                .and_then(|h| h.get("statistics"))
                .is_none_or(|v| norm(v) == json!(["map", []]));
            if with_stats || no_stats {
                diff(&mut row, have, "statistics", stats_map(&s.stats, &s.custom));
            }
        }
        (err, _) => {
            let msg = err.cloned().unwrap_or_else(|| {
                format!("could not open network device {} (not set up yet)", i.name)
            });
            diff(&mut row, have, "ofport", json!(-1));
            diff(&mut row, have, "error", json!(msg));
            diff(&mut row, have, "admin_state", empty_set());
            diff(&mut row, have, "link_state", empty_set());
            diff(&mut row, have, "mac_in_use", empty_set());
        }
    }
    row
}

/// The root row's status columns and the Datapath rows' capabilities.
fn root_ops(snap: &Tables, d: &Desired, ops: &mut Vec<Value>) {
    let empty = Default::default();
    if let Some(root) = &d.root {
        let have = snap.get("Open_vSwitch").and_then(|t| t.get(root));
        let mut row = Map::new();
        diff(&mut row, have, "cur_cfg", json!(d.next_cfg));
        diff(
            &mut row,
            have,
            "ovs_version",
            json!(format!("ferrovs {}", env!("CARGO_PKG_VERSION"))),
        );
        let types: Vec<Value> = {
            let mut t: Vec<&str> = netdev::PORT_TYPES.to_vec();
            t.sort_unstable();
            t.into_iter().map(|s| json!(s)).collect()
        };
        diff(&mut row, have, "iface_types", json!(["set", types]));
        diff(&mut row, have, "datapath_types", json!("netdev"));
        if !row.is_empty() {
            ops.push(update("Open_vSwitch", root, row));
        }
        let dps = snap.get("Datapath").unwrap_or(&empty);
        for u in datapath_rows(have) {
            let mut row = Map::new();
            diff(&mut row, dps.get(&u), "capabilities", capabilities());
            if dps.contains_key(&u) && !row.is_empty() {
                ops.push(update("Datapath", &u, row));
            }
        }
    }
}

/// The Datapath rows `Open_vSwitch:datapaths` names for the datapath types ferrovs runs.
fn datapath_rows(root: Option<&Map<String, Value>>) -> Vec<String> {
    let pairs = root
        .and_then(|r| r.get("datapaths"))
        .and_then(|v| v.as_array())
        .filter(|a| a.first().and_then(Value::as_str) == Some("map"))
        .and_then(|a| a.get(1))
        .and_then(Value::as_array);
    pairs
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let [k, v] = p.as_array()?.as_slice() else {
                return None;
            };
            if !matches!(k.as_str()?, "netdev" | "system") {
                return None;
            }
            super::model::uuid_of(v).map(str::to_string)
        })
        .collect()
}

/// `Datapath:capabilities` as the datapath reports them.
fn capabilities() -> Value {
    let pairs: Vec<Value> = datapath::capabilities::capabilities()
        .into_iter()
        .map(|(k, v)| json!([k, v]))
        .collect();
    json!(["map", pairs])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form() {
        assert_eq!(norm(&json!(["set", [5]])), json!(5));
        assert_eq!(
            norm(&json!(["map", [["b", 1], ["a", 2]]])),
            json!(["map", [["a", 2], ["b", 1]]])
        );
        assert_eq!(norm(&json!(["set", []])), json!(["set", []]));
    }

    #[test]
    fn custom_statistics_join_the_counters() {
        let s = PortStats {
            tx_packets: 7,
            ..PortStats::default()
        };
        let m = stats_map(&s, &[("ovs_tx_coalesced_packets", 5)]);
        let pairs = m[1].as_array().expect("a map");
        assert_eq!(pairs.len(), 9);
        assert!(pairs.contains(&json!(["tx_packets", 7])));
        assert!(pairs.contains(&json!(["ovs_tx_coalesced_packets", 5])));
        assert_eq!(stats_map(&s, &[])[1].as_array().map(Vec::len), Some(8));
    }

    #[test]
    fn datapath_rows_of_the_types_we_run() {
        let root = json!({"datapaths": ["map", [
            ["netdev", ["uuid", "11111111-1111-1111-1111-111111111111"]],
            ["system", ["uuid", "22222222-2222-2222-2222-222222222222"]],
            ["dpdk", ["uuid", "33333333-3333-3333-3333-333333333333"]],
            ["bad", 5]
        ]]});
        let rows = datapath_rows(root.as_object());
        assert_eq!(
            rows,
            [
                "11111111-1111-1111-1111-111111111111",
                "22222222-2222-2222-2222-222222222222"
            ]
        );
        assert!(datapath_rows(json!({"datapaths": 7}).as_object()).is_empty());
        assert!(datapath_rows(None).is_empty());
    }
}
