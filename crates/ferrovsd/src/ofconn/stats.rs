//! Multipart (statistics) requests and their replies.
//!
//! [`multipart`] answers every multipart request the codec decodes: the switch
//! description, flow and aggregate statistics (standard and Nicira), table, port, group
//! and meter statistics, descriptions and features, bundle features and controller status;
//! table features are [`super::features`]'s and flow monitors [`super::monitor`]'s. OpenFlow
//! 1.0's port description, which the codec leaves to 1.1+, is [`of10_port_desc`].
//!
//! Flow and aggregate statistics first wait for the datapath caches to push their counters
//! (as a barrier does, see [`super::handle`]); group statistics always do. Everything is
//! read in one short write session on the OpenFlow state per request, ports on the poll thread.
//!
//! Replies that may be long (flows, table features and descriptions) are split over
//! several messages, all but the last flagged `OFPMPF_REPLY_MORE`, and there is always at
//! least one; messages are filled to about 64 KiB, as OVS's are ([`send_split`]). A flow
//! statistics record the connection's version cannot express is left out rather than
//! failing the whole reply. Any other reply too long for one message is
//! `BAD_REQUEST/MULTIPART_BUFFER_OVERFLOW`.

use super::conn::{reply_error, Conn};
use super::handle::{sync, SYNC_TIMEOUT};
use super::monitor::Form;
use super::BridgeOf;
use openflow::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY};
use openflow::messages::err::bad_request;
use openflow::messages::{OFPM_ALL, OFPTT_ALL};
use openflow::wire::msg::{OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::multipart::OxsStats;
use openflow::wire::multipart::{
    AggregateStats, Desc, FlowStats, FlowStatsRequest, GroupDesc, GroupFeatures, GroupStats,
    MeterConfig, MeterFeatures, MeterStats, TableStats,
};
use openflow::wire::of14::{BundleFeatures, FlowStats15};
use openflow::wire::{self, Header, Message, MpReply, MpRequest, MultipartReply, PortStats};
use openflow::OfError;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `OFPQ_ALL`: every queue.
const OFPQ_ALL: u32 = 0xffff_ffff;
/// Nicira's error for statistics of something not configured (IPFIX on a bridge without).
const NOT_CONFIGURED: OfError = OfError::nx(openflow::messages::err::nx_tlv::NOT_CONFIGURED);
/// Flow statistics records in a reply's first message (later ones are filled to 64 KiB).
const FLOWS_PER_REPLY: usize = 128;
/// Group and meter records in a reply's first message (later ones are filled to 64 KiB): a
/// bridge holds up to 262,144 of each, far beyond one message.
const GROUPS_PER_REPLY: usize = 64;
/// Table descriptions per message: all 254 (a few dozen bytes each) in one, as OVS sends
/// them (vacancy properties are the largest, 8 bytes).
const TABLE_DESCS_PER_REPLY: usize = 254;
/// `OFPT_STATS_REPLY` in OpenFlow 1.0.
const OFPT10_STATS_REPLY: u8 = 17;
/// OpenFlow 1.0's (Nicira-defined) port description statistics type.
pub const OF10_PORT_DESC: u16 = 13;

/// Answers a multipart request. See the module documentation.
pub fn multipart(
    b: &Arc<BridgeOf>,
    c: &Conn,
    xid: u32,
    req: wire::MultipartRequest,
) -> Result<(), OfError> {
    let now = datapath::clock::now_ms();
    // The reply's type follows the request's (Nicira or standard).
    let nx = matches!(req.body, MpRequest::NxFlow(_) | MpRequest::NxAggregate(_));
    let body = match req.body {
        MpRequest::Desc => desc(b),
        MpRequest::Flow(r) | MpRequest::NxFlow(r) => {
            sync(b, c, true);
            let rules = selected_rules(b, &r);
            let body = |f| {
                if nx {
                    MpReply::NxFlow(f)
                } else {
                    MpReply::Flow(f)
                }
            };
            send_split(
                c,
                xid,
                &rules,
                FLOWS_PER_REPLY,
                |r| flow_record(r, now),
                body,
            );
            return Ok(());
        }
        MpRequest::Aggregate(r) | MpRequest::NxAggregate(r) => aggregate(b, c, &r, nx),
        MpRequest::Table => table_stats(b),
        MpRequest::TableFeatures(set) => return super::features::reply(b, c, xid, &set),
        MpRequest::PortStats(port) => port_stats(b, port)?,
        MpRequest::PortDesc(port) => port_desc(b, port)?,
        MpRequest::Queue { port_no, queue_id } => {
            no_queues(b, port_no, queue_id)?;
            MpReply::Queue(Vec::new())
        }
        MpRequest::Group(id) => return records(c, xid, group_stats(b, id, now), MpReply::Group),
        MpRequest::GroupDesc(id) => return records(c, xid, group_desc(b, id), MpReply::GroupDesc),
        MpRequest::GroupFeatures => {
            let max = b.udpif.of().limits().groups;
            group_features(c.version(), max)
        }
        MpRequest::Meter(id) => return records(c, xid, meter_stats(b, id, now), MpReply::Meter),
        MpRequest::MeterConfig(id) => {
            return records(c, xid, meter_config(b, id), MpReply::MeterConfig)
        }
        MpRequest::MeterFeatures => meter_features(b.udpif.of().limits().meters),
        MpRequest::Experimenter(_) => {
            return Err(OfError::bad_request(bad_request::BAD_EXPERIMENTER));
        }
        MpRequest::IpfixBridge => {
            MpReply::IpfixBridge(b.ipfix.bridge_stats(&b.name).ok_or(NOT_CONFIGURED)?)
        }
        MpRequest::IpfixFlow => {
            MpReply::IpfixFlow(b.ipfix.flow_stats(&b.name).ok_or(NOT_CONFIGURED)?)
        }
        MpRequest::TableDesc => {
            let recs = super::status::table_descs(b);
            send_chunked(c, xid, &recs, TABLE_DESCS_PER_REPLY, MpReply::TableDesc);
            return Ok(());
        }
        MpRequest::FlowMonitor(reqs) => {
            return super::monitor::request(b, c, xid, reqs, Form::Std);
        }
        MpRequest::NxFlowMonitor(reqs) => {
            return super::monitor::request(b, c, xid, reqs, Form::Nx);
        }
        MpRequest::OnfFlowMonitor(reqs) => {
            return super::monitor::request(b, c, xid, reqs, Form::Onf);
        }
        // No queues.
        MpRequest::QueueDesc { port_no, queue_id } => {
            no_queues(b, port_no, queue_id)?;
            MpReply::QueueDesc(Vec::new())
        }
        MpRequest::ControllerStatus => {
            MpReply::ControllerStatus(super::status::controller_statuses(b))
        }
        // Every commit is atomic and ordered; no scheduled commits.
        MpRequest::BundleFeatures(_) => MpReply::BundleFeatures(BundleFeatures {
            capabilities: OFPBF_ATOMIC | OFPBF_ORDERED,
            props: Vec::new(),
        }),
        MpRequest::FlowStats15(r) => {
            sync(b, c, true);
            let rules = selected_rules(b, &r);
            let record = |r: &Arc<ofproto::Rule>| flow_record15(r, now);
            send_split(
                c,
                xid,
                &rules,
                FLOWS_PER_REPLY,
                record,
                MpReply::FlowStats15,
            );
            return Ok(());
        }
    };
    send_mp(c, xid, body);
    Ok(())
}

/// Seconds and nanoseconds from `since_ms` to `now`.
fn duration(now: u64, since_ms: u64) -> (u32, u32) {
    let d = now.saturating_sub(since_ms);
    ((d / 1000) as u32, ((d % 1000) * 1_000_000) as u32)
}

/// Sends a multipart reply body in one message.
fn send_mp(c: &Conn, xid: u32, body: MpReply) {
    let m = Message::MultipartReply(MultipartReply { flags: 0, body });
    match wire::encode(&m, c.version(), xid) {
        Ok(bytes) => c.send_raw(bytes),
        Err(_) => {
            // Too long or unrepresentable: nothing sensible can be sent in one piece.
            reply_error(
                c,
                c.version(),
                OfError::bad_request(bad_request::MULTIPART_BUFFER_OVERFLOW),
                &[],
            );
        }
    }
}

/// Sends group or meter records over as many messages as they need (see [`send_split`]).
fn records<T: Clone>(
    c: &Conn,
    xid: u32,
    recs: Vec<T>,
    body: impl Fn(Vec<T>) -> MpReply,
) -> Result<(), OfError> {
    send_split(c, xid, &recs, GROUPS_PER_REPLY, Clone::clone, body);
    Ok(())
}

/// Sends `recs` as a multipart reply of at most `per` records a message, at least one
/// message, `body` making each message's body (see [`send_split`]).
pub(super) fn send_chunked<T: Clone>(
    c: &Conn,
    xid: u32,
    recs: &[T],
    per: usize,
    body: impl Fn(Vec<T>) -> MpReply,
) {
    let mut parts = recs.chunks(per.max(1)).peekable();
    if parts.peek().is_none() {
        send_part(c, xid, recs, false, &T::clone, &body);
    }
    while let Some(part) = parts.next() {
        send_part(c, xid, part, parts.peek().is_some(), &T::clone, &body);
    }
}

/// Sends a multipart reply with a record for each of `items`, made by `record` only when
/// its message is built (a dump of 100K flows never holds them all as records at once).
/// The first message takes `per` records; each later one as many as the records so far
/// say will fill it to OpenFlow's 64 KiB, as OVS fills its replies. A message that would
/// still exceed 64 KiB is halved until it fits; a record the connection's version cannot
/// express is left out; there is always at least one message, the last without
/// `OFPMPF_REPLY_MORE`.
pub(super) fn send_split<I, T>(
    c: &Conn,
    xid: u32,
    items: &[I],
    per: usize,
    record: impl Fn(&I) -> T,
    body: impl Fn(Vec<T>) -> MpReply,
) {
    if items.is_empty() {
        send_part(c, xid, items, false, &record, &body);
        return;
    }
    let mut per = per.max(1);
    let mut rest = items;
    while !rest.is_empty() {
        let (part, after) = rest.split_at(per.min(rest.len()));
        if let Some(len) = send_part(c, xid, part, !after.is_empty(), &record, &body) {
            per = fill(part.len(), len);
        }
        rest = after;
    }
}

/// The largest multipart reply message (OpenFlow's 16-bit length).
const MAX_MESSAGE: usize = u16::MAX as usize;
/// The bytes of a multipart reply message before its records (OpenFlow 1.1+; 1.0's 12).
const MP_REPLY_HEADER: usize = 16;

/// How many records fill a message, from one of `n` records that came to `len` bytes:
/// records averaging what these did, with 1/32 left for larger ones.
fn fill(n: usize, len: usize) -> usize {
    let per_record = len
        .saturating_sub(MP_REPLY_HEADER)
        .div_ceil(n.max(1))
        .max(1);
    let room = (MAX_MESSAGE - MP_REPLY_HEADER) - (MAX_MESSAGE - MP_REPLY_HEADER) / 32;
    (room / per_record).max(1)
}

/// One part of [`send_split`]: `more` says whether messages follow it. Returns the
/// message's length when the part went out as one message.
fn send_part<I, T>(
    c: &Conn,
    xid: u32,
    items: &[I],
    more: bool,
    record: &impl Fn(&I) -> T,
    body: &impl Fn(Vec<T>) -> MpReply,
) -> Option<usize> {
    let m = Message::MultipartReply(MultipartReply {
        flags: u16::from(more),
        body: body(items.iter().map(record).collect()),
    });
    if let Ok(bytes) = wire::encode(&m, c.version(), xid) {
        let len = bytes.len();
        c.send_raw(bytes);
        return Some(len);
    }
    if items.len() > 1 {
        let (a, b) = items.split_at(items.len() / 2);
        send_part(c, xid, a, true, record, body);
        send_part(c, xid, b, more, record, body);
    } else if !more {
        // The last record cannot be sent: an empty message still ends the reply.
        send_part(c, xid, &items[..0], false, record, body);
    }
    None
}

/// The rules a flow or aggregate statistics request selects.
fn selected_rules(b: &BridgeOf, r: &FlowStatsRequest) -> Vec<Arc<ofproto::Rule>> {
    let of = b.udpif.of();
    let mut out = Vec::new();
    for t in of.tables() {
        if r.table_id != OFPTT_ALL && r.table_id != t.id {
            continue;
        }
        // With out_group, only the rules naming the group (the table's group index).
        let rules: Box<dyn Iterator<Item = &Arc<ofproto::Rule>>> = if r.out_group != OFPG_ANY {
            Box::new(t.rules_of_group(r.out_group))
        } else {
            Box::new(t.rules())
        };
        for rule in rules {
            if !rule.match_.refines(&r.match_)
                || (rule.cookie & r.cookie_mask) != (r.cookie & r.cookie_mask)
                || (r.out_port != OFPP_ANY && !rule.outputs_to(r.out_port))
                || (r.out_group != OFPG_ANY && !rule.uses_group(r.out_group))
            {
                continue;
            }
            out.push(Arc::clone(rule));
        }
    }
    out
}

fn desc(b: &BridgeOf) -> MpReply {
    MpReply::Desc(Desc {
        mfr_desc: "ferrovs".into(),
        hw_desc: "ferrovs".into(),
        sw_desc: env!("CARGO_PKG_VERSION").into(),
        serial_num: "None".into(),
        dp_desc: format!("ferrovs bridge {}", b.name),
    })
}

/// Milliseconds since `rule` last saw a packet (since it was made, if never).
fn idle_ms(rule: &ofproto::Rule, used: u64, now: u64) -> u64 {
    now.saturating_sub(if used == 0 { rule.created_ms } else { used })
}

/// An age in milliseconds as Nicira's flow statistics carry it: whole seconds plus one
/// (0 would mean "unknown"), at most 65,535.
fn age_plus_one(ms: u64) -> u16 {
    (ms / 1000 + 1).min(u64::from(u16::MAX)) as u16
}

/// A rule's flow statistics record.
fn flow_record(rule: &ofproto::Rule, now: u64) -> FlowStats {
    let (packets, bytes, used) = rule.stats.get();
    let (s, ns) = duration(now, rule.created_ms);
    let idle = idle_ms(rule, used, now);
    FlowStats {
        table_id: rule.table_id,
        duration_sec: s,
        duration_nsec: ns,
        priority: rule.priority,
        idle_timeout: rule.idle_timeout,
        hard_timeout: rule.hard_timeout,
        flags: rule.flags.0,
        importance: 0,
        cookie: rule.cookie,
        packet_count: packets,
        byte_count: bytes,
        idle_age: age_plus_one(idle),
        hard_age: age_plus_one(now.saturating_sub(rule.modified_ms)),
        match_: rule.match_.clone(),
        instructions: rule.instructions.clone(),
    }
}

/// A rule's OpenFlow 1.5 flow statistics record.
fn flow_record15(rule: &ofproto::Rule, now: u64) -> FlowStats15 {
    let (packets, bytes, used) = rule.stats.get();
    let (s, ns) = duration(now, rule.created_ms);
    let idle = idle_ms(rule, used, now);
    FlowStats15 {
        table_id: rule.table_id,
        reason: 0,
        priority: rule.priority,
        match_: rule.match_.clone(),
        stats: OxsStats {
            duration_sec: s,
            duration_nsec: ns,
            idle_time: Some(((idle / 1000) as u32, ((idle % 1000) * 1_000_000) as u32)),
            flow_count: None,
            packet_count: packets,
            byte_count: bytes,
        },
    }
}

fn aggregate(b: &BridgeOf, c: &Conn, r: &FlowStatsRequest, nx: bool) -> MpReply {
    sync(b, c, true);
    let rules = selected_rules(b, r);
    let mut a = AggregateStats::default();
    for rule in &rules {
        let (p, by, _) = rule.stats.get();
        a.packet_count += p;
        a.byte_count += by;
    }
    a.flow_count = rules.len() as u32;
    if nx {
        MpReply::NxAggregate(a)
    } else {
        MpReply::Aggregate(a)
    }
}

fn table_stats(b: &BridgeOf) -> MpReply {
    let of = b.udpif.of();
    MpReply::Table(
        of.tables()
            .iter()
            .filter(|t| t.id < 254)
            .map(|t| TableStats {
                table_id: t.id,
                name: t.name.clone(),
                wildcards: 0x003f_ffff,
                max_entries: t.reported_max_entries(),
                active_count: t.len() as u32,
                lookup_count: t.lookup_count.load(Ordering::Relaxed),
                matched_count: t.matched_count.load(Ordering::Relaxed),
            })
            .collect(),
    )
}

fn port_stats(b: &BridgeOf, port: u32) -> Result<MpReply, OfError> {
    let ports = b
        .ports()
        .map_err(|_| OfError::bad_request(bad_request::EPERM))?;
    let (s, ns) = {
        let d = b.created.elapsed();
        (d.as_secs() as u32, d.subsec_nanos())
    };
    let sel: Vec<PortStats> = ports
        .iter()
        .filter(|p| port == OFPP_ANY || p.desc.port_no == port)
        .map(|p| PortStats {
            port_no: p.desc.port_no,
            rx_packets: p.stats.rx_packets,
            tx_packets: p.stats.tx_packets,
            rx_bytes: p.stats.rx_bytes,
            tx_bytes: p.stats.tx_bytes,
            rx_dropped: p.stats.rx_dropped,
            tx_dropped: p.stats.tx_dropped,
            rx_errors: p.stats.rx_errors,
            tx_errors: p.stats.tx_errors,
            rx_frame_err: 0,
            rx_over_err: 0,
            rx_crc_err: 0,
            collisions: 0,
            duration_sec: s,
            duration_nsec: ns,
            ethernet: true,
            props: Vec::new(),
        })
        .collect();
    // An unknown port has no statistics: an empty reply, as OVS sends.
    Ok(MpReply::PortStats(sel))
}

/// The queue requests' checks. ferrovs has no queues, so it answers as OVS does for ports
/// without QoS: a port that does not exist is `OFPQOFC_BAD_PORT`, a particular queue
/// `OFPQOFC_BAD_QUEUE`, and all queues of a port (or of every port) is an empty list.
pub(super) fn no_queues(b: &BridgeOf, port: u32, queue: u32) -> Result<(), OfError> {
    use openflow::messages::err::queue_op_failed as q;
    // OpenFlow 1.0 names every port OFPP_ALL here.
    if port != OFPP_ANY && port != openflow::actions::OFPP_ALL {
        let ports = b
            .ports()
            .map_err(|_| OfError::bad_request(bad_request::EPERM))?;
        if !ports.iter().any(|p| p.desc.port_no == port) {
            return Err(OfError::queue_op_failed(q::BAD_PORT));
        }
    }
    if queue != OFPQ_ALL {
        return Err(OfError::queue_op_failed(q::BAD_QUEUE));
    }
    Ok(())
}

fn port_desc(b: &BridgeOf, port: u32) -> Result<MpReply, OfError> {
    let ports = b
        .ports()
        .map_err(|_| OfError::bad_request(bad_request::EPERM))?;
    Ok(MpReply::PortDesc(
        ports
            .into_iter()
            .filter(|p| port == OFPP_ANY || p.desc.port_no == port)
            .map(|p| p.desc)
            .collect(),
    ))
}

/// OVS's port-description statistics for OpenFlow 1.0 (stats type 13), which the codec
/// leaves to 1.1+: the ports are laid out as in a 1.0 features reply.
pub fn of10_port_desc(b: &BridgeOf, c: &Conn, h: Header) {
    let ports: Vec<wire::Port> = b
        .ports()
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.desc)
        .collect();
    let f = Message::FeaturesReply(wire::SwitchFeatures {
        ports,
        ..Default::default()
    });
    let Ok(fr) = wire::encode(&f, wire::OFP10, h.xid) else {
        return;
    };
    let body = fr.get(32..).unwrap_or_default();
    let len = 12 + body.len();
    let Ok(len16) = u16::try_from(len) else {
        return;
    };
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&[wire::OFP10, OFPT10_STATS_REPLY]);
    out.extend_from_slice(&len16.to_be_bytes());
    out.extend_from_slice(&h.xid.to_be_bytes());
    out.extend_from_slice(&OF10_PORT_DESC.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(body);
    c.send_raw(out);
}

