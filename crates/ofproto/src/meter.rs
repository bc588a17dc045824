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

/// What a band does to the packets it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandKind {
    Drop,
    DscpRemark { prec_level: u8 },
}

/// One band and its bucket.
#[derive(Clone, Debug)]
pub struct Band {
    pub kind: BandKind,
    /// kbit/s or packets/s.
    pub rate: u32,
    /// kbit or packets.
    pub burst: u32,
    /// Tokens in thousandths of a bit (kbps) or of a packet (pktps).
    tokens: u64,
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

/// A meter: its configuration, buckets and counters.
#[derive(Clone, Debug)]
pub struct Meter {
    pub id: u32,
    pub pktps: bool,
    pub burst_flag: bool,
    pub stats_flag: bool,
    pub bands: Vec<Band>,
    last_us: u64,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub created_us: u64,
    /// Number of flows whose instructions name this meter.
    pub flow_count: u32,
}

impl Band {
    /// A band with a full bucket.
    pub fn new(kind: BandKind, rate: u32, burst: u32, burst_flag: bool) -> Band {
        let burst = if burst_flag && burst > 0 { burst } else { rate };
        Band {
            kind,
            rate,
            burst,
            tokens: u64::from(burst) * 1000,
            packet_count: 0,
            byte_count: 0,
        }
    }

    fn capacity(&self) -> u64 {
        u64::from(self.burst).max(1) * 1000
    }
}

impl Meter {
    /// A meter created at `now_us`.
    pub fn new(
        id: u32,
        pktps: bool,
        burst_flag: bool,
        stats_flag: bool,
        bands: Vec<Band>,
        now_us: u64,
    ) -> Meter {
        Meter {
            id,
            pktps,
            burst_flag,
            stats_flag,
            bands,
            last_us: now_us,
            packet_in_count: 0,
            byte_in_count: 0,
            created_us: now_us,
            flow_count: 0,
        }
    }

    /// Replaces the configuration, keeping the counters of the meter (as a modify does).
    pub fn reconfigure(
        &mut self,
        pktps: bool,
        burst_flag: bool,
        stats_flag: bool,
        bands: Vec<Band>,
    ) {
        self.pktps = pktps;
        self.burst_flag = burst_flag;
        self.stats_flag = stats_flag;
        self.bands = bands;
    }

    /// Offers one packet of `len` bytes at `now_us`.
    pub fn apply(&mut self, len: usize, now_us: u64) -> Verdict {
        let dt_us = now_us.saturating_sub(self.last_us);
        self.last_us = self.last_us.max(now_us);
        self.packet_in_count += 1;
        self.byte_in_count += len as u64;
        // Cost in thousandths of the band's unit: bits*1000/1000 for kbps (a kbit is 1000
        // bits, tokens are thousandths of a kbit = bits), 1000 per packet for pktps.
        let cost = if self.pktps { 1000 } else { len as u64 * 8 };
        let mut chosen: Option<(usize, u32)> = None;
        for (i, b) in self.bands.iter_mut().enumerate() {
            // rate units per second -> thousandths per microsecond: rate * 1000 / 1e6.
            let add = (u128::from(b.rate) * u128::from(dt_us) / 1000) as u64;
            b.tokens = b.tokens.saturating_add(add).min(b.capacity());
            if b.tokens >= cost {
                b.tokens -= cost;
            } else if chosen.is_none_or(|(_, r)| r < b.rate) {
                chosen = Some((i, b.rate));
            }
        }
        match chosen {
            None => Verdict::Pass,
            Some((i, _)) => {
                let b = &mut self.bands[i];
                b.packet_count += 1;
                b.byte_count += len as u64;
                match b.kind {
                    BandKind::Drop => Verdict::Drop,
                    BandKind::DscpRemark { prec_level } => Verdict::Remark { prec_level },
                }
            }
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
        let mut m = Meter::new(1, true, true, true, vec![b], 0);
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
        assert_eq!(m.packet_in_count, 2300);
        assert_eq!(m.bands[0].packet_count, 2300 - 100 - passed);
    }

    #[test]
    fn kbps_band_counts_bits() {
        // 800 kbit/s = 100,000 bytes/s; burst 80 kbit = 10,000 bytes.
        let b = Band::new(BandKind::Drop, 800, 80, true);
        let mut m = Meter::new(1, false, true, false, vec![b], 0);
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
        let mut m = Meter::new(1, true, true, false, bands, 0);
        let v: Vec<Verdict> = (0..30).map(|_| m.apply(64, 0)).collect();
        assert!(v[..10].iter().all(|x| *x == Verdict::Pass));
        assert!(v[10..20]
            .iter()
            .all(|x| *x == Verdict::Remark { prec_level: 1 }));
        assert!(v[20..].iter().all(|x| *x == Verdict::Drop));
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
