//! The desired configuration, read out of an `Open_vSwitch` database snapshot.
//!
//! What: [`Desired::parse`] turns the rows of the tables ferrovsd reads (Open_vSwitch, Bridge,
//! Port, Interface, Controller), in RFC 7047 wire notation, into plain structs the
//! reconfiguration applies: bridges with their module and settings, ports with their VLAN mode,
//! interfaces with their type, options and requested ofport. It never fails: a malformed or
//! conflicting piece (an interface in two ports, a port in two bridges, a bad `datapath-id`)
//! becomes an error attached to that piece, and the rest is still returned, as ovs-vswitchd
//! applies what it can.
//!
//! How the database maps onto the datapath:
//! - a Bridge row is a datapath bridge of the same name; `other_config:module` picks its
//!   switching logic (`openflow` by default, or `learning`, `patch`, `tuple3`); the other
//!   `other_config` keys are module settings (`mac-aging-time`, `mac-table-size`, `flow-limit`,
//!   `max-idle`, ...), except the few bridge-level keys listed in [`BRIDGE_KEYS`];
//!   `flow-limit` and `max-idle` may also be set for every bridge in Open_vSwitch
//!   `other_config`, where OVS keeps them;
//! - a Port row is one datapath port (ferrovs has no bonds: a Port with several interfaces
//!   uses the first and reports an error on the others); `tag`/`trunks`/`vlan_mode` give the
//!   VLAN mode;
//! - an Interface row's `name`, `type` (empty means `system`) and `options` open the netdev;
//!   `ofport_request`, else the `ofport` it had before (so numbers survive restarts), else the
//!   lowest free number is its OpenFlow port. The interface named after its bridge is the
//!   bridge's internal port, ofport LOCAL.
//!
//! Invariant: names are unique in the result — a second bridge, port or interface with a name
//! already taken is left out with an error naming the first.

use datapath::VlanMode;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Rows by table and UUID (wire notation).
pub type Tables = BTreeMap<String, BTreeMap<String, Map<String, Value>>>;

/// The tables ferrovsd reads.
pub const TABLES: &[&str] = &[
    "Open_vSwitch",
    "Bridge",
    "Port",
    "Interface",
    "Controller",
    "SSL",
    "Datapath",
    "CT_Zone",
    "CT_Timeout_Policy",
    "Mirror",
    "sFlow",
    "IPFIX",
    "Flow_Sample_Collector_Set",
];

/// Bridge `other_config` keys that are not module settings.
pub const BRIDGE_KEYS: &[&str] = &[
    "module",
    "datapath-id",
    "hwaddr",
    "dp-desc",
    "disable-in-band",
];

/// Open_vSwitch `other_config` keys passed to every bridge's module.
pub const GLOBAL_MODULE_KEYS: &[&str] = &["flow-limit", "max-idle"];

/// Open_vSwitch `other_config` keys the daemon itself uses.
pub const DAEMON_KEYS: &[&str] = &["metrics-address", "vlan-limit"];

/// Open_vSwitch `other_config` keys that configure the poll threads (see
/// `datapath::threads`).
pub const DATAPATH_KEYS: &[&str] = &[
    "pmd-cpu-mask",
    "pmd-rxq-assign",
    "pmd-auto-lb",
    "pmd-auto-lb-load-threshold",
    "pmd-auto-lb-improvement-threshold",
    "pmd-auto-lb-rebal-interval",
];

/// One controller target of a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerCfg {
    pub uuid: String,
    pub target: String,
    pub connection_mode: Option<String>,
    pub max_backoff: Option<i64>,
    pub inactivity_probe: Option<i64>,
}

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceCfg {
    pub uuid: String,
    pub name: String,
    /// The netdev type (`system` for an empty type).
    pub kind: String,
    pub options: BTreeMap<String, String>,
    pub ofport_request: Option<u32>,
    /// The `ofport` column as last written (a previous run's number).
    pub prev_ofport: Option<u32>,
    /// A configuration error found while reading (the interface is not opened).
    pub error: Option<String>,
    /// `other_config:pmd-rxq-affinity` (`QUEUE:CORE,...`), if set.
    pub rxq_affinity: Option<String>,
}

