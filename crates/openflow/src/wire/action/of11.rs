//! OpenFlow 1.1+ actions: 1.3's full set plus `push_pbb`/`pop_pbb`, and 1.5's meter
//! action.
//!
//! Fixed-size actions must be exactly 8 bytes (output: 16). `set_field` carries one OXM
//! TLV padded to 8: an unknown field is `BadSetType`, a wrong payload length
//! `BadSetLen`, anything else wrong with the TLV (or more than one TLV)
//! `BadActionArgument`. OpenFlow 1.5's `copy_field` (OVS's `move`) names its fields with
//! bare OXM headers (Nicira's for fields OpenFlow has no OXM for). A masked `set_field` is native in OpenFlow 1.5; earlier it is
//! written as a Nicira register load ([`super::nicira`]). Experimenter actions are
//! Nicira's or `BadActionExperimenter`.
//!
//! OpenFlow 1.0's `enqueue` has no 1.1+ action: it goes out as `set_queue`, `output` (with
//! `max_len` 0xffff) and Nicira's `pop_queue`, as OVS writes it, and reads back as those three.

use super::nicira::{decode_vendor_action, encode_nx_common, encode_nx_load};
use super::{at, begin, finish, want};
use crate::actions::{Action, OFPCML_NO_BUFFER};
use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::oxm::{decode_tlvs, encode_field, subfield_header, Mode};
use crate::wire::OFP15;

pub(super) fn decode_of11_action(
    ty: u16,
    len: usize,
    a: &mut Rd<'_>,
) -> Result<Action, DecodeError> {
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
        COPY_FIELD => {
            if len < 20 {
                return Err(DecodeError::BadActionLen);
            }
            let n_bits = a.u16()?;
            let src_ofs = a.u16()?;
            let dst_ofs = a.u16()?;
            a.skip(2)?;
            let (src, dst) = (a.u32()?, a.u32()?);
            super::nicira::decode_move(n_bits, src_ofs, dst_ofs, src, dst)?
        }
        EXPERIMENTER => decode_vendor_action(len, a)?,
        other => return Err(DecodeError::BadActionType(other)),
    })
}

/// The header family a set-field TLV names `field` with: OXM, except `in_port`, which OVS
/// writes (and only accepts) as the 16-bit `NXM_OF_IN_PORT`; it refuses `OXM_OF_IN_PORT`
/// in a set-field with `OFPBAC_BAD_SET_ARGUMENT` (checked with `ovs-ofctl ofp-print`).
fn set_field_mode(field: crate::Field) -> Mode {
    if field == crate::Field::InPort {
        Mode::Nxm
    } else {
        Mode::Oxm
    }
}

/// One OXM TLV (plus padding) as a set-field action.
pub(super) fn decode_set_field_tlv(a: &mut Rd<'_>) -> Result<Action, DecodeError> {
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
        // A mask of all ones is no mask: the field is written whole, as an unmasked
        // set-field (which is also how this encoder writes it back over OpenFlow 1.5).
        // Value bits outside the mask are never written, so they are dropped here (a
        // masked set-field goes back out as a `reg_load` before 1.5, which has no room
        // for them).
        // A masked write with value or mask bits beyond the field (a 16-bit TLV for the
        // 12-bit `tcp_flags`) has no model form and no encoding back (before 1.5 it goes out
        // as a register load, which is as wide as the field).
        [e] if e.mask.is_some_and(|m| (m | e.value) & !e.field.max() != 0) => {
            Err(DecodeError::BadActionArgument)
        }
        [e] => Ok(Action::SetField {
            field: e.field,
            value: e.mask.map_or(e.value, |m| e.value & m),
            mask: e.mask.filter(|m| *m != e.field.max()),
        }),
        _ => Err(DecodeError::BadActionArgument),
    }
}

pub(super) fn encode_of11_action(out: &mut Vec<u8>, version: u8, a: &Action) {
    use at::*;
    let copy_field = version >= OFP15 && matches!(a, Action::Move { .. });
    if !copy_field && encode_nx_common(out, a) {
        return;
    }
    if let Action::Enqueue { port, queue } = *a {
        return encode_enqueue(out, version, port, queue);
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
            if mask.is_some() && version < OFP15 {
                encode_nx_load(out, field, value, mask);
                return;
            }
            s = begin(out, SET_FIELD);
            // OpenFlow 1.5 has no load: a whole-field one is a plain set-field.
            let mask = mask.filter(|m| *m != field.max());
            encode_field(out, field, value, mask, set_field_mode(field));
        }
        Action::Move { src, dst } if version >= OFP15 => {
            s = begin(out, COPY_FIELD);
            out.u16(dst.n_bits);
            out.u16(src.ofs);
            out.u16(dst.ofs);
            out.u16(0);
            out.u32(subfield_header(&src, Mode::Oxm));
            out.u32(subfield_header(&dst, Mode::Oxm));
        }
        Action::Move { .. }
        | Action::StackPush(_)
        | Action::StackPop(_)
        | Action::PopQueue
        | Action::Enqueue { .. }
        | Action::Resubmit { .. } => return,
        // Written by `ct` before this encoder is reached.
        Action::Ct(_)
        | Action::Nat(_)
        | Action::CtClear
        | Action::Sample(_)
        | Action::Note(_)
        | Action::OutputReg { .. }
        | Action::Clone(_)
        | Action::DecTtlIds(_)
        | Action::Controller(_)
        | Action::Learn(_)
        | Action::CheckPktLarger { .. } => return,
    }
    finish(out, s);
}

/// OpenFlow 1.0's enqueue as OVS says it to a 1.1+ peer: `set_queue`, `output` with
/// `max_len` 0xffff, `pop_queue`.
fn encode_enqueue(out: &mut Vec<u8>, version: u8, port: u32, queue: u32) {
    encode_of11_action(out, version, &Action::SetQueue(queue));
    let output = Action::Output {
        port,
        max_len: OFPCML_NO_BUFFER,
    };
    encode_of11_action(out, version, &output);
    encode_of11_action(out, version, &Action::PopQueue);
}
