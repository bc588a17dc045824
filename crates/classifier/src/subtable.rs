//! One subtable: every rule with one particular mask, hashed in stages.
//!
//! The mask is kept in compact form (the indices of its non-zero words and those words, in
//! key order), split at the configured stage ends; stages where the mask is zero are
//! dropped. For each kept stage but the last there is an index of the hashes of the rules'
//! values over the stages so far (with a count per hash, so removal is exact); the last
//! stage's hash keys the table of buckets, one bucket per distinct masked value, holding that
//! value's rules in descending priority.
//!
//! A lookup hashes the packet's masked words stage by stage, continuing the same hash state,
//! and stops at the first stage whose hash is not in that stage's index. A miss after stage
//! `s` is justified by the mask words of stages `0..=s` alone, or, when a prefix-tracked
//! field of this subtable lies in those stages and its prefix index can explain the miss, by
//! a few leading bits of that field alone (whichever the index allows, see `prefix.rs`).
//! A hit unwildcards the whole mask.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hashbrown::HashTable;

use crate::config::{Config, MAX_STAGES};
use crate::hash::{absorb, finish, BASIS};
use crate::prefix::{field_value, prefix_len, set_prefix_bits, PrefixIndex};
use crate::rule::{Rule, RuleId};

/// The rules of one masked value, highest priority first; among equal priorities, lowest id
/// first (the earliest inserted, for ids the classifier picks), so classifiers holding the
/// same rules under the same ids order them alike whatever order they were inserted in.
pub(crate) struct Bucket<T, const W: usize> {
    pub hash: u64,
    pub head: Arc<Rule<T, W>>,
    pub rest: Vec<Arc<Rule<T, W>>>,
}

impl<T, const W: usize> Clone for Bucket<T, W> {
    fn clone(&self) -> Self {
        Bucket {
            hash: self.hash,
            head: Arc::clone(&self.head),
            rest: self.rest.clone(),
        }
    }
}

impl<T, const W: usize> Bucket<T, W> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Rule<T, W>>> {
        std::iter::once(&self.head).chain(self.rest.iter())
    }

    fn insert(&mut self, r: Arc<Rule<T, W>>) {
        let k = (r.priority, std::cmp::Reverse(r.id));
        let before = |x: &Rule<T, W>| (x.priority, std::cmp::Reverse(x.id)) > k;
        if !before(&self.head) {
            let old = std::mem::replace(&mut self.head, r);
            self.rest.insert(0, old);
        } else {
            let pos = self.rest.partition_point(|x| before(x));
            self.rest.insert(pos, r);
        }
    }

    /// Removes rule `id`; `Err(())` if it was the only one (the caller drops the bucket).
    fn remove(&mut self, id: RuleId) -> Result<Option<Arc<Rule<T, W>>>, ()> {
        if self.head.id == id {
            if self.rest.is_empty() {
                return Err(());
            }
            let next = self.rest.remove(0);
            return Ok(Some(std::mem::replace(&mut self.head, next)));
        }
        Ok(self
            .rest
            .iter()
            .position(|r| r.id == id)
            .map(|i| self.rest.remove(i)))
    }

    fn replace(&mut self, new: Arc<Rule<T, W>>) -> Option<Arc<Rule<T, W>>> {
        if self.head.id == new.id {
            return Some(std::mem::replace(&mut self.head, new));
        }
        let slot = self.rest.iter_mut().find(|r| r.id == new.id)?;
        Some(std::mem::replace(slot, new))
    }
}

pub(crate) struct Subtable<T, const W: usize> {
    pub mask: Arc<[u64; W]>,
    /// Number of non-zero mask words.
    n_words: u8,
    /// Number of kept (non-empty) stages; at least 1 (a catch-all mask has one empty stage).
    n_stages: u8,
    /// Compact word count at the end of each kept stage.
    stage_end: [u8; MAX_STAGES],
    word_idx: [u8; W],
    word_mask: [u64; W],
    /// Hash indices for kept stages `0..n_stages - 1`.
    indices: Vec<HashTable<(u64, u32)>>,
    table: HashTable<Bucket<T, W>>,
    prefixes: Vec<PrefixIndex>,
    pub n_rules: usize,
    pub hits: AtomicU64,
}

