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
//! The TLV table (`NXT_TLV_TABLE_MOD`, `NXT_TLV_TABLE_REQUEST`, `NXT_TLV_TABLE_REPLY`)
//! maps tunnel options (Geneve class, type, length) to the fields `tun_metadata0`..`63`:
//! a mod carries a command (add, delete, clear) and 8-byte maps; the reply the switch's
//! limits and its maps. A map whose length is not a multiple of 4 or above 124 is
//! refused with `NXTTMFC_BAD_OPT_LEN`, an index above 63 with `NXTTMFC_BAD_FIELD_IDX`, an
//! unknown command with `NXTTMFC_BAD_COMMAND` (Nicira experimenter errors), as OVS does.
//!
//! `NXT_PACKET_IN2` (what a connection gets after `NXT_SET_PACKET_IN_FORMAT` 2) is a list
//! of properties: the packet, its full length if truncated, buffer id, table id, cookie,
//! reason, the pipeline fields as OXM TLVs (OpenFlow 1.5's packet registers over 1.5), the
//! continuation of a paused pipeline (`NXPINT_CONTINUATION`, 8: a nested property, whose
//! bytes after 4 zeros are the switch's own and opaque to the controller) and the
//! controller action's user data; the encoder leaves out what OVS leaves out. `NXT_RESUME`
//! (28) is the same property list a controller sends back, packet and pipeline fields
//! possibly changed, to resume the pipeline the continuation describes (see
//! `ofproto::continuation`).
//!
//! `NXT_CT_FLUSH_ZONE` names a connection-tracking zone: 6 zero bytes, then the 16-bit zone
//! (OVS's `nx_zone_id`; checked against `ovs-ofctl ct-flush-zone`'s bytes).
//!
//! `NXT_FLOW_MOD`'s 16-bit command carries the table id in its high byte when table ids
//! are enabled; the codec always puts that byte in `FlowMod::table_id` and leaves it to
//! the connection (which knows whether `NXT_FLOW_MOD_TABLE_ID` was sent) to interpret a
//! zero table id.

use super::action::{decode_flow_actions, NX_VENDOR_ID};
use super::buf::{pad8, Rd, W};
use super::error::{DecodeError, EncodeError};
use super::msg::{decode_flow_mod_flags, encode_flow_mod_flags, encode_of10_instructions};
use super::oxm::{decode_match_tlvs, encode_tlvs, Mode};
use crate::actions::{port_from_of10, port_to_of10, Instruction};
use crate::messages::err::nx_tlv;
use crate::messages::{FlowMod, FlowModCommand, OfError};
use crate::Match;

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

/// `NXT_TLV_TABLE_MOD`.
pub const NXT_TLV_TABLE_MOD: u32 = 24;
/// `NXT_TLV_TABLE_REQUEST`.
pub const NXT_TLV_TABLE_REQUEST: u32 = 25;
/// `NXT_TLV_TABLE_REPLY`.
pub const NXT_TLV_TABLE_REPLY: u32 = 26;

/// `NXT_CT_FLUSH_ZONE`.
pub const NXT_CT_FLUSH_ZONE: u32 = 29;
/// `NXT_PACKET_IN2`.
pub const NXT_PACKET_IN2: u32 = 30;
/// `NXT_RESUME`.
pub const NXT_RESUME: u32 = 28;

/// `NXPIF_STANDARD`: the connection's version's own packet-in.
pub const NXPIF_STANDARD: u32 = 0;
/// `NXPIF_NXT_PACKET_IN2`: Nicira's property-based packet-in.
pub const NXPIF_NXT_PACKET_IN2: u32 = 2;

/// `NXPINT_*`: packet-in2 property types.
mod pint {
    pub const PACKET: u16 = 0;
    pub const FULL_LEN: u16 = 1;
    pub const BUFFER_ID: u16 = 2;
    pub const TABLE_ID: u16 = 3;
    pub const COOKIE: u16 = 4;
    pub const REASON: u16 = 5;
    pub const METADATA: u16 = 6;
    pub const USERDATA: u16 = 7;
    pub const CONTINUATION: u16 = 8;
}

