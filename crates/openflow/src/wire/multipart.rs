//! Multipart (OpenFlow 1.0: stats) requests and replies.
//!
//! A multipart message is a 16-bit type, 16-bit flags (`OFPMPF_REQ/REPLY_MORE`), padding
//! (1.1+ only) and a type-specific body. Requests and replies are one enum each,
//! [`MultipartRequest`] / [`MultipartReply`]; bodies that are arrays of records
//! (flows, ports, groups, meters, table features...) decode into `Vec`s whose records'
//! own length fields are checked against the bytes present.
//!
//! Supported types: desc, flow, aggregate, table, port stats, queue stats, group, group
//! desc, group features, meter, meter config, meter features, table features (records
//! with raw properties), port desc, experimenter, and Nicira's `NXST_FLOW` /
//! `NXST_AGGREGATE` (OpenFlow 1.0 vendor stats), and through [`super::of14`] OpenFlow
//! 1.4+'s table desc and queue desc and 1.5's controller status, bundle features and flow
//! statistics (multipart 17); flow monitors in both the 1.4 and the Nicira form through
//! [`super::monitor`]. OpenFlow 1.5 flow statistics and aggregate replies carry their
//! counters as OXS TLVs ([`OxsStats`]).

use super::action::{decode_flow_actions, decode_instructions, encode_instructions, NX_VENDOR_ID};
use super::buf::{pad8, Rd, W};
use super::error::{DecodeError, EncodeError};
use super::msg::{decode_bands, decode_buckets, encode_bands, encode_buckets};
use super::oxm::{
    decode_match_tlvs, decode_of10_match, decode_ofp_match, encode_of10_match, encode_ofp_match,
    encode_tlvs, Mode,
};
use super::port::{
    decode_port, decode_port_stats, decode_props, encode_port, encode_port_stats, encode_props,
    Port, PortStats, Prop,
};
use super::{monitor, of14, OFP10, OFP13, OFP14, OFP15};
use crate::actions::{port_from_of10, port_to_of10, Instruction};
use crate::matches::Match;
use crate::messages::{Bucket, GroupType, MeterBand};

/// Multipart type numbers (1.1+; 1.0 stats share 0..5 and `0xffff`).
pub mod mp {
    /// Switch description.
    pub const DESC: u16 = 0;
    /// Individual flow statistics (1.5: flow desc).
    pub const FLOW: u16 = 1;
    /// Aggregate flow statistics.
    pub const AGGREGATE: u16 = 2;
    /// Table statistics.
    pub const TABLE: u16 = 3;
    /// Port statistics.
    pub const PORT_STATS: u16 = 4;
    /// Queue statistics.
    pub const QUEUE: u16 = 5;
    /// Group statistics.
    pub const GROUP: u16 = 6;
    /// Group descriptions.
    pub const GROUP_DESC: u16 = 7;
    /// Group features.
    pub const GROUP_FEATURES: u16 = 8;
    /// Meter statistics.
    pub const METER: u16 = 9;
    /// Meter configuration (1.5: meter desc).
    pub const METER_CONFIG: u16 = 10;
    /// Meter features.
    pub const METER_FEATURES: u16 = 11;
    /// Table features.
    pub const TABLE_FEATURES: u16 = 12;
    /// Port descriptions.
    pub const PORT_DESC: u16 = 13;
    /// Experimenter (1.0: vendor).
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `NXST_FLOW`.
const NXST_FLOW: u32 = 0;
/// `NXST_AGGREGATE`.
const NXST_AGGREGATE: u32 = 1;
/// `NXST_FLOW_MONITOR`.
const NXST_FLOW_MONITOR: u32 = 2;
/// `ONFST_FLOW_MONITOR`: OpenFlow 1.3 experimenter multipart with Nicira bodies.
const ONFST_FLOW_MONITOR: u32 = 1870;
use super::msg::ONF_EXPERIMENTER_ID;

/// A flow or aggregate statistics request.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowStatsRequest {
    /// Table, or `OFPTT_ALL`.
    pub table_id: u8,
    /// Only flows outputting to this port (`OFPP_ANY` for all).
    pub out_port: u32,
    /// Only flows outputting to this group (1.1+; `OFPG_ANY` for all).
    pub out_group: u32,
    /// Cookie to compare under `cookie_mask` (1.1+).
    pub cookie: u64,
    /// Cookie bits to compare.
    pub cookie_mask: u64,
    /// Flows whose match refines this one.
    pub match_: Match,
}

/// A multipart request.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MultipartRequest {
    /// `OFPMPF_REQ_MORE`.
    pub flags: u16,
    /// The body.
    pub body: MpRequest,
}

/// Multipart request bodies.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MpRequest {
    /// Switch description.
    Desc,
    /// Flow statistics (1.5: flow desc).
    Flow(FlowStatsRequest),
    /// Aggregate statistics.
    Aggregate(FlowStatsRequest),
    /// Table statistics.
    Table,
    /// Port statistics for a port (`OFPP_ANY` for all).
    PortStats(u32),
    /// Queue statistics.
    Queue {
        /// Port (`OFPP_ANY` for all).
        port_no: u32,
        /// Queue (`OFPQ_ALL` for all).
        queue_id: u32,
    },
    /// Group statistics for a group (`OFPG_ALL` for all).
    Group(u32),
    /// Group descriptions (1.5: for one group id, `OFPG_ALL` otherwise).
    GroupDesc(u32),
    /// Group features.
    GroupFeatures,
    /// Meter statistics (`OFPM_ALL` for all).
    Meter(u32),
    /// Meter configuration (`OFPM_ALL` for all).
    MeterConfig(u32),
    /// Meter features.
    MeterFeatures,
    /// Table features; an empty list reads them, a non-empty one sets them.
    TableFeatures(Vec<TableFeatures>),
    /// Port descriptions (1.5: for one port, `OFPP_ANY` otherwise).
    PortDesc(u32),
    /// Experimenter.
    Experimenter(super::msg::Experimenter),
    /// Nicira flow statistics (NXM match).
    NxFlow(FlowStatsRequest),
    /// Nicira aggregate statistics (NXM match).
    NxAggregate(FlowStatsRequest),
    /// Table descriptions (1.4+).
    TableDesc,
    /// Queue descriptions (1.4+).
    QueueDesc {
        /// Port (`OFPP_ANY` for all).
        port_no: u32,
        /// Queue (`OFPQ_ALL` for all).
        queue_id: u32,
    },
    /// Controller status (1.5).
    ControllerStatus,
    /// Bundle features (1.5).
    BundleFeatures(of14::BundleFeaturesRequest),
    /// OpenFlow 1.5 flow statistics (multipart 17).
    FlowStats15(FlowStatsRequest),
    /// Flow monitors (1.4+).
    FlowMonitor(Vec<monitor::FlowMonitorRequest>),
    /// Nicira flow monitors (`NXST_FLOW_MONITOR`).
    NxFlowMonitor(Vec<monitor::FlowMonitorRequest>),
    /// OpenFlow 1.3 ONF flow monitors (`ONFST_FLOW_MONITOR`, Nicira bodies).
    OnfFlowMonitor(Vec<monitor::FlowMonitorRequest>),
}

