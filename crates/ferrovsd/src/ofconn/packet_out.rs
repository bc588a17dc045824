//! Packet-outs, batched.
//!
//! A packet-out is checked when it is read (buffer id, input port, frame length, and its
//! actions against ofproto, whose prerequisites the packet itself establishes, as in OVS:
//! `move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[]` is fine on an IPv4 packet and
//! `OFPBAC_MATCH_INCONSISTENT` on an ARP one) and, if good, queued in the connection's [`OutBatch`]; a bad
//! one is answered at once, after the batch so far has run, so answers stay in request
//! order. The batch runs in order, in one call to the poll thread, when it holds
//! [`OUT_BATCH_MAX`], before any other request is handled, and before the reader waits for
//! input (see [`super::handle`] and [`super::conn`]). A queued packet-out the datapath then
//! refuses gets `BAD_REQUEST/BAD_PACKET` at the flush.
//!
//! The batch belongs to the connection's reader thread. At the flush the packet-outs are
//! translated there, under the OpenFlow state's lock, and only the resulting datapath
//! actions go to the poll thread; the reader waits for that call to return.

use super::conn::{reply_error, Conn};
use super::BridgeOf;
use openflow::actions::{OFPP_ANY, OFPP_CONTROLLER, OFPP_LOCAL, OFPP_MAX};
use openflow::messages::err::{bad_request, flow_mod_failed};
use openflow::messages::OFP_NO_BUFFER;
use openflow::oxm::Field;
use openflow::wire;
use openflow::{Match, OfError};

/// Packet-outs a batch holds before it runs.
pub const OUT_BATCH_MAX: usize = 256;

/// Validated packet-outs not yet run (see the module documentation).
#[derive(Default)]
pub struct OutBatch {
    items: Vec<QueuedOut>,
}

struct QueuedOut {
    in_port: u32,
    data: Vec<u8>,
    actions: Vec<openflow::Action>,
    /// The request's first bytes, for an error reply.
    req: Vec<u8>,
}

impl OutBatch {
    /// Queues packet-out `po` (request bytes `msg`) if `allowed` (the role check) and the
    /// packet-out itself are good; answers it at once otherwise.
    pub fn queue(
        &mut self,
        b: &BridgeOf,
        c: &Conn,
        po: wire::PacketOut,
        msg: &[u8],
        allowed: Result<(), OfError>,
    ) {
        match allowed.and_then(|()| validate(b, po, msg)) {
            Ok(q) => {
                self.items.push(q);
                if self.items.len() >= OUT_BATCH_MAX {
                    self.flush(b, c);
                }
            }
            Err(e) => {
                // Answer in order: what was queued before this one runs first.
                self.flush(b, c);
                reply_error(c, c.version(), e, msg);
            }
        }
    }

    /// Runs the queued packet-outs, in order, in one poll-thread call, and answers those the
    /// datapath refused.
    pub fn flush(&mut self, b: &BridgeOf, c: &Conn) {
        if self.items.is_empty() {
            return;
        }
        // Translated here, on the connection's thread, under the OpenFlow state's lock: the
        // poll thread only runs the datapath actions.
        let mut failed = Vec::new();
        let (jobs, reqs): (Vec<_>, Vec<_>) = {
            let of = b.udpif.of();
            let now = datapath::clock::now_ms();
            std::mem::take(&mut self.items)
                .into_iter()
                .filter_map(|q| {
                    match ofproto::xlate::packet_out(&of, q.in_port, &q.data, &q.actions, now) {
                        Ok(acts) => Some(((q.in_port, q.data, acts), q.req)),
                        Err(_) => {
                            failed.push(q.req);
                            None
                        }
                    }
                })
                .unzip()
        };
        // A translation that failed sends nothing; OVS answers it with OFPFMFC_UNKNOWN.
        // (Answered before the others: their order among errors is all a peer can see.)
        for req in failed {
            reply_error(
                c,
                c.version(),
                OfError::flow_mod_failed(flow_mod_failed::UNKNOWN),
                &req,
            );
        }
        let n = jobs.len();
        let br = b.name.clone();
        let done = b.pmd.call(move |sw| {
            jobs.iter()
                .map(|(in_port, data, actions)| sw.packet_out(&br, *in_port, data, actions).is_ok())
                .collect::<Vec<bool>>()
        });
        let done = done.unwrap_or_else(|_| vec![false; n]);
        for (ok, req) in done.into_iter().zip(reqs) {
            if !ok {
                reply_error(
                    c,
                    c.version(),
                    OfError::bad_request(bad_request::BAD_PACKET),
                    &req,
                );
            }
        }
    }
}

