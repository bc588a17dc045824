//! The messages that open and frame a connection: hello (version negotiation), error,
//! generic experimenter, and the features reply.
//!
//! * Hello carries optional elements (type, length, body, padding to 8 outside the
//!   length); only the first version bitmap element (type 1) is kept, others are skipped
//!   as the spec says. [`Hello::supports`] answers negotiation with the bitmap, or
//!   without one by "every version up to the header's".
//! * Error: type, code, for `OFPET_EXPERIMENTER` (1.2+) the experimenter id, then data
//!   (usually the start of the offending request), numbers as the connection's version
//!   has them.
//! * Experimenter (1.0: vendor): id, a 32-bit type, data, kept raw.
//! * Features reply: datapath id, buffers, tables, auxiliary id (1.3+), capabilities,
//!   and in OpenFlow 1.0 the action bitmap and the ports (48-byte records, whose total
//!   must be a multiple of 48).

use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{decode_port, encode_port, Port};
use crate::wire::record::{until_empty, Framing};
use crate::wire::OFP10;

/// Hello: optional version bitmap element (other elements are ignored, as the spec says).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Hello {
    /// `OFPHET_VERSIONBITMAP` words (bit n of word i = version 32*i+n), if present.
    pub bitmap: Option<Vec<u32>>,
}

impl Hello {
    /// A hello advertising exactly these versions.
    pub fn for_versions(versions: &[u8]) -> Hello {
        let mut w = 0u32;
        for v in versions {
            if *v < 32 {
                w |= 1 << v;
            }
        }
        Hello {
            bitmap: Some(vec![w]),
        }
    }
    /// Whether the peer (header version `hdr_version`) supports `v`.
    pub fn supports(&self, hdr_version: u8, v: u8) -> bool {
        match &self.bitmap {
            Some(words) => {
                let word = words.get(usize::from(v / 32)).copied().unwrap_or(0);
                word & (1 << (v % 32)) != 0
            }
            None => v <= hdr_version,
        }
    }
}

/// Hello elements are property-like records with padding outside their length.
pub(crate) fn decode_hello(rd: &mut Rd<'_>) -> Result<Hello, DecodeError> {
    let mut h = Hello::default();
    Framing::padded_tlv(DecodeError::BadLength).each(rd, |mut e| {
        let ty = e.u16()?;
        e.skip(2)?;
        if ty == 1 && h.bitmap.is_none() {
            let mut words = Vec::with_capacity(e.len() / 4);
            while e.len() >= 4 {
                words.push(e.u32()?);
            }
            h.bitmap = Some(words);
        }
        Ok(())
    })?;
    Ok(h)
}

pub(crate) fn encode_hello(out: &mut Vec<u8>, h: &Hello) {
    if let Some(words) = &h.bitmap {
        let start = out.len();
        out.u16(1);
        out.u16((4 + 4 * words.len()) as u16);
        words.iter().for_each(|w| out.u32(*w));
        out.pad8_from(start);
    }
}

/// An error message as sent on the wire (numbers of the connection's version).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ErrorMsg {
    /// Error type.
    pub type_: u16,
    /// Error code (for `OFPET_EXPERIMENTER`, the experimenter's type).
    pub code: u16,
    /// Experimenter id, for `OFPET_EXPERIMENTER` (1.2+).
    pub experimenter: Option<u32>,
    /// Usually the first 64 bytes of the failed request.
    pub data: Vec<u8>,
}

pub(crate) fn decode_error(version: u8, rd: &mut Rd<'_>) -> Result<ErrorMsg, DecodeError> {
    let type_ = rd.u16()?;
    let code = rd.u16()?;
    let experimenter = if type_ == 0xffff && version != OFP10 {
        Some(rd.u32()?)
    } else {
        None
    };
    Ok(ErrorMsg {
        type_,
        code,
        experimenter,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_error(out: &mut Vec<u8>, version: u8, e: &ErrorMsg) {
    out.u16(e.type_);
    out.u16(e.code);
    if let (Some(x), true) = (e.experimenter, version != OFP10) {
        out.u32(x);
    }
    out.extend_from_slice(&e.data);
}

/// A generic experimenter (OpenFlow 1.0: vendor) message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Experimenter {
    /// Experimenter id.
    pub experimenter: u32,
    /// Experimenter-defined type (for OpenFlow 1.0 vendor messages, the first 4 bytes
    /// of the body, which every vendor we know uses as a subtype).
    pub exp_type: u32,
    /// The rest.
    pub data: Vec<u8>,
}

pub(crate) fn decode_experimenter(rd: &mut Rd<'_>) -> Result<Experimenter, DecodeError> {
    Ok(Experimenter {
        experimenter: rd.u32()?,
        exp_type: rd.u32()?,
        data: rd.rest().to_vec(),
    })
}

pub(crate) fn encode_experimenter(out: &mut Vec<u8>, e: &Experimenter) {
    out.u32(e.experimenter);
    out.u32(e.exp_type);
    out.extend_from_slice(&e.data);
}

/// Features reply.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SwitchFeatures {
    /// Datapath id.
    pub datapath_id: u64,
    /// Packets the switch can buffer.
    pub n_buffers: u32,
    /// Flow tables.
    pub n_tables: u8,
    /// Auxiliary connection id (1.3+).
    pub auxiliary_id: u8,
    /// `OFPC_*` bits.
    pub capabilities: u32,
    /// OpenFlow 1.0: supported action bitmap; later: reserved.
    pub actions: u32,
    /// OpenFlow 1.0 only: the ports.
    pub ports: Vec<Port>,
}

pub(crate) fn decode_features(version: u8, rd: &mut Rd<'_>) -> Result<SwitchFeatures, DecodeError> {
    let mut f = SwitchFeatures {
        datapath_id: rd.u64()?,
        n_buffers: rd.u32()?,
        n_tables: rd.u8()?,
        auxiliary_id: rd.u8()?,
        ..SwitchFeatures::default()
    };
    rd.skip(2)?;
    f.capabilities = rd.u32()?;
    f.actions = rd.u32()?;
    if version == OFP10 {
        f.auxiliary_id = 0;
        if !rd.len().is_multiple_of(48) {
            return Err(DecodeError::BadLength);
        }
        f.ports = until_empty(rd, |rd| decode_port(version, rd))?;
    }
    Ok(f)
}

pub(crate) fn encode_features(
    out: &mut Vec<u8>,
    version: u8,
    f: &SwitchFeatures,
) -> Result<(), EncodeError> {
    out.u64(f.datapath_id);
    out.u32(f.n_buffers);
    out.u8(f.n_tables);
    out.u8(if version == OFP10 { 0 } else { f.auxiliary_id });
    out.zeros(2);
    out.u32(f.capabilities);
    out.u32(f.actions);
    if version == OFP10 {
        for p in &f.ports {
            encode_port(out, version, p)?;
        }
    }
    Ok(())
}
