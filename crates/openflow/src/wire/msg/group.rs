//! Group table messages: group_mod and the bucket lists group_mod and group
//! descriptions share.
//!
//! A group_mod is command, type, pad, group id, then the buckets. Before 1.5 each bucket
//! is length (at least 16, a multiple of 8), weight, watch port, watch group, 4 pad and
//! actions. OpenFlow 1.5 puts the bucket list's length, 2 pad and a command bucket id
//! before the buckets and group properties (checked, then dropped) after them; its
//! buckets are length (at least 8, a multiple of 8), actions length, bucket id, actions
//! and properties (weight 0, watch port 1, watch group 2; any other is `BadBucket`).
//! The 1.5 insert-bucket (3) and remove-bucket (5) commands decode to a
//! [`GroupBucketMod`]; the encoder writes the weight property always and the watch
//! properties only when they watch something.
//!
//! OpenFlow 1.0 has groups only as Nicira's extension (`NXT_GROUP_MOD`, `NXST_GROUP*`),
//! and those use the 1.5 layout with OpenFlow 1.0 actions in the buckets (what OVS sends
//! and accepts): [`layout15`] says which layout a version uses.
//!
//! Every bucket length is checked against the bytes present before use (the cursor's own
//! error when it overruns), then against the version's rules (`BadBucket`); buckets are
//! decoded one at a time.

use crate::messages::{
    Bucket, BucketCommand, GroupBucketMod, GroupMod, GroupModCommand, GroupType, OFPG_BUCKET_ALL,
};
use crate::wire::action::{decode_actions, encode_actions};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{decode_props, encode_props, Prop};
use crate::wire::record::Framing;
use crate::wire::{OFP10, OFP15};

/// Whether `version` lays out group_mods, group descriptions and buckets as OpenFlow 1.5
/// does (1.5 itself, and 1.0's Nicira group messages).
pub(crate) fn layout15(version: u8) -> bool {
    version == OFP15 || version == OFP10
}

fn group_command(v: u16) -> Result<GroupModCommand, DecodeError> {
    Ok(match v {
        0 => GroupModCommand::Add,
        1 => GroupModCommand::Modify,
        2 => GroupModCommand::Delete,
        _ => return Err(DecodeError::BadGroupCommand(v)),
    })
}

pub(crate) fn decode_buckets(
    version: u8,
    rd: &mut Rd<'_>,
    with_ids: bool,
) -> Result<Vec<Bucket>, DecodeError> {
    let _ = with_ids;
    Framing::unchecked(DecodeError::BadBucket).each(rd, |b| {
        if layout15(version) {
            decode_bucket15(version, b)
        } else {
            decode_bucket11(version, b)
        }
    })
}

/// An OpenFlow 1.1-1.4 bucket: length, weight, watch port and group, 4 pad, actions.
fn decode_bucket11(version: u8, mut b: Rd<'_>) -> Result<Bucket, DecodeError> {
    let len = b.len();
    if len < 16 || !len.is_multiple_of(8) {
        return Err(DecodeError::BadBucket);
    }
    b.skip(2)?;
    let weight = b.u16()?;
    let watch_port = b.u32()?;
    let watch_group = b.u32()?;
    b.skip(4)?;
    let actions = decode_actions(version, &mut b.with_err(DecodeError::BadActionLen))?;
    Ok(Bucket {
        bucket_id: 0,
        weight,
        watch_port,
        watch_group,
        actions,
    })
}

/// An OpenFlow 1.5 bucket: length, actions length, bucket id, actions (`version`'s),
/// properties.
fn decode_bucket15(version: u8, mut b: Rd<'_>) -> Result<Bucket, DecodeError> {
    let len = b.len();
    if len < 8 || !len.is_multiple_of(8) {
        return Err(DecodeError::BadBucket);
    }
    b.skip(2)?;
    let alen = usize::from(b.u16()?);
    let bucket_id = b.u32()?;
    let mut ar = b.sub(alen, DecodeError::BadBucket)?;
    let actions = decode_actions(version, &mut ar.clone().with_err(DecodeError::BadActionLen))?;
    ar.rest();
    let mut bk = Bucket::new(actions);
    bk.bucket_id = bucket_id;
    for p in decode_props(&mut b)? {
        let mut pr = Rd::new(&p.data, DecodeError::BadPropertyLen);
        match p.type_ {
            0 => bk.weight = pr.u16()?,
            1 => bk.watch_port = pr.u32()?,
            2 => bk.watch_group = pr.u32()?,
            _ => return Err(DecodeError::BadBucket),
        }
    }
    Ok(bk)
}

