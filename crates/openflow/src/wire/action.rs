//! Actions and instructions on the wire.
//!
//! Three action families meet here:
//!
//! * OpenFlow 1.0 actions (8 or 16 bytes, 16-bit ports). The old "set" actions become the
//!   model's [`Action::SetField`]: `set_vlan_vid` → `vlan_vid` (with `OFPVID_PRESENT`),
//!   `set_vlan_pcp`, `set_dl_src/dst`, `set_nw_src/dst`, `set_nw_tos` → `ip_dscp`
//!   (`tos >> 2`), `set_tp_src/dst` → `tcp_src/dst`, or `udp_*`/`sctp_*` in a flow that
//!   matches that protocol (OpenFlow 1.0's transport port actions do not name the protocol;
//!   the encoder writes any of tcp/udp/sctp ports back as `set_tp_*`). `strip_vlan` is [`Action::PopVlan`]. `enqueue` has no model form
//!   and is rejected as `BadActionType(11)`.
//! * OpenFlow 1.1+ actions (1.3's full set plus `push_pbb/pop_pbb`), with `set_field`
//!   carrying one OXM TLV. A masked `set_field` is native in OpenFlow 1.5; earlier it is
//!   sent as Nicira `reg_load`/`reg_load2`.
//! * Nicira vendor/experimenter actions (id 0x00002320): `resubmit`, `resubmit_table`,
//!   `set_queue`, `reg_load`, `reg_load2`, `dec_ttl` (no controller ids), `push_mpls`,
//!   `pop_mpls`, `set_mpls_ttl`, `dec_mpls_ttl`, `set_mpls_label`, `set_mpls_tc`,
//!   `set_tunnel`, `set_tunnel64`: the ones with a model meaning. Others (`learn`, `ct`,
//!   `note`, `conjunction`, `controller`, `sample`, stack push/pop...) decode to
//!   `BadActionExpType(subtype)`.
//!
//! Instructions (OpenFlow 1.1+) are decoded in any order and sorted into execution order,
//! as the model keeps them; encoding writes them in that order. Experimenter instructions
//! are `UnknownInstruction(0xffff)`.
//!
//! Totality: every action and instruction length is checked to be at least the header,
//! a multiple of 8, no longer than the bytes left, and exactly the size its type defines
//! (set_field, reg_load2 and the action-carrying instructions are variable).

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use super::oxm::{decode_tlvs, encode_field, Mode};
use super::OFP10;
use crate::actions::{port_from_of10, port_to_of10, Action, Instruction, OFPP_IN_PORT};
use crate::matches::Match;
use crate::oxm::{ones, Field, OFPVID_PRESENT};

/// Nicira's vendor / experimenter id.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;