/// A multipart reply.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MultipartReply {
    /// `OFPMPF_REPLY_MORE`.
    pub flags: u16,
    /// The body.
    pub body: MpReply,
}

/// Switch description strings.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Desc {
    /// Manufacturer.
    pub mfr_desc: String,
    /// Hardware.
    pub hw_desc: String,
    /// Software.
    pub sw_desc: String,
    /// Serial number.
    pub serial_num: String,
    /// Datapath description.
    pub dp_desc: String,
}

/// One flow's statistics.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowStats {
    /// Table.
    pub table_id: u8,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Priority.
    pub priority: u16,
    /// Idle timeout.
    pub idle_timeout: u16,
    /// Hard timeout.
    pub hard_timeout: u16,
    /// `OFPFF_*` flags (1.3+).
    pub flags: u16,
    /// Importance (1.4+).
    pub importance: u16,
    /// Cookie.
    pub cookie: u64,
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// Seconds since last hit (Nicira only; 0 = unknown).
    pub idle_age: u16,
    /// Seconds since last modification (Nicira only; 0 = unknown).
    pub hard_age: u16,
    /// Match.
    pub match_: Match,
    /// Instructions (OpenFlow 1.0 / Nicira: one apply-actions).
    pub instructions: Vec<Instruction>,
}

/// Aggregate statistics.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct AggregateStats {
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// Flows.
    pub flow_count: u32,
}

/// One table's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableStats {
    /// Table.
    pub table_id: u8,
    /// Name (OpenFlow 1.0 only).
    pub name: String,
    /// Supported wildcards (OpenFlow 1.0 only).
    pub wildcards: u32,
    /// Maximum entries (OpenFlow 1.0 only).
    pub max_entries: u32,
    /// Active entries.
    pub active_count: u32,
    /// Lookups.
    pub lookup_count: u64,
    /// Hits.
    pub matched_count: u64,
}

/// One queue's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct QueueStats {
    /// Port.
    pub port_no: u32,
    /// Queue.
    pub queue_id: u32,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Overrun drops.
    pub tx_errors: u64,
    /// Time alive, seconds (1.3+).
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds (1.3+).
    pub duration_nsec: u32,
    /// 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

/// One group's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct GroupStats {
    /// Group.
    pub group_id: u32,
    /// Flows and groups forwarding to it.
    pub ref_count: u32,
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Per bucket (packets, bytes).
    pub buckets: Vec<(u64, u64)>,
}

/// One group's description.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupDesc {
    /// Type.
    pub group_type: GroupType,
    /// Group.
    pub group_id: u32,
    /// Buckets.
    pub buckets: Vec<Bucket>,
}

/// Group features.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct GroupFeatures {
    /// Bitmap of supported `OFPGT_*`.
    pub types: u32,
    /// `OFPGFC_*` bits.
    pub capabilities: u32,
    /// Maximum groups per type.
    pub max_groups: [u32; 4],
    /// Supported actions per type (bitmaps of `OFPAT_*`).
    pub actions: [u32; 4],
}

/// One meter's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct MeterStats {
    /// Meter.
    pub meter_id: u32,
    /// Flows using it.
    pub flow_count: u32,
    /// Packets in.
    pub packet_in_count: u64,
    /// Bytes in.
    pub byte_in_count: u64,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Per band (packets, bytes).
    pub bands: Vec<(u64, u64)>,
}

/// One meter's configuration.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MeterConfig {
    /// `OFPMF_*` flags.
    pub flags: u16,
    /// Meter.
    pub meter_id: u32,
    /// Bands.
    pub bands: Vec<MeterBand>,
}

/// Meter features.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct MeterFeatures {
    /// Maximum meters.
    pub max_meter: u32,
    /// Bitmap of supported band types.
    pub band_types: u32,
    /// `OFPMF_*` capabilities.
    pub capabilities: u32,
    /// Maximum bands per meter.
    pub max_bands: u8,
    /// Maximum color value.
    pub max_color: u8,
    /// `OFPMFF_*` features (1.5).
    pub features: u32,
}

/// One table's features (properties kept raw).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableFeatures {
    /// Table.
    pub table_id: u8,
    /// 1.5: `OFPTFC_*` command; earlier: 0.
    pub command: u8,
    /// Name.
    pub name: String,
    /// Metadata bits the table can match.
    pub metadata_match: u64,
    /// Metadata bits the table can write.
    pub metadata_write: u64,
    /// `OFPTC_*` config (1.5: capabilities).
    pub config: u32,
    /// Maximum entries.
    pub max_entries: u32,
    /// Properties (instructions, next tables, actions, match fields...), raw.
    pub props: Vec<Prop>,
}

/// Multipart reply bodies.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MpReply {
    /// Switch description.
    Desc(Desc),
    /// Flow statistics.
    Flow(Vec<FlowStats>),
    /// Aggregate statistics.
    Aggregate(AggregateStats),
    /// Table statistics.
    Table(Vec<TableStats>),
    /// Port statistics.
    PortStats(Vec<PortStats>),
    /// Queue statistics.
    Queue(Vec<QueueStats>),
    /// Group statistics.
    Group(Vec<GroupStats>),
    /// Group descriptions.
    GroupDesc(Vec<GroupDesc>),
    /// Group features.
    GroupFeatures(GroupFeatures),
    /// Meter statistics.
    Meter(Vec<MeterStats>),
    /// Meter configuration.
    MeterConfig(Vec<MeterConfig>),
    /// Meter features.
    MeterFeatures(MeterFeatures),
    /// Table features.
    TableFeatures(Vec<TableFeatures>),
    /// Port descriptions.
    PortDesc(Vec<Port>),
    /// Experimenter.
    Experimenter(super::msg::Experimenter),
    /// Nicira flow statistics.
    NxFlow(Vec<FlowStats>),
    /// Nicira aggregate statistics.
    NxAggregate(AggregateStats),
    /// Table descriptions (1.4+).
    TableDesc(Vec<of14::TableDesc>),
    /// Queue descriptions (1.4+).
    QueueDesc(Vec<of14::QueueDesc>),
    /// Controller status (1.5).
    ControllerStatus(Vec<of14::ControllerStatus>),
    /// Bundle features (1.5).
    BundleFeatures(of14::BundleFeatures),
    /// OpenFlow 1.5 flow statistics (multipart 17).
    FlowStats15(Vec<of14::FlowStats15>),
    /// Flow monitor updates (1.4+).
    FlowMonitor(Vec<monitor::FlowUpdate>),
    /// Nicira flow monitor updates.
    NxFlowMonitor(Vec<monitor::FlowUpdate>),
    /// OpenFlow 1.3 ONF flow monitor updates (Nicira bodies).
    OnfFlowMonitor(Vec<monitor::FlowUpdate>),
}

// ---------------------------------------------------------------- OXS (1.5)

