//! OVS's unixctl commands for native tunnelling: `ovs/route/show`, `ovs/route/lookup`,
//! `ovs/route/add`, `ovs/route/del`, `tnl/neigh/show`, `tnl/neigh/flush`, `tnl/neigh/set`,
//! `tnl/neigh/aging` (and their older `tnl/arp/*` names), `tnl/egress_port_range`,
//! `tnl/ports/show`, IPv4 and IPv6 alike, with ovs-vswitchd 3.1's argument counts, usages
//! and answers. They read (and, for the flush and the setters, change) the process-wide
//! tunnel tables of `netdev::tunnel`; none touches a poll thread.

/// The commands this module serves: (name, usage), the usages as ovs-vswitchd lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    ("ovs/route/show", ""),
    ("ovs/route/lookup", "ip_addr [pkt_mark=mark]"),
    (
        "ovs/route/add",
        "ip_addr/prefix_len out_br_name [gw] [pkt_mark=mark]",
    ),
    ("ovs/route/del", "ip_addr/prefix_len [pkt_mark=mark]"),
    ("tnl/neigh/show", ""),
    ("tnl/neigh/flush", ""),
    ("tnl/neigh/set", "BRIDGE IP MAC"),
    ("tnl/neigh/aging", "[SECS]"),
    ("tnl/arp/show", ""),
    ("tnl/arp/flush", ""),
    ("tnl/arp/set", "BRIDGE IP MAC"),
    ("tnl/arp/aging", "[SECS]"),
    ("tnl/egress_port_range", "min max"),
    ("tnl/ports/show", "-v"),
];

/// The fewest and most arguments each command takes, as ovs-vswitchd registers them.
const ARITY: &[(&str, usize, usize)] = &[
    ("ovs/route/show", 0, 0),
    ("ovs/route/lookup", 1, 2),
    ("ovs/route/add", 2, 4),
    ("ovs/route/del", 1, 2),
    ("tnl/neigh/show", 0, 0),
    ("tnl/neigh/flush", 0, 0),
    ("tnl/neigh/set", 3, 3),
    ("tnl/neigh/aging", 0, 1),
    ("tnl/arp/show", 0, 0),
    ("tnl/arp/flush", 0, 0),
    ("tnl/arp/set", 3, 3),
    ("tnl/arp/aging", 0, 1),
    ("tnl/egress_port_range", 0, 2),
    ("tnl/ports/show", 0, 1),
];

/// Whether `method` is one of ours.
pub fn has(method: &str) -> bool {
    COMMANDS.iter().any(|c| c.0 == method)
}

/// Runs one of [`COMMANDS`]; too few or too many arguments get ovs-vswitchd's answer.
pub fn run(method: &str, args: &[String]) -> Result<String, String> {
    use netdev::tunnel;
    if let Some(&(_, min, max)) = ARITY.iter().find(|a| a.0 == method) {
        if args.len() < min {
            return Err(format!(
                "\"{method}\" command requires at least {min} arguments"
            ));
        }
        if args.len() > max {
            return Err(format!(
                "\"{method}\" command takes at most {max} arguments"
            ));
        }
    }
    match method {
        "ovs/route/show" => Ok(tunnel::route_show()),
        "ovs/route/lookup" => tunnel::route_lookup(args),
        "ovs/route/add" => tunnel::route_add(args),
        "ovs/route/del" => tunnel::route_del(args),
        "tnl/neigh/set" | "tnl/arp/set" => tunnel::neigh_set(args),
        "tnl/neigh/show" | "tnl/arp/show" => Ok(tunnel::neigh_show()),
        "tnl/neigh/flush" | "tnl/arp/flush" => Ok(tunnel::neigh_flush()),
        "tnl/neigh/aging" | "tnl/arp/aging" => tunnel::knobs::neigh_aging_cmd(args),
        "tnl/egress_port_range" => tunnel::knobs::egress_port_range_cmd(args),
        "tnl/ports/show" => match args.first().map(String::as_str) {
            // OVS compares the option case-insensitively and ignores any other word.
            Some(v) if v.eq_ignore_ascii_case("-v") => Ok(tunnel::underlay::ports_show_verbose()),
            _ => Ok(tunnel::ports_show()),
        },
        _ => Err(format!("\"{method}\" is not a valid command")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_its_argument_counts() {
        for (name, _) in COMMANDS {
            assert!(ARITY.iter().any(|a| a.0 == *name), "{name}");
        }
        assert_eq!(ARITY.len(), COMMANDS.len());
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            run("ovs/route/add", &s(&["10.0.0.0/8"])),
            Err("\"ovs/route/add\" command requires at least 2 arguments".into())
        );
        assert_eq!(
            run("ovs/route/show", &s(&["x"])),
            Err("\"ovs/route/show\" command takes at most 0 arguments".into())
        );
        assert_eq!(
            run("tnl/arp/set", &s(&["br0", "bogus", "00:11:22:33:44:55"])),
            Err("bad IP address".into())
        );
    }
}
