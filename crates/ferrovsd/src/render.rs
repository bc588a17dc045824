//! The datapath's status reports laid out for people and for scripts.
//!
//! The datapath hands its state over as plain structs ([`datapath::report`]); this module
//! turns them into the text of `show`, `dump-ports`, `pmd-stats-show`,
//! `dpif-netdev/pmd-rxq-show` (OVS's layouts where OVS has the verb) and `pmd-trace-show`, and
//! into their `--json` form. The outputs are an interface: scripts and the integration tests read them, so a
//! change here is a change users see.
//!
//! JSON objects are built with `serde_json`'s map, whose keys come out sorted (except
//! `pmd-trace-show`'s records, whose keys keep the order a record is read in).

use datapath::report::{
    BridgeReport, PmdReport, PmdRxqReport, PortCountersReport, TraceRecord, TraceReport,
};
use datapath::{VlanMode, LOCAL_OFPORT};
use serde_json::{json, Value};
use std::fmt::Write;

/// Formats a MAC address.
pub fn fmt_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// An ofport as `show` and `dump-ports` print it.
fn ofport_str(n: u32) -> String {
    if n == LOCAL_OFPORT {
        "LOCAL".into()
    } else {
        n.to_string()
    }
}

/// `show`: every bridge, its module and ports (by name in the text, by slot in JSON).
pub fn show(bridges: &[BridgeReport], json: bool) -> String {
    if json {
        let brs: Vec<Value> = bridges
            .iter()
            .map(|b| {
                let ports: Vec<Value> = b
                    .ports
                    .iter()
                    .map(|p| {
                        let opts: serde_json::Map<String, Value> = p
                            .options
                            .iter()
                            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                            .collect();
                        json!({
                            "name": p.name,
                            "ofport": p.ofport,
                            "type": p.kind,
                            "options": opts,
                            "vlan": p.vlan.to_string(),
                            "link_state": p.link_state.to_string(),
                            "mac": p.mac.map(fmt_mac),
                            "ifindex": p.ifindex,
                        })
                    })
                    .collect();
                json!({"name": b.name, "module": b.module, "ports": ports})
            })
            .collect();
        return json!({ "bridges": brs }).to_string();
    }
    let mut s = String::new();
    for b in bridges {
        let _ = write!(s, "    Bridge {}\n        module: {}\n", b.name, b.module);
        let mut ports: Vec<_> = b.ports.iter().collect();
        ports.sort_by(|x, y| x.name.cmp(&y.name));
        for p in ports {
            let _ = write!(
                s,
                "        Port {}\n            ofport: {}\n            type: {}\n",
                p.name,
                ofport_str(p.ofport),
                p.kind
            );
            if !matches!(p.vlan, VlanMode::Trunk(None)) {
                let _ = writeln!(s, "            {}", p.vlan);
            }
            if !p.options.is_empty() {
                let o: Vec<String> = p.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(s, "            options: {{{}}}", o.join(", "));
            }
            if p.link_state == netdev::LinkState::Down {
                s.push_str("            link_state: down\n");
            }
        }
    }
    s
}

/// `dump-ports BR`: each port's counters (by ofport), and the fabric's.
pub fn dump_ports(r: &PortCountersReport, json: bool) -> String {
    let mut ports: Vec<_> = r.ports.iter().collect();
    ports.sort_by_key(|p| p.ofport);
    let f = &r.fabric;
    if json {
        let v: Vec<Value> = ports
            .iter()
            .map(|p| {
                let st = &p.stats;
                let mut o = json!({
                    "port": p.ofport, "name": p.name,
                    "rx_packets": st.rx_packets, "rx_bytes": st.rx_bytes,
                    "rx_dropped": st.rx_dropped, "rx_errors": st.rx_errors,
                    "tx_packets": st.tx_packets, "tx_bytes": st.tx_bytes,
                    "tx_dropped": st.tx_dropped, "tx_errors": st.tx_errors,
                });
                for (k, v) in &p.custom {
                    o[*k] = json!(v);
                }
                o
            })
            .collect();
        let counters: serde_json::Map<String, Value> = r
            .module_counters
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        return json!({
            "bridge": r.bridge, "ports": v, "module": r.module,
            "module_counters": counters,
            "fabric": {
                "module_drops": f.module_drops, "flood_copies": f.flood_copies,
                "copy_failures": f.copy_failures, "tx_bursts": f.tx_bursts,
                "tx_packets": f.tx_packets,
            }
        })
        .to_string();
    }
    let mut s = format!(
        "port statistics of bridge {}: {} ports\n",
        r.bridge,
        ports.len()
    );
    for p in ports {
        let st = &p.stats;
        let _ = write!(
            s,
            "  port {:>2}: rx pkts={}, bytes={}, drop={}, errs={}, frame=?, over=?, crc=?\n           tx pkts={}, bytes={}, drop={}, errs={}, coll=?\n",
            ofport_str(p.ofport),
            st.rx_packets, st.rx_bytes, st.rx_dropped, st.rx_errors,
            st.tx_packets, st.tx_bytes, st.tx_dropped, st.tx_errors
        );
        if !p.custom.is_empty() {
            let c: Vec<String> = p.custom.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(s, "           {}", c.join(", "));
        }
    }
    let _ = writeln!(
        s,
        "  fabric: module drops={}, flood copies={}, copy failures={}, output bursts={}",
        f.module_drops, f.flood_copies, f.copy_failures, f.tx_bursts
    );
    s
}

