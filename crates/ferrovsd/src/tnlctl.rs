//! OVS's unixctl commands for native tunnelling: `ovs/route/show`, `ovs/route/lookup`,
//! `ovs/route/add`, `ovs/route/del`, `tnl/neigh/show`, `tnl/neigh/flush`, `tnl/neigh/set`, `tnl/ports/show`,
//! IPv4 and IPv6 alike. They read (and, for the flush and the two setters, change) the
//! process-wide tunnel tables of `netdev::tunnel`; none touches a poll thread.

/// The commands this module serves: (name, usage).
pub const COMMANDS: &[(&str, &str)] = &[
    ("ovs/route/show", ""),
    ("ovs/route/lookup", "IP"),
    (
        "ovs/route/add",
        "ip/plen output_bridge [GW] [pkt_mark=mark] [src=src_ip]",
    ),
    ("ovs/route/del", "ip/plen [pkt_mark=mark]"),
    ("tnl/neigh/show", ""),
    ("tnl/neigh/flush", ""),
    ("tnl/neigh/set", "BRIDGE IP MAC"),
    ("tnl/ports/show", ""),
];

/// Whether `method` is one of ours.
pub fn has(method: &str) -> bool {
    COMMANDS.iter().any(|c| c.0 == method)
}

/// Runs one of [`COMMANDS`].
pub fn run(method: &str, args: &[String]) -> Result<String, String> {
    use netdev::tunnel;
    match (method, args) {
        ("ovs/route/show", []) => Ok(tunnel::route_show()),
        ("ovs/route/lookup", [ip]) => tunnel::route_lookup(ip),
        ("ovs/route/add", args) if args.len() >= 2 => tunnel::route_add(args),
        ("ovs/route/del", args) if (1..=2).contains(&args.len()) => tunnel::route_del(args),
        ("tnl/neigh/set", args) if args.len() == 3 => tunnel::neigh_set(args),
        ("tnl/neigh/show", []) => Ok(tunnel::neigh_show()),
        ("tnl/neigh/flush", []) => Ok(tunnel::neigh_flush()),
        ("tnl/ports/show", []) => Ok(tunnel::ports_show()),
        _ => Err(format!(
            "usage: {method} {}",
            COMMANDS.iter().find(|c| c.0 == method).map_or("", |c| c.1)
        )),
    }
}