/// Nicira's packet-in (`NXT_PACKET_IN2`): the same facts as OpenFlow's packet-in, as
/// properties, plus controller-action user data.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketIn2 {
    /// The (possibly truncated) frame.
    pub data: Vec<u8>,
    /// Length of the whole frame.
    pub total_len: u32,
    /// Buffer id or `OFP_NO_BUFFER`.
    pub buffer_id: u32,
    /// Table of the flow that sent it.
    pub table_id: u8,
    /// Cookie of that flow (all ones when none).
    pub cookie: u64,
    /// `OFPR_*`.
    pub reason: u8,
    /// Pipeline fields.
    pub metadata: Match,
    /// The controller action's user data.
    pub userdata: Vec<u8>,
    /// A paused pipeline's continuation (empty: none), opaque to the controller.
    pub continuation: Vec<u8>,
}

/// The most `tun_metadata` fields (`tun_metadata0`..`63`).
pub const TUN_METADATA_NUM_OPTS: u16 = 64;
/// The longest tunnel option a map may name, in bytes.
pub const TLV_MAX_OPT_SIZE: u8 = 124;

/// One TLV-table map: the tunnel option (class, type, length in bytes) that
/// `tun_metadata<index>` stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct TlvMap {
    /// Option class.
    pub class: u16,
    /// Option type.
    pub type_: u8,
    /// Option length in bytes (a multiple of 4, at most 124).
    pub len: u8,
    /// The `tun_metadata` field index (0..64).
    pub index: u16,
}

/// `NXTTMC_*`: what a TLV-table mod does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TlvTableCommand {
    /// Add the maps (all or none).
    Add = 0,
    /// Delete the maps' indexes (unmapped ones are ignored).
    Delete = 1,
    /// Delete every map (the mod's maps are ignored).
    Clear = 2,
}

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
    /// Change the TLV table.
    TlvTableMod {
        /// Add, delete or clear.
        command: TlvTableCommand,
        /// The maps.
        maps: Vec<TlvMap>,
    },
    /// Ask for the TLV table.
    TlvTableRequest,
    /// Flush the connection-tracking entries of this zone.
    CtFlushZone(u16),
    /// A packet-in in Nicira's format.
    PacketIn2(PacketIn2),
    /// Resume a paused pipeline: the packet-in's packet and fields (as the controller wants
    /// them now) and its continuation.
    Resume(PacketIn2),
    /// The TLV table.
    TlvTableReply {
        /// Bytes of option space the switch has for all maps together.
        max_option_space: u32,
        /// Number of `tun_metadata` fields.
        max_fields: u16,
        /// The maps, by index.
        maps: Vec<TlvMap>,
    },
}