/// The figures `pmd-stats-show` derives from one thread's counters.
struct PmdFigures {
    total: u64,
    idle_pct: f64,
    busy_pct: f64,
    cycles_per_pkt: f64,
    busy_cycles_per_pkt: f64,
    per_burst: f64,
    sub_per_hit: f64,
    upcalls_ok: u64,
}

fn figures(r: &PmdReport) -> PmdFigures {
    let st = &r.stats;
    let total = st.busy_cycles + st.idle_cycles;
    let pct = |x: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * x as f64 / total as f64
        }
    };
    let per_pkt = |x: u64| {
        if st.packets == 0 {
            0.0
        } else {
            x as f64 / st.packets as f64
        }
    };
    let ratio = |x: u64, y: u64| if y == 0 { 0.0 } else { x as f64 / y as f64 };
    PmdFigures {
        total,
        idle_pct: pct(st.idle_cycles),
        busy_pct: pct(st.busy_cycles),
        cycles_per_pkt: per_pkt(total),
        busy_cycles_per_pkt: per_pkt(st.busy_cycles),
        per_burst: ratio(r.tx_packets, r.tx_bursts),
        sub_per_hit: ratio(r.cache.subtable_lookups, r.cache.megaflow_hits),
        upcalls_ok: r.cache.upcalls.saturating_sub(r.cache.lost_upcalls),
    }
}

/// `pmd-stats-show` (and OVS's `dpif-netdev/pmd-stats-show`): one block per poll thread.
pub fn pmd_stats(pmds: &[PmdReport], json: bool) -> String {
    if json {
        let all: Vec<Value> = pmds
            .iter()
            .map(|r| {
                let (st, c, x) = (&r.stats, &r.cache, figures(r));
                json!({
                    "numa_id": 0, "core_id": r.core_id,
                    "packets_received": st.packets, "packets_sent": r.tx_packets,
                    "module_drops": r.module_drops,
                    "emc_hits": c.emc_hits, "megaflow_hits": c.megaflow_hits,
                    "avg_subtable_lookups_per_megaflow_hit": x.sub_per_hit,
                    "miss_with_success_upcall": x.upcalls_ok,
                    "miss_with_failed_upcall": c.lost_upcalls,
                    "iterations": st.iterations, "busy_iterations": st.busy_iterations,
                    "idle_cycles": st.idle_cycles, "processing_cycles": st.busy_cycles,
                    "avg_cycles_per_packet": x.cycles_per_pkt,
                    "avg_processing_cycles_per_packet": x.busy_cycles_per_pkt,
                    "avg_packets_per_output_batch": x.per_burst,
                    "sleep_us": st.sleep_us, "restarts": st.restarts, "tsc_hz": r.tsc_hz,
                    "pool_buffers": r.pool_buffers, "pool_in_use": r.pool_in_use,
                })
            })
            .collect();
        return json!({ "pmds": all }).to_string();
    }
    let mut s = String::new();
    for r in pmds {
        let (st, c, x) = (&r.stats, &r.cache, figures(r));
        let core = r
            .core_id
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unpinned".into());
        let _ = write!(
            s,
            "pmd thread numa_id 0 core_id {core}:\n  packets received: {}\n  packets sent: {}\n  module drops: {}\n  emc hits: {}\n  megaflow hits: {}\n  avg. subtable lookups per megaflow hit: {:.2}\n  miss with success upcall: {}\n  miss with failed upcall: {}\n  avg. packets per output batch: {:.2}\n  iterations: {} (busy {})\n  idle cycles: {} ({:.2}%)\n  processing cycles: {} ({:.2}%)\n  avg cycles per packet: {:.2} ({}/{})\n  avg processing cycles per packet: {:.2} ({}/{})\n  sleep time: {} us\n",
            st.packets,
            r.tx_packets,
            r.module_drops,
            c.emc_hits,
            c.megaflow_hits,
            x.sub_per_hit,
            x.upcalls_ok,
            c.lost_upcalls,
            x.per_burst,
            st.iterations,
            st.busy_iterations,
            st.idle_cycles,
            x.idle_pct,
            st.busy_cycles,
            x.busy_pct,
            x.cycles_per_pkt,
            x.total,
            st.packets,
            x.busy_cycles_per_pkt,
            st.busy_cycles,
            st.packets,
            st.sleep_us
        );
        if st.restarts > 0 {
            let _ = writeln!(s, "  loop restarts after a panic: {}", st.restarts);
        }
    }
    s
}

