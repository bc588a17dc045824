//! Subtables built apart from any classifier and adopted whole.
//!
//! A writer that receives many rules before it may apply them (a bundle: its adds arrive
//! one by one, the commit applies them all) can file them as they come into a [`Prebuilt`],
//! one per mask: the subtable's hash table, stage indices and per-priority counts grow
//! then, not when the rules are applied. [`Classifier::adopt`] later takes such a subtable
//! whole when the classifier has none with its mask, in O(rules) of light work: each rule
//! is given its final id and filed in the id index, nothing is hashed by value again, and
//! the prefixes the subtable deferred are merged at the next re-ranking, as for
//! [`Classifier::insert_shared_unranked`]. When the mask is there already the caller takes
//! the rules back ([`Prebuilt::into_rules`]) and inserts them one by one.
//!
//! A classifier kept as a copy of another (a second copy of a table, catching up with the
//! first after a commit) takes an adopted subtable from it with
//! [`Classifier::share_subtable`]: the same subtable `Arc`, so neither hash table is built
//! twice; the rules are filed in the copy's id index. The first change either classifier
//! then makes to that subtable copies it (copy-on-write, see `crate::classifier`).
//!
//! A [`Prebuilt`] holds the only reference to each of its rules (it takes only unshared
//! ones and lends out none), so their ids can still be set when they are adopted.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::classifier::Classifier;
use crate::config::Config;
use crate::rule::Rule;
use crate::subtable::Subtable;

/// Rules [`Classifier::adopt`] reads ahead of changing them.
const TOUCH_AHEAD: usize = 16;

/// Rules with one mask, filed as a classifier's subtable would file them (see the module
/// documentation).
pub struct Prebuilt<T, const W: usize> {
    pub(crate) cfg: Box<Config<W>>,
    pub(crate) st: Box<Subtable<T, W>>,
    /// Rule count per priority.
    pub(crate) prios: BTreeMap<u32, u32>,
}

impl<T, const W: usize> Prebuilt<T, W> {
    /// An empty subtable for `mask`, laid out as a classifier configured by `cfg` lays out
    /// its own.
    pub fn new(mask: [u64; W], cfg: Config<W>) -> Self {
        Prebuilt {
            st: Box::new(Subtable::new(mask, &cfg)),
            cfg: Box::new(cfg),
            prios: BTreeMap::new(),
        }
    }

    /// The mask every rule here has.
    pub fn mask(&self) -> &[u64; W] {
        &self.st.mask
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.st.n_rules
    }

    /// No rules?
    pub fn is_empty(&self) -> bool {
        self.st.n_rules == 0
    }

    /// Files `rule`, which must have this mask, be held by nothing else and have no value
    /// and priority that a rule here has: otherwise nothing changes and it is handed back.
    pub fn push(&mut self, mut rule: Arc<Rule<T, W>>) -> Result<(), Arc<Rule<T, W>>> {
        if !Arc::ptr_eq(&rule.mask, &self.st.mask) && *rule.mask != *self.st.mask {
            return Err(rule);
        }
        let Some(r) = Arc::get_mut(&mut rule) else {
            return Err(rule);
        };
        if !Arc::ptr_eq(&r.mask, &self.st.mask) {
            r.mask = Arc::clone(&self.st.mask);
        }
        let priority = r.priority;
        self.st.insert_distinct(rule, &self.cfg)?;
        *self.prios.entry(priority).or_insert(0) += 1;
        Ok(())
    }

    /// Every rule, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule<T, W>> {
        self.st.buckets().flat_map(|b| b.iter().map(|r| &**r))
    }

    /// Takes every rule back, in no particular order, each held by nothing else.
    pub fn into_rules(self) -> impl Iterator<Item = Arc<Rule<T, W>>> {
        self.st.into_rules()
    }
}

impl<T, const W: usize> Classifier<T, W> {
    /// True if a subtable has exactly this mask.
    pub fn has_mask(&self, mask: &[u64; W]) -> bool {
        self.by_mask.contains_key(mask)
    }

    /// The rules of the subtable with exactly this mask, if there is one, in no particular
    /// order.
    pub fn rules_with_mask(&self, mask: &[u64; W]) -> impl Iterator<Item = &Arc<Rule<T, W>>> {
        self.by_mask
            .get(mask)
            .and_then(|&s| self.view.slots.get(s as usize))
            .and_then(Option::as_ref)
            .into_iter()
            .flat_map(|st| st.buckets().flat_map(|b| b.iter()))
    }

    /// True if [`Classifier::adopt`] would take `pre`: no subtable has its mask, and
    /// subtables are laid out alike.
    pub fn can_adopt(&self, pre: &Prebuilt<T, W>) -> bool {
        !self.has_mask(&pre.st.mask) && self.view.cfg.same_layout(&pre.cfg)
    }