/// `OFPAT_*` (1.1+) numbers.
mod at {
    pub const OUTPUT: u16 = 0;
    pub const COPY_TTL_OUT: u16 = 11;
    pub const COPY_TTL_IN: u16 = 12;
    pub const SET_MPLS_TTL: u16 = 15;
    pub const DEC_MPLS_TTL: u16 = 16;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const PUSH_MPLS: u16 = 19;
    pub const POP_MPLS: u16 = 20;
    pub const SET_QUEUE: u16 = 21;
    pub const GROUP: u16 = 22;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const PUSH_PBB: u16 = 26;
    pub const POP_PBB: u16 = 27;
    /// OpenFlow 1.5 only.
    pub const METER: u16 = 29;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `OFPAT10_*` numbers.
mod at10 {
    pub const OUTPUT: u16 = 0;
    pub const SET_VLAN_VID: u16 = 1;
    pub const SET_VLAN_PCP: u16 = 2;
    pub const STRIP_VLAN: u16 = 3;
    pub const SET_DL_SRC: u16 = 4;
    pub const SET_DL_DST: u16 = 5;
    pub const SET_NW_SRC: u16 = 6;
    pub const SET_NW_DST: u16 = 7;
    pub const SET_NW_TOS: u16 = 8;
    pub const SET_TP_SRC: u16 = 9;
    pub const SET_TP_DST: u16 = 10;
}

/// `NXAST_*` subtypes.
mod nxast {
    pub const RESUBMIT: u16 = 1;
    pub const SET_TUNNEL: u16 = 2;
    pub const SET_QUEUE: u16 = 4;
    pub const REG_LOAD: u16 = 7;
    pub const SET_TUNNEL64: u16 = 9;
    pub const RESUBMIT_TABLE: u16 = 14;
    pub const WRITE_METADATA: u16 = 22;
    pub const DEC_TTL: u16 = 18;
    pub const PUSH_MPLS: u16 = 23;
    pub const POP_MPLS: u16 = 24;
    pub const SET_MPLS_TTL: u16 = 25;
    pub const DEC_MPLS_TTL: u16 = 26;
    pub const SET_MPLS_LABEL: u16 = 30;
    pub const SET_MPLS_TC: u16 = 31;
    pub const REG_LOAD2: u16 = 33;
    /// OpenFlow 1.0's form of the group action (OpenFlow 1.1+ has its own).
    pub const GROUP: u16 = 40;
}

// ---------------------------------------------------------------- decoding

/// Decode an action list filling all of `rd`.
pub(crate) fn decode_actions(version: u8, rd: &mut Rd<'_>) -> Result<Vec<Action>, DecodeError> {
    decode_actions_in(version, rd, None)
}

/// Decode the action list of a flow whose match is `m` (flow_mod, flow stats, flow monitor
/// update). The same as [`decode_actions`] except for OpenFlow 1.0's `set_tp_src/dst`, which
/// name no protocol: in a flow that matches `nw_proto` UDP or SCTP they become the UDP or
/// SCTP port fields, as OVS reads them, so that the set-field's prerequisites hold (`udp,
/// actions=mod_tp_dst:53` from an OpenFlow 1.0 controller is a valid flow); otherwise TCP.
pub(crate) fn decode_flow_actions(
    version: u8,
    rd: &mut Rd<'_>,
    m: &Match,
) -> Result<Vec<Action>, DecodeError> {
    decode_actions_in(version, rd, m.exact(Field::IpProto))
}

/// The UDP or SCTP field for an OpenFlow 1.0 transport port action decoded as TCP's, in a
/// flow whose match fixes `nw_proto` to `proto`.
fn of10_l4_port(field: Field, proto: Option<u128>) -> Field {
    match (field, proto) {
        (Field::TcpSrc, Some(17)) => Field::UdpSrc,
        (Field::TcpDst, Some(17)) => Field::UdpDst,
        (Field::TcpSrc, Some(132)) => Field::SctpSrc,
        (Field::TcpDst, Some(132)) => Field::SctpDst,
        (f, _) => f,
    }
}

fn decode_actions_in(
    version: u8,
    rd: &mut Rd<'_>,
    nw_proto: Option<u128>,
) -> Result<Vec<Action>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let ty = rd.peek_u16(0).ok_or(DecodeError::BadActionLen)?;
        let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadActionLen)?);
        if len < 8 || !len.is_multiple_of(8) || len > rd.len() {
            return Err(DecodeError::BadActionLen);
        }
        let mut a = rd.sub(len, DecodeError::BadActionLen)?;
        a.skip(4)?;
        let act = if version == OFP10 {
            match decode_of10_action(ty, len, &mut a)? {
                Action::SetField { field, value, mask }
                    if matches!(ty, at10::SET_TP_SRC | at10::SET_TP_DST) =>
                {
                    Action::SetField {
                        field: of10_l4_port(field, nw_proto),
                        value,
                        mask,
                    }
                }
                act => act,
            }
        } else if ty == at::METER && version < super::OFP15 {
            return Err(DecodeError::BadActionType(ty));
        } else {
            decode_of11_action(ty, len, &mut a)?
        };
        out.push(act);
    }
    Ok(out)
}

fn want(len: usize, expect: usize) -> Result<(), DecodeError> {
    if len == expect {
        Ok(())
    } else {
        Err(DecodeError::BadActionLen)
    }
}