/// `dpif-netdev/pmd-rxq-show`: each thread's queues and their share of its cycles.
pub fn rxq_show(pmds: &[PmdRxqReport], json: bool) -> String {
    if json {
        let jp: Vec<Value> = pmds
            .iter()
            .map(|p| {
                let jq: Vec<Value> = p
                    .rxqs
                    .iter()
                    .map(|r| {
                        json!({"port": r.port, "bridge": r.bridge, "queue": r.queue,
                            "usage_pct": r.usage_pct, "cycles": r.cycles, "pinned": r.pinned})
                    })
                    .collect();
                json!({"core_id": p.core_id, "numa_id": 0, "isolated": p.isolated,
                    "busy_pct": p.busy_pct, "rxqs": jq})
            })
            .collect();
        return json!({ "pmds": jp }).to_string();
    }
    let mut out = String::new();
    for p in pmds {
        let core = p
            .core_id
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unpinned".into());
        let _ = write!(
            out,
            "pmd thread numa_id 0 core_id {core}:\n  isolated : {}\n",
            p.isolated
        );
        for r in &p.rxqs {
            let pin_note = match r.pinned {
                Some(c) if Some(c) != p.core_id => format!(" (pinned to core {c}, not in mask)"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  port: {:<16} queue-id: {:>2} (enabled)   pmd usage: {:>2} %{pin_note}",
                r.port, r.queue, r.usage_pct
            );
        }
        let _ = write!(out, "  overhead:  0 %\n  busy: {:>3} %\n", p.busy_pct);
    }
    out
}

/// A JSON string literal (quotes, backslashes and control characters escaped).
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// One `pmd-trace-show` record as a JSON object (keys in reading order).
fn trace_record_json(br: &str, r: &TraceRecord) -> String {
    let outs: Vec<String> = r.outputs.iter().map(|o| json_str(o)).collect();
    format!(
        "{{\"seq\":{},\"bridge\":{},\"in_port\":{},\"len\":{},\"decision\":{},\"outputs\":[{}],\"dropped\":{}}}",
        r.seq,
        json_str(br),
        json_str(&r.in_port),
        r.len,
        json_str(&r.decision),
        outs.join(","),
        r.dropped
    )
}

/// One `pmd-trace-show` record as a line: `#SEQ bridge BR in_port P len N: DECISION -> FATE`.
fn trace_record_line(o: &mut String, br: &str, r: &TraceRecord) {
    let fate = if r.dropped && r.outputs.is_empty() {
        "drop".to_string()
    } else if r.outputs.is_empty() {
        "none (yet)".to_string()
    } else {
        r.outputs.join(",")
    };
    let _ = writeln!(
        o,
        "#{} bridge {br} in_port {} len {}: {} -> {fate}",
        r.seq, r.in_port, r.len, r.decision
    );
}

/// `pmd-trace-show`: every poll thread's records of the bridge. Text: each thread's records,
/// one line per packet, then what remains of its budget; JSON: one array of all records.
pub fn pmd_trace(r: &TraceReport, json: bool) -> String {
    let br = r.bridge.as_str();
    if json {
        let items: Vec<String> = r
            .threads
            .iter()
            .flat_map(|t| &t.records)
            .map(|rec| trace_record_json(br, rec))
            .collect();
        return format!("[{}]\n", items.join(","));
    }
    let mut o = String::new();
    for t in &r.threads {
        for rec in &t.records {
            trace_record_line(&mut o, br, rec);
        }
        if t.budget > 0 {
            let _ = writeln!(o, "({} more packets to trace)", t.budget);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use datapath::report::{PortReport, RxqLoad, ThreadTrace};
    use netdev::LinkState;

    fn port(slot: u16, name: &str, ofport: u32) -> PortReport {
        PortReport {
            slot,
            name: name.into(),
            ofport,
            kind: "internal",
            options: Vec::new(),
            vlan: VlanMode::Trunk(None),
            link_state: LinkState::Up,
            mac: None,
            ifindex: None,
        }
    }

    #[test]
    fn show_lists_ports_by_name_with_local_named() {
        let mut p1 = port(1, "p1", 1);
        p1.kind = "pcap";
        p1.options = vec![("rx".into(), "in.pcap".into())];
        p1.link_state = LinkState::Down;
        let b = BridgeReport {
            name: "br0".into(),
            module: "learning",
            ports: vec![port(0, "br0", LOCAL_OFPORT), p1],
        };
        assert_eq!(
            show(std::slice::from_ref(&b), false),
            "    Bridge br0\n        module: learning\n\
             \x20       Port br0\n            ofport: LOCAL\n            type: internal\n\
             \x20       Port p1\n            ofport: 1\n            type: pcap\n\
             \x20           options: {rx=in.pcap}\n            link_state: down\n"
        );
        let v: Value = serde_json::from_str(&show(&[b], true)).expect("json");
        assert_eq!(v["bridges"][0]["ports"][1]["options"]["rx"], "in.pcap");
        assert_eq!(v["bridges"][0]["ports"][1]["link_state"], "down");
    }

    #[test]
    fn rxq_show_notes_a_pin_outside_the_mask() {
        let p = PmdRxqReport {
            core_id: None,
            isolated: false,
            busy_pct: 40,
            rxqs: vec![RxqLoad {
                bridge: "br".into(),
                port: "src".into(),
                queue: 3,
                usage_pct: 40,
                cycles: 1000,
                pinned: Some(7),
            }],
        };
        assert_eq!(
            rxq_show(&[p], false),
            "pmd thread numa_id 0 core_id unpinned:\n  isolated : false\n\
             \x20 port: src              queue-id:  3 (enabled)   pmd usage: 40 % \
             (pinned to core 7, not in mask)\n  overhead:  0 %\n  busy:  40 %\n"
        );
    }

    #[test]
    fn pmd_stats_of_an_idle_thread() {
        let r = PmdReport {
            core_id: Some(2),
            stats: Default::default(),
            tx_packets: 0,
            tx_bursts: 0,
            module_drops: 0,
            cache: Default::default(),
            tsc_hz: 1,
            pool_buffers: 8,
            pool_in_use: 0,
        };
        let text = pmd_stats(std::slice::from_ref(&r), false);
        assert!(text.starts_with("pmd thread numa_id 0 core_id 2:\n  packets received: 0\n"));
        assert!(
            text.contains("  avg cycles per packet: 0.00 (0/0)\n"),
            "{text}"
        );
        assert!(!text.contains("restarts"), "{text}");
        let v: Value = serde_json::from_str(&pmd_stats(&[r.clone(), r], true)).expect("json");
        assert_eq!(v["pmds"].as_array().map(Vec::len), Some(2));
    }

    fn trace_record(seq: u64, decision: &str, outputs: &[&str], dropped: bool) -> TraceRecord {
        TraceRecord {
            seq,
            in_port: "p1".into(),
            len: 60,
            decision: decision.into(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            dropped,
        }
    }

    #[test]
    fn pmd_trace_lists_each_threads_records_then_merges_them_in_json() {
        let r = TraceReport {
            bridge: "br".into(),
            threads: vec![
                ThreadTrace {
                    budget: 2,
                    records: vec![
                        trace_record(0, "emc hit, actions:2", &["p2"], false),
                        trace_record(1, "upcall", &[], false),
                    ],
                },
                ThreadTrace {
                    budget: 0,
                    records: vec![trace_record(0, "drop", &[], true)],
                },
            ],
        };
        assert_eq!(
            pmd_trace(&r, false),
            "#0 bridge br in_port p1 len 60: emc hit, actions:2 -> p2\n\
             #1 bridge br in_port p1 len 60: upcall -> none (yet)\n\
             (2 more packets to trace)\n\
             #0 bridge br in_port p1 len 60: drop -> drop\n"
        );
        assert_eq!(
            pmd_trace(&r, true),
            "[{\"seq\":0,\"bridge\":\"br\",\"in_port\":\"p1\",\"len\":60,\"decision\":\"emc hit, actions:2\",\"outputs\":[\"p2\"],\"dropped\":false},\
             {\"seq\":1,\"bridge\":\"br\",\"in_port\":\"p1\",\"len\":60,\"decision\":\"upcall\",\"outputs\":[],\"dropped\":false},\
             {\"seq\":0,\"bridge\":\"br\",\"in_port\":\"p1\",\"len\":60,\"decision\":\"drop\",\"outputs\":[],\"dropped\":true}]\n"
        );
        let none = TraceReport {
            bridge: "br".into(),
            threads: vec![ThreadTrace::default()],
        };
        assert_eq!(
            (pmd_trace(&none, false), pmd_trace(&none, true)),
            (String::new(), "[]\n".into())
        );
        assert_eq!(json_str("a\"b\\c\u{1}"), "\"a\\\"b\\\\c\\u0001\"");
    }
}
