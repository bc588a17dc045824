//! 128-bit row identifiers.
//!
//! OVSDB names every row by a UUID, written on the wire as `["uuid", "xxxxxxxx-xxxx-..."]`. We
//! keep it as a `u128` (cheap to copy, hash and order) and generate random version-4 UUIDs from
//! the standard library's randomly keyed SipHash, fed with a process-wide counter and the clock:
//! unpredictable enough for identifiers, without an extra dependency. Parsing is strict (36
//! characters, hyphens in the canonical places, hex digits only) and never panics.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// A UUID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid(pub u128);

static COUNTER: AtomicU64 = AtomicU64::new(0);
static SEED: OnceLock<RandomState> = OnceLock::new();

impl Uuid {
    /// The all-zero UUID (the default value of a `uuid` column).
    pub const ZERO: Uuid = Uuid(0);

    /// A fresh random (version 4) UUID.
    pub fn random() -> Uuid {
        let seed = SEED.get_or_init(RandomState::new);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut h1 = seed.build_hasher();
        h1.write_u64(n);
        h1.write_u128(now);
        let a = h1.finish();
        let mut h2 = seed.build_hasher();
        h2.write_u64(a);
        h2.write_u64(!n);
        let b = h2.finish();
        let mut v = (u128::from(a) << 64) | u128::from(b);
        // Version 4, RFC 4122 variant.
        v = (v & !(0xf << 76)) | (0x4 << 76);
        v = (v & !(0x3 << 62)) | (0x2 << 62);
        Uuid(v)
    }

    /// Parse the canonical 8-4-4-4-12 hex form.
    pub fn parse(s: &str) -> Option<Uuid> {
        let b = s.as_bytes();
        if b.len() != 36 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, &c) in b.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return None;
                }
                continue;
            }
            let d = (c as char).to_digit(16)?;
            v = (v << 4) | u128::from(d);
        }
        Some(Uuid(v))
    }

    /// Whether `s` looks like a UUID (used to tell UUIDs from names in ovs-vsctl-style input).
    pub fn is_uuid(s: &str) -> bool {
        Self::parse(s).is_some()
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reject() {
        let u = Uuid::random();
        let s = u.to_string();
        assert_eq!(Uuid::parse(&s), Some(u));
        assert_eq!(&s[14..15], "4");
        assert!(Uuid::parse("not-a-uuid").is_none());
        assert!(Uuid::parse("0123456789abcdef0123456789abcdef0123").is_none());
        assert!(Uuid::parse("01234567-89ab-cdef-0123-456789abcdeg").is_none());
        assert_eq!(
            Uuid::parse("01234567-89ab-cdef-0123-456789abcdef").map(|u| u.0),
            Some(0x0123456789abcdef0123456789abcdef)
        );
        assert_ne!(Uuid::random(), Uuid::random());
    }
}
