//! `ferrovs-bench`: benchmark inputs and in-memory datapath runs.
//!
//! * `ferrovs-bench gen-w1 --flows N --out FILE` writes the W1 input pcap; `gen-w8` the W8
//!   one (N connections, both directions), `gen-w8new` W8's new-connection one (N TCP
//!   connections, each a SYN and an RST).
//! * `ferrovs-bench w1 --module patch|learning|openflow --pcap FILE [--rules simple|l3_4k|@FILE]
//!   [--seconds S] [--json]` runs W1 on the calling thread and prints Mpps and cycles per
//!   packet; with `--cores C0,C1,...` it runs on one poll thread per listed core instead,
//!   through the daemon's multi-thread datapath (the pcap port gets one queue per thread).
//! * `ferrovs-bench w4 --established FILE --storm FILE [--pps N] [--seconds S] [--json]`
//!   measures flow setup under a storm of new flows (see `w4run`).
//! * `ferrovs-bench gen-w7 --flows N --out FILE [--proto vxlan|geneve]` writes W1's frames
//!   encapsulated by the remote endpoint; `ferrovs-bench w7 --dir encap|decap --pcap FILE
//!   --underlay TAP [--proto vxlan|geneve] [--seconds S] [--capture FILE] [--json]` runs W7
//!   (see `w7run`; root, in a network namespace where TAP holds the local address). The
//!   endpoints default to [`w7gen::Endpoints::default`]; `--local-ip`, `--local-mac`,
//!   `--remote-ip`, `--remote-mac`, `--vni` override them.

mod w1gen;
mod w1run;
mod w4run;
mod w7gen;
mod w7run;

use std::process::ExitCode;

const USAGE: &str = "usage: ferrovs-bench gen-w1|gen-w8|gen-w8new --flows N --out FILE\n       ferrovs-bench w1 --module patch|learning|openflow --pcap FILE [--rules simple|l3_4k|@FILE] [--set KEY=VALUE] [--seconds S] [--cores C0,C1,...] [--json]\n       ferrovs-bench w4 --established FILE --storm FILE [--pps N] [--seconds S] [--json]\n       ferrovs-bench gen-w7 --flows N --out FILE [ENDPOINTS]\n       ferrovs-bench w7 --dir encap|decap --pcap FILE --underlay TAP [--seconds S] [--capture FILE] [--json] [ENDPOINTS]\n       ENDPOINTS: [--proto vxlan|geneve] [--local-ip IP] [--local-mac MAC] [--remote-ip IP] [--remote-mac MAC] [--vni N]";

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(a) = Args::parse(&args) else {
        return usage();
    };
    match args.first().map(String::as_str) {
        Some(g @ ("gen-w1" | "gen-w8" | "gen-w8new" | "gen-w7")) => generate(g, a),
        Some("w1") => w1(a),
        Some("w7") => w7(a),
        Some("w4") => w4(a),
        _ => usage(),
    }
}

/// The options after the subcommand (each subcommand uses some of them).
struct Args {
    flows: Option<u32>,
    out: Option<String>,
    module: Option<String>,
    pcap: Option<String>,
    secs: f64,
    json: bool,
    rule_set: String,
    settings: Vec<(String, String)>,
    established: Option<String>,
    storm: Option<String>,
    pps: u64,
    cores: Option<Vec<usize>>,
    ep: w7gen::Endpoints,
    dir: Option<w7run::Dir>,
    underlay: Option<String>,
    capture: Option<String>,
}

impl Args {
    /// Reads the options after the subcommand; `None` for a usage error.
    fn parse(args: &[String]) -> Option<Args> {
        let mut a = Args {
            flows: None,
            out: None,
            module: None,
            pcap: None,
            secs: 5.0,
            json: false,
            rule_set: "simple".to_string(),
            settings: Vec::new(),
            established: None,
            storm: None,
            pps: 2_000_000,
            cores: None,
            ep: w7gen::Endpoints::default(),
            dir: None,
            underlay: None,
            capture: None,
        };
        let mut it = args.iter().skip(1);
        while let Some(flag) = it.next() {
            if !a.set_plain(flag, &mut it) {
                a.set_checked(flag, it.next())?;
            }
        }
        Some(a)
    }

