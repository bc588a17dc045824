//! Nicira's connection-tracking actions on the wire: `NXAST_CT` (35) with its nested
//! action list, `NXAST_NAT` (36) and `NXAST_CT_CLEAR` (43).
//!
//! `NXAST_CT` is 24 bytes followed by actions: flags (u16), the zone's field header (u32,
//! 0 for an immediate zone), the zone immediate or the field's `ofs << 6 | (n_bits - 1)`
//! (u16), the table (u8, 255 for none), 3 pad bytes and the ALG (u16). The nested actions
//! are ordinary actions of the message's version (so `exec(set_field:..->ct_mark)` is a
//! `set_field` in OpenFlow 1.3 and a `reg_load` in 1.0) plus `NXAST_NAT`. A `ct` inside a
//! `ct` is refused before the nested list is decoded, so decoding never recurses more than
//! one level whatever the input.
//!
//! `NXAST_NAT` is 16 bytes (2 pad, flags u16, `range_present` u16) followed by the parts
//! `range_present` announces, in order: IPv4 min and max (4 each), IPv6 min and max (16
//! each), port min and max (2 each), padded to 8. `NXAST_CT_CLEAR` is a bare 16-byte
//! header. The encoder writes exactly what OVS's ovs-ofctl writes for the same text.

use super::{begin, finish, nxast_ct, NX_VENDOR_ID};
use crate::actions::{Action, Subfield};
use crate::ct::{Ct, CtZone, Nat, NatAddrs};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::oxm::{field_from_header, subfield_header, Mode};

const RANGE_IPV4_MIN: u16 = 1 << 0;
const RANGE_IPV4_MAX: u16 = 1 << 1;
const RANGE_IPV6_MIN: u16 = 1 << 2;
const RANGE_IPV6_MAX: u16 = 1 << 3;
const RANGE_PROTO_MIN: u16 = 1 << 4;
const RANGE_PROTO_MAX: u16 = 1 << 5;

/// If `body` (an experimenter action after its type and length) is one of ours, its
/// subtype.
pub(super) fn ct_subtype(body: &[u8]) -> Option<u16> {
    let vendor = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let sub = u16::from_be_bytes(body.get(4..6)?.try_into().ok()?);
    (vendor == NX_VENDOR_ID && matches!(sub, nxast_ct::CT | nxast_ct::NAT | nxast_ct::CT_CLEAR))
        .then_some(sub)
}

/// Decode a `ct`, `nat` or `ct_clear` whose subtype [`ct_subtype`] found; `a` is after the
/// type and length, `len` the whole action's length.
pub(super) fn decode_ct_action(
    version: u8,
    sub: u16,
    len: usize,
    a: &mut Rd<'_>,
) -> Result<Action, DecodeError> {
    a.skip(6)?; // vendor, subtype
    match sub {
        nxast_ct::CT_CLEAR => {
            if len != 16 {
                return Err(DecodeError::BadActionLen);
            }
            Ok(Action::CtClear)
        }
        nxast_ct::NAT => Ok(Action::Nat(Box::new(decode_nat(len, a)?))),
        _ => decode_ct(version, len, a).map(|c| Action::Ct(Box::new(c))),
    }
}

fn decode_ct(version: u8, len: usize, a: &mut Rd<'_>) -> Result<Ct, DecodeError> {
    if len < 24 {
        return Err(DecodeError::BadActionLen);
    }
    let flags = a.u16()?;
    let zone_src = a.u32()?;
    let zone_val = a.u16()?;
    let table = a.u8()?;
    a.skip(3)?;
    let alg = a.u16()?;
    let zone = if zone_src == 0 {
        CtZone::Imm(zone_val)
    } else {
        let (field, width) = field_from_header(zone_src).ok_or(DecodeError::BadSetType)?;
        let sf = Subfield {
            field,
            ofs: zone_val >> 6,
            n_bits: (zone_val & 0x3f) + 1,
        };
        if !sf.is_valid() || u32::from(sf.ofs) + u32::from(sf.n_bits) > width {
            return Err(DecodeError::BadSetLen);
        }
        CtZone::Field(sf)
    };
    let nested = a.rest();
    if contains_ct(nested) {
        return Err(DecodeError::BadActionArgument);
    }
    let actions = super::decode_actions(version, &mut Rd::new(nested, DecodeError::BadActionLen))?;
    Ok(Ct {
        flags,
        zone,
        table: (table != crate::ct::NX_CT_RECIRC_NONE).then_some(table),
        alg,
        actions,
    })
}

/// Whether a nested action list holds an `NXAST_CT` at its top level (read with the
/// type-length framing only; a malformed list is the nested decoder's to refuse).
fn contains_ct(mut b: &[u8]) -> bool {
    while b.len() >= 4 {
        let ty = u16::from_be_bytes([b[0], b[1]]);
        let len = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if len < 4 || len > b.len() {
            return false;
        }
        if ty == 0xffff && b.get(4..len).and_then(ct_subtype) == Some(nxast_ct::CT) {
            return true;
        }
        b = &b[len..];
    }
    false
}

