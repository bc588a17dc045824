//! Multipart replies: the [`MultipartReply`] enum and its dispatch on the multipart
//! type, both ways.
//!
//! Decoding reads the type and flags, hands the body to its family's decoder and
//! requires the body to be used completely. Encoding first writes the header the body
//! needs (`Intro`, which refuses a version that lacks the body), then the body. OpenFlow
//! 1.4+ bodies go through [`crate::wire::of14`] and flow monitor updates through
//! [`crate::wire::monitor`].

use super::flow::{self, AggregateStats, FlowStats};
use super::{decode_header, desc, experimenter, group, meter, mp, ports, queue, table, Intro};
use super::{
    Desc, GroupDesc, GroupFeatures, GroupStats, MeterConfig, MeterFeatures, MeterStats, QueueStats,
    TableFeatures, TableStats,
};
use crate::wire::buf::Rd;
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::msg::{encode_experimenter, Experimenter};
use crate::wire::port::{Port, PortStats};
use crate::wire::{monitor, of14, OFP10, OFP14, OFP15};

/// A multipart reply.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MultipartReply {
    /// `OFPMPF_REPLY_MORE`.
    pub flags: u16,
    /// The body.
    pub body: MpReply,
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
    Experimenter(Experimenter),
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
    /// The bridge's IPFIX exporter statistics (`NXST_IPFIX_BRIDGE`, every version).
    IpfixBridge(super::IpfixStats),
    /// Flow-based IPFIX statistics, one record per collector set (`NXST_IPFIX_FLOW`).
    IpfixFlow(Vec<super::IpfixStats>),
}

