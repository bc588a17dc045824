//! Answering one request on an established connection.
//!
//! Each request is decoded, checked against the connection's role (a slave may not change
//! state), applied to the bridge's `Ofproto` under its lock (which validates it completely
//! before changing anything, so a refused request changes nothing), and answered. Replies
//! and errors go out through the connection's queue in request order.
//!
//! ## Barrier semantics
//! A change marks the connection dirty and asks the revalidator for a round at once
//! (`Udpif::kick`), but does not wait. A barrier (and any flow statistics request, which
//! also needs the counters pushed) waits with `Udpif::sync` until no cached decision made
//! before the changes can still be used, then replies: everything before the barrier is
//! applied *and* in force in the datapath. Packet-outs are validated as they are read and
//! queued in an [`OutBatch`]; the batch runs, in order and in one call to the poll thread,
//! before any other request is handled, when it holds [`OUT_BATCH_MAX`], and before the
//! reader waits for more input. So they too are complete at the barrier, and a controller
//! sending thousands per second costs one poll-thread round trip per batch, not per packet.
//! A queued packet-out that the datapath then refuses gets its error reply at the flush.
//!
//! ## Nicira details for `ovs-ofctl` over OpenFlow 1.0
//! `NXT_FLOW_MOD_TABLE_ID` makes the high byte of a flow_mod's command the table id (for
//! both `OFPT_FLOW_MOD` and `NXT_FLOW_MOD`); without it, adds go to table 0 and
//! modify/delete apply to every table, as OpenFlow 1.0 has no table id.
//! `NXT_SET_FLOW_FORMAT` accepts OpenFlow 1.0 and NXM; `NXT_SET_PACKET_IN_FORMAT` only the
//! standard format.

