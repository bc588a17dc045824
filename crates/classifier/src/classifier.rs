//! The owning, mutable classifier: a [`View`] plus the writer's bookkeeping (where each
//! rule lives, per-subtable priority counts, free subtable slots).
//!
//! Mutations go through `Arc::make_mut` on the subtable they touch and on the partition
//! map. When the classifier is used alone nothing else holds those `Arc`s and the change is
//! made in place; when a [`crate::Writer`] has published a snapshot that shares them, the
//! first change to a subtable after a publication copies that subtable (copy-on-write) and
//! later changes in the same batch reuse the copy.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::{Config, Ranking};
use crate::hash::{FastBuild, IdBuild};
use crate::rule::{Match, Rule, RuleId};
use crate::subtable::Subtable;
use crate::view::{Header, View};

#[derive(Default)]
pub(crate) struct SlotMeta {
    /// Rule count per priority, for the subtable's maximum.
    pub(crate) prios: BTreeMap<u32, u32>,
    /// Partition tag bit, if the subtable matches the partition word exactly.
    pub(crate) tag_bit: Option<u8>,
}

/// A classifier owned by one thread: `&mut self` to change rules, `&self` (through
/// [`Deref`] to [`View`]) to look them up. Use a [`crate::Writer`] to share it with readers
/// on other threads.
pub struct Classifier<T, const W: usize> {
    pub(crate) view: View<T, W>,
    pub(crate) by_mask: HashMap<[u64; W], u32, FastBuild>,
    pub(crate) meta: Vec<SlotMeta>,
    pub(crate) by_id: HashMap<RuleId, (u32, Arc<Rule<T, W>>), IdBuild>,
    pub(crate) free: Vec<u32>,
    pub(crate) next_id: u64,
    /// The mask (as the rule carried it) of the last rule [`Classifier::insert_shared`]
    /// placed, and its subtable's slot: a run of rules sharing one mask `Arc` (a bundle's
    /// adds, a copy catching up) finds its subtable without hashing the mask each time.
    /// Cleared whenever a slot is freed.
    last_shared: Option<(Arc<[u64; W]>, u32)>,
}

impl<T, const W: usize> Deref for Classifier<T, W> {
    type Target = View<T, W>;
    fn deref(&self) -> &View<T, W> {
        &self.view
    }
}

impl<T, const W: usize> Classifier<T, W> {
    /// An empty classifier.
    pub fn new(cfg: Config<W>) -> Self {
        Classifier {
            view: View::new(cfg),
            by_mask: HashMap::default(),
            meta: Vec::new(),
            by_id: HashMap::default(),
            free: Vec::new(),
            next_id: 1,
            last_shared: None,
        }
    }

    /// The lookup structure.
    pub fn view(&self) -> &View<T, W> {
        &self.view
    }

    /// Adds a rule and returns its id. Duplicates (same match and priority) are allowed;
    /// OpenFlow's "replace an identical flow" is the caller's [`View::find_exact`] +
    /// [`Classifier::replace`].
    pub fn insert(&mut self, m: Match<W>, priority: u32, payload: T) -> RuleId {
        let id = self.insert_raw(m, priority, payload);
        self.refresh();
        id
    }

    /// Adds a rule under an id the caller chooses (replacing any rule that has it), so that
    /// several classifiers can hold the same rule under the same id and share it with
    /// [`Classifier::insert_shared`]. Ids the classifier picks itself are always above every
    /// id inserted so far, so the two kinds can be mixed.
    pub fn insert_with_id(&mut self, id: RuleId, m: Match<W>, priority: u32, payload: T) {
        self.insert_with_id_raw(id, m, priority, payload);
        self.refresh();
    }

    /// Adds a rule as another classifier stores it (the same `Arc`: its value, mask and
    /// payload are not copied), under its id; a rule already under that id is replaced.
    pub fn insert_shared(&mut self, rule: Arc<Rule<T, W>>) {
        self.insert_shared_raw(rule);
        self.refresh();
    }

