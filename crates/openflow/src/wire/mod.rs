//! The OpenFlow wire codec: bytes ⇄ [`Message`], for OpenFlow 1.0, 1.3, 1.4 and 1.5
//! plus the Nicira extensions `ovs-ofctl` uses by default.
//!
//! ## Framing
//! Every OpenFlow message starts with an 8-byte header: version, type, 16-bit total
//! length (header included) and a 32-bit transaction id. [`frame_len`] looks at the front
//! of a byte stream and says whether a whole message is there (lengths below 8 are a
//! [`DecodeError::BadLength`]; a u16 cannot exceed 65535, and the encoder refuses to
//! produce more). [`split`] cuts a buffer into complete messages. [`decode`] decodes one
//! message and reports how many bytes it used, so a connection can loop over a buffer.
//!
//! ## Versions
//! [`Message`] is version-independent: a flow_mod is the model's [`FlowMod`] whatever the
//! version it came in; ports are 32-bit (OpenFlow 1.0's reserved 16-bit ports are mapped
//! with `port_from_of10`); OpenFlow 1.0's fixed match becomes a [`Match`]. [`encode`]
//! takes the version to write and fails with an [`EncodeError`] when the message cannot be
//! said in it (a group_mod in 1.0, a 1.0 match field it lacks...). The header's version
//! selects the layout on decode; hello decodes at any version (that is how negotiation
//! starts), every other message only at 1.0 (0x01), 1.3 (0x04), 1.4 (0x05), 1.5 (0x06).
//!
//! What is covered: hello (version bitmap), error (incl. experimenter errors), echo,
//! experimenter/vendor, features, get/set config, packet-in, flow-removed, port-status,
//! packet-out (1.5: with match), flow_mod, group_mod (1.5 bucket format), port_mod,
//! table_mod, multipart/stats (see [`multipart`]), barrier, queue get-config (raw
//! queues), role, get/set async, meter_mod, bundle control/add (OpenFlow 1.3: the ONF
//! experimenter form `ovs-ofctl -O OpenFlow13 --bundle` sends, same body), 1.4's
//! role-status, table-status and requestforward and 1.5's controller-status ([`of14`]),
//! and the Nicira messages of [`nicira`]. Details of
//! each structure are in the submodules' notes: [`oxm`] (matches), [`action`]
//! (actions and instructions), [`port`], [`msg`], [`multipart`], [`nicira`].
//!
//! ## Totality
//! Decoding never panics and never allocates more than the input's size: all reads go
//! through a bounds-checked cursor (`buf::Rd`), every length field is checked against
//! the bytes actually present before it is used, and every unknown type, field, action or
//! instruction is a typed [`DecodeError`]. [`DecodeError::to_of_error`] names the
//! `OFPT_ERROR` type/code to answer with (OpenFlow 1.3 numbering; [`of_error_to_wire`]
//! translates for a 1.0 peer), and [`error_reply`] builds that reply. Fixed-size
//! messages must be exactly their size; trailing bytes are `BadLength`.
//!
//! Round trips: `encode(decode(x))` reproduces `x` byte for byte when `x` is canonical
//! (zero padding, fields in canonical order, OpenFlow 1.0 wildcards written the standard
//! way, instructions in execution order); otherwise `decode(encode(decode(x)))` equals
//! `decode(x)`. OpenFlow 1.4's flow_mod `importance` is not in the model and is written
//! as 0.

pub mod action;
mod buf;
pub mod error;
pub mod monitor;
pub mod msg;
pub mod multipart;
pub mod nicira;
pub mod of14;
pub mod oxm;
pub mod port;

use buf::{Rd, W};
pub use error::{DecodeError, EncodeError};
pub use msg::{
    AsyncConfig, BundleAdd, BundleControl, ErrorMsg, Experimenter, FlowRemoved, Hello, PacketIn,
    PacketOut, PortMod, PortStatus, RoleMsg, SwitchConfig, SwitchFeatures, TableMod,
};
pub use multipart::{MpReply, MpRequest, MultipartReply, MultipartRequest};
pub use nicira::NxMessage;
pub use port::{Port, PortStats, Prop};

use crate::matches::Match;
use crate::messages::{err, FlowMod, GroupBucketMod, GroupMod, MeterMod, OfError};

/// OpenFlow 1.0 wire version.
pub const OFP10: u8 = 0x01;
/// OpenFlow 1.3 wire version.
pub const OFP13: u8 = 0x04;
/// OpenFlow 1.4 wire version.
pub const OFP14: u8 = 0x05;
/// OpenFlow 1.5 wire version.
pub const OFP15: u8 = 0x06;
/// The versions this codec speaks, oldest first.
pub const VERSIONS: [u8; 4] = [OFP10, OFP13, OFP14, OFP15];
/// Length of the common header.
pub const HEADER_LEN: usize = 8;

