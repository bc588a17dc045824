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

#[cfg(test)]
mod tests {
    use super::*;

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