    /// [`Classifier::insert_shared`] without re-ranking: for a writer adding many rules
    /// between other changes (a bundle commit), who calls [`Classifier::rerank`] once
    /// before anything looks up through this classifier. Until then [`View::lookup`] and
    /// [`View::n_subtables`] may miss the rules' subtable if it is new, and the rules'
    /// prefixes are not in their subtable's prefix sets (the re-ranking merges them in one
    /// pass); `get`, `iter`, `find_exact` and `find_loose` already see them.
    pub fn insert_shared_unranked(&mut self, rule: Arc<Rule<T, W>>) {
        self.insert_shared_at(rule, true);
    }

    /// Makes room for `additional` more rules in the id index.
    pub fn reserve(&mut self, additional: usize) {
        self.by_id.reserve(additional);
    }

    /// Makes room for `n` more rules with `rule`'s mask (in the id index and in their
    /// subtable, made now if there is none; an empty one goes at the next re-ranking), so
    /// that adding them does not grow and rehash the tables on the way.
    pub fn reserve_like(&mut self, rule: &Rule<T, W>, n: usize) {
        self.by_id.reserve(n);
        let slot = self.slot_for(&rule.mask);
        if let Some(Some(st)) = self.view.slots.get_mut(slot as usize) {
            Arc::make_mut(st).reserve(n);
        }
    }

    /// Removes a rule; `None` if there is no rule `id`.
    pub fn remove(&mut self, id: RuleId) -> Option<Arc<Rule<T, W>>> {
        let r = self.remove_raw(id);
        self.refresh();
        r
    }

    /// Gives rule `id` a new payload (same id, match and priority); returns the old rule.
    pub fn replace(&mut self, id: RuleId, payload: T) -> Option<Arc<Rule<T, W>>> {
        self.replace_raw(id, payload)
    }

    /// The rule with this id.
    pub fn get(&self, id: RuleId) -> Option<&Arc<Rule<T, W>>> {
        self.by_id.get(&id).map(|(_, r)| r)
    }

