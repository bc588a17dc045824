//! Looking a chunk of a batch up in the poll thread's caches: the megaflow the previous
//! packet hit, the exact-match cache, then the megaflow classifier. The first stage checks
//! a megaflow whose compact compare has four words or fewer without a loop ([`Compact4`],
//! made once per chunk; pinned to `Megaflow::covers_fast` by a proptest).

use super::OpenFlowStats;
use crate::dpcls::{Dpcls, Megaflow, Words, INLINE_WORDS, LOOKUP_CHUNK};
use crate::emc::{key_hash, Emc};
use packet::flow::FlowKey;
use std::sync::Arc;

/// The caches a batch is looked up in (borrowed for the batch).
pub(super) struct Lookup<'a> {
    pub(super) emc: &'a Emc,
    pub(super) emc_on: bool,
    pub(super) dpcls: &'a Dpcls,
}

/// What the lookups count and choose to insert.
pub(super) struct Tally<'s> {
    pub(super) stats: &'s mut OpenFlowStats,
    pub(super) sample: &'s mut (u64, u64),
    pub(super) offers: &'s mut Vec<(usize, u32, Arc<Megaflow>)>,
    pub(super) rng: &'s mut u32,
}

impl<'a> Lookup<'a> {
    /// Finds the megaflow of each key of `keys` (one chunk of a batch, starting at batch
    /// index `base`), writing it to `found` (`None`: a miss, for the slow path). In stages,
    /// each over the keys the previous one left: the megaflow the previous packet hit,
    /// the EMC (every slot prefetched before any is read), then the megaflow classifier's
    /// batched lookup. Returns the megaflow of the chunk's last packet found, for the next
    /// chunk's first stage.
    #[inline(always)]
    pub(super) fn classify(
        &self,
        keys: &[FlowKey],
        base: usize,
        mut prev: Option<&'a Arc<Megaflow>>,
        found: &mut [Option<&'a Arc<Megaflow>>; LOOKUP_CHUNK],
        t: &mut Tally<'_>,
    ) -> Option<&'a Arc<Megaflow>> {
        let keys = &keys[..keys.len().min(LOOKUP_CHUNK)];
        let mut todo = [0u8; LOOKUP_CHUNK];
        // Stage 1: packets of one flow (or of flows sharing a megaflow) come in runs, and
        // checking a mask's few words is cheaper than hashing and probing.
        let mut n_todo = match prev {
            Some(m) if !m.is_dead() => {
                let n_todo = match Compact4::of(m) {
                    Some(c) => stage1(keys, m, |w| c.covers(w), found, &mut todo),
                    None => stage1(keys, m, |w| m.covers_fast(w), found, &mut todo),
                };
                t.stats.megaflow_hits += (keys.len() - n_todo) as u64;
                if n_todo == 0 {
                    return prev;
                }
                n_todo
            }
            _ => {
                for (i, slot) in todo.iter_mut().enumerate().take(keys.len()) {
                    *slot = i as u8;
                }
                keys.len()
            }
        };
        // Stage 2: the EMC.
        let mut hashes = [0u32; LOOKUP_CHUNK];
        if self.emc_on && n_todo > 0 {
            for &i in &todo[..n_todo] {
                let i = usize::from(i);
                let h = key_hash(keys[i].as_words());
                hashes[i] = h;
                self.emc.prefetch(h);
            }
            let mut kept = 0;
            for x in 0..n_todo {
                let i = usize::from(todo[x]);
                let w = keys[i].as_words();
                match self.emc.lookup(hashes[i], w) {
                    Some(m) => {
                        found[i] = Some(m);
                        t.stats.emc_hits += 1;
                        // Sample the megaflow path now and then, so `adapt_emc` knows what
                        // a lookup without the EMC would cost.
                        if t.stats.emc_hits & 63 == 0 {
                            let (_, probed) = self.dpcls.lookup(w);
                            *t.sample = (t.sample.0 + 1, t.sample.1 + u64::from(probed));
                        }
                    }
                    None => {
                        todo[kept] = todo[x];
                        kept += 1;
                    }
                }
            }
            n_todo = kept;
        }
        // Stage 3: the megaflow classifier, batched.
        if n_todo > 0 {
            let asked = todo;
            let n_asked = n_todo;
            t.stats.subtable_lookups +=
                self.dpcls.lookup_batch(keys, &mut todo, &mut n_todo, found);
            for &i in &asked[..n_asked] {
                let i = usize::from(i);
                if let Some(m) = found[i] {
                    t.stats.megaflow_hits += 1;
                    if self.emc_on && self.emc.sample(t.rng) {
                        t.offers.push((base + i, hashes[i], Arc::clone(m)));
                    }
                }
            }
        }
        if let Some(m) = found[..keys.len()].iter().rev().flatten().next() {
            prev = Some(m);
        }
        prev
    }
}

