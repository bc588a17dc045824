//! The underlay's routes, IPv4 and IPv6: the kernel's main routing tables (as
//! `/proc/net/route` and `/proc/net/ipv6_route` show them in the switch's network
//! namespace), a host route for each address of a bridge's internal port, and the routes
//! added with `ovs/route/add`, as OVS's route table caches them (`ovs-appctl
//! ovs/route/show`).
//!
//! A tunnel's outer packets leave through the internal port the route to its remote address
//! names; the next hop is the route's gateway, or the remote address itself on a connected
//! route. Lookups are longest-prefix first (within the remote's family), then routes added
//! by hand, then lowest metric. The table is re-read by the tunnel manager thread (never on
//! a poll thread); lines that do not parse are skipped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub dst: IpAddr,
    pub plen: u8,
    pub dev: String,
    pub gw: Option<IpAddr>,
    pub metric: u32,
    /// A host route to one of the switch's own addresses.
    pub local: bool,
    /// Added with `ovs/route/add` (shown as `User:`).
    pub user: bool,
    /// The source address for packets on this route, where the device has one.
    pub src: Option<IpAddr>,
    /// `pkt_mark=` of a route added by hand (0: none). A marked route serves only packets
    /// with that mark, and tunnel packets here carry none, so lookups pass it by.
    pub mark: u32,
}

const RTF_UP: u32 = 0x1;
/// `/proc/net/ipv6_route`: a rejecting route (unreachable, prohibit).
const RTF_REJECT: u32 = 0x0200;
/// `/proc/net/ipv6_route`: a route of the local table (the host's own addresses).
const RTF_LOCAL: u32 = 0x8000_0000;

fn hex_addr(s: &str) -> Option<Ipv4Addr> {
    // The kernel prints the address as a host-order (little-endian) 32-bit number.
    let v = u32::from_str_radix(s, 16).ok()?;
    Some(Ipv4Addr::from(v.swap_bytes()))
}

fn hex_addr6(s: &str) -> Option<Ipv6Addr> {
    // 32 hex digits, in wire order.
    if s.len() != 32 {
        return None;
    }
    u128::from_str_radix(s, 16).ok().map(Ipv6Addr::from)
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
            dst: IpAddr::V4(dst),
            plen: m.leading_ones() as u8,
            dev: f[0].to_string(),
            gw: (!gw.is_unspecified()).then_some(IpAddr::V4(gw)),
            metric,
            local: false,
            user: false,
            src: None,
            mark: 0,
        });
    }
    v
}

/// Parses `/proc/net/ipv6_route` text: destination, prefix length, source, source prefix
/// length, next hop, metric, refcount, use, flags, device. Routes that are not up, reject
/// routes, the local table's and multicast ones are left out.
pub fn parse_proc6(text: &str) -> Vec<Route> {
    let mut v = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Some(dst), Ok(plen), Some(gw), Ok(metric), Ok(flags)) = (
            hex_addr6(f[0]),
            u8::from_str_radix(f[1], 16),
            hex_addr6(f[4]),
            u32::from_str_radix(f[5], 16),
            u32::from_str_radix(f[8], 16),
        ) else {
            continue;
        };
        if flags & RTF_UP == 0
            || flags & (RTF_REJECT | RTF_LOCAL) != 0
            || plen > 128
            || dst.is_multicast()
            || f[9] == "lo"
        {
            continue;
        }
        v.push(Route {
            dst: IpAddr::V6(dst),
            plen,
            dev: f[9].to_string(),
            gw: (!gw.is_unspecified()).then_some(IpAddr::V6(gw)),
            metric,
            local: false,
            user: false,
            src: None,
            mark: 0,
        });
    }
    v
}

/// The global IPv6 addresses of each device, from `/proc/net/if_inet6` text (address,
/// ifindex, prefix length, scope, flags, device); link-local and host-scope ones are left
/// out.
pub fn parse_if_inet6(text: &str) -> Vec<(String, Ipv6Addr)> {
    parse_if_inet6_scope(text, 0)
}

/// [`parse_if_inet6`] for the addresses of kernel scope `scope` (0 global, 0x20 link).
fn parse_if_inet6_scope(text: &str, scope: u8) -> Vec<(String, Ipv6Addr)> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let a = hex_addr6(f.first()?)?;
            let s = u8::from_str_radix(f.get(3)?, 16).ok()?;
            let dev = f.get(5)?.to_string();
            (s == scope).then_some((dev, a))
        })
        .collect()
}

