//! Nicira vendor/experimenter actions (id 0x00002320).
//!
//! Decoded: `resubmit`, `resubmit_table` (and its `ct` form), `set_queue`, `pop_queue`, `group` (OpenFlow 1.0's form),
//! `reg_load`, `reg_load2`, `reg_move`, `stack_push`, `stack_pop`, `dec_ttl` (without controller ids), `push_mpls`, `pop_mpls`,
//! `set_mpls_ttl`, `dec_mpls_ttl`, `set_mpls_label`, `set_mpls_tc`, `set_tunnel` and
//! `set_tunnel64`: the ones with a model meaning. Others (`learn`, `ct`, `note`,
//! `conjunction`, `controller`, `sample`...) are
//! `BadActionExpType(subtype)`. Each has its exact length (16 bytes, 24 for
//! `set_tunnel64` and `reg_load`).
//!
//! A register load names its field with an NXM header and its bits with an offset and a
//! width; it becomes a masked set-field. `NXM_OF_IN_PORT` names `in_port`'s 16-bit view
//! (see [`crate::actions::Subfield::is_port16`]); fields whose NXM form is not the model's
//! bits (the VLAN TCI, the ToS byte) cannot be loaded bit-wise and are
//! `BadActionArgument`, as are loads outside the field. On encode, a write is one
//! `reg_load` per contiguous run of its bits (at most 64 bits each), as OVS splits it; a
//! variable-length field (`tun_metadata`) is a `reg_load2` (an OXM TLV with a mask).

use super::of11::decode_set_field_tlv;
use super::{at, begin, finish, nxast, want, NX_VENDOR_ID};
use crate::actions::{port_from_of10, port_to_of10, Action, Subfield, OFPP_IN_PORT};
use crate::oxm::{ones, Field};
use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::oxm::{encode_field, field_from_header, subfield_header, Mode};

pub(super) fn decode_vendor_action(len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
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
                ct: false,
            }
        }
        nxast::RESUBMIT_TABLE | nxast::RESUBMIT_TABLE_CT => {
            nx16(len)?;
            let in_port = port_or_none(a.u16()?);
            let t = a.u8()?;
            let ct = sub == nxast::RESUBMIT_TABLE_CT;
            // OVS requires the padding to be zero (OFPBAC_BAD_ARGUMENT).
            if ct && a.bytes(3)?.iter().any(|b| *b != 0) {
                return Err(DecodeError::BadActionArgument);
            }
            Action::Resubmit {
                in_port,
                table: (t != 0xff).then_some(t),
                ct,
            }
        }
        nxast::SET_QUEUE => {
            nx16(len)?;
            a.skip(2)?;
            Action::SetQueue(a.u32()?)
        }
        nxast::POP_QUEUE => nx16(len).map(|()| Action::PopQueue)?,
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
        nxast::REG_MOVE => {
            want(len, 24)?;
            let n_bits = a.u16()?;
            let src_ofs = a.u16()?;
            let dst_ofs = a.u16()?;
            let (src, dst) = (a.u32()?, a.u32()?);
            decode_move(n_bits, src_ofs, dst_ofs, src, dst)?
        }
        nxast::STACK_PUSH | nxast::STACK_POP => {
            want(len, 24)?;
            let ofs = a.u16()?;
            let hdr = a.u32()?;
            let n_bits = a.u16()?;
            let sf = subfield(hdr, ofs, n_bits)?;
            if sub == nxast::STACK_PUSH {
                Action::StackPush(sf)
            } else {
                Action::StackPop(sf)
            }
        }
        other => return Err(DecodeError::BadActionExpType(other)),
    })
}

/// The bits `ofs..ofs+n_bits` of the field a bare header names.
pub(super) fn subfield(hdr: u32, ofs: u16, n_bits: u16) -> Result<Subfield, DecodeError> {
    let (field, width) = field_from_header(hdr).ok_or(DecodeError::BadSetType)?;
    let sf = Subfield { field, ofs, n_bits };
    if sf.is_valid() && u32::from(ofs) + u32::from(n_bits) <= width {
        Ok(sf)
    } else {
        Err(DecodeError::BadSetLen)
    }
}

/// A register move / copy-field from its wire parts.
pub(super) fn decode_move(
    n_bits: u16,
    src_ofs: u16,
    dst_ofs: u16,
    src: u32,
    dst: u32,
) -> Result<Action, DecodeError> {
    Ok(Action::Move {
        src: subfield(src, src_ofs, n_bits)?,
        dst: subfield(dst, dst_ofs, n_bits)?,
    })
}

fn decode_reg_load(ofs_nbits: u16, hdr: u32, value: u64) -> Result<Action, DecodeError> {
    let ofs = u32::from(ofs_nbits >> 6);
    let nbits = u32::from(ofs_nbits & 0x3f) + 1;
    let (field, width) = field_from_header(hdr).ok_or(DecodeError::BadActionArgument)?;
    if ofs + nbits > width {
        return Err(DecodeError::BadActionArgument);
    }
    if u128::from(value) >> nbits != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    let mask = ones(nbits) << ofs;
    // A whole-field load keeps its mask: it goes back out as a load (see `crate::actions`).
    Ok(Action::SetField {
        field,
        value: u128::from(value) << ofs,
        mask: Some(mask),
    })
}

