//! The OpenFlow verbs, in ovs-ofctl's syntax: add-flow(s), mod-flows, del-flows,
//! dump-flows, dump-tables, groups, meters, mod-table, trace and dpctl/dump-flows.
//!
//! Every verb that changes state parses and validates everything it was given before it
//! changes anything: `add-flows` with one bad line (syntax, prerequisites, an unknown group
//! or meter) adds nothing, and the error names the line and the offending field.

mod change;

use datapath::udpif::{self, Udpif};
use ofproto::table::TableMiss;
use openflow::text::{self, FlowCounters};
use openflow::{
    BucketCommand, FlowMod, FlowModCommand, GroupMod, GroupModCommand, MeterModCommand, OfError,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Describes an OpenFlow error for people: `OFPET_BAD_MATCH / OFPBMC_BAD_PREREQ`.
pub fn of_error_text(e: &OfError) -> String {
    format!(
        "{} / {}",
        e.type_name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("type {}", e.type_)),
        e.code_name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("code {}", e.code))
    )
}

fn split_strict(args: &[String]) -> (bool, Vec<String>) {
    let strict = args.iter().any(|a| a == "--strict");
    (
        strict,
        args.iter().filter(|a| *a != "--strict").cloned().collect(),
    )
}

fn joined(args: &[String]) -> String {
    args.join(" ")
}

/// How long a change waits for the caches to catch up before it is acknowledged.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a verb runs, which decides how it waits for the caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The control plane's own thread: wait for a revalidation round and the poll thread.
    Control,
    /// The thread that runs the bridge's only poll loop itself (a `PollSet` driven in
    /// process, as tests and benchmarks do), between two polls: revalidate inline (nothing
    /// is in flight).
    PollThread,
}

fn synced(u: &Udpif, r: Result<String, String>, caller: Caller) -> Result<String, String> {
    r.as_ref()?;
    match caller {
        Caller::Control => {
            if !u.sync(SYNC_TIMEOUT) {
                return Err(
                    "change applied, but the datapath caches did not confirm it in time".into(),
                );
            }
        }
        Caller::PollThread => udpif::round(u),
    }
    r
}

/// Runs one verb. Changes are acknowledged (the call returns) only once no cached decision
/// made before them can be used any more.
pub fn run(m: &Udpif, verb: &str, args: &[String], json: bool, now: u64) -> Result<String, String> {
    run_as(m, verb, args, json, now, Caller::Control)
}

/// [`run`], saying which thread calls.
pub fn run_as(
    m: &Udpif,
    verb: &str,
    args: &[String],
    json: bool,
    now: u64,
    caller: Caller,
) -> Result<String, String> {
    if caller == Caller::PollThread && matches!(verb, "dump-flows" | "dump-groups") {
        udpif::round(m);
    }
    let r = run_inner(m, verb, args, json, now, caller);
    match verb {
        "add-flow" | "add-flows" | "mod-flows" | "del-flows" | "mod-table" | "add-group"
        | "mod-group" | "del-groups" | "insert-buckets" | "remove-buckets" | "add-meter"
        | "mod-meter" | "del-meters" => synced(m, r, caller),
        _ => r,
    }
}