fn decode_nat(len: usize, a: &mut Rd<'_>) -> Result<Nat, DecodeError> {
    if len < 16 {
        return Err(DecodeError::BadActionLen);
    }
    a.skip(2)?;
    let flags = a.u16()?;
    let present = a.u16()?;
    if present & !0x3f != 0 {
        return Err(DecodeError::BadActionArgument);
    }
    let v4 = present & (RANGE_IPV4_MIN | RANGE_IPV4_MAX) != 0;
    let v6 = present & (RANGE_IPV6_MIN | RANGE_IPV6_MAX) != 0;
    if v4 && v6 {
        return Err(DecodeError::BadActionArgument);
    }
    let opt32 = |a: &mut Rd<'_>, bit| -> Result<u32, DecodeError> {
        if present & bit != 0 {
            a.u32()
        } else {
            Ok(0)
        }
    };
    let (min4, max4) = (opt32(a, RANGE_IPV4_MIN)?, opt32(a, RANGE_IPV4_MAX)?);
    let opt128 = |a: &mut Rd<'_>, bit| -> Result<u128, DecodeError> {
        if present & bit != 0 {
            Ok(u128::from_be_bytes(a.array::<16>()?))
        } else {
            Ok(0)
        }
    };
    let (min6, max6) = (opt128(a, RANGE_IPV6_MIN)?, opt128(a, RANGE_IPV6_MAX)?);
    let opt16 = |a: &mut Rd<'_>, bit| -> Result<u16, DecodeError> {
        if present & bit != 0 {
            a.u16()
        } else {
            Ok(0)
        }
    };
    let (pmin, pmax) = (opt16(a, RANGE_PROTO_MIN)?, opt16(a, RANGE_PROTO_MAX)?);
    if a.len() >= 8 {
        // More than padding: the length disagrees with `range_present`.
        return Err(DecodeError::BadActionLen);
    }
    let addrs = if v4 {
        NatAddrs::V4 {
            min: min4,
            max: max4,
        }
    } else if v6 {
        NatAddrs::V6 {
            min: min6,
            max: max6,
        }
    } else {
        NatAddrs::None
    };
    Ok(Nat {
        flags,
        addrs,
        proto_min: pmin,
        proto_max: pmax,
    })
}

fn nx_begin(out: &mut Vec<u8>, sub: u16) -> usize {
    let s = begin(out, 0xffff);
    out.u32(NX_VENDOR_ID);
    out.u16(sub);
    s
}

/// Encode `a` if it is a `ct`, `nat` or `ct_clear`; `None` for any other action.
pub(super) fn encode_ct_action(
    out: &mut Vec<u8>,
    version: u8,
    a: &Action,
) -> Option<Result<(), EncodeError>> {
    match a {
        Action::CtClear => {
            let s = nx_begin(out, nxast_ct::CT_CLEAR);
            finish(out, s);
            Some(Ok(()))
        }
        Action::Nat(n) => {
            encode_nat(out, n);
            Some(Ok(()))
        }
        Action::Ct(ct) => Some(encode_ct(out, version, ct)),
        _ => None,
    }
}

fn encode_ct(out: &mut Vec<u8>, version: u8, ct: &Ct) -> Result<(), EncodeError> {
    let s = nx_begin(out, nxast_ct::CT);
    out.u16(ct.flags);
    match ct.zone {
        CtZone::Imm(z) => {
            out.u32(0);
            out.u16(z);
        }
        CtZone::Field(sf) => {
            out.u32(subfield_header(&sf, Mode::Nxm));
            out.u16((sf.ofs << 6) | (sf.n_bits.saturating_sub(1) & 0x3f));
        }
    }
    out.u8(ct.table.unwrap_or(crate::ct::NX_CT_RECIRC_NONE));
    out.extend_from_slice(&[0; 3]);
    out.u16(ct.alg);
    super::encode_actions(out, version, &ct.actions)?;
    finish(out, s);
    Ok(())
}

fn encode_nat(out: &mut Vec<u8>, n: &Nat) {
    let s = nx_begin(out, nxast_ct::NAT);
    out.u16(0);
    out.u16(n.flags);
    let mut present = 0u16;
    match n.addrs {
        NatAddrs::None => {}
        NatAddrs::V4 { min: _, max } => {
            present |= RANGE_IPV4_MIN;
            if max != 0 {
                present |= RANGE_IPV4_MAX;
            }
        }
        NatAddrs::V6 { min: _, max } => {
            present |= RANGE_IPV6_MIN;
            if max != 0 {
                present |= RANGE_IPV6_MAX;
            }
        }
    }
    if n.proto_min != 0 {
        present |= RANGE_PROTO_MIN;
    }
    if n.proto_max != 0 {
        present |= RANGE_PROTO_MAX;
    }
    out.u16(present);
    match n.addrs {
        NatAddrs::None => {}
        NatAddrs::V4 { min, max } => {
            out.u32(min);
            if max != 0 {
                out.u32(max);
            }
        }
        NatAddrs::V6 { min, max } => {
            out.extend_from_slice(&min.to_be_bytes());
            if max != 0 {
                out.extend_from_slice(&max.to_be_bytes());
            }
        }
    }
    if n.proto_min != 0 {
        out.u16(n.proto_min);
    }
    if n.proto_max != 0 {
        out.u16(n.proto_max);
    }
    finish(out, s);
}