fn group_stats(b: &BridgeOf, id: u32, now: u64) -> Vec<GroupStats> {
    b.udpif.sync(SYNC_TIMEOUT);
    let of = b.udpif.of();
    // One pass over the rules for the whole dump, not one per group.
    let all = (id == OFPG_ALL).then(|| of.group_ref_counts());
    let refs = |g: u32| match &all {
        Some(n) => n.get(&g).copied().unwrap_or(0),
        None => of.group_ref_count(g),
    };
    of.groups()
        .values()
        .filter(|g| id == OFPG_ALL || g.id == id)
        .map(|g| {
            let (s, ns) = duration(now, g.created_ms);
            let (packets, bytes) = g.stats.get();
            GroupStats {
                group_id: g.id,
                ref_count: refs(g.id),
                packet_count: packets,
                byte_count: bytes,
                duration_sec: s,
                duration_nsec: ns,
                buckets: g.stats.buckets(),
            }
        })
        .collect()
}

fn group_desc(b: &BridgeOf, id: u32) -> Vec<GroupDesc> {
    let of = b.udpif.of();
    of.groups()
        .values()
        .filter(|g| id == OFPG_ALL || g.id == id)
        .map(|g| GroupDesc {
            group_type: g.kind,
            group_id: g.id,
            buckets: g.buckets.clone(),
        })
        .collect()
}

