//! The OpenFlow model shared by the switch and its tools.
//!
//! This crate describes OpenFlow in version-independent Rust types, converts them to and from
//! ovs-ofctl's text syntax, and encodes and decodes them on the wire (OF1.0 with the Nicira
//! extensions OVS's tools use, OF1.3, OF1.4, OF1.5). It does no I/O and keeps no state.
//!
//! * [`oxm`] — [`Field`]: every matchable/settable field with its OXM class and number,
//!   width, maskability, prerequisite and names.
//! * [`matches`](mod@matches) — [`Match`]: a canonical (sorted, normalised) set of field matches, with
//!   OpenFlow validation and the set relations flow tables need.
//! * [`actions`] — [`Action`], [`Instruction`], reserved port and group numbers.
//! * [`controller`] — Nicira's `controller(...)` action (reason, id, user data, pause, meter).
//! * [`learn`] — Nicira's `learn(...)` action: flows that add flows.
//! * [`messages`] — [`FlowMod`], [`GroupMod`], [`MeterMod`], [`OfError`].
//! * [`tun_metadata`] — the variable-length `tun_metadata0`..`63` fields.
//! * [`text`] — ovs-ofctl syntax: parse and format flows, groups and meters.
//! * [`wire`] — the binary protocol: [`wire::Message`], framing, version negotiation, and
//!   per-family codecs (flow/group/meter mods, multiparts, bundles, monitors, Nicira).

pub mod actions;
pub mod controller;
pub mod ct;
pub mod learn;
pub mod matches;
pub mod messages;
pub mod oxm;
pub mod sample;
pub mod text;
pub mod tun_metadata;
pub mod wire;

pub use actions::{Action, Instruction};
pub use matches::{Match, MatchField};
pub use messages::{
    Bucket, BucketCommand, FlowMod, FlowModCommand, FlowModFlags, GroupBucketMod, GroupMod,
    GroupModCommand, GroupType, MeterBand, MeterFlags, MeterMod, MeterModCommand, OfError,
};
pub use oxm::Field;
