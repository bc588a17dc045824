//! The OpenFlow wire codec: bytes ⇄ [`Message`], for OpenFlow 1.0, 1.3, 1.4 and 1.5
//! plus the Nicira extensions `ovs-ofctl` uses by default.
//!
//! ## Framing
//! Every OpenFlow message starts with an 8-byte header: version, type, 16-bit total
//! length (header included) and a 32-bit transaction id. [`frame_len`] looks at the front
//! of a byte stream and says whether a whole message is there (lengths below 8 are a
//! [`DecodeError::BadLength`]; a u16 cannot exceed 65535, and the encoder refuses to
//! produce more). [`split`] cuts a buffer into complete messages. [`decode`] decodes one
//! message and reports how many bytes it used, so a connection can loop over a buffer.
//!
//! ## Versions
//! [`Message`] is version-independent: a flow_mod is the model's
//! [`FlowMod`](crate::FlowMod) whatever the version it came in; ports are 32-bit (OpenFlow 1.0's reserved 16-bit ports are mapped
//! with `port_from_of10`); OpenFlow 1.0's fixed match becomes a [`Match`]. [`encode`]
//! takes the version to write and fails with an [`EncodeError`] when the message cannot be
//! said in it (a group_mod in 1.0, a 1.0 match field it lacks...). The header's version
//! selects the layout on decode; hello decodes at any version (that is how negotiation
//! starts), every other message only at 1.0 (0x01), 1.3 (0x04), 1.4 (0x05), 1.5 (0x06).
//!
//! What is covered: hello (version bitmap), error (incl. experimenter errors), echo,
//! experimenter/vendor, features, get/set config, packet-in, flow-removed, port-status,
//! packet-out (1.5: with match), flow_mod, group_mod (1.5 bucket format), port_mod,
//! table_mod, multipart/stats (see [`multipart`]), barrier, queue get-config (raw
//! queues), role, get/set async, meter_mod, bundle control/add (OpenFlow 1.3: the ONF
//! experimenter form `ovs-ofctl -O OpenFlow13 --bundle` sends, same body), 1.4's
//! role-status, table-status and requestforward and 1.5's controller-status ([`of14`]),
//! and the Nicira messages of [`nicira`]. Details of
//! each structure are in the submodules' notes: [`oxm`] (matches), [`action`]
//! (actions and instructions), [`port`], [`msg`], [`multipart`], [`nicira`].
//! The [`Message`] enum, each version's type numbers and the dispatch from a header's
//! type to a body codec (and back) are in `message`; the walk over lists of
//! length-prefixed records that all these codecs share is in `record`.
//!
//! ## Totality
//! Decoding never panics and never allocates more than the input's size: all reads go
//! through a bounds-checked cursor (`buf::Rd`), every length field is checked against
//! the bytes actually present before it is used, and every unknown type, field, action or
//! instruction is a typed [`DecodeError`]. [`DecodeError::to_of_error`] names the
//! `OFPT_ERROR` type/code to answer with (OpenFlow 1.3 numbering; [`of_error_to_wire`]
//! translates for a 1.0 peer), and [`error_reply`] builds that reply. Fixed-size
//! messages must be exactly their size; trailing bytes are `BadLength`.
//!
//! Round trips: `encode(decode(x))` reproduces `x` byte for byte when `x` is canonical
//! (zero padding, fields in canonical order, OpenFlow 1.0 wildcards written the standard
//! way, instructions in execution order); otherwise `decode(encode(decode(x)))` equals
//! `decode(x)`. OpenFlow 1.4's flow_mod `importance` is not in the model and is written
//! as 0.

pub mod action;
mod buf;
pub mod error;
mod message;
pub mod monitor;
pub mod msg;
pub mod multipart;
pub mod nicira;
pub mod of14;
pub mod oxm;
pub mod port;
mod record;

use buf::Rd;
pub use error::{DecodeError, EncodeError};
pub use message::{decode, decode_frame, encode, Message};
pub use msg::{
    AsyncConfig, BundleAdd, BundleControl, ErrorMsg, Experimenter, FlowRemoved, Hello, PacketIn,
    PacketOut, PortMod, PortStatus, RoleMsg, SwitchConfig, SwitchFeatures, TableMod,
};
pub use multipart::{MpReply, MpRequest, MultipartReply, MultipartRequest};
pub use nicira::NxMessage;
pub use port::{Port, PortStats, Prop};

