//! OVS's `dpctl/ipf-*` commands on the process's fragment reassembly
//! (`datapath::ipf::ipf`): `ipf-set-enabled`, `ipf-set-disabled`, `ipf-set-min-frag`,
//! `ipf-set-max-nfrags`, `ipf-get-status [-m]`.
//!
//! Arguments, limits, answers and error texts are OVS 3.1's (`lib/dpctl.c`, `lib/ipf.c`):
//! an optional datapath name first, `v4`/`v6`, a minimum fragment size of at least 400
//! bytes, at most 5,000 fragments held.

use conntrack::ipf::{MAX_FRAGS_UPPER_BOUND, MIN_FRAG_LOWER_BOUND};
use conntrack::IpfCounts;

/// The commands served here: (name, usage).
pub const COMMANDS: &[(&str, &str)] = &[
    ("dpctl/ipf-set-enabled", "[dp] v4|v6"),
    ("dpctl/ipf-set-disabled", "[dp] v4|v6"),
    ("dpctl/ipf-set-min-frag", "[dp] v4|v6 minfragment"),
    ("dpctl/ipf-set-max-nfrags", "[dp] maxfrags"),
    ("dpctl/ipf-get-status", "[dp] [-m]"),
];

/// Whether `method` is one of [`COMMANDS`].
pub fn has(method: &str) -> bool {
    COMMANDS.iter().any(|c| c.0 == method)
}

/// `v4` or `v6` (OVS reads the first two characters): `Some(is_v6)`.
fn family(a: Option<&String>) -> Option<bool> {
    match a.map(|a| a.get(..2).unwrap_or(a)) {
        Some("v4") => Some(false),
        Some("v6") => Some(true),
        _ => None,
    }
}

/// Runs one of [`COMMANDS`].
pub fn run(method: &str, args: &[String]) -> Result<String, String> {
    let ipf = datapath::ipf::ipf();
    // OVS's argument counts, a datapath name allowed first.
    let (min, max) = match method {
        "dpctl/ipf-set-min-frag" => (2, 3),
        "dpctl/ipf-get-status" => (0, 2),
        _ => (1, 2),
    };
    if args.len() < min || args.len() > max {
        let usage = COMMANDS.iter().find(|c| c.0 == method).map_or("", |c| c.1);
        return Err(format!("usage: {method} {usage}"));
    }
    match method {
        "dpctl/ipf-set-enabled" | "dpctl/ipf-set-disabled" => {
            let on = method == "dpctl/ipf-set-enabled";
            let word = if on { "enabling" } else { "disabling" };
            let v6 = family(args.last())
                .ok_or("parameter missing: 'v4' for IPv4 or 'v6' for IPv6 (Invalid argument)")?;
            ipf.set_enabled(v6, on);
            Ok(format!("{word} fragmentation reassembly successful\n"))
        }
        "dpctl/ipf-set-min-frag" => {
            let v6 = family(args.get(args.len() - 2))
                .ok_or("parameter missing: v4 for IPv4 or v6 for IPv6 (Invalid argument)")?;
            let n: u32 = args[args.len() - 1].parse().map_err(|_| {
                "parameter missing for minimum fragment size (Invalid argument)".to_string()
            })?;
            let n = n as usize;
            if n < MIN_FRAG_LOWER_BOUND {
                return Err(
                    "requested minimum fragment size too small; see documentation \
                     (Operation not permitted)"
                        .into(),
                );
            }
            let mut cfg = ipf.config();
            if v6 {
                cfg.min_frag_v6 = n;
            } else {
                cfg.min_frag_v4 = n;
            }
            ipf.set_config(cfg);
            Ok("setting minimum fragment size successful\n".into())
        }
        "dpctl/ipf-set-max-nfrags" => {
            let n: u32 = args[args.len() - 1].parse().map_err(|_| {
                "parameter missing for maximum fragments (Invalid argument)".to_string()
            })?;
            let n = n as usize;
            if n > MAX_FRAGS_UPPER_BOUND {
                return Err("setting maximum fragments failed (Operation not permitted)".into());
            }
            let mut cfg = ipf.config();
            cfg.max_frags = n;
            ipf.set_config(cfg);
            Ok("setting maximum fragments successful\n".into())
        }
        "dpctl/ipf-get-status" => {
            let mut more = false;
            for a in args {
                match a.as_str() {
                    "-m" | "--more" => more = true,
                    a if a.contains('@') || !a.starts_with('-') => {}
                    a => return Err(format!("invalid argument '{a}'")),
                }
            }
            Ok(status(ipf, more))
        }
        _ => Err(format!("unknown command '{method}'")),
    }
}

/// `ipf-get-status` in OVS's layout.
fn status(ipf: &conntrack::Ipf<datapath::ipf::Held>, more: bool) -> String {
    let st = ipf.status();
    let i = "        ";
    let mut s = format!("{i}Fragmentation Module Status\n{i}---------------------------\n");
    s.push_str(&format!("{i}v4 enabled: {}\n", u8::from(st.enabled[0])));
    s.push_str(&format!("{i}v6 enabled: {}\n", u8::from(st.enabled[1])));
    s.push_str(&format!("{i}max num frags (v4/v6): {}\n", st.cfg.max_frags));
    s.push_str(&format!("{i}num frag: {}\n", st.held));
    let fam = |s: &mut String, v: &str, min: usize, c: &IpfCounts| {
        s.push_str(&format!("{i}min {v} frag size: {min}\n"));
        for (what, n) in [
            ("accepted", c.accepted),
            ("completed", c.completed),
            ("expired", c.expired),
            ("too small", c.too_small),
            ("overlapped", c.overlap),
            ("purged", c.purged),
        ] {
            s.push_str(&format!("{i}{v} frags {what}: {n}\n"));
        }
    };
    fam(&mut s, "v4", st.cfg.min_frag_v4, &st.counts[0]);
    fam(&mut s, "v6", st.cfg.min_frag_v6, &st.counts[1]);
    if more {
        s.push_str("\n        Fragment Lists:\n\n");
        s.push_str(&ipf.dump_lists());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_and_limits() {
        assert!(run("dpctl/ipf-set-enabled", &a(&["v5"])).is_err());
        assert!(run("dpctl/ipf-set-enabled", &a(&[])).is_err());
        assert!(run("dpctl/ipf-set-min-frag", &a(&["v4", "399"])).is_err());
        assert!(run("dpctl/ipf-set-min-frag", &a(&["v4", "x"])).is_err());
        assert!(run("dpctl/ipf-set-min-frag", &a(&["v9", "1000"])).is_err());
        assert!(run("dpctl/ipf-set-max-nfrags", &a(&["5001"])).is_err());
        assert!(run("dpctl/ipf-set-max-nfrags", &a(&["-1"])).is_err());
        assert_eq!(
            run("dpctl/ipf-set-disabled", &a(&["netdev@ovs-netdev", "v6"])).unwrap(),
            "disabling fragmentation reassembly successful\n"
        );
        run("dpctl/ipf-set-min-frag", &a(&["v4", "1000"])).unwrap();
        let st = run("dpctl/ipf-get-status", &a(&[])).unwrap();
        assert!(st.contains("        v6 enabled: 0\n"), "{st}");
        assert!(st.contains("        min v4 frag size: 1000\n"), "{st}");
        run("dpctl/ipf-set-enabled", &a(&["v6"])).unwrap();
        let st = run("dpctl/ipf-get-status", &a(&["-m"])).unwrap();
        assert!(
            st.contains("v6 enabled: 1\n") && st.contains("Fragment Lists:"),
            "{st}"
        );
    }
}
