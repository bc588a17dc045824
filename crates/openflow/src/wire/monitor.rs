//! Flow monitors: a controller asks to be told about flow table changes.
//!
//! Two forms carry the same model, [`FlowMonitorRequest`] and [`FlowUpdate`]:
//!
//! * **OpenFlow 1.4+** `OFPMP_FLOW_MONITOR` (multipart 16). Request records: monitor_id
//!   u32, out_port u32, out_group u32, flags u16 (`OFPFMF_*`), table_id u8, command u8
//!   (add / modify / delete), an `ofp_match`. Update records start with length u16 and
//!   event u16 (`OFPFME_INITIAL` 0, `ADDED` 1, `REMOVED` 2, `MODIFIED` 3, `ABBREV` 4,
//!   `PAUSED` 5, `RESUMED` 6); full updates then carry table_id u8, reason u8,
//!   idle/hard timeouts, priority, 4 zero bytes, cookie, match and instructions;
//!   abbreviated ones an xid; paused/resumed 4 zero bytes.
//! * **Nicira** `NXST_FLOW_MONITOR` (vendor stats 2, what `ovs-ofctl monitor BR watch:`
//!   sends over OpenFlow 1.0). Request records: id u32, flags u16 (`NXFMF_*`), out_port
//!   u16, match_len u16, table_id u8, 5 zero bytes, an NXM match padded to 8. Update
//!   records: length u16, event u16 (`NXFME_ADDED` 0, `DELETED` 1, `MODIFIED` 2, `ABBREV`
//!   3); full updates then carry reason u16, priority, idle/hard timeouts, match_len u16,
//!   table_id u8, pad, cookie, the NXM match padded to 8 and actions.
//! * **ONF** `ONFST_FLOW_MONITOR` (OpenFlow 1.3 experimenter multipart 1870, what
//!   `ovs-ofctl -O OpenFlow13 monitor` sends): the Nicira records with a 32-bit out_port
//!   (request: id, flags, match_len, out_port u32, table_id, 3 pad) and an `ofp_match`
//!   (whose length, without padding, is match_len) instead of NXM; updates carry
//!   OpenFlow 1.3 instructions instead of actions.
//!
//! The `event` of a [`FlowUpdate`] holds the event number of the form it travels in; a Nicira
//! update's actions are an apply-actions instruction in the model.

use super::action::{decode_flow_actions, decode_instructions, encode_instructions};
use super::buf::{pad8, Rd, W};
use super::error::{DecodeError, EncodeError};
use super::oxm::{decode_match_tlvs, decode_ofp_match, encode_ofp_match, encode_tlvs, Mode};
use super::record::{until_empty, Framing};
use super::{OFP10, OFP13};
use crate::actions::{port_from_of10, port_to_of10, Instruction, OFPG_ANY};
use crate::matches::Match;

/// `OFPFME_*` events (OpenFlow 1.4+).
pub mod event {
    /// A flow present when the monitor was set up.
    pub const INITIAL: u16 = 0;
    /// A flow was added.
    pub const ADDED: u16 = 1;
    /// A flow was removed.
    pub const REMOVED: u16 = 2;
    /// A flow was modified.
    pub const MODIFIED: u16 = 3;
    /// Abbreviated: the change the controller itself made with this xid.
    pub const ABBREV: u16 = 4;
    /// Updates paused.
    pub const PAUSED: u16 = 5;
    /// Updates resumed.
    pub const RESUMED: u16 = 6;
}

/// `NXFME_*` events (Nicira form).
pub mod nx_event {
    /// A flow was added (also for the initial flows).
    pub const ADDED: u16 = 0;
    /// A flow was deleted.
    pub const DELETED: u16 = 1;
    /// A flow was modified.
    pub const MODIFIED: u16 = 2;
    /// Abbreviated.
    pub const ABBREV: u16 = 3;
}

