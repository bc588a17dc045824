//! What a select group does to the rest of the pipeline, as in OVS.
//!
//! OVS 3.1 picks a select group's bucket by the datapath's hash of the packet: unless the
//! controller chose another method, or the bucket weights need more than 256 hash slots, the
//! first select group a packet meets ends the datapath pass with `hash(sym_l4(0))` and a
//! `recirc`, and the rest of the translation (the group itself, every action after it at
//! every resubmit level, the action set) runs on the recirculated packet, which the
//! datapath *parses again*. Usually the new parse finds what the translation already
//! tracked, but not always: with `vlan-limit` (default 1) the parse sees only that many
//! tags, so a packet that was given more tags than the limit loses sight of the rest (its
//! EtherType becomes the next tag's TPID, its L3 and L4 fields vanish), and a packet whose
//! unparsed inner tag was uncovered by a pop shows that tag and what follows it.
//!
//! ferrovs does not recirculate for a select group; it translates on and applies the same
//! re-parse to the flow at the same point ([`Ctx::select_reparse`]), so every later lookup
//! and rewrite sees what OVS's would. A deeper stack than the limit is cut from the flow
//! alone (the result stays cacheable: the tags are exact in the megaflow after a push). An
//! inner tag uncovered by a pop is not in the flow, so that case parses the packet's bytes
//! and the result is not cached. As in OVS only the first select group of a pass
//! re-parses (the hash is then known); a group bucket is a copy of the packet, so a
//! re-parse inside one ends with the bucket.
//!
//! Threading: runs inside one translation; no shared state.

use super::Ctx;
use openflow::{Bucket, Field};
use packet::flow::{self, VLAN_PRESENT};

/// The most hash slots OVS gives a select group's dp_hash table; weights needing more
/// make it fall back to hashing the flow in the translation, with no recirculation.
const MAX_HASH_SLOTS: u64 = 256;

/// True when OVS selects among `buckets` by the datapath hash (so it recirculates first):
/// some bucket, a non-zero total weight, and at most [`MAX_HASH_SLOTS`] slots for the
/// weights, the slot count being the next power of two of the larger of total/least
/// weight and four per bucket (capped at the maximum), and at least 16.
pub(super) fn selects_by_dp_hash(buckets: &[Bucket]) -> bool {
    let total: u64 = buckets.iter().map(|b| u64::from(b.weight)).sum();
    let Some(least) = buckets.iter().map(|b| b.weight).filter(|w| *w > 0).min() else {
        return false;
    };
    if total == 0 {
        return false;
    }
    let by_weight = total.div_ceil(u64::from(least));
    let per_bucket = (buckets.len() as u64 * 4).min(MAX_HASH_SLOTS);
    let slots = by_weight.max(per_bucket).next_power_of_two().max(16);
    slots <= MAX_HASH_SLOTS
}

impl Ctx<'_> {
    /// The packet as OVS's recirculation before a select group would parse it again (see
    /// the module documentation). Called once per pass, before the bucket is chosen.
    pub(super) fn select_reparse(&mut self) {
        self.dp_hashed = true;
        let limit = flow::vlan_limit();
        let tracked = self
            .flow
            .vlan_tci
            .iter()
            .take_while(|t| **t & VLAN_PRESENT != 0)
            .count();
        let hidden = matches!(
            self.flow.dl_type,
            flow::ETH_TYPE_VLAN | flow::ETH_TYPE_VLAN_8021AD
        );
        self.unwild(Field::EthType);
        self.wc.vlan_tci = [0xffff, 0xffff];
        self.wc.vlan_tpid = [0xffff, 0xffff];
        if tracked > limit {
            // Tags beyond the limit become payload: the first of them names the EtherType.
            let k = &mut self.flow;
            k.dl_type = k.vlan_tpid[limit];
            for i in limit..k.vlan_tci.len() {
                k.vlan_tci[i] = 0;
                k.vlan_tpid[i] = 0;
            }
            clear_after_l2(k);
            self.note(|| {
                format!(
                    "select group: hash and recirculate; the packet is parsed again with \
                     vlan-limit {limit}: tags after the first {limit} are payload"
                )
            });
        } else if hidden && tracked < limit {
            self.note(|| {
                "select group: hash and recirculate; the packet is parsed again, its inner \
                 tag uncovered"
                    .into()
            });
            self.reparse();
        } else {
            self.note(|| "select group: hash and recirculate".into());
        }
    }
}

/// Forgets every header after the EtherType: what the parser leaves when it stops there.
fn clear_after_l2(k: &mut flow::FlowKey) {
    k.mpls_n = 0;
    k.mpls_lse = [0; 4];
    k.pbb_isid = 0;
    k.nw_src = [0; 4];
    k.nw_dst = [0; 4];
    k.ipv6_src = [0; 16];
    k.ipv6_dst = [0; 16];
    k.ipv6_label = 0;
    k.nw_proto = 0;
    k.nw_tos = 0;
    k.nw_ttl = 0;
    k.nw_frag = 0;
    k.ipv6_exthdr = 0;
    k.tp_src = 0;
    k.tp_dst = 0;
    k.tcp_flags = 0;
    k.nd_target = [0; 16];
    k.arp_sha = [0; 6];
    k.arp_tha = [0; 6];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(w: &[u16]) -> Vec<Bucket> {
        w.iter()
            .map(|w| {
                let mut b = Bucket::new(vec![]);
                b.weight = *w;
                b
            })
            .collect()
    }

    #[test]
    fn dp_hash_unless_the_weights_need_too_many_slots() {
        assert!(selects_by_dp_hash(&weights(&[1])));
        assert!(selects_by_dp_hash(&weights(&[1, 1, 1, 1])));
        assert!(selects_by_dp_hash(&weights(&[1, 255])));
        // 1 + 256 = 257 slots for the least weight: too many.
        assert!(!selects_by_dp_hash(&weights(&[1, 256])));
        assert!(selects_by_dp_hash(&weights(&[0, 5])));
        assert!(!selects_by_dp_hash(&weights(&[0, 0])));
        assert!(!selects_by_dp_hash(&[]));
        // 100 buckets: 400 per-bucket slots are capped at 256, which fits.
        assert!(selects_by_dp_hash(&weights(&[1; 100])));
    }
}
