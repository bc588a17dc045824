//! OVS's `dpctl/*` connection-tracking commands on the process's tracker
//! (`datapath::ct::tracker`): `dump-conntrack`, `flush-conntrack`, `ct-stats-show`,
//! `ct-get-maxconns`, `ct-set-maxconns`, `ct-bkts`.
//!
//! Arguments are OVS's: an optional datapath name first (`netdev@ovs-netdev`, `system@..`;
//! there is one tracker, so any name means it), then `zone=N`, `-s`/`--statistics`,
//! `-m`/`--more`, `gt=N`, and for `flush-conntrack` an original-direction tuple in OVS's
//! syntax (`ct_nw_src=..,ct_nw_dst=..,ct_nw_proto=..,ct_tp_src=..,ct_tp_dst=..`, IPv6 with
//! `ct_ipv6_src/dst`, ICMP with `icmp_id`, `icmp_type`, `icmp_code`). Output is OVS's text
//! (the layouts are `conntrack::ops`'s); a bad argument is an error naming it.

use conntrack::{ConnKey, Flush};
use std::net::IpAddr;

/// The commands served here: (name, usage).
pub const COMMANDS: &[(&str, &str)] = &[
    ("dpctl/dump-conntrack", "[DP] [zone=N] [-s]"),
    ("dpctl/flush-conntrack", "[DP] [zone=N] [ct-orig-tuple]"),
    ("dpctl/ct-stats-show", "[DP] [zone=N] [-m]"),
    ("dpctl/ct-get-maxconns", "[DP]"),
    ("dpctl/ct-set-maxconns", "[DP] MAXCONNS"),
    ("dpctl/ct-bkts", "[DP] [gt=N]"),
];

/// Whether `method` is one of [`COMMANDS`].
pub fn has(method: &str) -> bool {
    COMMANDS.iter().any(|c| c.0 == method)
}

/// Drops a leading datapath name (`type@name` or a bare name without `=`).
fn skip_dp(args: &[String]) -> &[String] {
    match args.first() {
        Some(a)
            if a.contains('@')
                || (!a.contains('=') && !a.starts_with('-') && a.parse::<u64>().is_err()) =>
        {
            &args[1..]
        }
        _ => args,
    }
}

fn zone_arg(a: &str) -> Option<Result<u16, String>> {
    let v = a.strip_prefix("zone=")?;
    Some(v.parse::<u16>().map_err(|_| format!("invalid zone '{v}'")))
}

/// Runs one of [`COMMANDS`] at `now_ms`.
pub fn run(method: &str, args: &[String], now_ms: u64) -> Result<String, String> {
    let ct = datapath::ct::tracker();
    let args = skip_dp(args);
    match method {
        "dpctl/dump-conntrack" | "dpctl/ct-stats-show" => {
            let (mut zone, mut stats, mut more) = (None, false, false);
            for a in args {
                match a.as_str() {
                    "-s" | "--statistics" => stats = true,
                    "-m" | "--more" => more = true,
                    _ => match zone_arg(a) {
                        Some(z) => zone = Some(z?),
                        None => return Err(format!("invalid argument '{a}'")),
                    },
                }
            }
            if method == "dpctl/dump-conntrack" {
                Ok(ct.dump(zone, stats, now_ms))
            } else {
                Ok(ct.stats_text(zone, more, now_ms))
            }
        }
        "dpctl/flush-conntrack" => {
            let mut zone = None;
            let mut tuple = None;
            for a in args {
                match zone_arg(a) {
                    Some(z) => zone = Some(z?),
                    None if tuple.is_none() => tuple = Some(a.as_str()),
                    // OVS takes a reply tuple too; the original one names the connection.
                    None => {}
                }
            }
            let what = match (tuple, zone) {
                (Some(t), z) => Flush::Tuple(parse_tuple(t, z.unwrap_or(0))?),
                (None, Some(z)) => Flush::Zone(z),
                (None, None) => Flush::All,
            };
            ct.flush(what);
            Ok(String::new())
        }
        "dpctl/ct-get-maxconns" => {
            if !args.is_empty() {
                return Err("usage: dpctl/ct-get-maxconns [DP]".into());
            }
            Ok(format!("{}\n", ct.max_conns()))
        }
        "dpctl/ct-set-maxconns" => {
            let [n] = args else {
                return Err("usage: dpctl/ct-set-maxconns [DP] MAXCONNS".into());
            };
            let n: u32 = n
                .parse()
                .map_err(|_| format!("maxconns missing or malformed: '{n}'"))?;
            ct.set_max_conns(n);
            Ok("setting maxconns successful\n".into())
        }
        "dpctl/ct-bkts" => {
            let mut gt = 0u32;
            for a in args {
                let Some(v) = a.strip_prefix("gt=") else {
                    return Err(format!("invalid argument '{a}'"));
                };
                gt = v.parse().map_err(|_| format!("invalid threshold '{v}'"))?;
            }
            Ok(ct.bkts_text(gt))
        }
        _ => Err(format!("unknown command '{method}'")),
    }
}

