//! Queue statistics (`OFPMP_QUEUE`).
//!
//! The request names a port (16-bit with 2 pad in OpenFlow 1.0, 32-bit later; `OFPP_ANY`
//! for all) and a queue (`OFPQ_ALL` for all). Reply records are fixed-size in 1.0 (32
//! bytes: port, 2 pad, queue, three counters) and 1.3 (40: 32-bit port, queue, counters,
//! duration); from 1.4 on they start with their own length and 6 pad and end with
//! properties kept raw (records of at least 48 bytes). Either way every record is cut
//! before any is decoded.
//!
//! Queue descriptions (1.4+) are in [`crate::wire::of14`].

use crate::actions::{port_from_of10, port_to_of10};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{decode_props, encode_props, Prop};
use crate::wire::record::{fixed, Framing};
use crate::wire::{OFP10, OFP13, OFP14};

/// One queue's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct QueueStats {
    /// Port.
    pub port_no: u32,
    /// Queue.
    pub queue_id: u32,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Overrun drops.
    pub tx_errors: u64,
    /// Time alive, seconds (1.3+).
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds (1.3+).
    pub duration_nsec: u32,
    /// 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

/// The request's port and queue.
pub(super) fn decode_request(version: u8, rd: &mut Rd<'_>) -> Result<(u32, u32), DecodeError> {
    let port_no = if version == OFP10 {
        let p = port_from_of10(rd.u16()?);
        rd.skip(2)?;
        p
    } else {
        rd.u32()?
    };
    Ok((port_no, rd.u32()?))
}

pub(super) fn encode_request(
    out: &mut Vec<u8>,
    version: u8,
    port_no: u32,
    queue_id: u32,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        out.u16(port_to_of10(port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
        out.zeros(2);
    } else {
        out.u32(port_no);
    }
    out.u32(queue_id);
    Ok(())
}

pub(super) fn decode_stats(version: u8, rd: &mut Rd<'_>) -> Result<Vec<QueueStats>, DecodeError> {
    let one = |r| decode_one(version, r);
    match version {
        OFP10 => fixed(rd, 32, one),
        OFP13 => fixed(rd, 40, one),
        _ => Framing::prefixed(0, 48).all(rd, one),
    }
}

fn decode_one(version: u8, mut r: Rd<'_>) -> Result<QueueStats, DecodeError> {
    let mut q = QueueStats::default();
    if version == OFP10 {
        q.port_no = port_from_of10(r.u16()?);
        r.skip(2)?;
    } else {
        if version >= OFP14 {
            r.skip(8)?;
        }
        q.port_no = r.u32()?;
    }
    q.queue_id = r.u32()?;
    q.tx_bytes = r.u64()?;
    q.tx_packets = r.u64()?;
    q.tx_errors = r.u64()?;
    if version != OFP10 {
        q.duration_sec = r.u32()?;
        q.duration_nsec = r.u32()?;
    }
    if version >= OFP14 {
        q.props = decode_props(&mut r)?;
    }
    Ok(q)
}

pub(super) fn encode_stats(
    out: &mut Vec<u8>,
    version: u8,
    v: &[QueueStats],
) -> Result<(), EncodeError> {
    for q in v {
        let start = out.len();
        if version == OFP10 {
            out.u16(port_to_of10(q.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
            out.zeros(2);
        } else {
            if version >= OFP14 {
                out.u16(0);
                out.zeros(6);
            }
            out.u32(q.port_no);
        }
        out.u32(q.queue_id);
        out.u64(q.tx_bytes);
        out.u64(q.tx_packets);
        out.u64(q.tx_errors);
        if version != OFP10 {
            out.u32(q.duration_sec);
            out.u32(q.duration_nsec);
        }
        if version >= OFP14 {
            encode_props(out, &q.props);
            let len = out.len() - start;
            out.patch_u16(start, len);
        }
    }
    Ok(())
}
