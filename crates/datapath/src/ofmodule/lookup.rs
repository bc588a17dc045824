//! Looking a chunk of a batch up in the poll thread's caches: the megaflow the previous
//! packet hit, the exact-match cache, then the megaflow classifier.

use super::OpenFlowStats;
use crate::dpcls::{Dpcls, Megaflow, LOOKUP_CHUNK};
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
        let mut n_todo = 0;
        // Stage 1: packets of one flow (or of flows sharing a megaflow) come in runs, and
        // checking a mask's few words is cheaper than hashing and probing.
        match prev {
            Some(m) if !m.is_dead() => {
                for (i, k) in keys.iter().enumerate() {
                    if m.covers_fast(k.as_words()) {
                        found[i] = Some(m);
                    } else {
                        todo[n_todo] = i as u8;
                        n_todo += 1;
                    }
                }
                t.stats.megaflow_hits += (keys.len() - n_todo) as u64;
                if n_todo == 0 {
                    return prev;
                }
            }
            _ => {
                for (i, slot) in todo.iter_mut().enumerate().take(keys.len()) {
                    *slot = i as u8;
                }
                n_todo = keys.len();
            }
        }
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