use super::conn::{reply_error, Conn, ROLE_MASTER, ROLE_NOCHANGE, ROLE_SLAVE};
use super::monitor::Form;
use super::{lock, BridgeOf};
use openflow::actions::{OFPG_ALL, OFPG_ANY, OFPP_ANY, OFPP_CONTROLLER, OFPP_LOCAL, OFPP_MAX};
use openflow::messages::err::{self, bad_request};
use openflow::messages::{OFPM_ALL, OFPTT_ALL, OFP_NO_BUFFER};
use openflow::oxm::Field;
use openflow::wire::msg::{OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::multipart::OxsStats;
use openflow::wire::multipart::{
    AggregateStats, Desc, FlowStats, FlowStatsRequest, GroupDesc, GroupFeatures, GroupStats,
    MeterConfig, MeterFeatures, MeterStats, TableFeatures, TableStats,
};
use openflow::wire::nicira::NxMessage;
use openflow::wire::of14::{BundleFeatures, FlowStats15, TableDesc};
use openflow::wire::{
    self, AsyncConfig, Header, Message, MpReply, MpRequest, MultipartReply, PortStats,
};
use openflow::{FlowMod, FlowModCommand, Match, OfError};
use std::sync::Arc;
use std::time::Duration;

/// How long a barrier waits for the datapath caches.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(10);
/// Flow statistics records per multipart reply message.
const FLOWS_PER_REPLY: usize = 128;

const OFPT_FLOW_MOD: u8 = 14;
const OFPT10_STATS_REQUEST: u8 = 16;
const OFPT10_STATS_REPLY: u8 = 17;

/// OVS's port-description statistics for OpenFlow 1.0 (stats type 13), which the codec
/// leaves to 1.1+: the ports are laid out as in a 1.0 features reply.
fn of10_port_desc(b: &BridgeOf, c: &Conn, h: Header) {
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
    out.extend_from_slice(&[0, 13, 0, 0]);
    out.extend_from_slice(body);
    c.send_raw(out);
}

fn now_ms() -> u64 {
    datapath::clock::now_ms()
}

/// Handles the framed message `msg` (header `h`, already in the connection's version).
/// Packet-outs a batch holds before it runs.
pub const OUT_BATCH_MAX: usize = 256;
/// `OFPT_PACKET_OUT`, the same in every version.
const OFPT_PACKET_OUT: u8 = 13;

/// Validated packet-outs not yet run (see the module documentation).
#[derive(Default)]
pub struct OutBatch {
    items: Vec<QueuedOut>,
}

struct QueuedOut {
    in_port: u32,
    data: Vec<u8>,
    actions: Vec<openflow::Action>,
    /// The request's first bytes, for an error reply.
    req: Vec<u8>,
}

impl OutBatch {
    /// Runs the queued packet-outs, in order, in one poll-thread call, and answers those the
    /// datapath refused.
    pub fn flush(&mut self, b: &BridgeOf, c: &Conn) {
        if self.items.is_empty() {
            return;
        }
        // Translated here, on the connection's thread, under the OpenFlow state's lock: the
        // poll thread only runs the datapath actions.
        let (jobs, reqs): (Vec<_>, Vec<_>) = {
            let of = b.udpif.of();
            let now = now_ms();
            std::mem::take(&mut self.items)
                .into_iter()
                .map(|q| {
                    let acts = ofproto::xlate::packet_out(&of, q.in_port, &q.data, &q.actions, now);
                    ((q.in_port, q.data, acts), q.req)
                })
                .unzip()
        };
        let n = jobs.len();
        let br = b.name.clone();
        let done = b.pmd.call(move |sw| {
            jobs.iter()
                .map(|(in_port, data, actions)| sw.packet_out(&br, *in_port, data, actions).is_ok())
                .collect::<Vec<bool>>()
        });
        let done = done.unwrap_or_else(|_| vec![false; n]);
        for (ok, req) in done.into_iter().zip(reqs) {
            if !ok {
                reply_error(
                    c,
                    c.version(),
                    OfError::bad_request(bad_request::BAD_PACKET),
                    &req,
                );
            }
        }
    }
}

/// Handles one request; packet-outs are queued in `batch`, which runs before anything else.
pub fn request(b: &Arc<BridgeOf>, c: &Arc<Conn>, h: Header, msg: &[u8], batch: &mut OutBatch) {
    if h.type_ != OFPT_PACKET_OUT {
        batch.flush(b, c);
    }
    let v = c.version();
    if v == wire::OFP10 && h.type_ == OFPT10_STATS_REQUEST && msg.get(8..10) == Some(&[0, 13]) {
        of10_port_desc(b, c, h);
        return;
    }
    // OpenFlow 1.0 flow_mod with a table id in the command's high byte (Nicira extension).
    let mut of10_table: Option<u8> = None;
    let decoded = if v == wire::OFP10 && h.type_ == OFPT_FLOW_MOD && msg.len() >= 58 {
        let mut m = msg.to_vec();
        if lock(&c.st).table_id_ext {
            of10_table = m.get(56).copied();
        }
        if let Some(x) = m.get_mut(56) {
            *x = 0;
        }
        wire::decode_frame(&m)
    } else {
        wire::decode_frame(msg)
    };
    let m = match decoded {
        Ok((_, m, _)) => m,
        Err(e) => {
            reply_error(c, v, e.to_of_error(), msg);
            return;
        }
    };
    if let Message::PacketOut(po) = m {
        let queued = if is_slave(c) {
            Err(OfError::bad_request(bad_request::IS_SLAVE))
        } else {
            packet_out(b, po, msg, batch)
        };
        if let Err(e) = queued {
            // Answer in order: what was queued before this one runs first.
            batch.flush(b, c);
            reply_error(c, v, e, msg);
        } else if batch.items.len() >= OUT_BATCH_MAX {
            batch.flush(b, c);
        }
        return;
    }
    let r = match m {
        Message::BundleControl(bc) => super::bundle::control(b, c, h.xid, bc, msg),
        Message::BundleAdd(add) => super::bundle::add(c, h.xid, add, msg),
        m => handle(b, c, h, m, of10_table),
    };
    if let Err(e) = r {
        reply_error(c, v, e, msg);
    }
}

fn is_slave(c: &Conn) -> bool {
    lock(&c.st).role == ROLE_SLAVE
}

pub(super) fn changed(b: &BridgeOf, c: &Conn) {
    lock(&c.st).dirty = true;
    b.udpif.kick_soon();
}

/// Waits for the datapath to reflect every change this connection made.
fn sync(b: &BridgeOf, c: &Conn, force: bool) {
    let dirty = std::mem::take(&mut lock(&c.st).dirty);
    if dirty || force {
        b.udpif.sync(SYNC_TIMEOUT);
    }
}

fn of10_table_id(fm: &mut FlowMod, ext: Option<u8>) {
    match ext {
        // `ovs-ofctl` says 255 ("any") for an add with no table: table 0.
        Some(OFPTT_ALL) if fm.command == FlowModCommand::Add => fm.table_id = 0,
        Some(t) => fm.table_id = t,
        None => {
            fm.table_id = if fm.command == FlowModCommand::Add {
                0
            } else {
                OFPTT_ALL
            }
        }
    }
}

fn handle(
    b: &Arc<BridgeOf>,
    c: &Arc<Conn>,
    h: Header,
    m: Message,
    of10_table: Option<u8>,
) -> Result<(), OfError> {
    let v = c.version();
    let xid = h.xid;
    let slave_check = || {
        if is_slave(c) {
            Err(OfError::bad_request(bad_request::IS_SLAVE))
        } else {
            Ok(())
        }
    };
    match m {
        Message::Hello(_) | Message::EchoReply(_) => {}
        Message::Error(_) => {}
        Message::EchoRequest(d) => c.send(&Message::EchoReply(d), xid),
        Message::FeaturesRequest => {
            let ports = if v == wire::OFP10 {
                b.ports()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| p.desc)
                    .collect()
            } else {
                Vec::new()
            };
            let f = wire::SwitchFeatures {
                datapath_id: b.datapath_id(),
                n_buffers: 0,
                n_tables: 254,
                auxiliary_id: 0,
                // Flow, table and port statistics; group statistics (1.1+); OF 1.0's bit 3 is STP.
                capabilities: if v == wire::OFP10 { 0x7 } else { 0xf },
                actions: if v == wire::OFP10 { 0xfff } else { 0 },
                ports,
            };
            c.send(&Message::FeaturesReply(f), xid);
        }
        Message::GetConfigRequest => {
            let ttl = b.udpif.of().invalid_ttl_to_controller;
            let cfg = wire::SwitchConfig {
                flags: if ttl && v != wire::OFP10 { 4 } else { 0 },
                miss_send_len: lock(&c.st).miss_send_len,
            };
            c.send(&Message::GetConfigReply(cfg), xid);
        }
        Message::SetConfig(cfg) => {
            lock(&c.st).miss_send_len = cfg.miss_send_len;
            if v != wire::OFP10 {
                b.udpif.of().invalid_ttl_to_controller = cfg.flags & 4 != 0;
                changed(b, c);
            }
        }
        Message::FlowMod(mut fm) => {
            slave_check()?;
            if v == wire::OFP10 {
                of10_table_id(&mut fm, of10_table);
            }
            flow_mod(b, c, &fm)?;
        }
        Message::Nx(nx) => match nx {
            NxMessage::FlowMod(mut fm) => {
                slave_check()?;
                let ext = lock(&c.st).table_id_ext;
                let t = fm.table_id;
                of10_table_id(&mut fm, ext.then_some(t));
                flow_mod(b, c, &fm)?;
            }
            NxMessage::SetFlowFormat(f) => {
                if f != 0 && f != 2 {
                    return Err(OfError::bad_request(bad_request::EPERM));
                }
                lock(&c.st).flow_format = f;
            }
            NxMessage::FlowModTableId(on) => lock(&c.st).table_id_ext = on,
            NxMessage::SetPacketInFormat(f) => {
                if f != 0 {
                    return Err(OfError::bad_request(bad_request::EPERM));
                }
            }
            NxMessage::SetControllerId(id) => lock(&c.st).controller_id = id,
        },
        Message::GroupMod(gm) => {
            slave_check()?;
            b.udpif.of().group_mod(&gm, now_ms())?;
            changed(b, c);
            super::status::forward_request(b, c, xid, &Message::GroupMod(gm));
        }
        Message::GroupBucketMod(gm) => {
            slave_check()?;
            b.udpif.of().group_bucket_mod(&gm, now_ms())?;
            changed(b, c);
            super::status::forward_request(b, c, xid, &Message::GroupBucketMod(gm));
        }
        Message::MeterMod(mm) => {
            slave_check()?;
            b.udpif.of().meter_mod(&mm, now_ms())?;
            changed(b, c);
            super::status::forward_request(b, c, xid, &Message::MeterMod(mm));
        }
        Message::PortMod(pm) => {
            slave_check()?;
            port_mod(b, c, &pm)?;
        }
        Message::TableMod(tm) => {
            slave_check()?;
            if tm.table_id != OFPTT_ALL && tm.table_id > 253 {
                return Err(OfError::new(err::OFPET_TABLE_MOD_FAILED, 0));
            }
            if v >= wire::OFP14 {
                super::status::table_mod(b, &tm)?;
            }
        }
        // Queued by `request`.
        Message::PacketOut(_) => {}
        Message::MultipartRequest(r) => multipart(b, c, xid, r)?,
        Message::BarrierRequest => {
            sync(b, c, false);
            c.send(&Message::BarrierReply, xid);
        }
        Message::QueueGetConfigRequest(port) => {
            c.send(
                &Message::QueueGetConfigReply {
                    port,
                    queues: Vec::new(),
                },
                xid,
            );
        }
        Message::RoleRequest(r) => role(b, c, xid, r)?,
        Message::GetAsyncRequest => {
            let masks = lock(&c.st).async_masks;
            let a = AsyncConfig {
                masks: masks
                    .iter()
                    .enumerate()
                    .map(|(i, m)| (i as u16, *m))
                    .collect(),
                experimenter: Vec::new(),
            };
            c.send(&Message::GetAsyncReply(a), xid);
        }
        Message::SetAsync(a) => {
            let mut st = lock(&c.st);
            for (t, mask) in a.masks {
                if let Some(x) = st.async_masks.get_mut(usize::from(t)) {
                    *x = mask;
                }
            }
        }
        Message::Experimenter(_) => {
            return Err(OfError::bad_request(bad_request::BAD_EXPERIMENTER));
        }
        // Handled by `request`.
        Message::BundleControl(_) | Message::BundleAdd(_) => {}
        // Messages only a switch sends.
        Message::FeaturesReply(_)
        | Message::GetConfigReply(_)
        | Message::PacketIn(_)
        | Message::FlowRemoved(_)
        | Message::PortStatus(_)
        | Message::MultipartReply(_)
        | Message::BarrierReply
        | Message::QueueGetConfigReply { .. }
        | Message::RoleReply(_)
        | Message::GetAsyncReply(_)
        | Message::RoleStatus(_)
        | Message::TableStatus(_)
        | Message::RequestForward(_)
        | Message::ControllerStatus(_) => {
            return Err(OfError::bad_request(bad_request::BAD_TYPE));
        }
    }
    Ok(())
}

