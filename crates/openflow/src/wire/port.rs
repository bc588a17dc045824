//! Ports and port statistics, and the generic property TLV of OpenFlow 1.4+.
//!
//! A [`Port`] is OpenFlow's `ofp_port` in its widest form: 32-bit number, the Ethernet
//! feature bitmaps and speeds, plus any other 1.4+ properties (optical, experimenter) kept
//! as raw [`Prop`]s so that they survive a round trip. The three layouts:
//!
//! * OpenFlow 1.0: 48 bytes, 16-bit port number, no speeds;
//! * OpenFlow 1.3: 64 bytes, 32-bit port number, `curr_speed` / `max_speed`;
//! * OpenFlow 1.4/1.5: 40 bytes plus properties; the Ethernet property (type 0) carries
//!   the bitmaps and speeds and is decoded into the struct's fields (`ethernet` records
//!   whether one was present, so a port without it re-encodes without it).
//!
//! [`PortStats`] has the same three generations (104 / 112 bytes / length-prefixed with
//! an Ethernet property holding the four error counters).
//!
//! A [`Prop`] is the 1.4+ property TLV (type, length, body, zero padding to 8): `data` is
//! the body without header or padding. Property lists must tile their bytes exactly;
//! lengths below 4 or beyond the bytes present are `BadPropertyLen`.

use super::buf::{Rd, W};
use super::error::{DecodeError, EncodeError};
use super::record::Framing;
use super::{OFP10, OFP13};
use crate::actions::{port_from_of10, port_to_of10};

/// A raw OpenFlow 1.4+ property: type and body (without header and padding).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Prop {
    /// Property type.
    pub type_: u16,
    /// Body bytes.
    pub data: Vec<u8>,
}

/// Decode a property list filling all of `rd`.
pub(crate) fn decode_props(rd: &mut Rd<'_>) -> Result<Vec<Prop>, DecodeError> {
    Framing::padded_tlv(DecodeError::BadPropertyLen).each(rd, |mut p| {
        let type_ = p.u16()?;
        p.skip(2)?;
        Ok(Prop {
            type_,
            data: p.rest().to_vec(),
        })
    })
}

/// Encode one property (header, body, padding).
pub(crate) fn encode_prop(out: &mut Vec<u8>, p: &Prop) {
    let start = out.len();
    out.u16(p.type_);
    out.u16(0);
    out.extend_from_slice(&p.data);
    out.patch_u16(start + 2, 4 + p.data.len());
    out.pad8_from(start);
}

/// Encode a property list.
pub(crate) fn encode_props(out: &mut Vec<u8>, ps: &[Prop]) {
    ps.iter().for_each(|p| encode_prop(out, p));
}

