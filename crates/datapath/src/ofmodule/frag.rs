//! A fragment at a `ct` action: held for reassembly, and the datagram's fragments sent on
//! with its verdict (see `crate::ipf` for the lists, the buffers and NAT).
//!
//! The action loop (`Exec::execute_from`) hands a packet whose key says fragment to
//! [`Exec::ct_fragment`] at a `ct`; the batch loop sends fragments to that loop instead of
//! the `[ct, recirc]` run (`ctrun`), so unfragmented packets pay one test of `nw_frag`. A
//! held fragment stops there; one reassembly refuses (too small, overlapping, over a
//! limit) is tracked as it is, `+inv`, and goes on, as in OVS. The fragment that completes
//! its datagram has the reassembled datagram tracked once, with the action's request (NAT
//! included); then every fragment of the datagram, by offset (the first fragment first, as
//! OVS sends them), runs the actions after that `ct` with the datagram's verdict, from its
//! own key and ingress port: a `recirc` re-injects each with the datagram's `ct_state`,
//! zone, mark, label and original tuple.

use super::exec::{last_send, Exec};
use crate::ipf::{ipf, translate, Held};
use crate::module::Delivery;
use conntrack::{CtResult, IpfVerdict, PacketMeta};
use ofproto::odp::DpAction;
use ofproto::odp_ct::CtAction;
use packet::flow::{FlowKey, Offsets};
use packet::{Packet, Pool};

impl Exec {
    /// The `ct` action `c` on the fragment `pkt` (pass key `key`, offsets `layers` when
    /// they still describe it), `tail` the actions after the `ct`. `Some(pkt)` when its
    /// family is not reassembled or reassembly refused it: the caller tracks it as it is
    /// (`+inv`); `None` when it was taken (held, or sent on with its datagram).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    pub(super) fn ct_fragment(
        &mut self,
        now_ms: u64,
        in_slot: u16,
        key: &FlowKey,
        layers: Option<Offsets>,
        c: &CtAction,
        tail: &[DpAction],
        pkt: Packet,
        pool: &mut Pool,
        out: &mut Delivery<'_>,
    ) -> Option<Packet> {
        let lists = ipf();
        // The key and offsets of the packet as it is now (an earlier action may have
        // rewritten it).
        let mut fresh = FlowKey::ZERO;
        let (k, offs) = match layers {
            Some(o) => (key, o),
            None => {
                let o = crate::ct::recirc_key_fresh(&mut fresh, &pkt, key, key.recirc_id, None);
                (&fresh, o)
            }
        };
        let Some(meta) = PacketMeta::from_flow(k, &offs).filter(|m| m.frag) else {
            return Some(pkt);
        };
        if !lists.enabled(meta.v6) {
            return Some(pkt);
        }
        let held = Held::of(&pkt, k, offs, in_slot);
        let req = c.request();
        match lists.add(pkt.data(), &meta, req.zone, held, now_ms) {
            IpfVerdict::NotFragment(_) => Some(pkt),
            IpfVerdict::Held => {
                // The copy is held: the buffer goes back to this thread's pool.
                pool.free(pkt);
                None
            }
            IpfVerdict::Dropped(list) => {
                // Refused (too small, overlapping, over a limit): as OVS, the fragment goes
                // to the tracker as it is, `+inv`, and on with that verdict. `pkt` is the
                // last of `list`; the others (a datagram that did not parse once whole)
                // were copies, dropped here.
                self.stats.ipf_dropped += list.len().saturating_sub(1) as u64;
                Some(pkt)
            }
            IpfVerdict::Complete(r) => {
                pool.free(pkt);
                let mut whole = r.frame;
                let mut res = CtResult::default();
                crate::ct::tracker().execute_one_cached(
                    &mut self.ct_cache,
                    &mut whole,
                    Some(&r.meta),
                    &req,
                    now_ms,
                    &mut res,
                );
                self.stats.ct_executions += 1;
                if res.resize != 0 {
                    // An FTP message in a fragmented segment, rewritten under NAT to
                    // another length: the fragments cannot carry that, so they are dropped.
                    crate::ct::resize_vec(&mut whole, res.resize);
                    self.stats.ipf_dropped += r.fragments.len() as u64;
                    return None;
                }
                let translated = !crate::ct::left_bytes(c, &res);
                let send = last_send(tail);
                for h in r.fragments {
                    let Some(mut p) = h.rebuild(pool) else {
                        self.stats.ipf_dropped += 1;
                        continue;
                    };
                    let layers = if translated {
                        if !translate(&mut p, &h, &whole, &r.meta) {
                            self.stats.ipf_dropped += 1;
                            out.drop_packet(p, pool);
                            continue;
                        }
                        None
                    } else {
                        Some(h.offs)
                    };
                    self.execute_from(
                        now_ms,
                        h.in_slot,
                        &h.key,
                        layers,
                        tail,
                        Some(send),
                        Some(res),
                        p,
                        pool,
                        out,
                    );
                }
                None
            }
        }
    }
}