fn flow_mod(b: &BridgeOf, c: &Conn, fm: &FlowMod) -> Result<(), OfError> {
    b.udpif.of().flow_mod(fm, now_ms())?;
    changed(b, c);
    if fm.buffer_id != OFP_NO_BUFFER && fm.command != FlowModCommand::Delete {
        // Nothing is ever buffered: the flow is in, but there is no packet to release.
        return Err(OfError::bad_request(bad_request::BUFFER_UNKNOWN));
    }
    Ok(())
}

fn port_mod(b: &BridgeOf, c: &Conn, pm: &wire::PortMod) -> Result<(), OfError> {
    let link_up = check_port_mod(b, pm)?;
    apply_port_mod(b, pm, link_up);
    changed(b, c);
    Ok(())
}

/// Checks a port_mod against the bridge's ports; returns whether the port has carrier.
pub(super) fn check_port_mod(b: &BridgeOf, pm: &wire::PortMod) -> Result<bool, OfError> {
    let pmf = |code| OfError::new(err::OFPET_PORT_MOD_FAILED, code);
    let ports = b.ports().map_err(|_| pmf(4))?;
    let Some(p) = ports.iter().find(|p| p.desc.port_no == pm.port_no) else {
        return Err(pmf(0));
    };
    if p.desc.hw_addr != pm.hw_addr && pm.hw_addr != [0; 6] {
        return Err(pmf(1));
    }
    // PORT_DOWN 0x1, NO_RECV 0x4, NO_FLOOD 0x10, NO_FWD 0x20, NO_PACKET_IN 0x40.
    const SUPPORTED: u32 = 0x1 | 0x4 | 0x10 | 0x20 | 0x40;
    if pm.mask & !SUPPORTED & !0x2 & !0x8 != 0 {
        return Err(pmf(2));
    }
    Ok(p.link_up)
}

