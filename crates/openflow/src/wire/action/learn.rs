//! Nicira's `learn` action on the wire, the same in every version (checked against
//! ovs-ofctl 3.1's bytes for OpenFlow 1.0, 1.3 and 1.5):
//!
//! * `NXAST_LEARN` (16): idle and hard timeout, priority (u16 each), cookie (u64), flags
//!   (u16), table (u8), a zero byte, FIN idle and hard timeout (u16 each): 32 bytes with the
//!   action header; then the specs to the end of the action.
//! * `NXAST_LEARN2` (45): the same 32 bytes, then limit (u32), `result_dst`'s offset (u16),
//!   two zero bytes (else `NXBRC_MUST_BE_ZERO`), `result_dst`'s 32-bit field header when
//!   the write-result flag is set, then the specs.
//! * A spec: a 16-bit header (bit 13 source is immediate, bits 12..11 destination 0 match,
//!   1 load, 2 output, bits 10..0 the width), the source (a field header and offset, or the
//!   immediate value right-aligned in whole 16-bit words), the destination (a field header
//!   and offset for match and load). A zero header or the end of the action ends the list;
//!   what follows a zero header must be zeros.
//!
//! Errors are OVS's: a non-zero pad, table 255 or an unknown flag is `OFPBAC_BAD_ARGUMENT`,
//! as is an immediate output or a destination type 3; a spec running past the action is
//! `OFPBAC_BAD_LEN`; an unknown field header is `OFPBAC_BAD_SET_TYPE`, bits outside their
//! field `OFPBAC_BAD_SET_LEN`. Widths over 128 bits (no field of the model is wider) are
//! `OFPBAC_BAD_ARGUMENT` too.

use super::nicira::{nx_begin, subfield};
use super::{finish, NX_VENDOR_ID};
use crate::actions::Action;
use crate::learn::{Learn, LearnDst, LearnSpec, LearnSrc, F_WRITE_RESULT};
use crate::messages::err::nx_tlv;
use crate::messages::OfError;
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::oxm::{subfield_header, Mode};

const LEARN: u16 = 16;
const LEARN2: u16 = 45;

const SRC_IMMEDIATE: u16 = 1 << 13;
const DST_SHIFT: u16 = 11;
const DST_MASK: u16 = 3 << DST_SHIFT;
const N_BITS_MASK: u16 = 0x7ff;

/// If `body` (an experimenter action after its type and length) is a learn action, its
/// subtype.
pub(super) fn learn_subtype(body: &[u8]) -> Option<u16> {
    let vendor = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let sub = u16::from_be_bytes(body.get(4..6)?.try_into().ok()?);
    (vendor == NX_VENDOR_ID && matches!(sub, LEARN | LEARN2)).then_some(sub)
}

/// Decode an action whose subtype [`learn_subtype`] found; `a` is after the type and
/// length, `len` the whole action's length.
pub(super) fn decode_learn(sub: u16, len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    if len < if sub == LEARN { 32 } else { 40 } {
        return Err(DecodeError::BadActionLen);
    }
    a.skip(6)?; // vendor, subtype
    let mut l = Learn {
        idle_timeout: a.u16()?,
        hard_timeout: a.u16()?,
        priority: a.u16()?,
        cookie: a.u64()?,
        flags: a.u16()?,
        table_id: a.u8()?,
        ..Learn::default()
    };
    if a.u8()? != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    l.fin_idle_timeout = a.u16()?;
    l.fin_hard_timeout = a.u16()?;
    if l.table_id == 0xff {
        return Err(DecodeError::BadActionArgument);
    }
    if sub == LEARN2 {
        l.v2 = true;
        l.limit = a.u32()?;
        let result_ofs = a.u16()?;
        if a.u16()? != 0 {
            return Err(DecodeError::Refused(OfError::nx(nx_tlv::MUST_BE_ZERO)));
        }
        if l.flags & !0x7 != 0 {
            return Err(DecodeError::BadActionArgument);
        }
        if l.flags & F_WRITE_RESULT != 0 {
            let hdr = a.u32().map_err(|_| DecodeError::BadActionLen)?;
            let sf = subfield(hdr, result_ofs, 1)?;
            if !crate::actions::field_writable(sf.field) {
                return Err(DecodeError::Refused(OfError::bad_action(
                    crate::messages::err::bad_action::BAD_SET_ARGUMENT,
                )));
            }
            l.result_dst = Some(sf);
        } else if result_ofs != 0 {
            return Err(DecodeError::BadActionArgument);
        }
    } else if l.flags & !0x3 != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    while a.len() >= 2 {
        let header = a.u16()?;
        if header == 0 {
            break;
        }
        l.specs.push(decode_spec(header, a)?);
    }
    if a.rest().iter().any(|b| *b != 0) {
        return Err(DecodeError::BadActionArgument);
    }
    Ok(Action::Learn(Box::new(l)))
}

