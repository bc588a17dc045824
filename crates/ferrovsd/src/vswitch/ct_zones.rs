//! Connection-tracking timeout policies from the database, as ovs-vsctl's `add-zone-tp`
//! writes them.
//!
//! What: `Open_vSwitch:datapaths` maps a datapath type to a `Datapath` row, whose `ct_zones`
//! maps a zone (0-65535) to a `CT_Zone` row, whose `timeout_policy` names a
//! `CT_Timeout_Policy` row with its `timeouts` (attribute name -> seconds). ferrovs runs the
//! `netdev` and `system` types in one datapath with one connection tracker, so it reads both
//! rows; a zone both name takes the `netdev` row's policy. A zone's policy is OVS's
//! userspace defaults with the row's values in place of theirs (docs/conntrack.md lists
//! the attributes). The schema also allows the kernel's TCP attributes (`tcp_close_wait`,
//! `tcp_last_ack`, `tcp_syn_sent2`, `tcp_retransmit`, `tcp_unack`); OVS's userspace
//! tracker has no such states and ignores them, and so does ferrovs.
//!
//! How: each pass computes the zone -> policy map and hands the tracker only the difference
//! from the one applied last: new or changed zones get their policy, zones no longer named
//! go back to the default. A zone's connections take the change at their next packet.
//!
//! Invariant: the tracker's per-zone policies are those of the last pass (or the defaults,
//! when a zone could not be given one: more than `conntrack::MAX_POLICIES - 1` different
//! zones with policies, which is warned about).

use super::model::{map_of, uuid_of, Tables};
use conntrack::TimeoutPolicy;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What the last pass gave the tracker.
#[derive(Default)]
pub struct CtZones {
    applied: Mutex<BTreeMap<u16, TimeoutPolicy>>,
}

impl CtZones {
    /// Applies the database's zone policies to the tracker's, which `policies` gives; returns
    /// warnings, only when the configuration changed (so a steady configuration does not
    /// repeat them). `policies` is called only when there is something to change, so a
    /// switch whose database names no policy does not make a tracker (the datapath skips
    /// connection-tracking work until one exists).
    pub fn configure<'a>(
        &self,
        t: &Tables,
        policies: impl FnOnce() -> &'a conntrack::timeout::Policies,
    ) -> Vec<String> {
        let want = from_tables(t);
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        if *applied == want {
            return Vec::new();
        }
        let policies = policies();
        let mut warnings = Vec::new();
        for zone in applied.keys() {
            if !want.contains_key(zone) {
                policies.clear_zone(*zone);
            }
        }
        let mut now = BTreeMap::new();
        for (zone, p) in &want {
            if applied.get(zone) == Some(p) {
                now.insert(*zone, *p);
                continue;
            }
            match policies.set_zone(*zone, p) {
                Ok(()) => {
                    now.insert(*zone, *p);
                }
                Err(e) => {
                    policies.clear_zone(*zone);
                    warnings.push(format!(
                        "zone {zone}: timeout policy not applied ({e}); the defaults stay"
                    ));
                }
            }
        }
        // Zones that failed are remembered as wanted, so the next change retries them and
        // an unchanged configuration does not warn again.
        *applied = if warnings.is_empty() { now } else { want };
        warnings
    }
}

/// The zone -> policy map the database asks for (see the module documentation).
pub fn from_tables(t: &Tables) -> BTreeMap<u16, TimeoutPolicy> {
    let empty = BTreeMap::new();
    let table = |name: &str| t.get(name).unwrap_or(&empty);
    let mut out = BTreeMap::new();
    let Some(root) = table("Open_vSwitch").values().next() else {
        return out;
    };
    // `system` first, so `netdev`'s policies replace its own for the zones both name.
    for kind in ["system", "netdev"] {
        let Some(dp) = map_uuid(root.get("datapaths"), kind).and_then(|u| table("Datapath").get(u))
        else {
            continue;
        };
        for (zone, zone_row) in int_map(dp.get("ct_zones")) {
            let Ok(zone) = u16::try_from(zone) else {
                continue;
            };
            let policy = table("CT_Zone")
                .get(zone_row)
                .and_then(|z| z.get("timeout_policy"))
                .and_then(|v| super::model::set_items(Some(v)).first().copied())
                .and_then(uuid_of)
                .and_then(|u| table("CT_Timeout_Policy").get(u));
            match policy {
                Some(row) => {
                    out.insert(zone, policy_of(row));
                }
                None => {
                    out.remove(&zone);
                }
            }
        }
    }
    out
}

/// A `CT_Timeout_Policy` row as a complete policy: defaults, with its known attributes.
fn policy_of(row: &Map<String, Value>) -> TimeoutPolicy {
    let pairs: Vec<(String, u32)> = map_of(row.get("timeouts"))
        .into_iter()
        .filter(|(k, _)| conntrack::timeout::ATTR_NAMES.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k, v.parse::<u32>().ok()?)))
        .collect();
    TimeoutPolicy::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), *v))).unwrap_or_default()
}

/// The UUID a string-keyed map of references has under `key`.
fn map_uuid<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a str> {
    map_pairs(v).find_map(|(k, val)| (k.as_str() == Some(key)).then(|| uuid_of(val))?)
}

/// An integer-keyed map of references, as (key, UUID) pairs.
fn int_map(v: Option<&Value>) -> Vec<(i64, &str)> {
    map_pairs(v)
        .filter_map(|(k, val)| Some((k.as_i64()?, uuid_of(val)?)))
        .collect()
}

