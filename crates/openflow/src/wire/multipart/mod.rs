//! Multipart (OpenFlow 1.0: stats) requests and replies.
//!
//! A multipart message is a 16-bit type, 16-bit flags (`OFPMPF_REQ/REPLY_MORE`), padding
//! (1.1+ only) and a type-specific body. Requests and replies are one enum each,
//! [`MultipartRequest`] / [`MultipartReply`]; bodies that are arrays of records
//! (flows, ports, groups, meters, table features...) decode into `Vec`s whose records'
//! own length fields are checked against the bytes present (see `wire::record`).
//!
//! Supported types: desc, flow, aggregate, table, port stats, queue stats, group, group
//! desc, group features, meter, meter config, meter features, table features (records
//! with raw properties), port desc, experimenter, and Nicira's `NXST_FLOW` /
//! `NXST_AGGREGATE` (OpenFlow 1.0 vendor stats), `NXST_IPFIX_BRIDGE` / `NXST_IPFIX_FLOW`
//! (Nicira stats in every version), and through [`super::of14`] OpenFlow
//! 1.4+'s table desc and queue desc and 1.5's controller status, bundle features and flow
//! statistics (multipart 17); flow monitors in both the 1.4 and the Nicira form through
//! [`super::monitor`]. OpenFlow 1.5 flow statistics and aggregate replies carry their
//! counters as OXS TLVs ([`OxsStats`]).
//!
//! ## Layout of this module
//! `request` and `reply` hold the two enums and dispatch on the multipart type; each
//! family of bodies has its own file with its record types and their decoder and encoder
//! side by side: `desc`, `flow` (flow and aggregate statistics), `oxs` (1.5 counters),
//! `table` (statistics and features), `ports` (port statistics and descriptions),
//! `queue`, `group`, `meter`, `ipfix` (Nicira's IPFIX statistics, in every version), and
//! `experimenter` (Nicira vendor stats, the ONF flow monitor, raw experimenter bodies).
//!
//! ## Invariants
//! A body must be used completely: bytes left after it are `BadLength`. OpenFlow 1.0
//! knows only types 0-5 and vendor stats; any other type there is `BadMultipart`, as is
//! an unknown type in any version. On encode, a body the version lacks is `NotInVersion`
//! before anything is written for it; the header a body travels under (standard, Nicira
//! or ONF) is chosen by `Intro`, the single table of which type and version each body
//! needs.

mod desc;
mod experimenter;
mod flow;
mod group;
mod ipfix;
mod meter;
mod oxs;
mod ports;
mod queue;
mod reply;
mod request;
mod table;

pub use desc::Desc;
pub use flow::{AggregateStats, FlowStats, FlowStatsRequest};
pub use group::{GroupDesc, GroupFeatures, GroupStats};
pub use ipfix::IpfixStats;
pub use meter::{MeterConfig, MeterFeatures, MeterStats};
pub use oxs::OxsStats;
pub use queue::QueueStats;
pub use reply::{MpReply, MultipartReply};
pub use request::{MpRequest, MultipartRequest};
pub use table::{TableFeatures, TableStats};

pub(crate) use flow::decode_flow_req;
pub(crate) use oxs::{decode_oxs, encode_oxs};
pub(crate) use reply::{decode_mp_reply, encode_mp_reply};
pub(crate) use request::{decode_mp_request, encode_mp_request};

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use super::{OFP10, OFP13};

