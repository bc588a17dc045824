//! [`Message`], the message type numbers of each version, and the dispatch between them:
//! which body codec a header's type selects on decode, and which type and body a message
//! gets on encode.
//!
//! OpenFlow 1.0 and 1.1+ share the numbers 0-14 (hello to flow_mod) and differ above:
//! 1.0's port_mod, stats, barrier and queue get-config are 15-21, where 1.1+ has group_mod,
//! port_mod, table_mod, multipart, barrier, queue get-config, role, async and meter_mod
//! (15-29), then bundles (33, 34) and 1.4's and 1.5's additions ([`super::of14`]). The
//! header's version picks the numbering; a number the version does not define is
//! `BadType`.
//!
//! Decoding ([`decode_frame`]) requires the body to be used completely (`BadLength`
//! otherwise). Encoding ([`encode`]) first settles the message's type number, refusing a
//! message the version cannot carry (`NotInVersion`) before any body byte is written,
//! then writes the body. Experimenter messages are dispatched on their id: Nicira's to
//! [`super::nicira`] (except 1.0's `NXT_GROUP_MOD`, which is a [`Message::GroupMod`] or
//! [`Message::GroupBucketMod`] like 1.1+'s group_mod), OpenFlow 1.3's ONF bundle messages
//! to the bundle codec, any other kept raw.

use super::buf::{Rd, W};
use super::msg::{
    self, AsyncConfig, BundleAdd, BundleControl, ErrorMsg, Experimenter, FlowRemoved, Hello,
    PacketIn, PacketOut, PortMod, PortStatus, RoleMsg, SwitchConfig, SwitchFeatures, TableMod,
};
use super::multipart::{self, MultipartReply, MultipartRequest};
use super::nicira::{self, NxMessage};
use super::{action, of14, DecodeError, EncodeError, Header, HEADER_LEN};
use super::{OFP10, OFP13, OFP14, OFP15, VERSIONS};
use crate::messages::{FlowMod, GroupBucketMod, GroupMod, MeterMod};

