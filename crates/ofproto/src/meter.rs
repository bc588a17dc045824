//! Meters: per-flow rate limiting with drop and DSCP-remark bands (OpenFlow 1.3 §5.7).
//!
//! A meter has bands, each with a rate (kilobits per second, or packets per second when the
//! meter has the PKTPS flag) and a burst size (kilobits or packets; when the BURST flag is not
//! set the burst is one second at the band's rate). Each band measures the packets offered to
//! the meter with its own token bucket: tokens accrue at the band's rate up to the burst, and a
//! packet that finds too few tokens *exceeds* the band. The band applied to a packet is the one
//! with the highest rate among those it exceeded (the spec's rule); if it exceeded none, it
//! passes untouched. A `drop` band drops; a `dscp_remark` band raises the drop precedence of
//! the packet's DSCP by `prec_level` (AF classes: the precedence is bits 1-2 of the DSCP).
//!
//! Time is an argument (microseconds, monotonic), never read here.
//!
//! ## Threads
//! A [`LiveMeter`] is run by every poll thread whose packets hit it, at the same time, and
//! read by the control plane for statistics: its buckets and counters are atomics, and
//! [`LiveMeter::apply`] takes no lock. Time is credited once: the thread that moves the
//! meter's clock forward adds the tokens for that interval, every other thread adds none
//! for it. Each band's bucket is refilled and charged in one compare-and-swap, so tokens are
//! never created or lost between threads; a packet's choice among several bands reads each
//! band once, so two threads may see bands at slightly different moments (as two packets a
//! few nanoseconds apart would).
//!
//! The configuration of a live meter never changes: a modify builds a new one that carries
//! the meter's counters over (bands start with full buckets and zero counts, as the bands
//! are new), and the switch publishes it in its shard of the set (see [`MeterTable`]). A thread still
//! running the old meter for the packet in hand counts that packet there.
//!
//! [`Meter`] is a plain snapshot of a live meter, for statistics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;

/// What a band does to the packets it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandKind {
    Drop,
    DscpRemark { prec_level: u8 },
}

/// One band's configuration and a snapshot of its counters.
#[derive(Clone, Debug)]
pub struct Band {
    pub kind: BandKind,
    /// kbit/s or packets/s.
    pub rate: u32,
    /// kbit or packets.
    pub burst: u32,
    pub packet_count: u64,
    pub byte_count: u64,
}

/// What the meter decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Drop,
    Remark { prec_level: u8 },
}

/// A snapshot of a meter: its configuration and counters.
#[derive(Clone, Debug)]
pub struct Meter {
    pub id: u32,
    pub pktps: bool,
    pub burst_flag: bool,
    pub stats_flag: bool,
    pub bands: Vec<Band>,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub created_us: u64,
}

impl Band {
    /// A band's configuration (a full bucket once it is part of a live meter).
    pub fn new(kind: BandKind, rate: u32, burst: u32, burst_flag: bool) -> Band {
        let burst = if burst_flag && burst > 0 { burst } else { rate };
        Band {
            kind,
            rate,
            burst,
            packet_count: 0,
            byte_count: 0,
        }
    }
}

/// One band of a live meter: its configuration, bucket and counters.
#[derive(Debug)]
struct LiveBand {
    kind: BandKind,
    rate: u32,
    burst: u32,
    /// Tokens in thousandths of a bit (kbps) or of a packet (pktps).
    tokens: AtomicU64,
    packet_count: AtomicU64,
    byte_count: AtomicU64,
}

impl LiveBand {
    fn new(b: &Band) -> LiveBand {
        LiveBand {
            kind: b.kind,
            rate: b.rate,
            burst: b.burst,
            tokens: AtomicU64::new(u64::from(b.burst) * 1000),
            packet_count: AtomicU64::new(0),
            byte_count: AtomicU64::new(0),
        }
    }

    fn capacity(&self) -> u64 {
        u64::from(self.burst).max(1) * 1000
    }

    /// Adds `add` tokens (up to the burst) and takes `cost` if that many are there; true if
    /// they were.
    #[inline]
    fn refill_and_take(&self, add: u64, cost: u64) -> bool {
        let cap = self.capacity();
        let mut cur = self.tokens.load(Ordering::Relaxed);
        loop {
            let full = cur.saturating_add(add).min(cap);
            let (next, ok) = if full >= cost {
                (full - cost, true)
            } else {
                (full, false)
            };
            match self
                .tokens
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return ok,
                Err(seen) => cur = seen,
            }
        }
    }
}

/// A meter as the datapath runs it (see the module documentation).
#[derive(Debug)]
pub struct LiveMeter {
    pub id: u32,
    pub pktps: bool,
    pub burst_flag: bool,
    pub stats_flag: bool,
    bands: Vec<LiveBand>,
    last_us: AtomicU64,
    packet_in_count: AtomicU64,
    byte_in_count: AtomicU64,
    pub created_us: u64,
}