use crate::matches::Match;
use crate::messages::{err, OfError};

/// OpenFlow 1.0 wire version.
pub const OFP10: u8 = 0x01;
/// OpenFlow 1.3 wire version.
pub const OFP13: u8 = 0x04;
/// OpenFlow 1.4 wire version.
pub const OFP14: u8 = 0x05;
/// OpenFlow 1.5 wire version.
pub const OFP15: u8 = 0x06;
/// The versions this codec speaks, oldest first.
pub const VERSIONS: [u8; 4] = [OFP10, OFP13, OFP14, OFP15];
/// Length of the common header.
pub const HEADER_LEN: usize = 8;

/// The common OpenFlow header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    /// Wire version.
    pub version: u8,
    /// Message type (version-specific numbering).
    pub type_: u8,
    /// Total length including the header.
    pub length: u16,
    /// Transaction id.
    pub xid: u32,
}

impl Header {
    /// Parse the first 8 bytes (`Truncated` if fewer, `BadLength` if the length field is
    /// below 8). Does not check that the whole message is present.
    pub fn parse(b: &[u8]) -> Result<Header, DecodeError> {
        let mut r = Rd::new(b, DecodeError::Truncated);
        let h = Header {
            version: r.u8()?,
            type_: r.u8()?,
            length: r.u16()?,
            xid: r.u32()?,
        };
        if usize::from(h.length) < HEADER_LEN {
            return Err(DecodeError::BadLength);
        }
        Ok(h)
    }
}

/// Whether a complete message starts `buf`: `Ok(Some(len))` if so, `Ok(None)` if more
/// bytes are needed, `Err(BadLength)` if the header's length is impossible.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    match Header::parse(buf) {
        Err(DecodeError::Truncated) => Ok(None),
        Err(e) => Err(e),
        Ok(h) => {
            let n = usize::from(h.length);
            Ok((buf.len() >= n).then_some(n))
        }
    }
}

/// Cut `buf` into complete messages; returns them and the number of bytes they cover
/// (the rest is an incomplete message to keep for later).
pub fn split(buf: &[u8]) -> Result<(Vec<&[u8]>, usize), DecodeError> {
    let mut out = Vec::new();
    let mut off = 0;
    while let Some(n) = frame_len(buf.get(off..).unwrap_or_default())? {
        out.push(buf.get(off..off + n).unwrap_or_default());
        off += n;
    }
    Ok((out, off))
}

/// The (type, code) to put on the wire for `e` when talking `version`: OpenFlow 1.3
/// numbers as they are for 1.3+, translated for OpenFlow 1.0 (whose error types are
/// HELLO_FAILED 0, BAD_REQUEST 1, BAD_ACTION 2, FLOW_MOD_FAILED 3, PORT_MOD_FAILED 4,
/// QUEUE_OP_FAILED 5; errors 1.0 has no type for become `BAD_REQUEST/EPERM`).
pub fn of_error_to_wire(e: OfError, version: u8) -> (u16, u16) {
    use err::*;
    // Property errors before 1.4 borrow the table-features type (OVS's numbering).
    if e.type_ == OFPET_BAD_PROPERTY && version < OFP14 && e.code <= bad_property::BAD_VALUE {
        return (OFPET_TABLE_FEATURES_FAILED, e.code + 2);
    }
    if version != OFP10 {
        return (e.type_, e.code);
    }
    match e.type_ {
        OFPET_HELLO_FAILED => (0, e.code),
        OFPET_BAD_REQUEST if e.code <= bad_request::BUFFER_UNKNOWN => (1, e.code),
        OFPET_BAD_ACTION if e.code <= bad_action::BAD_QUEUE => (2, e.code),
        OFPET_FLOW_MOD_FAILED => {
            let c = match e.code {
                flow_mod_failed::TABLE_FULL => 0,
                flow_mod_failed::OVERLAP => 1,
                flow_mod_failed::EPERM => 2,
                flow_mod_failed::BAD_TIMEOUT => 3,
                flow_mod_failed::BAD_COMMAND => 4,
                _ => 5,
            };
            (3, c)
        }
        OFPET_PORT_MOD_FAILED => (4, e.code.min(1)),
        OFPET_BAD_PROPERTY => (OFPET_BAD_PROPERTY, e.code),
        OFPET_QUEUE_OP_FAILED => (5, e.code),
        _ => (1, bad_request::EPERM),
    }
}

