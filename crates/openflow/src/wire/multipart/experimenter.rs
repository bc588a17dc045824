//! Experimenter multiparts: Nicira vendor statistics, the ONF flow monitor, and raw
//! experimenter bodies.
//!
//! An experimenter body is the experimenter id and a 32-bit type, then data. Three forms
//! are understood, the rest is kept raw ([`MpRequest::Experimenter`] /
//! [`MpReply::Experimenter`]):
//!
//! * OpenFlow 1.0 Nicira vendor stats (`NX_VENDOR_ID`), whose data starts with 4 pad:
//!   `NXST_FLOW` and `NXST_AGGREGATE` (requests: out_port u16, match length u16, table,
//!   3 pad, an NXM match padded to 8; flow records: length, table, pad, duration,
//!   priority, timeouts, match length, idle and hard age, cookie, counters, the NXM match
//!   padded to 8, OpenFlow 1.0 actions), `NXST_FLOW_MONITOR` ([`crate::wire::monitor`]),
//!   and the group bodies `NXST_GROUP`, `NXST_GROUP_DESC` and `NXST_GROUP_FEATURES`
//!   ([`super::group`]), which decode to the same [`MpRequest`] / [`MpReply`] variants as
//!   1.1+'s group multiparts, and `NXST_IPFIX_BRIDGE` / `NXST_IPFIX_FLOW` ([`ipfix`]). Any
//!   other Nicira subtype is `BadExpType`; a request must use all its bytes.
//! * Nicira's IPFIX statistics from OpenFlow 1.1 on (experimenter multiparts, no padding
//!   after the subtype); other Nicira subtypes there stay raw.
//! * OpenFlow 1.3 `ONFST_FLOW_MONITOR` (ONF experimenter, type 1870), what
//!   `ovs-ofctl -O OpenFlow13 monitor` sends: Nicira monitor bodies with OpenFlow 1.3
//!   matches and instructions.
//!
//! Nicira flow records are all cut before any is decoded. The encoders refuse these forms
//! in any other version (`NotInVersion`).

