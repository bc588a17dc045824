//! Nicira extension messages (vendor 0x00002320) that `ovs-ofctl` sends by default.
//!
//! Without `-O`, `ovs-ofctl` speaks OpenFlow 1.0 and switches to Nicira's formats when
//! a flow needs more than OpenFlow 1.0's match: it negotiates with
//! `NXT_SET_FLOW_FORMAT` (0 = OpenFlow 1.0, 2 = NXM), enables table ids in flow_mod
//! commands with `NXT_FLOW_MOD_TABLE_ID`, and then sends `NXT_FLOW_MOD` (an NXM match
//! plus OpenFlow 1.0 and Nicira actions) and `NXST_FLOW` stats requests (see
//! [`super::multipart`]). It also sends `NXT_SET_PACKET_IN_FORMAT` and
//! `NXT_SET_CONTROLLER_ID` when it monitors or snoops.
//!
//! In OpenFlow 1.0 these are vendor messages (vendor id, 32-bit subtype, body); in 1.1+
//! experimenter messages with the same layout, so one codec serves both. A Nicira
//! subtype not listed here is `BadExpType(subtype)`.
//!
//! `NXT_FLOW_MOD`'s 16-bit command carries the table id in its high byte when table ids
//! are enabled; the codec always puts that byte in `FlowMod::table_id` and leaves it to
//! the connection (which knows whether `NXT_FLOW_MOD_TABLE_ID` was sent) to interpret a
//! zero table id.

use super::action::{decode_flow_actions, NX_VENDOR_ID};
use super::buf::{pad8, Rd, W};
use super::error::{DecodeError, EncodeError};
use super::msg::encode_of10_instructions;
use super::oxm::{decode_match_tlvs, encode_tlvs, Mode};
use crate::actions::{port_from_of10, port_to_of10, Instruction};
use crate::messages::{FlowMod, FlowModCommand, FlowModFlags};

/// `NXT_SET_FLOW_FORMAT`.
pub const NXT_SET_FLOW_FORMAT: u32 = 12;
/// `NXT_FLOW_MOD`.
pub const NXT_FLOW_MOD: u32 = 13;
/// `NXT_FLOW_MOD_TABLE_ID`.
pub const NXT_FLOW_MOD_TABLE_ID: u32 = 15;
/// `NXT_SET_PACKET_IN_FORMAT`.
pub const NXT_SET_PACKET_IN_FORMAT: u32 = 16;
/// `NXT_SET_CONTROLLER_ID`.
pub const NXT_SET_CONTROLLER_ID: u32 = 20;

/// `NXFF_OPENFLOW10`.
pub const NXFF_OPENFLOW10: u32 = 0;
/// `NXFF_NXM`.
pub const NXFF_NXM: u32 = 2;

/// A Nicira extension message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum NxMessage {
    /// Choose the flow format (`NXFF_*`).
    SetFlowFormat(u32),
    /// A flow_mod with an NXM match.
    FlowMod(FlowMod),
    /// Enable (true) or disable table ids in the high byte of flow_mod commands.
    FlowModTableId(bool),
    /// Choose the packet-in format (`NXPIF_*`).
    SetPacketInFormat(u32),
    /// Set this connection's controller id.
    SetControllerId(u16),
}

impl NxMessage {
    fn subtype(&self) -> u32 {
        match self {
            NxMessage::SetFlowFormat(_) => NXT_SET_FLOW_FORMAT,
            NxMessage::FlowMod(_) => NXT_FLOW_MOD,
            NxMessage::FlowModTableId(_) => NXT_FLOW_MOD_TABLE_ID,
            NxMessage::SetPacketInFormat(_) => NXT_SET_PACKET_IN_FORMAT,
            NxMessage::SetControllerId(_) => NXT_SET_CONTROLLER_ID,
        }
    }
}