/// One port (with the interface it uses first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortCfg {
    pub uuid: String,
    pub name: String,
    pub vlan: VlanMode,
    pub ifaces: Vec<IfaceCfg>,
}

/// One bridge as the database describes it (its `Bridge` row, settings and ports); its
/// OpenFlow columns end up, resolved, in the connection manager's `ofconn::OfSettings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeCfg {
    pub uuid: String,
    pub name: String,
    pub module: String,
    /// Module settings, global ones first overridden by the bridge's own.
    pub settings: BTreeMap<String, String>,
    pub datapath_id: Option<u64>,
    pub controllers: Vec<ControllerCfg>,
    pub fail_mode: Option<String>,
    pub protocols: Vec<String>,
    pub ports: Vec<PortCfg>,
    /// The bridge's `Mirror` rows ([`super::mirrors`]).
    pub mirrors: Vec<datapath::mirror::MirrorConfig>,
}

/// Everything read from one snapshot.
#[derive(Debug, Clone, Default)]
pub struct Desired {
    /// The root row's UUID (none if the table is empty).
    pub root: Option<String>,
    pub next_cfg: i64,
    pub cur_cfg: i64,
    pub other_config: BTreeMap<String, String>,
    pub bridges: Vec<BridgeCfg>,
    /// Interfaces left out, with why (not part of any bridge's port list above).
    pub rejected: Vec<(String, String)>,
    /// Messages to log once each (unsupported columns and values).
    pub warnings: Vec<String>,
}

/// The atoms of a set (a bare atom is a one-element set).
pub fn set_items(v: Option<&Value>) -> Vec<&Value> {
    match v {
        Some(Value::Array(a)) if a.first().and_then(Value::as_str) == Some("set") => a
            .get(1)
            .and_then(Value::as_array)
            .map(|x| x.iter().collect())
            .unwrap_or_default(),
        Some(v) => vec![v],
        None => Vec::new(),
    }
}

/// A UUID atom's text.
pub fn uuid_of(v: &Value) -> Option<&str> {
    match v.as_array().map(Vec::as_slice) {
        Some([Value::String(t), Value::String(u)]) if t == "uuid" => Some(u),
        _ => None,
    }
}

/// The UUIDs of a set column.
pub fn uuids(v: Option<&Value>) -> Vec<String> {
    set_items(v)
        .into_iter()
        .filter_map(uuid_of)
        .map(str::to_string)
        .collect()
}

/// A string scalar (or the only element of an optional string).
pub fn string_of(v: Option<&Value>) -> Option<String> {
    set_items(v)
        .first()
        .and_then(|x| x.as_str())
        .map(str::to_string)
}

/// An integer scalar (or the only element of an optional integer).
pub fn int_of(v: Option<&Value>) -> Option<i64> {
    set_items(v).first().and_then(|x| x.as_i64())
}

/// A map column with string keys; values are rendered as text.
pub fn map_of(v: Option<&Value>) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let Some(Value::Array(a)) = v else { return m };
    if a.first().and_then(Value::as_str) != Some("map") {
        return m;
    }
    for pair in a.get(1).and_then(Value::as_array).into_iter().flatten() {
        let Some([k, val]) = pair.as_array().map(Vec::as_slice) else {
            continue;
        };
        let Some(k) = k.as_str() else { continue };
        let text = match val {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        m.insert(k.to_string(), text);
    }
    m
}

