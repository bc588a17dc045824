//! Flow table messages: flow_mod and flow-removed.
//!
//! * Flow mod: OpenFlow 1.0 has the fixed match first, then cookie, a 16-bit command,
//!   timeouts, priority, buffer id, 16-bit out_port, flags and actions; it names no
//!   table, so an add means table 0 and anything else every table (and a model flow_mod
//!   for any other table cannot be written in 1.0). From 1.1 on: cookie and cookie mask,
//!   table, command, timeouts, priority, buffer id, out_port, out_group, flags, 2 bytes
//!   (1.4's importance, not in the model: read as nothing, written as zero), an
//!   `ofp_match` and instructions. 1.0 actions are one apply-actions instruction in the
//!   model; a flow_mod whose instructions 1.0 cannot say is `Unrepresentable` there.
//! * Flags: the 1.3 bits are the model's. OpenFlow 1.0 (and Nicira's flow_mod, which
//!   carries 1.0's) has only `send_flow_rem`, `check_overlap` and `emerg` in bit 2, where
//!   1.2+ has `reset_counts`: an add in 1.0 always resets counts, so it decodes with
//!   `reset_counts` set (a 1.3+ dump then shows it, as OVS's does), and `emerg` is refused
//!   as OVS refuses it (`TABLE_FULL`, or `BAD_TIMEOUT` with a timeout; there is no
//!   emergency cache). Bits a version does not define are `BAD_FLAGS`. Encoding for 1.0
//!   drops `reset_counts` and cannot say the 1.3 counting flags.
//! * Flow removed: 1.0 (fixed match first, no table or hard timeout), 1.1-1.4 (counters
//!   then the `ofp_match`) and 1.5 (the match, then the counters as OXS) layouts.

use crate::actions::{port_from_of10, port_to_of10, Instruction};
use crate::matches::Match;
use crate::messages::err::{flow_mod_failed, OFPET_FLOW_MOD_FAILED};
use crate::messages::{FlowMod, FlowModCommand, FlowModFlags, OfError, OFPTT_ALL};
use crate::wire::action::{
    decode_flow_actions, decode_instructions, encode_actions, encode_instructions,
};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::multipart::{decode_oxs, encode_oxs, OxsStats};
use crate::wire::oxm::{decode_of10_match, decode_ofp_match, encode_of10_match, encode_ofp_match};
use crate::wire::{OFP10, OFP15};

/// OpenFlow 1.0's `OFPFF_EMERG` (bit 2, `OFPFF_RESET_COUNTS` from 1.2 on).
const OF10_EMERG: u16 = 1 << 2;

/// A flow_mod's raw flags in `version` as the model's (see the module documentation).
/// `timeouts` says whether an idle or hard timeout is set (1.0's emergency error).
pub(crate) fn decode_flow_mod_flags(
    raw: u16,
    command: FlowModCommand,
    timeouts: bool,
    version: u8,
) -> Result<FlowModFlags, DecodeError> {
    let fail = |code| {
        Err(DecodeError::Refused(OfError::new(
            OFPET_FLOW_MOD_FAILED,
            code,
        )))
    };
    if version != OFP10 {
        if raw & !FlowModFlags::ALL.0 != 0 {
            return fail(flow_mod_failed::BAD_FLAGS);
        }
        return Ok(FlowModFlags(raw));
    }
    let known = FlowModFlags::SEND_FLOW_REM.0 | FlowModFlags::CHECK_OVERLAP.0 | OF10_EMERG;
    if raw & !known != 0 {
        return fail(flow_mod_failed::BAD_FLAGS);
    }
    if raw & OF10_EMERG != 0 {
        return fail(if timeouts {
            flow_mod_failed::BAD_TIMEOUT
        } else {
            flow_mod_failed::TABLE_FULL
        });
    }
    let mut flags = FlowModFlags(raw);
    if command == FlowModCommand::Add {
        flags.insert(FlowModFlags::RESET_COUNTS);
    }
    Ok(flags)
}

/// The model's flags as `version`'s raw bits: 1.0 has no `reset_counts` (implied by an
/// add) and no counting flags.
pub(crate) fn encode_flow_mod_flags(flags: FlowModFlags, version: u8) -> Result<u16, EncodeError> {
    if version != OFP10 {
        return Ok(flags.0);
    }
    let mut f = flags;
    f.remove(FlowModFlags::RESET_COUNTS);
    if f.contains(FlowModFlags::NO_PKT_COUNTS) || f.contains(FlowModFlags::NO_BYT_COUNTS) {
        return Err(EncodeError::Unrepresentable(
            "no_packet_counts/no_byte_counts",
        ));
    }
    Ok(f.0)
}

