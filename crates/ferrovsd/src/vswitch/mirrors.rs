//! OVSDB's `Mirror` table onto the datapath's mirrors ([`datapath::mirror`]).
//!
//! What: each bridge's `mirrors` column names `Mirror` rows; a row selects ports
//! (`select_src_port`, `select_dst_port`: `Port` rows), or everything (`select_all`), optionally
//! only some VLANs (`select_vlan`), and names an `output_port`. [`parse`] turns a bridge's rows
//! into [`MirrorConfig`]s with ports named by their (first) interface, which is how the
//! datapath names ports; [`status_ops`] writes each row's `statistics` (`tx_packets`,
//! `tx_bytes`) as ovs-vswitchd does, so `ovs-vsctl list Mirror` shows what was copied.
//! `ovs-tcpdump` works on top of this: it adds a port and a mirror onto it, and captures there.
//!
//! Refused, with a warning naming the mirror: `output_vlan` (remote SPAN onto a VLAN), and
//! more than [`datapath::mirror::MAX_MIRRORS`] mirrors on one bridge (the rest are left out).
//! A mirror with neither output selects nothing, as in OVS.
//!
//! Threads: [`parse`] is pure; [`status_ops`] reads the poll threads' counters through the
//! datapath's control calls, on the reconfiguration thread.

use super::model::{int_of, set_items, string_of, uuid_of, uuids, Desired, Tables};
use datapath::mirror::{MirrorConfig, MAX_MIRRORS};
use datapath::Datapath;
use serde_json::{json, Map, Value};

/// The interface name of `Port` row `pu` (its first interface, as the model picks it).
fn port_iface(t: &Tables, pu: &str) -> Option<String> {
    let p = t.get("Port")?.get(pu)?;
    let mut ifs = uuids(p.get("interfaces"));
    ifs.sort();
    let first = ifs.first()?;
    string_of(t.get("Interface")?.get(first)?.get("name"))
}

/// The mirrors of bridge row `br` (named `name`), and warnings for what was left out.
pub fn parse(t: &Tables, name: &str, br: &Map<String, Value>) -> (Vec<MirrorConfig>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let Some(rows) = t.get("Mirror") else {
        return (out, warnings);
    };
    let mut mus = uuids(br.get("mirrors"));
    mus.sort_by_key(|u| rows.get(u).and_then(|r| string_of(r.get("name"))));
    for mu in mus {
        let Some(m) = rows.get(&mu) else { continue };
        let mname = string_of(m.get("name")).unwrap_or_else(|| mu.clone());
        if int_of(m.get("output_vlan")).is_some() {
            warnings.push(format!(
                "bridge {name}: mirror {mname}: output_vlan (remote SPAN) is not supported by ferrovs; mirror ignored"
            ));
            continue;
        }
        if out.len() == MAX_MIRRORS {
            warnings.push(format!(
                "bridge {name}: more than {MAX_MIRRORS} mirrors; mirror {mname} ignored"
            ));
            continue;
        }
        let ports = |col: &str| -> Vec<String> {
            let mut v: Vec<String> = uuids(m.get(col))
                .iter()
                .filter_map(|pu| port_iface(t, pu))
                .collect();
            v.sort();
            v
        };
        let mut vlans: Vec<u16> = set_items(m.get("select_vlan"))
            .into_iter()
            .filter_map(|v| v.as_i64().and_then(|n| u16::try_from(n).ok()))
            .filter(|v| *v < 4096)
            .collect();
        vlans.sort_unstable();
        out.push(MirrorConfig {
            name: mname,
            select_all: m.get("select_all").and_then(Value::as_bool) == Some(true),
            select_src_port: ports("select_src_port"),
            select_dst_port: ports("select_dst_port"),
            select_vlan: vlans,
            output_port: m
                .get("output_port")
                .and_then(|v| set_items(Some(v)).first().and_then(|x| uuid_of(x)))
                .and_then(|pu| port_iface(t, pu)),
        });
    }
    (out, warnings)
}

/// `statistics` updates for every Mirror row of the bridges in `d` whose counters changed.
pub fn status_ops(snap: &Tables, d: &Desired, pmd: &Datapath) -> Vec<Value> {
    let Some(rows) = snap.get("Mirror") else {
        return Vec::new();
    };
    let mut ops = Vec::new();
    for b in d.bridges.iter().filter(|b| !b.mirrors.is_empty()) {
        let Ok((stats, _)) = pmd.mirror_stats(&b.name) else {
            continue;
        };
        let Some(br) = snap.get("Bridge").and_then(|t| t.get(&b.uuid)) else {
            continue;
        };
        for mu in uuids(br.get("mirrors")) {
            let Some(row) = rows.get(&mu) else { continue };
            let name = string_of(row.get("name")).unwrap_or_else(|| mu.clone());
            let Some((_, s)) = stats.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let want = json!([
                "map",
                [["tx_bytes", s.tx_bytes], ["tx_packets", s.tx_packets]]
            ]);
            let mut changed = Map::new();
            super::status::diff(&mut changed, Some(row), "statistics", want);
            if !changed.is_empty() {
                ops.push(super::status::update("Mirror", &mu, changed));
            }
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn mirror_rows_to_configs() {
        let mut t = Tables::new();
        let ins = |t: &mut Tables, table: &str, u: &str, v: Value| {
            t.entry(table.into()).or_default().insert(u.into(), row(v));
        };
        ins(
            &mut t,
            "Port",
            "p1",
            json!({"name": "p1", "interfaces": ["uuid", "i1"]}),
        );
        ins(
            &mut t,
            "Port",
            "p2",
            json!({"name": "p2", "interfaces": ["uuid", "i2"]}),
        );
        ins(&mut t, "Interface", "i1", json!({"name": "eth1"}));
        ins(&mut t, "Interface", "i2", json!({"name": "eth2"}));
        ins(
            &mut t,
            "Mirror",
            "m1",
            json!({"name": "mir", "select_src_port": ["set", [["uuid", "p1"]]],
                   "select_dst_port": ["uuid", "p1"], "select_vlan": ["set", [10, 5, 9999]],
                   "output_port": ["uuid", "p2"], "output_vlan": ["set", []]}),
        );
        ins(
            &mut t,
            "Mirror",
            "m2",
            json!({"name": "rspan", "select_all": true, "output_vlan": 100}),
        );
        let br =
            row(json!({"mirrors": ["set", [["uuid", "m1"], ["uuid", "m2"], ["uuid", "gone"]]]}));
        let (m, w) = parse(&t, "br0", &br);
        assert_eq!(
            m,
            [MirrorConfig {
                name: "mir".into(),
                select_all: false,
                select_src_port: vec!["eth1".into()],
                select_dst_port: vec!["eth1".into()],
                select_vlan: vec![5, 10],
                output_port: Some("eth2".into()),
            }]
        );
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("rspan") && w[0].contains("output_vlan"),
            "{w:?}"
        );
    }
}
