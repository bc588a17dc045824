//! Messages OpenFlow 1.4 and 1.5 added that a switch sends or answers: role status,
//! table status, request forward and controller status, and the multipart bodies for
//! table descriptions, queue descriptions, controller status, bundle features and 1.5's
//! flow statistics (multipart 17). Flow monitors are in [`super::monitor`].
//!
//! Layouts (all big-endian, property lists are the usual TLVs padded to 8, kept raw as
//! [`Prop`]s so that unknown and experimenter properties survive a round trip):
//!
//! * role status: role u32, reason u8, 3 pad, generation_id u64, properties;
//! * table status: reason u8, 7 pad, one table description;
//! * table description: length u16, table_id u8, pad, config u32, properties;
//! * request forward: the forwarded request, a whole message with its own header;
//! * controller status: length u16, short_id u16, role u32, reason u8, channel_status u8,
//!   6 pad, properties;
//! * queue description: port u32, queue u32, length u16, 6 pad, properties;
//! * bundle features: request flags u32 + 4 pad + properties; reply capabilities u16 +
//!   6 pad + properties;
//! * 1.5 flow statistics record: length u16, 2 pad, table_id u8, reason u8, priority u16,
//!   match, `ofp_stats` (OXS).
//!
//! Every record's own length is checked against the bytes present before use, as
//! everywhere in this codec.

use super::buf::{Rd, W};
use super::error::DecodeError;
use super::multipart::{decode_oxs, encode_oxs, OxsStats};
use super::oxm::{decode_ofp_match, encode_ofp_match};
use super::port::{decode_props, encode_props, Prop};
use super::record::Framing;
use crate::matches::Match;

/// OpenFlow 1.4+ message type numbers added here.
pub mod t {
    /// `OFPT_ROLE_STATUS`.
    pub const ROLE_STATUS: u8 = 30;
    /// `OFPT_TABLE_STATUS`.
    pub const TABLE_STATUS: u8 = 31;
    /// `OFPT_REQUESTFORWARD`.
    pub const REQUESTFORWARD: u8 = 32;
    /// `OFPT_CONTROLLER_STATUS` (1.5).
    pub const CONTROLLER_STATUS: u8 = 35;
}

/// Multipart types added here.
pub mod mp {
    /// Table descriptions.
    pub const TABLE_DESC: u16 = 14;
    /// Queue descriptions.
    pub const QUEUE_DESC: u16 = 15;
    /// Flow monitors.
    pub const FLOW_MONITOR: u16 = 16;
    /// OpenFlow 1.5 flow statistics.
    pub const FLOW_STATS: u16 = 17;
    /// Controller status (1.5).
    pub const CONTROLLER_STATUS: u16 = 18;
    /// Bundle features (1.5).
    pub const BUNDLE_FEATURES: u16 = 19;
}

/// `OFPCRR_*` role status reasons.
pub mod role_reason {
    /// Another controller asked to be master.
    pub const MASTER_REQUEST: u8 = 0;
    /// Configuration changed on the switch.
    pub const CONFIG: u8 = 1;
    /// Experimenter data changed.
    pub const EXPERIMENTER: u8 = 2;
}

/// `OFPT_ROLE_STATUS`: this connection's role changed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RoleStatus {
    /// New role (`OFPCR_ROLE_*`).
    pub role: u32,
    /// `OFPCRR_*`.
    pub reason: u8,
    /// Current generation id.
    pub generation_id: u64,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

/// One table's configuration (`ofp_table_desc`).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableDesc {
    /// Table.
    pub table_id: u8,
    /// `OFPTC_*` bits (eviction 4, vacancy events 8).
    pub config: u32,
    /// Properties (eviction 2, vacancy 3...), raw.
    pub props: Vec<Prop>,
}

/// `OFPT_TABLE_STATUS`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TableStatus {
    /// `OFPTR_VACANCY_DOWN` 3, `OFPTR_VACANCY_UP` 4.
    pub reason: u8,
    /// The table's description.
    pub table: TableDesc,
}

/// One controller connection's status (`ofp_controller_status`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ControllerStatus {
    /// Controller's short id.
    pub short_id: u16,
    /// Its role.
    pub role: u32,
    /// `OFPCSR_*` why this status is sent.
    pub reason: u8,
    /// `OFPCT_STATUS_UP` 0 / `_DOWN` 1.
    pub channel_status: u8,
    /// Properties (URI 0...), raw.
    pub props: Vec<Prop>,
}

/// One queue's description.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct QueueDesc {
    /// Port.
    pub port_no: u32,
    /// Queue.
    pub queue_id: u32,
    /// Properties (min rate, max rate...), raw.
    pub props: Vec<Prop>,
}

