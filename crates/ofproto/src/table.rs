//! One OpenFlow flow table: its rules, its classifier and its counters.
//!
//! Lookups return the highest-priority rule matching a flow key and add to a wildcard mask
//! every bit the decision depended on (so the caller can build a megaflow). The table
//! delegates that to the `classifier` crate's tuple space search (priority sorting, staged
//! lookup, prefix tries on the IP addresses, partitioning by `metadata`); see its
//! documentation for how the mask is kept small.
//!
//! Among rules of equal priority that match the same packet OpenFlow leaves the choice open;
//! the classifier picks one deterministically.

use crate::group_index::GroupIndex;
use crate::meter_index::MeterIndex;
use crate::rule::Rule;
use classifier::{Classifier, Config, Match as CMatch, RuleId};
use openflow::FlowModFlags;
use packet::flow::{FlowKey, FLOW_KEY_WORDS};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Hashes rule ids (which the switch hands out itself, in sequence) for the per-table id
/// sets: runs of consecutive ids take consecutive slots (see [`classifier::id_hash`]), as a
/// bundle commit records 100K of them.
pub type IdHash = classifier::IdBuild;

/// A set of rule ids.
pub type IdSet = HashSet<u64, IdHash>;

/// What a table does with a packet no rule matches (OVS's `ovs-ofctl mod-table` settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableMiss {
    /// Drop (OpenFlow 1.3's behaviour without a table-miss flow entry).
    Drop,
    /// Send to the controller.
    Controller,
    /// Continue with the next table.
    Continue,
}

pub type Cls = Classifier<Arc<Rule>, FLOW_KEY_WORDS>;
/// A rule as the classifier stores it: its masked value and mask, around the [`Rule`].
pub type ClsRule = classifier::Rule<Arc<Rule>, FLOW_KEY_WORDS>;

/// Rules with one mask filed apart from any table, to be adopted whole ([`Table::adopt`]).
pub type Built = classifier::Prebuilt<Arc<Rule>, FLOW_KEY_WORDS>;

/// The `max_entries` tables report unless their limit is lower (OVS reports this number
/// whatever its tables hold).
pub const REPORTED_MAX_ENTRIES: u32 = 1_000_000;

/// See the module documentation.
pub struct Table {
    pub id: u8,
    pub name: String,
    /// The most rules the table takes (`OFPFMFC_TABLE_FULL` beyond): unlimited, as OVS's
    /// default `max_flows`. What the table reports is [`Table::reported_max_entries`].
    pub max_entries: usize,
    pub miss: TableMiss,
    /// The rules, under their own ids as classifier ids: the table's copies (see
    /// `crate::versions`) share each classifier rule, value and mask included.
    cls: Cls,
    /// Rules with an idle or hard timeout: expiry looks only at these.
    timed: IdSet,
    /// Rules that ask for a flow-removed message (`send_flow_rem`): a table emptied at once
    /// looks at its rules one by one only if there are any.
    notify: IdSet,
    /// The rules that send to groups, by group (see [`crate::group_index`]).
    groups: GroupIndex,
    /// The rules that use meters, by meter (see [`crate::meter_index`]).
    meters: MeterIndex,
    /// While a transaction runs (see `Ofproto::atomically`): each rule id changed, with the
    /// rule it had before its first change (`None`: it did not exist).
    journal: Option<HashMap<u64, Option<Arc<ClsRule>>, IdHash>>,
    /// Rules were added with [`Table::insert_new`] since the classifier last re-ranked.
    unranked: bool,
    /// What changed since [`Table::take_changes`] (see `crate::versions`).
    changes: TableChanges,
    /// Shared by the table's copies (see `crate::versions`), so counts are not split.
    pub lookup_count: Arc<AtomicU64>,
    pub matched_count: Arc<AtomicU64>,
}

/// The rules of one table changed since the last publication: what a lagging copy of the
/// table replays (see `crate::versions`).
#[derive(Clone, Debug, Default)]
pub struct TableChanges {
    /// The table was emptied first (`take_all`); `ids` and `adopted` then hold only what
    /// came after.
    pub cleared: bool,
    /// Rule ids added, modified or removed, except the adds of `adopted`.
    pub ids: IdSet,
    /// The masks of subtables adopted whole ([`Table::adopt`]), with how many rules each
    /// brought: their rules are not in `ids`; the lagging copy takes whatever subtable the
    /// changed copy has with that mask.
    pub adopted: Vec<([u64; FLOW_KEY_WORDS], usize)>,
}