/// Every message a switch receives or sends.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Message {
    /// `OFPT_HELLO`.
    Hello(Hello),
    /// `OFPT_ERROR`.
    Error(ErrorMsg),
    /// `OFPT_ECHO_REQUEST` with its payload.
    EchoRequest(Vec<u8>),
    /// `OFPT_ECHO_REPLY` with its payload.
    EchoReply(Vec<u8>),
    /// `OFPT_EXPERIMENTER` / `OFPT_VENDOR` (other than the Nicira messages we know).
    Experimenter(Experimenter),
    /// `OFPT_FEATURES_REQUEST`.
    FeaturesRequest,
    /// `OFPT_FEATURES_REPLY`.
    FeaturesReply(SwitchFeatures),
    /// `OFPT_GET_CONFIG_REQUEST`.
    GetConfigRequest,
    /// `OFPT_GET_CONFIG_REPLY`.
    GetConfigReply(SwitchConfig),
    /// `OFPT_SET_CONFIG`.
    SetConfig(SwitchConfig),
    /// `OFPT_PACKET_IN`.
    PacketIn(PacketIn),
    /// `OFPT_FLOW_REMOVED`.
    FlowRemoved(FlowRemoved),
    /// `OFPT_PORT_STATUS`.
    PortStatus(PortStatus),
    /// `OFPT_PACKET_OUT`.
    PacketOut(PacketOut),
    /// `OFPT_FLOW_MOD`.
    FlowMod(FlowMod),
    /// `OFPT_GROUP_MOD` (1.1+).
    GroupMod(GroupMod),
    /// `OFPT_GROUP_MOD` (1.5) inserting or removing buckets.
    GroupBucketMod(GroupBucketMod),
    /// `OFPT_PORT_MOD`.
    PortMod(PortMod),
    /// `OFPT_TABLE_MOD` (1.1+).
    TableMod(TableMod),
    /// `OFPT_MULTIPART_REQUEST` / `OFPT_STATS_REQUEST`.
    MultipartRequest(MultipartRequest),
    /// `OFPT_MULTIPART_REPLY` / `OFPT_STATS_REPLY`.
    MultipartReply(MultipartReply),
    /// `OFPT_BARRIER_REQUEST`.
    BarrierRequest,
    /// `OFPT_BARRIER_REPLY`.
    BarrierReply,
    /// `OFPT_QUEUE_GET_CONFIG_REQUEST` (1.0-1.3) for a port.
    QueueGetConfigRequest(u32),
    /// `OFPT_QUEUE_GET_CONFIG_REPLY` (1.0-1.3): port and the raw queue descriptions.
    QueueGetConfigReply {
        /// Port.
        port: u32,
        /// `ofp_packet_queue` records, raw.
        queues: Vec<u8>,
    },
    /// `OFPT_ROLE_REQUEST` (1.2+).
    RoleRequest(RoleMsg),
    /// `OFPT_ROLE_REPLY` (1.2+).
    RoleReply(RoleMsg),
    /// `OFPT_GET_ASYNC_REQUEST` (1.3+).
    GetAsyncRequest,
    /// `OFPT_GET_ASYNC_REPLY` (1.3+).
    GetAsyncReply(AsyncConfig),
    /// `OFPT_SET_ASYNC` (1.3+).
    SetAsync(AsyncConfig),
    /// `OFPT_METER_MOD` (1.3+).
    MeterMod(MeterMod),
    /// `OFPT_BUNDLE_CONTROL` (1.4+; in 1.3 the ONF extension `ONFT_BUNDLE_CONTROL`).
    BundleControl(BundleControl),
    /// `OFPT_BUNDLE_ADD_MESSAGE` (1.4+; in 1.3 the ONF extension `ONFT_BUNDLE_ADD_MESSAGE`).
    BundleAdd(BundleAdd),
    /// `OFPT_ROLE_STATUS` (1.4+).
    RoleStatus(of14::RoleStatus),
    /// `OFPT_TABLE_STATUS` (1.4+).
    TableStatus(of14::TableStatus),
    /// `OFPT_REQUESTFORWARD` (1.4+): the forwarded request, a whole message.
    RequestForward(Vec<u8>),
    /// `OFPT_CONTROLLER_STATUS` (1.5).
    ControllerStatus(of14::ControllerStatus),
    /// A Nicira extension message.
    Nx(NxMessage),
}

/// OpenFlow 1.1+ message type numbers.
mod t {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const GROUP_MOD: u8 = 15;
    pub const PORT_MOD: u8 = 16;
    pub const TABLE_MOD: u8 = 17;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
    pub const GET_ASYNC_REQUEST: u8 = 26;
    pub const GET_ASYNC_REPLY: u8 = 27;
    pub const SET_ASYNC: u8 = 28;
    pub const METER_MOD: u8 = 29;
    pub const BUNDLE_CONTROL: u8 = 33;
    pub const BUNDLE_ADD: u8 = 34;
}

/// OpenFlow 1.0 numbers that differ from 1.1+.
mod t10 {
    pub const PORT_MOD: u8 = 15;
    pub const STATS_REQUEST: u8 = 16;
    pub const STATS_REPLY: u8 = 17;
    pub const BARRIER_REQUEST: u8 = 18;
    pub const BARRIER_REPLY: u8 = 19;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 20;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 21;
}

/// Decode one message from the front of `bytes`; returns it and the bytes it used.
pub fn decode(bytes: &[u8]) -> Result<(Message, usize), DecodeError> {
    decode_frame(bytes).map(|(_, m, n)| (m, n))
}

/// [`decode`], also returning the header (version and xid for the reply).
pub fn decode_frame(bytes: &[u8]) -> Result<(Header, Message, usize), DecodeError> {
    let h = Header::parse(bytes)?;
    let n = usize::from(h.length);
    let body = bytes.get(HEADER_LEN..n).ok_or(DecodeError::Truncated)?;
    let mut rd = Rd::new(body, DecodeError::BadLength);
    let m = decode_body(h, &mut rd)?;
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok((h, m, n))
}

fn decode_body(h: Header, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    let v = h.version;
    if h.type_ == t::HELLO && v != 0 {
        return Ok(Message::Hello(msg::decode_hello(rd)?));
    }
    if !VERSIONS.contains(&v) {
        return Err(DecodeError::BadVersion(v));
    }
    match h.type_ {
        ty @ 0..=t::FLOW_MOD => decode_common(v, ty, rd),
        ty if v == OFP10 => decode_of10(ty, rd),
        ty => decode_of11(v, ty, rd),
    }
}