/// Bundle features request (1.5).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct BundleFeaturesRequest {
    /// `OFPBF_*_FEATURES_REQUEST` flags.
    pub flags: u32,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

/// Bundle features reply (1.5).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct BundleFeatures {
    /// `OFPBF_*` capabilities (atomic 1, ordered 2, time 4).
    pub capabilities: u16,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

/// One OpenFlow 1.5 flow statistics record (multipart 17). A record of its own, not
/// [`super::multipart::FlowStats`] in a later version: 1.5 sends the counters as OXS fields
/// ([`OxsStats`]) and no cookie, timeouts or instructions.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowStats15 {
    /// Table.
    pub table_id: u8,
    /// `OFPFSR_*` why sent (0 for a request's answer).
    pub reason: u8,
    /// Priority.
    pub priority: u16,
    /// Match.
    pub match_: Match,
    /// Counters.
    pub stats: OxsStats,
}

pub(crate) fn decode_role_status(rd: &mut Rd<'_>) -> Result<RoleStatus, DecodeError> {
    let role = rd.u32()?;
    let reason = rd.u8()?;
    rd.skip(3)?;
    Ok(RoleStatus {
        role,
        reason,
        generation_id: rd.u64()?,
        props: decode_props(rd)?,
    })
}

pub(crate) fn encode_role_status(out: &mut Vec<u8>, r: &RoleStatus) {
    out.u32(r.role);
    out.u8(r.reason);
    out.zeros(3);
    out.u64(r.generation_id);
    encode_props(out, &r.props);
}

fn decode_table_desc(mut r: Rd<'_>) -> Result<TableDesc, DecodeError> {
    r.skip(2)?;
    let table_id = r.u8()?;
    r.skip(1)?;
    Ok(TableDesc {
        table_id,
        config: r.u32()?,
        props: decode_props(&mut r)?,
    })
}

fn encode_table_desc(out: &mut Vec<u8>, t: &TableDesc) {
    let start = out.len();
    out.u16(0);
    out.u8(t.table_id);
    out.u8(0);
    out.u32(t.config);
    encode_props(out, &t.props);
    let len = out.len() - start;
    out.patch_u16(start, len);
}

pub(crate) fn decode_table_status(rd: &mut Rd<'_>) -> Result<TableStatus, DecodeError> {
    let reason = rd.u8()?;
    rd.skip(7)?;
    let r = Framing::prefixed(0, 8).single(rd)?;
    Ok(TableStatus {
        reason,
        table: decode_table_desc(r)?,
    })
}

pub(crate) fn encode_table_status(out: &mut Vec<u8>, t: &TableStatus) {
    out.u8(t.reason);
    out.zeros(7);
    encode_table_desc(out, &t.table);
}

/// A request forward's body: a whole message whose length must be all the bytes.
pub(crate) fn decode_requestforward(rd: &mut Rd<'_>) -> Result<Vec<u8>, DecodeError> {
    let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
    if len < super::HEADER_LEN || len != rd.len() {
        return Err(DecodeError::BadLength);
    }
    Ok(rd.rest().to_vec())
}

fn decode_controller_status(mut r: Rd<'_>) -> Result<ControllerStatus, DecodeError> {
    r.skip(2)?;
    let short_id = r.u16()?;
    let role = r.u32()?;
    let reason = r.u8()?;
    let channel_status = r.u8()?;
    r.skip(6)?;
    Ok(ControllerStatus {
        short_id,
        role,
        reason,
        channel_status,
        props: decode_props(&mut r)?,
    })
}

fn encode_controller_status(out: &mut Vec<u8>, c: &ControllerStatus) {
    let start = out.len();
    out.u16(0);
    out.u16(c.short_id);
    out.u32(c.role);
    out.u8(c.reason);
    out.u8(c.channel_status);
    out.zeros(6);
    encode_props(out, &c.props);
    let len = out.len() - start;
    out.patch_u16(start, len);
}

/// `OFPT_CONTROLLER_STATUS`: exactly one status record.
pub(crate) fn decode_controller_status_msg(
    rd: &mut Rd<'_>,
) -> Result<ControllerStatus, DecodeError> {
    decode_controller_status(Framing::prefixed(0, 16).single(rd)?)
}

pub(crate) fn encode_controller_status_msg(out: &mut Vec<u8>, c: &ControllerStatus) {
    encode_controller_status(out, c);
}

/// Multipart request bodies of the types here (the caller has read the header).
pub(crate) enum Req {
    TableDesc,
    QueueDesc { port_no: u32, queue_id: u32 },
    ControllerStatus,
    BundleFeatures(BundleFeaturesRequest),
    FlowStats(super::multipart::FlowStatsRequest),
}