/// Hands the verb to its function.
fn run_inner(
    m: &Udpif,
    verb: &str,
    args: &[String],
    json: bool,
    now: u64,
    caller: Caller,
) -> Result<String, String> {
    let sync_stats = || {
        if caller == Caller::Control {
            m.sync(SYNC_TIMEOUT);
        }
    };
    match verb {
        "add-flow" => change::add_flow(m, args, now),
        "add-flows" => change::add_flows(m, args, now),
        "mod-flows" => change::mod_flows(m, args, now),
        "del-flows" => change::del_flows(m, args, now),
        "dump-flows" => {
            // Push the datapath's counters to the rules first, so the numbers are current.
            sync_stats();
            dump_flows(m, args, json, now)
        }
        "dump-tables" => Ok(dump_tables(m, json)),
        "mod-table" => change::mod_table(m, args),
        "add-group" => change::group_mod(m, args, now, GroupModCommand::Add),
        "mod-group" => change::group_mod(m, args, now, GroupModCommand::Modify),
        "insert-buckets" => change::bucket_mod(m, args, now, BucketCommand::Insert),
        "remove-buckets" => change::bucket_mod(m, args, now, BucketCommand::Remove),
        "del-groups" => change::del_groups(m, args, now),
        "dump-groups" => {
            sync_stats();
            Ok(dump_groups(m, json, now))
        }
        "add-meter" => change::meter_mod(m, args, now, MeterModCommand::Add),
        "mod-meter" => change::meter_mod(m, args, now, MeterModCommand::Modify),
        "del-meters" => change::del_meters(m, args, now),
        "dump-meters" => Ok(dump_meters(m, json, now)),
        "trace" => trace(m, None, args, json),
        "dpctl/dump-flows" => Ok(dump_megaflows(m, json, now)),
        "dpctl/del-flows" => {
            m.flush();
            Ok(String::new())
        }
        _ => Err(format!("module 'openflow' has no command '{verb}'")),
    }
}

fn rule_flow_mod(r: &ofproto::Rule) -> FlowMod {
    FlowMod {
        table_id: r.table_id,
        priority: r.priority,
        cookie: r.cookie,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        flags: r.flags,
        match_: r.match_.clone(),
        instructions: r.instructions.clone(),
        ..FlowMod::new(FlowModCommand::Add)
    }
}

/// The rules `dump-flows ARGS` shows (all, or those the flow text in `args` selects: table,
/// match it refines, cookie under its mask), in OVS's order, taken under the OpenFlow
/// state's lock and returned without it.
fn selected_rules(m: &Udpif, args: &[String]) -> Result<Vec<Arc<ofproto::Rule>>, String> {
    let filter = if args.is_empty() {
        None
    } else {
        Some(text::parse_flow(&joined(args), FlowModCommand::Delete).map_err(|e| e.to_string())?)
    };
    let of = m.of();
    let mut out = Vec::new();
    for t in of.tables() {
        if let Some(f) = &filter {
            if f.table_id != openflow::messages::OFPTT_ALL && f.table_id != t.id {
                continue;
            }
        }
        out.extend(
            t.rules()
                .filter(|r| {
                    filter.as_ref().is_none_or(|f| {
                        r.match_.refines(&f.match_)
                            && (r.cookie & f.cookie_mask) == (f.cookie & f.cookie_mask)
                    })
                })
                .cloned(),
        );
    }
    Ok(out)
}

/// A rule's counters: packets, bytes, time since it was added, seconds since it last
/// matched (since it was added, if never).
fn rule_counters(r: &ofproto::Rule, now: u64) -> (u64, u64, Duration, u64) {
    let (packets, bytes, used) = r.stats.get();
    let duration = Duration::from_millis(now.saturating_sub(r.created_ms));
    let idle_age = if used == 0 {
        now.saturating_sub(r.created_ms)
    } else {
        now.saturating_sub(used)
    } / 1000;
    (packets, bytes, duration, idle_age)
}

/// One `dump-flows` line, as ovs-ofctl writes it.
fn flow_line(r: &ofproto::Rule, now: u64) -> String {
    let (n_packets, n_bytes, duration, idle_age) = rule_counters(r, now);
    let stats = FlowCounters {
        duration,
        n_packets,
        n_bytes,
        idle_age: Some(idle_age),
        hard_age: None,
    };
    format!(" {}\n", text::format_flow_stats(&rule_flow_mod(r), &stats))
}