/// The common OpenFlow header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    /// Wire version.
    pub version: u8,
    /// Message type (version-specific numbering).
    pub type_: u8,
    /// Total length including the header.
    pub length: u16,
    /// Transaction id.
    pub xid: u32,
}

impl Header {
    /// Parse the first 8 bytes (`Truncated` if fewer, `BadLength` if the length field is
    /// below 8). Does not check that the whole message is present.
    pub fn parse(b: &[u8]) -> Result<Header, DecodeError> {
        let mut r = Rd::new(b, DecodeError::Truncated);
        let h = Header {
            version: r.u8()?,
            type_: r.u8()?,
            length: r.u16()?,
            xid: r.u32()?,
        };
        if usize::from(h.length) < HEADER_LEN {
            return Err(DecodeError::BadLength);
        }
        Ok(h)
    }
}

/// Whether a complete message starts `buf`: `Ok(Some(len))` if so, `Ok(None)` if more
/// bytes are needed, `Err(BadLength)` if the header's length is impossible.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    match Header::parse(buf) {
        Err(DecodeError::Truncated) => Ok(None),
        Err(e) => Err(e),
        Ok(h) => {
            let n = usize::from(h.length);
            Ok((buf.len() >= n).then_some(n))
        }
    }
}

/// Cut `buf` into complete messages; returns them and the number of bytes they cover
/// (the rest is an incomplete message to keep for later).
pub fn split(buf: &[u8]) -> Result<(Vec<&[u8]>, usize), DecodeError> {
    let mut out = Vec::new();
    let mut off = 0;
    while let Some(n) = frame_len(buf.get(off..).unwrap_or_default())? {
        out.push(buf.get(off..off + n).unwrap_or_default());
        off += n;
    }
    Ok((out, off))
}

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
    let empty = |rd: &mut Rd<'_>, m| {
        if rd.is_empty() {
            Ok(m)
        } else {
            Err(DecodeError::BadLength)
        }
    };
    let config = |rd: &mut Rd<'_>| -> Result<SwitchConfig, DecodeError> {
        Ok(SwitchConfig {
            flags: rd.u16()?,
            miss_send_len: rd.u16()?,
        })
    };
    let of10 = v == OFP10;
    let ty = h.type_;
    let m = match ty {
        t::ERROR => Message::Error(msg::decode_error(v, rd)?),
        t::ECHO_REQUEST => Message::EchoRequest(rd.rest().to_vec()),
        t::ECHO_REPLY => Message::EchoReply(rd.rest().to_vec()),
        t::EXPERIMENTER => {
            let e = rd.u32()?;
            let sub = rd.u32()?;
            if e == action::NX_VENDOR_ID {
                Message::Nx(nicira::decode_nx(v, sub, rd)?)
            } else if e == msg::ONF_EXPERIMENTER_ID && v == OFP13 && sub == msg::ONFT_BUNDLE_CONTROL
            {
                Message::BundleControl(msg::decode_bundle_ctrl(rd)?)
            } else if e == msg::ONF_EXPERIMENTER_ID && v == OFP13 && sub == msg::ONFT_BUNDLE_ADD {
                Message::BundleAdd(msg::decode_bundle_add(rd)?)
            } else {
                Message::Experimenter(Experimenter {
                    experimenter: e,
                    exp_type: sub,
                    data: rd.rest().to_vec(),
                })
            }
        }
        t::FEATURES_REQUEST => empty(rd, Message::FeaturesRequest)?,
        t::FEATURES_REPLY => Message::FeaturesReply(msg::decode_features(v, rd)?),
        t::GET_CONFIG_REQUEST => empty(rd, Message::GetConfigRequest)?,
        t::GET_CONFIG_REPLY => Message::GetConfigReply(config(rd)?),
        t::SET_CONFIG => Message::SetConfig(config(rd)?),
        t::PACKET_IN => Message::PacketIn(msg::decode_packet_in(v, rd)?),
        t::FLOW_REMOVED => Message::FlowRemoved(msg::decode_flow_removed(v, rd)?),
        t::PORT_STATUS => {
            let reason = rd.u8()?;
            rd.skip(7)?;
            Message::PortStatus(PortStatus {
                reason,
                port: port::decode_port(v, rd)?,
            })
        }
        t::PACKET_OUT => Message::PacketOut(msg::decode_packet_out(v, rd)?),
        t::FLOW_MOD => Message::FlowMod(msg::decode_flow_mod(v, rd)?),
        t10::PORT_MOD if of10 => Message::PortMod(msg::decode_port_mod(v, rd)?),
        t10::STATS_REQUEST if of10 => {
            Message::MultipartRequest(multipart::decode_mp_request(v, rd)?)
        }
        t10::STATS_REPLY if of10 => Message::MultipartReply(multipart::decode_mp_reply(v, rd)?),
        t10::BARRIER_REQUEST if of10 => empty(rd, Message::BarrierRequest)?,
        t10::BARRIER_REPLY if of10 => empty(rd, Message::BarrierReply)?,
        t10::QUEUE_GET_CONFIG_REQUEST if of10 => {
            let p = actions_port10(rd.u16()?);
            rd.skip(2)?;
            Message::QueueGetConfigRequest(p)
        }
        t10::QUEUE_GET_CONFIG_REPLY if of10 => {
            let port = actions_port10(rd.u16()?);
            rd.skip(6)?;
            Message::QueueGetConfigReply {
                port,
                queues: rd.rest().to_vec(),
            }
        }
        _ if of10 => return Err(DecodeError::BadType(ty)),
        t::GROUP_MOD => match msg::decode_group_mod(v, rd)? {
            msg::AnyGroupMod::Group(g) => Message::GroupMod(g),
            msg::AnyGroupMod::Buckets(g) => Message::GroupBucketMod(g),
        },
        t::PORT_MOD => Message::PortMod(msg::decode_port_mod(v, rd)?),
        t::TABLE_MOD => Message::TableMod(msg::decode_table_mod(v, rd)?),
        t::MULTIPART_REQUEST => Message::MultipartRequest(multipart::decode_mp_request(v, rd)?),
        t::MULTIPART_REPLY => Message::MultipartReply(multipart::decode_mp_reply(v, rd)?),
        t::BARRIER_REQUEST => empty(rd, Message::BarrierRequest)?,
        t::BARRIER_REPLY => empty(rd, Message::BarrierReply)?,
        t::QUEUE_GET_CONFIG_REQUEST if v == OFP13 => {
            let p = rd.u32()?;
            rd.skip(4)?;
            Message::QueueGetConfigRequest(p)
        }
        t::QUEUE_GET_CONFIG_REPLY if v == OFP13 => {
            let port = rd.u32()?;
            rd.skip(4)?;
            Message::QueueGetConfigReply {
                port,
                queues: rd.rest().to_vec(),
            }
        }
        t::ROLE_REQUEST | t::ROLE_REPLY => {
            let role = rd.u32()?;
            let short_id = if v == OFP15 {
                rd.u16()?
            } else {
                rd.u16().map(|_| 0)?
            };
            rd.skip(2)?;
            let r = RoleMsg {
                role,
                short_id,
                generation_id: rd.u64()?,
            };
            if ty == t::ROLE_REQUEST {
                Message::RoleRequest(r)
            } else {
                Message::RoleReply(r)
            }
        }
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
    };
    Ok(m)
}