/// Applies a port_mod [`check_port_mod`] accepted (`link_up` is what it returned).
pub(super) fn apply_port_mod(b: &BridgeOf, pm: &wire::PortMod, link_up: bool) {
    let config = {
        let mut pc = lock(&b.port_config);
        let cur = pc.get(&pm.port_no).copied().unwrap_or(0);
        let new = (cur & !pm.mask) | (pm.config & pm.mask);
        pc.insert(pm.port_no, new);
        new
    };
    {
        let mut of = b.udpif.of();
        if let Some(op) = of.ports().get(&pm.port_no).cloned() {
            of.set_port(ofproto::OfPort {
                live: link_up,
                admin_down: config & 1 != 0,
                no_flood: config & 0x10 != 0,
                ..op
            });
        }
    }
    super::conn::mark_port_dirty(b);
}

/// Validates a packet-out and queues it.
fn packet_out(
    b: &BridgeOf,
    po: wire::PacketOut,
    msg: &[u8],
    batch: &mut OutBatch,
) -> Result<(), OfError> {
    if po.buffer_id != OFP_NO_BUFFER {
        return Err(OfError::bad_request(bad_request::BUFFER_UNKNOWN));
    }
    let in_port = match po.in_port {
        OFPP_ANY => OFPP_CONTROLLER,
        p => p,
    };
    if !((1..=OFPP_MAX).contains(&in_port) || in_port == OFPP_LOCAL || in_port == OFPP_CONTROLLER) {
        return Err(OfError::bad_request(bad_request::BAD_PORT));
    }
    if po.data.len() < 14 {
        return Err(OfError::bad_request(bad_request::BAD_PACKET));
    }
    {
        let of = b.udpif.of();
        let m = Match::new().with(Field::InPort, u128::from(in_port));
        of.check_actions(&m, &po.actions, true)?;
    }
    batch.items.push(QueuedOut {
        in_port,
        data: po.data,
        actions: po.actions,
        req: msg.get(..64).unwrap_or(msg).to_vec(),
    });
    Ok(())
}