/// The most request bytes an error reply carries: what fits in a message after the
/// header, type and code, and a vendor or experimenter header.
const MAX_ERROR_DATA: usize = u16::MAX as usize - HEADER_LEN - 4 - 8;

/// OpenFlow 1.0 error type of Nicira's vendor errors.
pub const NXET_VENDOR: u16 = 0xb0c2;

/// The error message answering a request that failed with `e`: the spec's type/code
/// for `version` and the request, whole as OVS sends it (the specification asks for
/// at least 64 bytes), cut only where the reply would exceed 64 KiB.
///
/// OpenFlow 1.3 has no bundle errors: they go out as ONF experimenter errors whose
/// experimenter type is 2300 plus the 1.4 code, as OVS sends them. `OFPET_EXPERIMENTER`
/// errors ([`OfError::nx`]) are Nicira's.
pub fn error_reply(e: OfError, version: u8, request: &[u8]) -> Message {
    let data = request.get(..MAX_ERROR_DATA).unwrap_or(request).to_vec();
    // In 1.0 a vendor error (`NXET_VENDOR`, `NXVC_VENDOR_ERROR`) whose data starts with the
    // vendor id and Nicira's 1.0 type and code.
    let vendor10 = |type_: u16, code: u16| {
        let mut d = Vec::with_capacity(8 + data.len());
        d.extend_from_slice(&action::NX_VENDOR_ID.to_be_bytes());
        d.extend_from_slice(&type_.to_be_bytes());
        d.extend_from_slice(&code.to_be_bytes());
        d.extend_from_slice(&data);
        Message::Error(ErrorMsg {
            type_: NXET_VENDOR,
            code: 0,
            experimenter: None,
            data: d,
        })
    };
    if version == OFP10
        && e.type_ == err::OFPET_FLOW_MOD_FAILED
        && e.code == err::flow_mod_failed::BAD_FLAGS
    {
        // 1.0 has no code for unknown flow_mod flags; OVS sends Nicira's (3, 258).
        return vendor10(3, 258);
    }
    if version == OFP10 && e.type_ == err::OFPET_GROUP_MOD_FAILED {
        // Groups in 1.0 are Nicira's: their errors are vendor errors with 1.1's numbers.
        return vendor10(e.type_, e.code);
    }
    if version == OFP10
        && e.type_ == err::OFPET_BAD_ACTION
        && e.code == err::bad_action::BAD_OUT_GROUP
    {
        return vendor10(e.type_, e.code);
    }
    if e.type_ == err::OFPET_EXPERIMENTER {
        // Nicira's errors: an experimenter error from 1.2 on, a vendor error in 1.0.
        if version == OFP10 {
            return vendor10(err::OFPET_BAD_REQUEST, err::nx_tlv::nx10(e.code));
        }
        return Message::Error(ErrorMsg {
            type_: err::OFPET_EXPERIMENTER,
            code: e.code,
            experimenter: Some(action::NX_VENDOR_ID),
            data,
        });
    }
    if version == OFP13
        && e.type_ == err::OFPET_BAD_PROPERTY
        && e.code > err::bad_property::BAD_VALUE
    {
        return Message::Error(ErrorMsg {
            type_: err::OFPET_EXPERIMENTER,
            code: 4440 + e.code,
            experimenter: Some(msg::ONF_EXPERIMENTER_ID),
            data,
        });
    }
    if version == OFP13 && e.type_ == err::OFPET_BUNDLE_FAILED {
        return Message::Error(ErrorMsg {
            type_: err::OFPET_EXPERIMENTER,
            code: 2300 + e.code,
            experimenter: Some(msg::ONF_EXPERIMENTER_ID),
            data,
        });
    }
    let (type_, code) = of_error_to_wire(e, version);
    Message::Error(ErrorMsg {
        type_,
        code,
        experimenter: None,
        data,
    })
}

/// Whether OpenFlow 1.0's fixed match can express `m` (if not, a 1.0 connection needs
/// the Nicira flow format).
pub fn of10_match_fits(m: &Match) -> bool {
    oxm::of10_match_fits(m)
}
