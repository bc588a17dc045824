//! `ferrovs-bench`: benchmark inputs and in-memory datapath runs.
//!
//! * `ferrovs-bench gen-w1 --flows N --out FILE` writes the W1 input pcap; `gen-w8` the W8
//!   one (N connections, both directions).
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

const USAGE: &str = "usage: ferrovs-bench gen-w1|gen-w8 --flows N --out FILE\n       ferrovs-bench w1 --module patch|learning|openflow --pcap FILE [--rules simple|l3_4k|@FILE] [--set KEY=VALUE] [--seconds S] [--cores C0,C1,...] [--json]\n       ferrovs-bench w4 --established FILE --storm FILE [--pps N] [--seconds S] [--json]\n       ferrovs-bench gen-w7 --flows N --out FILE [ENDPOINTS]\n       ferrovs-bench w7 --dir encap|decap --pcap FILE --underlay TAP [--seconds S] [--capture FILE] [--json] [ENDPOINTS]\n       ENDPOINTS: [--proto vxlan|geneve] [--local-ip IP] [--local-mac MAC] [--remote-ip IP] [--remote-mac MAC] [--vni N]";

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut flows = None;
    let mut out = None;
    let mut module = None;
    let mut pcap = None;
    let mut secs = 5.0f64;
    let mut json = false;
    let mut rule_set = "simple".to_string();
    let mut settings: Vec<(String, String)> = Vec::new();
    let mut established = None;
    let mut storm = None;
    let mut pps: u64 = 2_000_000;
    let mut cores: Option<Vec<usize>> = None;
    let mut ep = w7gen::Endpoints::default();
    let mut dir = None;
    let mut underlay = None;
    let mut capture = None;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--flows" => flows = it.next().and_then(|v| v.parse::<u32>().ok()),
            "--out" => out = it.next().cloned(),
            "--module" => module = it.next().cloned(),
            "--pcap" => pcap = it.next().cloned(),
            "--seconds" => match it.next().and_then(|v| v.parse::<f64>().ok()) {
                Some(s) if s > 0.0 => secs = s,
                _ => return usage(),
            },
            "--json" => json = true,
            "--cores" => {
                match it.next().map(|v| {
                    v.split(',')
                        .map(|c| c.trim().parse::<usize>())
                        .collect::<Result<Vec<_>, _>>()
                }) {
                    Some(Ok(c)) if !c.is_empty() => cores = Some(c),
                    _ => return usage(),
                }
            }
            "--established" => established = it.next().cloned(),
            "--storm" => storm = it.next().cloned(),
            "--pps" => match it.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(p) if p > 0 => pps = p,
                _ => return usage(),
            },
            "--set" => match it.next().and_then(|kv| kv.split_once('=')) {
                Some((k, v)) => settings.push((k.to_string(), v.to_string())),
                None => return usage(),
            },
            "--proto" => match it.next().map(String::as_str) {
                Some(p @ ("vxlan" | "geneve")) => ep.proto = p.to_string(),
                _ => return usage(),
            },
            "--local-ip" | "--remote-ip" => {
                match it.next().and_then(|v| v.parse::<std::net::Ipv4Addr>().ok()) {
                    Some(ip) if a == "--local-ip" => ep.local_ip = ip,
                    Some(ip) => ep.remote_ip = ip,
                    None => return usage(),
                }
            }
            "--local-mac" | "--remote-mac" => match it.next().and_then(|v| w7gen::parse_mac(v)) {
                Some(m) if a == "--local-mac" => ep.local_mac = m,
                Some(m) => ep.remote_mac = m,
                None => return usage(),
            },
            "--vni" => match it.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(v) if v <= 0x00ff_ffff => ep.vni = v,
                _ => return usage(),
            },
            "--dir" => match it.next().map(String::as_str) {
                Some("encap") => dir = Some(w7run::Dir::Encap),
                Some("decap") => dir = Some(w7run::Dir::Decap),
                _ => return usage(),
            },
            "--underlay" => underlay = it.next().cloned(),
            "--capture" => capture = it.next().cloned(),
            "--rules" => match it.next() {
                Some(r) => rule_set = r.clone(),
                None => return usage(),
            },
            _ => return usage(),
        }
    }
    match args.first().map(String::as_str) {
        Some(g @ ("gen-w1" | "gen-w8" | "gen-w7")) => {
            let (Some(flows), Some(out)) = (flows, out) else {
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
            } else if g == "gen-w7" {
                w7gen::write_w7(out_file, flows, &ep)
            } else {
                w1gen::write_w1(out_file, flows)
            };
            if let Err(e) = written {
                eprintln!("{g}: {out}: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Some("w1") => {
            let (Some(module), Some(pcap)) = (module, pcap) else {
                return usage();
            };
            let res = match &cores {
                Some(c) => w1run::run_pmds(&module, &pcap, secs, &rule_set, &settings, c),
                None => w1run::run(&module, &pcap, secs, &rule_set, &settings),
            };
            match res {
                Ok(r) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({
                                "module": r.module, "pcap": r.pcap, "packets": r.packets,
                                "seconds": r.seconds, "mpps": r.mpps,
                                "cycles_per_packet": r.cycles_per_packet,
                                "delivered": r.delivered,
                                "counters": r.counters.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<String, serde_json::Value>>(),
                            })
                        );
                    } else {
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
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("w1: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("w7") => {
            let (Some(dir), Some(pcap), Some(underlay)) = (dir, pcap, underlay) else {
                return usage();
            };
            match w7run::run(dir, &pcap, secs, &ep, &underlay, capture.as_deref()) {
                Ok(r) => {
                    let name = if dir == w7run::Dir::Encap {
                        "encap"
                    } else {
                        "decap"
                    };
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({
                                "dir": name, "proto": ep.proto, "pcap": r.pcap,
                                "seconds": r.seconds, "mpps": r.mpps,
                                "cycles_per_packet": r.cycles_per_packet,
                                "delivered": r.delivered, "received": r.received,
                                "cpu_share": r.cpu_share,
                                "counters": r.counters.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<String, serde_json::Value>>(),
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
        Some("w4") => {
            let (Some(e), Some(st)) = (established, storm) else {
                return usage();
            };
            match w4run::run(&e, &st, pps, secs) {
                Ok(r) => {
                    if json {
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
        _ => usage(),
    }
}