    /// Runs `f` with a handle that changes rules without re-ranking after each change, then
    /// re-ranks once: N changes cost O(N) (plus one copy of each touched subtable when a
    /// published snapshot shares it), not O(N * subtables).
    pub fn batch<R>(&mut self, f: impl FnOnce(&mut Batch<'_, T, W>) -> R) -> R {
        let mut b = Batch { cls: self };
        f(&mut b)
        // `b` re-ranks on drop, also if `f` panics.
    }

    /// Chooses the ranking and re-ranks.
    pub fn set_ranking(&mut self, ranking: Ranking) {
        self.view.cfg.ranking = ranking;
        self.refresh();
    }

    /// Re-ranks the subtables (by the configured ranking, with the current hit counts).
    pub fn rerank(&mut self) {
        self.refresh();
    }

    /// Switches to [`Ranking::Hits`] and sorts the subtables by hits, busiest first.
    pub fn sort_subtables_by_hits(&mut self) {
        self.set_ranking(Ranking::Hits);
    }

    /// Zeroes every subtable's hit counter.
    pub fn reset_hits(&mut self) {
        for st in self.view.slots.iter().flatten() {
            st.hits.store(0, Ordering::Relaxed);
        }
    }

    fn new_subtable(&mut self, mask: [u64; W]) -> u32 {
        let st = Arc::new(Subtable::new(mask, &self.view.cfg));
        self.install(st, BTreeMap::new())
    }

    /// Files `st`, a subtable with a mask none of this classifier's has, whose rules count
    /// `prios` per priority, in a free slot; returns the slot.
    pub(crate) fn install(&mut self, st: Arc<Subtable<T, W>>, prios: BTreeMap<u32, u32>) -> u32 {
        let cfg = self.view.cfg;
        let mask = *st.mask;
        let tag_bit = cfg
            .partition_word()
            .filter(|&pw| mask[pw] == u64::MAX)
            .map(|_| (FastBuild.hash_one(mask) & 63) as u8);
        let meta = SlotMeta { prios, tag_bit };
        let slot = match self.free.pop() {
            Some(s) => {
                if let Some(x) = self.view.slots.get_mut(s as usize) {
                    *x = Some(st);
                }
                if let Some(x) = self.meta.get_mut(s as usize) {
                    *x = meta;
                }
                s
            }
            None => {
                self.view.slots.push(Some(st));
                self.meta.push(meta);
                (self.view.slots.len() - 1) as u32
            }
        };
        self.by_mask.insert(mask, slot);
        slot
    }

    pub(crate) fn partition_add(&mut self, value: u64, bit: u8) {
        let parts = Arc::make_mut(&mut self.view.partitions);
        let p = parts.entry(value).or_default();
        match p.counts.iter_mut().find(|(b, _)| *b == bit) {
            Some((_, n)) => *n += 1,
            None => p.counts.push((bit, 1)),
        }
        p.tags |= 1u64 << bit;
    }

    fn partition_remove(&mut self, value: u64, bit: u8) {
        let parts = Arc::make_mut(&mut self.view.partitions);
        let Some(p) = parts.get_mut(&value) else {
            return;
        };
        if let Some(i) = p.counts.iter().position(|(b, _)| *b == bit) {
            if let Some((_, n)) = p.counts.get_mut(i) {
                *n -= 1;
                if *n == 0 {
                    p.counts.swap_remove(i);
                    p.tags &= !(1u64 << bit);
                }
            }
        }
        if p.counts.is_empty() {
            parts.remove(&value);
        }
    }

    pub(crate) fn insert_raw(&mut self, m: Match<W>, priority: u32, payload: T) -> RuleId {
        let id = RuleId(self.next_id);
        self.insert_with_id_raw(id, m, priority, payload);
        id
    }

    pub(crate) fn insert_with_id_raw(
        &mut self,
        id: RuleId,
        m: Match<W>,
        priority: u32,
        payload: T,
    ) {
        if self.by_id.contains_key(&id) {
            self.remove_raw(id);
        }
        let slot = self.slot_for(m.mask());
        let Some(Some(st)) = self.view.slots.get(slot as usize) else {
            unreachable!("by_mask points at a live subtable");
        };
        let rule = Arc::new(Rule {
            id,
            priority,
            value: *m.value(),
            mask: Arc::clone(&st.mask),
            payload,
        });
        self.place(slot, rule, false);
    }

    pub(crate) fn insert_shared_raw(&mut self, rule: Arc<Rule<T, W>>) {
        self.insert_shared_at(rule, false);
    }

    /// [`Classifier::insert_shared_raw`]; with `defer`, the rule's prefixes are added at
    /// the next re-ranking ([`Classifier::refresh`]).
    fn insert_shared_at(&mut self, mut rule: Arc<Rule<T, W>>, defer: bool) {
        if let Some((slot, old)) = self.by_id.get_mut(&rule.id) {
            if old.priority == rule.priority && old.value == rule.value && old.mask == rule.mask {
                let Some(Some(st)) = self.view.slots.get_mut(*slot as usize) else {
                    unreachable!("a live rule's subtable is live");
                };
                Arc::make_mut(st).replace(Arc::clone(&rule));
                *old = rule;
                return;
            }
            self.remove_raw(rule.id);
        }
        let slot = match &self.last_shared {
            Some((m, s)) if Arc::ptr_eq(m, &rule.mask) => *s,
            _ => {
                let s = self.slot_for(&rule.mask);
                self.last_shared = Some((Arc::clone(&rule.mask), s));
                s
            }
        };
        // A rule built apart (`Rule::prebuilt`) and held by nobody else takes the
        // subtable's copy of the mask, as `insert` makes it.
        if let Some(Some(st)) = self.view.slots.get(slot as usize) {
            if !Arc::ptr_eq(&rule.mask, &st.mask) {
                if let Some(r) = Arc::get_mut(&mut rule) {
                    r.mask = Arc::clone(&st.mask);
                }
            }
        }
        self.place(slot, rule, defer);
    }

    fn slot_for(&mut self, mask: &[u64; W]) -> u32 {
        match self.by_mask.get(mask) {
            Some(&s) => s,
            None => self.new_subtable(*mask),
        }
    }

    /// Adds `rule` to subtable `slot` (whose mask it has) and to the bookkeeping.
    fn place(&mut self, slot: u32, rule: Arc<Rule<T, W>>, defer: bool) {
        let cfg = self.view.cfg;
        self.next_id = self.next_id.max(rule.id.0.saturating_add(1));
        let Some(Some(st)) = self.view.slots.get_mut(slot as usize) else {
            unreachable!("by_mask points at a live subtable");
        };
        Arc::make_mut(st).insert(Arc::clone(&rule), &cfg, defer);
        let mut tag_bit = None;
        if let Some(meta) = self.meta.get_mut(slot as usize) {
            *meta.prios.entry(rule.priority).or_insert(0) += 1;
            tag_bit = meta.tag_bit;
        }
        if let (Some(bit), Some(pw)) = (tag_bit, cfg.partition_word()) {
            self.partition_add(rule.value[pw], bit);
        }
        self.by_id.insert(rule.id, (slot, rule));
        self.view.n_rules += 1;
    }

    pub(crate) fn remove_raw(&mut self, id: RuleId) -> Option<Arc<Rule<T, W>>> {
        let (slot, rule) = self.by_id.remove(&id)?;
        self.unfile(slot, &rule);
        Some(rule)
    }

    /// Takes `rule`, no longer in the id index, out of subtable `slot` and the counts.
    pub(crate) fn unfile(&mut self, slot: u32, rule: &Rule<T, W>) {
        let id = rule.id;
        let cfg = self.view.cfg;
        let Some(Some(st)) = self.view.slots.get_mut(slot as usize) else {
            unreachable!("a live rule's subtable is live");
        };
        let st = Arc::make_mut(st);
        let removed = st.remove(id, &rule.value, &cfg);
        debug_assert!(removed.is_some());
        let mut tag_bit = None;
        if let Some(meta) = self.meta.get_mut(slot as usize) {
            if let Some(n) = meta.prios.get_mut(&rule.priority) {
                *n -= 1;
                if *n == 0 {
                    meta.prios.remove(&rule.priority);
                }
            }
            tag_bit = meta.tag_bit;
        }
        if let (Some(bit), Some(pw)) = (tag_bit, cfg.partition_word()) {
            self.partition_remove(rule.value[pw], bit);
        }
        self.view.n_rules -= 1;
    }

    pub(crate) fn replace_raw(&mut self, id: RuleId, payload: T) -> Option<Arc<Rule<T, W>>> {
        let (slot, old) = self.by_id.get_mut(&id)?;
        let Some(Some(st)) = self.view.slots.get_mut(*slot as usize) else {
            unreachable!("a live rule's subtable is live");
        };
        let new = Arc::new(Rule {
            id,
            priority: old.priority,
            value: old.value,
            mask: Arc::clone(&old.mask),
            payload,
        });
        Arc::make_mut(st).replace(Arc::clone(&new));
        Some(std::mem::replace(old, new))
    }

    /// Adds the prefixes [`Classifier::insert_shared_unranked`] deferred, drops empty
    /// subtables and rebuilds the ranking. O(subtables log subtables), plus the deferred
    /// prefixes' merge.
    pub(crate) fn refresh(&mut self) {
        let mut ranked = Vec::with_capacity(self.by_mask.len());
        let mut hits = Vec::with_capacity(self.by_mask.len());
        for (slot, entry) in self.view.slots.iter_mut().enumerate() {
            let Some(st) = entry else { continue };
            if st.unsettled() {
                Arc::make_mut(st).settle();
            }
            if st.n_rules == 0 {
                self.by_mask.remove(&*st.mask);
                *entry = None;
                self.free.push(slot as u32);
                self.last_shared = None;
                continue;
            }
            let meta = self.meta.get(slot);
            let max_priority = meta
                .and_then(|m| m.prios.last_key_value())
                .map_or(0, |(p, _)| *p);
            let tag = meta.and_then(|m| m.tag_bit).map_or(0, |b| 1u64 << b);
            ranked.push(Header {
                max_priority,
                suffix_max: 0,
                tag,
                slot: slot as u32,
            });
            hits.push(st.hits.load(Ordering::Relaxed));
        }
        let mut order: Vec<usize> = (0..ranked.len()).collect();
        let key = |i: &usize| {
            let h = ranked[*i];
            let n = hits[*i];
            match self.view.cfg.ranking {
                Ranking::Priority => (u64::from(h.max_priority), n, u32::MAX - h.slot),
                Ranking::Hits => (n, u64::from(h.max_priority), u32::MAX - h.slot),
            }
        };
        order.sort_unstable_by_key(|i| std::cmp::Reverse(key(i)));
        let mut sorted: Vec<Header> = order.iter().map(|&i| ranked[i]).collect();
        let mut m = 0u32;
        for h in sorted.iter_mut().rev() {
            m = m.max(h.max_priority);
            h.suffix_max = m;
        }
        self.view.ranked = sorted;
    }
}

/// Changes rules inside [`Classifier::batch`] / [`crate::Writer::batch`]; the ranking (and,
/// for a writer, the published snapshot) is brought up to date once, when the batch ends.
/// Lookups are not offered here: the ranking is stale until then.
pub struct Batch<'a, T, const W: usize> {
    cls: &'a mut Classifier<T, W>,
}

