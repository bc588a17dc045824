//! Latency statistics without storing samples: exact minimum, maximum and mean, and
//! percentiles from a fixed log-linear histogram.
//!
//! ## The histogram
//! Values below 64 ns each have their own bucket. Above, every power-of-two range
//! `[2^e, 2^(e+1))` is cut into 32 equal buckets, so a bucket is never wider than 1/32 of its
//! lower bound: a percentile read from it is within about 3% of the true sample. All 64-bit
//! values fit in 64 + 58 * 32 = 1920 buckets, allocated once when the recorder is made;
//! [`Latency::record`] is a leading-zero count, two shifts and an increment.
//!
//! A percentile is the midpoint of the bucket holding the sample of that rank (nearest-rank
//! definition: the smallest value with at least p% of the samples at or below it), clamped to
//! the exact minimum and maximum, so `p0 == min` and `p100 == max` and a single sample reports
//! itself everywhere.
//!
//! Single-threaded (`&mut self`).

const LINEAR: u64 = 64;
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = LINEAR as usize + (64 - 6) * SUB;

/// A latency recorder (nanoseconds).
#[derive(Clone)]
pub struct Latency {
    counts: Box<[u64; BUCKETS]>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

/// What a recorder reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    pub samples: u64,
    pub min: u64,
    pub avg: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn bucket_of(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 6
    let sub = (v >> (e - SUB_BITS)) as usize & (SUB - 1);
    LINEAR as usize + (e as usize - 6) * SUB + sub
}

/// The `[low, high]` range of values a bucket holds.
fn bucket_range(i: usize) -> (u64, u64) {
    if i < LINEAR as usize {
        return (i as u64, i as u64);
    }
    let j = i - LINEAR as usize;
    let e = (j / SUB) as u32 + 6;
    let sub = (j % SUB) as u64;
    let width = 1u64 << (e - SUB_BITS);
    let low = (1u64 << e) + sub * width;
    (low, low + (width - 1))
}

impl Latency {
    /// An empty recorder.
    pub fn new() -> Latency {
        Latency {
            counts: Box::new([0; BUCKETS]),
            n: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Adds one sample.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket_of(ns)] += 1;
        self.n += 1;
        self.sum += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// The `p`-th percentile (0..=100), or `None` with no samples.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let p = p.clamp(0.0, 100.0);
        let rank = ((p / 100.0 * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += *c;
            if seen >= rank {
                let (lo, hi) = bucket_range(i);
                let mid = lo + (hi - lo) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Everything at once, or `None` with no samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.n == 0 {
            return None;
        }
        Some(Summary {
            samples: self.n,
            min: self.min,
            avg: (self.sum / u128::from(self.n)) as u64,
            p50: self.percentile(50.0)?,
            p99: self.percentile(99.0)?,
            max: self.max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_whole_range() {
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (lo, hi) = bucket_range(i);
            assert_eq!(lo, next, "bucket {i} starts where the last ended");
            assert!(hi >= lo);
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(hi), i);
            // Never wider than 1/32 of the lower bound (above the linear part).
            if lo >= LINEAR {
                assert!(hi - lo < lo / 32 + 1);
            }
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn empty_reports_nothing() {
        let l = Latency::new();
        assert_eq!(l.summary(), None);
        assert_eq!(l.percentile(50.0), None);
    }

    #[test]
    fn one_sample_reports_itself() {
        let mut l = Latency::new();
        l.record(12_345);
        let s = l.summary().expect("one");
        assert_eq!(
            s,
            Summary {
                samples: 1,
                min: 12_345,
                avg: 12_345,
                p50: 12_345,
                p99: 12_345,
                max: 12_345
            }
        );
    }

    #[test]
    fn exact_below_64() {
        let mut l = Latency::new();
        for v in 1..=50 {
            l.record(v);
        }
        assert_eq!(l.percentile(50.0), Some(25));
        assert_eq!(l.percentile(99.0), Some(50));
        assert_eq!(l.percentile(0.0), Some(1));
        let s = l.summary().expect("some");
        assert_eq!((s.min, s.max, s.avg), (1, 50, 25));
    }

    #[test]
    fn percentiles_within_three_percent() {
        // 1..=100_000 microseconds-ish spread: compare with the exact nearest-rank values.
        let mut l = Latency::new();
        let mut all: Vec<u64> = (0..100_000u64)
            .map(|i| 1_000 + i * 37 % 2_000_000)
            .collect();
        for v in &all {
            l.record(*v);
        }
        all.sort_unstable();
        for p in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9] {
            let rank = ((p / 100.0 * all.len() as f64).ceil() as usize).max(1);
            let exact = all[rank - 1] as f64;
            let got = l.percentile(p).expect("some") as f64;
            assert!(
                (got - exact).abs() <= exact * 0.032,
                "p{p}: {got} vs {exact}"
            );
        }
        let s = l.summary().expect("some");
        assert_eq!(s.min, all[0]);
        assert_eq!(s.max, *all.last().expect("some"));
        let mean = all.iter().map(|v| u128::from(*v)).sum::<u128>() / all.len() as u128;
        assert_eq!(u128::from(s.avg), mean);
    }

    #[test]
    fn tail_shows_in_p99_not_p50() {
        let mut l = Latency::new();
        for _ in 0..980 {
            l.record(10_000);
        }
        for _ in 0..20 {
            l.record(5_000_000);
        }
        let s = l.summary().expect("some");
        assert!(s.p50.abs_diff(10_000) <= 10_000 / 32);
        assert!(s.p99.abs_diff(5_000_000) <= 5_000_000 / 32);
        assert_eq!(s.max, 5_000_000);
    }
}