/// The link-local IPv6 addresses of device `dev` (OVS's tunnel port map listens on every
/// address of an underlay, these included).
pub fn interface_ipv6_link_local(dev: &str) -> Vec<Ipv6Addr> {
    let text = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    parse_if_inet6_scope(&text, 0x20)
        .into_iter()
        .filter(|(d, _)| d == dev)
        .map(|(_, a)| a)
        .collect()
}

/// The first global IPv6 address of device `dev`.
pub fn interface_ipv6(dev: &str) -> Option<Ipv6Addr> {
    let text = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    parse_if_inet6(&text)
        .into_iter()
        .find(|(d, _)| d == dev)
        .map(|(_, a)| a)
}

/// The kernel's routes now (both families), each with its device's address as source.
pub fn kernel_routes() -> Vec<Route> {
    let text = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let mut v = parse_proc(&text);
    for r in &mut v {
        r.src = crate::interface_ipv4(&r.dev).ok().map(IpAddr::V4);
    }
    let text6 = std::fs::read_to_string("/proc/net/ipv6_route").unwrap_or_default();
    let inet6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    let addrs = parse_if_inet6(&inet6);
    for mut r in parse_proc6(&text6) {
        r.src = addrs
            .iter()
            .find(|(d, _)| *d == r.dev)
            .map(|(_, a)| IpAddr::V6(*a));
        v.push(r);
    }
    v
}

fn covers(r: &Route, ip: IpAddr) -> bool {
    match (r.dst, ip) {
        (IpAddr::V4(d), IpAddr::V4(a)) => {
            let m = u32::MAX
                .checked_shl(32 - u32::from(r.plen.min(32)))
                .unwrap_or(0);
            u32::from(a) & m == u32::from(d) & m
        }
        (IpAddr::V6(d), IpAddr::V6(a)) => {
            let m = u128::MAX
                .checked_shl(128 - u32::from(r.plen.min(128)))
                .unwrap_or(0);
            u128::from(a) & m == u128::from(d) & m
        }
        _ => false,
    }
}

/// The best route to `ip`: longest prefix, then one added by hand, then lowest metric.
pub fn lookup(routes: &[Route], ip: IpAddr) -> Option<&Route> {
    lookup_marked(routes, ip, 0)
}

/// The best route to `ip` among those with `pkt_mark` `mark` (0: the unmarked ones), as
/// [`lookup`] orders them.
pub fn lookup_marked(routes: &[Route], ip: IpAddr, mark: u32) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| r.mark == mark && covers(r, ip))
        .min_by_key(|r| (std::cmp::Reverse(r.plen), !r.user, r.metric))
}