    /// The options taken as given (a flag, or a value that is not checked here): false when
    /// `flag` is not one of them.
    fn set_plain<'a>(&mut self, flag: &str, it: &mut impl Iterator<Item = &'a String>) -> bool {
        match flag {
            "--flows" => self.flows = it.next().and_then(|v| v.parse::<u32>().ok()),
            "--out" => self.out = it.next().cloned(),
            "--module" => self.module = it.next().cloned(),
            "--pcap" => self.pcap = it.next().cloned(),
            "--json" => self.json = true,
            "--established" => self.established = it.next().cloned(),
            "--storm" => self.storm = it.next().cloned(),
            "--underlay" => self.underlay = it.next().cloned(),
            "--capture" => self.capture = it.next().cloned(),
            _ => return false,
        }
        true
    }

    /// The options whose value must be valid; `None` for an unknown flag or a bad value.
    fn set_checked(&mut self, flag: &str, v: Option<&String>) -> Option<()> {
        let v = v.map(String::as_str);
        let ep = &mut self.ep;
        match flag {
            "--seconds" => self.secs = v?.parse::<f64>().ok().filter(|s| *s > 0.0)?,
            "--cores" => {
                let c = v?
                    .split(',')
                    .map(|c| c.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .ok()
                    .filter(|c| !c.is_empty())?;
                self.cores = Some(c);
            }
            "--pps" => self.pps = v?.parse::<u64>().ok().filter(|p| *p > 0)?,
            "--set" => {
                let (k, v) = v?.split_once('=')?;
                self.settings.push((k.to_string(), v.to_string()));
            }
            "--proto" => match v? {
                p @ ("vxlan" | "geneve") => ep.proto = p.to_string(),
                _ => return None,
            },
            "--local-ip" => ep.local_ip = v?.parse().ok()?,
            "--remote-ip" => ep.remote_ip = v?.parse().ok()?,
            "--local-mac" => ep.local_mac = w7gen::parse_mac(v?)?,
            "--remote-mac" => ep.remote_mac = w7gen::parse_mac(v?)?,
            "--vni" => ep.vni = v?.parse::<u32>().ok().filter(|v| *v <= 0x00ff_ffff)?,
            "--dir" => {
                self.dir = Some(match v? {
                    "encap" => w7run::Dir::Encap,
                    "decap" => w7run::Dir::Decap,
                    _ => return None,
                })
            }
            "--rules" => self.rule_set = v?.to_string(),
            _ => return None,
        }
        Some(())
    }
}

fn counters_json(counters: &[(String, u64)]) -> serde_json::Value {
    counters
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect::<serde_json::Map<String, serde_json::Value>>()
        .into()
}