/// An original-direction tuple in OVS's `ct-orig-tuple` syntax.
fn parse_tuple(s: &str, zone: u16) -> Result<ConnKey, String> {
    let mut src: Option<IpAddr> = None;
    let mut dst: Option<IpAddr> = None;
    let (mut proto, mut sport, mut dport) = (None, 0u16, 0u16);
    let (mut icmp_id, mut icmp_type, mut icmp_code) = (None, None, 0u8);
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("invalid conntrack tuple field '{item}'"))?;
        let bad = || format!("invalid value in conntrack tuple: '{item}'");
        match k {
            "ct_nw_src" | "ct_ipv6_src" => src = Some(v.parse().map_err(|_| bad())?),
            "ct_nw_dst" | "ct_ipv6_dst" => dst = Some(v.parse().map_err(|_| bad())?),
            "ct_nw_proto" => proto = Some(v.parse::<u8>().map_err(|_| bad())?),
            "ct_tp_src" => sport = v.parse().map_err(|_| bad())?,
            "ct_tp_dst" => dport = v.parse().map_err(|_| bad())?,
            "icmp_id" => icmp_id = Some(v.parse::<u16>().map_err(|_| bad())?),
            "icmp_type" => icmp_type = Some(v.parse::<u8>().map_err(|_| bad())?),
            "icmp_code" => icmp_code = v.parse().map_err(|_| bad())?,
            _ => return Err(format!("invalid conntrack tuple field '{k}'")),
        }
    }
    let (Some(src), Some(dst), Some(proto)) = (src, dst, proto) else {
        return Err("a conntrack tuple needs ct_nw_src, ct_nw_dst and ct_nw_proto".into());
    };
    let bytes = |a: IpAddr| -> [u8; 16] {
        match a {
            IpAddr::V4(v) => {
                let mut b = [0; 16];
                b[..4].copy_from_slice(&v.octets());
                b
            }
            IpAddr::V6(v) => v.octets(),
        }
    };
    if src.is_ipv4() != dst.is_ipv4() {
        return Err("conntrack tuple mixes IPv4 and IPv6".into());
    }
    let v6 = src.is_ipv6();
    let icmp = matches!(proto, 1 | 58);
    let (sport, dport, itype) = if icmp {
        let id = icmp_id.unwrap_or(0);
        let t = icmp_type.unwrap_or(if v6 { 128 } else { 8 });
        (id, id, t)
    } else {
        (sport, dport, 0)
    };
    Ok(ConnKey {
        src: bytes(src),
        dst: bytes(dst),
        sport,
        dport,
        zone,
        proto,
        v6,
        icmp_type: itype,
        icmp_code: if icmp { icmp_code } else { 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_and_arguments() {
        let k = parse_tuple(
            "ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2222,ct_tp_dst=1111",
            3,
        )
        .unwrap();
        assert_eq!(
            (k.sport, k.dport, k.zone, k.proto, k.v6),
            (2222, 1111, 3, 17, false)
        );
        assert_eq!(&k.src[..4], &[10, 1, 1, 2]);
        let i = parse_tuple(
            "ct_nw_src=1.1.1.1,ct_nw_dst=2.2.2.2,ct_nw_proto=1,icmp_id=7",
            0,
        )
        .unwrap();
        assert_eq!((i.sport, i.icmp_type), (7, 8));
        assert!(parse_tuple("ct_nw_src=1.1.1.1,ct_nw_proto=6", 0).is_err());
        assert!(parse_tuple("ct_nw_src=1.1.1.1,ct_ipv6_dst=::1,ct_nw_proto=6", 0).is_err());
        assert!(parse_tuple("bogus=1", 0).is_err());
        let args = vec!["netdev@ovs-netdev".to_string(), "zone=5".to_string()];
        assert_eq!(skip_dp(&args).len(), 1);
        assert!(run("dpctl/ct-set-maxconns", &["x".into()], 0).is_err());
        assert!(run("dpctl/dump-conntrack", &["zone=70000".into()], 0).is_err());
    }
}
