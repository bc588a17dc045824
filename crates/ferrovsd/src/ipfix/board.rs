//! The exporters' statistics as OpenFlow reports them (`NXST_IPFIX_BRIDGE`,
//! `NXST_IPFIX_FLOW`, `ovs-ofctl dump-ipfix-bridge` / `dump-ipfix-flow`).
//!
//! [`Board`] holds, per bridge, the counters of its own exporter (when its `ipfix` column
//! names a usable row) and of each of its flow collector sets. [`super::Ipfix::configure`]
//! says which exist; the exporter thread counts into them ([`Counters`], atomics shared
//! through `Arc`s); the OpenFlow connections read them. A bridge's counters start at 0 when
//! its exporter is configured and go with it, as OVS's do.
//!
//! What is counted, per exporter: packets sampled, of them IPv4 and IPv6; sampled frames
//! too short or malformed to make a record (`error_pkts`: ferrovs cannot tell their IP
//! version apart, so the per-version error counts stay 0); flow records made (`flows`: one
//! per sample without a cache, one per new cache entry with one), records in the cache now;
//! IPFIX messages sent and those a socket refused.

use openflow::wire::multipart::IpfixStats;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One exporter's counters.
#[derive(Debug, Default)]
pub struct Counters {
    pub flows: AtomicU64,
    pub current_flows: AtomicU64,
    pub pkts: AtomicU64,
    pub ipv4_pkts: AtomicU64,
    pub ipv6_pkts: AtomicU64,
    pub error_pkts: AtomicU64,
    pub tx_pkts: AtomicU64,
    pub tx_errors: AtomicU64,
}

impl Counters {
    /// Adds one to `c`.
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters as a reply record for collector set `set` (0 for the bridge's).
    pub fn report(&self, set: u32) -> IpfixStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IpfixStats {
            total_flows: g(&self.flows),
            current_flows: g(&self.current_flows),
            pkts: g(&self.pkts),
            ipv4_pkts: g(&self.ipv4_pkts),
            ipv6_pkts: g(&self.ipv6_pkts),
            error_pkts: g(&self.error_pkts),
            ipv4_error_pkts: 0,
            ipv6_error_pkts: 0,
            tx_pkts: g(&self.tx_pkts),
            tx_errors: g(&self.tx_errors),
            collector_set_id: set,
        }
    }
}

/// One bridge's exporters.
#[derive(Default)]
struct BridgeEntry {
    bridge: Option<Arc<Counters>>,
    sets: BTreeMap<u32, Arc<Counters>>,
}

/// Every bridge's exporters' counters. See the module documentation.
#[derive(Default)]
pub struct Board {
    bridges: Mutex<HashMap<String, BridgeEntry>>,
}

impl Board {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BridgeEntry>> {
        self.bridges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counters of `bridge`'s own exporter, made when it had none; `None` removes them.
    pub fn set_bridge(&self, bridge: &str, on: bool) -> Option<Arc<Counters>> {
        let mut g = self.lock();
        let e = g.entry(bridge.to_string()).or_default();
        if !on {
            e.bridge = None;
            return None;
        }
        Some(Arc::clone(e.bridge.get_or_insert_with(Arc::default)))
    }

    /// `bridge`'s flow collector sets become `sets`: counters kept for sets that stay,
    /// made for new ones; returned by set id.
    pub fn set_sets(&self, bridge: &str, sets: &[u32]) -> BTreeMap<u32, Arc<Counters>> {
        let mut g = self.lock();
        let e = g.entry(bridge.to_string()).or_default();
        let mut old = std::mem::take(&mut e.sets);
        for id in sets {
            let c = old.remove(id).unwrap_or_default();
            e.sets.insert(*id, c);
        }
        e.sets.clone()
    }

    /// `bridge`'s own exporter's statistics, `None` if it has none.
    pub fn bridge_stats(&self, bridge: &str) -> Option<IpfixStats> {
        let g = self.lock();
        g.get(bridge)?.bridge.as_ref().map(|c| c.report(0))
    }

    /// `bridge`'s flow collector sets' statistics, by set id; `None` if it has none.
    pub fn flow_stats(&self, bridge: &str) -> Option<Vec<IpfixStats>> {
        let g = self.lock();
        let e = g.get(bridge)?;
        (!e.sets.is_empty()).then(|| e.sets.iter().map(|(id, c)| c.report(*id)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_live_as_long_as_their_exporter() {
        let b = Board::default();
        assert_eq!(b.bridge_stats("br0"), None);
        let c = b.set_bridge("br0", true).expect("counters");
        Counters::inc(&c.pkts);
        assert_eq!(b.bridge_stats("br0").map(|s| s.pkts), Some(1));
        // Configured again: the same counters.
        let again = b.set_bridge("br0", true).expect("counters");
        assert!(Arc::ptr_eq(&c, &again));
        b.set_bridge("br0", false);
        assert_eq!(b.bridge_stats("br0"), None);
        assert_eq!(b.set_bridge("br0", true).map(|c| c.report(0).pkts), Some(0));
    }

    #[test]
    fn flow_sets_are_reported_by_id() {
        let b = Board::default();
        assert_eq!(b.flow_stats("br0"), None);
        let sets = b.set_sets("br0", &[9, 2]);
        Counters::inc(&sets[&9].tx_pkts);
        let got = b.flow_stats("br0").expect("sets");
        assert_eq!(
            got.iter()
                .map(|s| (s.collector_set_id, s.tx_pkts))
                .collect::<Vec<_>>(),
            vec![(2, 0), (9, 1)]
        );
        let kept = b.set_sets("br0", &[9]);
        assert!(Arc::ptr_eq(&kept[&9], &sets[&9]));
        b.set_sets("br0", &[]);
        assert_eq!(b.flow_stats("br0"), None);
    }
}
