//! `NXT_RESUME`: a controller hands back a paused pipeline's continuation with the packet
//! and pipeline fields as it wants them now (ovn-controller's pinctrl answers DHCP, DNS and
//! IPv6 RA/NA this way: it rewrites the packet, sets a register bit, and resumes).
//!
//! The continuation is checked first ([`ofproto::continuation::Continuation::decode`]: a
//! malformed one is an OpenFlow property error, one this bridge did not make `NXR_STALE`),
//! then the packet: it must be there, and its `in_port` (from the pipeline fields; the
//! controller port if none) must be one a packet-out may claim. The packet's flow is
//! parsed from its bytes, with the pipeline fields the controller sent (those a packet-in
//! reports, [`super::pin_meta`]: `metadata`, the registers, the tunnel fields and options
//! (`tun_metadata<N>`, through the bridge's TLV table), `pkt_mark`,
//! the connection-tracking state and tuple), and the continuation runs on it
//! ([`ofproto::xlate::resume`]) under the OpenFlow state's lock, crediting the rules it
//! meets. A translation that fails is `OFPFMFC_UNKNOWN`, as a packet-out's; the datapath
//! then runs the actions on the poll thread, as it runs a packet-out's. At `dbg` the
//! `ofconn` module logs those actions (`BR: resume: execute ACTIONS`, `drop` for none),
//! as OVS's `dpif` module logs the ones it executes for a resumed packet.
//!
//! Nothing of the packet's queue travels in the continuation, as in OVS: the resumed
//! packet starts on queue 0, the queue of a packet that arrived on a port
//! ([`ofproto::xlate::resume`]).
//!
//! Like a packet-out, a resume changes what the switch does: a slave may not send one.

use super::BridgeOf;
use ofproto::continuation::Continuation;
use openflow::actions::{OFPP_CONTROLLER, OFPP_LOCAL, OFPP_MAX};
use openflow::messages::err::{bad_request, flow_mod_failed};
use openflow::oxm::Field;
use openflow::wire::nicira::PacketIn2;
use openflow::OfError;

/// Runs `p`'s continuation (see the module documentation).
pub fn resume(b: &BridgeOf, p: PacketIn2) -> Result<(), OfError> {
    let key = b.udpif.of().recirc.key();
    let cont = Continuation::decode(&p.continuation, &key)?;
    if p.data.is_empty() {
        return Err(OfError::bad_request(bad_request::BAD_LEN));
    }
    let in_port = match p.metadata.exact(Field::InPort) {
        Some(v) => u32::try_from(v).unwrap_or(0),
        None => OFPP_CONTROLLER,
    };
    if !((1..=OFPP_MAX).contains(&in_port) || in_port == OFPP_LOCAL || in_port == OFPP_CONTROLLER) {
        return Err(OfError::bad_request(bad_request::BAD_PORT));
    }
    let mut flow = packet::flow::extract(&p.data, in_port);
    let tlv = b.udpif.tlv.load();
    for m in p.metadata.iter() {
        if m.field.is_reg() || super::pin_meta::RESUMED.contains(&m.field) {
            ofproto::fields::set(&mut flow, m.field, m.value, m.mask_bits());
        } else if m.field.tun_metadata_index().is_some() {
            ofproto::tun_md::set(&mut flow, &tlv, m.field, m.value, m.mask_bits());
        }
    }
    let actions = {
        let of = b.udpif.of();
        let x = ofproto::xlate::resume(&of, &flow, Some(&p.data), &cont, None);
        let now = datapath::clock::now_ms();
        for r in &x.rules {
            r.credit(1, p.data.len() as u64, now);
        }
        if x.failed {
            return Err(OfError::flow_mod_failed(flow_mod_failed::UNKNOWN));
        }
        x.actions
    };
    log::debug!(target: "ofconn", "{}: resume: execute {}", b.name, ofproto::odp::list_text(&actions));
    let br = b.name.clone();
    let data = p.data;
    let ran = b
        .pmd
        .call(move |sw| sw.packet_out(&br, in_port, &data, &actions).is_ok());
    if ran.unwrap_or(false) {
        Ok(())
    } else {
        Err(OfError::bad_request(bad_request::BAD_PACKET))
    }
}
