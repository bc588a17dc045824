//! Hashing for the classifier: an incremental word hash for staged lookup, and a small
//! `BuildHasher` for the writer-side maps keyed by integers and masks.
//!
//! The staged hash absorbs one masked key word at a time into a 64-bit state with a
//! "folded" 64x64->128 multiply (the two halves of the product xored), so every input bit
//! reaches every state bit non-linearly; [`finish`] is an avalanche finaliser applied to a
//! *copy* of the state, so the hash of stages `0..=s` is available after each stage while the
//! state goes on absorbing the next one. A full 64-bit hash is kept because the hash tables
//! use its top bits as a tag and its low bits as the home slot.

use core::hash::{BuildHasher, Hasher};

const M: u64 = 0x9e37_79b9_7f4a_7c15;

/// Initial state of every staged hash.
pub(crate) const BASIS: u64 = 0x243f_6a88_85a3_08d3;

/// Absorbs one word into the state.
#[inline(always)]
pub(crate) fn absorb(state: u64, word: u64) -> u64 {
    let p = u128::from(state ^ word) * u128::from(M);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The hash of everything absorbed so far (the state itself is left alone).
#[inline(always)]
pub(crate) fn finish(state: u64) -> u64 {
    let mut h = state;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `BuildHasher` for the classifier's own maps (rule ids, metadata values, masks).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct FastBuild;

/// The hasher [`FastBuild`] builds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastHasher(u64);

impl BuildHasher for FastBuild {
    type Hasher = FastHasher;
    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher(BASIS)
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.0 = absorb(self.0, u64::from_ne_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.0 = absorb(self.0, u64::from_ne_bytes(b) ^ ((rest.len() as u64) << 60));
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = absorb(self.0, n);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.0 = absorb(self.0, u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 = absorb(self.0, n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        finish(self.0)
    }
}

/// The hash of a rule id for the tables keyed by ids (the classifier's id index, the
/// switch's per-table id sets): ids are handed out in sequence and a bundle adds thousands
/// of consecutive ones, so each run of 16 consecutive ids takes 16 consecutive home slots
/// (the low bits are the id's own), at a place given by a full hash of `id >> 4`; the top
/// seven bits (the tag the tables compare before a key) come from a full hash of the id.
/// Consecutive inserts thus touch the same cache lines and pages instead of one random
/// line each, and ids chosen to collide still spread as well as a full hash spreads their
/// runs.
#[inline]
pub fn id_hash(id: u64) -> u64 {
    const LOW: u64 = (1 << 57) - 1;
    let block = finish(absorb(BASIS, id >> 4));
    let tag = finish(absorb(BASIS ^ 1, id));
    (((block << 4) | (id & 15)) & LOW) | (tag & !LOW)
}

/// `BuildHasher` for maps and sets keyed by rule ids (see [`id_hash`]).
#[derive(Clone, Copy, Default, Debug)]
pub struct IdBuild;

/// The hasher [`IdBuild`] builds: made for one `u64` (or [`crate::RuleId`]) key.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl BuildHasher for IdBuild {
    type Hasher = IdHasher;
    #[inline]
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = absorb(self.0, u64::from(*b));
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = id_hash(self.0 ^ n);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_take_consecutive_slots_and_differing_tags() {
        let base = id_hash(32);
        let tags: std::collections::HashSet<u64> = (32..48).map(|i| id_hash(i) >> 57).collect();
        for i in 32..48u64 {
            assert_eq!(
                id_hash(i) & ((1 << 57) - 1),
                (base & ((1 << 57) - 1)) + (i - 32)
            );
        }
        assert!(tags.len() > 8, "tags spread: {}", tags.len());
        // Blocks land far apart.
        let a = id_hash(0) & 0xffff_fff0;
        let b = id_hash(16) & 0xffff_fff0;
        assert_ne!(a, b);
    }

    #[test]
    fn finish_spreads_single_bit_changes() {
        let base = finish(absorb(BASIS, 0));
        for bit in 0..64 {
            let h = finish(absorb(BASIS, 1u64 << bit));
            let d = (h ^ base).count_ones();
            assert!((12..=52).contains(&d), "bit {bit}: {d} bits changed");
        }
    }

    #[test]
    fn order_matters() {
        let a = finish(absorb(absorb(BASIS, 1), 2));
        let b = finish(absorb(absorb(BASIS, 2), 1));
        assert_ne!(a, b);
    }
}
