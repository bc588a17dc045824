//! Meter table messages: meter_mod and the band lists meter_mod and meter configuration
//! replies share (OpenFlow 1.3+).
//!
//! A meter_mod is command (add 0, modify 1, delete 2; anything else is
//! `BadMeterCommand`), flags, meter id and bands. Every band is exactly 16 bytes: type,
//! length, rate, burst size, and for DSCP remark (2) the precedence level and 3 pad,
//! for drop (1) 4 pad. A band of another type, or whose length field is not 16, is
//! `BadMeterBand(type)` (`BadMeterBand(0)` when not even the type can be read); a band
//! cut short by the end of the list is the enclosing cursor's error. Bands are decoded
//! one at a time.

use crate::messages::{MeterBand, MeterFlags, MeterMod, MeterModCommand};
use crate::wire::buf::{Rd, W};
use crate::wire::error::DecodeError;
use crate::wire::record::{until_empty, Framing};

pub(crate) fn decode_bands(rd: &mut Rd<'_>) -> Result<Vec<MeterBand>, DecodeError> {
    until_empty(rd, |rd| {
        let ty = rd.peek_u16(0).ok_or(DecodeError::BadMeterBand(0))?;
        let mut b = Framing::exact(16, DecodeError::BadMeterBand(ty)).take(rd)?;
        b.skip(4)?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        Ok(match ty {
            1 => MeterBand::Drop { rate, burst_size },
            2 => MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level: b.u8()?,
            },
            _ => return Err(DecodeError::BadMeterBand(ty)),
        })
    })
}

pub(crate) fn encode_bands(out: &mut Vec<u8>, bands: &[MeterBand]) {
    for b in bands {
        out.u16(b.band_type());
        out.u16(16);
        out.u32(b.rate());
        out.u32(b.burst_size());
        match b {
            MeterBand::DscpRemark { prec_level, .. } => {
                out.u8(*prec_level);
                out.zeros(3);
            }
            MeterBand::Drop { .. } => out.zeros(4),
        }
    }
}

pub(crate) fn decode_meter_mod(rd: &mut Rd<'_>) -> Result<MeterMod, DecodeError> {
    let c = rd.u16()?;
    let command = match c {
        0 => MeterModCommand::Add,
        1 => MeterModCommand::Modify,
        2 => MeterModCommand::Delete,
        _ => return Err(DecodeError::BadMeterCommand(c)),
    };
    let flags = MeterFlags(rd.u16()?);
    let meter_id = rd.u32()?;
    Ok(MeterMod {
        command,
        flags,
        meter_id,
        bands: decode_bands(rd)?,
    })
}

pub(crate) fn encode_meter_mod(out: &mut Vec<u8>, m: &MeterMod) {
    out.u16(m.command as u16);
    out.u16(m.flags.0);
    out.u32(m.meter_id);
    encode_bands(out, &m.bands);
}
