//! Multipart requests: the [`MultipartRequest`] enum and its dispatch on the multipart
//! type, both ways.
//!
//! Decoding reads the type and flags, hands the body to its family's decoder (bodies
//! that are a bare id or nothing at all are read here), and requires the body to be used
//! completely. Encoding first writes the header the body needs (`Intro`, which refuses a
//! version that lacks the body), then the body. OpenFlow 1.4+ bodies go through
//! [`crate::wire::of14`] and flow monitors through [`crate::wire::monitor`].

use super::flow::{decode_flow_req, encode_flow_req, FlowStatsRequest};
use super::{decode_header, decode_id, encode_id, experimenter, mp, ports, queue, table};
use super::{Intro, TableFeatures};
use crate::actions::{OFPG_ALL, OFPP_ANY};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::msg::{encode_experimenter, layout15, Experimenter};
use crate::wire::{monitor, of14, OFP10, OFP14, OFP15};

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
    Experimenter(Experimenter),
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
    /// The bridge's IPFIX exporter statistics (`NXST_IPFIX_BRIDGE`, every version).
    IpfixBridge,
    /// Flow-based IPFIX statistics, per collector set (`NXST_IPFIX_FLOW`, every version).
    IpfixFlow,
}

pub(crate) fn decode_mp_request(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<MultipartRequest, DecodeError> {
    let (ty, flags) = decode_header(version, rd)?;
    let body = match ty {
        mp::DESC => MpRequest::Desc,
        mp::FLOW => MpRequest::Flow(decode_flow_req(version, rd)?),
        mp::AGGREGATE => MpRequest::Aggregate(decode_flow_req(version, rd)?),
        mp::TABLE => MpRequest::Table,
        mp::PORT_STATS => MpRequest::PortStats(ports::decode_stats_request(version, rd)?),
        mp::QUEUE => {
            let (port_no, queue_id) = queue::decode_request(version, rd)?;
            MpRequest::Queue { port_no, queue_id }
        }
        mp::EXPERIMENTER => experimenter::decode_request(version, rd)?,
        _ if version == OFP10 => return Err(DecodeError::BadMultipart(ty)),
        mp::GROUP => MpRequest::Group(decode_id(rd)?),
        mp::GROUP_DESC => MpRequest::GroupDesc(if version == OFP15 {
            decode_id(rd)?
        } else {
            OFPG_ALL
        }),
        mp::GROUP_FEATURES => MpRequest::GroupFeatures,
        mp::METER => MpRequest::Meter(decode_id(rd)?),
        mp::METER_CONFIG => MpRequest::MeterConfig(decode_id(rd)?),
        mp::METER_FEATURES => MpRequest::MeterFeatures,
        mp::TABLE_FEATURES => MpRequest::TableFeatures(table::decode_features(version, rd)?),
        mp::PORT_DESC => MpRequest::PortDesc(if version == OFP15 {
            decode_id(rd)?
        } else {
            OFPP_ANY
        }),
        _ if version >= OFP14 => decode_of14(version, ty, rd)?,
        _ => return Err(DecodeError::BadMultipart(ty)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(MultipartRequest { flags, body })
}

/// The request bodies OpenFlow 1.4 and 1.5 added.
fn decode_of14(version: u8, ty: u16, rd: &mut Rd<'_>) -> Result<MpRequest, DecodeError> {
    Ok(match of14::decode_request(version, ty, rd)? {
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
    })
}

/// The header each request body travels under.
fn intro(body: &MpRequest) -> Intro {
    use experimenter::{NXST_AGGREGATE, NXST_FLOW, NXST_FLOW_MONITOR};
    use experimenter::{NXST_GROUP, NXST_GROUP_DESC, NXST_GROUP_FEATURES};
    match body {
        MpRequest::Desc => Intro::any(mp::DESC),
        MpRequest::Flow(_) => Intro::any(mp::FLOW),
        MpRequest::Aggregate(_) => Intro::any(mp::AGGREGATE),
        MpRequest::Table => Intro::any(mp::TABLE),
        MpRequest::PortStats(_) => Intro::any(mp::PORT_STATS),
        MpRequest::Queue { .. } => Intro::any(mp::QUEUE),
        MpRequest::Group(_) => Intro::group(mp::GROUP, NXST_GROUP, "group stats"),
        MpRequest::GroupDesc(_) => Intro::group(mp::GROUP_DESC, NXST_GROUP_DESC, "group desc"),
        MpRequest::GroupFeatures => {
            Intro::group(mp::GROUP_FEATURES, NXST_GROUP_FEATURES, "group features")
        }
        MpRequest::Meter(_) => Intro::of11(mp::METER, "meter stats"),
        MpRequest::MeterConfig(_) => Intro::of11(mp::METER_CONFIG, "meter config"),
        MpRequest::MeterFeatures => Intro::of11(mp::METER_FEATURES, "meter features"),
        MpRequest::TableFeatures(_) => Intro::of11(mp::TABLE_FEATURES, "table features"),
        MpRequest::PortDesc(_) => Intro::of11(mp::PORT_DESC, "port desc"),
        MpRequest::Experimenter(_) => Intro::any(mp::EXPERIMENTER),
        MpRequest::NxFlow(_) => Intro::Nx(NXST_FLOW),
        MpRequest::NxAggregate(_) => Intro::Nx(NXST_AGGREGATE),
        MpRequest::TableDesc => Intro::since(of14::mp::TABLE_DESC, OFP14, "table desc"),
        MpRequest::QueueDesc { .. } => Intro::since(of14::mp::QUEUE_DESC, OFP14, "queue desc"),
        MpRequest::ControllerStatus => {
            Intro::since(of14::mp::CONTROLLER_STATUS, OFP15, "controller status")
        }
        MpRequest::BundleFeatures(_) => {
            Intro::since(of14::mp::BUNDLE_FEATURES, OFP15, "bundle features")
        }
        MpRequest::FlowStats15(_) => Intro::since(of14::mp::FLOW_STATS, OFP15, "flow stats (1.5)"),
        MpRequest::FlowMonitor(_) => Intro::since(of14::mp::FLOW_MONITOR, OFP14, "flow monitor"),
        MpRequest::NxFlowMonitor(_) => Intro::Nx(NXST_FLOW_MONITOR),
        MpRequest::OnfFlowMonitor(_) => Intro::OnfMonitor,
        MpRequest::IpfixBridge => Intro::NxAny(super::ipfix::NXST_IPFIX_BRIDGE),
        MpRequest::IpfixFlow => Intro::NxAny(super::ipfix::NXST_IPFIX_FLOW),
    }
}

pub(crate) fn encode_mp_request(
    out: &mut Vec<u8>,
    version: u8,
    r: &MultipartRequest,
) -> Result<(), EncodeError> {
    intro(&r.body).write(out, version, r.flags)?;
    match &r.body {
        MpRequest::Desc
        | MpRequest::Table
        | MpRequest::GroupFeatures
        | MpRequest::MeterFeatures
        | MpRequest::TableDesc
        | MpRequest::ControllerStatus
        | MpRequest::IpfixBridge
        | MpRequest::IpfixFlow => {}
        MpRequest::Flow(f) | MpRequest::Aggregate(f) | MpRequest::FlowStats15(f) => {
            encode_flow_req(out, version, f)?
        }
        MpRequest::PortStats(p) => ports::encode_stats_request(out, version, *p)?,
        MpRequest::Queue { port_no, queue_id } => {
            queue::encode_request(out, version, *port_no, *queue_id)?
        }
        MpRequest::Group(id) | MpRequest::Meter(id) | MpRequest::MeterConfig(id) => {
            encode_id(out, *id)
        }
        MpRequest::GroupDesc(id) => {
            if layout15(version) {
                encode_id(out, *id);
            }
        }
        MpRequest::PortDesc(id) => {
            if version == OFP15 {
                encode_id(out, *id);
            }
        }
        MpRequest::TableFeatures(v) => table::encode_features(out, version, v),
        MpRequest::Experimenter(e) => encode_experimenter(out, e),
        MpRequest::NxFlow(f) | MpRequest::NxAggregate(f) => {
            experimenter::encode_nx_flow_req(out, f)?
        }
        MpRequest::QueueDesc { port_no, queue_id } => {
            out.u32(*port_no);
            out.u32(*queue_id);
        }
        MpRequest::BundleFeatures(b) => of14::encode_bundle_features_request(out, b),
        MpRequest::FlowMonitor(v) => monitor::encode_requests(out, v, version),
        MpRequest::NxFlowMonitor(v) => monitor::encode_nx_requests(out, v, false)?,
        MpRequest::OnfFlowMonitor(v) => monitor::encode_nx_requests(out, v, true)?,
    }
    Ok(())
}
