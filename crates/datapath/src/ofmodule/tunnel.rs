//! Tunnel metadata into the flow keys of a batch a tunnel port received.
//!
//! A tunnel port sets the same metadata on every packet it receives, so the module tests
//! the first packet of a batch and only then looks at each: the outer key and addresses
//! (IPv4 or IPv6), flags and VXLAN Group Policy go into their key fields, and Geneve options through the bridge's TLV table (the copy the
//! control plane publishes to poll threads, read without waiting) into the key's
//! tunnel-options block; the packet then keeps only the options its key holds (what OVS
//! would send on to another Geneve port). A packet whose options OVS would refuse (a mapped option of the
//! wrong length, an unmapped critical one) is dropped here and counted
//! (`bad_tunnel_options`).

use super::OpenFlow;
use ofproto::tun_md;
use packet::flow::FlowKey;
use packet::{Batch, Pool, TunMeta};

/// The key's tunnel fields from a packet's metadata, options aside (what every packet a
/// tunnel port received gets; `frameless` builds a batch's key with it too).
#[inline(always)]
pub(super) fn tun_fields(k: &mut FlowKey, t: &TunMeta) {
    k.tunnel_id = t.id;
    k.tun_src = t.src;
    k.tun_dst = t.dst;
    k.tun_ipv6_src = t.ipv6_src;
    k.tun_ipv6_dst = t.ipv6_dst;
    k.tun_flags = t.flags;
    k.tun_gbp_id = t.gbp_id;
    k.tun_gbp_flags = t.gbp_flags;
}

impl OpenFlow {
    /// Fills the tunnel fields of the batch's keys (see the module documentation).
    pub(super) fn tunnel_keys(&mut self, batch: &mut Batch, pool: &mut Pool) {
        let mut bad = 0u64;
        {
            let tlv = self.exec.udpif.tlv.load();
            for (k, p) in self.keys.iter_mut().zip(batch.packets_mut()) {
                let Some(mut t) = p.tun() else { continue };
                tun_fields(k, &t);
                if t.opts_len == 0 {
                    continue;
                }
                if tun_md::from_geneve(k, &tlv, t.opts()).is_err() {
                    // Marked for removal below: no real packet comes from port 0.
                    k.in_port = 0;
                    k.tun_opts_present = u64::MAX;
                    bad += 1;
                    continue;
                }
                // Only the mapped options go on with the packet, as in OVS.
                let mut kept = [0u8; packet::TUN_OPTS_MAX];
                let n = tun_md::to_geneve_into(k, &tlv, &mut kept);
                if kept[..n] != *t.opts() {
                    t.opts = kept;
                    t.opts_len = n as u8;
                    let _ = p.set_tun(&t);
                }
            }
        }
        if bad == 0 {
            return;
        }
        self.exec.stats.bad_tunnel_options += bad;
        let pkts: Vec<_> = batch.drain().collect();
        let mut kept = 0;
        for (i, p) in pkts.into_iter().enumerate() {
            let k = self.keys[i];
            if k.in_port == 0 && k.tun_opts_present == u64::MAX {
                pool.free(p);
                continue;
            }
            self.keys[kept] = k;
            self.offs[kept] = self.offs[i];
            kept += 1;
            // The batch just gave these up: there is room for each again.
            if let Err(p) = batch.push(p) {
                pool.free(p);
            }
        }
    }
}