/// `ovs/route/show`'s text.
pub fn show(routes: &[Route]) -> String {
    let mut s = String::from("Route Table:\n");
    for r in routes {
        let kind = if r.user { "User" } else { "Cached" };
        s.push_str(&format!("{kind}: {}/{}", r.dst, r.plen));
        if r.mark != 0 {
            s.push_str(&format!(" MARK {}", r.mark));
        }
        s.push_str(&format!(" dev {}", r.dev));
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

/// An `IP[/PLEN]` argument: the address with its host bits cleared (as OVS stores and
/// shows a route's prefix) and the prefix length (the full length when absent).
fn parse_prefix(prefix: &str) -> Option<(IpAddr, u8)> {
    let (addr, plen) = match prefix.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (prefix, None),
    };
    let dst: IpAddr = addr.parse().ok()?;
    let max = if dst.is_ipv4() { 32 } else { 128 };
    let plen = match plen {
        None => max,
        Some(p) => p.parse::<u8>().ok().filter(|&p| p <= max)?,
    };
    let dst = match dst {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(plen)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(plen)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    };
    Some((dst, plen))
}

/// A `pkt_mark=` value as OVS reads it (C's `%i`: decimal, `0x` hex or `0` octal, a sign
/// allowed, a negative number wrapping to 32 bits).
fn parse_mark(v: &str) -> Option<u32> {
    let (neg, d) = match v.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let n = if let Some(h) = d.strip_prefix("0x").or_else(|| d.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if d.len() > 1 && d.starts_with('0') {
        i64::from_str_radix(&d[1..], 8).ok()?
    } else {
        d.parse::<i64>().ok()?
    };
    let n = if neg { -n } else { n };
    (i64::from(i32::MIN)..=i64::from(u32::MAX))
        .contains(&n)
        .then_some(n as u32)
}

/// A `pkt_mark=N` argument's mark.
pub fn parse_mark_arg(a: &str) -> Option<u32> {
    a.strip_prefix("pkt_mark=").and_then(parse_mark)
}

/// Parses `ovs/route/add`'s arguments as OVS 3.1 reads them, `IP/PLEN BRIDGE [GW]
/// [pkt_mark=N]` (the third may be the mark instead of a gateway; a gateway of `0.0.0.0`
/// or `::` is none), with OVS's errors. `src=IP` is also taken in the third or fourth place,
/// as later OVS releases take it. The route's source address is chosen later, from the
/// bridge's addresses ([`source_address`]).
pub fn parse_add(args: &[String]) -> Result<Route, String> {
    let Some((dst, plen)) = args.first().and_then(|p| parse_prefix(p)) else {
        return Err("Invalid parameters".into());
    };
    let mut r = Route {
        dst,
        plen,
        dev: args.get(1).cloned().unwrap_or_default(),
        gw: None,
        metric: 0,
        local: false,
        user: true,
        src: None,
        mark: 0,
    };
    let src = |r: &mut Route, a: &str| {
        let ip = a.strip_prefix("src=")?.parse::<IpAddr>().ok()?;
        (ip.is_ipv4() == dst.is_ipv4()).then(|| r.src = Some(ip))
    };
    if let Some(a) = args.get(2) {
        let gw = a
            .parse::<IpAddr>()
            .ok()
            .filter(|ip| ip.is_ipv4() == dst.is_ipv4());
        if let Some(m) = parse_mark_arg(a) {
            r.mark = m;
        } else if let Some(gw) = gw {
            r.gw = (!gw.is_unspecified()).then_some(gw);
        } else if src(&mut r, a).is_none() {
            return Err(if dst.is_ipv4() {
                "Invalid pkt_mark or gateway".into()
            } else {
                "Invalid pkt_mark or IPv6 gateway".into()
            });
        }
    }
    if let Some(a) = args.get(3) {
        if let Some(m) = parse_mark_arg(a) {
            r.mark = m;
        } else if src(&mut r, a).is_none() {
            return Err("Invalid pkt_mark".into());
        }
    }
    Ok(r)
}

/// The source address of a route added by hand, chosen as OVS does from the addresses (and
/// prefix lengths) of the device it names: `want` if given and that device has it in the
/// destination's subnet (or else the gateway's); otherwise the device's address whose
/// subnet holds the destination, the longest prefix first, or else the gateway. None: OVS's
/// "Error while inserting route.".
pub fn source_address(
    addrs: &[(IpAddr, u8)],
    dst: IpAddr,
    gw: Option<IpAddr>,
    want: Option<IpAddr>,
) -> Option<IpAddr> {
    let pick = |target: IpAddr| {
        addrs
            .iter()
            .filter(|(a, plen)| {
                let net = Route {
                    dst: *a,
                    plen: *plen,
                    dev: String::new(),
                    gw: None,
                    metric: 0,
                    local: false,
                    user: false,
                    src: None,
                    mark: 0,
                };
                covers(&net, target) && want.is_none_or(|w| w == *a)
            })
            .max_by_key(|(_, plen)| *plen)
            .map(|(a, _)| *a)
    };
    pick(dst).or_else(|| gw.and_then(pick))
}

/// Parses `ovs/route/del`'s arguments, `IP/PLEN [pkt_mark=N]`, into the prefix and mark of
/// the route to remove; the errors are OVS's words.
pub fn parse_del(args: &[String]) -> Result<(IpAddr, u8, u32), String> {
    let Some((dst, plen)) = args.first().and_then(|p| parse_prefix(p)) else {
        return Err("Invalid parameters".into());
    };
    let mark = match args.get(1) {
        None => 0,
        Some(a) => a
            .strip_prefix("pkt_mark=")
            .and_then(parse_mark)
            .ok_or("Invalid pkt_mark")?,
    };
    if args.len() > 2 {
        return Err("Invalid parameters".into());
    }
    Ok((dst, plen, mark))
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

    const PROC6: &str = "\
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001   br-phy
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
fd000000000000000000000000000002 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 80200001   br-phy
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000004 00000000 00000001   br-phy
junk
";

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().expect("v4"))
    }

    fn v6(s: &str) -> IpAddr {
        IpAddr::V6(s.parse().expect("v6"))
    }

    #[test]
    fn parses_the_kernel_table_and_picks_the_longest_prefix() {
        let r = parse_proc(PROC);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].gw, Some(v4("10.0.0.1")));
        assert_eq!(r[1].dst, v4("10.0.0.0"));
        assert_eq!(r[1].plen, 24);
        let hit = lookup(&r, v4("10.0.0.7")).expect("route");
        assert_eq!(hit.dev, "br-phy");
        let hit = lookup(&r, v4("10.0.9.7")).expect("route");
        assert_eq!(hit.dev, "eth0");
        assert_eq!(hit.plen, 16);
        let def = lookup(&r, v4("8.8.8.8")).expect("default");
        assert_eq!(def.plen, 0);
        assert!(show(&r).starts_with("Route Table:\nCached: 0.0.0.0/0 dev eth0 GW 10.0.0.1\n"));
        // No IPv4 route covers an IPv6 address.
        assert_eq!(lookup(&r, v6("fd00::7")), None);
    }

    #[test]
    fn parses_the_kernel_ipv6_table() {
        let r = parse_proc6(PROC6);
        // The connected fd00::/64 and fe80::/64, the default route; not the local table's
        // host routes, the reject route or multicast.
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!((r[0].dst, r[0].plen), (v6("fd00::"), 64));
        assert_eq!(r[0].dev, "br-phy");
        assert_eq!(r[0].metric, 256);
        assert_eq!(r[2].gw, Some(v6("fd00::1")));
        let hit = lookup(&r, v6("fd00::9")).expect("route");
        assert_eq!((hit.dev.as_str(), hit.gw), ("br-phy", None));
        let def = lookup(&r, v6("2001:db8::1")).expect("default");
        assert_eq!((def.plen, def.gw), (0, Some(v6("fd00::1"))));
        assert_eq!(lookup(&r, v4("10.0.0.1")), None);
        let mut r = r;
        r[0].src = Some(v6("fd00::2"));
        assert!(show(&r).contains("Cached: fd00::/64 dev br-phy SRC fd00::2\n"));
        let a = parse_if_inet6(
            "00000000000000000000000000000001 01 80 10 80       lo\n\
             fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n\
             fd000000000000000000000000000002 04 40 00 82     eth0\n",
        );
        assert_eq!(
            a,
            vec![("eth0".to_string(), "fd00::2".parse().expect("v6"))]
        );
        let ll = parse_if_inet6_scope(
            "00000000000000000000000000000001 01 80 10 80       lo\n\
             fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n\
             fd000000000000000000000000000002 04 40 00 82     eth0\n",
            0x20,
        );
        assert_eq!(
            ll,
            vec![(
                "eth0".to_string(),
                "fe80::fc:ff:fe00:1".parse().expect("v6")
            )]
        );
    }

    #[test]
    fn routes_added_by_hand_parse_and_win_a_tie() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let u = parse_add(&s(&["fd01::/64", "br0", "fd00::1", "src=fd00::2"])).expect("ok");
        assert_eq!(
            (u.dst, u.plen, u.gw, u.src, u.user),
            (
                v6("fd01::"),
                64,
                Some(v6("fd00::1")),
                Some(v6("fd00::2")),
                true
            )
        );
        let h = parse_add(&s(&["10.1.0.1", "br0", "pkt_mark=3"])).expect("ok");
        assert_eq!((h.plen, h.gw), (32, None));
        assert!(parse_add(&s(&["fd01::/129", "br0"])).is_err());
        assert!(parse_add(&s(&["fd01::/64", "br0", "10.0.0.1"])).is_err());
        let err = |a: &[&str]| parse_add(&s(a)).err();
        assert_eq!(
            err(&["fd01::/64", "br0", "x"]),
            Some("Invalid pkt_mark or IPv6 gateway".into())
        );
        assert_eq!(
            err(&["10.1.0.0/16", "br0", "fd00::1"]),
            Some("Invalid pkt_mark or gateway".into())
        );
        assert_eq!(
            err(&["10.1.0.0/16", "br0", "pkt_mark=1", "10.0.0.1"]),
            Some("Invalid pkt_mark".into())
        );
        assert_eq!(
            err(&["10.1.0.0/33", "br0"]),
            Some("Invalid parameters".into())
        );
        let g = parse_add(&s(&["10.1.0.0/16", "br0", "0.0.0.0", "pkt_mark=0x10"])).expect("ok");
        assert_eq!((g.gw, g.mark), (None, 16));
        let mut cached = u.clone();
        cached.user = false;
        cached.dev = "eth9".into();
        let routes = vec![cached, u];
        assert_eq!(lookup(&routes, v6("fd01::5")).map(|r| r.user), Some(true));
        assert!(show(&routes).contains("User: fd01::/64 dev br0 GW fd00::1 SRC fd00::2\n"));
    }

    #[test]
    fn a_route_takes_its_source_from_the_bridge_as_in_ovs() {
        let a = [
            (v4("10.9.0.1"), 24),
            (v4("10.0.0.1"), 8),
            (v6("fd7f:9::1"), 64),
        ];
        let src = |dst, gw, want| source_address(&a, dst, gw, want);
        // The longest prefix holding the destination, else the gateway's, else none.
        assert_eq!(src(v4("10.9.0.0"), None, None), Some(v4("10.9.0.1")));
        assert_eq!(src(v4("10.7.0.0"), None, None), Some(v4("10.0.0.1")));
        assert_eq!(src(v4("172.16.0.0"), None, None), None);
        assert_eq!(
            src(v4("0.0.0.0"), Some(v4("10.9.0.254")), None),
            Some(v4("10.9.0.1"))
        );
        assert_eq!(
            src(v6("fd7f:8::"), Some(v6("fd7f:9::2")), None),
            Some(v6("fd7f:9::1"))
        );
        // A source asked for must be the bridge's, in the destination's subnet.
        assert_eq!(
            src(v4("10.9.0.0"), None, Some(v4("10.0.0.1"))),
            Some(v4("10.0.0.1"))
        );
        assert_eq!(src(v4("10.9.0.0"), None, Some(v4("10.9.0.2"))), None);
    }

    #[test]
    fn prefixes_lose_their_host_bits_and_marked_routes_serve_no_lookup() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let r = parse_add(&s(&["10.1.2.3/16", "br0", "pkt_mark=9"])).expect("ok");
        assert_eq!((r.dst, r.plen, r.mark), (v4("10.1.0.0"), 16, 9));
        assert!(show(std::slice::from_ref(&r)).contains("User: 10.1.0.0/16 MARK 9 dev br0\n"));
        assert_eq!(lookup(std::slice::from_ref(&r), v4("10.1.9.9")), None);
        let z = parse_add(&s(&["fd01::1:2/0", "br0"])).expect("ok");
        assert_eq!((z.dst, z.plen), (v6("::"), 0));
        assert_eq!(
            parse_del(&s(&["fd01::7/64", "pkt_mark=4"])),
            Ok((v6("fd01::"), 64, 4))
        );
        assert_eq!(parse_del(&s(&["10.0.0.1"])), Ok((v4("10.0.0.1"), 32, 0)));
        let err = |a: &[&str]| parse_del(&s(a)).err();
        assert_eq!(err(&["10.0.0.0/33"]), Some("Invalid parameters".into()));
        assert_eq!(err(&["br0"]), Some("Invalid parameters".into()));
        assert_eq!(err(&[]), Some("Invalid parameters".into()));
        assert_eq!(
            err(&["10.0.0.0/8", "mark=1"]),
            Some("Invalid pkt_mark".into())
        );
        assert_eq!(
            err(&["10.0.0.0/8", "pkt_mark=1x"]),
            Some("Invalid pkt_mark".into())
        );
        let mark = |m: &str| parse_del(&s(&["10.0.0.0/8", m])).map(|r| r.2);
        assert_eq!(mark("pkt_mark=0x10"), Ok(16));
        assert_eq!(mark("pkt_mark=010"), Ok(8));
        assert_eq!(mark("pkt_mark=-1"), Ok(u32::MAX));
    }
}