/// OpenFlow 1.5 flow statistics (OXS fields of class `OFPXSC_OPENFLOW_BASIC`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct OxsStats {
    /// `OFPXST_OFB_DURATION` seconds.
    pub duration_sec: u32,
    /// `OFPXST_OFB_DURATION` nanoseconds.
    pub duration_nsec: u32,
    /// `OFPXST_OFB_IDLE_TIME` seconds, if present.
    pub idle_time: Option<(u32, u32)>,
    /// `OFPXST_OFB_FLOW_COUNT`, if present.
    pub flow_count: Option<u32>,
    /// `OFPXST_OFB_PACKET_COUNT`.
    pub packet_count: u64,
    /// `OFPXST_OFB_BYTE_COUNT`.
    pub byte_count: u64,
}

const OFPXSC_OPENFLOW_BASIC: u16 = 0x8002;

/// Decode an `ofp_stats` (reserved, length, OXS TLVs, padding to 8).
pub(crate) fn decode_oxs(rd: &mut Rd<'_>) -> Result<OxsStats, DecodeError> {
    let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
    if len < 4 {
        return Err(DecodeError::BadLength);
    }
    let whole = rd.bytes(pad8(len))?;
    let mut r = Rd::new(
        whole.get(4..len).unwrap_or_default(),
        DecodeError::BadLength,
    );
    let mut s = OxsStats::default();
    while !r.is_empty() {
        let class = r.u16()?;
        let fh = r.u8()?;
        let plen = usize::from(r.u8()?);
        let mut v = r.sub(plen, DecodeError::BadLength)?;
        if class != OFPXSC_OPENFLOW_BASIC {
            return Err(DecodeError::BadField(class, fh >> 1));
        }
        match (fh >> 1, plen) {
            (0, 8) => {
                s.duration_sec = v.u32()?;
                s.duration_nsec = v.u32()?;
            }
            (1, 8) => s.idle_time = Some((v.u32()?, v.u32()?)),
            (3, 4) => s.flow_count = Some(v.u32()?),
            (4, 8) => s.packet_count = v.u64()?,
            (5, 8) => s.byte_count = v.u64()?,
            (f, _) => return Err(DecodeError::BadField(class, f)),
        }
    }
    Ok(s)
}

/// Encode an `ofp_stats`. Aggregates (`aggregate`) carry flow_count and no duration.
pub(crate) fn encode_oxs(out: &mut Vec<u8>, s: &OxsStats, aggregate: bool) {
    let start = out.len();
    out.u16(0);
    out.u16(0);
    let tlv = |out: &mut Vec<u8>, f: u8, len: u8| {
        out.u16(OFPXSC_OPENFLOW_BASIC);
        out.u8(f << 1);
        out.u8(len);
    };
    if !aggregate {
        tlv(out, 0, 8);
        out.u32(s.duration_sec);
        out.u32(s.duration_nsec);
        if let Some((a, b)) = s.idle_time {
            tlv(out, 1, 8);
            out.u32(a);
            out.u32(b);
        }
    }
    if let Some(c) = s.flow_count {
        tlv(out, 3, 4);
        out.u32(c);
    }
    tlv(out, 4, 8);
    out.u64(s.packet_count);
    tlv(out, 5, 8);
    out.u64(s.byte_count);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
    out.pad8_from(start);
}

// ---------------------------------------------------------------- requests

