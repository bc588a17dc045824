//! A fast keyed hasher for small fixed-size keys (MAC table entries, tuples).
//!
//! One multiply-xorshift round per written word, seeded per table from the standard library's
//! random hasher state, so that traffic cannot choose keys that collide across every switch.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// Builds [`FastHasher`]s sharing one random seed.
#[derive(Clone, Copy, Debug)]
pub struct FastState {
    seed: u64,
}

impl FastState {
    /// A state with a process-random seed.
    pub fn random() -> FastState {
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
        FastState { seed: seed | 1 }
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    #[inline(always)]
    fn build_hasher(&self) -> FastHasher {
        FastHasher { h: self.seed }
    }
}

/// See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct FastHasher {
    h: u64,
}

impl Hasher for FastHasher {
    #[inline(always)]
    fn finish(&self) -> u64 {
        let mut x = self.h;
        x ^= x >> 32;
        x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
        x ^= x >> 29;
        x
    }

    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    #[inline(always)]
    fn write_u64(&mut self, v: u64) {
        self.h = (self.h ^ v)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }

    #[inline(always)]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    #[inline(always)]
    fn write_u16(&mut self, v: u16) {
        self.write_u64(u64::from(v));
    }

    #[inline(always)]
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
}

/// A hash map using [`FastState`].
pub type FastMap<K, V> = HashMap<K, V, FastState>;
