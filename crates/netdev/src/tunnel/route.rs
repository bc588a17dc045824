//! The underlay's IPv4 routes: the kernel's main routing table (as `/proc/net/route` shows it
//! in the switch's network namespace) plus a host route for each address of a bridge's
//! internal port, as OVS's route table caches them (`ovs-appctl ovs/route/show`).
//!
//! A tunnel's outer packets leave through the internal port the route to its remote address
//! names; the next hop is the route's gateway, or the remote address itself on a connected
//! route. Lookups are longest-prefix first, then lowest metric. The table is re-read by the
//! tunnel manager thread (never on a poll thread); lines that do not parse are skipped.

use std::net::Ipv4Addr;

/// One route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub dst: Ipv4Addr,
    pub plen: u8,
    pub dev: String,
    pub gw: Option<Ipv4Addr>,
    pub metric: u32,
    /// A host route to one of the switch's own addresses.
    pub local: bool,
    /// The source address for packets on this route, where the device has one.
    pub src: Option<Ipv4Addr>,
}

const RTF_UP: u32 = 0x1;

fn hex_addr(s: &str) -> Option<Ipv4Addr> {
    // The kernel prints the address as a host-order (little-endian) 32-bit number.
    let v = u32::from_str_radix(s, 16).ok()?;
    Some(Ipv4Addr::from(v.swap_bytes()))
}

/// Parses `/proc/net/route` text.
pub fn parse_proc(text: &str) -> Vec<Route> {
    let mut v = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let (Some(dst), Some(gw), Ok(flags), Ok(metric), Some(mask)) = (
            hex_addr(f[1]),
            hex_addr(f[2]),
            u32::from_str_radix(f[3], 16),
            f[6].parse::<u32>(),
            hex_addr(f[7]),
        ) else {
            continue;
        };
        if flags & RTF_UP == 0 {
            continue;
        }
        let m = u32::from(mask);
        if m.leading_ones() + m.trailing_zeros() != 32 {
            continue;
        }
        v.push(Route {
            dst,
            plen: m.leading_ones() as u8,
            dev: f[0].to_string(),
            gw: (!gw.is_unspecified()).then_some(gw),
            metric,
            local: false,
            src: None,
        });
    }
    v
}

/// The kernel's routes now, each with its device's address as source.
pub fn kernel_routes() -> Vec<Route> {
    let text = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let mut v = parse_proc(&text);
    for r in &mut v {
        r.src = crate::interface_ipv4(&r.dev).ok();
    }
    v
}

fn covers(r: &Route, ip: Ipv4Addr) -> bool {
    let m = if r.plen == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(r.plen))
    };
    u32::from(ip) & m == u32::from(r.dst) & m
}

/// The best route to `ip`: longest prefix, then lowest metric.
pub fn lookup(routes: &[Route], ip: Ipv4Addr) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| covers(r, ip))
        .min_by_key(|r| (std::cmp::Reverse(r.plen), r.metric))
}

/// `ovs/route/show`'s text.
pub fn show(routes: &[Route]) -> String {
    let mut s = String::from("Route Table:\n");
    for r in routes {
        s.push_str(&format!("Cached: {}/{} dev {}", r.dst, r.plen, r.dev));
        if let Some(g) = r.gw {
            s.push_str(&format!(" GW {g}"));
        }
        if let Some(src) = r.src {
            s.push_str(&format!(" SRC {src}"));
        }
        if r.local {
            s.push_str(" local");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
br-phy\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
eth0\t0000000A\t00000000\t0001\t0\t0\t50\t0000FFFF\t0\t0\t0\n\
junk line\n";

    #[test]
    fn parses_the_kernel_table_and_picks_the_longest_prefix() {
        let r = parse_proc(PROC);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].gw, Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(r[1].dst, Ipv4Addr::new(10, 0, 0, 0));
        assert_eq!(r[1].plen, 24);
        let hit = lookup(&r, Ipv4Addr::new(10, 0, 0, 7)).expect("route");
        assert_eq!(hit.dev, "br-phy");
        let hit = lookup(&r, Ipv4Addr::new(10, 0, 9, 7)).expect("route");
        assert_eq!(hit.dev, "eth0");
        assert_eq!(hit.plen, 16);
        let def = lookup(&r, Ipv4Addr::new(8, 8, 8, 8)).expect("default");
        assert_eq!(def.plen, 0);
        assert!(show(&r).starts_with("Route Table:\nCached: 0.0.0.0/0 dev eth0 GW 10.0.0.1\n"));
    }
}