/// One monitor request.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowMonitorRequest {
    /// Controller-chosen monitor id.
    pub monitor_id: u32,
    /// Only flows that output to this port (`OFPP_ANY` for all).
    pub out_port: u32,
    /// Only flows that output to this group (`OFPG_ANY`; always so in the Nicira form).
    pub out_group: u32,
    /// `OFPFMF_*` / `NXFMF_*` flags (the same bits up to `INSTRUCTIONS` / `ACTIONS`).
    pub flags: u16,
    /// Table, or `OFPTT_ALL`.
    pub table_id: u8,
    /// `OFPFMC_ADD` 0, `MODIFY` 1, `DELETE` 2 (always add in the Nicira form).
    pub command: u8,
    /// Flows whose match refines this one.
    pub match_: Match,
}

/// One update.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum FlowUpdate {
    /// A flow and what happened to it.
    Full {
        /// Event number in the form's numbering.
        event: u16,
        /// Table.
        table_id: u8,
        /// Removal reason (`OFPRR_*`) for removed flows, else 0.
        reason: u8,
        /// Idle timeout.
        idle_timeout: u16,
        /// Hard timeout.
        hard_timeout: u16,
        /// Priority.
        priority: u16,
        /// Cookie.
        cookie: u64,
        /// Match.
        match_: Match,
        /// Instructions (empty unless the monitor asked for them).
        instructions: Vec<Instruction>,
    },
    /// The change a request with this xid made.
    Abbrev {
        /// Event number (`ABBREV`).
        event: u16,
        /// The request's xid.
        xid: u32,
    },
    /// Paused / resumed (OpenFlow 1.4+).
    Marker {
        /// Event number.
        event: u16,
    },
}

pub(crate) fn decode_requests(rd: &mut Rd<'_>) -> Result<Vec<FlowMonitorRequest>, DecodeError> {
    until_empty(rd, |rd| {
        let monitor_id = rd.u32()?;
        let out_port = rd.u32()?;
        let out_group = rd.u32()?;
        let flags = rd.u16()?;
        let table_id = rd.u8()?;
        let command = rd.u8()?;
        let match_ = decode_ofp_match(rd)?;
        Ok(FlowMonitorRequest {
            monitor_id,
            out_port,
            out_group,
            flags,
            table_id,
            command,
            match_,
        })
    })
}

pub(crate) fn encode_requests(out: &mut Vec<u8>, v: &[FlowMonitorRequest], version: u8) {
    for r in v {
        out.u32(r.monitor_id);
        out.u32(r.out_port);
        out.u32(r.out_group);
        out.u16(r.flags);
        out.u8(r.table_id);
        out.u8(r.command);
        encode_ofp_match(out, &r.match_, version);
    }
}

/// The match of a Nicira (NXM TLVs) or ONF (`ofp_match`) record, `mlen` bytes plus
/// padding to 8.
fn decode_match_at(rd: &mut Rd<'_>, mlen: usize, onf: bool) -> Result<Match, DecodeError> {
    let mut mr = rd.sub(mlen, DecodeError::BadMatchLen)?;
    let m = if onf {
        let whole = [mr.rest(), &[0u8; 8][..pad8(mlen) - mlen]].concat();
        let mut w = Rd::new(&whole, DecodeError::BadMatchLen);
        let m = decode_ofp_match(&mut w)?;
        if !w.is_empty() {
            return Err(DecodeError::BadMatchLen);
        }
        m
    } else {
        decode_match_tlvs(&mut mr)?
    };
    rd.skip(pad8(mlen) - mlen)?;
    Ok(m)
}