impl<T, const W: usize> Batch<'_, T, W> {
    /// See [`Classifier::insert`].
    pub fn insert(&mut self, m: Match<W>, priority: u32, payload: T) -> RuleId {
        self.cls.insert_raw(m, priority, payload)
    }
    /// See [`Classifier::insert_with_id`].
    pub fn insert_with_id(&mut self, id: RuleId, m: Match<W>, priority: u32, payload: T) {
        self.cls.insert_with_id_raw(id, m, priority, payload)
    }
    /// See [`Classifier::insert_shared`].
    pub fn insert_shared(&mut self, rule: Arc<Rule<T, W>>) {
        self.cls.insert_shared_raw(rule)
    }
    /// See [`Classifier::remove`].
    pub fn remove(&mut self, id: RuleId) -> Option<Arc<Rule<T, W>>> {
        self.cls.remove_raw(id)
    }
    /// See [`Classifier::replace`].
    pub fn replace(&mut self, id: RuleId, payload: T) -> Option<Arc<Rule<T, W>>> {
        self.cls.replace_raw(id, payload)
    }
    /// See [`Classifier::get`].
    pub fn get(&self, id: RuleId) -> Option<&Arc<Rule<T, W>>> {
        self.cls.get(id)
    }
    /// Rules with exactly this match and priority (see [`View::find_exact`]).
    pub fn find_exact(&self, m: &Match<W>, priority: u32) -> Vec<RuleId> {
        self.cls
            .view
            .find_exact(m, priority)
            .map(|r| r.id)
            .collect()
    }
    /// Rules selected non-strictly by `m` (see [`View::find_loose`]).
    pub fn find_loose(&self, m: &Match<W>) -> Vec<RuleId> {
        self.cls.view.find_loose(m).map(|r| r.id).collect()
    }
    /// Number of rules.
    pub fn len(&self) -> usize {
        self.cls.view.n_rules
    }
    /// No rules?
    pub fn is_empty(&self) -> bool {
        self.cls.view.n_rules == 0
    }
}

impl<T, const W: usize> Drop for Batch<'_, T, W> {
    fn drop(&mut self) {
        self.cls.refresh();
    }
}
