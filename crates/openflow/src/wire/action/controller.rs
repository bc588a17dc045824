//! Nicira's `controller(...)` action on the wire, the same in every version (checked
//! against ovs-ofctl 3.1's bytes for OpenFlow 1.0, 1.3 and 1.5):
//!
//! * `NXAST_CONTROLLER` (20), 16 bytes: `max_len` (u16), `controller_id` (u16), `reason`
//!   (u8), one byte OVS neither checks nor prints (ignored here too, written as zero).
//! * `NXAST_CONTROLLER2` (37): 6 zero bytes (else `NXBRC_MUST_BE_ZERO`), then properties
//!   (type u16, length u16 counting the 4-byte header, value, zeros to 8 bytes):
//!   `MAX_LEN` (0, u16), `CONTROLLER_ID` (1, u16), `REASON` (2, u8), `USERDATA` (3, bytes),
//!   `PAUSE` (4, a flag), `METER_ID` (5, u32). OVS writes a 16-bit value as 4 bytes (two
//!   zeros after it, inside the property's length) and the 8-bit reason as 1. The encoder writes only the ones that differ
//!   from the defaults, in that order, as OVS does. The decoder is as forgiving as OVS: a
//!   16- or 8-bit value may carry extra bytes (the first ones count), a flag's value and the
//!   padding are ignored, a repeated property overrides. A property shorter than its header
//!   or longer than what is left is `OFPBPC_BAD_LEN`, a meter id not exactly 4 bytes too;
//!   an unknown type `OFPBPC_BAD_TYPE`; an experimenter property (type 0xffff) with
//!   experimenter 0 `OFPBPC_BAD_EXPERIMENTER`, any other `OFPBPC_BAD_EXP_TYPE`.
//!
//! The model ([`Controller`]) keeps which form an action came in, so it goes back out in
//! it; a plain `output:CONTROLLER` is not this module's (it is `OFPAT_OUTPUT`).

use super::nicira::nx_begin;
use super::{finish, NX_VENDOR_ID};
use crate::actions::Action;
use crate::controller::{Controller, NX_CTLR_NO_METER};
use crate::messages::err::{bad_property, nx_tlv, OFPET_BAD_PROPERTY};
use crate::messages::OfError;
use crate::wire::buf::{pad8, Rd, W};
use crate::wire::error::{DecodeError, EncodeError};

const CONTROLLER: u16 = 20;
const CONTROLLER2: u16 = 37;