fn role(b: &BridgeOf, c: &Conn, xid: u32, r: wire::RoleMsg) -> Result<(), OfError> {
    let rf = |code| OfError::new(err::OFPET_ROLE_REQUEST_FAILED, code);
    if r.role > ROLE_SLAVE {
        return Err(rf(2));
    }
    let gen = {
        let mut roles = lock(&b.roles);
        if r.role == ROLE_MASTER || r.role == ROLE_SLAVE {
            if let Some(g) = roles.generation_id {
                if (r.generation_id.wrapping_sub(g) as i64) < 0 {
                    return Err(rf(0));
                }
            }
            roles.generation_id = Some(r.generation_id);
        }
        roles.generation_id.unwrap_or(0)
    };
    if r.role != ROLE_NOCHANGE {
        let mut demoted = Vec::new();
        if r.role == ROLE_MASTER {
            for other in lock(&b.conns).iter() {
                if other.id != c.id {
                    let mut st = lock(&other.st);
                    if st.role == ROLE_MASTER {
                        st.role = ROLE_SLAVE;
                        demoted.push(Arc::clone(other));
                    }
                }
            }
        }
        lock(&c.st).role = r.role;
        super::status::role_demoted(&demoted, gen);
    }
    let reply = wire::RoleMsg {
        role: lock(&c.st).role,
        short_id: 0,
        generation_id: gen,
    };
    c.send(&Message::RoleReply(reply), xid);
    Ok(())
}

