//! Nicira's pipeline extensions that OVN relies on, on the wire, the same in every version
//! (nested actions excepted, which are the message version's own):
//!
//! * `NXAST_NOTE` (8): at least 16 bytes; everything after the subtype is the note (the
//!   padding zeros included, as OVS keeps and prints them).
//! * `NXAST_OUTPUT_REG` (15), 24 bytes: `ofs << 6 | (n_bits - 1)` (u16), the source field's
//!   header (u32), `max_len` (u16), 6 zero bytes. `NXAST_OUTPUT_REG2` (32), at least 24:
//!   `ofs_nbits`, `max_len`, then the header and zeros to the end. OVS writes the second form
//!   only for fields without a 32-bit header, which the model has none of: the encoder always
//!   writes the first.
//! * `NXAST_CLONE` (42): 16 bytes (6 pad) followed by the nested actions.
//! * `NXAST_DEC_TTL_CNT_IDS` (21): the id count (u16), 4 zero bytes, then the ids (u16
//!   each), padded to 8. Plain `dec_ttl` is `OFPAT_DEC_NW_TTL` (NXAST_DEC_TTL in 1.0).
//! * `NXAST_CHECK_PKT_LARGER` (49), at least 24 bytes: the length (u16), the bit's offset
//!   (u16), the destination field's NXM header (u32, in every version, as OVS writes it),
//!   zeros to the end. The bit must lie in the field (`BadSetLen`); whether the field is
//!   writable is [`Action::validate`]'s to say.
//!
//! Bytes OVS requires to be zero that are not are `BadActionArgument` (OVS: `OFPBAC_BAD_ARGUMENT`
//! for `output_reg`, `NXBRC_MUST_BE_ZERO` for the others). Totality: nesting is bounded by
//! [`MAX_NESTING`] (`BadActionArgument` beyond), counted per thread while decoding, so a
//! hostile message cannot recurse without limit through `clone` (or `ct` inside `clone`).

use super::nicira::{nx_begin, subfield};
use super::{finish, NX_VENDOR_ID};
use crate::actions::{Action, MAX_NESTING};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::oxm::{subfield_header, Mode};
use std::cell::Cell;

const NOTE: u16 = 8;
const OUTPUT_REG: u16 = 15;
const DEC_TTL_CNT_IDS: u16 = 21;
const OUTPUT_REG2: u16 = 32;
const CLONE: u16 = 42;
const CHECK_PKT_LARGER: u16 = 49;

/// If `body` (an experimenter action after its type and length) is one of this module's,
/// its subtype.
pub(super) fn nxext_subtype(body: &[u8]) -> Option<u16> {
    let vendor = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let sub = u16::from_be_bytes(body.get(4..6)?.try_into().ok()?);
    (vendor == NX_VENDOR_ID
        && matches!(
            sub,
            NOTE | OUTPUT_REG | DEC_TTL_CNT_IDS | OUTPUT_REG2 | CLONE | CHECK_PKT_LARGER
        ))
    .then_some(sub)
}