/// Multipart type numbers (1.1+; 1.0 stats share 0..5 and `0xffff`).
pub mod mp {
    /// Switch description.
    pub const DESC: u16 = 0;
    /// Individual flow statistics (1.5: flow desc).
    pub const FLOW: u16 = 1;
    /// Aggregate flow statistics.
    pub const AGGREGATE: u16 = 2;
    /// Table statistics.
    pub const TABLE: u16 = 3;
    /// Port statistics.
    pub const PORT_STATS: u16 = 4;
    /// Queue statistics.
    pub const QUEUE: u16 = 5;
    /// Group statistics.
    pub const GROUP: u16 = 6;
    /// Group descriptions.
    pub const GROUP_DESC: u16 = 7;
    /// Group features.
    pub const GROUP_FEATURES: u16 = 8;
    /// Meter statistics.
    pub const METER: u16 = 9;
    /// Meter configuration (1.5: meter desc).
    pub const METER_CONFIG: u16 = 10;
    /// Meter features.
    pub const METER_FEATURES: u16 = 11;
    /// Table features.
    pub const TABLE_FEATURES: u16 = 12;
    /// Port descriptions.
    pub const PORT_DESC: u16 = 13;
    /// Experimenter (1.0: vendor).
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// What introduces a multipart body on the wire.
#[derive(Clone, Copy, Debug)]
enum Intro {
    /// The standard header with this type, for versions from `since` on (`what` names
    /// the body in the `NotInVersion` error below that).
    Std {
        ty: u16,
        since: u8,
        what: &'static str,
    },
    /// OpenFlow 1.0 Nicira vendor stats of this subtype.
    Nx(u32),
    /// Nicira stats of this subtype in every version: vendor stats in 1.0, an
    /// experimenter multipart (no padding after the subtype) from 1.1 on.
    NxAny(u32),
    /// A group body: the standard header with type `ty` from 1.3 on, Nicira vendor stats
    /// of subtype `nx` in 1.0.
    Group {
        ty: u16,
        nx: u32,
        what: &'static str,
    },
    /// The OpenFlow 1.3 ONF flow monitor.
    OnfMonitor,
}

impl Intro {
    /// A standard body every version has.
    const fn any(ty: u16) -> Intro {
        Intro::Std {
            ty,
            since: OFP10,
            what: "",
        }
    }

    /// A standard body OpenFlow 1.0 lacks.
    const fn of11(ty: u16, what: &'static str) -> Intro {
        Intro::Std {
            ty,
            since: OFP13,
            what,
        }
    }

    /// A group body (Nicira's in 1.0).
    const fn group(ty: u16, nx: u32, what: &'static str) -> Intro {
        Intro::Group { ty, nx, what }
    }

    /// A standard body from version `since` on.
    const fn since(ty: u16, since: u8, what: &'static str) -> Intro {
        Intro::Std { ty, since, what }
    }

    /// Write the header (`NotInVersion` if `version` cannot carry the body).
    fn write(self, out: &mut Vec<u8>, version: u8, flags: u16) -> Result<(), EncodeError> {
        match self {
            Intro::Std { ty, since, what } => {
                if version < since {
                    return Err(EncodeError::NotInVersion(what));
                }
                header(out, version, ty, flags);
                Ok(())
            }
            Intro::Group { nx, .. } if version == OFP10 => {
                experimenter::nx_header(out, version, flags, nx)
            }
            Intro::Group { ty, what, .. } => Intro::of11(ty, what).write(out, version, flags),
            Intro::Nx(sub) => experimenter::nx_header(out, version, flags, sub),
            Intro::NxAny(sub) if version == OFP10 => {
                experimenter::nx_header(out, version, flags, sub)
            }
            Intro::NxAny(sub) => {
                header(out, version, mp::EXPERIMENTER, flags);
                out.u32(super::action::NX_VENDOR_ID);
                out.u32(sub);
                Ok(())
            }
            Intro::OnfMonitor => experimenter::onf_header(out, version, flags),
        }
    }
}

/// Type, flags and (1.1+) padding.
fn header(out: &mut Vec<u8>, version: u8, ty: u16, flags: u16) {
    out.u16(ty);
    out.u16(flags);
    if version != OFP10 {
        out.zeros(4);
    }
}

/// Type and flags of a received body, skipping the padding (1.1+).
fn decode_header(version: u8, rd: &mut Rd<'_>) -> Result<(u16, u16), DecodeError> {
    let ty = rd.u16()?;
    let flags = rd.u16()?;
    if version != OFP10 {
        rd.skip(4)?;
    }
    Ok((ty, flags))
}

/// A request body naming one port, group or meter: the id and 4 pad.
pub(super) fn decode_id(rd: &mut Rd<'_>) -> Result<u32, DecodeError> {
    let v = rd.u32()?;
    rd.skip(4)?;
    Ok(v)
}

fn encode_id(out: &mut Vec<u8>, id: u32) {
    out.u32(id);
    out.zeros(4);
}
