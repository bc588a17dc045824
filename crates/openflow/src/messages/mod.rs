//! Typed OpenFlow switch-modifying messages and errors.
//!
//! [`FlowMod`], [`GroupMod`] and [`MeterMod`] are the version-independent form of the
//! three "mod" messages: what a wire codec produces from OF1.0/1.3/1.4/1.5 bytes, what the
//! ovs-ofctl text parser produces, and what `ofproto` consumes. Field types are the widest
//! the versions use (32-bit ports, 8-bit table ids); a codec for an older version narrows
//! them and reports what it cannot express.
//!
//! [`OfError`] is an OpenFlow error as (type, code) with the OpenFlow 1.3 numbers; the
//! constants in [`err`] name them. Functions in this crate that reject a message return
//! the error the spec prescribes so that `ofproto` can send it back unchanged.
//!
//! Invariants: nothing here validates on construction. `Match::validate`,
//! `Action::validate`, [`FlowMod::validate`], [`GroupMod::validate`] and
//! [`MeterMod::validate`] check what can be checked without switch state; table sizes,
//! existing groups/meters and so on are `ofproto`'s to check.
//!
//! One file per job: `err` (the numbers), `of_error` ([`OfError`] and its names), `flow`,
//! `group` and `meter` (each mod message with its commands, flags, parts and reserved
//! ids). Everything is re-exported here.

pub mod err;
mod flow;
mod group;
mod meter;
mod of_error;

pub use flow::{
    FlowMod, FlowModCommand, FlowModFlags, OFPTT_ALL, OFPTT_MAX, OFP_DEFAULT_PRIORITY,
    OFP_NO_BUFFER,
};
pub use group::{
    Bucket, BucketCommand, GroupBucketMod, GroupMod, GroupModCommand, GroupType, OFPG_BUCKET_ALL,
    OFPG_BUCKET_FIRST, OFPG_BUCKET_LAST, OFPG_BUCKET_MAX,
};
pub use meter::{
    MeterBand, MeterFlags, MeterMod, MeterModCommand, OFPM_ALL, OFPM_CONTROLLER, OFPM_MAX,
    OFPM_SLOWPATH,
};
pub use of_error::OfError;
