//! The transmit rate limiter: a token bucket in integer arithmetic.
//!
//! ## How it works
//! The bucket holds *credit* in packet-nanoseconds: one packet costs `10^9`, and every
//! nanosecond that passes adds `rate` (packets per second). Credit is capped at `burst` packets,
//! so after an idle spell (or a descheduled thread) the sender catches up by at most one burst
//! instead of flooding. [`TokenBucket::take`] grants as many of the packets asked for as the
//! credit covers and charges exactly for those, so no rounding is lost and the long-run rate is
//! exact however the calls are spaced. [`TokenBucket::take_all`] grants a whole batch or
//! nothing, for senders that pay per call (one system call per batch) rather than per packet.
//! Rate 0 means unlimited: every request is granted.
//!
//! Time is an argument (nanoseconds on any monotonic clock the caller likes), which keeps the
//! bucket free of I/O and testable with a simulated clock. The bucket starts full, so the first
//! burst goes out at once.
//!
//! ## Invariants
//! * `credit <= burst * 10^9` after every call.
//! * Granted packets over any interval `[t0, t1]` never exceed `burst + rate * (t1 - t0) / 10^9`.

const NS: u64 = 1_000_000_000;

/// A token bucket over packets.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: u64,
    cap: u64,
    credit: u64,
    last_ns: u64,
}

impl TokenBucket {
    /// A bucket for `rate` packets per second (0 = unlimited) holding at most `burst` packets
    /// (at least 1), full at time `now_ns`.
    pub fn new(rate: u64, burst: u64, now_ns: u64) -> TokenBucket {
        let cap = burst.max(1).saturating_mul(NS);
        TokenBucket {
            rate,
            cap,
            credit: cap,
            last_ns: now_ns,
        }
    }

    /// True when there is no limit.
    #[cfg(test)]
    pub fn unlimited(&self) -> bool {
        self.rate == 0
    }

    #[inline]
    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.credit = self
            .credit
            .saturating_add(dt.saturating_mul(self.rate))
            .min(self.cap);
    }

    /// Grants up to `want` packets at time `now_ns` and charges for them.
    #[cfg(test)]
    pub fn take(&mut self, now_ns: u64, want: u64) -> u64 {
        if self.rate == 0 {
            return want;
        }
        self.refill(now_ns);
        let n = (self.credit / NS).min(want);
        self.credit -= n * NS;
        n
    }

    /// Grants exactly `n` packets (at most the burst) if the credit covers them all, else none.
    /// Senders whose cost is per call rather than per packet use this to keep calls full.
    #[inline]
    pub fn take_all(&mut self, now_ns: u64, n: u64) -> bool {
        if self.rate == 0 {
            return true;
        }
        self.refill(now_ns);
        let need = n.min(self.cap / NS).saturating_mul(NS);
        if self.credit >= need {
            self.credit -= need;
            true
        } else {
            false
        }
    }

    /// Nanoseconds from `now_ns` until `n` packets (at most the burst) are covered (0 if now).
    #[inline]
    pub fn wait_ns(&mut self, now_ns: u64, n: u64) -> u64 {
        if self.rate == 0 {
            return 0;
        }
        self.refill(now_ns);
        let need = n.max(1).min(self.cap / NS).saturating_mul(NS);
        if self.credit >= need {
            0
        } else {
            (need - self.credit).div_ceil(self.rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_grants_everything() {
        let mut b = TokenBucket::new(0, 32, 0);
        assert!(b.unlimited());
        assert_eq!(b.take(0, 1000), 1000);
        assert_eq!(b.wait_ns(5, 1), 0);
    }

    #[test]
    fn starts_full_then_paces() {
        let mut b = TokenBucket::new(1000, 8, 0);
        assert_eq!(b.take(0, 100), 8);
        assert_eq!(b.take(0, 1), 0);
        // One packet per millisecond.
        assert_eq!(b.wait_ns(0, 1), 1_000_000);
        assert_eq!(b.take(999_999, 1), 0);
        assert_eq!(b.wait_ns(999_999, 1), 1);
        assert_eq!(b.take(1_000_000, 5), 1);
        assert_eq!(b.take(3_500_000, 5), 2);
        // The half packet of credit left over is not lost.
        assert_eq!(b.take(4_000_000, 5), 1);
    }

    #[test]
    fn long_run_rate_is_exact_with_any_spacing() {
        for (rate, step) in [
            (1_000u64, 1_000u64),
            (123_457, 777),
            (10_000_000, 50),
            (3, 10_007),
        ] {
            let mut b = TokenBucket::new(rate, 32, 0);
            let first = b.take(0, u64::MAX);
            let mut total = 0u64;
            let mut t = 0u64;
            while t < 2 * NS {
                t += step;
                total += b.take(t, 32);
            }
            // Exactly rate * 2 s, give or take the last fraction of a packet.
            let expect = rate * 2;
            assert!(
                total <= expect && total + 1 >= expect,
                "rate {rate} step {step}: {total} vs {expect}"
            );
            assert_eq!(first, 32);
        }
    }

    #[test]
    fn take_all_is_all_or_nothing() {
        let mut b = TokenBucket::new(1_000_000, 10, 0);
        assert!(b.take_all(0, 10));
        assert!(!b.take_all(0, 4));
        assert_eq!(b.wait_ns(0, 4), 4_000);
        assert!(!b.take_all(3_999, 4));
        assert!(b.take_all(4_000, 4));
        // More than the burst asks for the burst.
        assert_eq!(b.wait_ns(4_000, 100), 10_000);
        assert!(b.take_all(14_000, 100));
        let mut u = TokenBucket::new(0, 1, 0);
        assert!(u.take_all(0, 1 << 40));
    }

    #[test]
    fn idle_time_buys_at_most_one_burst() {
        let mut b = TokenBucket::new(1_000_000, 16, 0);
        assert_eq!(b.take(0, 16), 16);
        // A 10 s stall earns 16 packets, not ten million.
        assert_eq!(b.take(10 * NS, u64::MAX), 16);
        assert_eq!(b.take(10 * NS, 1), 0);
    }

    #[test]
    fn clock_going_backwards_grants_nothing_extra() {
        let mut b = TokenBucket::new(1000, 1, 5 * NS);
        assert_eq!(b.take(5 * NS, 1), 1);
        assert_eq!(b.take(NS, 1), 0);
        assert_eq!(b.take(5 * NS + 1_000_000, 1), 1);
    }

    #[test]
    fn huge_rates_do_not_overflow() {
        let mut b = TokenBucket::new(u64::MAX, 256, 0);
        assert_eq!(b.take(u64::MAX, u64::MAX), 256);
        assert!(b.wait_ns(u64::MAX, 1) <= 1);
    }
}