fn actions_port10(p: u16) -> u32 {
    crate::actions::port_from_of10(p)
}

/// Encode `m` as a `version` message with transaction id `xid`.
pub fn encode(m: &Message, version: u8, xid: u32) -> Result<Vec<u8>, EncodeError> {
    let hello = matches!(m, Message::Hello(_));
    if !(VERSIONS.contains(&version) || (hello && version != 0)) {
        return Err(EncodeError::BadVersion(version));
    }
    let mut out = Vec::with_capacity(64);
    out.u8(version);
    out.u8(0);
    out.u16(0);
    out.u32(xid);
    let ty = encode_body(&mut out, m, version)?;
    if let Some(b) = out.get_mut(1) {
        *b = ty;
    }
    if out.len() > usize::from(u16::MAX) {
        return Err(EncodeError::TooLong);
    }
    let len = out.len();
    out.patch_u16(2, len);
    Ok(out)
}

fn encode_body(out: &mut Vec<u8>, m: &Message, v: u8) -> Result<u8, EncodeError> {
    let of10 = v == OFP10;
    let not = |what| {
        if of10 {
            Err(EncodeError::NotInVersion(what))
        } else {
            Ok(())
        }
    };
    let pick = |a: u8, b: u8| if of10 { a } else { b };
    Ok(match m {
        Message::Hello(h) => {
            msg::encode_hello(out, h);
            t::HELLO
        }
        Message::Error(e) => {
            msg::encode_error(out, v, e);
            t::ERROR
        }
        Message::EchoRequest(d) => {
            out.extend_from_slice(d);
            t::ECHO_REQUEST
        }
        Message::EchoReply(d) => {
            out.extend_from_slice(d);
            t::ECHO_REPLY
        }
        Message::Experimenter(e) => {
            msg::encode_experimenter(out, e);
            t::EXPERIMENTER
        }
        Message::FeaturesRequest => t::FEATURES_REQUEST,
        Message::FeaturesReply(f) => {
            msg::encode_features(out, v, f)?;
            t::FEATURES_REPLY
        }
        Message::GetConfigRequest => t::GET_CONFIG_REQUEST,
        Message::GetConfigReply(c) | Message::SetConfig(c) => {
            out.u16(c.flags);
            out.u16(c.miss_send_len);
            if matches!(m, Message::SetConfig(_)) {
                t::SET_CONFIG
            } else {
                t::GET_CONFIG_REPLY
            }
        }
        Message::PacketIn(p) => {
            msg::encode_packet_in(out, v, p)?;
            t::PACKET_IN
        }
        Message::FlowRemoved(f) => {
            msg::encode_flow_removed(out, v, f)?;
            t::FLOW_REMOVED
        }
        Message::PortStatus(p) => {
            out.u8(p.reason);
            out.zeros(7);
            port::encode_port(out, v, &p.port)?;
            t::PORT_STATUS
        }
        Message::PacketOut(p) => {
            msg::encode_packet_out(out, v, p)?;
            t::PACKET_OUT
        }
        Message::FlowMod(f) => {
            msg::encode_flow_mod(out, v, f)?;
            t::FLOW_MOD
        }
        Message::GroupMod(g) => {
            not("group_mod")?;
            msg::encode_group_mod(out, v, g)?;
            t::GROUP_MOD
        }
        Message::GroupBucketMod(g) => {
            msg::encode_group_bucket_mod(out, v, g)?;
            t::GROUP_MOD
        }
        Message::PortMod(p) => {
            msg::encode_port_mod(out, v, p)?;
            pick(t10::PORT_MOD, t::PORT_MOD)
        }
        Message::TableMod(tm) => {
            not("table_mod")?;
            msg::encode_table_mod(out, v, tm);
            t::TABLE_MOD
        }
        Message::MultipartRequest(r) => {
            multipart::encode_mp_request(out, v, r)?;
            pick(t10::STATS_REQUEST, t::MULTIPART_REQUEST)
        }
        Message::MultipartReply(r) => {
            multipart::encode_mp_reply(out, v, r)?;
            pick(t10::STATS_REPLY, t::MULTIPART_REPLY)
        }
        Message::BarrierRequest => pick(t10::BARRIER_REQUEST, t::BARRIER_REQUEST),
        Message::BarrierReply => pick(t10::BARRIER_REPLY, t::BARRIER_REPLY),
        Message::QueueGetConfigRequest(p) | Message::QueueGetConfigReply { port: p, .. } => {
            if v > OFP13 {
                return Err(EncodeError::NotInVersion("queue_get_config"));
            }
            if of10 {
                let p16 =
                    crate::actions::port_to_of10(*p).ok_or(EncodeError::Unrepresentable("port"))?;
                out.u16(p16);
            } else {
                out.u32(*p);
            }
            match m {
                Message::QueueGetConfigReply { queues, .. } => {
                    out.zeros(if of10 { 6 } else { 4 });
                    out.extend_from_slice(queues);
                    pick(t10::QUEUE_GET_CONFIG_REPLY, t::QUEUE_GET_CONFIG_REPLY)
                }
                _ => {
                    out.zeros(if of10 { 2 } else { 4 });
                    pick(t10::QUEUE_GET_CONFIG_REQUEST, t::QUEUE_GET_CONFIG_REQUEST)
                }
            }
        }
        Message::RoleRequest(r) | Message::RoleReply(r) => {
            not("role request (use the Nicira form)")?;
            out.u32(r.role);
            out.u16(if v == OFP15 { r.short_id } else { 0 });
            out.zeros(2);
            out.u64(r.generation_id);
            if matches!(m, Message::RoleRequest(_)) {
                t::ROLE_REQUEST
            } else {
                t::ROLE_REPLY
            }
        }
        Message::GetAsyncRequest => {
            not("get_async")?;
            t::GET_ASYNC_REQUEST
        }
        Message::GetAsyncReply(a) | Message::SetAsync(a) => {
            not("async config")?;
            msg::encode_async(out, v, a);
            if matches!(m, Message::SetAsync(_)) {
                t::SET_ASYNC
            } else {
                t::GET_ASYNC_REPLY
            }
        }
        Message::MeterMod(mm) => {
            not("meter_mod")?;
            msg::encode_meter_mod(out, mm);
            t::METER_MOD
        }
        Message::BundleControl(b) => {
            not("bundle control")?;
            if v == OFP13 {
                out.u32(msg::ONF_EXPERIMENTER_ID);
                out.u32(msg::ONFT_BUNDLE_CONTROL);
            }
            msg::encode_bundle_ctrl(out, b);
            if v == OFP13 {
                t::EXPERIMENTER
            } else {
                t::BUNDLE_CONTROL
            }
        }
        Message::BundleAdd(b) => {
            not("bundle add")?;
            if v == OFP13 {
                out.u32(msg::ONF_EXPERIMENTER_ID);
                out.u32(msg::ONFT_BUNDLE_ADD);
            }
            msg::encode_bundle_add(out, b);
            if v == OFP13 {
                t::EXPERIMENTER
            } else {
                t::BUNDLE_ADD
            }
        }
        Message::Nx(n) => {
            nicira::encode_nx(out, v, n)?;
            t::EXPERIMENTER
        }
        Message::RoleStatus(r) => {
            since14(v, OFP14, "role status")?;
            of14::encode_role_status(out, r);
            of14::t::ROLE_STATUS
        }
        Message::TableStatus(ts) => {
            since14(v, OFP14, "table status")?;
            of14::encode_table_status(out, ts);
            of14::t::TABLE_STATUS
        }
        Message::RequestForward(m) => {
            since14(v, OFP14, "request forward")?;
            out.extend_from_slice(m);
            of14::t::REQUESTFORWARD
        }
        Message::ControllerStatus(c) => {
            since14(v, OFP15, "controller status")?;
            of14::encode_controller_status_msg(out, c);
            of14::t::CONTROLLER_STATUS
        }
    })
}