/// A message that must have no body.
fn empty(rd: &mut Rd<'_>, m: Message) -> Result<Message, DecodeError> {
    if rd.is_empty() {
        Ok(m)
    } else {
        Err(DecodeError::BadLength)
    }
}

/// The types every version numbers alike (hello is handled before).
fn decode_common(v: u8, ty: u8, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    Ok(match ty {
        t::ERROR => Message::Error(msg::decode_error(v, rd)?),
        t::ECHO_REQUEST => Message::EchoRequest(rd.rest().to_vec()),
        t::ECHO_REPLY => Message::EchoReply(rd.rest().to_vec()),
        t::EXPERIMENTER => decode_experimenter(v, rd)?,
        t::FEATURES_REQUEST => empty(rd, Message::FeaturesRequest)?,
        t::FEATURES_REPLY => Message::FeaturesReply(msg::decode_features(v, rd)?),
        t::GET_CONFIG_REQUEST => empty(rd, Message::GetConfigRequest)?,
        t::GET_CONFIG_REPLY => Message::GetConfigReply(msg::decode_switch_config(rd)?),
        t::SET_CONFIG => Message::SetConfig(msg::decode_switch_config(rd)?),
        t::PACKET_IN => Message::PacketIn(msg::decode_packet_in(v, rd)?),
        t::FLOW_REMOVED => Message::FlowRemoved(msg::decode_flow_removed(v, rd)?),
        t::PORT_STATUS => Message::PortStatus(msg::decode_port_status(v, rd)?),
        t::PACKET_OUT => Message::PacketOut(msg::decode_packet_out(v, rd)?),
        t::FLOW_MOD => Message::FlowMod(msg::decode_flow_mod(v, rd)?),
        _ => return Err(DecodeError::BadType(ty)),
    })
}

/// Experimenter (vendor) messages: Nicira's, OpenFlow 1.3's ONF bundle messages, or raw.
fn decode_experimenter(v: u8, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    let e = rd.u32()?;
    let sub = rd.u32()?;
    let onf13 = e == msg::ONF_EXPERIMENTER_ID && v == OFP13;
    Ok(
        if e == action::NX_VENDOR_ID && sub == NXT_GROUP_MOD && v == OFP10 {
            group_mod(v, rd)?
        } else if e == action::NX_VENDOR_ID {
            Message::Nx(nicira::decode_nx(v, sub, rd)?)
        } else if onf13 && sub == msg::ONFT_BUNDLE_CONTROL {
            Message::BundleControl(msg::decode_bundle_ctrl(rd)?)
        } else if onf13 && sub == msg::ONFT_BUNDLE_ADD {
            Message::BundleAdd(msg::decode_bundle_add(rd)?)
        } else {
            Message::Experimenter(Experimenter {
                experimenter: e,
                exp_type: sub,
                data: rd.rest().to_vec(),
            })
        },
    )
}

/// OpenFlow 1.0's types above flow_mod.
fn decode_of10(ty: u8, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    let v = OFP10;
    Ok(match ty {
        t10::PORT_MOD => Message::PortMod(msg::decode_port_mod(v, rd)?),
        t10::STATS_REQUEST => Message::MultipartRequest(multipart::decode_mp_request(v, rd)?),
        t10::STATS_REPLY => Message::MultipartReply(multipart::decode_mp_reply(v, rd)?),
        t10::BARRIER_REQUEST => empty(rd, Message::BarrierRequest)?,
        t10::BARRIER_REPLY => empty(rd, Message::BarrierReply)?,
        t10::QUEUE_GET_CONFIG_REQUEST => {
            Message::QueueGetConfigRequest(msg::decode_queue_get_config_request(v, rd)?)
        }
        t10::QUEUE_GET_CONFIG_REPLY => {
            let (port, queues) = msg::decode_queue_get_config_reply(v, rd)?;
            Message::QueueGetConfigReply { port, queues }
        }
        _ => return Err(DecodeError::BadType(ty)),
    })
}