fn flow_mod_command(v: u16) -> Result<FlowModCommand, DecodeError> {
    u8::try_from(v)
        .ok()
        .and_then(FlowModCommand::from_u8)
        .ok_or(DecodeError::BadFlowModCommand(v))
}

/// The table an OpenFlow 1.0 flow_mod, which has no table id, means: table 0 for an add,
/// every table otherwise (as the daemon applies them). Any other table is an encode error
/// rather than a silent change of table. (Nicira's flow_mod_table_id extension, which puts a
/// table in the command's high byte, is the connection's business, not the codec's.)
fn of10_flow_mod_table(command: FlowModCommand) -> u8 {
    if command == FlowModCommand::Add {
        0
    } else {
        OFPTT_ALL
    }
}

pub(crate) fn decode_flow_mod(version: u8, rd: &mut Rd<'_>) -> Result<FlowMod, DecodeError> {
    if version == OFP10 {
        let match_ = decode_of10_match(rd)?;
        let cookie = rd.u64()?;
        let command = flow_mod_command(rd.u16()?)?;
        let mut fm = FlowMod::new(command);
        fm.table_id = of10_flow_mod_table(command);
        fm.match_ = match_;
        fm.cookie = cookie;
        fm.idle_timeout = rd.u16()?;
        fm.hard_timeout = rd.u16()?;
        fm.priority = rd.u16()?;
        fm.buffer_id = rd.u32()?;
        fm.out_port = port_from_of10(rd.u16()?);
        let timeouts = fm.idle_timeout != 0 || fm.hard_timeout != 0;
        fm.flags = decode_flow_mod_flags(rd.u16()?, command, timeouts, version)?;
        let acts = decode_flow_actions(
            version,
            &mut rd.clone().with_err(DecodeError::BadActionLen),
            &fm.match_,
        )?;
        rd.rest();
        if !acts.is_empty() {
            fm.instructions = vec![Instruction::ApplyActions(acts)];
        }
        return Ok(fm);
    }
    let cookie = rd.u64()?;
    let cookie_mask = rd.u64()?;
    let table_id = rd.u8()?;
    let command = flow_mod_command(u16::from(rd.u8()?))?;
    let mut fm = FlowMod::new(command);
    fm.cookie = cookie;
    fm.cookie_mask = cookie_mask;
    fm.table_id = table_id;
    fm.idle_timeout = rd.u16()?;
    fm.hard_timeout = rd.u16()?;
    fm.priority = rd.u16()?;
    fm.buffer_id = rd.u32()?;
    fm.out_port = rd.u32()?;
    fm.out_group = rd.u32()?;
    fm.flags = decode_flow_mod_flags(rd.u16()?, command, false, version)?;
    rd.skip(2)?; // pad (1.3) / importance (1.4+), not in the model
    fm.match_ = decode_ofp_match(rd)?;
    fm.instructions = decode_instructions(version, rd)?;
    Ok(fm)
}

pub(crate) fn encode_flow_mod(
    out: &mut Vec<u8>,
    version: u8,
    fm: &FlowMod,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        if fm.table_id != of10_flow_mod_table(fm.command) {
            return Err(EncodeError::Unrepresentable("table_id"));
        }
        encode_of10_match(out, &fm.match_)?;
        out.u64(fm.cookie);
        out.u16(fm.command as u16);
        out.u16(fm.idle_timeout);
        out.u16(fm.hard_timeout);
        out.u16(fm.priority);
        out.u32(fm.buffer_id);
        out.u16(port_to_of10(fm.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
        out.u16(encode_flow_mod_flags(fm.flags, version)?);
        return encode_of10_instructions(out, &fm.instructions);
    }
    out.u64(fm.cookie);
    out.u64(fm.cookie_mask);
    out.u8(fm.table_id);
    out.u8(fm.command as u8);
    out.u16(fm.idle_timeout);
    out.u16(fm.hard_timeout);
    out.u16(fm.priority);
    out.u32(fm.buffer_id);
    out.u32(fm.out_port);
    out.u32(fm.out_group);
    out.u16(fm.flags.0);
    out.zeros(2);
    encode_ofp_match(out, &fm.match_, version);
    encode_instructions(out, version, &fm.instructions)
}

/// OpenFlow 1.0 has no instructions: only a single apply-actions list can be sent.
pub(crate) fn encode_of10_instructions(
    out: &mut Vec<u8>,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    match insts {
        [] => Ok(()),
        [Instruction::ApplyActions(a)] => encode_actions(out, OFP10, a),
        _ => Err(EncodeError::Unrepresentable(
            "instructions other than apply_actions",
        )),
    }
}

/// Flow-removed notification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowRemoved {
    /// Cookie.
    pub cookie: u64,
    /// Priority.
    pub priority: u16,
    /// `OFPRR_*` reason.
    pub reason: u8,
    /// Table (1.3+).
    pub table_id: u8,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Idle timeout.
    pub idle_timeout: u16,
    /// Hard timeout (1.3+).
    pub hard_timeout: u16,
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// The flow's match.
    pub match_: Match,
}