fn decode_of10_action(ty: u16, len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    use at10::*;
    let sf = |field, value: u128| Action::SetField {
        field,
        value,
        mask: None,
    };
    Ok(match ty {
        OUTPUT => {
            want(len, 8)?;
            let port = port_from_of10(a.u16()?);
            Action::Output {
                port,
                max_len: a.u16()?,
            }
        }
        SET_VLAN_VID => {
            want(len, 8)?;
            let vid = a.u16()?;
            if vid > 0x0fff {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::VlanVid, u128::from(OFPVID_PRESENT | vid))
        }
        SET_VLAN_PCP => {
            want(len, 8)?;
            let pcp = a.u8()?;
            if pcp > 7 {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::VlanPcp, u128::from(pcp))
        }
        STRIP_VLAN => {
            want(len, 8)?;
            Action::PopVlan
        }
        SET_DL_SRC | SET_DL_DST => {
            want(len, 16)?;
            let mac = crate::oxm::mac_to_u128(a.array()?);
            sf(
                if ty == SET_DL_SRC {
                    Field::EthSrc
                } else {
                    Field::EthDst
                },
                mac,
            )
        }
        SET_NW_SRC | SET_NW_DST => {
            want(len, 8)?;
            let ip = u128::from(a.u32()?);
            sf(
                if ty == SET_NW_SRC {
                    Field::Ipv4Src
                } else {
                    Field::Ipv4Dst
                },
                ip,
            )
        }
        SET_NW_TOS => {
            want(len, 8)?;
            let tos = a.u8()?;
            if tos & 3 != 0 {
                return Err(DecodeError::BadActionArgument);
            }
            sf(Field::IpDscp, u128::from(tos >> 2))
        }
        SET_TP_SRC | SET_TP_DST => {
            want(len, 8)?;
            let p = u128::from(a.u16()?);
            sf(
                if ty == SET_TP_SRC {
                    Field::TcpSrc
                } else {
                    Field::TcpDst
                },
                p,
            )
        }
        at::EXPERIMENTER => decode_vendor_action(len, a)?,
        other => return Err(DecodeError::BadActionType(other)),
    })
}

fn decode_of11_action(ty: u16, len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    use at::*;
    let simple = |len, act| want(len, 8).map(|_| act);
    Ok(match ty {
        OUTPUT => {
            want(len, 16)?;
            let port = a.u32()?;
            Action::Output {
                port,
                max_len: a.u16()?,
            }
        }
        COPY_TTL_OUT => simple(len, Action::CopyTtlOut)?,
        COPY_TTL_IN => simple(len, Action::CopyTtlIn)?,
        DEC_MPLS_TTL => simple(len, Action::DecMplsTtl)?,
        POP_VLAN => simple(len, Action::PopVlan)?,
        DEC_NW_TTL => simple(len, Action::DecNwTtl)?,
        POP_PBB => simple(len, Action::PopPbb)?,
        SET_MPLS_TTL => simple(len, Action::SetMplsTtl(a.u8()?))?,
        SET_NW_TTL => simple(len, Action::SetNwTtl(a.u8()?))?,
        PUSH_VLAN => simple(len, Action::PushVlan(a.u16()?))?,
        PUSH_MPLS => simple(len, Action::PushMpls(a.u16()?))?,
        POP_MPLS => simple(len, Action::PopMpls(a.u16()?))?,
        PUSH_PBB => simple(len, Action::PushPbb(a.u16()?))?,
        SET_QUEUE => simple(len, Action::SetQueue(a.u32()?))?,
        GROUP => simple(len, Action::Group(a.u32()?))?,
        METER => simple(len, Action::Meter(a.u32()?))?,
        SET_FIELD => decode_set_field_tlv(a)?,
        EXPERIMENTER => decode_vendor_action(len, a)?,
        other => return Err(DecodeError::BadActionType(other)),
    })
}

/// One OXM TLV (plus padding) as a set-field action.
fn decode_set_field_tlv(a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    let tlv_len = 4 + usize::from(a.peek().get(3).copied().ok_or(DecodeError::BadSetLen)?);
    let mut t = Rd::new(
        a.bytes(tlv_len).map_err(|_| DecodeError::BadSetLen)?,
        DecodeError::BadSetLen,
    );
    let entries = decode_tlvs(&mut t).map_err(|e| match e {
        DecodeError::BadField(..) => DecodeError::BadSetType,
        DecodeError::BadFieldLen(..) => DecodeError::BadSetLen,
        _ => DecodeError::BadActionArgument,
    })?;
    match entries.as_slice() {
        [e] => Ok(Action::SetField {
            field: e.field,
            value: e.value,
            mask: e.mask,
        }),
        _ => Err(DecodeError::BadActionArgument),
    }
}

