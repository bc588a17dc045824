//! The exact-match cache (EMC): full flow key -> megaflow, per poll thread.
//!
//! A direct-mapped table of [`EMC_ENTRIES`] slots indexed two ways by the key's hash (two
//! candidate slots per key); a lookup compares the full key, so a hit needs no masking and
//! no subtable walk. To keep the cache from thrashing when there are more active flows than
//! slots (the collapse OVS-DPDK shows above ~10K flows), a new key is inserted only with
//! probability 1/`insert_inv_prob` (OVS's `emc-insert-inv-prob`, default 100): a flow that
//! is busy gets in soon, a flood of short flows mostly does not. `insert_inv_prob = 0`
//! disables the cache.
//!
//! The hash and the comparison cover the key's connection-tracking and tunnel words only
//! for recirculated keys (`recirc_id != 0`), keys with tunnel options
//! (`tun_opts_present != 0`) and keys with IPv6 tunnel addresses ([`FlowKey::has_tail`]):
//! for every other key they are zero, so pipelines without `ct` and packets without
//! options or an IPv6 underlay pay nothing for them.
//!
//! Entries hold the megaflow's `Arc`; a megaflow that the revalidator kills is dead at
//! once (see [`crate::dpcls`]), and a dead entry reads as a miss.

use crate::dpcls::{Megaflow, Words};
use packet::flow::{FlowKey, CT_WORDS_START, FLOW_KEY_WORDS};
use std::sync::Arc;

/// Slots in the cache (a power of two).
pub const EMC_ENTRIES: usize = 8192;
const MASK: usize = EMC_ENTRIES - 1;

/// Six cache lines: the hash and the megaflow first, then the key, whose
/// connection-tracking and tunnel-options words (the last two lines) are read only for
/// recirculated keys and keys with tunnel options.
#[repr(C, align(64))]
struct Entry {
    hash: u32,
    flow: Option<Arc<Megaflow>>,
    key: Words,
}

impl Default for Entry {
    fn default() -> Entry {
        Entry {
            hash: 0,
            flow: None,
            key: [0; FLOW_KEY_WORDS],
        }
    }
}

/// The words of `k` that can differ between keys like it: all of them for a recirculated
/// key or one with tunnel options or IPv6 tunnel addresses, those before the
/// connection-tracking block otherwise (such a key has all-zero blocks after it; see
/// `packet::flow`).
#[inline(always)]
fn live_words(k: &Words) -> &[u64] {
    if !FlowKey::from_words_ref(k).has_tail() {
        &k[..CT_WORDS_START]
    } else {
        &k[..]
    }
}

/// See the module documentation.
pub struct Emc {
    entries: Vec<Entry>,
    pub insert_inv_prob: u32,
}

impl Default for Emc {
    fn default() -> Self {
        Emc::new(100)
    }
}

/// A fast hash of a whole key (for the EMC; not keyed). Four independent lanes of
/// add-rotate over the words, folded with one multiply: cheap, and any single-field change
/// moves the slot. Collisions only cost a miss, never a wrong answer (the key is compared).
#[inline(always)]
pub fn key_hash(k: &Words) -> u32 {
    let mut l = [
        0x243f_6a88_85a3_08d3u64,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    for (i, w) in live_words(k).iter().enumerate() {
        let lane = &mut l[i & 3];
        *lane = lane.wrapping_add(*w).rotate_left(23);
    }
    let mut h = l[0] ^ l[1].rotate_left(13) ^ l[2].rotate_left(29) ^ l[3].rotate_left(41);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h as u32
}

impl Emc {
    /// An empty cache inserting with probability 1/`insert_inv_prob`.
    pub fn new(insert_inv_prob: u32) -> Emc {
        let mut entries = Vec::with_capacity(EMC_ENTRIES);
        entries.resize_with(EMC_ENTRIES, Entry::default);
        Emc {
            entries,
            insert_inv_prob,
        }
    }

    /// The live megaflow cached for `key`.
    #[inline(always)]
    pub fn lookup(&self, hash: u32, key: &Words) -> Option<&Arc<Megaflow>> {
        if self.insert_inv_prob == 0 {
            return None;
        }
        for slot in [hash as usize & MASK, (hash >> 13) as usize & MASK] {
            let e = &self.entries[slot];
            // Equal live words imply equal keys: word 0 holds `recirc_id`, so both keys
            // are recirculated (all words compared) or neither (ct blocks both zero).
            let live = live_words(key);
            if e.hash == hash && e.key.iter().zip(live).all(|(a, b)| a == b) {
                if let Some(f) = &e.flow {
                    if !f.is_dead() {
                        return Some(f);
                    }
                }
            }
        }
        None
    }

    /// Fetches the cache lines of the first slot `hash` may be in.
    #[inline(always)]
    pub fn prefetch(&self, hash: u32) {
        if let Some(e) = self.entries.get(hash as usize & MASK) {
            let p = (e as *const Entry).cast::<u8>();
            // The connection-tracking line is left out: most keys never read it.
            for line in 0..(std::mem::size_of::<Entry>() / 64).min(4) {
                crate::flowtable::prefetch(p.wrapping_add(line * 64));
            }
        }
    }

    /// Whether a key met now should be inserted: true with probability
    /// 1/`insert_inv_prob` (never when the cache is off). `rng` is the caller's state.
    #[inline]
    pub fn sample(&self, rng: &mut u32) -> bool {
        match self.insert_inv_prob {
            0 => false,
            1 => true,
            inv => {
                // xorshift32: cheap and good enough to sample.
                let mut x = *rng;
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *rng = x;
                x.is_multiple_of(inv)
            }
        }
    }

    /// Inserts `key -> flow` (see [`Emc::sample`] for when to).
    pub fn insert(&mut self, hash: u32, key: &Words, flow: &Arc<Megaflow>) {
        if self.insert_inv_prob == 0 {
            return;
        }
        let a = hash as usize & MASK;
        let b = (hash >> 13) as usize & MASK;
        // Prefer an empty or dead slot, else replace the first candidate.
        let free = |e: &Entry| e.flow.as_ref().is_none_or(|f| f.is_dead());
        let slot = if free(&self.entries[a]) {
            a
        } else if free(&self.entries[b]) {
            b
        } else {
            a
        };
        let e = &mut self.entries[slot];
        e.hash = hash;
        e.key = *key;
        e.flow = Some(Arc::clone(flow));
    }

    /// Empties the cache.
    pub fn clear(&mut self) {
        for e in self.entries.iter_mut() {
            e.flow = None;
        }
    }

    /// Live entries (for statistics).
    pub fn len(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.flow.as_ref().is_some_and(|f| !f.is_dead()))
            .count()
    }

    /// True when no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