/// Whether a wire value is a column's empty/default value.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Array(a) => {
            matches!(a.first().and_then(Value::as_str), Some("set" | "map"))
                && a.get(1)
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
        }
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Columns ferrovsd applies, writes, or may safely leave alone, per table.
fn known_columns(table: &str) -> &'static [&'static str] {
    match table {
        "Open_vSwitch" => &[
            "bridges",
            "next_cfg",
            "cur_cfg",
            "other_config",
            "external_ids",
            "ovs_version",
            "db_version",
            "system_type",
            "system_version",
            "datapath_types",
            "iface_types",
            "statistics",
            "dpdk_initialized",
            "dpdk_version",
            "datapaths",
            "ssl",
        ],
        "Bridge" => &[
            "name",
            "ports",
            "other_config",
            "external_ids",
            "controller",
            "fail_mode",
            "protocols",
            "mirrors",
            "sflow",
            "ipfix",
            "datapath_id",
            "datapath_type",
            "datapath_version",
            "status",
            "flood_vlans",
        ],
        "Port" => &[
            "name",
            "interfaces",
            "tag",
            "trunks",
            "vlan_mode",
            "external_ids",
            "other_config",
            "status",
            "statistics",
            "bond_active_slave",
            "bond_active_member",
        ],
        "Interface" => &[
            "name",
            "type",
            "options",
            "ofport_request",
            "ofport",
            "ifindex",
            "mac_in_use",
            "admin_state",
            "link_state",
            "link_resets",
            "link_speed",
            "duplex",
            "mtu",
            "error",
            "statistics",
            "status",
            "external_ids",
            "other_config",
            "lacp_current",
            "bfd_status",
            "cfm_fault",
            "cfm_fault_status",
            "cfm_remote_mpids",
            "cfm_flap_count",
            "cfm_health",
            "cfm_remote_opstate",
        ],
        "Controller" => &[
            "target",
            "connection_mode",
            "max_backoff",
            "inactivity_probe",
            "is_connected",
            "role",
            "status",
            "external_ids",
            "other_config",
        ],
        _ => &[],
    }
}

fn check_columns(table: &str, row: &Map<String, Value>, warnings: &mut Vec<String>) {
    let known = known_columns(table);
    for (k, v) in row {
        if k.starts_with('_') || known.contains(&k.as_str()) || is_empty(v) {
            continue;
        }
        warnings.push(format!(
            "{table} column '{k}' is set but not supported by ferrovs; ignored"
        ));
    }
}

fn parse_ofport(v: Option<i64>) -> Option<u32> {
    v.and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=datapath::bridge::MAX_OFPORT).contains(n))
}