fn decode_vendor_action(len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    let vendor = a.u32()?;
    if vendor != NX_VENDOR_ID {
        return Err(DecodeError::BadActionExperimenter(vendor));
    }
    let sub = a.u16()?;
    let nx16 = |len| want(len, 16);
    let sf = |field, value: u128| Action::SetField {
        field,
        value,
        mask: None,
    };
    let port_or_none = |p: u16| {
        let p = port_from_of10(p);
        (p != OFPP_IN_PORT).then_some(p)
    };
    Ok(match sub {
        nxast::RESUBMIT => {
            nx16(len)?;
            Action::Resubmit {
                in_port: port_or_none(a.u16()?),
                table: None,
            }
        }
        nxast::RESUBMIT_TABLE => {
            nx16(len)?;
            let in_port = port_or_none(a.u16()?);
            let t = a.u8()?;
            Action::Resubmit {
                in_port,
                table: (t != 0xff).then_some(t),
            }
        }
        nxast::SET_QUEUE => {
            nx16(len)?;
            a.skip(2)?;
            Action::SetQueue(a.u32()?)
        }
        nxast::GROUP => {
            nx16(len)?;
            a.skip(2)?;
            Action::Group(a.u32()?)
        }
        nxast::SET_TUNNEL => {
            nx16(len)?;
            a.skip(2)?;
            sf(Field::TunnelId, u128::from(a.u32()?))
        }
        nxast::SET_TUNNEL64 => {
            want(len, 24)?;
            a.skip(6)?;
            sf(Field::TunnelId, u128::from(a.u64()?))
        }
        nxast::DEC_TTL => {
            nx16(len)?;
            Action::DecNwTtl
        }
        nxast::PUSH_MPLS => {
            nx16(len)?;
            Action::PushMpls(a.u16()?)
        }
        nxast::POP_MPLS => {
            nx16(len)?;
            Action::PopMpls(a.u16()?)
        }
        nxast::SET_MPLS_TTL => {
            nx16(len)?;
            Action::SetMplsTtl(a.u8()?)
        }
        nxast::DEC_MPLS_TTL => {
            nx16(len)?;
            Action::DecMplsTtl
        }
        nxast::SET_MPLS_LABEL => {
            nx16(len)?;
            a.skip(2)?;
            sf(Field::MplsLabel, u128::from(a.u32()?))
        }
        nxast::SET_MPLS_TC => {
            nx16(len)?;
            sf(Field::MplsTc, u128::from(a.u8()?))
        }
        nxast::REG_LOAD => {
            want(len, 24)?;
            let ofs_nbits = a.u16()?;
            let hdr = a.u32()?;
            let value = a.u64()?;
            decode_reg_load(ofs_nbits, hdr, value)?
        }
        nxast::REG_LOAD2 => decode_set_field_tlv(a)?,
        other => return Err(DecodeError::BadActionExpType(other)),
    })
}

fn decode_reg_load(ofs_nbits: u16, hdr: u32, value: u64) -> Result<Action, DecodeError> {
    let ofs = u32::from(ofs_nbits >> 6);
    let nbits = u32::from(ofs_nbits & 0x3f) + 1;
    // Build a fake TLV of the right length to reuse the header lookup.
    let class = (hdr >> 16) as u16;
    let num = ((hdr >> 9) & 0x7f) as u8;
    let plen = (hdr & 0xff) as usize;
    // Fields whose NXM form is not the model's bits (16-bit in_port, the TCI, the ToS
    // byte) cannot be loaded bit-wise into the model field.
    if class == 0 && matches!(num, 0 | 4 | 5) {
        return Err(DecodeError::BadActionArgument);
    }
    if hdr & 0x100 != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    let mut tlv = Vec::with_capacity(4 + plen);
    tlv.u32(hdr);
    tlv.zeros(plen);
    let entries = decode_tlvs(&mut Rd::new(&tlv, DecodeError::BadActionArgument))
        .map_err(|_| DecodeError::BadActionArgument)?;
    let field = match entries.as_slice() {
        [e] => e.field,
        _ => return Err(DecodeError::BadActionArgument),
    };
    if ofs + nbits > field.bits() || nbits > 64 {
        return Err(DecodeError::BadActionArgument);
    }
    if u128::from(value) >> nbits != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    let mask = ones(nbits) << ofs;
    Ok(Action::SetField {
        field,
        value: u128::from(value) << ofs,
        mask: (mask != field.max()).then_some(mask),
    })
}

