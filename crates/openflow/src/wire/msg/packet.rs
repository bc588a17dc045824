//! Packet-in and packet-out.
//!
//! * Packet-in: buffer id, total length, then in OpenFlow 1.0 the 16-bit in_port, reason
//!   and pad; from 1.3 on reason, table, cookie, an `ofp_match` with the pipeline fields
//!   and 2 pad. The frame (possibly truncated) fills the rest. In the model, 1.0's
//!   in_port is the match's only field.
//! * Packet-out: buffer id, then the in_port and the actions' length (1.0: 16-bit port;
//!   1.3/1.4: 32-bit port and 6 pad; 1.5: the length, 2 pad and an `ofp_match` whose
//!   in_port field is the in_port, `OFPP_CONTROLLER` when absent), the actions, and the
//!   frame. The actions' length is checked against the bytes present (`BadLength`); the
//!   actions within it as any action list (`BadActionLen`...).

use crate::actions::{port_from_of10, port_to_of10, Action, OFPP_CONTROLLER};
use crate::matches::Match;
use crate::oxm::Field;
use crate::wire::action::{decode_actions, encode_actions};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::oxm::{decode_ofp_match, encode_ofp_match};
use crate::wire::{OFP10, OFP15};

/// Packet-in.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketIn {
    /// Buffer id or `OFP_NO_BUFFER`.
    pub buffer_id: u32,
    /// Full length of the frame.
    pub total_len: u16,
    /// `OFPR_*` reason.
    pub reason: u8,
    /// Table the packet was looked up in (1.3+).
    pub table_id: u8,
    /// Cookie of the flow that sent it (1.3+).
    pub cookie: u64,
    /// Pipeline fields (in_port at least; OpenFlow 1.0 carries only in_port).
    pub match_: Match,
    /// The (possibly truncated) frame.
    pub data: Vec<u8>,
}

pub(crate) fn decode_packet_in(version: u8, rd: &mut Rd<'_>) -> Result<PacketIn, DecodeError> {
    let buffer_id = rd.u32()?;
    let total_len = rd.u16()?;
    if version == OFP10 {
        let in_port = port_from_of10(rd.u16()?);
        let reason = rd.u8()?;
        rd.skip(1)?;
        return Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id: 0,
            cookie: 0,
            match_: Match::new().with(Field::InPort, u128::from(in_port)),
            data: rd.rest().to_vec(),
        });
    }
    let reason = rd.u8()?;
    let table_id = rd.u8()?;
    let cookie = rd.u64()?;
    let match_ = decode_ofp_match(rd)?;
    rd.skip(2)?;
    Ok(PacketIn {
        buffer_id,
        total_len,
        reason,
        table_id,
        cookie,
        match_,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_packet_in(
    out: &mut Vec<u8>,
    version: u8,
    p: &PacketIn,
) -> Result<(), EncodeError> {
    out.u32(p.buffer_id);
    out.u16(p.total_len);
    if version == OFP10 {
        let port = p.match_.exact(Field::InPort).unwrap_or(0) as u32;
        out.u16(port_to_of10(port).ok_or(EncodeError::Unrepresentable("in_port"))?);
        out.u8(p.reason);
        out.u8(0);
    } else {
        out.u8(p.reason);
        out.u8(p.table_id);
        out.u64(p.cookie);
        encode_ofp_match(out, &p.match_, version);
        out.zeros(2);
    }
    out.extend_from_slice(&p.data);
    Ok(())
}

/// Packet-out.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketOut {
    /// Buffer id or `OFP_NO_BUFFER`.
    pub buffer_id: u32,
    /// Input port for the packet (`OFPP_CONTROLLER` if none).
    pub in_port: u32,
    /// OpenFlow 1.5: the other pipeline fields of the packet-out's match.
    pub match_: Match,
    /// Actions.
    pub actions: Vec<Action>,
    /// The frame, if not buffered.
    pub data: Vec<u8>,
}

pub(crate) fn decode_packet_out(version: u8, rd: &mut Rd<'_>) -> Result<PacketOut, DecodeError> {
    let buffer_id = rd.u32()?;
    let (in_port, alen, mut match_) = match version {
        OFP10 => {
            let p = port_from_of10(rd.u16()?);
            (p, rd.u16()?, Match::new())
        }
        OFP15 => {
            let alen = rd.u16()?;
            rd.skip(2)?;
            let mut m = decode_ofp_match(rd)?;
            let p = m.exact(Field::InPort).map_or(OFPP_CONTROLLER, |p| p as u32);
            m.remove(Field::InPort);
            (p, alen, m)
        }
        _ => {
            let p = rd.u32()?;
            let alen = rd.u16()?;
            rd.skip(6)?;
            (p, alen, Match::new())
        }
    };
    let mut ar = rd.sub(usize::from(alen), DecodeError::BadLength)?;
    let actions = decode_actions(version, &mut ar.clone().with_err(DecodeError::BadActionLen))?;
    ar.rest();
    if version != OFP15 {
        match_ = Match::new();
    }
    Ok(PacketOut {
        buffer_id,
        in_port,
        match_,
        actions,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_packet_out(
    out: &mut Vec<u8>,
    version: u8,
    p: &PacketOut,
) -> Result<(), EncodeError> {
    let mut acts = Vec::new();
    encode_actions(&mut acts, version, &p.actions)?;
    out.u32(p.buffer_id);
    match version {
        OFP10 => {
            out.u16(port_to_of10(p.in_port).ok_or(EncodeError::Unrepresentable("in_port"))?);
            out.u16(acts.len() as u16);
        }
        OFP15 => {
            out.u16(acts.len() as u16);
            out.zeros(2);
            let m = p.match_.clone().with(Field::InPort, u128::from(p.in_port));
            encode_ofp_match(out, &m, version);
        }
        _ => {
            out.u32(p.in_port);
            out.u16(acts.len() as u16);
            out.zeros(6);
        }
    }
    out.extend_from_slice(&acts);
    out.extend_from_slice(&p.data);
    Ok(())
}