/// Group features. The action bitmaps use the version's action numbers: in 1.0 (Nicira's
/// group features) every 1.0 action, output to enqueue; from 1.3 on every 1.3 action.
/// `max_groups` is the bridge's group limit, for each type (groups of all types count
/// against it together). The capabilities add chaining checks to OVS's: ferrovs refuses a
/// group_mod that would make a loop of chained groups (`OFPGMFC_LOOP`).
fn group_features(version: u8, max_groups: u32) -> MpReply {
    let actions = if version == wire::OFP10 {
        0x0fff
    } else {
        0x03ff_fff9
    };
    MpReply::GroupFeatures(GroupFeatures {
        types: 0xf,
        capabilities: 0xf,
        max_groups: [max_groups; 4],
        actions: [actions; 4],
    })
}

fn meter_stats(b: &BridgeOf, id: u32, now: u64) -> Vec<MeterStats> {
    let of = b.udpif.of();
    let counts = of.meter_flow_counts();
    of.meters()
        .values()
        .filter(|m| id == OFPM_ALL || m.id == id)
        .map(|m| {
            let d = (now * 1000).saturating_sub(m.created_us);
            MeterStats {
                meter_id: m.id,
                flow_count: counts.get(&m.id).copied().unwrap_or(0) as u32,
                packet_in_count: m.packet_in_count,
                byte_in_count: m.byte_in_count,
                duration_sec: (d / 1_000_000) as u32,
                duration_nsec: ((d % 1_000_000) * 1000) as u32,
                bands: m
                    .bands
                    .iter()
                    .map(|x| (x.packet_count, x.byte_count))
                    .collect(),
            }
        })
        .collect()
}