    /// Takes `pre` as the subtable of its mask (see the module documentation), calling `f`
    /// on each of its rules first, in no particular order, to give it its id: the ids must
    /// be distinct, new to this classifier, and in the order the rules had among those of
    /// equal value and priority. Hands `pre` back unchanged if this classifier has a
    /// subtable with that mask or lays its subtables out otherwise. The ranking is stale
    /// until [`Classifier::rerank`], as after [`Classifier::insert_shared_unranked`].
    pub fn adopt(
        &mut self,
        mut pre: Prebuilt<T, W>,
        mut f: impl FnMut(&mut Rule<T, W>),
    ) -> Result<(), Prebuilt<T, W>> {
        if !self.can_adopt(&pre) {
            return Err(pre);
        }
        let n = pre.st.n_rules;
        // The slot `install` will use, so that one pass over the rules files them.
        let slot = self
            .free
            .last()
            .copied()
            .unwrap_or(self.view.slots.len() as u32);
        let pw = self.view.cfg.partition_word();
        let parted = pw.filter(|&w| pre.st.mask.get(w) == Some(&u64::MAX));
        let mut parts = Vec::new();
        let mut max_id = None;
        self.by_id.reserve(n);
        // The rules are visited in the subtable's order, not their memory's: each chunk's
        // rules are read first (independent loads, whose cache misses overlap), then
        // changed (`Arc::get_mut` is an atomic operation that would wait out each miss
        // alone).
        let mut rules = pre.st.rules_mut();
        let mut chunk: Vec<&mut Arc<Rule<T, W>>> = Vec::with_capacity(TOUCH_AHEAD);
        loop {
            chunk.extend(rules.by_ref().take(TOUCH_AHEAD));
            if chunk.is_empty() {
                break;
            }
            for r in &chunk {
                std::hint::black_box((Arc::strong_count(r), Arc::as_ptr(&r.mask)));
            }
            for r in chunk.drain(..) {
                let Some(m) = Arc::get_mut(r) else {
                    unreachable!("a prebuilt subtable holds the only reference to its rules");
                };
                f(m);
                max_id = max_id.max(Some(r.id.0));
                if let Some(w) = parted {
                    parts.push(r.value[w]);
                }
                let old = self.by_id.insert(r.id, (slot, Arc::clone(r)));
                debug_assert!(old.is_none(), "adopted ids are new");
            }
        }
        drop(rules);
        let installed = self.install(Arc::from(pre.st), pre.prios);
        debug_assert_eq!(installed, slot);
        let tag_bit = self.meta.get(slot as usize).and_then(|m| m.tag_bit);
        if let Some(bit) = tag_bit {
            for v in parts {
                self.partition_add(v, bit);
            }
        }
        if let Some(m) = max_id {
            self.next_id = self.next_id.max(m.saturating_add(1));
        }
        self.view.n_rules += n;
        Ok(())
    }
}

impl<T, const W: usize> Classifier<T, W> {
    /// Takes `from`'s subtable with `mask` as this classifier's own, sharing it (see the
    /// module documentation): its rules, under their ids, join this classifier. In O(its
    /// rules) of light work (each rule's id is filed; nothing is hashed by value). False,
    /// changing nothing, if `from` has no subtable with `mask`, this classifier has one, or
    /// the two lay subtables out otherwise. A rule of this classifier that has the id of
    /// one of the rules taken is replaced by it. The ranking is stale until
    /// [`Classifier::rerank`].
    pub fn share_subtable(&mut self, from: &Classifier<T, W>, mask: &[u64; W]) -> bool {
        let Some(&fslot) = from.by_mask.get(mask) else {
            return false;
        };
        if self.has_mask(mask) || !self.view.cfg.same_layout(&from.view.cfg) {
            return false;
        }
        let Some(Some(st)) = from.view.slots.get(fslot as usize) else {
            return false;
        };
        let prios = from
            .meta
            .get(fslot as usize)
            .map(|m| m.prios.clone())
            .unwrap_or_default();
        let slot = self.install(Arc::clone(st), prios);
        self.by_id.reserve(st.n_rules);
        // The rules in id order if they are most of `from`'s (after a commit of adds, their
        // memory's order, and consecutive slots of the id index), else the subtable's.
        if st.n_rules.saturating_mul(2) >= from.by_id.len() {
            let rules = from
                .by_id
                .values()
                .filter(|(s, _)| *s == fslot)
                .map(|(_, r)| r);
            self.file_shared(slot, rules);
        } else {
            self.file_shared(slot, st.buckets().flat_map(|b| b.iter()));
        }
        self.view.n_rules += st.n_rules;
        true
    }