impl<T, const W: usize> Clone for Subtable<T, W> {
    fn clone(&self) -> Self {
        Subtable {
            mask: Arc::clone(&self.mask),
            n_words: self.n_words,
            n_stages: self.n_stages,
            stage_end: self.stage_end,
            word_idx: self.word_idx,
            word_mask: self.word_mask,
            indices: self.indices.clone(),
            table: self.table.clone(),
            prefixes: self.prefixes.clone(),
            n_rules: self.n_rules,
            hits: AtomicU64::new(self.hits.load(Ordering::Relaxed)),
        }
    }
}

/// The result of a subtable lookup that missed, for tracing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Miss {
    /// The hash after kept stage `n` was absent (the last stage included).
    Stage(u8),
    /// A prefix index explained the miss.
    Prefix,
}

impl<T, const W: usize> Subtable<T, W> {
    pub(crate) fn new(mask: [u64; W], cfg: &Config<W>) -> Self {
        let mut word_idx = [0u8; W];
        let mut word_mask = [0u64; W];
        let mut n = 0usize;
        let mut stage_end = [0u8; MAX_STAGES];
        let mut stage_of = [0u8; MAX_STAGES];
        let mut n_stages = 0usize;
        let mut start = 0usize;
        for (s, end) in cfg.stage_ends().enumerate() {
            let before = n;
            for (w, &m) in mask.iter().enumerate().take(end).skip(start) {
                if m != 0 {
                    word_idx[n] = w as u8;
                    word_mask[n] = m;
                    n += 1;
                }
            }
            if n > before {
                stage_end[n_stages] = n as u8;
                stage_of[n_stages] = s as u8;
                n_stages += 1;
            }
            start = end;
        }
        if n_stages == 0 {
            n_stages = 1; // catch-all: one empty stage, one bucket
        }
        let mut prefixes = Vec::new();
        for (i, f) in cfg.prefix_fields().iter().enumerate() {
            let Some(plen) = prefix_len(f, &mask) else {
                continue;
            };
            if plen == 0 {
                continue;
            }
            // The kept stage holding the field's first byte (non-empty: the mask has bits there).
            let word = usize::from(f.byte_offset) / 8;
            let orig = cfg.stage_ends().position(|e| word < e).unwrap_or(0) as u8;
            let stage = stage_of
                .iter()
                .take(n_stages)
                .position(|&s| s == orig)
                .unwrap_or(n_stages - 1) as u8;
            prefixes.push(PrefixIndex::new(i as u8, f, plen, stage));
        }
        Subtable {
            mask: Arc::new(mask),
            n_words: n as u8,
            n_stages: n_stages as u8,
            stage_end,
            word_idx,
            word_mask,
            indices: (1..n_stages).map(|_| HashTable::new()).collect(),
            table: HashTable::new(),
            prefixes,
            n_rules: 0,
            hits: AtomicU64::new(0),
        }
    }

    /// Number of kept stages.
    pub(crate) fn n_stages(&self) -> usize {
        usize::from(self.n_stages)
    }

    /// Hashes of an already-masked value after each kept stage.
    fn stage_hashes(&self, value: &[u64; W]) -> [u64; MAX_STAGES] {
        let mut out = [0u64; MAX_STAGES];
        let mut state = BASIS;
        let mut k = 0usize;
        for (s, h) in out.iter_mut().enumerate().take(usize::from(self.n_stages)) {
            let end = usize::from(self.stage_end[s]);
            while k < end {
                state = absorb(state, value[usize::from(self.word_idx[k])]);
                k += 1;
            }
            *h = finish(state);
        }
        out
    }

    /// The hash that keys `value`'s bucket.
    pub(crate) fn bucket_hash(&self, value: &[u64; W]) -> u64 {
        let hs = self.stage_hashes(value);
        hs[usize::from(self.n_stages) - 1]
    }

    #[inline(always)]
    fn same_value(&self, stored: &[u64; W], key: &[u64; W]) -> bool {
        let n = usize::from(self.n_words);
        self.word_idx
            .iter()
            .zip(self.word_mask.iter())
            .take(n)
            .all(|(&i, &m)| {
                let i = usize::from(i);
                key[i] & m == stored[i]
            })
    }

