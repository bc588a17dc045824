//! Bundles: bundle control and bundle add (OpenFlow 1.4+, and in 1.3 the ONF
//! experimenter messages `ovs-ofctl -O OpenFlow13 --bundle` sends, with the same bodies).
//!
//! * Bundle control: bundle id, control type (`OFPBCT_*`, see [`bct`]), flags
//!   (`OFPBF_*`), properties kept raw.
//! * Bundle add: bundle id, 2 pad, flags, then the staged message whole, header included
//!   (its own length field says how long it is: at least 8, and within the bytes
//!   present), padding to 8 when properties follow, and the properties. The staged
//!   message is kept as bytes; the connection decodes it when it stages it.
//!
//! The ONF ids and types used for the OpenFlow 1.3 forms are here too.

use crate::wire::buf::{pad8, Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::port::{decode_props, encode_props, Prop};

/// The ONF experimenter id (OpenFlow 1.3 extensions that 1.4 standardised).
pub const ONF_EXPERIMENTER_ID: u32 = 0x4f4e_4600;

/// `ONFT_BUNDLE_CONTROL`: OpenFlow 1.3 form of `OFPT_BUNDLE_CONTROL`.
pub const ONFT_BUNDLE_CONTROL: u32 = 2300;

/// `ONFT_BUNDLE_ADD_MESSAGE`: OpenFlow 1.3 form of `OFPT_BUNDLE_ADD_MESSAGE`.
pub const ONFT_BUNDLE_ADD: u32 = 2301;

/// `OFPBCT_*` bundle control types.
pub mod bct {
    /// Open a bundle.
    pub const OPEN_REQUEST: u16 = 0;
    /// Reply to an open.
    pub const OPEN_REPLY: u16 = 1;
    /// Close a bundle (no more messages).
    pub const CLOSE_REQUEST: u16 = 2;
    /// Reply to a close.
    pub const CLOSE_REPLY: u16 = 3;
    /// Apply the bundle's messages.
    pub const COMMIT_REQUEST: u16 = 4;
    /// Reply to a commit.
    pub const COMMIT_REPLY: u16 = 5;
    /// Drop the bundle.
    pub const DISCARD_REQUEST: u16 = 6;
    /// Reply to a discard.
    pub const DISCARD_REPLY: u16 = 7;
}

/// `OFPBF_ATOMIC`: apply all of the bundle or nothing.
pub const OFPBF_ATOMIC: u16 = 1;

/// `OFPBF_ORDERED`: apply in the order added.
pub const OFPBF_ORDERED: u16 = 2;

/// Bundle control (OpenFlow 1.4+).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BundleControl {
    /// Bundle id.
    pub bundle_id: u32,
    /// `OFPBCT_*`: open/close/commit/discard requests and replies (0..7).
    pub ctrl_type: u16,
    /// `OFPBF_*` flags.
    pub flags: u16,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

/// Bundle add (OpenFlow 1.4+): one message to stage in a bundle.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BundleAdd {
    /// Bundle id.
    pub bundle_id: u32,
    /// `OFPBF_*` flags.
    pub flags: u16,
    /// The staged message, complete with its header (decode it with
    /// [`crate::wire::decode`]).
    pub message: Vec<u8>,
    /// Properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_bundle_add(rd: &mut Rd<'_>) -> Result<BundleAdd, DecodeError> {
    let bundle_id = rd.u32()?;
    rd.skip(2)?;
    let flags = rd.u16()?;
    let mlen = usize::from(rd.peek_u16(2).ok_or(DecodeError::BadLength)?);
    if mlen < 8 {
        return Err(DecodeError::BadLength);
    }
    let message = rd.bytes(mlen)?.to_vec();
    let pad = (pad8(mlen) - mlen).min(rd.len());
    if !rd.is_empty() {
        rd.skip(pad)?;
    }
    let props = decode_props(rd)?;
    Ok(BundleAdd {
        bundle_id,
        flags,
        message,
        props,
    })
}

pub(crate) fn encode_bundle_add(out: &mut Vec<u8>, b: &BundleAdd) {
    out.u32(b.bundle_id);
    out.zeros(2);
    out.u16(b.flags);
    let start = out.len();
    out.extend_from_slice(&b.message);
    if !b.props.is_empty() {
        out.pad8_from(start);
        encode_props(out, &b.props);
    }
}

pub(crate) fn decode_bundle_ctrl(rd: &mut Rd<'_>) -> Result<BundleControl, DecodeError> {
    Ok(BundleControl {
        bundle_id: rd.u32()?,
        ctrl_type: rd.u16()?,
        flags: rd.u16()?,
        props: decode_props(rd)?,
    })
}

pub(crate) fn encode_bundle_ctrl(out: &mut Vec<u8>, b: &BundleControl) {
    out.u32(b.bundle_id);
    out.u16(b.ctrl_type);
    out.u16(b.flags);
    encode_props(out, &b.props);
}