/// A group_mod body (1.1+'s `OFPT_GROUP_MOD`, 1.0's `NXT_GROUP_MOD` after its subtype).
fn group_mod(v: u8, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    Ok(match msg::decode_group_mod(v, rd)? {
        msg::AnyGroupMod::Group(g) => Message::GroupMod(g),
        msg::AnyGroupMod::Buckets(g) => Message::GroupBucketMod(g),
    })
}

/// OpenFlow 1.1+'s types above flow_mod (1.3, 1.4, 1.5).
fn decode_of11(v: u8, ty: u8, rd: &mut Rd<'_>) -> Result<Message, DecodeError> {
    Ok(match ty {
        t::GROUP_MOD => group_mod(v, rd)?,
        t::PORT_MOD => Message::PortMod(msg::decode_port_mod(v, rd)?),
        t::TABLE_MOD => Message::TableMod(msg::decode_table_mod(v, rd)?),
        t::MULTIPART_REQUEST => Message::MultipartRequest(multipart::decode_mp_request(v, rd)?),
        t::MULTIPART_REPLY => Message::MultipartReply(multipart::decode_mp_reply(v, rd)?),
        t::BARRIER_REQUEST => empty(rd, Message::BarrierRequest)?,
        t::BARRIER_REPLY => empty(rd, Message::BarrierReply)?,
        t::QUEUE_GET_CONFIG_REQUEST if v == OFP13 => {
            Message::QueueGetConfigRequest(msg::decode_queue_get_config_request(v, rd)?)
        }
        t::QUEUE_GET_CONFIG_REPLY if v == OFP13 => {
            let (port, queues) = msg::decode_queue_get_config_reply(v, rd)?;
            Message::QueueGetConfigReply { port, queues }
        }
        t::ROLE_REQUEST => Message::RoleRequest(msg::decode_role(v, rd)?),
        t::ROLE_REPLY => Message::RoleReply(msg::decode_role(v, rd)?),
        t::GET_ASYNC_REQUEST => empty(rd, Message::GetAsyncRequest)?,
        t::GET_ASYNC_REPLY => Message::GetAsyncReply(msg::decode_async(v, rd)?),
        t::SET_ASYNC => Message::SetAsync(msg::decode_async(v, rd)?),
        t::METER_MOD => Message::MeterMod(msg::decode_meter_mod(rd)?),
        t::BUNDLE_CONTROL if v >= OFP14 => Message::BundleControl(msg::decode_bundle_ctrl(rd)?),
        t::BUNDLE_ADD if v >= OFP14 => Message::BundleAdd(msg::decode_bundle_add(rd)?),
        of14::t::ROLE_STATUS if v >= OFP14 => Message::RoleStatus(of14::decode_role_status(rd)?),
        of14::t::TABLE_STATUS if v >= OFP14 => Message::TableStatus(of14::decode_table_status(rd)?),
        of14::t::REQUESTFORWARD if v >= OFP14 => {
            Message::RequestForward(of14::decode_requestforward(rd)?)
        }
        of14::t::CONTROLLER_STATUS if v >= OFP15 => {
            Message::ControllerStatus(of14::decode_controller_status_msg(rd)?)
        }
        _ => return Err(DecodeError::BadType(ty)),
    })
}

/// Encode `m` as a `version` message with transaction id `xid`.
pub fn encode(m: &Message, version: u8, xid: u32) -> Result<Vec<u8>, EncodeError> {
    let hello = matches!(m, Message::Hello(_));
    if !(VERSIONS.contains(&version) || (hello && version != 0)) {
        return Err(EncodeError::BadVersion(version));
    }
    let ty = message_type(m, version)?;
    let mut out = Vec::with_capacity(64);
    out.u8(version);
    out.u8(ty);
    out.u16(0);
    out.u32(xid);
    encode_body(&mut out, m, version)?;
    if out.len() > usize::from(u16::MAX) {
        return Err(EncodeError::TooLong);
    }
    let len = out.len();
    out.patch_u16(2, len);
    Ok(out)
}