thread_local! {
    /// Action lists being decoded on this thread, outermost included.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Holds one level of [`DEPTH`] while a nested action list decodes.
pub(super) struct NestGuard;

impl NestGuard {
    /// One more level, or `BadActionArgument` past [`MAX_NESTING`] levels below the
    /// outermost list.
    pub(super) fn enter() -> Result<NestGuard, DecodeError> {
        DEPTH.with(|d| {
            if d.get() >= MAX_NESTING {
                Err(DecodeError::BadActionArgument)
            } else {
                d.set(d.get() + 1);
                Ok(NestGuard)
            }
        })
    }
}

impl Drop for NestGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

fn zeros(a: &mut Rd<'_>, n: usize) -> Result<(), DecodeError> {
    if a.bytes(n)?.iter().all(|b| *b == 0) {
        Ok(())
    } else {
        Err(DecodeError::BadActionArgument)
    }
}

/// Decode an action whose subtype [`nxext_subtype`] found; `a` is after the type and
/// length, `len` the whole action's length.
pub(super) fn decode_nxext(
    version: u8,
    sub: u16,
    len: usize,
    a: &mut Rd<'_>,
) -> Result<Action, DecodeError> {
    if len < 16 {
        return Err(DecodeError::BadActionLen);
    }
    a.skip(6)?; // vendor, subtype
    Ok(match sub {
        NOTE => Action::Note(a.rest().to_vec()),
        OUTPUT_REG => {
            if len != 24 {
                return Err(DecodeError::BadActionLen);
            }
            let ofs_nbits = a.u16()?;
            let hdr = a.u32()?;
            let max_len = a.u16()?;
            zeros(a, 6)?;
            Action::OutputReg {
                src: subfield(hdr, ofs_nbits >> 6, (ofs_nbits & 0x3f) + 1)?,
                max_len,
            }
        }
        OUTPUT_REG2 => {
            if len < 24 {
                return Err(DecodeError::BadActionLen);
            }
            let ofs_nbits = a.u16()?;
            let max_len = a.u16()?;
            let hdr = a.u32()?;
            if a.rest().iter().any(|b| *b != 0) {
                return Err(DecodeError::BadActionArgument);
            }
            Action::OutputReg {
                src: subfield(hdr, ofs_nbits >> 6, (ofs_nbits & 0x3f) + 1)?,
                max_len,
            }
        }
        DEC_TTL_CNT_IDS => {
            let n = usize::from(a.u16()?);
            zeros(a, 4)?;
            if a.peek().len() < 2 * n {
                return Err(DecodeError::BadActionLen);
            }
            let ids = (0..n).map(|_| a.u16()).collect::<Result<Vec<_>, _>>()?;
            Action::DecTtlIds(ids)
        }
        CHECK_PKT_LARGER => {
            if len < 24 {
                return Err(DecodeError::BadActionLen);
            }
            let pkt_len = a.u16()?;
            let ofs = a.u16()?;
            let hdr = a.u32()?;
            if a.rest().iter().any(|b| *b != 0) {
                return Err(DecodeError::BadActionArgument);
            }
            Action::CheckPktLarger {
                pkt_len,
                dst: subfield(hdr, ofs, 1)?,
            }
        }
        _ => {
            a.skip(6)?;
            let _level = NestGuard::enter()?;
            let nested = a.rest();
            Action::Clone(super::decode_actions(
                version,
                &mut Rd::new(nested, DecodeError::BadActionLen),
            )?)
        }
    })
}

/// Encode `a` if it is one of this module's; `None` for any other action.
pub(super) fn encode_nxext(
    out: &mut Vec<u8>,
    version: u8,
    a: &Action,
) -> Option<Result<(), EncodeError>> {
    let s;
    match a {
        Action::Note(bytes) => {
            s = nx_begin(out, NOTE);
            out.extend_from_slice(bytes);
            // At least 16 bytes: the shortest note is 6 bytes.
            let short = 16usize.saturating_sub(out.len() - s);
            out.zeros(short);
        }
        Action::OutputReg { src, max_len } => {
            s = nx_begin(out, OUTPUT_REG);
            out.u16((src.ofs << 6) | (src.n_bits.saturating_sub(1) & 0x3f));
            out.u32(subfield_header(src, Mode::Nxm));
            out.u16(*max_len);
            out.zeros(6);
        }
        Action::DecTtlIds(ids) => {
            s = nx_begin(out, DEC_TTL_CNT_IDS);
            out.u16(ids.len() as u16);
            out.zeros(4);
            for id in ids {
                out.u16(*id);
            }
        }
        Action::CheckPktLarger { pkt_len, dst } => {
            s = nx_begin(out, CHECK_PKT_LARGER);
            out.u16(*pkt_len);
            out.u16(dst.ofs);
            out.u32(subfield_header(dst, Mode::Nxm));
            out.zeros(6);
        }
        Action::Clone(inner) => {
            s = nx_begin(out, CLONE);
            out.zeros(6);
            if let Err(e) = super::encode_actions(out, version, inner) {
                return Some(Err(e));
            }
        }
        _ => return None,
    }
    finish(out, s);
    Some(Ok(()))
}