pub(crate) fn encode_buckets(
    out: &mut Vec<u8>,
    version: u8,
    buckets: &[Bucket],
) -> Result<(), EncodeError> {
    for b in buckets {
        let start = out.len();
        out.u16(0);
        if layout15(version) {
            let mut acts = Vec::new();
            encode_actions(&mut acts, version, &b.actions)?;
            out.u16(acts.len() as u16);
            out.u32(b.bucket_id);
            out.extend_from_slice(&acts);
            let mut props = Vec::new();
            let mut d = Vec::new();
            d.u16(b.weight);
            d.zeros(2);
            props.push(Prop { type_: 0, data: d });
            if b.watch_port != crate::actions::OFPP_ANY {
                props.push(Prop {
                    type_: 1,
                    data: b.watch_port.to_be_bytes().to_vec(),
                });
            }
            if b.watch_group != crate::actions::OFPG_ANY {
                props.push(Prop {
                    type_: 2,
                    data: b.watch_group.to_be_bytes().to_vec(),
                });
            }
            encode_props(out, &props);
        } else {
            out.u16(b.weight);
            out.u32(b.watch_port);
            out.u32(b.watch_group);
            out.zeros(4);
            encode_actions(out, version, &b.actions)?;
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }
    Ok(())
}

/// A group_mod, or in OpenFlow 1.5 an insert/remove-bucket one.
pub(crate) enum AnyGroupMod {
    Group(GroupMod),
    Buckets(GroupBucketMod),
}

pub(crate) fn decode_group_mod(version: u8, rd: &mut Rd<'_>) -> Result<AnyGroupMod, DecodeError> {
    let cmd = rd.u16()?;
    let bucket_cmd = match cmd {
        3 if layout15(version) => Some(BucketCommand::Insert),
        5 if layout15(version) => Some(BucketCommand::Remove),
        _ => None,
    };
    let command = match bucket_cmd {
        Some(_) => GroupModCommand::Modify,
        None => group_command(cmd)?,
    };
    let t = rd.u8()?;
    let group_type = GroupType::from_u8(t).ok_or(DecodeError::BadGroupType(t))?;
    rd.skip(1)?;
    let group_id = rd.u32()?;
    let mut command_bucket_id = OFPG_BUCKET_ALL;
    let buckets = if layout15(version) {
        let blen = usize::from(rd.u16()?);
        rd.skip(2)?;
        command_bucket_id = rd.u32()?;
        let mut br = rd.sub(blen, DecodeError::BadBucket)?;
        let b = decode_buckets(version, &mut br, true)?;
        // Group properties (none defined but experimenter) are checked and dropped.
        decode_props(rd)?;
        b
    } else {
        decode_buckets(version, rd, false)?
    };
    Ok(match bucket_cmd {
        Some(command) => AnyGroupMod::Buckets(GroupBucketMod {
            command,
            group_type,
            group_id,
            command_bucket_id,
            buckets,
        }),
        None => AnyGroupMod::Group(GroupMod {
            command,
            group_type,
            group_id,
            buckets,
        }),
    })
}

/// An OpenFlow 1.5 (or 1.0 Nicira) insert/remove-bucket group_mod.
pub(crate) fn encode_group_bucket_mod(
    out: &mut Vec<u8>,
    version: u8,
    g: &GroupBucketMod,
) -> Result<(), EncodeError> {
    if !layout15(version) {
        return Err(EncodeError::NotInVersion("group bucket commands"));
    }
    out.u16(g.command as u16);
    out.u8(g.group_type as u8);
    out.u8(0);
    out.u32(g.group_id);
    let mut b = Vec::new();
    encode_buckets(&mut b, version, &g.buckets)?;
    out.u16(b.len() as u16);
    out.zeros(2);
    out.u32(g.command_bucket_id);
    out.extend_from_slice(&b);
    Ok(())
}

pub(crate) fn encode_group_mod(
    out: &mut Vec<u8>,
    version: u8,
    g: &GroupMod,
) -> Result<(), EncodeError> {
    out.u16(g.command as u16);
    out.u8(g.group_type as u8);
    out.u8(0);
    out.u32(g.group_id);
    if layout15(version) {
        let mut b = Vec::new();
        encode_buckets(&mut b, version, &g.buckets)?;
        out.u16(b.len() as u16);
        out.zeros(2);
        out.u32(OFPG_BUCKET_ALL);
        out.extend_from_slice(&b);
        Ok(())
    } else {
        encode_buckets(out, version, &g.buckets)
    }
}