/// `NXAC2PT_*`.
mod prop {
    pub const MAX_LEN: u16 = 0;
    pub const CONTROLLER_ID: u16 = 1;
    pub const REASON: u16 = 2;
    pub const USERDATA: u16 = 3;
    pub const PAUSE: u16 = 4;
    pub const METER_ID: u16 = 5;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// If `body` (an experimenter action after its type and length) is a controller action,
/// its subtype.
pub(super) fn controller_subtype(body: &[u8]) -> Option<u16> {
    let vendor = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let sub = u16::from_be_bytes(body.get(4..6)?.try_into().ok()?);
    (vendor == NX_VENDOR_ID && matches!(sub, CONTROLLER | CONTROLLER2)).then_some(sub)
}

fn prop_err(code: u16) -> DecodeError {
    DecodeError::Refused(OfError::new(OFPET_BAD_PROPERTY, code))
}

/// Decode an action whose subtype [`controller_subtype`] found; `a` is after the type and
/// length, `len` the whole action's length.
pub(super) fn decode_controller(
    sub: u16,
    len: usize,
    a: &mut Rd<'_>,
) -> Result<Action, DecodeError> {
    a.skip(6)?; // vendor, subtype
    let mut c = Controller::default();
    if sub == CONTROLLER {
        if len != 16 {
            return Err(DecodeError::BadActionLen);
        }
        c.max_len = a.u16()?;
        c.controller_id = a.u16()?;
        c.reason = a.u8()?;
        a.skip(1)?;
        return Ok(Action::Controller(c));
    }
    if len < 16 {
        return Err(DecodeError::BadActionLen);
    }
    if a.bytes(6)?.iter().any(|b| *b != 0) {
        return Err(DecodeError::Refused(OfError::nx(nx_tlv::MUST_BE_ZERO)));
    }
    c.v2 = true;
    while !a.is_empty() {
        let bad_len = || prop_err(bad_property::BAD_LEN);
        if a.len() < 4 {
            return Err(bad_len());
        }
        let ty = a.u16()?;
        let plen = usize::from(a.u16()?);
        if plen < 4 || pad8(plen) - 4 > a.len() {
            return Err(bad_len());
        }
        let mut v = a.sub(plen - 4, DecodeError::BadActionLen)?;
        a.skip(pad8(plen) - plen)?;
        let n = v.len();
        match ty {
            prop::MAX_LEN if n >= 2 => c.max_len = v.u16()?,
            prop::CONTROLLER_ID if n >= 2 => c.controller_id = v.u16()?,
            prop::REASON if n >= 1 => c.reason = v.u8()?,
            prop::USERDATA => c.userdata = v.rest().to_vec(),
            prop::PAUSE => c.pause = true,
            prop::METER_ID if n == 4 => c.meter_id = v.u32()?,
            prop::MAX_LEN | prop::CONTROLLER_ID | prop::REASON | prop::METER_ID => {
                return Err(bad_len())
            }
            prop::EXPERIMENTER => {
                if n < 8 {
                    return Err(bad_len());
                }
                return Err(prop_err(if v.u32()? == 0 {
                    bad_property::BAD_EXPERIMENTER
                } else {
                    bad_property::BAD_EXP_TYPE
                }));
            }
            _ => return Err(prop_err(bad_property::BAD_TYPE)),
        }
    }
    Ok(Action::Controller(c))
}

/// Encode `a` if it is a controller action; `None` for any other action. One whose user
/// data would not fit in an action is `TooLong`.
pub(super) fn encode_controller(out: &mut Vec<u8>, a: &Action) -> Option<Result<(), EncodeError>> {
    let Action::Controller(c) = a else {
        return None;
    };
    if !c.fits() {
        return Some(Err(EncodeError::TooLong));
    }
    if !c.needs_v2() {
        let s = nx_begin(out, CONTROLLER);
        out.u16(c.max_len);
        out.u16(c.controller_id);
        out.u8(c.reason);
        finish(out, s);
        return Some(Ok(()));
    }
    let s = nx_begin(out, CONTROLLER2);
    out.zeros(6);
    let prop = |out: &mut Vec<u8>, ty: u16, body: &dyn Fn(&mut Vec<u8>)| {
        let start = out.len();
        out.u16(ty);
        out.u16(0);
        body(out);
        let len = out.len() - start;
        out.patch_u16(start + 2, len);
        out.pad8_from(start);
    };
    if c.max_len != crate::actions::OFPCML_NO_BUFFER {
        prop(out, prop::MAX_LEN, &|o| {
            o.u16(c.max_len);
            o.zeros(2);
        });
    }
    if c.controller_id != 0 {
        prop(out, prop::CONTROLLER_ID, &|o| {
            o.u16(c.controller_id);
            o.zeros(2);
        });
    }
    if c.reason != crate::controller::OFPR_ACTION {
        prop(out, prop::REASON, &|o| o.u8(c.reason));
    }
    if !c.userdata.is_empty() {
        prop(out, prop::USERDATA, &|o| o.extend_from_slice(&c.userdata));
    }
    if c.pause {
        prop(out, prop::PAUSE, &|_| {});
    }
    if c.meter_id != NX_CTLR_NO_METER {
        prop(out, prop::METER_ID, &|o| o.u32(c.meter_id));
    }
    finish(out, s);
    Some(Ok(()))
}