impl TableChanges {
    /// True if nothing changed.
    pub fn is_empty(&self) -> bool {
        !self.cleared && self.ids.is_empty() && self.adopted.is_empty()
    }

    /// How many rule changes a lagging copy replays (a table emptied aside).
    pub fn len(&self) -> usize {
        self.adopted
            .iter()
            .fold(self.ids.len(), |n, (_, k)| n.saturating_add(*k))
    }
}

impl Table {
    /// An empty table.
    pub fn new(id: u8) -> Table {
        Table {
            id,
            // Unnamed, as OVS leaves its tables (ovs-ofctl then prints no name).
            name: String::new(),
            max_entries: usize::MAX,
            miss: TableMiss::Drop,
            cls: Classifier::new(Config::flow_key()),
            timed: IdSet::default(),
            notify: IdSet::default(),
            groups: GroupIndex::default(),
            meters: MeterIndex::default(),
            journal: None,
            unranked: false,
            changes: TableChanges::default(),
            lookup_count: Arc::default(),
            matched_count: Arc::default(),
        }
    }

    /// `max_entries` as table stats and table features report it: OVS's fixed 1,000,000, or
    /// the table's limit when that is lower.
    pub fn reported_max_entries(&self) -> u32 {
        self.max_entries.min(REPORTED_MAX_ENTRIES as usize) as u32
    }

    /// A second copy of this table: same configuration, the same rules (the same `Arc`s)
    /// and the same counters, with nothing to replay. O(n), once per bridge.
    pub(crate) fn twin(&self) -> Table {
        let mut t = Table::new(self.id);
        t.copy_config(self);
        t.lookup_count = Arc::clone(&self.lookup_count);
        t.matched_count = Arc::clone(&self.matched_count);
        let rules: Vec<Arc<ClsRule>> = self.cls.iter().cloned().collect();
        if !rules.is_empty() {
            t.put_many(rules);
        }
        t.changes = TableChanges::default();
        t
    }

    /// Takes the record of what changed since the last call.
    pub(crate) fn take_changes(&mut self) -> TableChanges {
        std::mem::take(&mut self.changes)
    }

    /// Copies name, size limit and miss behaviour from `from`.
    pub(crate) fn copy_config(&mut self, from: &Table) {
        if self.name != from.name {
            self.name.clone_from(&from.name);
        }
        self.max_entries = from.max_entries;
        self.miss = from.miss;
    }

    /// Brings this copy up to `from` (the copy the changes were made on): the rules `ch`
    /// names are copied from `from` (the same classifier `Arc`s) or removed; a subtable
    /// `from` adopted is shared whole when this copy has none with its mask
    /// (`Classifier::share_subtable`), its rules otherwise copied one by one. O(changes),
    /// with little work per rule of a shared subtable; a `cleared` table hands back its old
    /// contents for the caller to free.
    pub(crate) fn catch_up(&mut self, ch: &TableChanges, from: &Table) -> Option<Cls> {
        let old = if ch.cleared {
            Some(self.take_all())
        } else {
            None
        };
        let mut add = Vec::new();
        let mut gone = Vec::new();
        let mut shared = false;
        for (mask, _) in &ch.adopted {
            if self.cls.share_subtable(&from.cls, mask) {
                shared = true;
            } else if from.cls.has_mask(mask) {
                // This copy has a subtable with that mask (with rules the session removed,
                // which `ids` names): copy the rules in.
                add.extend(
                    from.cls
                        .rules_with_mask(mask)
                        .filter(|r| {
                            !self
                                .entry(r.payload().id)
                                .is_some_and(|x| Arc::ptr_eq(x, r))
                        })
                        .cloned(),
                );
            }
        }
        for &id in &ch.ids {
            match from.entry(id) {
                // Shared with a subtable above, or copied already.
                Some(r) if self.entry(id).is_some_and(|x| Arc::ptr_eq(x, r)) => {}
                Some(r) => add.push(Arc::clone(r)),
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            self.remove_many(&gone);
        }
        if !add.is_empty() {
            self.put_many(add);
        } else if shared {
            self.cls.rerank();
        }
        if shared {
            // The rules the shared subtables brought were not tracked one by one: once
            // caught up, the timed and notify sets are `from`'s.
            self.timed.clone_from(&from.timed);
            self.notify.clone_from(&from.notify);
            self.groups.clone_from(&from.groups);
            self.meters.clone_from(&from.meters);
        }
        self.changes = TableChanges::default();
        old
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.cls.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.cls.is_empty()
    }

    /// Number of distinct masks (classifier subtables).
    pub fn n_subtables(&self) -> usize {
        self.cls.n_subtables()
    }

    /// Every rule, in no particular order: O(n), for scans whose result does not depend on
    /// the order (selection, expiry, counting).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.cls.iter().map(|r| r.payload())
    }

