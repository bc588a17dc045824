//! Group statistics, descriptions and features.
//!
//! * Statistics (`OFPMP_GROUP`; the request names a group, `OFPG_ALL` for all): records
//!   of at least 40 bytes starting with their length: group id, reference count,
//!   counters, duration, then one 16-byte (packets, bytes) pair per bucket filling the
//!   rest of the record exactly.
//! * Descriptions (`OFPMP_GROUP_DESC`; the request has no body before 1.5 and names a
//!   group in 1.5): records of at least 8 bytes: length, type, group id, then the buckets
//!   in the version's bucket layout. In 1.5 a bucket-list length and 6 pad come first and
//!   group properties follow the buckets (checked, then dropped, as in a group_mod).
//! * Features (`OFPMP_GROUP_FEATURES`, request without body): types, capabilities, and
//!   four maximum-group counts and four action bitmaps, one per group type.
//!
//! Statistics and description records are all cut before any is decoded. OpenFlow 1.0
//! has them as Nicira vendor stats (`NXST_GROUP` 7, `NXST_GROUP_DESC` 8,
//! `NXST_GROUP_FEATURES` 9, see `experimenter`): statistics in the 1.3 layout,
//! descriptions and their request in the 1.5 layout with OpenFlow 1.0 actions, as OVS has
//! them.

use crate::messages::{Bucket, GroupType};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::msg::{decode_buckets, encode_buckets, layout15};
use crate::wire::port::decode_props;
use crate::wire::record::{fixed, Framing};

/// One group's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct GroupStats {
    /// Group.
    pub group_id: u32,
    /// Flows and groups forwarding to it.
    pub ref_count: u32,
    /// Packets.
    pub packet_count: u64,
    /// Bytes.
    pub byte_count: u64,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Per bucket (packets, bytes).
    pub buckets: Vec<(u64, u64)>,
}

/// One group's description.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupDesc {
    /// Type.
    pub group_type: GroupType,
    /// Group.
    pub group_id: u32,
    /// Buckets.
    pub buckets: Vec<Bucket>,
}

/// Group features.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct GroupFeatures {
    /// Bitmap of supported `OFPGT_*`.
    pub types: u32,
    /// `OFPGFC_*` bits.
    pub capabilities: u32,
    /// Maximum groups per type.
    pub max_groups: [u32; 4],
    /// Supported actions per type (bitmaps of `OFPAT_*`).
    pub actions: [u32; 4],
}

pub(super) fn decode_stats(rd: &mut Rd<'_>) -> Result<Vec<GroupStats>, DecodeError> {
    Framing::prefixed(0, 40).all(rd, |mut r| {
        r.skip(4)?;
        let mut g = GroupStats {
            group_id: r.u32()?,
            ref_count: r.u32()?,
            ..Default::default()
        };
        r.skip(4)?;
        g.packet_count = r.u64()?;
        g.byte_count = r.u64()?;
        g.duration_sec = r.u32()?;
        g.duration_nsec = r.u32()?;
        g.buckets = fixed(&mut r, 16, |mut b| Ok((b.u64()?, b.u64()?)))?;
        Ok(g)
    })
}

pub(super) fn encode_stats(out: &mut Vec<u8>, v: &[GroupStats]) {
    for g in v {
        out.u16((40 + 16 * g.buckets.len()) as u16);
        out.zeros(2);
        out.u32(g.group_id);
        out.u32(g.ref_count);
        out.zeros(4);
        out.u64(g.packet_count);
        out.u64(g.byte_count);
        out.u32(g.duration_sec);
        out.u32(g.duration_nsec);
        for (p, b) in &g.buckets {
            out.u64(*p);
            out.u64(*b);
        }
    }
}

pub(super) fn decode_descs(version: u8, rd: &mut Rd<'_>) -> Result<Vec<GroupDesc>, DecodeError> {
    Framing::prefixed(0, 8).all(rd, |mut r| {
        r.skip(2)?;
        let t = r.u8()?;
        let group_type = GroupType::from_u8(t).ok_or(DecodeError::BadGroupType(t))?;
        r.skip(1)?;
        let group_id = r.u32()?;
        let buckets = if layout15(version) {
            let blen = usize::from(r.u16()?);
            r.skip(6)?;
            let mut br = r.sub(blen, DecodeError::BadBucket)?;
            let b = decode_buckets(version, &mut br, true)?;
            decode_props(&mut r)?;
            b
        } else {
            decode_buckets(version, &mut r, false)?
        };
        Ok(GroupDesc {
            group_type,
            group_id,
            buckets,
        })
    })
}

pub(super) fn encode_descs(
    out: &mut Vec<u8>,
    version: u8,
    v: &[GroupDesc],
) -> Result<(), EncodeError> {
    for g in v {
        let start = out.len();
        out.u16(0);
        out.u8(g.group_type as u8);
        out.u8(0);
        out.u32(g.group_id);
        if layout15(version) {
            let mut b = Vec::new();
            encode_buckets(&mut b, version, &g.buckets)?;
            out.u16(b.len() as u16);
            out.zeros(6);
            out.extend_from_slice(&b);
        } else {
            encode_buckets(out, version, &g.buckets)?;
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
    Ok(())
}

pub(super) fn decode_features(rd: &mut Rd<'_>) -> Result<GroupFeatures, DecodeError> {
    let mut g = GroupFeatures {
        types: rd.u32()?,
        capabilities: rd.u32()?,
        ..Default::default()
    };
    for m in g.max_groups.iter_mut() {
        *m = rd.u32()?;
    }
    for a in g.actions.iter_mut() {
        *a = rd.u32()?;
    }
    Ok(g)
}

pub(super) fn encode_features(out: &mut Vec<u8>, g: &GroupFeatures) {
    out.u32(g.types);
    out.u32(g.capabilities);
    g.max_groups.iter().for_each(|m| out.u32(*m));
    g.actions.iter().for_each(|a| out.u32(*a));
}