pub(crate) fn decode_mp_reply(version: u8, rd: &mut Rd<'_>) -> Result<MultipartReply, DecodeError> {
    let (ty, flags) = decode_header(version, rd)?;
    let body = match ty {
        mp::DESC => MpReply::Desc(desc::decode(rd)?),
        mp::FLOW => MpReply::Flow(flow::decode_flow_stats_list(version, rd)?),
        mp::AGGREGATE => MpReply::Aggregate(flow::decode_aggregate(version, rd)?),
        mp::TABLE => MpReply::Table(table::decode_stats(version, rd)?),
        mp::PORT_STATS => MpReply::PortStats(ports::decode_stats(version, rd)?),
        mp::QUEUE => MpReply::Queue(queue::decode_stats(version, rd)?),
        mp::EXPERIMENTER => experimenter::decode_reply(version, rd)?,
        _ if version == OFP10 => return Err(DecodeError::BadMultipart(ty)),
        mp::GROUP => MpReply::Group(group::decode_stats(rd)?),
        mp::GROUP_DESC => MpReply::GroupDesc(group::decode_descs(version, rd)?),
        mp::GROUP_FEATURES => MpReply::GroupFeatures(group::decode_features(rd)?),
        mp::METER => MpReply::Meter(meter::decode_stats(rd)?),
        mp::METER_CONFIG => MpReply::MeterConfig(meter::decode_configs(rd)?),
        mp::METER_FEATURES => MpReply::MeterFeatures(meter::decode_features(version, rd)?),
        mp::TABLE_FEATURES => MpReply::TableFeatures(table::decode_features(version, rd)?),
        mp::PORT_DESC => MpReply::PortDesc(ports::decode_descs(version, rd)?),
        _ if version >= OFP14 => decode_of14(version, ty, rd)?,
        _ => return Err(DecodeError::BadMultipart(ty)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(MultipartReply { flags, body })
}

/// The reply bodies OpenFlow 1.4 and 1.5 added.
fn decode_of14(version: u8, ty: u16, rd: &mut Rd<'_>) -> Result<MpReply, DecodeError> {
    Ok(match of14::decode_reply(version, ty, rd)? {
        Some(of14::Rep::TableDesc(v)) => MpReply::TableDesc(v),
        Some(of14::Rep::QueueDesc(v)) => MpReply::QueueDesc(v),
        Some(of14::Rep::ControllerStatus(v)) => MpReply::ControllerStatus(v),
        Some(of14::Rep::BundleFeatures(b)) => MpReply::BundleFeatures(b),
        Some(of14::Rep::FlowStats(v)) => MpReply::FlowStats15(v),
        None if ty == of14::mp::FLOW_MONITOR => {
            MpReply::FlowMonitor(monitor::decode_updates(version, rd)?)
        }
        None => return Err(DecodeError::BadMultipart(ty)),
    })
}

/// The header each reply body travels under.
fn intro(body: &MpReply) -> Intro {
    use experimenter::{NXST_AGGREGATE, NXST_FLOW, NXST_FLOW_MONITOR};
    use experimenter::{NXST_GROUP, NXST_GROUP_DESC, NXST_GROUP_FEATURES};
    match body {
        MpReply::Desc(_) => Intro::any(mp::DESC),
        MpReply::Flow(_) => Intro::any(mp::FLOW),
        MpReply::Aggregate(_) => Intro::any(mp::AGGREGATE),
        MpReply::Table(_) => Intro::any(mp::TABLE),
        MpReply::PortStats(_) => Intro::any(mp::PORT_STATS),
        MpReply::Queue(_) => Intro::any(mp::QUEUE),
        MpReply::Group(_) => Intro::group(mp::GROUP, NXST_GROUP, "group stats"),
        MpReply::GroupDesc(_) => Intro::group(mp::GROUP_DESC, NXST_GROUP_DESC, "group desc"),
        MpReply::GroupFeatures(_) => {
            Intro::group(mp::GROUP_FEATURES, NXST_GROUP_FEATURES, "group features")
        }
        MpReply::Meter(_) => Intro::of11(mp::METER, "meter stats"),
        MpReply::MeterConfig(_) => Intro::of11(mp::METER_CONFIG, "meter config"),
        MpReply::MeterFeatures(_) => Intro::of11(mp::METER_FEATURES, "meter features"),
        MpReply::TableFeatures(_) => Intro::of11(mp::TABLE_FEATURES, "table features"),
        MpReply::PortDesc(_) => Intro::of11(mp::PORT_DESC, "port desc"),
        MpReply::Experimenter(_) => Intro::any(mp::EXPERIMENTER),
        MpReply::NxFlow(_) => Intro::Nx(NXST_FLOW),
        MpReply::NxAggregate(_) => Intro::Nx(NXST_AGGREGATE),
        MpReply::TableDesc(_) => Intro::since(of14::mp::TABLE_DESC, OFP14, "table desc"),
        MpReply::QueueDesc(_) => Intro::since(of14::mp::QUEUE_DESC, OFP14, "queue desc"),
        MpReply::ControllerStatus(_) => {
            Intro::since(of14::mp::CONTROLLER_STATUS, OFP15, "controller status")
        }
        MpReply::BundleFeatures(_) => {
            Intro::since(of14::mp::BUNDLE_FEATURES, OFP15, "bundle features")
        }
        MpReply::FlowStats15(_) => Intro::since(of14::mp::FLOW_STATS, OFP15, "flow stats (1.5)"),
        MpReply::FlowMonitor(_) => Intro::since(of14::mp::FLOW_MONITOR, OFP14, "flow monitor"),
        MpReply::NxFlowMonitor(_) => Intro::Nx(NXST_FLOW_MONITOR),
        MpReply::OnfFlowMonitor(_) => Intro::OnfMonitor,
        MpReply::IpfixBridge(_) => Intro::NxAny(super::ipfix::NXST_IPFIX_BRIDGE),
        MpReply::IpfixFlow(_) => Intro::NxAny(super::ipfix::NXST_IPFIX_FLOW),
    }
}

pub(crate) fn encode_mp_reply(
    out: &mut Vec<u8>,
    version: u8,
    r: &MultipartReply,
) -> Result<(), EncodeError> {
    intro(&r.body).write(out, version, r.flags)?;
    match &r.body {
        MpReply::Desc(d) => desc::encode(out, d),
        MpReply::Flow(v) => flow::encode_flow_stats_list(out, version, v)?,
        MpReply::Aggregate(a) => flow::encode_aggregate(out, version, a),
        MpReply::Table(v) => table::encode_stats(out, version, v),
        MpReply::PortStats(v) => ports::encode_stats(out, version, v)?,
        MpReply::Queue(v) => queue::encode_stats(out, version, v)?,
        MpReply::Group(v) => group::encode_stats(out, v),
        MpReply::GroupDesc(v) => group::encode_descs(out, version, v)?,
        MpReply::GroupFeatures(g) => group::encode_features(out, g),
        MpReply::Meter(v) => meter::encode_stats(out, v),
        MpReply::MeterConfig(v) => meter::encode_configs(out, v),
        MpReply::MeterFeatures(m) => meter::encode_features(out, version, m),
        MpReply::TableFeatures(v) => table::encode_features(out, version, v),
        MpReply::PortDesc(v) => ports::encode_descs(out, version, v)?,
        MpReply::Experimenter(e) => encode_experimenter(out, e),
        MpReply::NxFlow(v) => {
            for f in v {
                experimenter::encode_nx_flow_stats(out, f)?;
            }
        }
        MpReply::NxAggregate(a) => flow::encode_aggregate(out, OFP10, a),
        MpReply::TableDesc(v) => of14::encode_table_descs(out, v),
        MpReply::QueueDesc(v) => of14::encode_queue_descs(out, v),
        MpReply::ControllerStatus(v) => of14::encode_controller_statuses(out, v),
        MpReply::BundleFeatures(b) => of14::encode_bundle_features(out, b),
        MpReply::FlowStats15(v) => of14::encode_flow_stats15(out, v),
        MpReply::FlowMonitor(v) => monitor::encode_updates(out, version, v)?,
        MpReply::NxFlowMonitor(v) => monitor::encode_nx_updates(out, v, false)?,
        MpReply::OnfFlowMonitor(v) => monitor::encode_nx_updates(out, v, true)?,
        MpReply::IpfixBridge(s) => super::ipfix::encode_stats(out, std::slice::from_ref(s)),
        MpReply::IpfixFlow(v) => super::ipfix::encode_stats(out, v),
    }
    Ok(())
}
