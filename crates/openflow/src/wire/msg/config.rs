//! Switch and controller configuration: get/set config, table_mod, role request and
//! reply, the asynchronous-message configuration, and queue get-config.
//!
//! * Switch config: flags and miss_send_len, the same in every version.
//! * Table mod (1.1+): table id, 3 pad, config, and from 1.4 on properties kept raw.
//! * Role request/reply (1.2+): role, short id (1.5; zero before), 2 pad, generation id
//!   (OpenFlow 1.0 uses Nicira's role messages).
//! * Async config: OpenFlow 1.3 sends six masks in a fixed order (packet-in, port-status,
//!   flow-removed, each master/equal then slave); 1.4+ sends one property per mask, in
//!   the model's numbering, plus experimenter properties kept raw. A 1.4 mask property
//!   whose body is not 4 bytes is `BadPropertyLen`.
//! * Queue get-config (1.0 and 1.3; 1.4 replaced it with the queue desc multipart): the
//!   request names a port, the reply repeats it and carries the queue descriptions, kept
//!   raw.

use crate::actions::{port_from_of10, port_to_of10};
use crate::wire::buf::{Rd, W};
use crate::wire::error::{DecodeError, EncodeError};
use crate::wire::port::{decode_props, encode_props, Prop};
use crate::wire::{OFP10, OFP13, OFP14, OFP15};

/// Switch configuration (get_config reply, set_config).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SwitchConfig {
    /// `OFPC_FRAG_*` bits.
    pub flags: u16,
    /// Bytes of a table-miss packet to send to the controller.
    pub miss_send_len: u16,
}

/// Table modification.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TableMod {
    /// Table (`OFPTT_ALL` for all).
    pub table_id: u8,
    /// `OFPTC_*` bits.
    pub config: u32,
    /// 1.4+ properties (eviction, vacancy...), raw.
    pub props: Vec<Prop>,
}

pub(crate) fn decode_table_mod(version: u8, rd: &mut Rd<'_>) -> Result<TableMod, DecodeError> {
    let table_id = rd.u8()?;
    rd.skip(3)?;
    let config = rd.u32()?;
    let props = if version >= OFP14 {
        decode_props(rd)?
    } else {
        Vec::new()
    };
    Ok(TableMod {
        table_id,
        config,
        props,
    })
}

pub(crate) fn encode_table_mod(out: &mut Vec<u8>, version: u8, t: &TableMod) {
    out.u8(t.table_id);
    out.zeros(3);
    out.u32(t.config);
    if version >= OFP14 {
        encode_props(out, &t.props);
    }
}

/// Role request / reply.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RoleMsg {
    /// `OFPCR_ROLE_*`: 0 no change, 1 equal, 2 master, 3 slave.
    pub role: u32,
    /// OpenFlow 1.5 short id of the controller (0 otherwise).
    pub short_id: u16,
    /// Master election generation id.
    pub generation_id: u64,
}

/// Asynchronous message configuration, as (property type, mask) pairs in OpenFlow 1.4
/// numbering (`OFPACPT_PACKET_IN_SLAVE` 0, `_MASTER` 1, `PORT_STATUS_SLAVE` 2, `_MASTER`
/// 3, `FLOW_REMOVED_SLAVE` 4, `_MASTER` 5, ...). OpenFlow 1.3's three mask pairs are the
/// first six (its index 0 is master/equal, index 1 slave).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct AsyncConfig {
    /// (type, mask) pairs in message order.
    pub masks: Vec<(u16, u32)>,
    /// 1.4+ experimenter properties (types 0xfffe, 0xffff), raw; encoded after `masks`.
    pub experimenter: Vec<Prop>,
}

impl AsyncConfig {
    /// The mask for a property type, if given.
    pub fn get(&self, ty: u16) -> Option<u32> {
        self.masks.iter().find(|m| m.0 == ty).map(|m| m.1)
    }
}

/// OpenFlow 1.3 field order: pin master, pin slave, ps master, ps slave, fr master, fr slave.
const ASYNC13: [u16; 6] = [1, 0, 3, 2, 5, 4];