fn meter_config(b: &BridgeOf, id: u32) -> Vec<MeterConfig> {
    let of = b.udpif.of();
    of.meter_specs()
        .iter()
        .filter(|(k, _)| id == OFPM_ALL || **k == id)
        .map(|(k, mm)| MeterConfig {
            flags: mm.flags.0,
            meter_id: *k,
            bands: mm.bands.clone(),
        })
        .collect()
}

/// Meter features: the limits of [`ofproto::Limits`] (OVS's userspace datapath's), and the
/// drop and DSCP remark bands (OVS runs drop only).
fn meter_features(max_meter: u32) -> MpReply {
    MpReply::MeterFeatures(MeterFeatures {
        max_meter,
        band_types: (1 << 1) | (1 << 2),
        capabilities: 0xf,
        max_bands: ofproto::MAX_BANDS as u8,
        max_color: 0,
        features: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_messages_are_filled_to_64_kib() {
        // 128 records of 100 bytes: the next message takes as many as fit 64 KiB, less
        // the 1/32 kept for larger records.
        let per = fill(128, MP_REPLY_HEADER + 128 * 100);
        assert!(
            per > 600 && MP_REPLY_HEADER + per * 100 <= MAX_MESSAGE,
            "{per}"
        );
        // A record that fills a message on its own still goes out, one a message.
        assert_eq!(fill(1, MAX_MESSAGE), 1);
        assert_eq!(fill(3, MP_REPLY_HEADER), fill(1, MP_REPLY_HEADER + 1));
    }

    #[test]
    fn durations_split_into_seconds_and_nanoseconds() {
        assert_eq!(duration(5_250, 1_000), (4, 250_000_000));
        assert_eq!(
            duration(1_000, 5_000),
            (0, 0),
            "a clock read before creation"
        );
    }
}
