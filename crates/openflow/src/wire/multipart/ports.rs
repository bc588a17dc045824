//! Port statistics and port descriptions as multipart bodies.
//!
//! The records themselves ([`Port`], [`PortStats`]) and their three generations of
//! layout live in [`crate::wire::port`]; this file holds the multipart framing around
//! them. A port statistics request names one port (`OFPP_ANY` for all): a 16-bit port
//! and 6 pad in OpenFlow 1.0, a 32-bit port and 4 pad later. A port description request
//! has no body before 1.5 and names a port in 1.5 (see `decode_id`). Replies are
//! records back to back, each delimiting itself; they are decoded one after the other.

use super::decode_id;
use crate::actions::{port_from_of10, port_to_of10};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{
    decode_port, decode_port_stats, encode_port, encode_port_stats, Port, PortStats,
};
use crate::wire::record::until_empty;
use crate::wire::OFP10;

pub(super) fn decode_stats_request(version: u8, rd: &mut Rd<'_>) -> Result<u32, DecodeError> {
    if version == OFP10 {
        let p = port_from_of10(rd.u16()?);
        rd.skip(6)?;
        Ok(p)
    } else {
        decode_id(rd)
    }
}

pub(super) fn encode_stats_request(
    out: &mut Vec<u8>,
    version: u8,
    port_no: u32,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        out.u16(port_to_of10(port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
        out.zeros(6);
    } else {
        out.u32(port_no);
        out.zeros(4);
    }
    Ok(())
}

pub(super) fn decode_stats(version: u8, rd: &mut Rd<'_>) -> Result<Vec<PortStats>, DecodeError> {
    until_empty(rd, |rd| decode_port_stats(version, rd))
}

pub(super) fn encode_stats(
    out: &mut Vec<u8>,
    version: u8,
    v: &[PortStats],
) -> Result<(), EncodeError> {
    v.iter()
        .try_for_each(|s| encode_port_stats(out, version, s))
}

pub(super) fn decode_descs(version: u8, rd: &mut Rd<'_>) -> Result<Vec<Port>, DecodeError> {
    until_empty(rd, |rd| decode_port(version, rd))
}

pub(super) fn encode_descs(out: &mut Vec<u8>, version: u8, v: &[Port]) -> Result<(), EncodeError> {
    v.iter().try_for_each(|p| encode_port(out, version, p))
}
