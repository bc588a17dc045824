//! What this datapath can do, in the terms of the `Datapath:capabilities` column.
//!
//! What: ovs-vswitchd writes, into every `Datapath` row that `Open_vSwitch:datapaths` names,
//! a map of what the datapath supports (`ct_state="true"`, `max_vlan_headers="1"`, ...), and
//! clients decide from it which features to use: ovn-controller, for one, reads `ct_zero_snat`
//! and the connection-tracking keys before it programs stateful flows. ferrovs writes the same
//! keys with the truth about itself: a feature the datapath does not have is `"false"`, never
//! left out, so a reader sees the difference between "absent here" and "unknown key".
//!
//! Invariant: this table is the one place to change when a feature lands (connection tracking,
//! recirculation, tunnels); the daemon copies it as is.

/// Boolean capabilities, by OVS's key names, with whether this datapath has them.
const FLAGS: &[(&str, bool)] = &[
    // Connection tracking (`crate::ct`) and recirculation: the ct action, its fields, NAT
    // state bits, the original tuple (IPv4 and IPv6), ct_clear.
    ("recirc", true),
    ("ct_state", true),
    ("ct_zone", true),
    ("ct_mark", true),
    ("ct_label", true),
    ("ct_state_nat", true),
    ("ct_orig_tuple", true),
    ("ct_orig_tuple6", true),
    ("ct_clear", true),
    // `nat(src)` without addresses: the all-zero SNAT (`conntrack::NatRange::keep`).
    ("ct_zero_snat", true),
    // Zone timeout policies from the database (`CT_Zone:timeout_policy`, applied by the
    // daemon's `vswitch::ct_zones`).
    ("ct_timeout", true),
    // Not yet: conntrack events, NXT_CT_FLUSH.
    ("ct_eventmask", false),
    ("ct_flush", false),
    // Native tunnelling: `tnl_push(...)` and `tnl_pop(N)` as megaflow actions
    // (`ofproto::native`).
    ("tnl_push_pop", true),
    // Runs nested actions on a copy of the packet (`DpAction::Clone`).
    ("clone", true),
    // Picks one of two action lists by the packet's length (`DpAction::CheckPktLen`).
    ("check_pkt_len", true),
    // Datapath actions ferrovs has no equivalent of yet.
    // Rewrites of addresses and ports write whole fields (masks only on VLAN, MPLS, TOS).
    ("masked_set_action", false),
    ("sample_nesting", false),
    ("lb_output_action", false),
    ("add_mpls", false),
    ("trunc", false),
    ("explicit_drop_action", false),
    ("nd_ext", false),
    ("ufid", false),
];

/// The capability map, sorted by key: the flags above, plus `max_vlan_headers` (the VLAN tags
/// the flow extractor parses, `other_config:vlan-limit`), `max_mpls_depth` (the MPLS label
/// stack entries a flow key holds) and `max_hash_alg` (0: the datapath computes no symmetric
/// L4 hash; select groups hash in the pipeline).
pub fn capabilities() -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> =
        FLAGS.iter().map(|(k, on)| (*k, on.to_string())).collect();
    v.push(("max_vlan_headers", packet::flow::vlan_limit().to_string()));
    v.push(("max_mpls_depth", MPLS_DEPTH.to_string()));
    v.push(("max_hash_alg", "0".to_string()));
    v.sort_unstable_by_key(|(k, _)| *k);
    v
}

/// Label stack entries in a flow key (`FlowKey::mpls_lse`).
const MPLS_DEPTH: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_sorted_and_boolean_or_numeric() {
        let c = capabilities();
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0), "{c:?}");
        for (k, v) in &c {
            assert!(
                v == "true" || v == "false" || v.parse::<u32>().is_ok(),
                "{k}={v}"
            );
        }
        assert!(c.iter().any(|(k, v)| *k == "ct_zero_snat" && v == "true"));
        assert!(c.iter().any(|(k, v)| *k == "recirc" && v == "true"));
    }

    #[test]
    fn mpls_depth_is_the_keys_stack() {
        let k = packet::flow::FlowKey::default();
        assert_eq!(k.mpls_lse.len(), MPLS_DEPTH);
    }
}