/// `dump-flows BR [FLOW]` as text made a line at a time while it is consumed: the rules are
/// picked under the OpenFlow state's lock, which is released before the first line is made,
/// so a dump of any size neither holds the lock nor the whole text.
pub fn dump_flows_lines(
    m: &Udpif,
    args: &[String],
    now: u64,
) -> Result<impl Iterator<Item = String> + Send + 'static, String> {
    m.sync(SYNC_TIMEOUT);
    let rules = selected_rules(m, args)?;
    Ok(rules.into_iter().map(move |r| flow_line(&r, now)))
}

fn dump_flows(m: &Udpif, args: &[String], json: bool, now: u64) -> Result<String, String> {
    let rules = selected_rules(m, args)?;
    if !json {
        return Ok(rules.iter().map(|r| flow_line(r, now)).collect());
    }
    let rows: Vec<Value> = rules
        .iter()
        .map(|r| {
            let (packets, bytes, duration, idle_age) = rule_counters(r, now);
            json!({
                "table": r.table_id, "priority": r.priority, "cookie": format!("{:#x}", r.cookie),
                "match": text::format_match(&r.match_, None),
                "actions": text::format_instructions(&r.instructions),
                "n_packets": packets, "n_bytes": bytes,
                "duration_ms": duration.as_millis() as u64, "idle_age": idle_age,
                "idle_timeout": r.idle_timeout, "hard_timeout": r.hard_timeout,
            })
        })
        .collect();
    Ok(Value::Array(rows).to_string())
}

fn dump_tables(m: &Udpif, json: bool) -> String {
    use std::sync::atomic::Ordering;
    let of = m.of();
    let mut rows = Vec::new();
    let mut out = String::new();
    for t in of.tables() {
        let lookups = t.lookup_count.load(Ordering::Relaxed);
        let matched = t.matched_count.load(Ordering::Relaxed);
        if t.is_empty() && lookups == 0 && t.id != 0 {
            continue;
        }
        let miss = match t.miss {
            TableMiss::Drop => "drop",
            TableMiss::Controller => "controller",
            TableMiss::Continue => "continue",
        };
        if json {
            rows.push(
                json!({"table": t.id, "name": t.name, "active": t.len(), "lookup": lookups,
                "matched": matched, "subtables": t.n_subtables(), "miss": miss}),
            );
        } else {
            out.push_str(&format!(
                "  {}: {}: active={}, lookup={}, matched={}, subtables={}, miss={}\n",
                t.id,
                t.name,
                t.len(),
                lookups,
                matched,
                t.n_subtables(),
                miss
            ));
        }
    }
    if json {
        return Value::Array(rows).to_string();
    }
    out
}

fn dump_groups(m: &Udpif, json: bool, now: u64) -> String {
    let of = m.of();
    let mut out = String::new();
    let mut rows = Vec::new();
    for g in of.groups().values() {
        let gm = GroupMod {
            command: GroupModCommand::Add,
            group_type: g.kind,
            group_id: g.id,
            buckets: g.buckets.clone(),
        };
        let t = text::format_group(&gm);
        let (packets, bytes) = g.stats.get();
        let bucket_packets: Vec<u64> = g.stats.buckets().iter().map(|b| b.0).collect();
        if json {
            rows.push(json!({"group_id": g.id, "type": g.kind.name(), "text": t,
                "packet_count": packets, "byte_count": bytes,
                "bucket_packets": bucket_packets, "duration_ms": now.saturating_sub(g.created_ms)}));
        } else {
            out.push(' ');
            out.push_str(&t);
            out.push_str(&format!(
                " (packet_count={},byte_count={},bucket_packets={:?})\n",
                packets, bytes, bucket_packets
            ));
        }
    }
    if json {
        return Value::Array(rows).to_string();
    }
    out
}

