//! The switch description (`OFPMP_DESC`): five NUL-padded strings, manufacturer,
//! hardware, software (256 bytes each), serial number (32) and datapath (256), the same
//! in every version. The request has no body.
//!
//! Strings longer than their field are cut at a character boundary on encode; bytes that
//! are not UTF-8 decode as `?` (see the cursor's `string`), so a description always
//! re-encodes to the same width.

use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;

/// Switch description strings.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Desc {
    /// Manufacturer.
    pub mfr_desc: String,
    /// Hardware.
    pub hw_desc: String,
    /// Software.
    pub sw_desc: String,
    /// Serial number.
    pub serial_num: String,
    /// Datapath description.
    pub dp_desc: String,
}

pub(super) fn decode(rd: &mut Rd<'_>) -> Result<Desc, DecodeError> {
    Ok(Desc {
        mfr_desc: rd.string(256)?,
        hw_desc: rd.string(256)?,
        sw_desc: rd.string(256)?,
        serial_num: rd.string(32)?,
        dp_desc: rd.string(256)?,
    })
}

pub(super) fn encode(out: &mut Vec<u8>, d: &Desc) {
    out.string(&d.mfr_desc, 256);
    out.string(&d.hw_desc, 256);
    out.string(&d.sw_desc, 256);
    out.string(&d.serial_num, 32);
    out.string(&d.dp_desc, 256);
}