    /// Files `rules`, those of the subtable just installed in `slot`, in the id index and
    /// partitions; a rule with the id of one of them leaves its own subtable.
    fn file_shared<'a>(&mut self, slot: u32, mut rules: impl Iterator<Item = &'a Arc<Rule<T, W>>>)
    where
        T: 'a,
    {
        let pw = self.view.cfg.partition_word();
        let tag_bit = self.meta.get(slot as usize).and_then(|m| m.tag_bit);
        let mut max_id = None;
        let mut replaced = Vec::new();
        let mut chunk: Vec<&Arc<Rule<T, W>>> = Vec::with_capacity(TOUCH_AHEAD);
        loop {
            chunk.extend(rules.by_ref().take(TOUCH_AHEAD));
            if chunk.is_empty() {
                break;
            }
            // Read each chunk's rules first, so that their cache misses overlap.
            for r in &chunk {
                std::hint::black_box(r.id);
            }
            for r in chunk.drain(..) {
                max_id = max_id.max(Some(r.id.0));
                if let (Some(bit), Some(w)) = (tag_bit, pw) {
                    self.partition_add(r.value[w], bit);
                }
                if let Some(old) = self.by_id.insert(r.id, (slot, Arc::clone(r))) {
                    replaced.push(old);
                }
            }
        }
        for (oslot, old) in replaced {
            self.unfile(oslot, &old);
        }
        if let Some(m) = max_id {
            self.next_id = self.next_id.max(m.saturating_add(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{Match, RuleId};

    fn cfg() -> Config<2> {
        Config::<2>::new().with_stages(&[1, 2]).expect("stages")
    }

    fn rule(id: u64, prio: u32, v: u64, masks: &mut Option<Arc<[u64; 2]>>) -> Arc<Rule<u64, 2>> {
        let m = Match::new([v, 0], [u64::MAX, 0]);
        Arc::new(Rule::prebuilt(RuleId(id), prio, &m, masks, id))
    }

    #[test]
    fn an_adopted_subtable_is_looked_up_and_its_rules_found_by_id() {
        let mut c: Classifier<u64, 2> = Classifier::new(cfg());
        c.insert(Match::new([0, 5], [0, u64::MAX]), 1, 99);
        let mut masks = None;
        let mut pre = Prebuilt::new([u64::MAX, 0], cfg());
        for i in 0..100 {
            assert!(pre.push(rule(i, 10, i, &mut masks)).is_ok());
        }
        assert!(
            pre.push(rule(500, 10, 7, &mut masks)).is_err(),
            "same value and priority"
        );
        assert!(
            pre.push(rule(501, 11, 7, &mut masks)).is_ok(),
            "another priority"
        );
        assert_eq!(pre.len(), 101);
        c.adopt(pre, |r| r.set_id(RuleId(r.id.0 + 1000)))
            .unwrap_or_else(|_| panic!("adopted"));
        c.rerank();
        assert_eq!(c.len(), 102);
        assert_eq!(c.n_subtables(), 2);
        let mut wc = [0; 2];
        let hit = c.lookup(&[7, 0], &mut wc).map(|r| (r.id.0, *r.payload()));
        assert_eq!(hit, Some((1501, 501)));
        assert_eq!(c.get(RuleId(1042)).map(|r| *r.payload()), Some(42));
        assert_eq!(c.remove(RuleId(1042)).map(|r| *r.payload()), Some(42));
        let mut wc = [0; 2];
        assert_eq!(c.lookup(&[42, 0], &mut wc).map(|r| r.id.0), None);
        // New ids the classifier picks are above the adopted ones.
        let id = c.insert(Match::new([3, 0], [u64::MAX, u64::MAX]), 1, 0);
        assert!(id.0 > 1501);
    }

    #[test]
    fn a_subtable_whose_mask_is_there_is_handed_back() {
        let mut c: Classifier<u64, 2> = Classifier::new(cfg());
        c.insert(Match::new([1, 0], [u64::MAX, 0]), 1, 0);
        let mut masks = None;
        let mut pre = Prebuilt::new([u64::MAX, 0], cfg());
        for i in 0..10 {
            assert!(pre.push(rule(i + 10, 10, i, &mut masks)).is_ok());
        }
        let pre = match c.adopt(pre, |_| {}) {
            Ok(()) => panic!("the mask exists"),
            Err(p) => p,
        };
        let other = Config::<2>::new();
        let mut c2: Classifier<u64, 2> = Classifier::new(other);
        let pre = match c2.adopt(pre, |_| {}) {
            Ok(()) => panic!("another layout"),
            Err(p) => p,
        };
        let mut ids: Vec<u64> = pre.into_rules().map(|r| r.id.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, (10..20).collect::<Vec<_>>());
        assert_eq!(c.len(), 1);
        assert!(c2.is_empty());
    }

    /// Every rule as (id, value, priority, payload), sorted.
    fn contents(c: &Classifier<u64, 2>) -> Vec<(u64, [u64; 2], u32, u64)> {
        let mut v: Vec<_> = c
            .iter()
            .map(|r| (r.id.0, r.value, r.priority, *r.payload()))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_copy_shares_an_adopted_subtable_until_either_changes_it() {
        // The shared subtable is most of the rules, or a few of them (filed in another
        // order).
        share_and_change(0);
        share_and_change(300);
    }

    fn share_and_change(others: u64) {
        // Word 1 is the partition word: the subtable with it exact is tagged.
        let cfg = cfg().with_partition_word(1).expect("partition word");
        let mut a: Classifier<u64, 2> = Classifier::new(cfg);
        let mut b: Classifier<u64, 2> = Classifier::new(cfg);
        for c in [&mut a, &mut b] {
            c.insert_with_id(RuleId(1), Match::new([0, 5], [0, u64::MAX]), 1, 99);
            for i in 0..others {
                let m = Match::new([i, 0], [u64::MAX, 0]);
                c.insert_with_id(RuleId(1000 + i), m, 2, i);
            }
        }
        let mask = [u64::MAX, u64::MAX];
        let mut masks = None;
        let mut pre = Prebuilt::new(mask, cfg);
        for i in 0..100 {
            let m = Match::new([i, i % 3], mask);
            assert!(pre
                .push(Arc::new(Rule::prebuilt(RuleId(i), 10, &m, &mut masks, i)))
                .is_ok());
        }
        a.adopt(pre, |r| r.set_id(RuleId(r.id.0 + 10)))
            .unwrap_or_else(|_| panic!("adopted"));
        a.rerank();
        // `b` has a rule under one of the adopted ids (10): it is replaced.
        b.insert_with_id(RuleId(10), Match::new([7, 0], [u64::MAX, 0]), 3, 7);
        assert!(!b.share_subtable(&a, &[1, 1]), "no such subtable");
        assert!(b.share_subtable(&a, &mask));
        assert!(!b.share_subtable(&a, &mask), "b has it now");
        b.rerank();
        assert_eq!(contents(&a), contents(&b));
        assert_eq!(b.len(), 101 + others as usize);
        let subtables = if others == 0 { 2 } else { 3 };
        assert_eq!(
            b.n_subtables(),
            subtables,
            "the replaced rule's subtable went"
        );
        let find = |c: &Classifier<u64, 2>, k: [u64; 2]| {
            let mut wc = [0; 2];
            c.lookup(&k, &mut wc).map(|r| r.id.0)
        };
        for k in [[42, 0], [41, 2], [3, 5], [7, 0], [9, 9], [299, 0]] {
            assert_eq!(find(&a, k), find(&b, k), "{k:?}");
        }
        assert_eq!(find(&b, [42, 0]), Some(52));
        // The same rules, not copies.
        let (ra, rb) = (a.get(RuleId(52)), b.get(RuleId(52)));
        assert!(ra.zip(rb).is_some_and(|(x, y)| Arc::ptr_eq(x, y)));
        // Changing one leaves the other as it was.
        assert!(b.remove(RuleId(52)).is_some());
        b.insert_with_id(RuleId(500), Match::new([42, 1], mask), 20, 5);
        assert_eq!(find(&b, [42, 1]), Some(500));
        assert_eq!(find(&a, [42, 0]), Some(52));
        assert_ne!(find(&a, [42, 1]), Some(500));
        assert_eq!(a.len(), 101 + others as usize);
        // New ids the classifier picks are above the shared ones.
        let id = b.insert(Match::new([3, 0], [u64::MAX, 0]), 1, 0);
        let top = if others == 0 { 500 } else { 999 + others };
        assert!(id.0 > top);
        let other = Config::<2>::new();
        let mut c: Classifier<u64, 2> = Classifier::new(other);
        assert!(!c.share_subtable(&a, &mask), "another layout");
        assert!(c.is_empty());
    }

    #[test]
    fn shared_or_foreign_rules_are_refused() {
        let mut masks = None;
        let mut pre: Prebuilt<u64, 2> = Prebuilt::new([u64::MAX, 0], cfg());
        let r = rule(1, 1, 1, &mut masks);
        let keep = Arc::clone(&r);
        assert!(pre.push(r).is_err(), "held elsewhere");
        drop(keep);
        let m = Match::new([1, 1], [u64::MAX, 1]);
        let other = Arc::new(Rule::prebuilt(RuleId(2), 1, &m, &mut None, 2));
        assert!(pre.push(other).is_err(), "another mask");
        assert!(pre.is_empty());
    }
}
