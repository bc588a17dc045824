//! Flow-based IPFIX: OVSDB's `Flow_Sample_Collector_Set` rows, which give the OpenFlow
//! `sample` action's `collector_set_id` a meaning on one bridge.
//!
//! A row has an `id` (0..2^32-1), a `bridge` and an optional `ipfix` row whose `targets`
//! and cache settings (`cache_active_timeout`, `cache_max_flows`) the set's records follow;
//! the `IPFIX` row's `sampling` and `obs_domain_id` do not apply (the action carries its own
//! probability and observation domain). A set without an `ipfix` row, or whose row has no
//! usable target, exports nothing, and neither does a `sample` action naming a set that does
//! not exist on its bridge, as in OVS. Two rows with the same `id` on one bridge: the first
//! by UUID wins, the other is warned about.

use super::{read_row, IpfixConfig};
use crate::collector::ExportRow;
use crate::vswitch::model::{int_of, string_of, uuids, Tables};
use std::collections::BTreeMap;

/// Per bridge name, its collector sets by id.
pub type FlowSets = BTreeMap<String, BTreeMap<u32, IpfixConfig>>;

/// The collector sets the database defines, and warnings naming what was refused.
pub fn from_tables(t: &Tables) -> (FlowSets, Vec<String>) {
    let mut out = FlowSets::new();
    let mut warnings = Vec::new();
    let (Some(sets), Some(bridges)) = (t.get("Flow_Sample_Collector_Set"), t.get("Bridge")) else {
        return (out, warnings);
    };
    let ipfix = t.get("IPFIX");
    for (uuid, row) in sets {
        let Some(bridge) = uuids(row.get("bridge"))
            .first()
            .and_then(|u| bridges.get(u))
            .and_then(|b| string_of(b.get("name")))
        else {
            continue;
        };
        let id = match int_of(row.get("id")) {
            Some(v) if (0..=i64::from(u32::MAX)).contains(&v) => v as u32,
            other => {
                warnings.push(format!(
                    "bridge {bridge}: Flow_Sample_Collector_Set {uuid}: id {other:?} is not \\
                     0..4294967295; ignored"
                ));
                continue;
            }
        };
        let Some(ipfix_row) = uuids(row.get("ipfix"))
            .first()
            .and_then(|u| ipfix.and_then(|t| t.get(u)))
        else {
            continue;
        };
        let mut r = ExportRow::new(bridge.clone(), ipfix_row, "IPFIX", &mut warnings);
        let Some(cfg) = read_row(&mut r) else {
            continue;
        };
        let on_bridge = out.entry(bridge.clone()).or_default();
        if on_bridge.contains_key(&id) {
            warnings.push(format!(
                "bridge {bridge}: Flow_Sample_Collector_Set id {id} is defined twice; \\
                 row {uuid} ignored"
            ));
            continue;
        }
        on_bridge.insert(id, cfg);
    }
    (out, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_by_bridge_and_id() {
        let mut t = Tables::new();
        let row = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let mut put = |table: &str, uuid: &str, v: serde_json::Value| {
            t.entry(table.into())
                .or_default()
                .insert(uuid.into(), row(v));
        };
        put("Bridge", "b", json!({"name": "br0"}));
        put(
            "IPFIX",
            "i",
            json!({"targets": ["set", ["127.0.0.1:9995"]]}),
        );
        put("IPFIX", "empty", json!({"targets": ["set", []]}));
        put(
            "Flow_Sample_Collector_Set",
            "s1",
            json!({"id": 5, "bridge": ["uuid", "b"], "ipfix": ["uuid", "i"]}),
        );
        put(
            "Flow_Sample_Collector_Set",
            "s2",
            json!({"id": 5, "bridge": ["uuid", "b"], "ipfix": ["uuid", "i"]}),
        );
        put(
            "Flow_Sample_Collector_Set",
            "s3",
            json!({"id": 6, "bridge": ["uuid", "b"], "ipfix": ["uuid", "empty"]}),
        );
        put(
            "Flow_Sample_Collector_Set",
            "s4",
            json!({"id": 7, "bridge": ["uuid", "b"], "ipfix": ["set", []]}),
        );
        put(
            "Flow_Sample_Collector_Set",
            "s5",
            json!({"id": -1, "bridge": ["uuid", "b"], "ipfix": ["uuid", "i"]}),
        );
        let (sets, w) = from_tables(&t);
        let br0 = &sets["br0"];
        assert_eq!(br0.keys().copied().collect::<Vec<_>>(), vec![5]);
        assert_eq!(
            br0[&5].targets,
            vec!["127.0.0.1:9995".parse().expect("addr")]
        );
        // Duplicate id, no usable target, bad id.
        assert_eq!(w.len(), 3, "{w:?}");
    }
}