fn dump_meters(m: &Udpif, json: bool, now: u64) -> String {
    let of = m.of();
    let mut out = String::new();
    let mut rows = Vec::new();
    let meters = of.meters();
    let counts = of.meter_flow_counts();
    for (id, spec) in of.meter_specs() {
        let Some(meter) = meters.get(id) else {
            continue;
        };
        let flows = counts.get(id).copied().unwrap_or(0);
        if json {
            let bands: Vec<Value> = meter
                .bands
                .iter()
                .map(|b| json!({"rate": b.rate, "burst": b.burst, "packet_count": b.packet_count, "byte_count": b.byte_count}))
                .collect();
            rows.push(json!({"meter": id, "text": text::format_meter(spec), "flow_count": flows,
                "packet_in_count": meter.packet_in_count, "byte_in_count": meter.byte_in_count,
                "duration_ms": (now * 1000).saturating_sub(meter.created_us) / 1000, "bands": bands}));
        } else {
            out.push_str(&text::format_meter(spec));
            out.push('\n');
            out.push_str(&format!(
                "  stats: flow_count={flows} packet_in_count={} byte_in_count={}",
                meter.packet_in_count, meter.byte_in_count
            ));
            for (i, b) in meter.bands.iter().enumerate() {
                out.push_str(&format!(
                    " band{i}: packet_count={} byte_count={}",
                    b.packet_count, b.byte_count
                ));
            }
            out.push('\n');
        }
    }
    if json {
        return Value::Array(rows).to_string();
    }
    out
}

