//! Two process-wide tunnel settings OVS changes at run time with `ovs-appctl`, with OVS's
//! argument checks and answers: how long a learned neighbour stays (`tnl/neigh/aging`,
//! `tnl/arp/aging`) and the UDP source ports of VXLAN and Geneve packets
//! (`tnl/egress_port_range`). Poll threads read both with one relaxed load.

use super::wire::SRC_PORTS;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Seconds a neighbour entry lives after it was last seen or set (OVS's default: 900).
static NEIGH_AGING: AtomicU32 = AtomicU32::new(900);
/// The longest aging OVS accepts (one hour).
const NEIGH_AGING_MAX: u32 = 3600;

/// How long a learned neighbour stays.
pub fn neigh_aging() -> Duration {
    Duration::from_secs(u64::from(NEIGH_AGING.load(Ordering::Relaxed)))
}

/// `ovs-appctl tnl/neigh/aging [SECS]`: shows the aging time, or sets it (1 to 3600
/// seconds; entries older than a shorter new time go at the manager's next round).
pub fn neigh_aging_cmd(args: &[String]) -> Result<String, String> {
    let Some(a) = args.first() else {
        return Ok(format!("{}\n", NEIGH_AGING.load(Ordering::Relaxed)));
    };
    match a.parse::<u32>() {
        Ok(s) if (1..=NEIGH_AGING_MAX).contains(&s) => {
            NEIGH_AGING.store(s, Ordering::Relaxed);
            Ok("OK\n".into())
        }
        _ => Err("bad aging value".into()),
    }
}

/// The UDP source port range of tunnel packets, lowest and highest.
pub fn egress_port_range() -> (u16, u16) {
    let r = SRC_PORTS.load(Ordering::Relaxed);
    ((r >> 32) as u16, r as u16)
}

/// C's `atoi`: leading blanks, a sign, then digits up to the first other character (0 when
/// there are none); saturates instead of overflowing.
fn atoi(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = rest
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
    if neg {
        -n
    } else {
        n
    }
}

/// `ovs-appctl tnl/egress_port_range [MIN MAX]`: with fewer than two arguments shows the
/// range; with two sets it (either order). As in OVS, a bad bound is answered with
/// "Invalid min." or "Invalid max." as a normal reply, not an error.
pub fn egress_port_range_cmd(args: &[String]) -> Result<String, String> {
    let [min, max] = args else {
        let (lo, hi) = egress_port_range();
        return Ok(format!("Tunnel UDP source port range: {lo}-{hi}\n"));
    };
    match parse_range(min, max) {
        Ok((lo, hi)) => {
            SRC_PORTS.store((u64::from(lo) << 32) | u64::from(hi), Ordering::Relaxed);
            Ok("OK\n".into())
        }
        Err(e) => Ok(format!("{e}\n")),
    }
}

/// `tnl/egress_port_range`'s two bounds, lowest first, or OVS's answer to a bad one.
fn parse_range(min: &str, max: &str) -> Result<(u16, u16), &'static str> {
    let port = |v: i64| u16::try_from(v).ok().filter(|&p| p != 0);
    let a = port(atoi(min)).ok_or("Invalid min.")?;
    let b = port(atoi(max)).ok_or("Invalid max.")?;
    Ok((a.min(b), a.max(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn settings_take_ovs_arguments_and_answer_as_ovs() {
        assert_eq!(atoi(" 42abc"), 42);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("-7"), -7);
        assert_eq!(neigh_aging_cmd(&s(&["0"])), Err("bad aging value".into()));
        assert_eq!(
            neigh_aging_cmd(&s(&["3601"])),
            Err("bad aging value".into())
        );
        assert_eq!(neigh_aging_cmd(&s(&["x"])), Err("bad aging value".into()));
        assert_eq!(neigh_aging_cmd(&s(&["120"])), Ok("OK\n".into()));
        assert_eq!(neigh_aging(), Duration::from_secs(120));
        assert_eq!(neigh_aging_cmd(&[]), Ok("120\n".into()));
        assert_eq!(neigh_aging_cmd(&s(&["900"])), Ok("OK\n".into()));
        let show = "Tunnel UDP source port range: 32768-61000\n";
        assert_eq!(egress_port_range_cmd(&[]), Ok(show.into()));
        assert_eq!(egress_port_range_cmd(&s(&["100"])), Ok(show.into()));
        assert_eq!(
            egress_port_range_cmd(&s(&["0", "9"])),
            Ok("Invalid min.\n".into())
        );
        assert_eq!(
            egress_port_range_cmd(&s(&["9", "70000"])),
            Ok("Invalid max.\n".into())
        );
        assert_eq!(
            egress_port_range_cmd(&s(&["x", "y"])),
            Ok("Invalid min.\n".into())
        );
        assert_eq!(parse_range("300", "200"), Ok((200, 300)));
        assert_eq!(parse_range("7", "7x"), Ok((7, 7)));
        assert_eq!(parse_range("-1", "7"), Err("Invalid min."));
        // Set to what it is (other tests' packets read the range meanwhile).
        assert_eq!(
            egress_port_range_cmd(&s(&["61000", "32768"])),
            Ok("OK\n".into())
        );
        assert_eq!(egress_port_range(), (32768, 61000));
    }
}