/// Checks a packet-out as far as it can be without running it.
fn validate(b: &BridgeOf, po: wire::PacketOut, msg: &[u8]) -> Result<QueuedOut, OfError> {
    if po.buffer_id != OFP_NO_BUFFER {
        return Err(OfError::bad_request(bad_request::BUFFER_UNKNOWN));
    }
    let in_port = match po.in_port {
        OFPP_ANY => OFPP_CONTROLLER,
        p => p,
    };
    if !((1..=OFPP_MAX).contains(&in_port) || in_port == OFPP_LOCAL || in_port == OFPP_CONTROLLER) {
        return Err(OfError::bad_request(bad_request::BAD_PORT));
    }
    if po.data.len() < 14 {
        return Err(OfError::bad_request(bad_request::BAD_PACKET));
    }
    {
        let m = packet_match(&po.data, in_port);
        let of = b.udpif.of();
        of.check_actions(&m, &po.actions, true)?;
    }
    Ok(QueuedOut {
        in_port,
        data: po.data,
        actions: po.actions,
        req: msg.get(..64).unwrap_or(msg).to_vec(),
    })
}

/// What a packet-out's actions may take for granted: the packet's input port and the
/// fields that are prerequisites of others (Ethernet type, a VLAN tag, IP protocol, ICMPv6
/// type), read from its bytes.
fn packet_match(data: &[u8], in_port: u32) -> Match {
    let key = packet::flow::extract(data, in_port);
    let get = |f| ofproto::fields::get(&key, f);
    let mut m = Match::new()
        .with(Field::InPort, u128::from(in_port))
        .with(Field::EthType, get(Field::EthType));
    let present = u128::from(openflow::oxm::OFPVID_PRESENT);
    if get(Field::VlanVid) & present != 0 {
        m = m.with_masked(Field::VlanVid, present, present);
    }
    if matches!(
        key.dl_type,
        packet::flow::ETH_TYPE_IPV4 | packet::flow::ETH_TYPE_IPV6
    ) {
        m = m.with(Field::IpProto, get(Field::IpProto));
        if key.dl_type == packet::flow::ETH_TYPE_IPV6 && key.nw_proto == 58 {
            m = m.with(Field::Icmpv6Type, get(Field::Icmpv6Type));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::packet_match;
    use openflow::oxm::Field;

    fn frame(ethertype: [u8; 2], rest: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(rest);
        f
    }

    #[test]
    fn the_packet_sets_the_prerequisites() {
        // IPv4 ICMP echo.
        let mut ip = vec![
            0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        ip.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0]);
        let m = packet_match(&frame([0x08, 0x00], &ip), 0xffff_fffd);
        assert_eq!(m.exact(Field::EthType), Some(0x0800));
        assert_eq!(m.exact(Field::IpProto), Some(1));
        assert!(m.prereqs_met_deep(Field::Ipv4Dst) && !m.prereqs_met_deep(Field::TcpSrc));
        // ARP: no IP fields.
        let m = packet_match(&frame([0x08, 0x06], &[0u8; 28]), 1);
        assert!(!m.prereqs_met_deep(Field::Ipv4Dst) && m.prereqs_met_deep(Field::ArpSpa));
    }
}