fn map_pairs(v: Option<&Value>) -> impl Iterator<Item = (&Value, &Value)> {
    let pairs = match v {
        Some(Value::Array(a)) if a.first().and_then(Value::as_str) == Some("map") => {
            a.get(1).and_then(Value::as_array)
        }
        _ => None,
    };
    pairs
        .into_iter()
        .flatten()
        .filter_map(|p| match p.as_array()?.as_slice() {
            [k, v] => Some((k, v)),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use conntrack::timeout::Class;
    use serde_json::json;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// A database with a `netdev` and a `system` Datapath row, zones as given.
    fn tables(netdev: Value, system: Value, policies: &[(&str, Value)]) -> Tables {
        let mut t = Tables::new();
        let mut put = |table: &str, uuid: &str, v: Value| {
            t.entry(table.into())
                .or_default()
                .insert(uuid.into(), row(v));
        };
        put(
            "Open_vSwitch",
            "root",
            json!({"datapaths": ["map", [["netdev", ["uuid", "dn"]],
                                         ["system", ["uuid", "ds"]]]]}),
        );
        put("Datapath", "dn", json!({ "ct_zones": netdev }));
        put("Datapath", "ds", json!({ "ct_zones": system }));
        for (name, timeouts) in policies {
            put(
                "CT_Timeout_Policy",
                &format!("tp-{name}"),
                json!({ "timeouts": timeouts }),
            );
            put(
                "CT_Zone",
                &format!("z-{name}"),
                json!({"timeout_policy": ["uuid", format!("tp-{name}")]}),
            );
        }
        put("CT_Zone", "z-none", json!({"timeout_policy": ["set", []]}));
        t
    }

    #[test]
    fn zones_take_their_rows_and_netdev_wins() {
        let t = tables(
            json!(["map", [[5, ["uuid", "z-a"]], [7, ["uuid", "z-none"]]]]),
            json!([
                "map",
                [
                    [5, ["uuid", "z-b"]],
                    [6, ["uuid", "z-b"]],
                    [7, ["uuid", "z-b"]]
                ]
            ]),
            &[
                (
                    "a",
                    json!([
                        "map",
                        [["udp_first", 7], ["tcp_unack", 3], ["icmp_reply", 4]]
                    ]),
                ),
                ("b", json!(["map", [["udp_first", 11]]])),
            ],
        );
        let got = from_tables(&t);
        let a = TimeoutPolicy::from_pairs([("udp_first", 7), ("icmp_reply", 4)]).expect("a");
        let b = TimeoutPolicy::from_pairs([("udp_first", 11)]).expect("b");
        // Zone 7: netdev names it without a policy, which overrides system's.
        assert_eq!(got, BTreeMap::from([(5, a), (6, b)]));
    }

    #[test]
    fn the_tracker_follows_the_database() {
        let policies = conntrack::timeout::Policies::new();
        let zones = CtZones::default();
        let with = |timeouts: Value| {
            tables(
                json!(["map", [[5, ["uuid", "z-a"]]]]),
                json!(["map", []]),
                &[("a", timeouts)],
            )
        };
        assert!(zones
            .configure(&with(json!(["map", [["udp_first", 7]]])), || &policies)
            .is_empty());
        assert_eq!(policies.timeout_ms(5, Class::OtherFirst), 7_000);
        assert_eq!(policies.timeout_ms(6, Class::OtherFirst), 60_000);
        zones.configure(&with(json!(["map", [["udp_first", 9]]])), || &policies);
        assert_eq!(policies.timeout_ms(5, Class::OtherFirst), 9_000);
        // The zone dropped from the database: back to the default.
        let none = tables(json!(["map", []]), json!(["map", []]), &[]);
        zones.configure(&none, || &policies);
        assert_eq!(policies.timeout_ms(5, Class::OtherFirst), 60_000);
    }

    #[test]
    fn more_zones_than_policies_warn_once() {
        let policies = conntrack::timeout::Policies::new();
        let zones = CtZones::default();
        let n = conntrack::timeout::MAX_POLICIES + 3;
        let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        let refs: Vec<Value> = (0..n)
            .map(|i| json!([i, ["uuid", format!("z-p{i}")]]))
            .collect();
        let pols: Vec<(&str, Value)> = names
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), json!(["map", [["udp_first", i + 1]]])))
            .collect();
        let t = tables(json!(["map", refs]), json!(["map", []]), &pols);
        let w = zones.configure(&t, || &policies);
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].contains("timeout policy not applied"), "{w:?}");
        assert_eq!(policies.timeout_ms(0, Class::OtherFirst), 1_000);
        assert!(zones.configure(&t, || &policies).is_empty());
    }

    #[test]
    fn no_zone_policy_asks_for_no_tracker() {
        let zones = CtZones::default();
        let asked = std::cell::Cell::new(0);
        let policies = conntrack::timeout::Policies::new();
        let ask = || {
            asked.set(asked.get() + 1);
            &policies
        };
        // No database at all, then a datapath naming zones without policies.
        assert!(zones.configure(&Tables::new(), ask).is_empty());
        let bare = tables(json!(["map", []]), json!(["map", []]), &[]);
        assert!(zones.configure(&bare, ask).is_empty());
        assert_eq!(asked.get(), 0, "the tracker's policies were asked for");
        // The first policy asks, and a steady configuration does not again.
        let with = tables(
            json!(["map", [[5, ["uuid", "z-a"]]]]),
            json!(["map", []]),
            &[("a", json!(["map", [["udp_first", 7]]]))],
        );
        zones.configure(&with, ask);
        zones.configure(&with, ask);
        assert_eq!(asked.get(), 1);
        assert_eq!(policies.timeout_ms(5, Class::OtherFirst), 7_000);
    }
}
