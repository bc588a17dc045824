//! Nicira's `sample` action on the wire, in its three forms, the same in every version:
//!
//! * `NXAST_SAMPLE` (29), 24 bytes: probability (u16), collector set, observation domain and
//!   observation point ids (u32 each);
//! * `NXAST_SAMPLE2` (38), 32 bytes: the same, then the sampling port (u16, OpenFlow 1.0
//!   numbering in every version) and 6 bytes that this form ignores;
//! * `NXAST_SAMPLE3` (41), 32 bytes: `NXAST_SAMPLE2` whose seventh-last byte is the
//!   direction (0 default, 1 ingress, 2 egress; anything else is `BadActionArgument`).
//!
//! The encoder picks the smallest form that carries the action, as ovs-ofctl does: SAMPLE3
//! for a direction, else SAMPLE2 for a sampling port, else SAMPLE. A zero probability is
//! `BadActionArgument` at decode (OVS refuses it too).

use super::{finish, nicira::nx_begin, NX_VENDOR_ID};
use crate::actions::{port_from_of10, port_to_of10, Action, OFPP_ANY};
use crate::sample::{Sample, SampleDirection};
use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;

const SAMPLE: u16 = 29;
const SAMPLE2: u16 = 38;
const SAMPLE3: u16 = 41;

/// If `body` (an experimenter action after its type and length) is a `sample`, its
/// subtype.
pub(super) fn sample_subtype(body: &[u8]) -> Option<u16> {
    let vendor = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let sub = u16::from_be_bytes(body.get(4..6)?.try_into().ok()?);
    (vendor == NX_VENDOR_ID && matches!(sub, SAMPLE | SAMPLE2 | SAMPLE3)).then_some(sub)
}

/// Decode a `sample` whose subtype [`sample_subtype`] found; `a` is after the type and
/// length, `len` the whole action's length.
pub(super) fn decode_sample(sub: u16, len: usize, a: &mut Rd<'_>) -> Result<Action, DecodeError> {
    let want = if sub == SAMPLE { 24 } else { 32 };
    if len != want {
        return Err(DecodeError::BadActionLen);
    }
    a.skip(6)?; // vendor, subtype
    let probability = a.u16()?;
    let collector_set_id = a.u32()?;
    let obs_domain_id = a.u32()?;
    let obs_point_id = a.u32()?;
    let (sampling_port, direction) = if sub == SAMPLE {
        (OFPP_ANY, SampleDirection::Default)
    } else {
        let port = port_from_of10(a.u16()?);
        let dir = a.u8()?;
        let dir = if sub == SAMPLE3 {
            SampleDirection::from_wire(dir).ok_or(DecodeError::BadActionArgument)?
        } else {
            SampleDirection::Default
        };
        (port, dir)
    };
    if probability == 0 {
        return Err(DecodeError::BadActionArgument);
    }
    Ok(Action::Sample(Sample {
        probability,
        collector_set_id,
        obs_domain_id,
        obs_point_id,
        sampling_port,
        direction,
    }))
}

/// Encode `a` if it is a `sample`; false for any other action.
pub(super) fn encode_sample(out: &mut Vec<u8>, a: &Action) -> bool {
    let Action::Sample(s) = a else {
        return false;
    };
    let sub = if s.direction != SampleDirection::Default {
        SAMPLE3
    } else if s.has_port() {
        SAMPLE2
    } else {
        SAMPLE
    };
    let start = nx_begin(out, sub);
    out.u16(s.probability);
    out.u32(s.collector_set_id);
    out.u32(s.obs_domain_id);
    out.u32(s.obs_point_id);
    if sub != SAMPLE {
        // A port 1.0 cannot carry fails validation; NONE stands for it if one gets here.
        out.u16(port_to_of10(s.sampling_port).unwrap_or(0xffff));
        out.u8(s.direction.to_wire());
    }
    finish(out, start);
    true
}