/// A packet given to `trace` in hex, as OVS's `ofproto/trace BR FLOW PACKET` takes it: an
/// even number of hex digits, at least an Ethernet header.
pub fn hex_packet(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() < 28 || !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// `trace` on bridge `br`: as [`run`]'s `trace` verb, with the bridge named in the heading of
/// each pass as OVS's `ofproto/trace` names it.
pub fn trace_bridge(m: &Udpif, br: &str, args: &[String], json: bool) -> Result<String, String> {
    trace(m, Some(br), args, json)
}

/// `bridge("br0")` over a rule of its length, as OVS heads the steps of a trace.
fn bridge_heading(br: Option<&str>) -> String {
    let head = match br {
        Some(b) => format!("bridge(\"{b}\")"),
        None => "bridge".to_string(),
    };
    format!("{head}\n{}\n", "-".repeat(head.chars().count()))
}

fn trace(m: &Udpif, br: Option<&str>, args: &[String], json: bool) -> Result<String, String> {
    if args.is_empty() {
        return Err("usage: trace BR FLOW [PACKET]".into());
    }
    // `trace BR FLOW PACKET`: the flow gives the metadata (in_port), the packet everything
    // else, and the actions are applied to the packet as the datapath would.
    let (flow_args, frame) = match args.split_last() {
        Some((last, rest)) if !rest.is_empty() => match hex_packet(last) {
            Some(f) => (rest, Some(f)),
            None => (args, None),
        },
        _ => (args, None),
    };
    let text_in = joined(flow_args);
    let mt = text::parse_match(&text_in).map_err(|e| e.to_string())?;
    let of = m.of();
    let mut key = ofproto::fields::match_to_flow(&mt, 0);
    for e in mt.iter().filter(|e| e.field.is_tun_metadata()) {
        ofproto::tun_md::set(&mut key, &of.tlv, e.field, e.value, u128::MAX);
    }
    if let Some(f) = &frame {
        key = packet::flow::extract(f, key.in_port);
    }
    let mut lines = Vec::new();
    let x = ofproto::xlate(&of, &key, frame.as_deref(), Some(&mut lines));
    let mega = ofproto::text::megaflow_text(&key, &x.wc, &of.tlv);
    drop(of);
    let dp = ofproto::odp_text::ovs_notation(&x.actions, &key);
    let final_flow = if x.final_flow == key {
        "unchanged".to_string()
    } else {
        ofproto::tun_md::flow_text(&x.final_flow, &m.tlv.load())
    };
    if json {
        return Ok(json!({
            "flow": key.to_string(), "trace": lines, "final_flow": final_flow,
            "megaflow": mega, "datapath_actions": dp, "uncacheable": x.uncacheable,
        })
        .to_string());
    }
    let mut out = format!("Flow: {key}\n\n{}", bridge_heading(br));
    for l in lines {
        out.push_str(&format!("{l}\n"));
    }
    out.push_str(&format!(
        "\nFinal flow: {final_flow}\nMegaflow: {mega}\nDatapath actions: {dp}\n"
    ));
    // Follow recirculations as OVS's trace does: the tracked packet resumes as a new
    // connection (`ct_state=new|trk`) in the zone the `ct` named.
    let mut next = recirculation(&x);
    let mut rounds = 0;
    while let Some((id, zone, flow)) = next.take() {
        rounds += 1;
        if rounds > 6 {
            out.push_str("\nrecirculation too deep, not followed\n");
            break;
        }
        let mut k = flow;
        k.recirc_id = id;
        k.ct_state = 0x21;
        k.ct_zone = zone;
        k.regs = [0; packet::flow::N_REGS];
        k.metadata = 0;
        let rule = "=".repeat(79);
        out.push_str(&format!(
            "\n{rule}\nrecirc({id:#x}) - resume conntrack with default ct_state=trk|new\n{rule}\n\n"
        ));
        let mut lines = Vec::new();
        let x = ofproto::xlate(&m.of(), &k, None, Some(&mut lines));
        out.push_str(&format!("Flow: {k}\n\n{}", bridge_heading(br)));
        for l in lines {
            out.push_str(&format!("{l}\n"));
        }
        let dp = ofproto::odp_text::ovs_notation(&x.actions, &k);
        out.push_str(&format!(
            "\nFinal flow: {}\nMegaflow: {}\nDatapath actions: {dp}\n",
            if x.final_flow == k {
                "unchanged".to_string()
            } else {
                ofproto::tun_md::flow_text(&x.final_flow, &m.tlv.load())
            },
            ofproto::text::megaflow_text(&k, &x.wc, &m.tlv.load())
        ));
        next = recirculation(&x);
    }
    Ok(out)
}

/// The first `recirc` of a translation: its id, the zone of the `ct` before it, and the
/// flow the packet leaves that pass with.
fn recirculation(x: &ofproto::xlate::XlateOut) -> Option<(u32, u16, packet::flow::FlowKey)> {
    use ofproto::odp::DpAction;
    let mut zone = 0;
    for a in &x.actions {
        match a {
            DpAction::Ct(c) => zone = c.zone,
            DpAction::Recirc(id) => return Some((*id, zone, x.final_flow)),
            _ => {}
        }
    }
    None
}

fn dump_megaflows(m: &Udpif, json: bool, now: u64) -> String {
    let idx = m.idx();
    let mut flows: Vec<_> = idx.iter().filter(|f| !f.is_dead()).cloned().collect();
    drop(idx);
    flows.sort_by_key(|f| f.id);
    let mut out = String::new();
    let mut rows = Vec::new();
    for f in flows {
        let mask = packet::flow::FlowKey::from_words(&f.mask);
        let mtext = ofproto::text::megaflow_text(&f.flow, &mask, &m.tlv.load());
        let packets = f.packets.load(std::sync::atomic::Ordering::Relaxed);
        let bytes = f.bytes.load(std::sync::atomic::Ordering::Relaxed);
        let used = f.used_ms.load(std::sync::atomic::Ordering::Relaxed);
        let used_s = if used == 0 {
            "never".to_string()
        } else {
            format!("{:.3}s", now.saturating_sub(used) as f64 / 1000.0)
        };
        let acts = ofproto::odp::list_text(&f.actions);
        if json {
            rows.push(json!({"id": f.id, "match": mtext, "packets": packets, "bytes": bytes,
                "used_ms_ago": if used == 0 { Value::Null } else { json!(now.saturating_sub(used)) },
                "actions": acts}));
        } else {
            out.push_str(&format!(
                "{mtext}, packets:{packets}, bytes:{bytes}, used:{used_s}, actions:{acts}\n"
            ));
        }
    }
    if json {
        return Value::Array(rows).to_string();
    }
    out
}