/// `ty`, if version `v` has the message (`min` and later), else `NotInVersion(what)`.
fn since(v: u8, min: u8, what: &'static str, ty: u8) -> Result<u8, EncodeError> {
    if v < min {
        return Err(EncodeError::NotInVersion(what));
    }
    Ok(ty)
}

/// The type number `m` has in version `v`, or why `v` cannot carry it (the body codecs
/// may still refuse what the body holds).
fn message_type(m: &Message, v: u8) -> Result<u8, EncodeError> {
    let pick = |a: u8, b: u8| if v == OFP10 { a } else { b };
    let bundle = |ty| if v == OFP13 { t::EXPERIMENTER } else { ty };
    let queue = |a, b| {
        if v > OFP13 {
            return Err(EncodeError::NotInVersion("queue_get_config"));
        }
        Ok(pick(a, b))
    };
    Ok(match m {
        Message::Hello(_) => t::HELLO,
        Message::Error(_) => t::ERROR,
        Message::EchoRequest(_) => t::ECHO_REQUEST,
        Message::EchoReply(_) => t::ECHO_REPLY,
        Message::Experimenter(_) | Message::Nx(_) => t::EXPERIMENTER,
        Message::FeaturesRequest => t::FEATURES_REQUEST,
        Message::FeaturesReply(_) => t::FEATURES_REPLY,
        Message::GetConfigRequest => t::GET_CONFIG_REQUEST,
        Message::GetConfigReply(_) => t::GET_CONFIG_REPLY,
        Message::SetConfig(_) => t::SET_CONFIG,
        Message::PacketIn(_) => t::PACKET_IN,
        Message::FlowRemoved(_) => t::FLOW_REMOVED,
        Message::PortStatus(_) => t::PORT_STATUS,
        Message::PacketOut(_) => t::PACKET_OUT,
        Message::FlowMod(_) => t::FLOW_MOD,
        Message::GroupMod(_) | Message::GroupBucketMod(_) => pick(t::EXPERIMENTER, t::GROUP_MOD),
        Message::PortMod(_) => pick(t10::PORT_MOD, t::PORT_MOD),
        Message::TableMod(_) => since(v, OFP13, "table_mod", t::TABLE_MOD)?,
        Message::MultipartRequest(_) => pick(t10::STATS_REQUEST, t::MULTIPART_REQUEST),
        Message::MultipartReply(_) => pick(t10::STATS_REPLY, t::MULTIPART_REPLY),
        Message::BarrierRequest => pick(t10::BARRIER_REQUEST, t::BARRIER_REQUEST),
        Message::BarrierReply => pick(t10::BARRIER_REPLY, t::BARRIER_REPLY),
        Message::QueueGetConfigRequest(_) => {
            queue(t10::QUEUE_GET_CONFIG_REQUEST, t::QUEUE_GET_CONFIG_REQUEST)?
        }
        Message::QueueGetConfigReply { .. } => {
            queue(t10::QUEUE_GET_CONFIG_REPLY, t::QUEUE_GET_CONFIG_REPLY)?
        }
        Message::RoleRequest(_) => since(v, OFP13, ROLE_IN_OF10, t::ROLE_REQUEST)?,
        Message::RoleReply(_) => since(v, OFP13, ROLE_IN_OF10, t::ROLE_REPLY)?,
        Message::GetAsyncRequest => since(v, OFP13, "get_async", t::GET_ASYNC_REQUEST)?,
        Message::GetAsyncReply(_) => since(v, OFP13, "async config", t::GET_ASYNC_REPLY)?,
        Message::SetAsync(_) => since(v, OFP13, "async config", t::SET_ASYNC)?,
        Message::MeterMod(_) => since(v, OFP13, "meter_mod", t::METER_MOD)?,
        Message::BundleControl(_) => since(v, OFP13, "bundle control", bundle(t::BUNDLE_CONTROL))?,
        Message::BundleAdd(_) => since(v, OFP13, "bundle add", bundle(t::BUNDLE_ADD))?,
        Message::RoleStatus(_) => since(v, OFP14, "role status", of14::t::ROLE_STATUS)?,
        Message::TableStatus(_) => since(v, OFP14, "table status", of14::t::TABLE_STATUS)?,
        Message::RequestForward(_) => since(v, OFP14, "request forward", of14::t::REQUESTFORWARD)?,
        Message::ControllerStatus(_) => {
            since(v, OFP15, "controller status", of14::t::CONTROLLER_STATUS)?
        }
    })
}

