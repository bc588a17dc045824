//! Port status notifications and port_mod.
//!
//! * Port status: reason (add 0, delete 1, modify 2), 7 pad, one port in the version's
//!   layout ([`crate::wire::port`]).
//! * Port mod: OpenFlow 1.0 has a 16-bit port, the MAC, config, mask, advertise and 4
//!   pad; 1.3 a 32-bit port, 4 pad, the MAC, 2 pad, config, mask, advertise, 4 pad; 1.4+
//!   replaces advertise with properties, of which the Ethernet one (type 0, a 4-byte
//!   body) becomes `advertise` and the others are kept raw. A 1.4 port_mod without the
//!   Ethernet property changes no advertisement (`advertise: None`) and re-encodes
//!   without it.

use crate::actions::{port_from_of10, port_to_of10};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{decode_port, decode_props, encode_port, encode_props, Port, Prop};
use crate::wire::{OFP10, OFP13};

/// Port status notification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortStatus {
    /// `OFPPR_ADD` 0, `DELETE` 1, `MODIFY` 2.
    pub reason: u8,
    /// The port.
    pub port: Port,
}

/// Port modification.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortMod {
    /// Port.
    pub port_no: u32,
    /// The port's MAC (a sanity check).
    pub hw_addr: [u8; 6],
    /// New `OFPPC_*` bits, under `mask`.
    pub config: u32,
    /// Which config bits to change.
    pub mask: u32,
    /// Features to advertise (0 for no change); `None` when a 1.4+ message omits the
    /// Ethernet property.
    pub advertise: Option<u32>,
    /// Other 1.4+ properties, raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_port_mod(version: u8, rd: &mut Rd<'_>) -> Result<PortMod, DecodeError> {
    if version == OFP10 {
        let port_no = port_from_of10(rd.u16()?);
        let hw_addr = rd.array()?;
        let config = rd.u32()?;
        let mask = rd.u32()?;
        let advertise = Some(rd.u32()?);
        rd.skip(4)?;
        return Ok(PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
            props: Vec::new(),
        });
    }
    let port_no = rd.u32()?;
    rd.skip(4)?;
    let hw_addr = rd.array()?;
    rd.skip(2)?;
    let config = rd.u32()?;
    let mask = rd.u32()?;
    if version == OFP13 {
        let advertise = Some(rd.u32()?);
        rd.skip(4)?;
        return Ok(PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
            props: Vec::new(),
        });
    }
    let mut pm = PortMod {
        port_no,
        hw_addr,
        config,
        mask,
        advertise: None,
        props: Vec::new(),
    };
    for p in decode_props(rd)? {
        if p.type_ == 0 && pm.advertise.is_none() && p.data.len() == 4 {
            pm.advertise = Some(Rd::new(&p.data, DecodeError::BadPropertyLen).u32()?);
        } else {
            pm.props.push(p);
        }
    }
    Ok(pm)
}

pub(crate) fn encode_port_mod(
    out: &mut Vec<u8>,
    version: u8,
    p: &PortMod,
) -> Result<(), EncodeError> {
    if version == OFP10 {
        out.u16(port_to_of10(p.port_no).ok_or(EncodeError::Unrepresentable("port_no"))?);
        out.extend_from_slice(&p.hw_addr);
        out.u32(p.config);
        out.u32(p.mask);
        out.u32(p.advertise.unwrap_or(0));
        out.zeros(4);
        return Ok(());
    }
    out.u32(p.port_no);
    out.zeros(4);
    out.extend_from_slice(&p.hw_addr);
    out.zeros(2);
    out.u32(p.config);
    out.u32(p.mask);
    if version == OFP13 {
        out.u32(p.advertise.unwrap_or(0));
        out.zeros(4);
        return Ok(());
    }
    if let Some(a) = p.advertise {
        encode_props(
            out,
            &[Prop {
                type_: 0,
                data: a.to_be_bytes().to_vec(),
            }],
        );
    }
    encode_props(out, &p.props);
    Ok(())
}

pub(crate) fn decode_port_status(version: u8, rd: &mut Rd<'_>) -> Result<PortStatus, DecodeError> {
    let reason = rd.u8()?;
    rd.skip(7)?;
    Ok(PortStatus {
        reason,
        port: decode_port(version, rd)?,
    })
}

pub(crate) fn encode_port_status(
    out: &mut Vec<u8>,
    version: u8,
    p: &PortStatus,
) -> Result<(), EncodeError> {
    out.u8(p.reason);
    out.zeros(7);
    encode_port(out, version, &p.port)
}