pub(super) fn nx_begin(out: &mut Vec<u8>, sub: u16) -> usize {
    let s = begin(out, at::EXPERIMENTER);
    out.u32(NX_VENDOR_ID);
    out.u16(sub);
    s
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

/// Nicira `reg_load`s, one per contiguous run of written bits (a run longer than 64 bits
/// is cut every 64), as OVS writes a set-field in OpenFlow 1.0-1.4 (so a whole 128-bit
/// write is two: `load:V->F[0..63],load:V'->F[64..127]`); a variable-length field is one
/// `reg_load2` (an OXM TLV with a mask), as OVS sends it.
/// An unmasked `reg_load2` of `value`, as it came (no cut into the field's width).
pub(super) fn encode_nx_set_field(out: &mut Vec<u8>, field: Field, value: u128) {
    let s = nx_begin(out, nxast::REG_LOAD2);
    encode_field(out, field, value, None, load_mode(field));
    finish(out, s);
}

pub(super) fn encode_nx_load(out: &mut Vec<u8>, field: Field, value: u128, mask: Option<u128>) {
    let m = mask.unwrap_or_else(|| field.max()) & field.max();
    if field.is_tun_metadata() || m == 0 {
        let s = nx_begin(out, nxast::REG_LOAD2);
        encode_field(out, field, value, mask, load_mode(field));
        finish(out, s);
        return;
    }
    for run in load_runs(m) {
        let ofs = run.trailing_zeros();
        let n = run.count_ones();
        let sf = Subfield {
            field,
            ofs: ofs as u16,
            n_bits: n as u16,
        };
        let s = nx_begin(out, nxast::REG_LOAD);
        out.u16(((ofs as u16) << 6) | ((n - 1) as u16));
        out.u32(subfield_header(&sf, load_mode(field)));
        out.u64(((value & run) >> ofs) as u64);
        finish(out, s);
    }
}

/// The bits of each `reg_load` a write of `mask` takes: its contiguous runs, low to high,
/// a run longer than 64 bits cut every 64 (OVS's `next_load_segment`).
pub(super) fn load_runs(mask: u128) -> impl Iterator<Item = u128> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let ofs = rest.trailing_zeros();
        let run = ones((rest >> ofs).trailing_ones().min(64)) << ofs;
        rest &= !run;
        Some(run)
    })
}

/// The writes a set-field in an action list of `version` (before 1.5) comes back as once
/// encoded and decoded: one masked write per `reg_load` when [`encode_nx_load`] cuts it
/// into several (a 128-bit field, a mask of several runs), else itself. The decoders
/// give these, so what they return encodes back to the same bytes.
pub(super) fn split_load(version: u8, a: Action, out: &mut Vec<Action>) {
    let Action::SetField { field, value, mask } = a else {
        out.push(a);
        return;
    };
    let m = match mask {
        Some(m) => m & field.max(),
        None if version == crate::wire::OFP10 && !super::of10::has_own_action(field) => field.max(),
        None => 0,
    };
    if field.is_tun_metadata() || load_runs(m).nth(1).is_none() {
        out.push(a);
        return;
    }
    out.extend(load_runs(m).map(|run| Action::SetField {
        field,
        value: value & run,
        mask: Some(run),
    }));
}

pub(super) fn encode_nx_common(out: &mut Vec<u8>, a: &Action) -> bool {
    let s;
    match *a {
        Action::PopQueue => s = nx_begin(out, nxast::POP_QUEUE),
        Action::Resubmit { in_port, table, ct } => {
            let p = in_port.and_then(port_to_of10).unwrap_or(0xfff8);
            if ct {
                s = nx_begin(out, nxast::RESUBMIT_TABLE_CT);
                out.u16(p);
                out.u8(table.unwrap_or(0xff));
            } else if let Some(t) = table {
                s = nx_begin(out, nxast::RESUBMIT_TABLE);
                out.u16(p);
                out.u8(t);
            } else {
                s = nx_begin(out, nxast::RESUBMIT);
                out.u16(p);
            }
        }
        // OpenFlow 1.5 writes moves as copy-field (see `of11`); earlier versions get here.
        Action::Move { src, dst } => {
            s = nx_begin(out, nxast::REG_MOVE);
            out.u16(dst.n_bits);
            out.u16(src.ofs);
            out.u16(dst.ofs);
            out.u32(subfield_header(&src, Mode::Nxm));
            out.u32(subfield_header(&dst, Mode::Nxm));
        }
        Action::StackPush(sf) | Action::StackPop(sf) => {
            let sub = if matches!(a, Action::StackPush(_)) {
                nxast::STACK_PUSH
            } else {
                nxast::STACK_POP
            };
            s = nx_begin(out, sub);
            out.u16(sf.ofs);
            out.u32(subfield_header(&sf, Mode::Nxm));
            out.u16(sf.n_bits);
        }
        _ => return false,
    }
    finish(out, s);
    true
}