/// Decode an instruction list filling all of `rd`, sorted into execution order.
pub(crate) fn decode_instructions(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<Vec<Instruction>, DecodeError> {
    let mut out = Vec::new();
    while !rd.is_empty() {
        let ty = rd.peek_u16(0).ok_or(DecodeError::BadInstructionLen)?;
        let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadInstructionLen)?);
        if len < 8 || !len.is_multiple_of(8) || len > rd.len() {
            return Err(DecodeError::BadInstructionLen);
        }
        let mut r = rd.sub(len, DecodeError::BadInstructionLen)?;
        r.skip(4)?;
        let fixed = |n| {
            if len == n {
                Ok(())
            } else {
                Err(DecodeError::BadInstructionLen)
            }
        };
        let i = match ty {
            1 => {
                fixed(8)?;
                Instruction::GotoTable(r.u8()?)
            }
            2 => {
                fixed(24)?;
                r.skip(4)?;
                let value = r.u64()?;
                Instruction::WriteMetadata {
                    value,
                    mask: r.u64()?,
                }
            }
            3 | 4 => {
                r.skip(4)?;
                let mut body = r.with_err(DecodeError::BadActionLen);
                let acts = decode_actions(version, &mut body)?;
                if ty == 3 {
                    Instruction::WriteActions(acts)
                } else {
                    Instruction::ApplyActions(acts)
                }
            }
            5 => {
                fixed(8)?;
                Instruction::ClearActions
            }
            // OpenFlow 1.5 replaced the meter instruction with a meter action (as OVS, an
            // OF1.5 message carrying one is refused: decoding it next to a leading meter
            // action would give a flow with two meters).
            6 if version >= super::OFP15 => return Err(DecodeError::UnknownInstruction(6)),
            6 => {
                fixed(8)?;
                Instruction::Meter(r.u32()?)
            }
            other => return Err(DecodeError::UnknownInstruction(other)),
        };
        out.push(i);
    }
    crate::actions::sort_instructions(&mut out);
    if version >= super::OFP15 {
        meter_action_to_instruction(&mut out);
    }
    Ok(out)
}

/// OpenFlow 1.5 says "meter first" with a meter action leading the apply-actions; the
/// model says it with the meter instruction, as 1.3 and 1.4 do, so that a flow reads the
/// same whatever version installed it and can be dumped in any of them (as OVS does).
/// A meter action anywhere else stays an action.
fn meter_action_to_instruction(insts: &mut Vec<Instruction>) {
    if insts.iter().any(|i| matches!(i, Instruction::Meter(_))) {
        return;
    }
    let Some(pos) = insts
        .iter()
        .position(|i| matches!(i, Instruction::ApplyActions(_)))
    else {
        return;
    };
    let Some(Instruction::ApplyActions(acts)) = insts.get_mut(pos) else {
        return;
    };
    let Some(&Action::Meter(m)) = acts.first() else {
        return;
    };
    acts.remove(0);
    if acts.is_empty() {
        insts.remove(pos);
    }
    insts.insert(0, Instruction::Meter(m));
}

/// The inverse of [`meter_action_to_instruction`] for encoding in OpenFlow 1.5, which has
/// no meter instruction.
fn meter_instruction_to_action(insts: &[Instruction]) -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::with_capacity(insts.len() + 1);
    let mut meter = None;
    for i in insts {
        match i {
            Instruction::Meter(m) if meter.is_none() => meter = Some(*m),
            Instruction::ApplyActions(a) if meter.is_some() => {
                let mut v = Vec::with_capacity(a.len() + 1);
                v.extend(meter.take().map(Action::Meter));
                v.extend(a.iter().cloned());
                out.push(Instruction::ApplyActions(v));
            }
            other => out.push(other.clone()),
        }
    }
    if let Some(m) = meter {
        out.insert(0, Instruction::ApplyActions(vec![Action::Meter(m)]));
    }
    out
}

// ---------------------------------------------------------------- encoding

fn begin(out: &mut Vec<u8>, ty: u16) -> usize {
    let start = out.len();
    out.u16(ty);
    out.u16(0);
    start
}

fn finish(out: &mut Vec<u8>, start: usize) {
    out.pad8_from(start);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
}

fn nx_begin(out: &mut Vec<u8>, sub: u16) -> usize {
    let s = begin(out, at::EXPERIMENTER);
    out.u32(NX_VENDOR_ID);
    out.u16(sub);
    s
}

fn contiguous(mask: u128) -> Option<(u32, u32)> {
    if mask == 0 {
        return None;
    }
    let ofs = mask.trailing_zeros();
    let run = mask >> ofs;
    let n = run.trailing_ones();
    (run.checked_shr(n).unwrap_or(0) == 0).then_some((ofs, n))
}

