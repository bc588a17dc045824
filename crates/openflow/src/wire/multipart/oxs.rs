//! OXS: the TLV form OpenFlow 1.5 gives flow counters.
//!
//! An `ofp_stats` is a 2-byte reserved field, a 16-bit length (header and TLVs, without
//! padding) and OXS TLVs of class `OFPXSC_OPENFLOW_BASIC`, padded to 8. Each TLV is
//! class u16, field u7 + reserved bit, payload length u8 and the payload; the fields the
//! codec knows are duration (0, 8 bytes), idle time (1, 8 bytes), flow count (3, 4 bytes),
//! packet count (4, 8 bytes) and byte count (5, 8 bytes). Any other class, field or
//! payload length is a `BadField`. Flow statistics, aggregate replies, flow-removed
//! messages and 1.5's flow statistics (multipart 17) carry their counters this way.
//!
//! The encoder writes duration (and idle time when known) for per-flow statistics and
//! the flow count instead for aggregates, then packets and bytes, in field order.

use crate::wire::buf::{pad8, Rd, W};
use crate::wire::error::DecodeError;

/// OpenFlow 1.5 flow statistics (OXS fields of class `OFPXSC_OPENFLOW_BASIC`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct OxsStats {
    /// `OFPXST_OFB_DURATION` seconds.
    pub duration_sec: u32,
    /// `OFPXST_OFB_DURATION` nanoseconds.
    pub duration_nsec: u32,
    /// `OFPXST_OFB_IDLE_TIME` seconds, if present.
    pub idle_time: Option<(u32, u32)>,
    /// `OFPXST_OFB_FLOW_COUNT`, if present.
    pub flow_count: Option<u32>,
    /// `OFPXST_OFB_PACKET_COUNT`.
    pub packet_count: u64,
    /// `OFPXST_OFB_BYTE_COUNT`.
    pub byte_count: u64,
}

const OFPXSC_OPENFLOW_BASIC: u16 = 0x8002;

/// Decode an `ofp_stats` (reserved, length, OXS TLVs, padding to 8).
pub(crate) fn decode_oxs(rd: &mut Rd<'_>) -> Result<OxsStats, DecodeError> {
    let len = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
    if len < 4 {
        return Err(DecodeError::BadLength);
    }
    let whole = rd.bytes(pad8(len))?;
    let mut r = Rd::new(
        whole.get(4..len).unwrap_or_default(),
        DecodeError::BadLength,
    );
    let mut s = OxsStats::default();
    while !r.is_empty() {
        let class = r.u16()?;
        let fh = r.u8()?;
        let plen = usize::from(r.u8()?);
        let mut v = r.sub(plen, DecodeError::BadLength)?;
        if class != OFPXSC_OPENFLOW_BASIC {
            return Err(DecodeError::BadField(class, fh >> 1));
        }
        match (fh >> 1, plen) {
            (0, 8) => {
                s.duration_sec = v.u32()?;
                s.duration_nsec = v.u32()?;
            }
            (1, 8) => s.idle_time = Some((v.u32()?, v.u32()?)),
            (3, 4) => s.flow_count = Some(v.u32()?),
            (4, 8) => s.packet_count = v.u64()?,
            (5, 8) => s.byte_count = v.u64()?,
            (f, _) => return Err(DecodeError::BadField(class, f)),
        }
    }
    Ok(s)
}

/// Encode an `ofp_stats`. Aggregates (`aggregate`) carry flow_count and no duration.
pub(crate) fn encode_oxs(out: &mut Vec<u8>, s: &OxsStats, aggregate: bool) {
    let start = out.len();
    out.u16(0);
    out.u16(0);
    let tlv = |out: &mut Vec<u8>, f: u8, len: u8| {
        out.u16(OFPXSC_OPENFLOW_BASIC);
        out.u8(f << 1);
        out.u8(len);
    };
    if !aggregate {
        tlv(out, 0, 8);
        out.u32(s.duration_sec);
        out.u32(s.duration_nsec);
        if let Some((a, b)) = s.idle_time {
            tlv(out, 1, 8);
            out.u32(a);
            out.u32(b);
        }
    }
    if let Some(c) = s.flow_count {
        tlv(out, 3, 4);
        out.u32(c);
    }
    tlv(out, 4, 8);
    out.u64(s.packet_count);
    tlv(out, 5, 8);
    out.u64(s.byte_count);
    let len = out.len() - start;
    out.patch_u16(start + 2, len);
    out.pad8_from(start);
}