pub(crate) fn decode_async(version: u8, rd: &mut Rd<'_>) -> Result<AsyncConfig, DecodeError> {
    let mut a = AsyncConfig::default();
    if version == OFP13 {
        for ty in ASYNC13 {
            a.masks.push((ty, rd.u32()?));
        }
        return Ok(a);
    }
    for p in decode_props(rd)? {
        if p.type_ >= 0xfffe {
            a.experimenter.push(p);
            continue;
        }
        if p.data.len() != 4 {
            return Err(DecodeError::BadPropertyLen);
        }
        a.masks.push((
            p.type_,
            Rd::new(&p.data, DecodeError::BadPropertyLen).u32()?,
        ));
    }
    Ok(a)
}

pub(crate) fn encode_async(out: &mut Vec<u8>, version: u8, a: &AsyncConfig) {
    if version == OFP13 {
        for ty in ASYNC13 {
            out.u32(a.get(ty).unwrap_or(0));
        }
        return;
    }
    for (ty, m) in &a.masks {
        encode_props(
            out,
            &[Prop {
                type_: *ty,
                data: m.to_be_bytes().to_vec(),
            }],
        );
    }
    encode_props(out, &a.experimenter);
}

pub(crate) fn decode_switch_config(rd: &mut Rd<'_>) -> Result<SwitchConfig, DecodeError> {
    Ok(SwitchConfig {
        flags: rd.u16()?,
        miss_send_len: rd.u16()?,
    })
}

pub(crate) fn encode_switch_config(out: &mut Vec<u8>, c: &SwitchConfig) {
    out.u16(c.flags);
    out.u16(c.miss_send_len);
}

pub(crate) fn decode_role(version: u8, rd: &mut Rd<'_>) -> Result<RoleMsg, DecodeError> {
    let role = rd.u32()?;
    let short_id = if version == OFP15 {
        rd.u16()?
    } else {
        rd.u16().map(|_| 0)?
    };
    rd.skip(2)?;
    Ok(RoleMsg {
        role,
        short_id,
        generation_id: rd.u64()?,
    })
}

pub(crate) fn encode_role(out: &mut Vec<u8>, version: u8, r: &RoleMsg) {
    out.u32(r.role);
    out.u16(if version == OFP15 { r.short_id } else { 0 });
    out.zeros(2);
    out.u64(r.generation_id);
}

/// A queue get-config request's port (OpenFlow 1.0: 16-bit and 2 pad; 1.3: 32-bit and
/// 4 pad).
pub(crate) fn decode_queue_get_config_request(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<u32, DecodeError> {
    if version == OFP10 {
        let p = port_from_of10(rd.u16()?);
        rd.skip(2)?;
        Ok(p)
    } else {
        let p = rd.u32()?;
        rd.skip(4)?;
        Ok(p)
    }
}

/// A queue get-config reply's port (OpenFlow 1.0: 16-bit and 6 pad; 1.3: 32-bit and 4
/// pad) and its queue descriptions, raw.
pub(crate) fn decode_queue_get_config_reply(
    version: u8,
    rd: &mut Rd<'_>,
) -> Result<(u32, Vec<u8>), DecodeError> {
    let port = if version == OFP10 {
        let p = port_from_of10(rd.u16()?);
        rd.skip(6)?;
        p
    } else {
        let p = rd.u32()?;
        rd.skip(4)?;
        p
    };
    Ok((port, rd.rest().to_vec()))
}

/// A queue get-config request (`queues` `None`) or reply (OpenFlow 1.0 and 1.3 only;
/// the caller refuses later versions).
pub(crate) fn encode_queue_get_config(
    out: &mut Vec<u8>,
    version: u8,
    port: u32,
    queues: Option<&[u8]>,
) -> Result<(), EncodeError> {
    let of10 = version == OFP10;
    if of10 {
        out.u16(port_to_of10(port).ok_or(EncodeError::Unrepresentable("port"))?);
    } else {
        out.u32(port);
    }
    match queues {
        Some(q) => {
            out.zeros(if of10 { 6 } else { 4 });
            out.extend_from_slice(q);
        }
        None => out.zeros(if of10 { 2 } else { 4 }),
    }
    Ok(())
}