/// An OpenFlow port description.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Port {
    /// Port number (32-bit; OpenFlow 1.0 reserved numbers mapped up).
    pub port_no: u32,
    /// MAC address.
    pub hw_addr: [u8; 6],
    /// Name (at most 15 bytes on the wire).
    pub name: String,
    /// `OFPPC_*` bits.
    pub config: u32,
    /// `OFPPS_*` bits.
    pub state: u32,
    /// Current features (`OFPPF_*`).
    pub curr: u32,
    /// Advertised features.
    pub advertised: u32,
    /// Supported features.
    pub supported: u32,
    /// Features advertised by the peer.
    pub peer: u32,
    /// Current speed in kbps (1.3+).
    pub curr_speed: u32,
    /// Maximum speed in kbps (1.3+).
    pub max_speed: u32,
    /// Whether a 1.4+ encoding carries the Ethernet property (always true when built
    /// from 1.0/1.3).
    pub ethernet: bool,
    /// Other 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_port(version: u8, rd: &mut Rd<'_>) -> Result<Port, DecodeError> {
    let mut p = Port {
        ethernet: true,
        ..Port::default()
    };
    match version {
        OFP10 => {
            let mut r = rd.sub(48, rd.short())?;
            p.port_no = port_from_of10(r.u16()?);
            p.hw_addr = r.array()?;
            p.name = r.string(16)?;
            p.config = r.u32()?;
            p.state = r.u32()?;
            p.curr = r.u32()?;
            p.advertised = r.u32()?;
            p.supported = r.u32()?;
            p.peer = r.u32()?;
        }
        OFP13 => {
            let mut r = rd.sub(64, rd.short())?;
            p.port_no = r.u32()?;
            r.skip(4)?;
            p.hw_addr = r.array()?;
            r.skip(2)?;
            p.name = r.string(16)?;
            p.config = r.u32()?;
            p.state = r.u32()?;
            p.curr = r.u32()?;
            p.advertised = r.u32()?;
            p.supported = r.u32()?;
            p.peer = r.u32()?;
            p.curr_speed = r.u32()?;
            p.max_speed = r.u32()?;
        }
        _ => {
            let len = usize::from(rd.peek_u16(4).ok_or(rd.short())?);
            if len < 40 {
                return Err(DecodeError::BadLength);
            }
            let mut r = rd.sub(len, rd.short())?;
            p.port_no = r.u32()?;
            r.skip(4)?;
            p.hw_addr = r.array()?;
            r.skip(2)?;
            p.name = r.string(16)?;
            p.config = r.u32()?;
            p.state = r.u32()?;
            p.ethernet = false;
            for prop in decode_props(&mut r)? {
                if prop.type_ == 0 && !p.ethernet && prop.data.len() == 28 {
                    let mut e = Rd::new(&prop.data, DecodeError::BadPropertyLen);
                    e.skip(4)?;
                    p.curr = e.u32()?;
                    p.advertised = e.u32()?;
                    p.supported = e.u32()?;
                    p.peer = e.u32()?;
                    p.curr_speed = e.u32()?;
                    p.max_speed = e.u32()?;
                    p.ethernet = true;
                } else {
                    p.props.push(prop);
                }
            }
        }
    }
    Ok(p)
}