pub(crate) fn decode_flow_removed(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<FlowRemoved, DecodeError> {
    if version == OFP10 {
        let match_ = decode_of10_match(rd)?;
        let cookie = rd.u64()?;
        let priority = rd.u16()?;
        let reason = rd.u8()?;
        rd.skip(1)?;
        let duration_sec = rd.u32()?;
        let duration_nsec = rd.u32()?;
        let idle_timeout = rd.u16()?;
        rd.skip(2)?;
        return Ok(FlowRemoved {
            cookie,
            priority,
            reason,
            table_id: 0,
            duration_sec,
            duration_nsec,
            idle_timeout,
            hard_timeout: 0,
            packet_count: rd.u64()?,
            byte_count: rd.u64()?,
            match_,
        });
    }
    if version == OFP15 {
        let table_id = rd.u8()?;
        let reason = rd.u8()?;
        let priority = rd.u16()?;
        let idle_timeout = rd.u16()?;
        let hard_timeout = rd.u16()?;
        let cookie = rd.u64()?;
        let match_ = decode_ofp_match(rd)?;
        let st = decode_oxs(rd)?;
        return Ok(FlowRemoved {
            cookie,
            priority,
            reason,
            table_id,
            duration_sec: st.duration_sec,
            duration_nsec: st.duration_nsec,
            idle_timeout,
            hard_timeout,
            packet_count: st.packet_count,
            byte_count: st.byte_count,
            match_,
        });
    }
    let cookie = rd.u64()?;
    let priority = rd.u16()?;
    let reason = rd.u8()?;
    let table_id = rd.u8()?;
    let duration_sec = rd.u32()?;
    let duration_nsec = rd.u32()?;
    let idle_timeout = rd.u16()?;
    let hard_timeout = rd.u16()?;
    let packet_count = rd.u64()?;
    let byte_count = rd.u64()?;
    let match_ = decode_ofp_match(rd)?;
    Ok(FlowRemoved {
        cookie,
        priority,
        reason,
        table_id,
        duration_sec,
        duration_nsec,
        idle_timeout,
        hard_timeout,
        packet_count,
        byte_count,
        match_,
    })
}

pub(crate) fn encode_flow_removed(
    out: &mut Vec<u8>,
    version: u8,
    f: &FlowRemoved,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        encode_of10_match(out, &f.match_)?;
        out.u64(f.cookie);
        out.u16(f.priority);
        out.u8(f.reason);
        out.u8(0);
        out.u32(f.duration_sec);
        out.u32(f.duration_nsec);
        out.u16(f.idle_timeout);
        out.zeros(2);
        out.u64(f.packet_count);
        out.u64(f.byte_count);
    } else if version == OFP15 {
        out.u8(f.table_id);
        out.u8(f.reason);
        out.u16(f.priority);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        out.u64(f.cookie);
        encode_ofp_match(out, &f.match_, version);
        let st = OxsStats {
            duration_sec: f.duration_sec,
            duration_nsec: f.duration_nsec,
            packet_count: f.packet_count,
            byte_count: f.byte_count,
            ..Default::default()
        };
        encode_oxs(out, &st, false);
    } else {
        out.u64(f.cookie);
        out.u16(f.priority);
        out.u8(f.reason);
        out.u8(f.table_id);
        out.u32(f.duration_sec);
        out.u32(f.duration_nsec);
        out.u16(f.idle_timeout);
        out.u16(f.hard_timeout);
        out.u64(f.packet_count);
        out.u64(f.byte_count);
        encode_ofp_match(out, &f.match_, version);
    }
    Ok(())
}