/// `gen-w1`, `gen-w8`, `gen-w8new` and `gen-w7`: writes the input pcap.
fn generate(g: &str, a: Args) -> ExitCode {
    let (Some(flows), Some(out)) = (a.flows, a.out) else {
        return usage();
    };
    let f = match std::fs::File::create(&out) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{g}: {out}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out_file = std::io::BufWriter::new(f);
    let written = if g == "gen-w8" {
        w1gen::write_w8(out_file, flows)
    } else if g == "gen-w8new" {
        w1gen::write_w8new(out_file, flows)
    } else if g == "gen-w7" {
        w7gen::write_w7(out_file, flows, &a.ep)
    } else {
        w1gen::write_w1(out_file, flows)
    };
    if let Err(e) = written {
        eprintln!("{g}: {out}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `w1`: runs and prints the result.
fn w1(a: Args) -> ExitCode {
    let (Some(module), Some(pcap)) = (&a.module, &a.pcap) else {
        return usage();
    };
    let res = match &a.cores {
        Some(c) => w1run::run_pmds(module, pcap, a.secs, &a.rule_set, &a.settings, c),
        None => w1run::run(module, pcap, a.secs, &a.rule_set, &a.settings),
    };
    match res {
        Ok(r) if a.json => {
            println!(
                "{}",
                serde_json::json!({
                    "module": r.module, "pcap": r.pcap, "packets": r.packets,
                    "seconds": r.seconds, "mpps": r.mpps,
                    "cycles_per_packet": r.cycles_per_packet,
                    "delivered": r.delivered,
                    "counters": counters_json(&r.counters),
                })
            );
            ExitCode::SUCCESS
        }
        Ok(r) => {
            print_w1(&r);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("w1: {e}");
            ExitCode::FAILURE
        }
    }
}

/// W1's result as text: the rate, then the caches' hit rates when the module has them.
fn print_w1(r: &w1run::W1Result) {
    println!(
        "{:<9} {:<28} {:>7.2} Mpps {:>7.1} cycles/pkt  ({} packets in {:.2} s, {} delivered)",
        r.module, r.pcap, r.mpps, r.cycles_per_packet, r.packets, r.seconds, r.delivered
    );
    let get = |k: &str| r.counters.iter().find(|(n, _)| n == k).map(|x| x.1);
    if let (Some(e), Some(m), Some(u), Some(s)) = (
        get("emc_hits"),
        get("megaflow_hits"),
        get("upcalls"),
        get("subtable_lookups"),
    ) {
        let p = r.packets.max(1) as f64;
        println!(
            "          emc hits {:.1}%, megaflow hits {:.1}%, upcalls {} (lost {}), avg subtables per megaflow hit {:.2}, megaflows {}",
            100.0 * e as f64 / p,
            100.0 * m as f64 / p,
            u,
            get("lost_upcalls").unwrap_or(0),
            s as f64 / (m.max(1)) as f64,
            get("megaflows").unwrap_or(0)
        );
    }
}

/// `w7`: runs and prints the result.
fn w7(a: Args) -> ExitCode {
    let (Some(dir), Some(pcap), Some(underlay)) = (a.dir, &a.pcap, &a.underlay) else {
        return usage();
    };
    let ep = &a.ep;
    match w7run::run(dir, pcap, a.secs, ep, underlay, a.capture.as_deref()) {
        Ok(r) => {
            let name = if dir == w7run::Dir::Encap {
                "encap"
            } else {
                "decap"
            };
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "dir": name, "proto": ep.proto, "pcap": r.pcap,
                        "seconds": r.seconds, "mpps": r.mpps,
                        "cycles_per_packet": r.cycles_per_packet,
                        "delivered": r.delivered, "received": r.received,
                        "cpu_share": r.cpu_share,
                        "counters": counters_json(&r.counters),
                    })
                );
            } else {
                println!(
                    "{name} {:<6} {:<28} {:>7.2} Mpps {:>7.1} cycles/pkt  ({} received, {} delivered in {:.2} s)",
                    ep.proto, r.pcap, r.mpps, r.cycles_per_packet, r.received, r.delivered, r.seconds
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("w7: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `w4`: runs and prints the result.
fn w4(a: Args) -> ExitCode {
    let (Some(e), Some(st)) = (&a.established, &a.storm) else {
        return usage();
    };
    match w4run::run(e, st, a.pps, a.secs) {
        Ok(r) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "offered_pps": r.offered_pps, "alone_pps": r.alone_pps,
                        "storm_pps": r.storm_pps, "retained": r.retained,
                        "storm_rx_pps": r.storm_rx_pps, "installs_per_s": r.installs_per_s,
                        "xlates_per_s": r.xlates_per_s,
                        "handler_xlates": r.handler_xlates, "lost_upcalls": r.lost_upcalls,
                        "flow_limit_hits": r.flow_limit_hits, "megaflows": r.megaflows,
                    })
                );
            } else {
                println!(
                    "W4: established offered {:.2} Mpps: alone {:.2} Mpps, during the storm {:.2} Mpps ({:.1}% kept)\n    storm received {:.2} Mpps; slow path: {:.0} translations/s, {:.0} megaflows installed/s ({} lost upcalls, {} translations over the flow limit, {} megaflows at the end)",
                    r.offered_pps as f64 / 1e6, r.alone_pps / 1e6, r.storm_pps / 1e6,
                    100.0 * r.retained, r.storm_rx_pps / 1e6, r.xlates_per_s,
                    r.installs_per_s, r.lost_upcalls, r.flow_limit_hits, r.megaflows
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("w4: {e}");
            ExitCode::FAILURE
        }
    }
}