/// Parses a `datapath-id` (16 hex digits, optionally `0x`-prefixed).
pub fn parse_dpid(s: &str) -> Option<u64> {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if h.is_empty() || h.len() > 16 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

fn vlan_of(row: &Map<String, Value>, name: &str, warnings: &mut Vec<String>) -> VlanMode {
    let tag = int_of(row.get("tag")).and_then(|t| u16::try_from(t).ok());
    let mut trunks: Vec<u16> = set_items(row.get("trunks"))
        .into_iter()
        .filter_map(|v| v.as_i64().and_then(|t| u16::try_from(t).ok()))
        .collect();
    trunks.sort_unstable();
    trunks.dedup();
    let mode = string_of(row.get("vlan_mode")).unwrap_or_default();
    match mode.as_str() {
        "native-tagged" | "native-untagged" | "dot1q-tunnel" => warnings.push(format!(
            "port {name}: vlan_mode {mode} is not supported by ferrovs; using {}",
            if tag.is_some() { "access" } else { "trunk" }
        )),
        _ => {}
    }
    match (mode.as_str(), tag) {
        ("trunk", _) => VlanMode::Trunk((!trunks.is_empty()).then_some(trunks)),
        (_, Some(t)) => VlanMode::Access(t),
        _ => VlanMode::Trunk((!trunks.is_empty()).then_some(trunks)),
    }
}

fn iface_of(uuid: &str, row: &Map<String, Value>) -> IfaceCfg {
    let name = string_of(row.get("name")).unwrap_or_default();
    let ty = string_of(row.get("type")).unwrap_or_default();
    let kind = if ty.is_empty() {
        "system".to_string()
    } else {
        ty
    };
    let mut error = None;
    let options = map_of(row.get("options"));
    if !netdev::PORT_TYPES.contains(&kind.as_str()) {
        error = Some(format!(
            "could not open network device {name} (unsupported interface type '{kind}'; \
             ferrovs supports {})",
            netdev::PORT_TYPES.join(", ")
        ));
    } else if let Err(e) =
        crate::policy::check_name(&name).and_then(|()| crate::policy::check_port(&kind, &options))
    {
        error = Some(format!("could not open network device {name} ({e})"));
    }
    IfaceCfg {
        uuid: uuid.to_string(),
        name,
        kind,
        options,
        ofport_request: parse_ofport(int_of(row.get("ofport_request"))),
        prev_ofport: parse_ofport(int_of(row.get("ofport"))),
        error,
        rxq_affinity: map_of(row.get("other_config"))
            .get("pmd-rxq-affinity")
            .cloned(),
    }
}

impl Desired {
    /// Reads a snapshot. See the module documentation.
    pub fn parse(t: &Tables) -> Desired {
        let empty = BTreeMap::new();
        let table = |n: &str| t.get(n).unwrap_or(&empty);
        let mut d = Desired::default();
        let Some((root_uuid, root)) = table("Open_vSwitch").iter().next() else {
            return d;
        };
        d.root = Some(root_uuid.clone());
        d.next_cfg = int_of(root.get("next_cfg")).unwrap_or(0);
        d.cur_cfg = int_of(root.get("cur_cfg")).unwrap_or(0);
        d.other_config = map_of(root.get("other_config"));
        check_columns("Open_vSwitch", root, &mut d.warnings);
        warn_ignored_globals(&mut d);
        let mut global = BTreeMap::new();
        for k in GLOBAL_MODULE_KEYS {
            if let Some(v) = d.other_config.get(*k) {
                global.insert(k.to_string(), v.clone());
            }
        }
        let mut bridge_names: HashSet<String> = HashSet::new();
        let mut seen = Seen::default();
        let mut bridge_uuids = uuids(root.get("bridges"));
        bridge_uuids.sort_by_key(|u| {
            table("Bridge")
                .get(u)
                .and_then(|r| string_of(r.get("name")))
                .unwrap_or_default()
        });
        for bu in bridge_uuids {
            let Some(br) = table("Bridge").get(&bu) else {
                continue;
            };
            let name = string_of(br.get("name")).unwrap_or_default();
            if let Err(e) = crate::policy::check_name(&name) {
                d.warnings
                    .push(format!("ignoring bridge with invalid name: {e}"));
                continue;
            }
            if !bridge_names.insert(name.clone()) {
                d.warnings.push(format!(
                    "bridge name '{name}' is empty or used twice; ignored"
                ));
                continue;
            }
            check_columns("Bridge", br, &mut d.warnings);
            let oc = map_of(br.get("other_config"));
            let mut settings = global.clone();
            for (k, v) in &oc {
                if !BRIDGE_KEYS.contains(&k.as_str()) {
                    settings.insert(k.clone(), v.clone());
                }
            }
            if oc.contains_key("hwaddr") || oc.contains_key("dp-desc") {
                d.warnings.push(format!(
                    "bridge {name}: other_config hwaddr/dp-desc are ignored by ferrovs"
                ));
            }
            // ferrovs never sets up in-band control (OpenFlow and OVSDB reach it through
            // its own sockets, not through the bridge), which is what `disable-in-band=true`
            // asks for; ovn-controller sets it on br-int.
            if oc.get("disable-in-band").is_some_and(|v| v != "true") {
                d.warnings.push(format!(
                    "bridge {name}: in-band control is not implemented; other_config:disable-in-band is treated as true"
                ));
            }
            let datapath_id = datapath_id_of(&name, &oc, &mut d.warnings);
            let controllers = controllers_of(t, &name, br, &mut d.warnings);
            let mut protocols: Vec<String> = set_items(br.get("protocols"))
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            protocols.sort();
            let ports = ports_of(t, &name, br, &mut seen, &mut d);
            let (mirrors, mirror_warnings) = super::mirrors::parse(t, &name, br);
            d.warnings.extend(mirror_warnings);
            d.bridges.push(BridgeCfg {
                uuid: bu,
                name: name.clone(),
                module: oc
                    .get("module")
                    .cloned()
                    .unwrap_or_else(|| "openflow".into()),
                settings,
                datapath_id,
                controllers,
                fail_mode: string_of(br.get("fail_mode")),
                protocols,
                ports,
                mirrors,
            });
        }
        d
    }
}

/// Names and rows already taken while reading the bridges (a port or interface belongs to
/// one bridge, a name to one port or interface).
#[derive(Default)]
struct Seen {
    port_owner: HashMap<String, String>,
    iface_owner: HashMap<String, String>,
    used_ports: HashSet<String>,
    used_ifaces: HashSet<String>,
}

/// Warns of root `other_config` keys nothing reads.
fn warn_ignored_globals(d: &mut Desired) {
    for k in d.other_config.keys() {
        // `ovn-*` keys are ovn-controller's own bookkeeping (`ovn-chassis-idx-*`), which
        // no switch reads.
        if !k.starts_with("ovn-")
            && !GLOBAL_MODULE_KEYS.contains(&k.as_str())
            && !DATAPATH_KEYS.contains(&k.as_str())
            && !DAEMON_KEYS.contains(&k.as_str())
        {
            d.warnings.push(format!(
                "Open_vSwitch other_config:{k} is stored but ignored by ferrovs"
            ));
        }
    }
}

/// A bridge's `other_config:datapath-id`, if set and valid.
fn datapath_id_of(
    name: &str,
    oc: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Option<u64> {
    match oc.get("datapath-id") {
        Some(s) => {
            let v = parse_dpid(s);
            if v.is_none() {
                warnings.push(format!(
                    "bridge {name}: other_config:datapath-id '{s}' is not 16 hex digits; ignored"
                ));
            }
            v
        }
        None => None,
    }
}

/// A bridge's controllers, those the policy refuses left out.
fn controllers_of(
    t: &Tables,
    name: &str,
    br: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Vec<ControllerCfg> {
    let empty = BTreeMap::new();
    let table = |n: &str| t.get(n).unwrap_or(&empty);
    uuids(br.get("controller"))
        .into_iter()
        .filter_map(|cu| {
            let c = table("Controller").get(&cu)?;
            check_columns("Controller", c, warnings);
            let target = string_of(c.get("target"))?;
            if let Err(e) = crate::policy::check_controller(name, &target) {
                warnings.push(format!("bridge {name}: {e}"));
                return None;
            }
            Some(ControllerCfg {
                uuid: cu.clone(),
                target,
                connection_mode: string_of(c.get("connection_mode")),
                max_backoff: int_of(c.get("max_backoff")),
                inactivity_probe: int_of(c.get("inactivity_probe")),
            })
        })
        .collect()
}

/// A bridge's ports and their interfaces, in name order; a port or interface already
/// taken is left out with a warning (or an interface error).
fn ports_of(
    t: &Tables,
    name: &str,
    br: &Map<String, Value>,
    seen: &mut Seen,
    d: &mut Desired,
) -> Vec<PortCfg> {
    let empty = BTreeMap::new();
    let table = |n: &str| t.get(n).unwrap_or(&empty);
    let mut ports = Vec::new();
    let mut port_uuids = uuids(br.get("ports"));
    port_uuids.sort_by_key(|u| {
        table("Port")
            .get(u)
            .and_then(|r| string_of(r.get("name")))
            .unwrap_or_default()
    });
    for pu in port_uuids {
        let Some(p) = table("Port").get(&pu) else {
            continue;
        };
        let pname = string_of(p.get("name")).unwrap_or_default();
        if !seen.used_ports.insert(pu.clone()) {
            d.warnings
                .push(format!("port {pname} is in more than one bridge; ignored"));
            continue;
        }
        if let Some(owner) = seen.port_owner.get(&pname) {
            d.warnings.push(format!(
                "port name {pname} is used twice (first in bridge {owner}); ignored"
            ));
            continue;
        }
        seen.port_owner.insert(pname.clone(), name.to_string());
        check_columns("Port", p, &mut d.warnings);
        let vlan = vlan_of(p, &pname, &mut d.warnings);
        let mut ifaces = Vec::new();
        let mut iface_uuids = uuids(p.get("interfaces"));
        iface_uuids.sort();
        for iu in iface_uuids {
            let Some(i) = table("Interface").get(&iu) else {
                continue;
            };
            check_columns("Interface", i, &mut d.warnings);
            let mut cfg = iface_of(&iu, i);
            if !seen.used_ifaces.insert(iu.clone()) {
                continue;
            }
            if let Some(owner) = seen.iface_owner.get(&cfg.name) {
                d.rejected.push((
                    iu.clone(),
                    format!(
                        "could not open network device {} (the name is already used in bridge {owner})",
                        cfg.name
                    ),
                ));
                continue;
            }
            seen.iface_owner.insert(cfg.name.clone(), name.to_string());
            if !ifaces.is_empty() {
                cfg.error = Some(format!(
                    "port {pname} has more than one interface (bonds are not supported by ferrovs); only the first is used"
                ));
            }
            ifaces.push(cfg);
        }
        ports.push(PortCfg {
            uuid: pu,
            name: pname,
            vlan,
            ifaces,
        });
    }
    ports
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn parses_bridges_ports_interfaces() {
        let mut t = Tables::new();
        t.entry("Open_vSwitch".into()).or_default().insert(
            "r".into(),
            row(
                json!({"bridges": ["uuid", "b"], "next_cfg": 3, "cur_cfg": 2,
                "other_config": ["map", [["pmd-cpu-mask", "3"], ["flow-limit", "5000"],
                    ["dpdk-init", "true"]]]}),
            ),
        );
        t.entry("Bridge".into()).or_default().insert(
            "b".into(),
            row(json!({"name": "br0", "ports": ["set", [["uuid", "p1"], ["uuid", "p2"]]],
                "other_config": ["map", [["module", "learning"], ["datapath-id", "00000000000000aa"],
                    ["mac-aging-time", "30"], ["disable-in-band", "true"]]],
                "protocols": ["set", ["OpenFlow13", "OpenFlow10"]], "fail_mode": "secure",
                "netflow": ["uuid", "m"]})),
        );
        t.entry("Port".into()).or_default().insert(
            "p1".into(),
            row(json!({"name": "eth1", "interfaces": ["uuid", "i1"], "tag": 10})),
        );
        t.entry("Port".into()).or_default().insert(
            "p2".into(),
            row(json!({"name": "br0", "interfaces": ["uuid", "i2"], "tag": ["set", []]})),
        );
        t.entry("Interface".into()).or_default().insert(
            "i1".into(),
            row(
                json!({"name": "eth1", "type": "", "ofport_request": 7, "ofport": 3,
                "options": ["map", [["k", "v"]]]}),
            ),
        );
        t.entry("Interface".into()).or_default().insert(
            "i2".into(),
            row(json!({"name": "br0", "type": "internal", "ofport": ["set", []]})),
        );
        let d = Desired::parse(&t);
        assert_eq!((d.next_cfg, d.cur_cfg), (3, 2));
        let b = &d.bridges[0];
        assert_eq!(b.module, "learning");
        assert_eq!(b.datapath_id, Some(0xaa));
        assert_eq!(b.fail_mode.as_deref(), Some("secure"));
        assert_eq!(b.protocols, vec!["OpenFlow10", "OpenFlow13"]);
        assert_eq!(
            b.settings.get("flow-limit").map(String::as_str),
            Some("5000")
        );
        assert_eq!(
            b.settings.get("mac-aging-time").map(String::as_str),
            Some("30")
        );
        assert!(!b.settings.contains_key("module"));
        // A bridge key, and what ferrovs does anyway: no warning, not a module setting.
        assert!(!b.settings.contains_key("disable-in-band"));
        assert!(
            !d.warnings.iter().any(|w| w.contains("in-band")),
            "{:?}",
            d.warnings
        );
        assert_eq!(b.ports.len(), 2);
        let p = b.ports.iter().find(|p| p.name == "eth1").expect("port");
        assert_eq!(p.vlan, VlanMode::Access(10));
        let i = &p.ifaces[0];
        assert_eq!(
            (i.kind.as_str(), i.ofport_request, i.prev_ofport),
            ("system", Some(7), Some(3))
        );
        assert!(d.warnings.iter().any(|w| w.contains("netflow")));
        assert!(!d.warnings.iter().any(|w| w.contains("pmd-cpu-mask")));
        assert!(d.warnings.iter().any(|w| w.contains("dpdk-init")));
        assert!(!d.warnings.iter().any(|w| w.contains("flow-limit")));
    }

    #[test]
    fn dpid_parsing() {
        assert_eq!(parse_dpid("0000000000000001"), Some(1));
        assert_eq!(parse_dpid("0x10"), Some(16));
        assert_eq!(parse_dpid("xyz"), None);
        assert_eq!(parse_dpid("00000000000000000"), None);
    }
}
