//! Flow and aggregate statistics: the requests that select flows and the replies that
//! report them, in the standard (non-Nicira) layouts.
//!
//! * A request ([`FlowStatsRequest`]) is, in OpenFlow 1.0, a fixed 40-byte match, the
//!   table and a 16-bit out_port; from 1.1 on, table, out_port, out_group, cookie and
//!   cookie mask, then an `ofp_match`. The same body asks for aggregates, and 1.5's flow
//!   statistics (multipart 17) reuse it.
//! * A flow record ([`FlowStats`]) starts with its 16-bit length. OpenFlow 1.0 carries
//!   the fixed match and actions (decoded in the flow's context, see
//!   `decode_flow_actions`), 1.1-1.4 an `ofp_match` and instructions, 1.5 (flow desc) the
//!   match, an OXS block with the counters and the instructions. Records are cut all
//!   at once before any is decoded, so a bad length anywhere wins over a bad record.
//! * An aggregate reply ([`AggregateStats`]) is three counters, or in 1.5 an OXS block.
//!
//! What a layout lacks decodes as zero (1.0's flags, importance before 1.4) and is not
//! written. The Nicira forms of the same requests and records are in `experimenter`.

use super::oxs::{decode_oxs, encode_oxs, OxsStats};
use crate::actions::{port_from_of10, port_to_of10, Instruction};
use crate::matches::Match;
use crate::wire::action::{
    decode_flow_actions, decode_instructions, encode_instructions, encode_of10_report,
};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::oxm::{decode_of10_match, decode_ofp_match, encode_of10_match, encode_ofp_match};
use crate::wire::record::Framing;
use crate::wire::{OFP10, OFP14, OFP15};

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

/// One flow's statistics record (OpenFlow 1.0-1.4 and Nicira's `NXST_FLOW`); the one type
/// both directions use (1.5's record is `of14::FlowStats15`).
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
    /// Seconds since last hit plus one, as Nicira's records carry it (0 = unknown); in
    /// OpenFlow 1.5 the OXS `idle_time` (whole seconds). Not in OpenFlow 1.0-1.4's records.
    pub idle_age: u16,
    /// Seconds since last modification plus one (Nicira only; 0 = unknown).
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

pub(crate) fn encode_flow_req(
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
    encode_ofp_match(out, &r.match_, version);
    Ok(())
}

/// A flow statistics reply body: records of at least 4 bytes.
pub(crate) fn decode_flow_stats_list(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<Vec<FlowStats>, DecodeError> {
    Framing::prefixed(0, 4).all(rd, |r| decode_flow_stats(version, r))
}

pub(crate) fn encode_flow_stats_list(
    out: &mut Vec<u8>,
    version: u8,
    v: &[FlowStats],
) -> Result<(), EncodeError> {
    v.iter()
        .try_for_each(|f| encode_flow_stats(out, version, f))
}

fn decode_flow_stats(version: u8, mut r: Rd<'_>) -> Result<FlowStats, DecodeError> {
    r.skip(2)?;
    if version == OFP15 {
        return decode_flow_desc15(r);
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

/// The OpenFlow 1.5 record (flow desc) after its length: pad, table, reason, priority,
/// timeouts, flags, importance, cookie, match, OXS counters, instructions.
fn decode_flow_desc15(mut r: Rd<'_>) -> Result<FlowStats, DecodeError> {
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
    let instructions = decode_instructions(OFP15, &mut r)?;
    Ok(FlowStats {
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
        idle_age: st
            .idle_time
            .map_or(0, |(sec, _)| sec.min(u32::from(u16::MAX) - 1) as u16 + 1),
        hard_age: 0,
        match_,
        instructions,
    })
}

/// OpenFlow 1.0 actions as the model's instructions: one apply-actions, or none.
pub(super) fn apply(a: Vec<crate::Action>) -> Vec<Instruction> {
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
        encode_flow_desc15(out, f)?;
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
            encode_of10_report(out, &f.instructions)?;
        } else {
            encode_ofp_match(out, &f.match_, version);
            encode_instructions(out, version, &f.instructions)?;
        }
    }
    let len = out.len() - start;
    out.patch_u16(start, len);
    Ok(())
}

fn encode_flow_desc15(out: &mut Vec<u8>, f: &FlowStats) -> Result<(), EncodeError> {
    out.zeros(2);
    out.u8(f.table_id);
    out.u8(0);
    out.u16(f.priority);
    out.u16(f.idle_timeout);
    out.u16(f.hard_timeout);
    out.u16(f.flags);
    out.u16(f.importance);
    out.u64(f.cookie);
    encode_ofp_match(out, &f.match_, OFP15);
    let st = OxsStats {
        duration_sec: f.duration_sec,
        duration_nsec: f.duration_nsec,
        packet_count: f.packet_count,
        byte_count: f.byte_count,
        idle_time: f.idle_age.checked_sub(1).map(|sec| (u32::from(sec), 0)),
        ..Default::default()
    };
    encode_oxs(out, &st, false);
    encode_instructions(out, OFP15, &f.instructions)
}

pub(super) fn decode_aggregate(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<AggregateStats, DecodeError> {
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

pub(super) fn encode_aggregate(out: &mut Vec<u8>, version: u8, a: &AggregateStats) {
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