/// The first stage of [`Lookup::classify`]: the keys that `covers` (`m`'s check) finds are
/// `m`'s, the indices of the others go to `todo`; returns how many those are.
#[inline(always)]
fn stage1<'a>(
    keys: &[FlowKey],
    m: &'a Arc<Megaflow>,
    covers: impl Fn(&Words) -> bool,
    found: &mut [Option<&'a Arc<Megaflow>>; LOOKUP_CHUNK],
    todo: &mut [u8; LOOKUP_CHUNK],
) -> usize {
    let mut n_todo = 0;
    for ((i, k), f) in keys.iter().enumerate().zip(found.iter_mut()) {
        if covers(k.as_words()) {
            *f = Some(m);
        } else if let Some(t) = todo.get_mut(n_todo) {
            *t = i as u8;
            n_todo += 1;
        }
    }
    n_todo
}

/// A megaflow's compact compare (`Megaflow::covers_fast`) of at most four words, made ready
/// for the keys of a chunk: the words' indices, masks and masked values in arrays of four,
/// those left over reading word 0 under an empty mask, so that each key is checked with no
/// loop over a count (the megaflow a batch's packets hit reads four words or fewer).
#[derive(Clone, Copy)]
struct Compact4 {
    idx: [u8; 4],
    mask: [u64; 4],
    val: [u64; 4],
}

impl Compact4 {
    /// `m`'s compact compare, when it has one of at most four words.
    #[inline]
    fn of(m: &Megaflow) -> Option<Compact4> {
        let mut c = Compact4 {
            idx: [0; 4],
            mask: [0; 4],
            val: [0; 4],
        };
        let mut n = 0;
        for (i, mask, val) in m.compact_words().take(INLINE_WORDS) {
            *c.idx.get_mut(n)? = u8::try_from(i).ok()?;
            c.mask[n] = mask;
            c.val[n] = val;
            n += 1;
        }
        (n > 0).then_some(c)
    }

    /// `Megaflow::covers_fast` of the megaflow this was made from.
    #[inline(always)]
    fn covers(&self, key: &Words) -> bool {
        let w = |j: usize| {
            key.get(usize::from(self.idx[j]))
                .is_some_and(|w| w & self.mask[j] == self.val[j])
        };
        w(0) & w(1) & w(2) & w(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::flow::{FlowKey, FLOW_KEY_WORDS};
    use proptest::prelude::*;

    proptest! {
        /// `Compact4` is `covers_fast` wherever it is made, and it is made for every
        /// megaflow whose mask has one to four non-zero words: masks of one to six words,
        /// keys that are the megaflow's flow with a bit flipped now and then.
        #[test]
        fn compact4_is_covers_fast(
            masks in proptest::collection::vec((0usize..FLOW_KEY_WORDS, any::<u64>()), 1..7),
            flow in proptest::collection::vec(any::<u64>(), FLOW_KEY_WORDS),
            flips in proptest::collection::vec((0usize..FLOW_KEY_WORDS, 0u32..64), 0..3),
        ) {
            let mut mw = [0u64; FLOW_KEY_WORDS];
            for (i, m) in &masks {
                mw[*i] |= *m;
            }
            let fw: [u64; FLOW_KEY_WORDS] = flow.try_into().expect("words");
            let m = Megaflow::new(
                1,
                FlowKey::from_words(&fw),
                FlowKey::from_words(&mw),
                vec![ofproto::odp::DpAction::Output(2)],
                vec![],
                vec![],
                1,
                0,
            );
            let mut k = fw;
            for (i, b) in &flips {
                k[*i] ^= 1 << b;
            }
            let nonzero = mw.iter().filter(|w| **w != 0).count();
            let c = Compact4::of(&m);
            prop_assert_eq!(c.is_some(), (1..=4).contains(&nonzero));
            if let Some(c) = c {
                prop_assert_eq!(c.covers(&k), m.covers_fast(&k));
                prop_assert!(c.covers(&fw));
            }
        }
    }
}