/// The header family for a register load into `field`: Nicira's, except for the fields
/// whose NXM form is not the model's bits (in_port, the VLAN TCI, the ToS byte), which
/// use their OXM header (OVS accepts either).
fn load_mode(field: Field) -> Mode {
    match field {
        Field::InPort | Field::VlanVid | Field::IpDscp => Mode::Oxm,
        _ => Mode::Nxm,
    }
}

/// Nicira `reg_load` if the write is a contiguous run of at most 64 bits, else
/// `reg_load2` (an OXM TLV with a mask).
fn encode_nx_load(out: &mut Vec<u8>, field: Field, value: u128, mask: Option<u128>) {
    let m = mask.unwrap_or_else(|| field.max());
    if let Some((ofs, n)) = contiguous(m) {
        if n <= 64 && ofs < 1024 {
            let mut tlv = Vec::new();
            encode_field(&mut tlv, field, 0, None, load_mode(field));
            if tlv.len() >= 4 {
                let hdr = u32::from_be_bytes([tlv[0], tlv[1], tlv[2], tlv[3]]);
                let s = nx_begin(out, nxast::REG_LOAD);
                out.u16(((ofs as u16) << 6) | ((n - 1) as u16));
                out.u32(hdr);
                out.u64(((value & m) >> ofs) as u64);
                finish(out, s);
                return;
            }
        }
    }
    let s = nx_begin(out, nxast::REG_LOAD2);
    encode_field(out, field, value, mask, load_mode(field));
    finish(out, s);
}

/// Encode one action for `version`.
pub(crate) fn encode_action(out: &mut Vec<u8>, version: u8, a: &Action) -> Result<(), EncodeError> {
    if version == OFP10 {
        encode_of10_action(out, a)
    } else if matches!(a, Action::Meter(_)) && version < super::OFP15 {
        Err(EncodeError::Unrepresentable("meter action (OpenFlow 1.5+)"))
    } else {
        encode_of11_action(out, version, a);
        Ok(())
    }
}

/// Encode an action list.
pub(crate) fn encode_actions(
    out: &mut Vec<u8>,
    version: u8,
    acts: &[Action],
) -> Result<(), EncodeError> {
    acts.iter().try_for_each(|a| encode_action(out, version, a))
}

/// A flow's instructions as OpenFlow 1.0 actions, for reporting a flow (statistics,
/// monitor updates) to a 1.0 connection, as OVS does: apply-actions as they are (less the
/// actions 1.0 has no form for: push_vlan, which 1.0 implies in setting a VLAN field,
/// copy_ttl, the PBB actions and the meter action), goto-table as `resubmit(,TABLE)`,
/// write-metadata as `NXAST_WRITE_METADATA`; meter, clear-actions and write-actions have no
/// 1.0 form and are left out. Write-metadata goes last: ovs-ofctl
/// reads it back as an instruction and refuses any action (the resubmit) after it. (A
/// flow_mod is never encoded this way: there, an instruction 1.0 cannot carry is an error.)
pub(crate) fn encode_of10_report(
    out: &mut Vec<u8>,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    let mut sorted: Vec<&Instruction> = insts.iter().collect();
    sorted.sort_by_key(|i| match i {
        Instruction::WriteMetadata { .. } => u8::MAX,
        other => other.order(),
    });
    for i in sorted {
        match i {
            Instruction::ApplyActions(a) => {
                let said: Vec<Action> = a
                    .iter()
                    .filter(|x| {
                        !matches!(
                            x,
                            Action::PushVlan(_)
                                | Action::CopyTtlOut
                                | Action::CopyTtlIn
                                | Action::PushPbb(_)
                                | Action::PopPbb
                                | Action::Meter(_)
                        )
                    })
                    .cloned()
                    .collect();
                encode_actions(out, OFP10, &said)?
            }
            Instruction::WriteMetadata { value, mask } => {
                let s = nx_begin(out, nxast::WRITE_METADATA);
                out.zeros(6);
                out.u64(*value);
                out.u64(*mask);
                finish(out, s);
            }
            Instruction::GotoTable(t) => encode_actions(
                out,
                OFP10,
                &[Action::Resubmit {
                    in_port: None,
                    table: Some(*t),
                }],
            )?,
            Instruction::Meter(_) | Instruction::ClearActions | Instruction::WriteActions(_) => {}
        }
    }
    Ok(())
}