fn decode_spec(header: u16, a: &mut Rd<'_>) -> Result<LearnSpec, DecodeError> {
    let n_bits = header & N_BITS_MASK;
    let imm = header & SRC_IMMEDIATE != 0;
    let dst_type = (header & DST_MASK) >> DST_SHIFT;
    if header & 0xc000 != 0 || dst_type == 3 || (dst_type == 2 && imm) {
        return Err(DecodeError::BadActionArgument);
    }
    let words = usize::from(n_bits).div_ceil(16);
    let need = if imm { 2 * words } else { 6 } + if dst_type == 2 { 0 } else { 6 };
    if a.len() < need {
        return Err(DecodeError::BadActionLen);
    }
    if n_bits == 0 || n_bits > 128 {
        return Err(DecodeError::BadActionArgument);
    }
    let src = if imm {
        let bytes = a.bytes(2 * words)?;
        LearnSrc::Imm(bytes.iter().fold(0u128, |v, b| (v << 8) | u128::from(*b)))
    } else {
        let hdr = a.u32()?;
        let ofs = a.u16()?;
        LearnSrc::Field(subfield(hdr, ofs, n_bits)?)
    };
    let dst = if dst_type == 2 {
        LearnDst::Output
    } else {
        let hdr = a.u32()?;
        let ofs = a.u16()?;
        let sf = subfield(hdr, ofs, n_bits)?;
        if dst_type == 0 {
            LearnDst::Match(sf)
        } else {
            LearnDst::Load(sf)
        }
    };
    if let LearnSrc::Imm(v) = src {
        // Bits above the width, in the padding of the last word, are ignored (OVS keeps
        // only the low bytes).
        let v = v & crate::oxm::ones(u32::from(n_bits));
        return Ok(LearnSpec {
            n_bits,
            src: LearnSrc::Imm(v),
            dst,
        });
    }
    Ok(LearnSpec { n_bits, src, dst })
}

/// Encode `a` if it is a learn action; `None` for any other action.
pub(super) fn encode_learn(out: &mut Vec<u8>, a: &Action) -> Option<Result<(), EncodeError>> {
    let Action::Learn(l) = a else {
        return None;
    };
    let s = nx_begin(out, if l.needs_v2() { LEARN2 } else { LEARN });
    out.u16(l.idle_timeout);
    out.u16(l.hard_timeout);
    out.u16(l.priority);
    out.u64(l.cookie);
    out.u16(l.flags);
    out.u8(l.table_id);
    out.u8(0);
    out.u16(l.fin_idle_timeout);
    out.u16(l.fin_hard_timeout);
    if l.needs_v2() {
        out.u32(l.limit);
        out.u16(l.result_dst.map_or(0, |r| r.ofs));
        out.u16(0);
        if let Some(r) = l.result_dst {
            out.u32(subfield_header(&r, Mode::Nxm));
        }
    }
    for spec in &l.specs {
        let dst_type: u16 = match spec.dst {
            LearnDst::Match(_) => 0,
            LearnDst::Load(_) => 1,
            LearnDst::Output => 2,
        };
        let imm = if matches!(spec.src, LearnSrc::Imm(_)) {
            SRC_IMMEDIATE
        } else {
            0
        };
        out.u16(imm | (dst_type << DST_SHIFT) | (spec.n_bits & N_BITS_MASK));
        match spec.src {
            LearnSrc::Field(sf) => {
                out.u32(subfield_header(&sf, Mode::Nxm));
                out.u16(sf.ofs);
            }
            LearnSrc::Imm(v) => {
                let n = 2 * usize::from(spec.n_bits).div_ceil(16);
                let be = v.to_be_bytes();
                out.extend_from_slice(&be[16 - n.min(16)..]);
            }
        }
        if let LearnDst::Match(sf) | LearnDst::Load(sf) = spec.dst {
            out.u32(subfield_header(&sf, Mode::Nxm));
            out.u16(sf.ofs);
        }
    }
    if out.len() - s > 0xfff8 {
        out.truncate(s);
        return Some(Err(EncodeError::TooLong));
    }
    finish(out, s);
    Some(Ok(()))
}