/// Decode the body after the vendor id and subtype.
pub(crate) fn decode_nx(version: u8, sub: u32, rd: &mut Rd<'_>) -> Result<NxMessage, DecodeError> {
    let m = match sub {
        NXT_SET_FLOW_FORMAT => NxMessage::SetFlowFormat(rd.u32()?),
        NXT_SET_PACKET_IN_FORMAT => NxMessage::SetPacketInFormat(rd.u32()?),
        NXT_FLOW_MOD_TABLE_ID => {
            let set = rd.u8()?;
            rd.skip(7)?;
            NxMessage::FlowModTableId(set != 0)
        }
        NXT_SET_CONTROLLER_ID => {
            rd.skip(6)?;
            NxMessage::SetControllerId(rd.u16()?)
        }
        NXT_FLOW_MOD => NxMessage::FlowMod(decode_nx_flow_mod(version, rd)?),
        other => return Err(DecodeError::BadExpType(other)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(m)
}

fn decode_nx_flow_mod(version: u8, rd: &mut Rd<'_>) -> Result<FlowMod, DecodeError> {
    let cookie = rd.u64()?;
    let cmd = rd.u16()?;
    let command = FlowModCommand::from_u8((cmd & 0xff) as u8)
        .ok_or(DecodeError::BadFlowModCommand(cmd & 0xff))?;
    let mut fm = FlowMod::new(command);
    fm.table_id = (cmd >> 8) as u8;
    fm.cookie = cookie;
    fm.idle_timeout = rd.u16()?;
    fm.hard_timeout = rd.u16()?;
    fm.priority = rd.u16()?;
    fm.buffer_id = rd.u32()?;
    fm.out_port = port_from_of10(rd.u16()?);
    fm.flags = FlowModFlags(rd.u16()?);
    let mlen = usize::from(rd.u16()?);
    rd.skip(6)?;
    let mut mr = rd.sub(mlen, DecodeError::BadMatchLen)?;
    fm.match_ = decode_match_tlvs(&mut mr)?;
    rd.skip(pad8(mlen) - mlen)
        .map_err(|_| DecodeError::BadMatchLen)?;
    let acts = decode_flow_actions(
        version,
        &mut rd.clone().with_err(DecodeError::BadActionLen),
        &fm.match_,
    )?;
    rd.rest();
    if !acts.is_empty() {
        fm.instructions = vec![Instruction::ApplyActions(acts)];
    }
    Ok(fm)
}

/// Encode vendor id, subtype and body.
pub(crate) fn encode_nx(out: &mut Vec<u8>, version: u8, m: &NxMessage) -> Result<(), EncodeError> {
    out.u32(NX_VENDOR_ID);
    out.u32(m.subtype());
    match m {
        NxMessage::SetFlowFormat(f) | NxMessage::SetPacketInFormat(f) => out.u32(*f),
        NxMessage::FlowModTableId(b) => {
            out.u8(u8::from(*b));
            out.zeros(7);
        }
        NxMessage::SetControllerId(id) => {
            out.zeros(6);
            out.u16(*id);
        }
        NxMessage::FlowMod(fm) => {
            out.u64(fm.cookie);
            out.u16((u16::from(fm.table_id) << 8) | fm.command as u16);
            out.u16(fm.idle_timeout);
            out.u16(fm.hard_timeout);
            out.u16(fm.priority);
            out.u32(fm.buffer_id);
            out.u16(port_to_of10(fm.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
            out.u16(fm.flags.0);
            let at = out.len();
            out.u16(0);
            out.zeros(6);
            let start = out.len();
            encode_tlvs(out, &fm.match_, Mode::Nxm);
            let mlen = out.len() - start;
            out.patch_u16(at, mlen);
            out.pad8_from(start);
            if version == super::OFP10 {
                encode_of10_instructions(out, &fm.instructions)?;
            } else {
                match fm.instructions.as_slice() {
                    [] => {}
                    [Instruction::ApplyActions(a)] => {
                        super::action::encode_actions(out, version, a)?
                    }
                    _ => {
                        return Err(EncodeError::Unrepresentable(
                            "instructions in a Nicira flow_mod",
                        ))
                    }
                }
            }
        }
    }
    Ok(())
}