fn encode_nx_common(out: &mut Vec<u8>, a: &Action) -> bool {
    let s;
    match *a {
        Action::Resubmit { in_port, table } => {
            let p = in_port.and_then(port_to_of10).unwrap_or(0xfff8);
            if let Some(t) = table {
                s = nx_begin(out, nxast::RESUBMIT_TABLE);
                out.u16(p);
                out.u8(t);
            } else {
                s = nx_begin(out, nxast::RESUBMIT);
                out.u16(p);
            }
        }
        _ => return false,
    }
    finish(out, s);
    true
}

fn encode_of10_action(out: &mut Vec<u8>, a: &Action) -> Result<(), EncodeError> {
    use at10::*;
    let un = EncodeError::Unrepresentable;
    if encode_nx_common(out, a) {
        return Ok(());
    }
    let s;
    match *a {
        Action::Output { port, max_len } => {
            s = begin(out, OUTPUT);
            out.u16(port_to_of10(port).ok_or(un("output port"))?);
            out.u16(max_len);
        }
        Action::PopVlan => {
            s = begin(out, STRIP_VLAN);
        }
        Action::SetQueue(q) => {
            s = nx_begin(out, nxast::SET_QUEUE);
            out.u16(0);
            out.u32(q);
        }
        Action::DecNwTtl => s = nx_begin(out, nxast::DEC_TTL),
        Action::PushMpls(t) => {
            s = nx_begin(out, nxast::PUSH_MPLS);
            out.u16(t);
        }
        Action::PopMpls(t) => {
            s = nx_begin(out, nxast::POP_MPLS);
            out.u16(t);
        }
        Action::SetMplsTtl(t) => {
            s = nx_begin(out, nxast::SET_MPLS_TTL);
            out.u8(t);
        }
        Action::DecMplsTtl => s = nx_begin(out, nxast::DEC_MPLS_TTL),
        Action::SetField {
            field,
            value,
            mask: None,
        } => {
            let ty = match field {
                Field::VlanVid => Some((SET_VLAN_VID, 2)),
                Field::VlanPcp => Some((SET_VLAN_PCP, 1)),
                Field::EthSrc => Some((SET_DL_SRC, 6)),
                Field::EthDst => Some((SET_DL_DST, 6)),
                Field::Ipv4Src => Some((SET_NW_SRC, 4)),
                Field::Ipv4Dst => Some((SET_NW_DST, 4)),
                Field::IpDscp => Some((SET_NW_TOS, 1)),
                Field::TcpSrc | Field::UdpSrc | Field::SctpSrc => Some((SET_TP_SRC, 2)),
                Field::TcpDst | Field::UdpDst | Field::SctpDst => Some((SET_TP_DST, 2)),
                _ => None,
            };
            match (ty, field) {
                (Some((t, n)), _) => {
                    s = begin(out, t);
                    let v = match field {
                        Field::VlanVid => value & 0x0fff,
                        Field::IpDscp => value << 2,
                        _ => value,
                    };
                    out.extend_from_slice(&crate::oxm::value_to_bytes(v, n));
                }
                (None, Field::MplsLabel) => {
                    s = nx_begin(out, nxast::SET_MPLS_LABEL);
                    out.u16(0);
                    out.u32(value as u32);
                }
                (None, Field::MplsTc) => {
                    s = nx_begin(out, nxast::SET_MPLS_TC);
                    out.u8(value as u8);
                }
                (None, Field::TunnelId) if value <= u128::from(u32::MAX) => {
                    s = nx_begin(out, nxast::SET_TUNNEL);
                    out.u16(0);
                    out.u32(value as u32);
                }
                (None, Field::TunnelId) => {
                    s = nx_begin(out, nxast::SET_TUNNEL64);
                    out.zeros(6);
                    out.u64(value as u64);
                }
                _ => {
                    encode_nx_load(out, field, value, None);
                    return Ok(());
                }
            }
        }
        Action::SetField {
            field,
            value,
            mask: Some(m),
        } => {
            encode_nx_load(out, field, value, Some(m));
            return Ok(());
        }
        Action::Group(g) => {
            s = nx_begin(out, nxast::GROUP);
            out.u16(0);
            out.u32(g);
        }
        Action::SetNwTtl(t) => {
            encode_nx_load(out, Field::NwTtl, u128::from(t), None);
            return Ok(());
        }
        Action::CopyTtlOut | Action::CopyTtlIn => return Err(un("copy_ttl")),
        Action::PushVlan(_) => return Err(un("push_vlan")),
        Action::PushPbb(_) | Action::PopPbb => return Err(un("pbb actions")),
        Action::Meter(_) => return Err(un("meter action")),
        Action::Resubmit { .. } => return Ok(()),
    }
    finish(out, s);
    Ok(())
}