impl LiveMeter {
    /// A meter created at `now_us`, every bucket full.
    pub fn new(
        id: u32,
        pktps: bool,
        burst_flag: bool,
        stats_flag: bool,
        bands: &[Band],
        now_us: u64,
    ) -> LiveMeter {
        LiveMeter {
            id,
            pktps,
            burst_flag,
            stats_flag,
            bands: bands.iter().map(LiveBand::new).collect(),
            last_us: AtomicU64::new(now_us),
            packet_in_count: AtomicU64::new(0),
            byte_in_count: AtomicU64::new(0),
            created_us: now_us,
        }
    }

    /// This meter reconfigured (a modify): new bands with full buckets, the meter's own
    /// counters and creation time carried over.
    pub fn reconfigured(
        &self,
        pktps: bool,
        burst_flag: bool,
        stats_flag: bool,
        bands: &[Band],
        now_us: u64,
    ) -> LiveMeter {
        let m = LiveMeter::new(self.id, pktps, burst_flag, stats_flag, bands, now_us);
        m.packet_in_count.store(
            self.packet_in_count.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        m.byte_in_count.store(
            self.byte_in_count.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        LiveMeter {
            created_us: self.created_us,
            ..m
        }
    }

    /// Offers one packet of `len` bytes at `now_us`. Lock-free; safe from any number of
    /// threads at once.
    pub fn apply(&self, len: usize, now_us: u64) -> Verdict {
        // The thread that moves the clock forward gets the tokens for the interval.
        let prev = self.last_us.fetch_max(now_us, Ordering::Relaxed);
        let dt_us = now_us.saturating_sub(prev);
        self.packet_in_count.fetch_add(1, Ordering::Relaxed);
        self.byte_in_count.fetch_add(len as u64, Ordering::Relaxed);
        // Cost in thousandths of the band's unit: bits*1000/1000 for kbps (a kbit is 1000
        // bits, tokens are thousandths of a kbit = bits), 1000 per packet for pktps.
        let cost = if self.pktps { 1000 } else { len as u64 * 8 };
        let mut chosen: Option<(usize, u32)> = None;
        for (i, b) in self.bands.iter().enumerate() {
            // rate units per second -> thousandths per microsecond: rate * 1000 / 1e6.
            let add = (u128::from(b.rate) * u128::from(dt_us) / 1000) as u64;
            if !b.refill_and_take(add, cost) && chosen.is_none_or(|(_, r)| r < b.rate) {
                chosen = Some((i, b.rate));
            }
        }
        let Some(b) = chosen.and_then(|(i, _)| self.bands.get(i)) else {
            return Verdict::Pass;
        };
        b.packet_count.fetch_add(1, Ordering::Relaxed);
        b.byte_count.fetch_add(len as u64, Ordering::Relaxed);
        match b.kind {
            BandKind::Drop => Verdict::Drop,
            BandKind::DscpRemark { prec_level } => Verdict::Remark { prec_level },
        }
    }

    /// A snapshot of the configuration and counters.
    pub fn snapshot(&self) -> Meter {
        Meter {
            id: self.id,
            pktps: self.pktps,
            burst_flag: self.burst_flag,
            stats_flag: self.stats_flag,
            bands: self
                .bands
                .iter()
                .map(|b| Band {
                    kind: b.kind,
                    rate: b.rate,
                    burst: b.burst,
                    packet_count: b.packet_count.load(Ordering::Relaxed),
                    byte_count: b.byte_count.load(Ordering::Relaxed),
                })
                .collect(),
            packet_in_count: self.packet_in_count.load(Ordering::Relaxed),
            byte_in_count: self.byte_in_count.load(Ordering::Relaxed),
            created_us: self.created_us,
        }
    }
}

/// Some of the meters of one switch as the datapath sees them (one shard of a
/// [`MeterTable`]).
pub type MeterMap = HashMap<u32, Arc<LiveMeter>>;

/// Shards of a [`MeterTable`]: a meter change copies one shard's map, so publishing it
/// costs O(meters / `METER_SHARDS`) (at most a few hundred entries at the bridge's limit of
/// 262,144 meters), not O(meters).
const METER_SHARDS: usize = 1024;

/// The shard of meter `id`: Fibonacci hashing, so consecutive ids spread over the shards.
#[inline]
fn shard(id: u32) -> usize {
    (id.wrapping_mul(0x9E37_79B9) >> (32 - METER_SHARDS.trailing_zeros())) as usize
}

/// A cloneable, `Send + Sync` handle to the published meters (see the module
/// documentation): the switch republishes the one shard a meter change touches, and readers
/// load a shard without a lock or an allocation. An empty shard holds nothing.
#[derive(Clone)]
pub struct MeterTable {
    shards: Arc<[ArcSwapOption<MeterMap>]>,
}

impl Default for MeterTable {
    fn default() -> Self {
        MeterTable {
            shards: (0..METER_SHARDS)
                .map(|_| ArcSwapOption::const_empty())
                .collect(),
        }
    }
}

impl MeterTable {
    /// Runs meter `id` on a packet; a meter that no longer exists passes it.
    #[inline]
    pub fn apply(&self, id: u32, len: usize, now_us: u64) -> Verdict {
        let Some(s) = self.shards.get(shard(id)) else {
            return Verdict::Pass;
        };
        match s.load().as_deref().and_then(|m| m.get(&id)) {
            Some(m) => m.apply(len, now_us),
            None => Verdict::Pass,
        }
    }

    /// The published meter `id`, if any.
    pub fn get(&self, id: u32) -> Option<Arc<LiveMeter>> {
        let s = self.shards.get(shard(id))?;
        s.load().as_deref().and_then(|m| m.get(&id)).cloned()
    }

    /// Publishes meter `id` as `meter`, or its removal (the switch's side; one writer at a
    /// time): copies that meter's shard only.
    pub fn set(&self, id: u32, meter: Option<Arc<LiveMeter>>) {
        let Some(s) = self.shards.get(shard(id)) else {
            return;
        };
        let mut map: MeterMap = s.load().as_deref().cloned().unwrap_or_default();
        match meter {
            Some(m) => {
                map.insert(id, m);
            }
            None => {
                map.remove(&id);
            }
        }
        s.store((!map.is_empty()).then(|| Arc::new(map)));
    }

    /// Publishes a whole new set (the switch's side): O(meters).
    pub fn publish(&self, map: MeterMap) {
        let mut split: Vec<MeterMap> = (0..METER_SHARDS).map(|_| MeterMap::new()).collect();
        for (id, m) in map {
            if let Some(part) = split.get_mut(shard(id)) {
                part.insert(id, m);
            }
        }
        for (s, part) in self.shards.iter().zip(split) {
            s.store((!part.is_empty()).then(|| Arc::new(part)));
        }
    }
}

/// Raises the drop precedence of a DSCP value by `prec_level` (AF classes), saturating at the
/// highest precedence; non-AF code points are left as they are.
pub fn remark_dscp(dscp: u8, prec_level: u8) -> u8 {
    let class = dscp >> 3;
    let prec = (dscp >> 1) & 0x3;
    let af = (1..=4).contains(&class) && dscp & 1 == 0 && prec >= 1;
    if !af {
        return dscp;
    }
    let new = (prec + prec_level).min(3);
    (class << 3) | (new << 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pktps_drop_band_limits_to_rate_after_burst() {
        // 1000 pkt/s, burst 100 packets.
        let b = Band::new(BandKind::Drop, 1000, 100, true);
        let m = LiveMeter::new(1, true, true, true, &[b], 0);
        // 300 packets at once: the first 100 pass (burst), the rest drop.
        let passed = (0..300).filter(|_| m.apply(64, 0) == Verdict::Pass).count();
        assert_eq!(passed, 100);
        // Over one second at 2000 pkt/s offered, about 1000 pass.
        let mut passed = 0;
        for i in 0..2000u64 {
            if m.apply(64, i * 500) == Verdict::Pass {
                passed += 1;
            }
        }
        assert!((990..=1010).contains(&passed), "{passed}");
        let snap = m.snapshot();
        assert_eq!(snap.packet_in_count, 2300);
        assert_eq!(snap.bands[0].packet_count, 2300 - 100 - passed);
    }

    #[test]
    fn kbps_band_counts_bits() {
        // 800 kbit/s = 100,000 bytes/s; burst 80 kbit = 10,000 bytes.
        let b = Band::new(BandKind::Drop, 800, 80, true);
        let m = LiveMeter::new(1, false, true, false, &[b], 0);
        let passed = (0..20)
            .filter(|_| m.apply(1000, 0) == Verdict::Pass)
            .count();
        assert_eq!(passed, 10);
        // 0.1 s later, another 10,000 bytes' worth.
        let passed = (0..20)
            .filter(|_| m.apply(1000, 100_000) == Verdict::Pass)
            .count();
        assert_eq!(passed, 10);
    }

    #[test]
    fn highest_exceeded_band_applies() {
        let bands = vec![
            Band::new(BandKind::DscpRemark { prec_level: 1 }, 100, 10, true),
            Band::new(BandKind::Drop, 200, 20, true),
        ];
        let m = LiveMeter::new(1, true, true, false, &bands, 0);
        let v: Vec<Verdict> = (0..30).map(|_| m.apply(64, 0)).collect();
        assert!(v[..10].iter().all(|x| *x == Verdict::Pass));
        assert!(v[10..20]
            .iter()
            .all(|x| *x == Verdict::Remark { prec_level: 1 }));
        assert!(v[20..].iter().all(|x| *x == Verdict::Drop));
    }

    /// Four threads each offer `n` packets of 64 bytes to `m` at `now_us`, all at once;
    /// returns how many passed.
    fn offer_from_four_threads(m: &Arc<LiveMeter>, n: usize, now_us: u64) -> usize {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = Arc::clone(m);
                std::thread::spawn(move || {
                    (0..n)
                        .filter(|_| m.apply(64, now_us) == Verdict::Pass)
                        .count()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("thread")).sum()
    }

    #[test]
    fn threads_share_the_bucket_without_losing_or_making_tokens() {
        // 1000 pkt/s with a burst of 500 packets, offered 4 x 1000 packets at the same
        // instant from four threads: exactly the burst passes, whatever the interleaving.
        let b = Band::new(BandKind::Drop, 1000, 500, true);
        let m = Arc::new(LiveMeter::new(1, true, true, true, &[b], 0));
        assert_eq!(offer_from_four_threads(&m, 1000, 0), 500);
        let snap = m.snapshot();
        assert_eq!(snap.packet_in_count, 4000);
        assert_eq!(snap.bands[0].packet_count, 3500);
        // Half a second later, seen by the four threads at once: whichever moves the clock
        // is credited the interval (500 more tokens), the others nothing for it.
        assert_eq!(offer_from_four_threads(&m, 1000, 500_000), 500);
    }

    #[test]
    fn a_modify_keeps_the_meter_counters_and_refills_the_bands() {
        let b = Band::new(BandKind::Drop, 10, 10, true);
        let m = LiveMeter::new(3, true, true, true, &[b], 7);
        assert_eq!(
            (0..20).filter(|_| m.apply(100, 7) == Verdict::Pass).count(),
            10
        );
        let n = m.reconfigured(
            true,
            true,
            true,
            &[Band::new(BandKind::Drop, 5, 5, true)],
            9,
        );
        let s = n.snapshot();
        assert_eq!(
            (s.packet_in_count, s.byte_in_count, s.created_us),
            (20, 2000, 7)
        );
        assert_eq!(s.bands[0].packet_count, 0);
        assert_eq!(
            (0..20).filter(|_| n.apply(100, 9) == Verdict::Pass).count(),
            5
        );
    }

    #[test]
    fn the_table_passes_packets_of_meters_it_does_not_have() {
        let t = MeterTable::default();
        assert_eq!(t.apply(1, 64, 0), Verdict::Pass);
        let b = Band::new(BandKind::Drop, 1, 1, true);
        let mut map = MeterMap::new();
        map.insert(1, Arc::new(LiveMeter::new(1, true, true, false, &[b], 0)));
        t.publish(map);
        assert_eq!(t.apply(1, 64, 0), Verdict::Pass);
        assert_eq!(t.apply(1, 64, 0), Verdict::Drop);
        assert_eq!(t.apply(2, 64, 0), Verdict::Pass);
    }

    #[test]
    fn the_table_publishes_one_meter_at_a_time() {
        let t = MeterTable::default();
        // Ids in the same shard and in others.
        let ids: Vec<u32> = (1..=3000).collect();
        for &id in &ids {
            let b = Band::new(BandKind::Drop, 1, 1, true);
            t.set(
                id,
                Some(Arc::new(LiveMeter::new(id, true, true, false, &[b], 0))),
            );
        }
        for &id in &ids {
            assert_eq!(t.apply(id, 64, 0), Verdict::Pass, "{id} first packet");
            assert_eq!(t.apply(id, 64, 0), Verdict::Drop, "{id} second packet");
        }
        // Removing every other meter leaves the rest in place.
        for &id in ids.iter().step_by(2) {
            t.set(id, None);
        }
        for &id in &ids {
            let want = if id % 2 == 1 {
                Verdict::Pass
            } else {
                Verdict::Drop
            };
            assert_eq!(t.apply(id, 64, 0), want, "{id}");
        }
        // A whole set replaces every shard.
        t.publish(MeterMap::new());
        assert!(ids.iter().all(|&id| t.apply(id, 64, 0) == Verdict::Pass));
        assert!(t.shards.iter().all(|s| s.load().is_none()));
    }

    #[test]
    fn dscp_remark_raises_af_precedence() {
        // AF11 (10) -> AF12 (12) -> AF13 (14), saturating.
        assert_eq!(remark_dscp(10, 1), 12);
        assert_eq!(remark_dscp(10, 2), 14);
        assert_eq!(remark_dscp(14, 1), 14);
        // EF (46) and CS0 are not AF: unchanged.
        assert_eq!(remark_dscp(46, 1), 46);
        assert_eq!(remark_dscp(0, 1), 0);
    }
}