impl NxMessage {
    fn subtype(&self) -> u32 {
        match self {
            NxMessage::SetFlowFormat(_) => NXT_SET_FLOW_FORMAT,
            NxMessage::FlowMod(_) => NXT_FLOW_MOD,
            NxMessage::FlowModTableId(_) => NXT_FLOW_MOD_TABLE_ID,
            NxMessage::SetPacketInFormat(_) => NXT_SET_PACKET_IN_FORMAT,
            NxMessage::SetControllerId(_) => NXT_SET_CONTROLLER_ID,
            NxMessage::TlvTableMod { .. } => NXT_TLV_TABLE_MOD,
            NxMessage::TlvTableRequest => NXT_TLV_TABLE_REQUEST,
            NxMessage::CtFlushZone(_) => NXT_CT_FLUSH_ZONE,
            NxMessage::PacketIn2(_) => NXT_PACKET_IN2,
            NxMessage::Resume(_) => NXT_RESUME,
            NxMessage::TlvTableReply { .. } => NXT_TLV_TABLE_REPLY,
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
        NXT_TLV_TABLE_MOD => {
            let cmd = rd.u16()?;
            rd.skip(6)?;
            let command = match cmd {
                0 => TlvTableCommand::Add,
                1 => TlvTableCommand::Delete,
                2 => TlvTableCommand::Clear,
                _ => return Err(DecodeError::Refused(OfError::nx(nx_tlv::BAD_COMMAND))),
            };
            NxMessage::TlvTableMod {
                command,
                maps: decode_tlv_maps(rd, TUN_METADATA_NUM_OPTS)?,
            }
        }
        NXT_TLV_TABLE_REQUEST => NxMessage::TlvTableRequest,
        NXT_PACKET_IN2 => NxMessage::PacketIn2(decode_packet_in2(rd)?),
        NXT_RESUME => NxMessage::Resume(decode_packet_in2(rd)?),
        NXT_CT_FLUSH_ZONE => {
            rd.skip(6)?;
            NxMessage::CtFlushZone(rd.u16()?)
        }
        NXT_TLV_TABLE_REPLY => {
            let max_option_space = rd.u32()?;
            let max_fields = rd.u16()?;
            rd.skip(10)?;
            NxMessage::TlvTableReply {
                max_option_space,
                max_fields,
                maps: decode_tlv_maps(rd, max_fields)?,
            }
        }
        other => return Err(DecodeError::BadExpType(other)),
    };
    if !rd.is_empty() {
        return Err(DecodeError::BadLength);
    }
    Ok(m)
}

/// 8-byte maps filling the rest of `rd`.
fn decode_tlv_maps(rd: &mut Rd<'_>, max_fields: u16) -> Result<Vec<TlvMap>, DecodeError> {
    if !rd.len().is_multiple_of(8) {
        return Err(DecodeError::BadLength);
    }
    let mut maps = Vec::new();
    while !rd.is_empty() {
        let class = rd.u16()?;
        let type_ = rd.u8()?;
        let len = rd.u8()?;
        let index = rd.u16()?;
        rd.skip(2)?;
        if len % 4 != 0 || len > TLV_MAX_OPT_SIZE {
            return Err(DecodeError::Refused(OfError::nx(nx_tlv::BAD_OPT_LEN)));
        }
        if index >= max_fields {
            return Err(DecodeError::Refused(OfError::nx(nx_tlv::BAD_FIELD_IDX)));
        }
        maps.push(TlvMap {
            class,
            type_,
            len,
            index,
        });
    }
    Ok(maps)
}

/// Properties (type, length, value, padding to 8) filling the rest of `rd`.
fn decode_packet_in2(rd: &mut Rd<'_>) -> Result<PacketIn2, DecodeError> {
    let mut p = PacketIn2 {
        data: Vec::new(),
        total_len: 0,
        buffer_id: crate::messages::OFP_NO_BUFFER,
        table_id: 0,
        cookie: u64::MAX,
        reason: 0,
        metadata: Match::new(),
        userdata: Vec::new(),
        continuation: Vec::new(),
    };
    let mut full_len = None;
    while !rd.is_empty() {
        let ty = rd.u16()?;
        let len = usize::from(rd.u16()?);
        let vlen = len.checked_sub(4).ok_or(DecodeError::BadPropertyLen)?;
        let mut v = rd.sub(vlen, DecodeError::BadPropertyLen)?;
        rd.skip(pad8(len) - len)
            .map_err(|_| DecodeError::BadPropertyLen)?;
        let want = |n: usize| {
            if vlen == n {
                Ok(())
            } else {
                Err(DecodeError::BadPropertyLen)
            }
        };
        match ty {
            pint::PACKET => p.data = v.rest().to_vec(),
            pint::FULL_LEN => {
                want(4)?;
                full_len = Some(v.u32()?);
            }
            pint::BUFFER_ID => {
                want(4)?;
                p.buffer_id = v.u32()?;
            }
            pint::TABLE_ID => {
                want(1)?;
                p.table_id = v.u8()?;
            }
            pint::COOKIE => {
                want(12)?;
                v.skip(4)?;
                p.cookie = v.u64()?;
            }
            pint::REASON => {
                want(1)?;
                p.reason = v.u8()?;
            }
            pint::METADATA => p.metadata = decode_match_tlvs(&mut v)?,
            pint::USERDATA => p.userdata = v.rest().to_vec(),
            // Nested: the contents start 8 bytes into the property.
            pint::CONTINUATION => {
                if vlen < 4 {
                    return Err(DecodeError::BadPropertyLen);
                }
                v.skip(4)?;
                p.continuation = v.rest().to_vec();
            }
            _ => return Err(DecodeError::BadPropertyLen),
        }
    }
    // A full length below the bytes carried means nothing (and would not survive a
    // re-encoding, which leaves the property out then): the packet is at least what came.
    let carried = u32::try_from(p.data.len()).unwrap_or(u32::MAX);
    p.total_len = full_len.map_or(carried, |f| f.max(carried));
    Ok(p)
}

/// Properties in Open vSwitch's order, leaving out the ones that say nothing (full length
/// of an untruncated packet, no buffer, table 0, no cookie, no user data).
fn encode_packet_in2(out: &mut Vec<u8>, version: u8, p: &PacketIn2) {
    let prop = |out: &mut Vec<u8>, ty: u16, body: &dyn Fn(&mut Vec<u8>)| {
        let start = out.len();
        out.u16(ty);
        out.u16(0);
        body(out);
        let len = out.len() - start;
        out.patch_u16(start + 2, len);
        out.pad8_from(start);
    };
    prop(out, pint::PACKET, &|o| o.extend_from_slice(&p.data));
    if (p.data.len() as u64) < u64::from(p.total_len) {
        prop(out, pint::FULL_LEN, &|o| o.u32(p.total_len));
    }
    if p.buffer_id != crate::messages::OFP_NO_BUFFER {
        prop(out, pint::BUFFER_ID, &|o| o.u32(p.buffer_id));
    }
    // Always, table 0 included, as OVS sends it.
    prop(out, pint::TABLE_ID, &|o| o.u8(p.table_id));
    if p.cookie != u64::MAX {
        prop(out, pint::COOKIE, &|o| {
            o.zeros(4);
            o.u64(p.cookie);
        });
    }
    prop(out, pint::REASON, &|o| o.u8(p.reason));
    let mode = if version >= super::OFP15 {
        Mode::Oxm15
    } else {
        Mode::Oxm
    };
    prop(out, pint::METADATA, &|o| encode_tlvs(o, &p.metadata, mode));
    if !p.continuation.is_empty() {
        prop(out, pint::CONTINUATION, &|o| {
            o.zeros(4);
            o.extend_from_slice(&p.continuation);
        });
    }
    if !p.userdata.is_empty() {
        prop(out, pint::USERDATA, &|o| o.extend_from_slice(&p.userdata));
    }
}

fn encode_tlv_maps(out: &mut Vec<u8>, maps: &[TlvMap]) {
    for m in maps {
        out.u16(m.class);
        out.u8(m.type_);
        out.u8(m.len);
        out.u16(m.index);
        out.zeros(2);
    }
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
    let timeouts = fm.idle_timeout != 0 || fm.hard_timeout != 0;
    fm.flags = decode_flow_mod_flags(rd.u16()?, command, timeouts, version)?;
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
        NxMessage::TlvTableMod { command, maps } => {
            out.u16(*command as u16);
            out.zeros(6);
            encode_tlv_maps(out, maps);
        }
        NxMessage::TlvTableRequest => {}
        NxMessage::CtFlushZone(zone) => {
            out.zeros(6);
            out.u16(*zone);
        }
        NxMessage::PacketIn2(p) | NxMessage::Resume(p) => encode_packet_in2(out, version, p),
        NxMessage::TlvTableReply {
            max_option_space,
            max_fields,
            maps,
        } => {
            out.u32(*max_option_space);
            out.u16(*max_fields);
            out.zeros(10);
            encode_tlv_maps(out, maps);
        }
        NxMessage::FlowMod(fm) => {
            out.u64(fm.cookie);
            out.u16((u16::from(fm.table_id) << 8) | fm.command as u16);
            out.u16(fm.idle_timeout);
            out.u16(fm.hard_timeout);
            out.u16(fm.priority);
            out.u32(fm.buffer_id);
            out.u16(port_to_of10(fm.out_port).ok_or(EncodeError::Unrepresentable("out_port"))?);
            out.u16(encode_flow_mod_flags(fm.flags, version)?);
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
