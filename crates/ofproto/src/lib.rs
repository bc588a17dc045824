//! # ofproto — OpenFlow switch semantics, without I/O
//!
//! One bridge's OpenFlow state and behaviour, as a library: flow tables with OpenFlow 1.3's
//! flow_mod semantics ([`switch::Ofproto`]), groups ([`group`]) and meters ([`meter`]), and
//! [`xlate`], which runs the pipeline for a flow key and produces concrete datapath actions
//! ([`odp::DpAction`]) plus the wildcard mask of every bit the result depended on — the two
//! things a megaflow cache needs. [`odp`] also applies the header rewrites to packet bytes,
//! keeping checksums valid.
//!
//! Nothing here does I/O or reads a clock: every operation that depends on time takes
//! `now` (milliseconds) as an argument, so the whole pipeline is deterministic under test.
//! The datapath keeps a bridge's [`switch::Ofproto`] as [`Versions`] (two copies, see
//! [`switch::versions`]): its handler, revalidator and uncached pipeline translate packets'
//! flow keys against the published copy without ever waiting, while the control plane (the
//! CLI verbs and OpenFlow connections) applies flow_mods to the other copy through a write
//! session whose end publishes them.
//!
//! ## Ports
//! Port numbers are OpenFlow 1.3's: physical ports 1..=0xffffff00, `LOCAL` = 0xfffffffe.

pub mod continuation;
pub mod fields;
pub mod group;
pub mod group_index;
pub mod learn;
pub mod meter;
pub mod meter_index;
pub mod native;
pub mod odp;
pub mod odp_ct;
pub mod odp_pktlen;
pub mod odp_text;
pub mod recirc;
pub mod rule;
pub mod switch;
pub mod table;
pub mod text;
pub mod tlv;
pub mod tun_md;
pub mod xlate;

pub use odp::DpAction;
/// OpenFlow numbers that go with ofproto's types: the `LOCAL` port, and `max_len` meaning
/// "the whole packet" in a CONTROLLER action.
pub use openflow::actions::{OFPCML_NO_BUFFER, OFPP_LOCAL};
pub use openflow::sample::Sample as SampleAction;
/// OpenFlow's error (type, code, data): what every state change here may fail with.
pub use openflow::OfError;
pub use rule::Rule;
pub use switch::versions::{Snapshot, Versions, Writer};
pub use switch::{
    FlowModResult, Limits, OfPort, Ofproto, DEFAULT_MAX_GROUPS, MAX_BANDS, MAX_BUCKETS,
    MAX_GROUP_ACTIONS, MAX_METERS,
};
pub use xlate::{xlate, xlate_actions, XlateOut};
