//! Group table modifications: [`GroupMod`], group types, buckets, and OpenFlow 1.5's
//! insert/remove-bucket form ([`GroupBucketMod`]).
//!
//! A [`Bucket`] holds a weight, what it watches (port, group) and its action set, and in
//! OpenFlow 1.5 an id; earlier versions have no bucket ids and decode them as 0.
//! [`GroupMod::validate`] checks what needs no switch state: the group id range (ALL only
//! for delete), one bucket at most for indirect groups, a watch for every fast-failover
//! bucket, weights only in select groups, and each bucket's actions.

use super::{err, OfError};
use crate::actions::{validate_actions, Action, OFPG_ANY, OFPG_MAX, OFPP_ANY};

/// `OFPGC_*` group_mod commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum GroupModCommand {
    /// New group.
    Add = 0,
    /// Modify all matching groups.
    Modify = 1,
    /// Delete all matching groups.
    Delete = 2,
}

/// `OFPGT_*` group types.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum GroupType {
    /// Execute all buckets.
    All = 0,
    /// Execute one bucket, chosen by the switch (weighted).
    Select = 1,
    /// Execute the one bucket.
    Indirect = 2,
    /// Execute the first live bucket.
    FastFailover = 3,
}

impl GroupType {
    /// The type with this wire number.
    pub fn from_u8(v: u8) -> Option<GroupType> {
        Some(match v {
            0 => GroupType::All,
            1 => GroupType::Select,
            2 => GroupType::Indirect,
            3 => GroupType::FastFailover,
            _ => return None,
        })
    }
    /// ovs-ofctl name.
    pub fn name(self) -> &'static str {
        match self {
            GroupType::All => "all",
            GroupType::Select => "select",
            GroupType::Indirect => "indirect",
            GroupType::FastFailover => "ff",
        }
    }
}

/// One bucket of a group.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Bucket {
    /// Relative weight (select groups); 0 for other types.
    pub weight: u16,
    /// Port whose liveness this bucket depends on (fast failover), or [`OFPP_ANY`].
    pub watch_port: u32,
    /// Group whose liveness this bucket depends on (fast failover), or [`OFPG_ANY`].
    pub watch_group: u32,
    /// The bucket's action set.
    pub actions: Vec<Action>,
    /// OpenFlow 1.5 bucket id (at most [`OFPG_BUCKET_MAX`]). Earlier versions have none
    /// and decode as 0; the switch numbers a group's buckets by position when their ids
    /// are not distinct.
    pub bucket_id: u32,
}

/// Largest bucket id.
pub const OFPG_BUCKET_MAX: u32 = 0xffff_ff00;
/// `command_bucket_id`: the first bucket.
pub const OFPG_BUCKET_FIRST: u32 = 0xffff_fffd;
/// `command_bucket_id`: the last bucket.
pub const OFPG_BUCKET_LAST: u32 = 0xffff_fffe;
/// `command_bucket_id`: every bucket.
pub const OFPG_BUCKET_ALL: u32 = 0xffff_ffff;

impl Bucket {
    /// A bucket with these actions and default parameters (weight 0 unless the caller
    /// sets it, watching nothing, id 0).
    pub fn new(actions: Vec<Action>) -> Bucket {
        Bucket {
            bucket_id: 0,
            weight: 0,
            watch_port: OFPP_ANY,
            watch_group: OFPG_ANY,
            actions,
        }
    }
}

/// A group table modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupMod {
    /// What to do.
    pub command: GroupModCommand,
    /// Group type.
    pub group_type: GroupType,
    /// Group id ([`crate::actions::OFPG_ALL`] for delete-all).
    pub group_id: u32,
    /// Buckets.
    pub buckets: Vec<Bucket>,
}

impl GroupMod {
    /// Checks that need no switch state: group id range (ALL only for delete), indirect
    /// groups have exactly one bucket, fast-failover buckets watch something, bucket
    /// actions are valid.
    pub fn validate(&self) -> Result<(), OfError> {
        use err::group_mod_failed as g;
        let id_ok = self.group_id <= OFPG_MAX
            || (self.command == GroupModCommand::Delete
                && self.group_id == crate::actions::OFPG_ALL);
        if !id_ok {
            return Err(OfError::group_mod_failed(g::INVALID_GROUP));
        }
        if self.command == GroupModCommand::Delete {
            return Ok(());
        }
        if self.group_type == GroupType::Indirect && self.buckets.len() > 1 {
            return Err(OfError::group_mod_failed(g::INVALID_GROUP));
        }
        for b in &self.buckets {
            if self.group_type == GroupType::FastFailover
                && b.watch_port == OFPP_ANY
                && b.watch_group == OFPG_ANY
            {
                return Err(OfError::group_mod_failed(g::BAD_WATCH));
            }
            if self.group_type != GroupType::Select && b.weight != 0 {
                return Err(OfError::group_mod_failed(g::BAD_BUCKET));
            }
            validate_actions(&b.actions)?;
        }
        Ok(())
    }
}

/// OpenFlow 1.5 group_mod bucket commands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BucketCommand {
    /// `OFPGC_INSERT_BUCKET` (3): insert buckets before the command bucket (after it for
    /// `OFPG_BUCKET_LAST`).
    Insert = 3,
    /// `OFPGC_REMOVE_BUCKET` (5): remove the command bucket (or all of them).
    Remove = 5,
}

/// An OpenFlow 1.5 insert-bucket / remove-bucket group_mod.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupBucketMod {
    /// Insert or remove.
    pub command: BucketCommand,
    /// Group type as sent (the group keeps its own).
    pub group_type: GroupType,
    /// Group id.
    pub group_id: u32,
    /// The bucket to operate on: an id, [`OFPG_BUCKET_FIRST`], [`OFPG_BUCKET_LAST`] or
    /// [`OFPG_BUCKET_ALL`] (remove only).
    pub command_bucket_id: u32,
    /// Buckets to insert (none for remove).
    pub buckets: Vec<Bucket>,
}
