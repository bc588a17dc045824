//! Answering one request on an established connection.
//!
//! The session ([`super::session`]) has already negotiated the version, answered echoes
//! and refused messages in another version; what reaches [`request`] is a framed message
//! in the connection's version. It is decoded, checked against the connection's role
//! ([`super::role::Role::permits`]: a slave may not change the switch), and handed to the
//! code for its job: changes to [`super::mods`], packet-outs to [`super::packet_out`],
//! resumed continuations (`NXT_RESUME`) to [`super::resume`],
//! multipart requests to [`super::stats`], bundles to [`super::bundle`]; the rest (switch
//! and connection configuration, roles, barriers) is answered here. Replies and errors go
//! out through the connection's queue in request order.
//!
//! ## Barrier semantics
//! A change marks the connection dirty and asks the revalidator for a round at once
//! (`Udpif::kick`), but does not wait. A barrier (and any flow statistics request, which
//! also needs the counters pushed) waits with `Udpif::sync` until no cached decision made
//! before the changes can still be used, then replies: everything before the barrier is
//! applied *and* in force in the datapath. Packet-outs queued in the connection's batch
//! run before any other request is handled, so they too are complete at the barrier.
//!
//! ## Nicira details for `ovs-ofctl` over OpenFlow 1.0
//! `NXT_FLOW_MOD_TABLE_ID` makes the high byte of a flow_mod's command the table id (for
//! both `OFPT_FLOW_MOD` and `NXT_FLOW_MOD`); without it, adds go to table 0 and
//! modify/delete apply to every table, as OpenFlow 1.0 has no table id.
//! `NXT_SET_FLOW_FORMAT` accepts OpenFlow 1.0 and NXM; `NXT_SET_PACKET_IN_FORMAT` only the
//! standard format. OpenFlow 1.0's port description statistics, which the codec does not
//! decode, are answered by [`super::stats::of10_port_desc`].

use super::conn::{reply_error, Conn, ConnKind};
use super::mods;
use super::packet_out::OutBatch;
use super::{lock, BridgeOf};
use openflow::messages::err::bad_request;
use openflow::messages::OFPTT_ALL;
use openflow::wire::nicira::{self, NxMessage};
use openflow::wire::{self, AsyncConfig, Header, Message};
use openflow::{FlowMod, FlowModCommand, OfError};
use std::sync::Arc;
use std::time::Duration;

/// How long a barrier waits for the datapath caches.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(10);

const OFPT_FLOW_MOD: u8 = 14;
/// `OFPT_PACKET_OUT`, the same in every version.
const OFPT_PACKET_OUT: u8 = 13;
const OFPT10_STATS_REQUEST: u8 = 16;
/// Where an OpenFlow 1.0 flow_mod's command has the table id (with the Nicira extension).
const OF10_TABLE_ID_AT: usize = 56;
/// `OFPC_INVALID_TTL_TO_CONTROLLER`.
const INVALID_TTL_TO_CONTROLLER: u16 = 4;

/// Handles one request; packet-outs are queued in `batch`, which runs before anything else.
pub fn request(b: &Arc<BridgeOf>, c: &Arc<Conn>, h: Header, msg: &[u8], batch: &mut OutBatch) {
    if h.type_ != OFPT_PACKET_OUT {
        batch.flush(b, c);
    }
    let v = c.version();
    let of10_port_desc = super::stats::OF10_PORT_DESC.to_be_bytes();
    if v == wire::OFP10
        && h.type_ == OFPT10_STATS_REQUEST
        && msg.get(8..10) == Some(&of10_port_desc)
    {
        super::stats::of10_port_desc(b, c, h);
        return;
    }
    let (m, of10_table) = match decode(c, h, msg) {
        Ok(x) => x,
        Err(e) => {
            reply_error(c, v, e, msg);
            return;
        }
    };
    let allowed = lock(&c.st).role.permits(&m);
    if let Message::PacketOut(po) = m {
        batch.queue(b, c, po, msg, allowed);
        return;
    }
    let r = allowed.and_then(|()| match m {
        Message::BundleControl(bc) => super::bundle::control(b, c, h.xid, bc, msg),
        Message::BundleAdd(add) => super::bundle::add(c, h.xid, add, msg),
        m => handle(b, c, h.xid, m, of10_table),
    });
    if let Err(e) = r {
        reply_error(c, v, e, msg);
    }
}