fn since14(v: u8, min: u8, what: &'static str) -> Result<(), EncodeError> {
    if v < min {
        return Err(EncodeError::NotInVersion(what));
    }
    Ok(())
}

/// The (type, code) to put on the wire for `e` when talking `version`: OpenFlow 1.3
/// numbers as they are for 1.3+, translated for OpenFlow 1.0 (whose error types are
/// HELLO_FAILED 0, BAD_REQUEST 1, BAD_ACTION 2, FLOW_MOD_FAILED 3, PORT_MOD_FAILED 4,
/// QUEUE_OP_FAILED 5; errors 1.0 has no type for become `BAD_REQUEST/EPERM`).
pub fn of_error_to_wire(e: OfError, version: u8) -> (u16, u16) {
    if version != OFP10 {
        return (e.type_, e.code);
    }
    use err::*;
    match e.type_ {
        OFPET_HELLO_FAILED => (0, e.code),
        OFPET_BAD_REQUEST if e.code <= bad_request::BUFFER_UNKNOWN => (1, e.code),
        OFPET_BAD_ACTION if e.code <= bad_action::BAD_QUEUE => (2, e.code),
        OFPET_FLOW_MOD_FAILED => {
            let c = match e.code {
                flow_mod_failed::TABLE_FULL => 0,
                flow_mod_failed::OVERLAP => 1,
                flow_mod_failed::EPERM => 2,
                flow_mod_failed::BAD_TIMEOUT => 3,
                flow_mod_failed::BAD_COMMAND => 4,
                _ => 5,
            };
            (3, c)
        }
        OFPET_PORT_MOD_FAILED => (4, e.code.min(1)),
        OFPET_QUEUE_OP_FAILED => (5, e.code),
        _ => (1, bad_request::EPERM),
    }
}

/// The error message answering a request that failed with `e`: the spec's type/code
/// for `version` and the first 64 bytes of the request.
///
/// OpenFlow 1.3 has no bundle errors: they go out as ONF experimenter errors whose
/// experimenter type is 2300 plus the 1.4 code, as OVS sends them.
pub fn error_reply(e: OfError, version: u8, request: &[u8]) -> Message {
    let data = request.get(..64).unwrap_or(request).to_vec();
    if version == OFP13 && e.type_ == err::OFPET_BUNDLE_FAILED {
        return Message::Error(ErrorMsg {
            type_: err::OFPET_EXPERIMENTER,
            code: 2300 + e.code,
            experimenter: Some(msg::ONF_EXPERIMENTER_ID),
            data,
        });
    }
    let (type_, code) = of_error_to_wire(e, version);
    Message::Error(ErrorMsg {
        type_,
        code,
        experimenter: None,
        data,
    })
}

/// Whether OpenFlow 1.0's fixed match can express `m` (if not, a 1.0 connection needs
/// the Nicira flow format).
pub fn of10_match_fits(m: &Match) -> bool {
    oxm::of10_match_fits(m)
}