    /// Makes room for `n` more rules (distinct values) without growing on the way.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.table.reserve(n, |b| b.hash);
        for ix in &mut self.indices {
            ix.reserve(n, |e| e.0);
        }
    }

    /// Adds `rule`; with `defer`, its prefixes wait for [`Subtable::settle`] (which must
    /// run before the next lookup).
    pub(crate) fn insert(&mut self, rule: Arc<Rule<T, W>>, cfg: &Config<W>, defer: bool) -> u64 {
        let hs = self.stage_hashes(&rule.value);
        self.insert_hashed(rule, &hs, cfg, defer)
    }

    /// [`Subtable::insert`] given the value's stage hashes `hs`.
    fn insert_hashed(
        &mut self,
        rule: Arc<Rule<T, W>>,
        hs: &[u64; MAX_STAGES],
        cfg: &Config<W>,
        defer: bool,
    ) -> u64 {
        for (ix, &h) in self.indices.iter_mut().zip(hs.iter()) {
            match ix.find_mut(h, |e| e.0 == h) {
                Some(e) => e.1 += 1,
                None => {
                    ix.insert_unique(h, (h, 1), |e| e.0);
                }
            }
        }
        for p in &mut self.prefixes {
            if let Some(f) = cfg.prefix_fields().get(usize::from(p.field)) {
                if defer {
                    p.add_later(field_value(f, &rule.value));
                } else {
                    p.add(field_value(f, &rule.value));
                }
            }
        }
        let h = hs[usize::from(self.n_stages) - 1];
        if let Some(b) = self
            .table
            .find_mut(h, |b| b.hash == h && b.head.value == rule.value)
        {
            b.insert(rule);
        } else {
            self.table.insert_unique(
                h,
                Bucket {
                    hash: h,
                    head: rule,
                    rest: Vec::new(),
                },
                |b| b.hash,
            );
        }
        self.n_rules += 1;
        h
    }

    /// [`Subtable::insert`] with its prefixes deferred, unless a rule with the same value
    /// and priority is in already: then nothing changes and `rule` is handed back.
    pub(crate) fn insert_distinct(
        &mut self,
        rule: Arc<Rule<T, W>>,
        cfg: &Config<W>,
    ) -> Result<(), Arc<Rule<T, W>>> {
        let hs = self.stage_hashes(&rule.value);
        let h = hs[usize::from(self.n_stages) - 1];
        let same = self
            .table
            .find(h, |b| b.hash == h && b.head.value == rule.value)
            .is_some_and(|b| b.iter().any(|r| r.priority == rule.priority));
        if same {
            return Err(rule);
        }
        self.insert_hashed(rule, &hs, cfg, true);
        Ok(())
    }

    /// Every rule, to change before the subtable is filed anywhere (its buckets keep their
    /// order only if `f` keeps the order of ids among rules of equal priority).
    pub(crate) fn rules_mut(&mut self) -> impl Iterator<Item = &mut Arc<Rule<T, W>>> {
        self.table
            .iter_mut()
            .flat_map(|b| std::iter::once(&mut b.head).chain(b.rest.iter_mut()))
    }

    /// Takes every rule out, in no particular order.
    pub(crate) fn into_rules(self) -> impl Iterator<Item = Arc<Rule<T, W>>> {
        self.table
            .into_iter()
            .flat_map(|b| std::iter::once(b.head).chain(b.rest))
    }

    /// True if prefixes deferred by [`Subtable::insert`] wait for [`Subtable::settle`].
    pub(crate) fn unsettled(&self) -> bool {
        self.prefixes.iter().any(|p| p.unsettled())
    }

    /// Adds the prefixes [`Subtable::insert`] deferred.
    pub(crate) fn settle(&mut self) {
        for p in &mut self.prefixes {
            p.settle();
        }
    }

    pub(crate) fn remove(
        &mut self,
        id: RuleId,
        value: &[u64; W],
        cfg: &Config<W>,
    ) -> Option<Arc<Rule<T, W>>> {
        let hs = self.stage_hashes(value);
        let h = hs[usize::from(self.n_stages) - 1];
        let entry = self
            .table
            .find_entry(h, |b| b.hash == h && b.head.value == *value)
            .ok()?;
        let removed = match entry.into_mut().remove(id) {
            Ok(r) => r?,
            Err(()) => {
                let entry = self
                    .table
                    .find_entry(h, |b| b.hash == h && b.head.value == *value)
                    .ok()?;
                entry.remove().0.head
            }
        };
        for (ix, &h) in self.indices.iter_mut().zip(hs.iter()) {
            if let Ok(mut e) = ix.find_entry(h, |e| e.0 == h) {
                if e.get().1 > 1 {
                    e.get_mut().1 -= 1;
                } else {
                    e.remove();
                }
            }
        }
        for p in &mut self.prefixes {
            if let Some(f) = cfg.prefix_fields().get(usize::from(p.field)) {
                p.remove(field_value(f, value));
            }
        }
        self.n_rules -= 1;
        Some(removed)
    }

    pub(crate) fn replace(&mut self, new: Arc<Rule<T, W>>) -> Option<Arc<Rule<T, W>>> {
        let h = self.bucket_hash(&new.value);
        let value = new.value;
        self.table
            .find_mut(h, |b| b.hash == h && b.head.value == value)?
            .replace(new)
    }

    /// The bucket of an already-masked value.
    pub(crate) fn bucket(&self, value: &[u64; W]) -> Option<&Bucket<T, W>> {
        let h = self.bucket_hash(value);
        self.table
            .find(h, |b| b.hash == h && b.head.value == *value)
    }

    pub(crate) fn buckets(&self) -> impl Iterator<Item = &Bucket<T, W>> {
        self.table.iter()
    }

    /// Unwildcards the mask words of kept stages `0..=s`.
    #[inline]
    fn fold_stages(&self, wc: &mut [u64; W], s: usize) {
        let end = usize::from(self.stage_end.get(s).copied().unwrap_or(self.n_words));
        for (&i, &m) in self.word_idx.iter().zip(self.word_mask.iter()).take(end) {
            wc[usize::from(i)] |= m;
        }
    }

    /// Records a miss after kept stage `s` in `wc`, as cheaply (in bits) as possible.
    #[cold]
    fn miss(&self, key: &[u64; W], wc: &mut [u64; W], s: usize, cfg: &Config<W>) -> Miss {
        let mut best: Option<(u32, usize)> = None;
        for p in &self.prefixes {
            if usize::from(p.stage) > s {
                continue;
            }
            let Some(f) = cfg.prefix_fields().get(usize::from(p.field)) else {
                continue;
            };
            if let Some(bits) = p.explain_miss(field_value(f, key)) {
                if best.is_none_or(|(b, _)| bits < b) {
                    best = Some((bits, usize::from(p.field)));
                }
            }
        }
        match best.and_then(|(bits, fi)| Some((bits, cfg.prefix_fields().get(fi)?))) {
            Some((bits, f)) => {
                set_prefix_bits(f, wc, bits);
                Miss::Prefix
            }
            None => {
                self.fold_stages(wc, s);
                Miss::Stage(s as u8)
            }
        }
    }

    /// Looks `key` up, unwildcarding in `wc` the bits the answer depends on.
    #[inline]
    pub(crate) fn lookup(
        &self,
        key: &[u64; W],
        wc: &mut [u64; W],
        cfg: &Config<W>,
    ) -> Result<&Arc<Rule<T, W>>, Miss> {
        let mut state = BASIS;
        let mut k = 0usize;
        let last = usize::from(self.n_stages) - 1;
        for (s, ix) in self.indices.iter().enumerate() {
            let end = usize::from(self.stage_end[s]);
            while k < end {
                let i = usize::from(self.word_idx[k]);
                state = absorb(state, key[i] & self.word_mask[k]);
                k += 1;
            }
            let h = finish(state);
            if ix.find(h, |e| e.0 == h).is_none() {
                return Err(self.miss(key, wc, s, cfg));
            }
        }
        let n = usize::from(self.n_words);
        while k < n {
            let i = usize::from(self.word_idx[k]);
            state = absorb(state, key[i] & self.word_mask[k]);
            k += 1;
        }
        let h = finish(state);
        match self
            .table
            .find(h, |b| b.hash == h && self.same_value(&b.head.value, key))
        {
            Some(b) => {
                self.fold_stages(wc, last);
                if cfg.count_hits {
                    // A plain load/store, not an atomic add: losing a count when two
                    // threads race is acceptable for a ranking heuristic.
                    let n = self.hits.load(Ordering::Relaxed);
                    self.hits.store(n.wrapping_add(1), Ordering::Relaxed);
                }
                Ok(&b.head)
            }
            None => Err(self.miss(key, wc, last, cfg)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: u64, prio: u32, value: [u64; 4], mask: &Arc<[u64; 4]>) -> Arc<Rule<u32, 4>> {
        let mut v = value;
        for (a, m) in v.iter_mut().zip(mask.iter()) {
            *a &= m;
        }
        Arc::new(Rule {
            id: RuleId(id),
            priority: prio,
            value: v,
            mask: Arc::clone(mask),
            payload: id as u32,
        })
    }

    fn cfg() -> Config<4> {
        Config::<4>::new().with_stages(&[1, 2, 3, 4]).unwrap()
    }

    #[test]
    fn stages_skip_zero_words_and_miss_early() {
        let cfg = cfg();
        let mask = [u64::MAX, 0, 0xff, 0xffff];
        let mut st: Subtable<u32, 4> = Subtable::new(mask, &cfg);
        assert_eq!(st.n_stages, 3);
        assert_eq!(st.indices.len(), 2);
        let m = Arc::clone(&st.mask);
        st.insert(rule(1, 5, [1, 0, 2, 80], &m), &cfg, false);
        st.insert(rule(2, 7, [1, 0, 2, 80], &m), &cfg, false);
        st.insert(rule(3, 5, [1, 0, 3, 443], &m), &cfg, false);
        let mut wc = [0; 4];
        let r = st.lookup(&[1, 99, 2, 80], &mut wc, &cfg).unwrap();
        assert_eq!(r.id, RuleId(2));
        assert_eq!(wc, mask);
        // Miss in stage 0: only word 0 unwildcarded.
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[9, 0, 2, 80], &mut wc, &cfg).err(),
            Some(Miss::Stage(0))
        );
        assert_eq!(wc, [u64::MAX, 0, 0, 0]);
        // Miss in the middle stage: L4 word stays wildcarded.
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[1, 0, 4, 80], &mut wc, &cfg).err(),
            Some(Miss::Stage(1))
        );
        assert_eq!(wc, [u64::MAX, 0, 0xff, 0]);
        // Final-stage miss.
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[1, 0, 2, 81], &mut wc, &cfg).err(),
            Some(Miss::Stage(2))
        );
        assert_eq!(wc, mask);
        // Removal keeps the others and the indices exact.
        assert_eq!(
            st.remove(RuleId(2), &[1, 0, 2, 80], &cfg).unwrap().id,
            RuleId(2)
        );
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[1, 0, 2, 80], &mut wc, &cfg).unwrap().id,
            RuleId(1)
        );
        st.remove(RuleId(1), &[1, 0, 2, 80], &cfg).unwrap();
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[1, 0, 2, 80], &mut wc, &cfg).err(),
            Some(Miss::Stage(1))
        );
        assert_eq!(st.n_rules, 1);
        assert!(st.remove(RuleId(1), &[1, 0, 2, 80], &cfg).is_none());
    }

    #[test]
    fn catch_all_subtable() {
        let cfg = cfg();
        let mut st: Subtable<u32, 4> = Subtable::new([0; 4], &cfg);
        let m = Arc::clone(&st.mask);
        st.insert(rule(1, 0, [0; 4], &m), &cfg, false);
        let mut wc = [0; 4];
        assert_eq!(
            st.lookup(&[5, 6, 7, 8], &mut wc, &cfg).unwrap().id,
            RuleId(1)
        );
        assert_eq!(wc, [0; 4]);
    }

    #[test]
    fn bucket_order_is_priority_then_insertion() {
        let cfg = cfg();
        let mut st: Subtable<u32, 4> = Subtable::new([1, 0, 0, 0], &cfg);
        let m = Arc::clone(&st.mask);
        for (id, p) in [(1, 5), (2, 9), (3, 5), (4, 9), (5, 1)] {
            st.insert(rule(id, p, [1, 0, 0, 0], &m), &cfg, false);
        }
        let ids: Vec<u64> = st
            .bucket(&[1, 0, 0, 0])
            .unwrap()
            .iter()
            .map(|r| r.id.0)
            .collect();
        assert_eq!(ids, vec![2, 4, 1, 3, 5]);
    }
}