/// Decodes a request; for an OpenFlow 1.0 flow_mod also returns the table id in its
/// command's high byte if the connection turned the Nicira extension on (the byte is
/// cleared before decoding either way).
fn decode(c: &Conn, h: Header, msg: &[u8]) -> Result<(Message, Option<u8>), OfError> {
    let mut of10_table = None;
    let decoded = if c.version() == wire::OFP10
        && h.type_ == OFPT_FLOW_MOD
        && msg.len() >= OF10_TABLE_ID_AT + 2
    {
        let mut m = msg.to_vec();
        if lock(&c.st).table_id_ext {
            of10_table = m.get(OF10_TABLE_ID_AT).copied();
        }
        if let Some(x) = m.get_mut(OF10_TABLE_ID_AT) {
            *x = 0;
        }
        wire::decode_frame(&m)
    } else {
        wire::decode_frame(msg)
    };
    match decoded {
        Ok((_, m, _)) => Ok((m, of10_table)),
        Err(e) => Err(e.to_of_error()),
    }
}

/// Marks the connection as having changed the switch (see the module documentation).
pub(super) fn changed(b: &BridgeOf, c: &Conn) {
    lock(&c.st).dirty = true;
    b.udpif.kick_soon();
}

/// Waits for the datapath to reflect every change this connection made.
pub(super) fn sync(b: &BridgeOf, c: &Conn, force: bool) {
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

/// Handles a decoded request the role allows.
fn handle(
    b: &Arc<BridgeOf>,
    c: &Arc<Conn>,
    xid: u32,
    m: Message,
    of10_table: Option<u8>,
) -> Result<(), OfError> {
    match m {
        // The session answers echoes and takes hellos; errors need no answer.
        Message::Hello(_) | Message::EchoRequest(_) | Message::EchoReply(_) => {}
        Message::Error(_) => {}
        Message::FeaturesRequest => features(b, c, xid),
        Message::GetConfigRequest => get_config(b, c, xid),
        Message::SetConfig(cfg) => set_config(b, c, cfg),
        Message::FlowMod(mut fm) => {
            if c.version() == wire::OFP10 {
                of10_table_id(&mut fm, of10_table);
            }
            mods::flow_mod(b, c, &fm)?;
        }
        Message::Nx(nx) => nicira(b, c, xid, nx)?,
        m @ (Message::GroupMod(_) | Message::GroupBucketMod(_) | Message::MeterMod(_)) => {
            mods::group_or_meter_mod(b, c, xid, m)?;
        }
        Message::PortMod(pm) => mods::port_mod(b, c, &pm)?,
        Message::TableMod(tm) => mods::table_mod(b, c, &tm)?,
        // Queued by `request`.
        Message::PacketOut(_) => {}
        Message::MultipartRequest(r) => super::stats::multipart(b, c, xid, r)?,
        Message::BarrierRequest => {
            sync(b, c, false);
            c.send(&Message::BarrierReply, xid);
        }
        Message::QueueGetConfigRequest(port) => {
            super::stats::no_queues(b, port, u32::MAX)?;
            let queues = Vec::new();
            c.send(&Message::QueueGetConfigReply { port, queues }, xid);
        }
        Message::RoleRequest(r) => role(b, c, xid, r)?,
        Message::GetAsyncRequest => get_async(c, xid),
        Message::SetAsync(a) => set_async(c, a),
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

fn features(b: &BridgeOf, c: &Conn, xid: u32) {
    let v = c.version();
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
        capabilities: capabilities(v),
        actions: if v == wire::OFP10 { 0xfff } else { 0 },
        ports,
    };
    c.send(&Message::FeaturesReply(f), xid);
}

/// The features reply's capabilities, OVS's: flow, table, port and queue statistics (the
/// queue requests are answered, with no queues); in 1.0 ARP address matching (bit 7, which
/// later versions dropped), from 1.1 group statistics (1.0's bit 3 is STP), from 1.4
/// bundles (`OFPC_BUNDLES`, bit 9).
fn capabilities(version: u8) -> u32 {
    const STATS: u32 = 0x1 | 0x2 | 0x4 | 0x40;
    match version {
        wire::OFP10 => STATS | 0x80,
        wire::OFP13 => STATS | 0x8,
        _ => STATS | 0x8 | 0x200,
    }
}

fn get_config(b: &BridgeOf, c: &Conn, xid: u32) {
    let ttl = b.udpif.of().invalid_ttl_to_controller;
    let cfg = wire::SwitchConfig {
        flags: if ttl && c.version() != wire::OFP10 {
            INVALID_TTL_TO_CONTROLLER
        } else {
            0
        },
        miss_send_len: lock(&c.st).miss_send_len,
    };
    c.send(&Message::GetConfigReply(cfg), xid);
}

fn set_config(b: &BridgeOf, c: &Conn, cfg: wire::SwitchConfig) {
    lock(&c.st).miss_send_len = cfg.miss_send_len;
    if c.version() != wire::OFP10 {
        b.udpif.of().invalid_ttl_to_controller = cfg.flags & INVALID_TTL_TO_CONTROLLER != 0;
        changed(b, c);
    }
}

/// Nicira extension messages (see the module documentation).
fn nicira(b: &BridgeOf, c: &Conn, xid: u32, nx: NxMessage) -> Result<(), OfError> {
    match nx {
        NxMessage::FlowMod(mut fm) => {
            let ext = lock(&c.st).table_id_ext;
            let t = fm.table_id;
            of10_table_id(&mut fm, ext.then_some(t));
            mods::flow_mod(b, c, &fm)?;
        }
        NxMessage::SetFlowFormat(f) => {
            if f != 0 && f != 2 {
                return Err(OfError::bad_request(bad_request::EPERM));
            }
            lock(&c.st).flow_format = f;
        }
        NxMessage::FlowModTableId(on) => lock(&c.st).table_id_ext = on,
        NxMessage::SetPacketInFormat(f) => {
            // Standard or NXT_PACKET_IN2 (OVN asks for it); the 1.0-era NXT_PACKET_IN is
            // not offered.
            if f != nicira::NXPIF_STANDARD && f != nicira::NXPIF_NXT_PACKET_IN2 {
                return Err(OfError::bad_request(bad_request::EPERM));
            }
            lock(&c.st).packet_in_format = f;
        }
        NxMessage::SetControllerId(id) => lock(&c.st).controller_id = id,
        NxMessage::TlvTableMod { command, maps } => b.udpif.tlv_mod(command, &maps)?,
        NxMessage::TlvTableRequest => {
            let maps = b.udpif.of().tlv.maps();
            let reply = NxMessage::TlvTableReply {
                max_option_space: ofproto::tlv::MAX_OPTION_SPACE,
                max_fields: openflow::wire::nicira::TUN_METADATA_NUM_OPTS,
                maps,
            };
            c.send(&Message::Nx(reply), xid);
        }
        // Every connection of the zone goes (OVN sends it for each zone it allocates); with
        // no tracker made yet there is none to flush.
        NxMessage::CtFlushZone(zone) => {
            if let Some(ct) = datapath::ct::tracker_if_made() {
                ct.flush(conntrack::Flush::Zone(zone));
            }
        }
        NxMessage::Resume(p) => super::resume::resume(b, p)?,
        // Replies and packet-ins are the switch's to send.
        NxMessage::TlvTableReply { .. } | NxMessage::PacketIn2(_) => {
            return Err(OfError::bad_request(bad_request::BAD_TYPE));
        }
    }
    Ok(())
}

/// A role request: decided by the bridge's election ([`super::role`]), applied to this
/// connection and, when it takes over as master, to the others (which are told, from
/// OpenFlow 1.4 on, with a role status).
fn role(b: &BridgeOf, c: &Conn, xid: u32, r: wire::RoleMsg) -> Result<(), OfError> {
    let (grant, demoted) = {
        // The election lock is held until every connection has its new role, so two
        // requests cannot interleave.
        let mut election = lock(&b.roles);
        let current = lock(&c.st).role;
        let grant = election.request(current, &r)?;
        let mut demoted = Vec::new();
        if grant.takes_over {
            for other in lock(&b.conns).iter().filter(|o| o.id != c.id) {
                let mut st = lock(&other.st);
                let new = grant.other(st.role);
                if new != st.role {
                    st.role = new;
                    demoted.push(Arc::clone(other));
                }
            }
        }
        lock(&c.st).role = grant.role;
        (grant, demoted)
    };
    super::status::role_demoted(&demoted, grant.generation_id);
    let reply = wire::RoleMsg {
        role: grant.role.wire(),
        short_id: 0,
        generation_id: grant.generation_id,
    };
    c.send(&Message::RoleReply(reply), xid);
    Ok(())
}

fn get_async(c: &Conn, xid: u32) {
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

/// An asynchronous configuration (OpenFlow 1.3's `OFPT_SET_ASYNC`, 1.4's, Nicira's) replaces
/// the masks it names. A management client that sends one has asked for asynchronous
/// messages: a miss_send_len still 0 becomes 128, as OVS 3.1 sets it for a service connection.
fn set_async(c: &Conn, a: AsyncConfig) {
    let mut st = lock(&c.st);
    for (t, mask) in a.masks {
        if let Some(x) = st.async_masks.get_mut(usize::from(t)) {
            *x = mask;
        }
    }
    if c.kind == ConnKind::Mgmt && st.miss_send_len == 0 {
        st.miss_send_len = 128;
    }
}