pub(crate) fn encode_port(out: &mut Vec<u8>, version: u8, p: &Port) -> Result<(), EncodeError> {
    match version {
        OFP10 => {
            out.u16(port_to_of10(p.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
            out.extend_from_slice(&p.hw_addr);
            out.string(&p.name, 16);
            for v in [p.config, p.state, p.curr, p.advertised, p.supported, p.peer] {
                out.u32(v);
            }
        }
        OFP13 => {
            out.u32(p.port_no);
            out.zeros(4);
            out.extend_from_slice(&p.hw_addr);
            out.zeros(2);
            out.string(&p.name, 16);
            for v in [
                p.config,
                p.state,
                p.curr,
                p.advertised,
                p.supported,
                p.peer,
                p.curr_speed,
                p.max_speed,
            ] {
                out.u32(v);
            }
        }
        _ => {
            let start = out.len();
            out.u32(p.port_no);
            out.u16(0);
            out.zeros(2);
            out.extend_from_slice(&p.hw_addr);
            out.zeros(2);
            out.string(&p.name, 16);
            out.u32(p.config);
            out.u32(p.state);
            if p.ethernet {
                let mut d = vec![0u8; 4];
                for v in [
                    p.curr,
                    p.advertised,
                    p.supported,
                    p.peer,
                    p.curr_speed,
                    p.max_speed,
                ] {
                    d.u32(v);
                }
                encode_prop(out, &Prop { type_: 0, data: d });
            }
            encode_props(out, &p.props);
            let len = out.len() - start;
            out.patch_u16(start + 4, len);
        }
    }
    Ok(())
}

/// Port counters.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PortStats {
    /// Port number.
    pub port_no: u32,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets dropped on receive.
    pub rx_dropped: u64,
    /// Packets dropped on send.
    pub tx_dropped: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Send errors.
    pub tx_errors: u64,
    /// Frame alignment errors.
    pub rx_frame_err: u64,
    /// Overrun errors.
    pub rx_over_err: u64,
    /// CRC errors.
    pub rx_crc_err: u64,
    /// Collisions.
    pub collisions: u64,
    /// Time alive, seconds (1.3+).
    pub duration_sec: u32,
    /// Time alive, extra nanoseconds (1.3+).
    pub duration_nsec: u32,
    /// Whether a 1.4+ encoding carries the Ethernet property.
    pub ethernet: bool,
    /// Other 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_port_stats(version: u8, rd: &mut Rd<'_>) -> Result<PortStats, DecodeError> {
    let mut s = PortStats {
        ethernet: true,
        ..PortStats::default()
    };
    if version <= OFP13 {
        let mut r = rd.sub(if version == OFP10 { 104 } else { 112 }, rd.short())?;
        if version == OFP10 {
            s.port_no = port_from_of10(r.u16()?);
            r.skip(6)?;
        } else {
            s.port_no = r.u32()?;
            r.skip(4)?;
        }
        let mut c = [0u64; 12];
        for v in c.iter_mut() {
            *v = r.u64()?;
        }
        [
            s.rx_packets,
            s.tx_packets,
            s.rx_bytes,
            s.tx_bytes,
            s.rx_dropped,
            s.tx_dropped,
            s.rx_errors,
            s.tx_errors,
            s.rx_frame_err,
            s.rx_over_err,
            s.rx_crc_err,
            s.collisions,
        ] = c;
        if version != OFP10 {
            s.duration_sec = r.u32()?;
            s.duration_nsec = r.u32()?;
        }
        return Ok(s);
    }
    let len = usize::from(rd.peek_u16(0).ok_or(rd.short())?);
    if len < 80 {
        return Err(DecodeError::BadLength);
    }
    let mut r = rd.sub(len, rd.short())?;
    r.skip(4)?;
    s.port_no = r.u32()?;
    s.duration_sec = r.u32()?;
    s.duration_nsec = r.u32()?;
    let mut c = [0u64; 8];
    for v in c.iter_mut() {
        *v = r.u64()?;
    }
    [
        s.rx_packets,
        s.tx_packets,
        s.rx_bytes,
        s.tx_bytes,
        s.rx_dropped,
        s.tx_dropped,
        s.rx_errors,
        s.tx_errors,
    ] = c;
    s.ethernet = false;
    for prop in decode_props(&mut r)? {
        if prop.type_ == 0 && !s.ethernet && prop.data.len() == 36 {
            let mut e = Rd::new(&prop.data, DecodeError::BadPropertyLen);
            e.skip(4)?;
            s.rx_frame_err = e.u64()?;
            s.rx_over_err = e.u64()?;
            s.rx_crc_err = e.u64()?;
            s.collisions = e.u64()?;
            s.ethernet = true;
        } else {
            s.props.push(prop);
        }
    }
    Ok(s)
}

pub(crate) fn encode_port_stats(
    out: &mut Vec<u8>,
    version: u8,
    s: &PortStats,
) -> Result<(), EncodeError> {
    if version <= OFP13 {
        if version == OFP10 {
            out.u16(port_to_of10(s.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
            out.zeros(6);
        } else {
            out.u32(s.port_no);
            out.zeros(4);
        }
        for v in [
            s.rx_packets,
            s.tx_packets,
            s.rx_bytes,
            s.tx_bytes,
            s.rx_dropped,
            s.tx_dropped,
            s.rx_errors,
            s.tx_errors,
            s.rx_frame_err,
            s.rx_over_err,
            s.rx_crc_err,
            s.collisions,
        ] {
            out.u64(v);
        }
        if version != OFP10 {
            out.u32(s.duration_sec);
            out.u32(s.duration_nsec);
        }
        return Ok(());
    }
    let start = out.len();
    out.u16(0);
    out.zeros(2);
    out.u32(s.port_no);
    out.u32(s.duration_sec);
    out.u32(s.duration_nsec);
    for v in [
        s.rx_packets,
        s.tx_packets,
        s.rx_bytes,
        s.tx_bytes,
        s.rx_dropped,
        s.tx_dropped,
        s.rx_errors,
        s.tx_errors,
    ] {
        out.u64(v);
    }
    if s.ethernet {
        let mut d = vec![0u8; 4];
        for v in [s.rx_frame_err, s.rx_over_err, s.rx_crc_err, s.collisions] {
            d.u64(v);
        }
        encode_prop(out, &Prop { type_: 0, data: d });
    }
    encode_props(out, &s.props);
    let len = out.len() - start;
    out.patch_u16(start, len);
    Ok(())
}
