//! Groups (OpenFlow 1.3 §5.6): all, select, indirect and fast-failover.
//!
//! * `all` runs every bucket on its own copy of the packet (flooding, multicast).
//! * `select` runs one bucket, chosen by hashing the flow's Ethernet and IP addresses,
//!   EtherType, protocol and ports (so a flow always takes the same bucket, and flows that
//!   differ only in their MACs, as non-IP traffic does, still spread) and weighing buckets
//!   by `weight`; only live buckets are candidates.
//! * `indirect` has one bucket: a shared next hop that many flows point at.
//! * `fast_failover` runs the first live bucket, a bucket being live when the port it watches
//!   is up and the group it watches is live.

use openflow::{Bucket, GroupType};
use packet::flow::FlowKey;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A group's counters: atomics behind an `Arc` shared by every copy of the group (the
/// datapath credits them through a read-only snapshot, see `crate::versions`).
#[derive(Debug, Default)]
pub struct GroupStats {
    packets: AtomicU64,
    bytes: AtomicU64,
    bucket_packets: Vec<AtomicU64>,
    bucket_bytes: Vec<AtomicU64>,
}

impl GroupStats {
    fn new(n_buckets: usize) -> GroupStats {
        GroupStats {
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            bucket_packets: (0..n_buckets).map(|_| AtomicU64::new(0)).collect(),
            bucket_bytes: (0..n_buckets).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Adds `packets`/`bytes` to the group and to bucket `bucket`.
    pub fn credit(&self, bucket: usize, packets: u64, bytes: u64) {
        self.packets.fetch_add(packets, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Some(x) = self.bucket_packets.get(bucket) {
            x.fetch_add(packets, Ordering::Relaxed);
        }
        if let Some(x) = self.bucket_bytes.get(bucket) {
            x.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// (packets, bytes) of the whole group.
    pub fn get(&self) -> (u64, u64) {
        (
            self.packets.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// (packets, bytes) of each bucket, in bucket order.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.bucket_packets
            .iter()
            .zip(&self.bucket_bytes)
            .map(|(p, b)| (p.load(Ordering::Relaxed), b.load(Ordering::Relaxed)))
            .collect()
    }
}

/// One installed group and its counters (shared by its copies: cloning a group keeps them).
#[derive(Clone, Debug)]
pub struct Group {
    pub id: u32,
    pub kind: GroupType,
    pub buckets: Vec<Bucket>,
    pub created_ms: u64,
    pub stats: Arc<GroupStats>,
}

impl Group {
    /// A group created at `now_ms`. Buckets whose ids are not distinct (every bucket of an
    /// OpenFlow 1.1-1.4 group_mod has id 0) are numbered by position.
    pub fn new(id: u32, kind: GroupType, mut buckets: Vec<Bucket>, now_ms: u64) -> Group {
        let mut seen = std::collections::HashSet::new();
        if !buckets.iter().all(|b| seen.insert(b.bucket_id)) {
            for (i, b) in buckets.iter_mut().enumerate() {
                b.bucket_id = i as u32;
            }
        }
        let n = buckets.len();
        Group {
            id,
            kind,
            buckets,
            created_ms: now_ms,
            stats: Arc::new(GroupStats::new(n)),
        }
    }

    /// Every group this group's buckets send to.
    pub fn chained(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().flat_map(|b| {
            b.actions.iter().filter_map(|a| match a {
                openflow::Action::Group(g) => Some(*g),
                _ => None,
            })
        })
    }
}

/// The select hash of a flow: Ethernet and IP addresses, EtherType, protocol and ports (both
/// IPv4 and IPv6 slots, so the caller must unwildcard the same fields, see
/// [`SELECT_FIELDS`]).
pub fn select_hash(k: &FlowKey) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |b: &[u8]| {
        for x in b {
            h ^= u64::from(*x);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    mix(&k.dl_src);
    mix(&k.dl_dst);
    mix(&k.nw_src);
    mix(&k.nw_dst);
    mix(&k.ipv6_src);
    mix(&k.ipv6_dst);
    mix(&[k.nw_proto]);
    mix(&k.tp_src.to_be_bytes());
    mix(&k.tp_dst.to_be_bytes());
    mix(&k.dl_type.to_be_bytes());
    (h ^ (h >> 32)) as u32
}

/// The fields [`select_hash`] reads.
pub const SELECT_FIELDS: &[openflow::Field] = &[
    openflow::Field::EthSrc,
    openflow::Field::EthDst,
    openflow::Field::EthType,
    openflow::Field::Ipv4Src,
    openflow::Field::Ipv4Dst,
    openflow::Field::Ipv6Src,
    openflow::Field::Ipv6Dst,
    openflow::Field::IpProto,
    openflow::Field::TcpSrc,
    openflow::Field::TcpDst,
];

/// Picks a bucket index among `live` ones by weight, from `hash`.
pub fn pick_weighted(buckets: &[Bucket], live: &[bool], hash: u32) -> Option<usize> {
    let total: u64 = buckets
        .iter()
        .zip(live)
        .filter(|(_, l)| **l)
        .map(|(b, _)| u64::from(b.weight.max(1)))
        .sum();
    if total == 0 {
        return None;
    }
    // Scale the hash into [0, total) without modulo bias for small totals.
    let mut point = (u64::from(hash) * total) >> 32;
    for (i, (b, l)) in buckets.iter().zip(live).enumerate() {
        if !*l {
            continue;
        }
        let w = u64::from(b.weight.max(1));
        if point < w {
            return Some(i);
        }
        point -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_pick_follows_weights() {
        let mut a = Bucket::new(vec![]);
        a.weight = 1;
        let mut b = Bucket::new(vec![]);
        b.weight = 3;
        let buckets = [a, b];
        let mut counts = [0u32; 2];
        for i in 0..40_000u32 {
            let h = i.wrapping_mul(0x9e37_79b9);
            counts[pick_weighted(&buckets, &[true, true], h).expect("bucket")] += 1;
        }
        let ratio = f64::from(counts[1]) / f64::from(counts[0]);
        assert!((2.7..3.3).contains(&ratio), "{counts:?}");
        assert_eq!(pick_weighted(&buckets, &[false, true], 7), Some(1));
        assert_eq!(pick_weighted(&buckets, &[false, false], 7), None);
    }

    #[test]
    fn select_hash_spreads_flows_that_differ_only_in_macs() {
        let buckets = [Bucket::new(vec![]), Bucket::new(vec![])];
        let mut counts = [0u32; 2];
        let mut k = FlowKey::ZERO;
        k.dl_type = packet::flow::ETH_TYPE_ARP;
        for i in 0..1000u32 {
            let b = i.wrapping_mul(0x9e37_79b9).to_be_bytes();
            k.dl_src = [2, b[0], b[1], b[2], b[3], 1];
            k.dl_dst = [b[3], b[2], b[1], b[0], 7, 9];
            let h = select_hash(&k);
            assert_eq!(
                h,
                select_hash(&k),
                "the same flow always takes the same bucket"
            );
            counts[pick_weighted(&buckets, &[true, true], h).expect("bucket")] += 1;
        }
        assert!(counts.iter().all(|c| (400..600).contains(c)), "{counts:?}");
    }
}