/// Writes a Nicira or ONF match padded to 8 and patches its length (without padding)
/// at `mlen_at`.
fn encode_match_at(out: &mut Vec<u8>, m: &Match, mlen_at: usize, onf: bool) {
    let ms = out.len();
    if onf {
        encode_ofp_match(out, m, super::OFP13);
        let len = usize::from(u16::from_be_bytes([
            out.get(ms + 2).copied().unwrap_or(0),
            out.get(ms + 3).copied().unwrap_or(0),
        ]));
        out.patch_u16(mlen_at, len);
    } else {
        encode_tlvs(out, m, Mode::Nxm);
        out.patch_u16(mlen_at, out.len() - ms);
    }
    out.pad8_from(ms);
}

/// Nicira (`onf` false) or OpenFlow 1.3 ONF (`onf` true: a 32-bit out_port and an
/// `ofp_match`) monitor requests.
pub(crate) fn decode_nx_requests(
    rd: &mut Rd<'_>,
    onf: bool,
) -> Result<Vec<FlowMonitorRequest>, DecodeError> {
    until_empty(rd, |rd| {
        let monitor_id = rd.u32()?;
        let flags = rd.u16()?;
        let (out_port, mlen, table_id) = if onf {
            let mlen = usize::from(rd.u16()?);
            let p = rd.u32()?;
            let t = rd.u8()?;
            rd.skip(3)?;
            (p, mlen, t)
        } else {
            let p = port_from_of10(rd.u16()?);
            let mlen = usize::from(rd.u16()?);
            let t = rd.u8()?;
            rd.skip(5)?;
            (p, mlen, t)
        };
        let match_ = decode_match_at(rd, mlen, onf)?;
        Ok(FlowMonitorRequest {
            monitor_id,
            out_port,
            out_group: OFPG_ANY,
            flags,
            table_id,
            command: 0,
            match_,
        })
    })
}