use super::flow::{apply, decode_aggregate, FlowStats, FlowStatsRequest};
use super::ipfix::{self, NXST_IPFIX_BRIDGE, NXST_IPFIX_FLOW};
use super::{decode_id, group, header, mp, MpReply, MpRequest};
use crate::actions::{port_from_of10, port_to_of10};
use crate::wire::action::{decode_flow_actions, encode_of10_report, NX_VENDOR_ID};
use crate::wire::buf::{pad8, Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::msg::{decode_experimenter, ONF_EXPERIMENTER_ID};
use crate::wire::oxm::{decode_match_tlvs, encode_tlvs, Mode};
use crate::wire::record::Framing;
use crate::wire::{monitor, OFP10, OFP13};

/// `NXST_FLOW`.
pub(super) const NXST_FLOW: u32 = 0;
/// `NXST_AGGREGATE`.
pub(super) const NXST_AGGREGATE: u32 = 1;
/// `NXST_FLOW_MONITOR`.
pub(super) const NXST_FLOW_MONITOR: u32 = 2;
/// `NXST_GROUP`: group statistics in OpenFlow 1.0.
pub(super) const NXST_GROUP: u32 = 7;
/// `NXST_GROUP_DESC`: group descriptions in OpenFlow 1.0.
pub(super) const NXST_GROUP_DESC: u32 = 8;
/// `NXST_GROUP_FEATURES`: group features in OpenFlow 1.0.
pub(super) const NXST_GROUP_FEATURES: u32 = 9;
/// `ONFST_FLOW_MONITOR`: OpenFlow 1.3 experimenter multipart with Nicira bodies.
const ONFST_FLOW_MONITOR: u32 = 1870;

/// Whether `e` is Nicira vendor stats (OpenFlow 1.0 only).
fn is_nx(version: u8, e: &crate::wire::Experimenter) -> bool {
    e.experimenter == NX_VENDOR_ID && version == OFP10
}

/// Whether `e` is Nicira's IPFIX statistics in OpenFlow 1.1+ (an experimenter multipart
/// without the padding 1.0's vendor stats have; see [`ipfix`]).
fn is_nx_ipfix(e: &crate::wire::Experimenter) -> bool {
    e.experimenter == NX_VENDOR_ID && matches!(e.exp_type, NXST_IPFIX_BRIDGE | NXST_IPFIX_FLOW)
}

/// Whether `e` is the OpenFlow 1.3 ONF flow monitor.
fn is_onf_monitor(version: u8, e: &crate::wire::Experimenter) -> bool {
    e.experimenter == ONF_EXPERIMENTER_ID && version == OFP13 && e.exp_type == ONFST_FLOW_MONITOR
}

pub(super) fn decode_request(version: u8, rd: &mut Rd<'_>) -> Result<MpRequest, DecodeError> {
    let e = decode_experimenter(rd)?;
    if is_nx(version, &e) {
        let mut b = Rd::new(&e.data, DecodeError::BadLength);
        b.skip(4)?;
        let r = match e.exp_type {
            NXST_FLOW => MpRequest::NxFlow(decode_nx_flow_req(&mut b)?),
            NXST_AGGREGATE => MpRequest::NxAggregate(decode_nx_flow_req(&mut b)?),
            NXST_FLOW_MONITOR => {
                MpRequest::NxFlowMonitor(monitor::decode_nx_requests(&mut b, false)?)
            }
            NXST_GROUP => MpRequest::Group(decode_id(&mut b)?),
            NXST_GROUP_DESC => MpRequest::GroupDesc(decode_id(&mut b)?),
            NXST_GROUP_FEATURES => MpRequest::GroupFeatures,
            NXST_IPFIX_BRIDGE => MpRequest::IpfixBridge,
            NXST_IPFIX_FLOW => MpRequest::IpfixFlow,
            t => return Err(DecodeError::BadExpType(t)),
        };
        if !b.is_empty() {
            return Err(DecodeError::BadLength);
        }
        Ok(r)
    } else if is_nx_ipfix(&e) {
        if !e.data.is_empty() {
            return Err(DecodeError::BadLength);
        }
        Ok(if e.exp_type == NXST_IPFIX_BRIDGE {
            MpRequest::IpfixBridge
        } else {
            MpRequest::IpfixFlow
        })
    } else if is_onf_monitor(version, &e) {
        let mut b = Rd::new(&e.data, DecodeError::BadLength);
        Ok(MpRequest::OnfFlowMonitor(monitor::decode_nx_requests(
            &mut b, true,
        )?))
    } else {
        Ok(MpRequest::Experimenter(e))
    }
}

pub(super) fn decode_reply(version: u8, rd: &mut Rd<'_>) -> Result<MpReply, DecodeError> {
    let e = decode_experimenter(rd)?;
    if is_nx(version, &e) {
        let mut b = Rd::new(&e.data, DecodeError::BadLength);
        b.skip(4)?;
        Ok(match e.exp_type {
            NXST_FLOW => {
                MpReply::NxFlow(Framing::prefixed(0, 48).all(&mut b, decode_nx_flow_stats)?)
            }
            NXST_AGGREGATE => {
                let a = decode_aggregate(OFP10, &mut b)?;
                if !b.is_empty() {
                    return Err(DecodeError::BadLength);
                }
                MpReply::NxAggregate(a)
            }
            NXST_FLOW_MONITOR => MpReply::NxFlowMonitor(monitor::decode_nx_updates(&mut b, false)?),
            NXST_GROUP => MpReply::Group(group::decode_stats(&mut b)?),
            NXST_GROUP_DESC => MpReply::GroupDesc(group::decode_descs(OFP10, &mut b)?),
            NXST_GROUP_FEATURES => {
                let g = group::decode_features(&mut b)?;
                if !b.is_empty() {
                    return Err(DecodeError::BadLength);
                }
                MpReply::GroupFeatures(g)
            }
            NXST_IPFIX_BRIDGE => MpReply::IpfixBridge(ipfix::decode_bridge(&mut b)?),
            NXST_IPFIX_FLOW => MpReply::IpfixFlow(ipfix::decode_stats(&mut b)?),
            t => return Err(DecodeError::BadExpType(t)),
        })
    } else if is_nx_ipfix(&e) {
        let mut b = Rd::new(&e.data, DecodeError::BadLength);
        Ok(if e.exp_type == NXST_IPFIX_BRIDGE {
            MpReply::IpfixBridge(ipfix::decode_bridge(&mut b)?)
        } else {
            MpReply::IpfixFlow(ipfix::decode_stats(&mut b)?)
        })
    } else if is_onf_monitor(version, &e) {
        let mut b = Rd::new(&e.data, DecodeError::BadLength);
        Ok(MpReply::OnfFlowMonitor(monitor::decode_nx_updates(
            &mut b, true,
        )?))
    } else {
        Ok(MpReply::Experimenter(e))
    }
}

/// The header of Nicira vendor stats of subtype `sub` (OpenFlow 1.0 only).
pub(super) fn nx_header(
    out: &mut Vec<u8>,
    version: u8,
    flags: u16,
    sub: u32,
) -> Result<(), EncodeError> {
    if version != OFP10 {
        return Err(EncodeError::NotInVersion("Nicira stats"));
    }
    header(out, version, mp::EXPERIMENTER, flags);
    out.u32(NX_VENDOR_ID);
    out.u32(sub);
    out.zeros(4);
    Ok(())
}

/// The header of an OpenFlow 1.3 `ONFST_FLOW_MONITOR`.
pub(super) fn onf_header(out: &mut Vec<u8>, version: u8, flags: u16) -> Result<(), EncodeError> {
    if version != OFP13 {
        return Err(EncodeError::NotInVersion("ONF flow monitor"));
    }
    header(out, version, mp::EXPERIMENTER, flags);
    out.u32(ONF_EXPERIMENTER_ID);
    out.u32(ONFST_FLOW_MONITOR);
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

pub(super) fn encode_nx_flow_req(
    out: &mut Vec<u8>,
    r: &FlowStatsRequest,
) -> Result<(), EncodeError> {
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

pub(super) fn encode_nx_flow_stats(out: &mut Vec<u8>, f: &FlowStats) -> Result<(), EncodeError> {
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
    encode_of10_report(out, &f.instructions)?;
    let len = out.len() - start;
    out.patch_u16(start, len);
    Ok(())
}
