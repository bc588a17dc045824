//! Meter statistics, configuration and features (OpenFlow 1.3+).
//!
//! * Statistics (`OFPMP_METER`; the request names a meter, `OFPM_ALL` for all): records
//!   of at least 40 bytes whose length sits after the meter id (offset 4): meter id,
//!   length, 6 pad, flow count, counters, duration, then one 16-byte (packets, bytes)
//!   pair per band filling the rest of the record exactly.
//! * Configuration (`OFPMP_METER_CONFIG`, 1.5 meter desc; the request names a meter):
//!   records of at least 8 bytes: length, flags, meter id, then bands as in a meter_mod.
//! * Features (`OFPMP_METER_FEATURES`, request without body): maximum meters, band types,
//!   capabilities, maximum bands and colour, 2 pad; OpenFlow 1.5 appends a features word
//!   and 4 pad, which os-ken's 1.5 vector omits, so it is optional on decode and written
//!   only when non-zero.
//!
//! Statistics and configuration records are all cut before any is decoded.

use crate::messages::MeterBand;
use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::msg::{decode_bands, encode_bands};
use crate::wire::record::{fixed, Framing};
use crate::wire::OFP15;

/// One meter's statistics.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct MeterStats {
    /// Meter.
    pub meter_id: u32,
    /// Flows using it.
    pub flow_count: u32,
    /// Packets in.
    pub packet_in_count: u64,
    /// Bytes in.
    pub byte_in_count: u64,
    /// Time alive, seconds.
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds.
    pub duration_nsec: u32,
    /// Per band (packets, bytes).
    pub bands: Vec<(u64, u64)>,
}

/// One meter's configuration.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MeterConfig {
    /// `OFPMF_*` flags.
    pub flags: u16,
    /// Meter.
    pub meter_id: u32,
    /// Bands.
    pub bands: Vec<MeterBand>,
}

/// Meter features.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct MeterFeatures {
    /// Maximum meters.
    pub max_meter: u32,
    /// Bitmap of supported band types.
    pub band_types: u32,
    /// `OFPMF_*` capabilities.
    pub capabilities: u32,
    /// Maximum bands per meter.
    pub max_bands: u8,
    /// Maximum color value.
    pub max_color: u8,
    /// `OFPMFF_*` features (1.5).
    pub features: u32,
}

pub(super) fn decode_stats(rd: &mut Rd<'_>) -> Result<Vec<MeterStats>, DecodeError> {
    Framing::prefixed(4, 40).all(rd, |mut r| {
        let mut m = MeterStats {
            meter_id: r.u32()?,
            ..Default::default()
        };
        r.skip(8)?;
        m.flow_count = r.u32()?;
        m.packet_in_count = r.u64()?;
        m.byte_in_count = r.u64()?;
        m.duration_sec = r.u32()?;
        m.duration_nsec = r.u32()?;
        m.bands = fixed(&mut r, 16, |mut b| Ok((b.u64()?, b.u64()?)))?;
        Ok(m)
    })
}

pub(super) fn encode_stats(out: &mut Vec<u8>, v: &[MeterStats]) {
    for m in v {
        out.u32(m.meter_id);
        out.u16((40 + 16 * m.bands.len()) as u16);
        out.zeros(6);
        out.u32(m.flow_count);
        out.u64(m.packet_in_count);
        out.u64(m.byte_in_count);
        out.u32(m.duration_sec);
        out.u32(m.duration_nsec);
        for (p, b) in &m.bands {
            out.u64(*p);
            out.u64(*b);
        }
    }
}

pub(super) fn decode_configs(rd: &mut Rd<'_>) -> Result<Vec<MeterConfig>, DecodeError> {
    Framing::prefixed(0, 8).all(rd, |mut r| {
        r.skip(2)?;
        let flags = r.u16()?;
        let meter_id = r.u32()?;
        Ok(MeterConfig {
            flags,
            meter_id,
            bands: decode_bands(&mut r)?,
        })
    })
}

pub(super) fn encode_configs(out: &mut Vec<u8>, v: &[MeterConfig]) {
    for m in v {
        out.u16((8 + 16 * m.bands.len()) as u16);
        out.u16(m.flags);
        out.u32(m.meter_id);
        encode_bands(out, &m.bands);
    }
}

pub(super) fn decode_features(version: u8, rd: &mut Rd<'_>) -> Result<MeterFeatures, DecodeError> {
    let mut m = MeterFeatures {
        max_meter: rd.u32()?,
        band_types: rd.u32()?,
        capabilities: rd.u32()?,
        max_bands: rd.u8()?,
        max_color: rd.u8()?,
        features: 0,
    };
    rd.skip(2)?;
    if version == OFP15 && !rd.is_empty() {
        m.features = rd.u32()?;
        rd.skip(4)?;
    }
    Ok(m)
}

pub(super) fn encode_features(out: &mut Vec<u8>, version: u8, m: &MeterFeatures) {
    out.u32(m.max_meter);
    out.u32(m.band_types);
    out.u32(m.capabilities);
    out.u8(m.max_bands);
    out.u8(m.max_color);
    out.zeros(2);
    if version == OFP15 && m.features != 0 {
        out.u32(m.features);
        out.zeros(4);
    }
}