pub(crate) fn encode_nx_requests(
    out: &mut Vec<u8>,
    v: &[FlowMonitorRequest],
    onf: bool,
) -> Result<(), EncodeError> {
    for r in v {
        if r.out_group != OFPG_ANY || r.command != 0 {
            return Err(EncodeError::Unrepresentable("Nicira flow monitor"));
        }
        out.u32(r.monitor_id);
        out.u16(r.flags);
        let mlen_at;
        if onf {
            mlen_at = out.len();
            out.u16(0);
            out.u32(r.out_port);
            out.u8(r.table_id);
            out.zeros(3);
        } else {
            out.u16(port_to_of10(r.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
            mlen_at = out.len();
            out.u16(0);
            out.u8(r.table_id);
            out.zeros(5);
        }
        encode_match_at(out, &r.match_, mlen_at, onf);
    }
    Ok(())
}

pub(crate) fn decode_updates(version: u8, rd: &mut Rd<'_>) -> Result<Vec<FlowUpdate>, DecodeError> {
    Framing::prefixed(0, 8).all(rd, |mut r| {
        r.skip(2)?;
        let event = r.u16()?;
        let u = match event {
            event::ABBREV => FlowUpdate::Abbrev {
                event,
                xid: r.u32()?,
            },
            event::PAUSED | event::RESUMED => {
                r.skip(4)?;
                FlowUpdate::Marker { event }
            }
            _ => {
                let table_id = r.u8()?;
                let reason = r.u8()?;
                let idle_timeout = r.u16()?;
                let hard_timeout = r.u16()?;
                let priority = r.u16()?;
                r.skip(4)?;
                let cookie = r.u64()?;
                let match_ = decode_ofp_match(&mut r)?;
                let instructions = decode_instructions(version, &mut r)?;
                FlowUpdate::Full {
                    event,
                    table_id,
                    reason,
                    idle_timeout,
                    hard_timeout,
                    priority,
                    cookie,
                    match_,
                    instructions,
                }
            }
        };
        if !r.is_empty() {
            return Err(DecodeError::BadLength);
        }
        Ok(u)
    })
}

pub(crate) fn encode_updates(
    out: &mut Vec<u8>,
    version: u8,
    v: &[FlowUpdate],
) -> Result<(), EncodeError> {
    for u in v {
        let start = out.len();
        out.u16(0);
        match u {
            FlowUpdate::Abbrev { event, xid } => {
                out.u16(*event);
                out.u32(*xid);
            }
            FlowUpdate::Marker { event } => {
                out.u16(*event);
                out.zeros(4);
            }
            FlowUpdate::Full {
                event,
                table_id,
                reason,
                idle_timeout,
                hard_timeout,
                priority,
                cookie,
                match_,
                instructions,
            } => {
                out.u16(*event);
                out.u8(*table_id);
                out.u8(*reason);
                out.u16(*idle_timeout);
                out.u16(*hard_timeout);
                out.u16(*priority);
                out.zeros(4);
                out.u64(*cookie);
                encode_ofp_match(out, match_, version);
                encode_instructions(out, version, instructions)?;
            }
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
    Ok(())
}

/// Nicira or ONF (`onf`: an `ofp_match` and OpenFlow 1.3 actions) updates.
pub(crate) fn decode_nx_updates(
    rd: &mut Rd<'_>,
    onf: bool,
) -> Result<Vec<FlowUpdate>, DecodeError> {
    Framing::prefixed(0, 8).all(rd, |mut r| {
        r.skip(2)?;
        let event = r.u16()?;
        if event != nx_event::ABBREV {
            return decode_nx_full_update(r, event, onf);
        }
        let u = FlowUpdate::Abbrev {
            event,
            xid: r.u32()?,
        };
        if !r.is_empty() {
            return Err(DecodeError::BadLength);
        }
        Ok(u)
    })
}

/// A Nicira or ONF full update after its length and event (its actions or instructions
/// run to the end of the record).
fn decode_nx_full_update(mut r: Rd<'_>, event: u16, onf: bool) -> Result<FlowUpdate, DecodeError> {
    let reason = r.u16()?;
    let priority = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let mlen = usize::from(r.u16()?);
    let table_id = r.u8()?;
    r.skip(1)?;
    let cookie = r.u64()?;
    let match_ = decode_match_at(&mut r, mlen, onf)?;
    let instructions = if onf {
        decode_instructions(OFP13, &mut r)?
    } else {
        let a = decode_flow_actions(OFP10, &mut r.with_err(DecodeError::BadActionLen), &match_)?;
        if a.is_empty() {
            Vec::new()
        } else {
            vec![Instruction::ApplyActions(a)]
        }
    };
    Ok(FlowUpdate::Full {
        event,
        table_id,
        reason: u8::try_from(reason).map_err(|_| DecodeError::BadLength)?,
        idle_timeout,
        hard_timeout,
        priority,
        cookie,
        match_,
        instructions,
    })
}

pub(crate) fn encode_nx_updates(
    out: &mut Vec<u8>,
    v: &[FlowUpdate],
    onf: bool,
) -> Result<(), EncodeError> {
    for u in v {
        let start = out.len();
        out.u16(0);
        match u {
            FlowUpdate::Abbrev { event, xid } => {
                out.u16(*event);
                out.u32(*xid);
            }
            FlowUpdate::Marker { .. } => {
                return Err(EncodeError::Unrepresentable("Nicira flow monitor marker"))
            }
            FlowUpdate::Full {
                event,
                table_id,
                reason,
                idle_timeout,
                hard_timeout,
                priority,
                cookie,
                match_,
                instructions,
            } => {
                out.u16(*event);
                out.u16(u16::from(*reason));
                out.u16(*priority);
                out.u16(*idle_timeout);
                out.u16(*hard_timeout);
                let mlen_at = out.len();
                out.u16(0);
                out.u8(*table_id);
                out.u8(0);
                out.u64(*cookie);
                encode_match_at(out, match_, mlen_at, onf);
                if onf {
                    encode_instructions(out, OFP13, instructions)?;
                } else {
                    super::action::encode_of10_report(out, instructions)?;
                }
            }
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
    Ok(())
}