    /// The rules with an idle or hard timeout, in no particular order.
    pub fn timed(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.timed.iter().filter_map(|id| self.get(*id))
    }

    /// Files `r`, which takes the place of any rule with its id, in the timed, notify and
    /// group sets.
    fn track(&mut self, r: &Rule) {
        self.groups.replace(r);
        self.meters.replace(r);
        if r.idle_timeout != 0 || r.hard_timeout != 0 {
            self.timed.insert(r.id);
        } else {
            self.timed.remove(&r.id);
        }
        if r.flags.contains(FlowModFlags::SEND_FLOW_REM) {
            self.notify.insert(r.id);
        } else {
            self.notify.remove(&r.id);
        }
    }

    /// The rules that send to groups (see [`crate::group_index`]).
    pub fn group_index(&self) -> &GroupIndex {
        &self.groups
    }

    /// The rules that use meters (see [`crate::meter_index`]).
    pub fn meter_index(&self) -> &MeterIndex {
        &self.meters
    }

    /// True if some rule asks for a flow-removed message.
    pub fn any_send_flow_rem(&self) -> bool {
        !self.notify.is_empty()
    }

    /// Every rule, highest priority first (ties by age, oldest first): O(n log n), for
    /// output that people read (dumps).
    pub fn rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        let mut v: Vec<&Arc<Rule>> = self.cls.iter().map(|r| r.payload()).collect();
        v.sort_by_key(|r| (std::cmp::Reverse(r.priority), r.id));
        v.into_iter()
    }

    /// The rules that send to group `g` (nested lists included, as `out_group` selects),
    /// in the order of [`Table::rules`]: found through the group index, so O(answer) and
    /// not O(table).
    pub fn rules_of_group(&self, g: u32) -> impl Iterator<Item = &Arc<Rule>> {
        let mut v: Vec<&Arc<Rule>> = self
            .groups
            .rules_of(g)
            .filter_map(|id| self.get(id))
            .collect();
        v.sort_by_key(|r| (std::cmp::Reverse(r.priority), r.id));
        v.into_iter()
    }

    /// A rule by id.
    pub fn get(&self, id: u64) -> Option<&Arc<Rule>> {
        self.entry(id).map(|r| r.payload())
    }

    /// A rule by id, as the classifier stores it.
    pub fn entry(&self, id: u64) -> Option<&Arc<ClsRule>> {
        self.cls.get(RuleId::new(id))
    }

    /// True if rule `id` exists and its match covers `key`.
    pub fn rule_matches(&self, id: u64, key: &FlowKey) -> bool {
        self.entry(id).is_some_and(|r| r.matches(&key.to_words()))
    }

    /// Starts recording changes so that [`Table::rollback`] can undo them: O(1) now, O(1)
    /// per change.
    pub(crate) fn begin_journal(&mut self) {
        self.journal = Some(HashMap::default());
    }

    /// Stops recording and keeps every change.
    pub(crate) fn commit_journal(&mut self) {
        self.journal = None;
        self.rank();
    }

    /// Makes room for `n` more rules like `r` (a bundle commit knows how many it adds).
    pub(crate) fn reserve_like(&mut self, r: &ClsRule, n: usize) {
        self.cls.reserve_like(r, n);
        // A subtable made for them and left empty goes at the next re-ranking.
        self.unranked = true;
        self.changes.ids.reserve(n);
        if let Some(j) = self.journal.as_mut() {
            j.reserve(n);
        }
    }

    /// Re-ranks the classifier if [`Table::insert_new`] left it unranked.
    pub(crate) fn rank(&mut self) {
        if std::mem::take(&mut self.unranked) {
            self.cls.rerank();
        }
    }

    /// Undoes every change since [`Table::begin_journal`]: rules added are removed, rules
    /// modified or deleted are put back (the same `Arc`s, so with their counters). Costs
    /// O(changes).
    pub(crate) fn rollback(&mut self) {
        let Some(journal) = self.journal.take() else {
            self.rank();
            return;
        };
        self.unranked = false;
        let mut back = Vec::new();
        for (id, before) in journal {
            self.remove(id);
            if let Some(r) = before {
                back.push(r);
            }
        }
        if !back.is_empty() {
            self.put_many(back);
        }
    }

    fn record(&mut self, id: u64) {
        self.changes.ids.insert(id);
        if self.journal.as_ref().is_some_and(|j| !j.contains_key(&id)) {
            let before = self.entry(id).cloned();
            if let Some(j) = self.journal.as_mut() {
                j.insert(id, before);
            }
        }
    }

    /// Inserts a rule matching `m` (the rule's match as a masked flow key), or replaces the
    /// rule with the same id.
    pub fn insert(&mut self, r: Arc<Rule>, m: CMatch<FLOW_KEY_WORDS>) {
        self.record(r.id);
        self.track(&r);
        self.cls
            .insert_with_id(RuleId::new(r.id), m, u32::from(r.priority), r);
    }

    /// Inserts a rule built beforehand (`crate::switch::PreparedAdd`) under an id no rule
    /// of this table has had: nothing to look up for the journal. Inside a transaction the
    /// classifier re-ranks once when it ends ([`Table::commit_journal`], [`Table::rollback`]);
    /// outside one, at once.
    pub(crate) fn insert_new(&mut self, r: Arc<ClsRule>) {
        debug_assert!(self.entry(r.payload().id).is_none());
        self.record_new(r.payload());
        self.cls.insert_shared_unranked(r);
        self.unranked = true;
        if self.journal.is_none() {
            self.rank();
        }
    }

    /// True if [`Table::adopt`] would take `pre` (no subtable has its mask).
    pub(crate) fn can_adopt(&self, pre: &Built) -> bool {
        self.cls.can_adopt(pre)
    }

    /// Takes `pre`, rules built apart with one mask, whole as the classifier's subtable for
    /// that mask (see `classifier::Prebuilt`); `f` gives each rule its id and payload
    /// first, in no particular order. The caller records each rule with
    /// [`Table::record_adopted`]; the change record names the subtable, not its rules (see
    /// [`TableChanges`]). The classifier re-ranks as after [`Table::insert_new`]. Hands
    /// `pre` back unchanged unless [`Table::can_adopt`].
    pub(crate) fn adopt(&mut self, pre: Built, f: impl FnMut(&mut ClsRule)) -> Result<(), Built> {
        let (mask, n) = (*pre.mask(), pre.len());
        self.cls.adopt(pre, f)?;
        self.changes.adopted.push((mask, n));
        self.unranked = true;
        if self.journal.is_none() {
            self.rank();
        }
        Ok(())
    }

    /// Makes room to record `n` adopted rules ([`Table::record_adopted`]).
    pub(crate) fn reserve_records(&mut self, n: usize) {
        if let Some(j) = self.journal.as_mut() {
            j.reserve(n);
        }
    }

    /// Records `r`, a rule under an id no rule of this table has had that comes in a
    /// subtable [`Table::adopt`] takes, as added (undo journal, timed and notify sets); the
    /// change record names its subtable instead.
    pub(crate) fn record_adopted(&mut self, r: &Rule) {
        if let Some(j) = self.journal.as_mut() {
            j.entry(r.id).or_insert(None);
        }
        // A new id is in no set yet.
        if r.idle_timeout != 0 || r.hard_timeout != 0 {
            self.timed.insert(r.id);
        }
        if r.flags.contains(FlowModFlags::SEND_FLOW_REM) {
            self.notify.insert(r.id);
        }
        self.groups.add(r);
        self.meters.add(r);
    }

    /// Records `r`, a rule under an id no rule of this table has had, as added (change
    /// record, undo journal, timed and notify sets).
    pub(crate) fn record_new(&mut self, r: &Rule) {
        self.changes.ids.insert(r.id);
        self.record_adopted(r);
    }

    /// Gives the rule with `r`'s id the new version `r` (same match and priority: only
    /// instructions and metadata may differ, as a modify does). False if there is none.
    pub fn replace(&mut self, r: Arc<Rule>) -> bool {
        if self.entry(r.id).is_none() {
            return false;
        }
        self.record(r.id);
        self.track(&r);
        self.cls.replace(RuleId::new(r.id), r).is_some()
    }

    /// Puts classifier rules (from this table's other copy, or from the journal) in, each
    /// replacing the rule with its id, re-ranking the classifier once.
    fn put_many(&mut self, rules: Vec<Arc<ClsRule>>) {
        for r in &rules {
            self.record(r.payload().id);
            self.track(r.payload());
        }
        self.cls.batch(|b| {
            for r in rules {
                b.insert_shared(r);
            }
        });
    }

    /// Empties the table in O(1) and hands back everything it held, so the caller can
    /// report the rules and free them wherever that costs least (see `Ofproto::delete`).
    pub fn take_all(&mut self) -> Cls {
        if self.journal.is_some() {
            let ids: Vec<u64> = self.iter().map(|r| r.id).collect();
            for id in ids {
                self.record(id);
            }
        }
        self.timed.clear();
        self.notify.clear();
        self.groups.clear();
        self.meters.clear();
        self.unranked = false;
        self.changes = TableChanges {
            cleared: true,
            ..TableChanges::default()
        };
        std::mem::replace(&mut self.cls, Classifier::new(Config::flow_key()))
    }

    /// Removes the rules with these ids (those that exist), re-ranking the classifier once
    /// rather than after each; hands back the removed rules.
    pub fn remove_many(&mut self, ids: &[u64]) -> Vec<Arc<Rule>> {
        for &id in ids {
            self.record(id);
        }
        let (timed, notify) = (&mut self.timed, &mut self.notify);
        let (groups, meters) = (&mut self.groups, &mut self.meters);
        self.cls.batch(|b| {
            ids.iter()
                .filter_map(|&id| {
                    let r = b.remove(RuleId::new(id))?;
                    timed.remove(&id);
                    notify.remove(&id);
                    groups.remove(id);
                    meters.remove(id);
                    Some(Arc::clone(r.payload()))
                })
                .collect()
        })
    }

    /// Removes a rule by id.
    pub fn remove(&mut self, id: u64) -> Option<Arc<Rule>> {
        self.record(id);
        let r = self.cls.remove(RuleId::new(id))?;
        self.timed.remove(&id);
        self.notify.remove(&id);
        self.groups.remove(id);
        self.meters.remove(id);
        Some(Arc::clone(r.payload()))
    }

    /// The rule with exactly this match and priority (`tlv` places its tunnel options).
    pub fn find_strict(
        &self,
        m: &openflow::Match,
        priority: u16,
        tlv: &crate::tlv::TlvTable,
    ) -> Option<&Arc<Rule>> {
        let (key, mask) = crate::tun_md::match_to_key(m, tlv);
        let cm = CMatch::new(key.to_words(), mask.to_words());
        self.find_strict_keyed(&cm, m, priority)
    }

    /// [`Table::find_strict`] given the match's masked flow key `cm` as well.
    pub fn find_strict_keyed(
        &self,
        cm: &CMatch<FLOW_KEY_WORDS>,
        m: &openflow::Match,
        priority: u16,
    ) -> Option<&Arc<Rule>> {
        self.cls
            .find_exact(cm, u32::from(priority))
            .map(|r| r.payload())
            .find(|r| &r.match_ == m)
    }

    /// The highest-priority rule matching `key`; adds the bits examined to `wc`.
    #[inline]
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowKey) -> Option<&Arc<Rule>> {
        self.lookup_count.fetch_add(1, Ordering::Relaxed);
        let k = key.to_words();
        let mut w = wc.to_words();
        let found = self.cls.lookup(&k, &mut w).map(|r| r.payload());
        *wc = FlowKey::from_words(&w);
        if found.is_some() {
            self.matched_count.fetch_add(1, Ordering::Relaxed);
        }
        found
    }
}