/// `NXT_GROUP_MOD`: OpenFlow 1.0's group_mod (OpenFlow 1.5's body, 1.0's actions).
pub const NXT_GROUP_MOD: u32 = 31;

/// What refusing a role message in OpenFlow 1.0 says.
const ROLE_IN_OF10: &str = "role request (use the Nicira form)";

/// Append the body of `m` as version `v` lays it out.
fn encode_body(out: &mut Vec<u8>, m: &Message, v: u8) -> Result<(), EncodeError> {
    let onf13 = |out: &mut Vec<u8>, sub| {
        if v == OFP13 {
            out.u32(msg::ONF_EXPERIMENTER_ID);
            out.u32(sub);
        }
    };
    // OpenFlow 1.0's group_mod is Nicira's vendor message.
    let nx_group_mod = |out: &mut Vec<u8>| {
        if v == OFP10 {
            out.u32(action::NX_VENDOR_ID);
            out.u32(NXT_GROUP_MOD);
        }
    };
    match m {
        Message::Hello(h) => msg::encode_hello(out, h),
        Message::Error(e) => msg::encode_error(out, v, e),
        Message::EchoRequest(d) | Message::EchoReply(d) | Message::RequestForward(d) => {
            out.extend_from_slice(d)
        }
        Message::Experimenter(e) => msg::encode_experimenter(out, e),
        Message::FeaturesRequest
        | Message::GetConfigRequest
        | Message::BarrierRequest
        | Message::BarrierReply
        | Message::GetAsyncRequest => {}
        Message::FeaturesReply(f) => msg::encode_features(out, v, f)?,
        Message::GetConfigReply(c) | Message::SetConfig(c) => msg::encode_switch_config(out, c),
        Message::PacketIn(p) => msg::encode_packet_in(out, v, p)?,
        Message::FlowRemoved(f) => msg::encode_flow_removed(out, v, f)?,
        Message::PortStatus(p) => msg::encode_port_status(out, v, p)?,
        Message::PacketOut(p) => msg::encode_packet_out(out, v, p)?,
        Message::FlowMod(f) => msg::encode_flow_mod(out, v, f)?,
        Message::GroupMod(g) => {
            nx_group_mod(out);
            msg::encode_group_mod(out, v, g)?
        }
        Message::GroupBucketMod(g) => {
            nx_group_mod(out);
            msg::encode_group_bucket_mod(out, v, g)?
        }
        Message::PortMod(p) => msg::encode_port_mod(out, v, p)?,
        Message::TableMod(tm) => msg::encode_table_mod(out, v, tm),
        Message::MultipartRequest(r) => multipart::encode_mp_request(out, v, r)?,
        Message::MultipartReply(r) => multipart::encode_mp_reply(out, v, r)?,
        Message::QueueGetConfigRequest(p) => msg::encode_queue_get_config(out, v, *p, None)?,
        Message::QueueGetConfigReply { port, queues } => {
            msg::encode_queue_get_config(out, v, *port, Some(queues))?
        }
        Message::RoleRequest(r) | Message::RoleReply(r) => msg::encode_role(out, v, r),
        Message::GetAsyncReply(a) | Message::SetAsync(a) => msg::encode_async(out, v, a),
        Message::MeterMod(mm) => msg::encode_meter_mod(out, mm),
        Message::BundleControl(b) => {
            onf13(out, msg::ONFT_BUNDLE_CONTROL);
            msg::encode_bundle_ctrl(out, b);
        }
        Message::BundleAdd(b) => {
            onf13(out, msg::ONFT_BUNDLE_ADD);
            msg::encode_bundle_add(out, b);
        }
        Message::Nx(n) => nicira::encode_nx(out, v, n)?,
        Message::RoleStatus(r) => of14::encode_role_status(out, r),
        Message::TableStatus(ts) => of14::encode_table_status(out, ts),
        Message::ControllerStatus(c) => of14::encode_controller_status_msg(out, c),
    }
    Ok(())
}
