//! Requests that change the switch: flow, group, meter, port and table mods.
//!
//! Each is applied to the bridge's `Ofproto` under its lock, which validates the request
//! completely before changing anything, so a refused request changes nothing; a change
//! then marks the connection dirty for the next barrier ([`super::handle::changed`]). The
//! role check (a slave may not send these) is done before, by [`super::handle::request`].
//!
//! * A successful group or meter mod is forwarded to the controllers that asked for it
//!   (OpenFlow 1.4 request forwarding, [`super::status::forward_request`]).
//! * A flow_mod naming a buffer installs the flow and then answers `BUFFER_UNKNOWN`, as
//!   nothing is ever buffered.
//! * A port_mod is checked against the poll thread's port table ([`check_port_mod`]: the
//!   port exists, the MAC matches if given, only supported config bits) and applied in
//!   two places ([`apply_port_mod`]): the `OFPPC_*` bits OpenFlow reports back, and
//!   ofproto's port flags the pipeline reads; the dispatcher then sends port status.
//!   Bundles use the same two steps, checking every port_mod before committing.
//! * A table_mod checks the table id; from OpenFlow 1.4 it also carries the eviction and
//!   vacancy settings ([`super::status::table_mod`]). Earlier versions' table config bits
//!   have no effect.

use super::handle::changed;
use super::{lock, BridgeOf};
use crate::ofconn::conn::Conn;
use openflow::messages::err::{self, bad_request};
use openflow::messages::{OFPTT_ALL, OFP_NO_BUFFER};
use openflow::wire::{self, Message};
use openflow::{FlowMod, FlowModCommand, OfError};

/// `OFPPC_*` bits a port_mod may change: PORT_DOWN, NO_RECV, NO_FLOOD, NO_FWD,
/// NO_PACKET_IN (and NO_STP 0x2 and 0x8, accepted and ignored).
const PORT_CONFIG_SUPPORTED: u32 = 0x1 | 0x4 | 0x10 | 0x20 | 0x40;
/// `OFPPC_PORT_DOWN`, `OFPPC_NO_FLOOD`.
const OFPPC_PORT_DOWN: u32 = 0x1;
const OFPPC_NO_FLOOD: u32 = 0x10;

fn now_ms() -> u64 {
    datapath::clock::now_ms()
}

pub fn flow_mod(b: &BridgeOf, c: &Conn, fm: &FlowMod) -> Result<(), OfError> {
    b.udpif.of().flow_mod(fm, now_ms())?;
    changed(b, c);
    if fm.buffer_id != OFP_NO_BUFFER && fm.command != FlowModCommand::Delete {
        // Nothing is ever buffered: the flow is in, but there is no packet to release.
        return Err(OfError::bad_request(bad_request::BUFFER_UNKNOWN));
    }
    Ok(())
}

/// A group_mod, group bucket mod or meter_mod (any other message is ignored).
pub fn group_or_meter_mod(b: &BridgeOf, c: &Conn, xid: u32, m: Message) -> Result<(), OfError> {
    match &m {
        Message::GroupMod(gm) => b.udpif.of().group_mod(gm, now_ms())?,
        Message::GroupBucketMod(gm) => b.udpif.of().group_bucket_mod(gm, now_ms())?,
        Message::MeterMod(mm) => b.udpif.of().meter_mod(mm, now_ms())?,
        _ => return Ok(()),
    }
    changed(b, c);
    super::status::forward_request(b, c, xid, &m);
    Ok(())
}

pub fn table_mod(b: &BridgeOf, c: &Conn, tm: &wire::TableMod) -> Result<(), OfError> {
    if tm.table_id != OFPTT_ALL && tm.table_id > 253 {
        return Err(OfError::new(err::OFPET_TABLE_MOD_FAILED, 0));
    }
    if c.version() >= wire::OFP14 {
        super::status::table_mod(b, tm)?;
    }
    Ok(())
}

pub fn port_mod(b: &BridgeOf, c: &Conn, pm: &wire::PortMod) -> Result<(), OfError> {
    let link_up = check_port_mod(b, pm)?;
    apply_port_mod(b, pm, link_up);
    changed(b, c);
    Ok(())
}

/// Checks a port_mod against the bridge's ports; returns whether the port has carrier.
pub fn check_port_mod(b: &BridgeOf, pm: &wire::PortMod) -> Result<bool, OfError> {
    let pmf = |code| OfError::new(err::OFPET_PORT_MOD_FAILED, code);
    let ports = b.ports().map_err(|_| pmf(4))?;
    let Some(p) = ports.iter().find(|p| p.desc.port_no == pm.port_no) else {
        return Err(pmf(0));
    };
    if p.desc.hw_addr != pm.hw_addr && pm.hw_addr != [0; 6] {
        return Err(pmf(1));
    }
    if pm.mask & !PORT_CONFIG_SUPPORTED & !0x2 & !0x8 != 0 {
        return Err(pmf(2));
    }
    Ok(p.link_up)
}

/// Applies a port_mod [`check_port_mod`] accepted (`link_up` is what it returned).
pub fn apply_port_mod(b: &BridgeOf, pm: &wire::PortMod, link_up: bool) {
    let config = {
        let mut pc = lock(&b.port_config);
        let cur = pc.get(&pm.port_no).copied().unwrap_or(0);
        let new = (cur & !pm.mask) | (pm.config & pm.mask);
        pc.insert(pm.port_no, new);
        new
    };
    {
        let mut of = b.udpif.of();
        if let Some(op) = of.ports().get(&pm.port_no).cloned() {
            of.set_port(ofproto::OfPort {
                live: link_up,
                admin_down: config & OFPPC_PORT_DOWN != 0,
                no_flood: config & OFPPC_NO_FLOOD != 0,
                ..op
            });
        }
    }
    super::conn::mark_port_dirty(b);
}
