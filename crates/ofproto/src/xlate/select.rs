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
//! The bucket is then chosen as OVS's is: by [`sym_l4_hash`] (OVS's `hash(sym_l4(0))` of
//! the re-parsed packet, reproduced bit for bit) into the group's hash slots, dealt to the
//! buckets by weight ([`hash_slots`]), the first live bucket from that slot on. A group
//! whose weights need too many slots hashes the flow without recirculating in OVS; ferrovs
//! then uses its own hash ([`crate::group::select_hash`]), so the two may pick differently.
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
        self.reparse_tags(limit, tracked, hidden);
        // The datapath's hash of the packet as parsed again: what picks the bucket.
        self.wc.nw_frag = 0xff;
        for f in HASHED {
            self.unwild(*f);
        }
        self.flow.dp_hash = sym_l4_hash(&self.flow);
        let h = self.flow.dp_hash;
        self.note(|| format!("dp_hash {h:#010x}"));
    }

    fn reparse_tags(&mut self, limit: usize, tracked: usize, hidden: bool) {
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

/// The fields [`sym_l4_hash`] reads (and so the megaflow must match).
const HASHED: &[Field] = &[
    Field::EthSrc,
    Field::EthDst,
    Field::EthType,
    Field::Ipv4Src,
    Field::Ipv4Dst,
    Field::Ipv6Src,
    Field::Ipv6Dst,
    Field::IpProto,
    Field::TcpSrc,
    Field::TcpDst,
];

/// One step of OVS's generic (murmur3-style) word hash, `hash_add`.
fn hash_add(h: u32, data: u32) -> u32 {
    let h = if data == 0 {
        h
    } else {
        let d = data.wrapping_mul(0xcc9e_2d51).rotate_left(15);
        h ^ d.wrapping_mul(0x1b87_3593)
    };
    h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

/// OVS's `hash_add64`: the low word, then the high word.
fn hash_add64(h: u32, data: u64) -> u32 {
    hash_add(hash_add(h, data as u32), (data >> 32) as u32)
}

/// OVS's `hash_finish`.
fn hash_finish(h: u32, fin: u32) -> u32 {
    let mut h = h ^ fin;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// A word as OVS's hash sees it: bytes in memory order, read on a little-endian machine.
fn word(b: [u8; 4]) -> u32 {
    u32::from_le_bytes(b)
}

/// The datapath hash OVS's select groups use, `hash(sym_l4(0))`: symmetric in source and
/// destination; for IPv4 and IPv6 the addresses, the protocol and (TCP and SCTP only, not
/// fragments) the ports; for anything else the Ethernet addresses, the VLAN IDs and the
/// EtherType. Bit-exact with OVS 3.1's generic build (Debian's), so a flow takes the same
/// bucket in both switches.
pub(super) fn sym_l4_hash(k: &flow::FlowKey) -> u32 {
    let mut h = 0u32;
    match k.dl_type {
        flow::ETH_TYPE_IPV4 => {
            h = hash_add(h, word(k.nw_src) ^ word(k.nw_dst));
        }
        flow::ETH_TYPE_IPV6 => {
            for i in 0..2 {
                let part = |a: &[u8; 16]| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&a[i * 8..i * 8 + 8]);
                    u64::from_le_bytes(w)
                };
                h = hash_add64(h, part(&k.ipv6_src) ^ part(&k.ipv6_dst));
            }
        }
        _ => return sym_l2_hash(k),
    }
    h = hash_add(h, u32::from(k.nw_proto));
    if k.nw_frag == 0 && matches!(k.nw_proto, 6 | 132) {
        let ports = (k.tp_src ^ k.tp_dst).swap_bytes();
        h = hash_add(h, u32::from(ports));
    }
    hash_finish(h, 0)
}

/// OVS's symmetric L2 hash: EtherType, the XOR of the tags' VLAN IDs, the XOR of the
/// Ethernet addresses, as three words in that memory layout.
fn sym_l2_hash(k: &flow::FlowKey) -> u32 {
    let vid = (k.vlan_tci[0] ^ k.vlan_tci[1]) & 0x0fff;
    let mut mac = [0u8; 6];
    for (i, m) in mac.iter_mut().enumerate() {
        *m = k.dl_src[i] ^ k.dl_dst[i];
    }
    let t = k.dl_type.to_be_bytes();
    let v = vid.to_be_bytes();
    let mut h = hash_add(0, word([t[0], t[1], v[0], v[1]]));
    h = hash_add(h, word([mac[0], mac[1], mac[2], mac[3]]));
    h = hash_add(h, word([mac[4], mac[5], 0, 0]));
    hash_finish(h, 0)
}

/// Which bucket each of a dp_hash group's hash slots goes to (OVS's Webster apportionment
/// of the slots by weight; the slot count as [`selects_by_dp_hash`] describes). Slot
/// `dp_hash & (len - 1)` is tried first, then the following ones, for a live bucket.
pub(super) fn hash_slots(buckets: &[Bucket]) -> Vec<usize> {
    let total: u64 = buckets.iter().map(|b| u64::from(b.weight)).sum();
    let least = buckets
        .iter()
        .map(|b| b.weight)
        .filter(|w| *w > 0)
        .min()
        .unwrap_or(1);
    let by_weight = total.div_ceil(u64::from(least));
    let per_bucket = (buckets.len() as u64 * 4).min(MAX_HASH_SLOTS);
    let n = by_weight.max(per_bucket).next_power_of_two().max(16);
    let mut divisor: Vec<u32> = vec![1; buckets.len()];
    let mut value: Vec<f64> = buckets.iter().map(|b| f64::from(b.weight)).collect();
    let mut slots = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut win = 0;
        for i in 1..buckets.len() {
            if value[i] > value[win] {
                win = i;
            }
        }
        divisor[win] += 2;
        value[win] = f64::from(buckets[win].weight) / f64::from(divisor[win]);
        slots.push(win);
    }
    slots
}

/// Forgets every header after the EtherType: what the parser leaves when it stops there.
pub(super) fn clear_after_l2(k: &mut flow::FlowKey) {
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

    #[test]
    fn slots_follow_the_weights() {
        // Equal weights: 16 slots dealt in turn.
        let s = hash_slots(&weights(&[1, 1, 1]));
        assert_eq!(s.len(), 16);
        assert_eq!(&s[..6], &[0, 1, 2, 0, 1, 2]);
        let s = hash_slots(&weights(&[3, 1]));
        assert_eq!(s.len(), 16);
        assert_eq!(s.iter().filter(|b| **b == 0).count(), 12);
    }

    #[test]
    fn the_hash_is_symmetric_and_reads_ports_only_for_tcp() {
        let mut k = flow::FlowKey::ZERO;
        k.dl_type = flow::ETH_TYPE_IPV4;
        k.nw_proto = 6;
        k.nw_src = [10, 0, 0, 1];
        k.nw_dst = [10, 0, 0, 2];
        k.tp_src = 1234;
        k.tp_dst = 80;
        let a = sym_l4_hash(&k);
        let mut r = k;
        r.nw_src = k.nw_dst;
        r.nw_dst = k.nw_src;
        r.tp_src = k.tp_dst;
        r.tp_dst = k.tp_src;
        assert_eq!(a, sym_l4_hash(&r), "both directions hash alike");
        r.tp_dst = 81;
        assert_ne!(a, sym_l4_hash(&r));
        // UDP: ports are not hashed.
        k.nw_proto = 17;
        let u = sym_l4_hash(&k);
        k.tp_dst = 53;
        assert_eq!(u, sym_l4_hash(&k));
    }
}