/// Sends a multipart reply body, split over several messages when it has many records.
fn send_mp(c: &Conn, xid: u32, body: MpReply) {
    let one = |flags: u16, body: MpReply| Message::MultipartReply(MultipartReply { flags, body });
    let m = one(0, body);
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

/// Sends flow statistics in chunks; records this version cannot express are skipped.
fn send_flows(c: &Conn, xid: u32, flows: Vec<FlowStats>, nx: bool) {
    let v = c.version();
    let wrap = |flags: u16, f: Vec<FlowStats>| {
        Message::MultipartReply(MultipartReply {
            flags,
            body: if nx {
                MpReply::NxFlow(f)
            } else {
                MpReply::Flow(f)
            },
        })
    };
    let usable: Vec<FlowStats> = flows
        .into_iter()
        .filter(|f| wire::encode(&wrap(0, vec![f.clone()]), v, xid).is_ok())
        .collect();
    let chunks: Vec<Vec<FlowStats>> = if usable.is_empty() {
        vec![Vec::new()]
    } else {
        usable.chunks(FLOWS_PER_REPLY).map(|x| x.to_vec()).collect()
    };
    let n = chunks.len();
    for (i, ch) in chunks.into_iter().enumerate() {
        let flags = if i + 1 < n { 1 } else { 0 };
        if let Ok(bytes) = wire::encode(&wrap(flags, ch), v, xid) {
            c.send_raw(bytes);
        }
    }
}

fn selected_rules(b: &BridgeOf, r: &FlowStatsRequest) -> Vec<Arc<ofproto::Rule>> {
    let of = b.udpif.of();
    let mut out = Vec::new();
    for t in of.tables() {
        if r.table_id != OFPTT_ALL && r.table_id != t.id {
            continue;
        }
        for rule in t.rules() {
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

fn multipart(
    b: &Arc<BridgeOf>,
    c: &Conn,
    xid: u32,
    req: wire::MultipartRequest,
) -> Result<(), OfError> {
    let now = now_ms();
    let dur = |since_ms: u64| {
        let d = now.saturating_sub(since_ms);
        ((d / 1000) as u32, ((d % 1000) * 1_000_000) as u32)
    };
    // The reply's type follows the request's (Nicira or standard).
    let nx = matches!(req.body, MpRequest::NxFlow(_) | MpRequest::NxAggregate(_));
    let body = match req.body {
        MpRequest::Desc => MpReply::Desc(Desc {
            mfr_desc: "ferrovs".into(),
            hw_desc: "ferrovs".into(),
            sw_desc: env!("CARGO_PKG_VERSION").into(),
            serial_num: "None".into(),
            dp_desc: format!("ferrovs bridge {}", b.name),
        }),
        MpRequest::Flow(r) | MpRequest::NxFlow(r) => {
            sync(b, c, true);
            let flows = selected_rules(b, &r)
                .into_iter()
                .map(|rule| {
                    let (packets, bytes, used) = rule.stats.get();
                    let (s, ns) = dur(rule.created_ms);
                    let idle = now.saturating_sub(if used == 0 { rule.created_ms } else { used });
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
                        idle_age: (idle / 1000).min(u64::from(u16::MAX)) as u16,
                        hard_age: (now.saturating_sub(rule.modified_ms) / 1000)
                            .min(u64::from(u16::MAX)) as u16,
                        match_: rule.match_.clone(),
                        instructions: rule.instructions.clone(),
                    }
                })
                .collect();
            send_flows(c, xid, flows, nx);
            return Ok(());
        }
        MpRequest::Aggregate(r) | MpRequest::NxAggregate(r) => {
            sync(b, c, true);
            let rules = selected_rules(b, &r);
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
        MpRequest::Table => {
            let of = b.udpif.of();
            MpReply::Table(
                of.tables()
                    .iter()
                    .filter(|t| t.id < 254)
                    .map(|t| TableStats {
                        table_id: t.id,
                        name: t.name.clone(),
                        wildcards: 0x003f_ffff,
                        max_entries: t.max_entries.min(u32::MAX as usize) as u32,
                        active_count: t.len() as u32,
                        lookup_count: t.lookup_count.load(std::sync::atomic::Ordering::Relaxed),
                        matched_count: t.matched_count.load(std::sync::atomic::Ordering::Relaxed),
                    })
                    .collect(),
            )
        }
        MpRequest::TableFeatures(set) => {
            if !set.is_empty() {
                return Err(OfError::new(err::OFPET_TABLE_FEATURES_FAILED, 5));
            }
            let recs: Vec<TableFeatures> = {
                let of = b.udpif.of();
                of.tables()
                    .iter()
                    .filter(|t| t.id < 254)
                    .map(|t| TableFeatures {
                        table_id: t.id,
                        command: 0,
                        name: t.name.clone(),
                        metadata_match: u64::MAX,
                        metadata_write: u64::MAX,
                        config: 0,
                        max_entries: t.max_entries.min(u32::MAX as usize) as u32,
                        props: table_feature_props(t.id, c.version()),
                    })
                    .collect()
            };
            // About 1 KB per table: several messages.
            let chunks: Vec<&[TableFeatures]> = recs.chunks(40).collect();
            let n = chunks.len();
            for (i, ch) in chunks.into_iter().enumerate() {
                let m = Message::MultipartReply(MultipartReply {
                    flags: u16::from(i + 1 < n),
                    body: MpReply::TableFeatures(ch.to_vec()),
                });
                if let Ok(bytes) = wire::encode(&m, c.version(), xid) {
                    c.send_raw(bytes);
                }
            }
            return Ok(());
        }
        MpRequest::PortStats(port) => {
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
            if sel.is_empty() && port != OFPP_ANY {
                return Err(OfError::bad_request(bad_request::BAD_PORT));
            }
            MpReply::PortStats(sel)
        }
        MpRequest::PortDesc(port) => {
            let ports = b
                .ports()
                .map_err(|_| OfError::bad_request(bad_request::EPERM))?;
            MpReply::PortDesc(
                ports
                    .into_iter()
                    .filter(|p| port == OFPP_ANY || p.desc.port_no == port)
                    .map(|p| p.desc)
                    .collect(),
            )
        }
        MpRequest::Queue { .. } => MpReply::Queue(Vec::new()),
        MpRequest::Group(id) => {
            b.udpif.sync(SYNC_TIMEOUT);
            let of = b.udpif.of();
            let refs = |g: u32| {
                of.tables()
                    .iter()
                    .flat_map(|t| t.rules())
                    .filter(|r| r.uses_group(g))
                    .count() as u32
            };
            MpReply::Group(
                of.groups()
                    .values()
                    .filter(|g| id == OFPG_ALL || g.id == id)
                    .map(|g| {
                        let (s, ns) = dur(g.created_ms);
                        GroupStats {
                            group_id: g.id,
                            ref_count: refs(g.id),
                            packet_count: g.packet_count,
                            byte_count: g.byte_count,
                            duration_sec: s,
                            duration_nsec: ns,
                            buckets: g
                                .bucket_packets
                                .iter()
                                .zip(g.bucket_bytes.iter())
                                .map(|(p, by)| (*p, *by))
                                .collect(),
                        }
                    })
                    .collect(),
            )
        }
        MpRequest::GroupDesc(id) => {
            let of = b.udpif.of();
            MpReply::GroupDesc(
                of.groups()
                    .values()
                    .filter(|g| id == OFPG_ALL || g.id == id)
                    .map(|g| GroupDesc {
                        group_type: g.kind,
                        group_id: g.id,
                        buckets: g.buckets.clone(),
                    })
                    .collect(),
            )
        }
        MpRequest::GroupFeatures => MpReply::GroupFeatures(GroupFeatures {
            types: 0xf,
            capabilities: 0xf,
            max_groups: [65535; 4],
            // Every OpenFlow 1.3 action type (bit = type number).
            actions: [0x03ff_fff9; 4],
        }),
        MpRequest::Meter(id) => {
            let of = b.udpif.of();
            let counts = of.meter_flow_counts();
            MpReply::Meter(
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
                    .collect(),
            )
        }
        MpRequest::MeterConfig(id) => {
            let of = b.udpif.of();
            MpReply::MeterConfig(
                of.meter_specs()
                    .iter()
                    .filter(|(k, _)| id == OFPM_ALL || **k == id)
                    .map(|(k, mm)| MeterConfig {
                        flags: mm.flags.0,
                        meter_id: *k,
                        bands: mm.bands.clone(),
                    })
                    .collect(),
            )
        }
        MpRequest::MeterFeatures => MpReply::MeterFeatures(MeterFeatures {
            max_meter: 65536,
            band_types: (1 << 1) | (1 << 2),
            capabilities: 0xf,
            max_bands: 8,
            max_color: 0,
            features: 0,
        }),
        MpRequest::Experimenter(_) => {
            return Err(OfError::bad_request(bad_request::BAD_EXPERIMENTER));
        }
        MpRequest::TableDesc => {
            let recs = super::status::table_descs(b);
            // A few dozen bytes per table: several messages.
            let chunks: Vec<&[TableDesc]> = recs.chunks(100).collect();
            let n = chunks.len();
            for (i, ch) in chunks.into_iter().enumerate() {
                let m = Message::MultipartReply(MultipartReply {
                    flags: u16::from(i + 1 < n),
                    body: MpReply::TableDesc(ch.to_vec()),
                });
                if let Ok(bytes) = wire::encode(&m, c.version(), xid) {
                    c.send_raw(bytes);
                }
            }
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
        MpRequest::QueueDesc { .. } => MpReply::QueueDesc(Vec::new()),
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
            let recs: Vec<FlowStats15> = selected_rules(b, &r)
                .into_iter()
                .map(|rule| {
                    let (packets, bytes, used) = rule.stats.get();
                    let (s, ns) = dur(rule.created_ms);
                    let idle = now.saturating_sub(if used == 0 { rule.created_ms } else { used });
                    FlowStats15 {
                        table_id: rule.table_id,
                        reason: 0,
                        priority: rule.priority,
                        match_: rule.match_.clone(),
                        stats: OxsStats {
                            duration_sec: s,
                            duration_nsec: ns,
                            idle_time: Some((
                                (idle / 1000) as u32,
                                ((idle % 1000) * 1_000_000) as u32,
                            )),
                            flow_count: None,
                            packet_count: packets,
                            byte_count: bytes,
                        },
                    }
                })
                .collect();
            let chunks: Vec<&[FlowStats15]> = recs.chunks(FLOWS_PER_REPLY).collect();
            let n = chunks.len().max(1);
            for i in 0..n {
                let m = Message::MultipartReply(MultipartReply {
                    flags: u16::from(i + 1 < n),
                    body: MpReply::FlowStats15(chunks.get(i).map_or(Vec::new(), |x| x.to_vec())),
                });
                if let Ok(bytes) = wire::encode(&m, c.version(), xid) {
                    c.send_raw(bytes);
                }
            }
            return Ok(());
        }
    };
    send_mp(c, xid, body);
    Ok(())
}

/// The table-features properties a reader requires (OpenFlow 1.3 §7.3.5.5): instructions,
/// next tables, write/apply actions, match, wildcards, write/apply set-field.
fn table_feature_props(id: u8, version: u8) -> Vec<wire::Prop> {
    let ids16 = |ts: &[u16]| -> Vec<u8> {
        ts.iter()
            .flat_map(|t| {
                let mut v = t.to_be_bytes().to_vec();
                v.extend_from_slice(&4u16.to_be_bytes());
                v
            })
            .collect()
    };
    let instructions = ids16(&[1, 2, 3, 4, 5, 6]);
    let mut action_types = vec![
        0, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
    ];
    if version >= wire::OFP15 {
        // OFPAT_METER: in 1.5 a meter is an action.
        action_types.push(29);
    }
    let actions = ids16(&action_types);
    let next: Vec<u8> = (id.saturating_add(1)..254).collect();
    let oxm = |masked: bool| -> Vec<u8> {
        Field::ALL
            .iter()
            .filter(|f| f.oxm().0 == 0x8000)
            .flat_map(|f| {
                let (class, field) = f.oxm();
                let m = masked && f.maskable();
                let len = f.wire_len() * if m { 2 } else { 1 };
                let h = (u32::from(class) << 16)
                    | (u32::from(field) << 9)
                    | (u32::from(m) << 8)
                    | (len as u32 & 0xff);
                h.to_be_bytes()
            })
            .collect()
    };
    let prop = |type_: u16, data: Vec<u8>| wire::Prop { type_, data };
    vec![
        prop(0, instructions),
        prop(2, next),
        prop(4, actions.clone()),
        prop(6, actions),
        prop(8, oxm(true)),
        prop(10, oxm(false)),
        prop(12, oxm(false)),
        prop(14, oxm(false)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action_ids(props: &[wire::Prop], type_: u16) -> Vec<u16> {
        props
            .iter()
            .find(|p| p.type_ == type_)
            .map(|p| {
                p.data
                    .chunks(4)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn the_meter_action_is_advertised_from_openflow15_on() {
        for (version, want) in [
            (wire::OFP13, false),
            (wire::OFP14, false),
            (wire::OFP15, true),
        ] {
            let props = table_feature_props(0, version);
            // Write-actions (4) and apply-actions (6) list the same action types.
            for t in [4, 6] {
                let ids = action_ids(&props, t);
                assert!(ids.contains(&0), "output always listed");
                assert_eq!(ids.contains(&29), want, "version {version} property {t}");
            }
        }
    }
}