pub(crate) fn decode_flow_req(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<FlowStatsRequest, DecodeError> {
    if version == OFP10 {
        let match_ = decode_of10_match(rd)?;
        let table_id = rd.u8()?;
        rd.skip(1)?;
        let out_port = port_from_of10(rd.u16()?);
        return Ok(FlowStatsRequest {
            table_id,
            out_port,
            out_group: crate::actions::OFPG_ANY,
            cookie: 0,
            cookie_mask: 0,
            match_,
        });
    }
    let table_id = rd.u8()?;
    rd.skip(3)?;
    let out_port = rd.u32()?;
    let out_group = rd.u32()?;
    rd.skip(4)?;
    let cookie = rd.u64()?;
    let cookie_mask = rd.u64()?;
    let match_ = decode_ofp_match(rd)?;
    Ok(FlowStatsRequest {
        table_id,
        out_port,
        out_group,
        cookie,
        cookie_mask,
        match_,
    })
}

fn encode_flow_req(
    out: &mut Vec<u8>,
    version: u8,
    r: &FlowStatsRequest,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        encode_of10_match(out, &r.match_)?;
        out.u8(r.table_id);
        out.u8(0);
        out.u16(port_to_of10(r.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
        return Ok(());
    }
    out.u8(r.table_id);
    out.zeros(3);
    out.u32(r.out_port);
    out.u32(r.out_group);
    out.zeros(4);
    out.u64(r.cookie);
    out.u64(r.cookie_mask);
    encode_ofp_match(out, &r.match_);
    Ok(())
}

fn decode_nx_flow_req(rd: &mut Rd<'_>) -> Result<FlowStatsRequest, DecodeError> {
    let out_port = port_from_of10(rd.u16()?);
    let mlen = usize::from(rd.u16()?);
    let table_id = rd.u8()?;
    rd.skip(3)?;
    let mut mr = rd.sub(mlen, DecodeError::BadMatchLen)?;
    let match_ = decode_match_tlvs(&mut mr)?;
    let pad = (pad8(mlen) - mlen).min(rd.len());
    rd.skip(pad)?;
    Ok(FlowStatsRequest {
        table_id,
        out_port,
        out_group: crate::actions::OFPG_ANY,
        cookie: 0,
        cookie_mask: 0,
        match_,
    })
}

fn encode_nx_flow_req(out: &mut Vec<u8>, r: &FlowStatsRequest) -> Result<(), EncodeError> {
    out.u16(port_to_of10(r.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
    let at = out.len();
    out.u16(0);
    out.u8(r.table_id);
    out.zeros(3);
    let start = out.len();
    encode_tlvs(out, &r.match_, Mode::Nxm);
    let mlen = out.len() - start;
    out.patch_u16(at, mlen);
    out.pad8_from(start);
    Ok(())
}

fn one_u32(rd: &mut Rd<'_>) -> Result<u32, DecodeError> {
    let v = rd.u32()?;
    rd.skip(4)?;
    Ok(v)
}

pub(crate) fn decode_mp_request(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<MultipartRequest, DecodeError> {
    let ty = rd.u16()?;
    let flags = rd.u16()?;
    if version != OFP10 {
        rd.skip(4)?;
    }
    let body = match ty {
        mp::DESC => MpRequest::Desc,
        mp::FLOW => MpRequest::Flow(decode_flow_req(version, rd)?),
        mp::AGGREGATE => MpRequest::Aggregate(decode_flow_req(version, rd)?),
        mp::TABLE => MpRequest::Table,
        mp::PORT_STATS => {
            if version == OFP10 {
                let p = port_from_of10(rd.u16()?);
                rd.skip(6)?;
                MpRequest::PortStats(p)
            } else {
                MpRequest::PortStats(one_u32(rd)?)
            }
        }
        mp::QUEUE => {
            let port_no = if version == OFP10 {
                let p = port_from_of10(rd.u16()?);
                rd.skip(2)?;
                p
            } else {
                rd.u32()?
            };
            MpRequest::Queue {
                port_no,
                queue_id: rd.u32()?,
            }
        }
        mp::EXPERIMENTER => {
            let e = super::msg::decode_experimenter(rd)?;
            if e.experimenter == NX_VENDOR_ID && version == OFP10 {
                let mut b = Rd::new(&e.data, DecodeError::BadLength);
                b.skip(4)?;
                let r = match e.exp_type {
                    NXST_FLOW => MpRequest::NxFlow(decode_nx_flow_req(&mut b)?),
                    NXST_AGGREGATE => MpRequest::NxAggregate(decode_nx_flow_req(&mut b)?),
                    NXST_FLOW_MONITOR => {
                        MpRequest::NxFlowMonitor(monitor::decode_nx_requests(&mut b, false)?)
                    }
                    t => return Err(DecodeError::BadExpType(t)),
                };
                if !b.is_empty() {
                    return Err(DecodeError::BadLength);
                }
                r
            } else if e.experimenter == ONF_EXPERIMENTER_ID
                && version == OFP13
                && e.exp_type == ONFST_FLOW_MONITOR
            {
                let mut b = Rd::new(&e.data, DecodeError::BadLength);
                MpRequest::OnfFlowMonitor(monitor::decode_nx_requests(&mut b, true)?)
            } else {
                MpRequest::Experimenter(e)
            }
        }
        _ if version == OFP10 => return Err(DecodeError::BadMultipart(ty)),
        mp::GROUP => MpRequest::Group(one_u32(rd)?),
        mp::GROUP_DESC => MpRequest::GroupDesc(if version == OFP15 {
            one_u32(rd)?
        } else {
            crate::actions::OFPG_ALL
        }),
        mp::GROUP_FEATURES => MpRequest::GroupFeatures,
        mp::METER => MpRequest::Meter(one_u32(rd)?),
        mp::METER_CONFIG => MpRequest::MeterConfig(one_u32(rd)?),
        mp::METER_FEATURES => MpRequest::MeterFeatures,
        mp::TABLE_FEATURES => {
            let mut v = Vec::new();
            while !rd.is_empty() {
                v.push(decode_table_features(version, rd)?);
            }
            MpRequest::TableFeatures(v)
        }
        mp::PORT_DESC => MpRequest::PortDesc(if version == OFP15 {
            one_u32(rd)?
        } else {
            crate::actions::OFPP_ANY
        }),
        _ if version >= OFP14 => match of14::decode_request(version, ty, rd)? {
            Some(of14::Req::TableDesc) => MpRequest::TableDesc,
            Some(of14::Req::QueueDesc { port_no, queue_id }) => {
                MpRequest::QueueDesc { port_no, queue_id }
            }
            Some(of14::Req::ControllerStatus) => MpRequest::ControllerStatus,
            Some(of14::Req::BundleFeatures(b)) => MpRequest::BundleFeatures(b),
            Some(of14::Req::FlowStats(f)) => MpRequest::FlowStats15(f),
            None if ty == of14::mp::FLOW_MONITOR => {
                MpRequest::FlowMonitor(monitor::decode_requests(rd)?)
            }
            None => return Err(DecodeError::BadMultipart(ty)),
        },
        _ => return Err(DecodeError::BadMultipart(ty)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(MultipartRequest { flags, body })
}

fn mp_header(out: &mut Vec<u8>, version: u8, ty: u16, flags: u16) {
    out.u16(ty);
    out.u16(flags);
    if version != OFP10 {
        out.zeros(4);
    }
}

fn nx_stats_header(
    out: &mut Vec<u8>,
    version: u8,
    flags: u16,
    sub: u32,
) -> Result<(), EncodeError> {
    if version != OFP10 {
        return Err(EncodeError::NotInVersion("Nicira stats"));
    }
    mp_header(out, version, mp::EXPERIMENTER, flags);
    out.u32(NX_VENDOR_ID);
    out.u32(sub);
    out.zeros(4);
    Ok(())
}

pub(crate) fn encode_mp_request(
    out: &mut Vec<u8>,
    version: u8,
    r: &MultipartRequest,
) -> Result<(), EncodeError> {
    let hdr = |out: &mut Vec<u8>, ty| mp_header(out, version, ty, r.flags);
    let of11 = |what| {
        if version == OFP10 {
            Err(EncodeError::NotInVersion(what))
        } else {
            Ok(())
        }
    };
    match &r.body {
        MpRequest::Desc => hdr(out, mp::DESC),
        MpRequest::Flow(f) => {
            hdr(out, mp::FLOW);
            encode_flow_req(out, version, f)?;
        }
        MpRequest::Aggregate(f) => {
            hdr(out, mp::AGGREGATE);
            encode_flow_req(out, version, f)?;
        }
        MpRequest::Table => hdr(out, mp::TABLE),
        MpRequest::PortStats(p) => {
            hdr(out, mp::PORT_STATS);
            if version == OFP10 {
                out.u16(port_to_of10(*p).ok_or(EncodeError::Unrepresentable("port_no"))?);
                out.zeros(6);
            } else {
                out.u32(*p);
                out.zeros(4);
            }
        }
        MpRequest::Queue { port_no, queue_id } => {
            hdr(out, mp::QUEUE);
            if version == OFP10 {
                out.u16(port_to_of10(*port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
                out.zeros(2);
            } else {
                out.u32(*port_no);
            }
            out.u32(*queue_id);
        }
        MpRequest::Group(g) => {
            of11("group stats")?;
            hdr(out, mp::GROUP);
            out.u32(*g);
            out.zeros(4);
        }
        MpRequest::GroupDesc(g) => {
            of11("group desc")?;
            hdr(out, mp::GROUP_DESC);
            if version == OFP15 {
                out.u32(*g);
                out.zeros(4);
            }
        }
        MpRequest::GroupFeatures => {
            of11("group features")?;
            hdr(out, mp::GROUP_FEATURES);
        }
        MpRequest::Meter(m) => {
            of11("meter stats")?;
            hdr(out, mp::METER);
            out.u32(*m);
            out.zeros(4);
        }
        MpRequest::MeterConfig(m) => {
            of11("meter config")?;
            hdr(out, mp::METER_CONFIG);
            out.u32(*m);
            out.zeros(4);
        }
        MpRequest::MeterFeatures => {
            of11("meter features")?;
            hdr(out, mp::METER_FEATURES);
        }
        MpRequest::TableFeatures(v) => {
            of11("table features")?;
            hdr(out, mp::TABLE_FEATURES);
            v.iter()
                .for_each(|t| encode_table_features(out, version, t));
        }
        MpRequest::PortDesc(p) => {
            of11("port desc")?;
            hdr(out, mp::PORT_DESC);
            if version == OFP15 {
                out.u32(*p);
                out.zeros(4);
            }
        }
        MpRequest::Experimenter(e) => {
            hdr(out, mp::EXPERIMENTER);
            super::msg::encode_experimenter(out, e);
        }
        MpRequest::NxFlow(f) => {
            nx_stats_header(out, version, r.flags, NXST_FLOW)?;
            encode_nx_flow_req(out, f)?;
        }
        MpRequest::NxAggregate(f) => {
            nx_stats_header(out, version, r.flags, NXST_AGGREGATE)?;
            encode_nx_flow_req(out, f)?;
        }
        MpRequest::TableDesc => {
            since(version, OFP14, "table desc")?;
            hdr(out, of14::mp::TABLE_DESC);
        }
        MpRequest::QueueDesc { port_no, queue_id } => {
            since(version, OFP14, "queue desc")?;
            hdr(out, of14::mp::QUEUE_DESC);
            out.u32(*port_no);
            out.u32(*queue_id);
        }
        MpRequest::ControllerStatus => {
            since(version, OFP15, "controller status")?;
            hdr(out, of14::mp::CONTROLLER_STATUS);
        }
        MpRequest::BundleFeatures(b) => {
            since(version, OFP15, "bundle features")?;
            hdr(out, of14::mp::BUNDLE_FEATURES);
            of14::encode_bundle_features_request(out, b);
        }
        MpRequest::FlowStats15(f) => {
            since(version, OFP15, "flow stats (1.5)")?;
            hdr(out, of14::mp::FLOW_STATS);
            encode_flow_req(out, version, f)?;
        }
        MpRequest::FlowMonitor(v) => {
            since(version, OFP14, "flow monitor")?;
            hdr(out, of14::mp::FLOW_MONITOR);
            monitor::encode_requests(out, v);
        }
        MpRequest::NxFlowMonitor(v) => {
            nx_stats_header(out, version, r.flags, NXST_FLOW_MONITOR)?;
            monitor::encode_nx_requests(out, v, false)?;
        }
        MpRequest::OnfFlowMonitor(v) => {
            onf_header(out, version, r.flags)?;
            monitor::encode_nx_requests(out, v, true)?;
        }
    }
    Ok(())
}

/// The experimenter multipart header of an OpenFlow 1.3 `ONFST_FLOW_MONITOR`.
fn onf_header(out: &mut Vec<u8>, version: u8, flags: u16) -> Result<(), EncodeError> {
    if version != OFP13 {
        return Err(EncodeError::NotInVersion("ONF flow monitor"));
    }
    mp_header(out, version, mp::EXPERIMENTER, flags);
    out.u32(ONF_EXPERIMENTER_ID);
    out.u32(ONFST_FLOW_MONITOR);
    Ok(())
}

/// `NotInVersion` below `min`.
fn since(version: u8, min: u8, what: &'static str) -> Result<(), EncodeError> {
    if version < min {
        return Err(EncodeError::NotInVersion(what));
    }
    Ok(())
}

// ---------------------------------------------------------------- replies

fn decode_table_features(version: u8, rd: &mut Rd<'_>) -> Result<TableFeatures, DecodeError> {
    let len = usize::from(rd.peek_u16(0).ok_or(DecodeError::BadLength)?);
    if len < 64 {
        return Err(DecodeError::BadLength);
    }
    let mut r = rd.sub(len, DecodeError::BadLength)?;
    r.skip(2)?;
    let table_id = r.u8()?;
    let command = if version == OFP15 {
        r.u8()?
    } else {
        r.u8().map(|_| 0)?
    };
    r.skip(4)?;
    Ok(TableFeatures {
        table_id,
        command,
        name: r.string(32)?,
        metadata_match: r.u64()?,
        metadata_write: r.u64()?,
        config: r.u32()?,
        max_entries: r.u32()?,
        props: decode_props(&mut r)?,
    })
}

fn encode_table_features(out: &mut Vec<u8>, version: u8, t: &TableFeatures) {
    let start = out.len();
    out.u16(0);
    out.u8(t.table_id);
    out.u8(if version == OFP15 { t.command } else { 0 });
    out.zeros(4);
    out.string(&t.name, 32);
    out.u64(t.metadata_match);
    out.u64(t.metadata_write);
    out.u32(t.config);
    out.u32(t.max_entries);
    encode_props(out, &t.props);
    let len = out.len() - start;
    out.patch_u16(start, len);
}

/// Records of a reply body: each starts with a 16-bit length at `len_off`.
pub(crate) fn records<'a>(
    rd: &mut Rd<'a>,
    len_off: usize,
    min: usize,
) -> Result<Vec<Rd<'a>>, DecodeError> {
    let mut v = Vec::new();
    while !rd.is_empty() {
        let len = usize::from(rd.peek_u16(len_off).ok_or(DecodeError::BadLength)?);
        if len < min {
            return Err(DecodeError::BadLength);
        }
        v.push(rd.sub(len, DecodeError::BadLength)?);
    }
    Ok(v)
}

fn decode_flow_stats(version: u8, mut r: Rd<'_>) -> Result<FlowStats, DecodeError> {
    r.skip(2)?;
    if version == OFP15 {
        r.skip(2)?;
        let table_id = r.u8()?;
        let _reason = r.u8()?;
        let priority = r.u16()?;
        let idle_timeout = r.u16()?;
        let hard_timeout = r.u16()?;
        let flags = r.u16()?;
        let importance = r.u16()?;
        let cookie = r.u64()?;
        let match_ = decode_ofp_match(&mut r)?;
        let st = decode_oxs(&mut r)?;
        let instructions = decode_instructions(version, &mut r)?;
        return Ok(FlowStats {
            table_id,
            duration_sec: st.duration_sec,
            duration_nsec: st.duration_nsec,
            priority,
            idle_timeout,
            hard_timeout,
            flags,
            importance,
            cookie,
            packet_count: st.packet_count,
            byte_count: st.byte_count,
            idle_age: 0,
            hard_age: 0,
            match_,
            instructions,
        });
    }
    let table_id = r.u8()?;
    r.skip(1)?;
    let m10 = if version == OFP10 {
        Some(decode_of10_match(&mut r)?)
    } else {
        None
    };
    let duration_sec = r.u32()?;
    let duration_nsec = r.u32()?;
    let priority = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let (flags, importance) = if version == OFP10 {
        r.skip(6)?;
        (0, 0)
    } else {
        let f = r.u16()?;
        let imp = r.u16()?;
        r.skip(2)?;
        (f, if version >= OFP14 { imp } else { 0 })
    };
    let cookie = r.u64()?;
    let packet_count = r.u64()?;
    let byte_count = r.u64()?;
    let (match_, instructions) = match m10 {
        Some(m) => {
            let a = decode_flow_actions(version, &mut r.with_err(DecodeError::BadActionLen), &m)?;
            (m, apply(a))
        }
        None => {
            let m = decode_ofp_match(&mut r)?;
            (m, decode_instructions(version, &mut r)?)
        }
    };
    Ok(FlowStats {
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags,
        importance,
        cookie,
        packet_count,
        byte_count,
        idle_age: 0,
        hard_age: 0,
        match_,
        instructions,
    })
}

fn apply(a: Vec<crate::Action>) -> Vec<Instruction> {
    if a.is_empty() {
        Vec::new()
    } else {
        vec![Instruction::ApplyActions(a)]
    }
}

fn encode_flow_stats(out: &mut Vec<u8>, version: u8, f: &FlowStats) -> Result<(), EncodeError> {
    let start = out.len();
    out.u16(0);
    if version == OFP15 {
        out.zeros(2);
        out.u8(f.table_id);
        out.u8(0);
        out.u16(f.priority);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        out.u16(f.flags);
        out.u16(f.importance);
        out.u64(f.cookie);
        encode_ofp_match(out, &f.match_);
        let st = OxsStats {
            duration_sec: f.duration_sec,
            duration_nsec: f.duration_nsec,
            packet_count: f.packet_count,
            byte_count: f.byte_count,
            ..Default::default()
        };
        encode_oxs(out, &st, false);
        encode_instructions(out, version, &f.instructions)?;
    } else {
        out.u8(f.table_id);
        out.u8(0);
        if version == OFP10 {
            encode_of10_match(out, &f.match_)?;
        }
        out.u32(f.duration_sec);
        out.u32(f.duration_nsec);
        out.u16(f.priority);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        if version == OFP10 {
            out.zeros(6);
        } else {
            out.u16(f.flags);
            out.u16(if version >= OFP14 { f.importance } else { 0 });
            out.zeros(2);
        }
        out.u64(f.cookie);
        out.u64(f.packet_count);
        out.u64(f.byte_count);
        if version == OFP10 {
            super::action::encode_of10_report(out, &f.instructions)?;
        } else {
            encode_ofp_match(out, &f.match_);
            encode_instructions(out, version, &f.instructions)?;
        }
    }
    let len = out.len() - start;
    out.patch_u16(start, len);
    Ok(())
}

fn decode_nx_flow_stats(mut r: Rd<'_>) -> Result<FlowStats, DecodeError> {
    r.skip(2)?;
    let table_id = r.u8()?;
    r.skip(1)?;
    let duration_sec = r.u32()?;
    let duration_nsec = r.u32()?;
    let priority = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let mlen = usize::from(r.u16()?);
    let idle_age = r.u16()?;
    let hard_age = r.u16()?;
    let cookie = r.u64()?;
    let packet_count = r.u64()?;
    let byte_count = r.u64()?;
    let mut mr = r.sub(mlen, DecodeError::BadMatchLen)?;
    let match_ = decode_match_tlvs(&mut mr)?;
    r.skip(pad8(mlen) - mlen)?;
    let a = decode_flow_actions(OFP10, &mut r.with_err(DecodeError::BadActionLen), &match_)?;
    Ok(FlowStats {
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags: 0,
        importance: 0,
        cookie,
        packet_count,
        byte_count,
        idle_age,
        hard_age,
        match_,
        instructions: apply(a),
    })
}

fn encode_nx_flow_stats(out: &mut Vec<u8>, f: &FlowStats) -> Result<(), EncodeError> {
    let start = out.len();
    out.u16(0);
    out.u8(f.table_id);
    out.u8(0);
    out.u32(f.duration_sec);
    out.u32(f.duration_nsec);
    out.u16(f.priority);
    out.u16(f.idle_timeout);
    out.u16(f.hard_timeout);
    let mlen_at = out.len();
    out.u16(0);
    out.u16(f.idle_age);
    out.u16(f.hard_age);
    out.u64(f.cookie);
    out.u64(f.packet_count);
    out.u64(f.byte_count);
    let ms = out.len();
    encode_tlvs(out, &f.match_, Mode::Nxm);
    let mlen = out.len() - ms;
    out.patch_u16(mlen_at, mlen);
    out.pad8_from(ms);
    super::action::encode_of10_report(out, &f.instructions)?;
    let len = out.len() - start;
    out.patch_u16(start, len);
    Ok(())
}

fn decode_aggregate(version: u8, rd: &mut Rd<'_>) -> Result<AggregateStats, DecodeError> {
    if version == OFP15 {
        let st = decode_oxs(rd)?;
        return Ok(AggregateStats {
            packet_count: st.packet_count,
            byte_count: st.byte_count,
            flow_count: st.flow_count.unwrap_or(0),
        });
    }
    let a = AggregateStats {
        packet_count: rd.u64()?,
        byte_count: rd.u64()?,
        flow_count: rd.u32()?,
    };
    rd.skip(4)?;
    Ok(a)
}

fn encode_aggregate(out: &mut Vec<u8>, version: u8, a: &AggregateStats) {
    if version == OFP15 {
        let st = OxsStats {
            flow_count: Some(a.flow_count),
            packet_count: a.packet_count,
            byte_count: a.byte_count,
            ..Default::default()
        };
        encode_oxs(out, &st, true);
        return;
    }
    out.u64(a.packet_count);
    out.u64(a.byte_count);
    out.u32(a.flow_count);
    out.zeros(4);
}

fn fixed_records<'a>(rd: &mut Rd<'a>, size: usize) -> Result<Vec<Rd<'a>>, DecodeError> {
    if !rd.len().is_multiple_of(size) {
        return Err(DecodeError::BadLength);
    }
    let mut v = Vec::with_capacity(rd.len() / size);
    while !rd.is_empty() {
        v.push(rd.sub(size, DecodeError::BadLength)?);
    }
    Ok(v)
}

pub(crate) fn decode_mp_reply(version: u8, rd: &mut Rd<'_>) -> Result<MultipartReply, DecodeError> {
    let ty = rd.u16()?;
    let flags = rd.u16()?;
    if version != OFP10 {
        rd.skip(4)?;
    }
    let body = match ty {
        mp::DESC => {
            let d = Desc {
                mfr_desc: rd.string(256)?,
                hw_desc: rd.string(256)?,
                sw_desc: rd.string(256)?,
                serial_num: rd.string(32)?,
                dp_desc: rd.string(256)?,
            };
            MpReply::Desc(d)
        }
        mp::FLOW => MpReply::Flow(
            records(rd, 0, 4)?
                .into_iter()
                .map(|r| decode_flow_stats(version, r))
                .collect::<Result<_, _>>()?,
        ),
        mp::AGGREGATE => MpReply::Aggregate(decode_aggregate(version, rd)?),
        mp::TABLE => {
            let size = if version == OFP10 { 64 } else { 24 };
            let mut v = Vec::new();
            for mut r in fixed_records(rd, size)? {
                let table_id = r.u8()?;
                r.skip(3)?;
                let mut t = TableStats {
                    table_id,
                    ..Default::default()
                };
                if version == OFP10 {
                    t.name = r.string(32)?;
                    t.wildcards = r.u32()?;
                    t.max_entries = r.u32()?;
                }
                t.active_count = r.u32()?;
                t.lookup_count = r.u64()?;
                t.matched_count = r.u64()?;
                v.push(t);
            }
            MpReply::Table(v)
        }
        mp::PORT_STATS => {
            let mut v = Vec::new();
            while !rd.is_empty() {
                v.push(decode_port_stats(version, rd)?);
            }
            MpReply::PortStats(v)
        }
        mp::QUEUE => {
            let mut v = Vec::new();
            let recs = match version {
                OFP10 => fixed_records(rd, 32)?,
                OFP13 => fixed_records(rd, 40)?,
                _ => records(rd, 0, 48)?,
            };
            for mut r in recs {
                let mut q = QueueStats::default();
                if version == OFP10 {
                    q.port_no = port_from_of10(r.u16()?);
                    r.skip(2)?;
                } else {
                    if version >= OFP14 {
                        r.skip(8)?;
                    }
                    q.port_no = r.u32()?;
                }
                q.queue_id = r.u32()?;
                q.tx_bytes = r.u64()?;
                q.tx_packets = r.u64()?;
                q.tx_errors = r.u64()?;
                if version != OFP10 {
                    q.duration_sec = r.u32()?;
                    q.duration_nsec = r.u32()?;
                }
                if version >= OFP14 {
                    q.props = decode_props(&mut r)?;
                }
                v.push(q);
            }
            MpReply::Queue(v)
        }
        mp::EXPERIMENTER => {
            let e = super::msg::decode_experimenter(rd)?;
            if e.experimenter == NX_VENDOR_ID && version == OFP10 {
                let mut b = Rd::new(&e.data, DecodeError::BadLength);
                b.skip(4)?;
                match e.exp_type {
                    NXST_FLOW => MpReply::NxFlow(
                        records(&mut b, 0, 48)?
                            .into_iter()
                            .map(decode_nx_flow_stats)
                            .collect::<Result<_, _>>()?,
                    ),
                    NXST_AGGREGATE => {
                        let a = decode_aggregate(OFP10, &mut b)?;
                        if !b.is_empty() {
                            return Err(DecodeError::BadLength);
                        }
                        MpReply::NxAggregate(a)
                    }
                    NXST_FLOW_MONITOR => {
                        MpReply::NxFlowMonitor(monitor::decode_nx_updates(&mut b, false)?)
                    }
                    t => return Err(DecodeError::BadExpType(t)),
                }
            } else if e.experimenter == ONF_EXPERIMENTER_ID
                && version == OFP13
                && e.exp_type == ONFST_FLOW_MONITOR
            {
                let mut b = Rd::new(&e.data, DecodeError::BadLength);
                MpReply::OnfFlowMonitor(monitor::decode_nx_updates(&mut b, true)?)
            } else {
                MpReply::Experimenter(e)
            }
        }
        _ if version == OFP10 => return Err(DecodeError::BadMultipart(ty)),
        mp::GROUP => {
            let mut v = Vec::new();
            for mut r in records(rd, 0, 40)? {
                r.skip(4)?;
                let mut g = GroupStats {
                    group_id: r.u32()?,
                    ref_count: r.u32()?,
                    ..Default::default()
                };
                r.skip(4)?;
                g.packet_count = r.u64()?;
                g.byte_count = r.u64()?;
                g.duration_sec = r.u32()?;
                g.duration_nsec = r.u32()?;
                for mut b in fixed_records(&mut r, 16)? {
                    g.buckets.push((b.u64()?, b.u64()?));
                }
                v.push(g);
            }
            MpReply::Group(v)
        }
        mp::GROUP_DESC => {
            let mut v = Vec::new();
            for mut r in records(rd, 0, 8)? {
                r.skip(2)?;
                let t = r.u8()?;
                let group_type = GroupType::from_u8(t).ok_or(DecodeError::BadGroupType(t))?;
                r.skip(1)?;
                let group_id = r.u32()?;
                let buckets = if version == OFP15 {
                    let blen = usize::from(r.u16()?);
                    r.skip(6)?;
                    let mut br = r.sub(blen, DecodeError::BadBucket)?;
                    let b = decode_buckets(version, &mut br, true)?;
                    decode_props(&mut r)?;
                    b
                } else {
                    decode_buckets(version, &mut r, false)?
                };
                v.push(GroupDesc {
                    group_type,
                    group_id,
                    buckets,
                });
            }
            MpReply::GroupDesc(v)
        }
        mp::GROUP_FEATURES => {
            let mut g = GroupFeatures {
                types: rd.u32()?,
                capabilities: rd.u32()?,
                ..Default::default()
            };
            for m in g.max_groups.iter_mut() {
                *m = rd.u32()?;
            }
            for a in g.actions.iter_mut() {
                *a = rd.u32()?;
            }
            MpReply::GroupFeatures(g)
        }
        mp::METER => {
            let mut v = Vec::new();
            for mut r in records(rd, 4, 40)? {
                let mut m = MeterStats {
                    meter_id: r.u32()?,
                    ..Default::default()
                };
                r.skip(8)?;
                m.flow_count = r.u32()?;
                m.packet_in_count = r.u64()?;
                m.byte_in_count = r.u64()?;
                m.duration_sec = r.u32()?;
                m.duration_nsec = r.u32()?;
                for mut b in fixed_records(&mut r, 16)? {
                    m.bands.push((b.u64()?, b.u64()?));
                }
                v.push(m);
            }
            MpReply::Meter(v)
        }
        mp::METER_CONFIG => {
            let mut v = Vec::new();
            for mut r in records(rd, 0, 8)? {
                r.skip(2)?;
                let flags = r.u16()?;
                let meter_id = r.u32()?;
                v.push(MeterConfig {
                    flags,
                    meter_id,
                    bands: decode_bands(&mut r)?,
                });
            }
            MpReply::MeterConfig(v)
        }
        mp::METER_FEATURES => {
            let mut m = MeterFeatures {
                max_meter: rd.u32()?,
                band_types: rd.u32()?,
                capabilities: rd.u32()?,
                max_bands: rd.u8()?,
                max_color: rd.u8()?,
                features: 0,
            };
            rd.skip(2)?;
            // 1.5 adds `features` (+ padding); os-ken's 1.5 vector omits it, so it is
            // optional on decode and written only when non-zero.
            if version == OFP15 && !rd.is_empty() {
                m.features = rd.u32()?;
                rd.skip(4)?;
            }
            MpReply::MeterFeatures(m)
        }
        mp::TABLE_FEATURES => {
            let mut v = Vec::new();
            while !rd.is_empty() {
                v.push(decode_table_features(version, rd)?);
            }
            MpReply::TableFeatures(v)
        }
        mp::PORT_DESC => {
            let mut v = Vec::new();
            while !rd.is_empty() {
                v.push(decode_port(version, rd)?);
            }
            MpReply::PortDesc(v)
        }
        _ if version >= OFP14 => match of14::decode_reply(version, ty, rd)? {
            Some(of14::Rep::TableDesc(v)) => MpReply::TableDesc(v),
            Some(of14::Rep::QueueDesc(v)) => MpReply::QueueDesc(v),
            Some(of14::Rep::ControllerStatus(v)) => MpReply::ControllerStatus(v),
            Some(of14::Rep::BundleFeatures(b)) => MpReply::BundleFeatures(b),
            Some(of14::Rep::FlowStats(v)) => MpReply::FlowStats15(v),
            None if ty == of14::mp::FLOW_MONITOR => {
                MpReply::FlowMonitor(monitor::decode_updates(version, rd)?)
            }
            None => return Err(DecodeError::BadMultipart(ty)),
        },
        _ => return Err(DecodeError::BadMultipart(ty)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(MultipartReply { flags, body })
}

pub(crate) fn encode_mp_reply(
    out: &mut Vec<u8>,
    version: u8,
    r: &MultipartReply,
) -> Result<(), EncodeError> {
    let hdr = |out: &mut Vec<u8>, ty| mp_header(out, version, ty, r.flags);
    let of11 = |what| {
        if version == OFP10 {
            Err(EncodeError::NotInVersion(what))
        } else {
            Ok(())
        }
    };
    match &r.body {
        MpReply::Desc(d) => {
            hdr(out, mp::DESC);
            out.string(&d.mfr_desc, 256);
            out.string(&d.hw_desc, 256);
            out.string(&d.sw_desc, 256);
            out.string(&d.serial_num, 32);
            out.string(&d.dp_desc, 256);
        }
        MpReply::Flow(v) => {
            hdr(out, mp::FLOW);
            for f in v {
                encode_flow_stats(out, version, f)?;
            }
        }
        MpReply::Aggregate(a) => {
            hdr(out, mp::AGGREGATE);
            encode_aggregate(out, version, a);
        }
        MpReply::Table(v) => {
            hdr(out, mp::TABLE);
            for t in v {
                out.u8(t.table_id);
                out.zeros(3);
                if version == OFP10 {
                    out.string(&t.name, 32);
                    out.u32(t.wildcards);
                    out.u32(t.max_entries);
                }
                out.u32(t.active_count);
                out.u64(t.lookup_count);
                out.u64(t.matched_count);
            }
        }
        MpReply::PortStats(v) => {
            hdr(out, mp::PORT_STATS);
            for s in v {
                encode_port_stats(out, version, s)?;
            }
        }
        MpReply::Queue(v) => {
            hdr(out, mp::QUEUE);
            for q in v {
                let start = out.len();
                if version == OFP10 {
                    out.u16(
                        port_to_of10(q.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?,
                    );
                    out.zeros(2);
                } else {
                    if version >= OFP14 {
                        out.u16(0);
                        out.zeros(6);
                    }
                    out.u32(q.port_no);
                }
                out.u32(q.queue_id);
                out.u64(q.tx_bytes);
                out.u64(q.tx_packets);
                out.u64(q.tx_errors);
                if version != OFP10 {
                    out.u32(q.duration_sec);
                    out.u32(q.duration_nsec);
                }
                if version >= OFP14 {
                    encode_props(out, &q.props);
                    let len = out.len() - start;
                    out.patch_u16(start, len);
                }
            }
        }
        MpReply::Group(v) => {
            of11("group stats")?;
            hdr(out, mp::GROUP);
            for g in v {
                out.u16((40 + 16 * g.buckets.len()) as u16);
                out.zeros(2);
                out.u32(g.group_id);
                out.u32(g.ref_count);
                out.zeros(4);
                out.u64(g.packet_count);
                out.u64(g.byte_count);
                out.u32(g.duration_sec);
                out.u32(g.duration_nsec);
                for (p, b) in &g.buckets {
                    out.u64(*p);
                    out.u64(*b);
                }
            }
        }
        MpReply::GroupDesc(v) => {
            of11("group desc")?;
            hdr(out, mp::GROUP_DESC);
            for g in v {
                let start = out.len();
                out.u16(0);
                out.u8(g.group_type as u8);
                out.u8(0);
                out.u32(g.group_id);
                if version == OFP15 {
                    let mut b = Vec::new();
                    encode_buckets(&mut b, version, &g.buckets)?;
                    out.u16(b.len() as u16);
                    out.zeros(6);
                    out.extend_from_slice(&b);
                } else {
                    encode_buckets(out, version, &g.buckets)?;
                }
                let len = out.len() - start;
                out.patch_u16(start, len);
            }
        }
        MpReply::GroupFeatures(g) => {
            of11("group features")?;
            hdr(out, mp::GROUP_FEATURES);
            out.u32(g.types);
            out.u32(g.capabilities);
            g.max_groups.iter().for_each(|m| out.u32(*m));
            g.actions.iter().for_each(|a| out.u32(*a));
        }
        MpReply::Meter(v) => {
            of11("meter stats")?;
            hdr(out, mp::METER);
            for m in v {
                out.u32(m.meter_id);
                out.u16((40 + 16 * m.bands.len()) as u16);
                out.zeros(6);
                out.u32(m.flow_count);
                out.u64(m.packet_in_count);
                out.u64(m.byte_in_count);
                out.u32(m.duration_sec);
                out.u32(m.duration_nsec);
                for (p, b) in &m.bands {
                    out.u64(*p);
                    out.u64(*b);
                }
            }
        }
        MpReply::MeterConfig(v) => {
            of11("meter config")?;
            hdr(out, mp::METER_CONFIG);
            for m in v {
                out.u16((8 + 16 * m.bands.len()) as u16);
                out.u16(m.flags);
                out.u32(m.meter_id);
                encode_bands(out, &m.bands);
            }
        }
        MpReply::MeterFeatures(m) => {
            of11("meter features")?;
            hdr(out, mp::METER_FEATURES);
            out.u32(m.max_meter);
            out.u32(m.band_types);
            out.u32(m.capabilities);
            out.u8(m.max_bands);
            out.u8(m.max_color);
            out.zeros(2);
            if version == OFP15 && m.features != 0 {
                out.u32(m.features);
                out.zeros(4);
            }
        }
        MpReply::TableFeatures(v) => {
            of11("table features")?;
            hdr(out, mp::TABLE_FEATURES);
            v.iter()
                .for_each(|t| encode_table_features(out, version, t));
        }
        MpReply::PortDesc(v) => {
            of11("port desc")?;
            hdr(out, mp::PORT_DESC);
            for p in v {
                encode_port(out, version, p)?;
            }
        }
        MpReply::Experimenter(e) => {
            hdr(out, mp::EXPERIMENTER);
            super::msg::encode_experimenter(out, e);
        }
        MpReply::NxFlow(v) => {
            nx_stats_header(out, version, r.flags, NXST_FLOW)?;
            for f in v {
                encode_nx_flow_stats(out, f)?;
            }
        }
        MpReply::NxAggregate(a) => {
            nx_stats_header(out, version, r.flags, NXST_AGGREGATE)?;
            encode_aggregate(out, OFP10, a);
        }
        MpReply::TableDesc(v) => {
            since(version, OFP14, "table desc")?;
            hdr(out, of14::mp::TABLE_DESC);
            of14::encode_table_descs(out, v);
        }
        MpReply::QueueDesc(v) => {
            since(version, OFP14, "queue desc")?;
            hdr(out, of14::mp::QUEUE_DESC);
            of14::encode_queue_descs(out, v);
        }
        MpReply::ControllerStatus(v) => {
            since(version, OFP15, "controller status")?;
            hdr(out, of14::mp::CONTROLLER_STATUS);
            of14::encode_controller_statuses(out, v);
        }
        MpReply::BundleFeatures(b) => {
            since(version, OFP15, "bundle features")?;
            hdr(out, of14::mp::BUNDLE_FEATURES);
            of14::encode_bundle_features(out, b);
        }
        MpReply::FlowStats15(v) => {
            since(version, OFP15, "flow stats (1.5)")?;
            hdr(out, of14::mp::FLOW_STATS);
            of14::encode_flow_stats15(out, v);
        }
        MpReply::FlowMonitor(v) => {
            since(version, OFP14, "flow monitor")?;
            hdr(out, of14::mp::FLOW_MONITOR);
            monitor::encode_updates(out, version, v)?;
        }
        MpReply::NxFlowMonitor(v) => {
            nx_stats_header(out, version, r.flags, NXST_FLOW_MONITOR)?;
            monitor::encode_nx_updates(out, v, false)?;
        }
        MpReply::OnfFlowMonitor(v) => {
            onf_header(out, version, r.flags)?;
            monitor::encode_nx_updates(out, v, true)?;
        }
    }
    Ok(())
}