fn encode_of11_action(out: &mut Vec<u8>, version: u8, a: &Action) {
    use at::*;
    if encode_nx_common(out, a) {
        return;
    }
    let s;
    match *a {
        Action::Output { port, max_len } => {
            s = begin(out, OUTPUT);
            out.u32(port);
            out.u16(max_len);
        }
        Action::Group(g) => {
            s = begin(out, GROUP);
            out.u32(g);
        }
        Action::SetQueue(q) => {
            s = begin(out, SET_QUEUE);
            out.u32(q);
        }
        Action::Meter(m) => {
            s = begin(out, METER);
            out.u32(m);
        }
        Action::SetMplsTtl(t) => {
            s = begin(out, SET_MPLS_TTL);
            out.u8(t);
        }
        Action::DecMplsTtl => s = begin(out, DEC_MPLS_TTL),
        Action::SetNwTtl(t) => {
            s = begin(out, SET_NW_TTL);
            out.u8(t);
        }
        Action::DecNwTtl => s = begin(out, DEC_NW_TTL),
        Action::CopyTtlOut => s = begin(out, COPY_TTL_OUT),
        Action::CopyTtlIn => s = begin(out, COPY_TTL_IN),
        Action::PushVlan(t) => {
            s = begin(out, PUSH_VLAN);
            out.u16(t);
        }
        Action::PopVlan => s = begin(out, POP_VLAN),
        Action::PushMpls(t) => {
            s = begin(out, PUSH_MPLS);
            out.u16(t);
        }
        Action::PopMpls(t) => {
            s = begin(out, POP_MPLS);
            out.u16(t);
        }
        Action::PushPbb(t) => {
            s = begin(out, PUSH_PBB);
            out.u16(t);
        }
        Action::PopPbb => s = begin(out, POP_PBB),
        Action::SetField { field, value, mask } => {
            if mask.is_some() && version < super::OFP15 {
                encode_nx_load(out, field, value, mask);
                return;
            }
            s = begin(out, SET_FIELD);
            encode_field(out, field, value, mask, Mode::Oxm);
        }
        Action::Resubmit { .. } => return,
    }
    finish(out, s);
}

/// Encode instructions (OpenFlow 1.1+), in the order given.
/// Encode instructions; a meter action before OpenFlow 1.5 is `Unrepresentable`.
pub(crate) fn encode_instructions(
    out: &mut Vec<u8>,
    version: u8,
    insts: &[Instruction],
) -> Result<(), EncodeError> {
    let converted;
    let meters = insts
        .iter()
        .filter(|i| matches!(i, Instruction::Meter(_)))
        .count();
    // OpenFlow 1.5 says "meter" only as a leading meter action: one meter instruction
    // becomes that; a second one has no OpenFlow 1.5 form.
    if version >= super::OFP15 && meters > 1 {
        return Err(EncodeError::Unrepresentable(
            "two meter instructions (OpenFlow 1.5)",
        ));
    }
    let insts = if version >= super::OFP15 && meters == 1 {
        converted = meter_instruction_to_action(insts);
        converted.as_slice()
    } else {
        insts
    };
    for i in insts {
        let s = begin(out, i.type_code());
        match i {
            Instruction::GotoTable(t) => out.u8(*t),
            Instruction::WriteMetadata { value, mask } => {
                out.zeros(4);
                out.u64(*value);
                out.u64(*mask);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                out.zeros(4);
                for act in a {
                    encode_action(out, version, act)?;
                }
            }
            Instruction::ClearActions => out.zeros(4),
            Instruction::Meter(m) => out.u32(*m),
        }
        finish(out, s);
    }
    Ok(())
}

/// Encode an action list as `version` writes it (public form of the codec's action
/// encoder, e.g. for tools and tests).
pub fn encode_action_list(version: u8, acts: &[Action]) -> Result<Vec<u8>, EncodeError> {
    let mut v = Vec::new();
    encode_actions(&mut v, version, acts)?;
    Ok(v)
}

/// Decode an action list that fills `bytes`, as `version` defines actions.
pub fn decode_action_list(version: u8, bytes: &[u8]) -> Result<Vec<Action>, DecodeError> {
    decode_actions(version, &mut Rd::new(bytes, DecodeError::BadActionLen))
}