pub(crate) fn decode_request(
    version: u8,
    ty: u16,
    rd: &mut Rd<'_>,
) -> Result<Option<Req>, DecodeError> {
    let v15 = version >= super::OFP15;
    Ok(Some(match ty {
        mp::TABLE_DESC => Req::TableDesc,
        mp::QUEUE_DESC => Req::QueueDesc {
            port_no: rd.u32()?,
            queue_id: rd.u32()?,
        },
        mp::FLOW_STATS if v15 => Req::FlowStats(super::multipart::decode_flow_req(version, rd)?),
        mp::CONTROLLER_STATUS if v15 => Req::ControllerStatus,
        mp::BUNDLE_FEATURES if v15 => {
            let flags = rd.u32()?;
            rd.skip(4)?;
            Req::BundleFeatures(BundleFeaturesRequest {
                flags,
                props: decode_props(rd)?,
            })
        }
        _ => return Ok(None),
    }))
}

pub(crate) fn encode_bundle_features_request(out: &mut Vec<u8>, r: &BundleFeaturesRequest) {
    out.u32(r.flags);
    out.zeros(4);
    encode_props(out, &r.props);
}

/// Multipart reply bodies of the types here.
pub(crate) enum Rep {
    TableDesc(Vec<TableDesc>),
    QueueDesc(Vec<QueueDesc>),
    ControllerStatus(Vec<ControllerStatus>),
    BundleFeatures(BundleFeatures),
    FlowStats(Vec<FlowStats15>),
}

pub(crate) fn decode_reply(
    version: u8,
    ty: u16,
    rd: &mut Rd<'_>,
) -> Result<Option<Rep>, DecodeError> {
    let v15 = version >= super::OFP15;
    Ok(Some(match ty {
        mp::TABLE_DESC => Rep::TableDesc(Framing::prefixed(0, 8).all(rd, decode_table_desc)?),
        mp::QUEUE_DESC => Rep::QueueDesc(Framing::prefixed(8, 16).all(rd, decode_queue_desc)?),
        mp::FLOW_STATS if v15 => {
            Rep::FlowStats(Framing::prefixed(0, 8).all(rd, decode_flow_stats15)?)
        }
        mp::CONTROLLER_STATUS if v15 => {
            Rep::ControllerStatus(Framing::prefixed(0, 16).all(rd, decode_controller_status)?)
        }
        mp::BUNDLE_FEATURES if v15 => {
            let capabilities = rd.u16()?;
            rd.skip(6)?;
            Rep::BundleFeatures(BundleFeatures {
                capabilities,
                props: decode_props(rd)?,
            })
        }
        _ => return Ok(None),
    }))
}

fn decode_queue_desc(mut r: Rd<'_>) -> Result<QueueDesc, DecodeError> {
    let port_no = r.u32()?;
    let queue_id = r.u32()?;
    r.skip(8)?;
    Ok(QueueDesc {
        port_no,
        queue_id,
        props: decode_props(&mut r)?,
    })
}

fn decode_flow_stats15(mut r: Rd<'_>) -> Result<FlowStats15, DecodeError> {
    r.skip(4)?;
    let table_id = r.u8()?;
    let reason = r.u8()?;
    let priority = r.u16()?;
    let match_ = decode_ofp_match(&mut r)?;
    let stats = decode_oxs(&mut r)?;
    if !r.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(FlowStats15 {
        table_id,
        reason,
        priority,
        match_,
        stats,
    })
}

pub(crate) fn encode_table_descs(out: &mut Vec<u8>, v: &[TableDesc]) {
    v.iter().for_each(|t| encode_table_desc(out, t));
}

pub(crate) fn encode_queue_descs(out: &mut Vec<u8>, v: &[QueueDesc]) {
    for q in v {
        let start = out.len();
        out.u32(q.port_no);
        out.u32(q.queue_id);
        out.u16(0);
        out.zeros(6);
        encode_props(out, &q.props);
        let len = out.len() - start;
        out.patch_u16(start + 8, len);
    }
}

pub(crate) fn encode_controller_statuses(out: &mut Vec<u8>, v: &[ControllerStatus]) {
    v.iter().for_each(|c| encode_controller_status(out, c));
}

pub(crate) fn encode_bundle_features(out: &mut Vec<u8>, b: &BundleFeatures) {
    out.u16(b.capabilities);
    out.zeros(6);
    encode_props(out, &b.props);
}

pub(crate) fn encode_flow_stats15(out: &mut Vec<u8>, v: &[FlowStats15]) {
    for f in v {
        let start = out.len();
        out.u16(0);
        out.zeros(2);
        out.u8(f.table_id);
        out.u8(f.reason);
        out.u16(f.priority);
        encode_ofp_match(out, &f.match_, super::OFP15);
        encode_oxs(out, &f.stats, false);
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
}
