//! The read side: a ranked list of subtables plus the partition map, i.e. everything a
//! lookup needs. A [`View`] is what a [`crate::Classifier`] owns and what a
//! [`crate::Writer`] publishes to its readers; cloning one is shallow (`Arc`s).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::Config;
use crate::hash::FastBuild;
use crate::rule::{covered, Match, Rule};
use crate::subtable::{Miss, Subtable};

/// What a lookup needs to know about a subtable without touching it: one 24-byte entry per
/// subtable, in ranking order, scanned linearly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    /// Highest priority of any rule in the subtable.
    pub max_priority: u32,
    /// Highest `max_priority` of this and every later subtable in the ranking.
    pub suffix_max: u32,
    /// Partition tag (one bit) if the subtable matches the partition word exactly, else 0.
    pub tag: u64,
    /// Where the subtable lives in `View::slots`.
    pub slot: u32,
}

/// One partition: the tags of the subtables that hold rules for one partition-word value,
/// with a count of rules per tag bit so removal is exact.
#[derive(Clone, Debug, Default)]
pub(crate) struct Partition {
    pub tags: u64,
    pub counts: Vec<(u8, u32)>,
}

pub(crate) type Partitions = HashMap<u64, Partition, FastBuild>;

/// Counters a traced lookup fills in (see [`View::lookup_traced`]); they add up across calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LookupStats {
    /// Lookups traced.
    pub lookups: u64,
    /// Subtables whose hash tables were consulted.
    pub subtables_visited: u64,
    /// Subtables skipped because the partition map ruled them out.
    pub partition_skips: u64,
    /// Subtable misses that a prefix index explained with a few leading bits.
    pub prefix_explained: u64,
    /// Subtable misses decided by a stage index before the last stage.
    pub early_stage_misses: u64,
}

/// A subtable as reported by [`View::subtables`].
#[derive(Clone, Copy, Debug)]
pub struct SubtableInfo<'a, const W: usize> {
    /// The shared mask.
    pub mask: &'a [u64; W],
    /// Rules in the subtable.
    pub n_rules: usize,
    /// Their highest priority.
    pub max_priority: u32,
    /// Lookups that matched in this subtable (0 unless hit counting is on).
    pub hits: u64,
}

/// The lookup structure. See the crate documentation.
pub struct View<T, const W: usize> {
    pub(crate) cfg: Config<W>,
    pub(crate) slots: Vec<Option<Arc<Subtable<T, W>>>>,
    pub(crate) ranked: Vec<Header>,
    pub(crate) partitions: Arc<Partitions>,
    pub(crate) n_rules: usize,
}

impl<T, const W: usize> Clone for View<T, W> {
    fn clone(&self) -> Self {
        View {
            cfg: self.cfg,
            slots: self.slots.clone(),
            ranked: self.ranked.clone(),
            partitions: Arc::clone(&self.partitions),
            n_rules: self.n_rules,
        }
    }
}

impl<T, const W: usize> View<T, W> {
    pub(crate) fn new(cfg: Config<W>) -> Self {
        View {
            cfg,
            slots: Vec::new(),
            ranked: Vec::new(),
            partitions: Arc::new(Partitions::default()),
            n_rules: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config<W> {
        &self.cfg
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.n_rules
    }

    /// No rules at all?
    pub fn is_empty(&self) -> bool {
        self.n_rules == 0
    }

    /// Number of subtables (distinct masks).
    pub fn n_subtables(&self) -> usize {
        self.ranked.len()
    }

    /// Finds the highest-priority rule matching `key` and ORs into `wc` every bit of `key`
    /// the answer depended on. Any key that agrees with `key` on the bits set in `wc` (after
    /// the call; bits already set on entry only add constraints) gets the same answer from
    /// this view. Equal priorities: the first match in ranking order wins, and within one
    /// masked value the earliest inserted rule. No allocation.
    #[inline]
    pub fn lookup(&self, key: &[u64; W], wc: &mut [u64; W]) -> Option<&Arc<Rule<T, W>>> {
        self.lookup_impl::<false>(key, wc, &mut LookupStats::default())
    }

    /// [`View::lookup`], also counting what the lookup did into `stats`.
    pub fn lookup_traced(
        &self,
        key: &[u64; W],
        wc: &mut [u64; W],
        stats: &mut LookupStats,
    ) -> Option<&Arc<Rule<T, W>>> {
        self.lookup_impl::<true>(key, wc, stats)
    }

    #[inline(always)]
    fn lookup_impl<const TRACE: bool>(
        &self,
        key: &[u64; W],
        wc: &mut [u64; W],
        stats: &mut LookupStats,
    ) -> Option<&Arc<Rule<T, W>>> {
        if TRACE {
            stats.lookups += 1;
        }
        let mut best: Option<&Arc<Rule<T, W>>> = None;
        let mut part_tags: Option<u64> = None;
        for h in &self.ranked {
            if let Some(b) = best {
                if h.suffix_max <= b.priority {
                    break;
                }
                if h.max_priority <= b.priority {
                    continue;
                }
            }
            if h.tag != 0 {
                if let Some(pw) = self.cfg.partition_word() {
                    let tags = match part_tags {
                        Some(t) => t,
                        None => {
                            let t = self.partitions.get(&key[pw]).map_or(0, |p| p.tags);
                            part_tags = Some(t);
                            t
                        }
                    };
                    if tags & h.tag == 0 {
                        // The skip depends on the whole partition word.
                        wc[pw] = u64::MAX;
                        if TRACE {
                            stats.partition_skips += 1;
                        }
                        continue;
                    }
                }
            }
            let Some(Some(st)) = self.slots.get(h.slot as usize) else {
                continue;
            };
            if TRACE {
                stats.subtables_visited += 1;
            }
            match st.lookup(key, wc, &self.cfg) {
                Ok(r) => {
                    if best.is_none_or(|b| r.priority > b.priority) {
                        best = Some(r);
                    }
                }
                Err(m) => {
                    if TRACE {
                        match m {
                            Miss::Prefix => stats.prefix_explained += 1,
                            Miss::Stage(s) if usize::from(s) + 1 < st.n_stages() => {
                                stats.early_stage_misses += 1
                            }
                            Miss::Stage(_) => {}
                        }
                    }
                }
            }
        }
        best
    }

    /// Every rule, subtable by subtable (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Rule<T, W>>> {
        self.slots
            .iter()
            .flatten()
            .flat_map(|st| st.buckets())
            .flat_map(|b| b.iter())
    }

    fn subtable_with_mask(&self, mask: &[u64; W]) -> Option<&Subtable<T, W>> {
        self.slots
            .iter()
            .flatten()
            .find(|st| *st.mask == *mask)
            .map(|st| &**st)
    }

    /// Rules with exactly this match and priority (OpenFlow strict selection). Normally at
    /// most one; several if the owner inserted duplicates.
    pub fn find_exact<'a>(
        &'a self,
        m: &Match<W>,
        priority: u32,
    ) -> impl Iterator<Item = &'a Arc<Rule<T, W>>> + 'a {
        self.subtable_with_mask(m.mask())
            .and_then(|st| st.bucket(m.value()))
            .into_iter()
            .flat_map(|b| b.iter())
            .filter(move |r| r.priority == priority)
    }

    /// Rules whose match is at least as specific as `m` and agrees with it (OpenFlow
    /// non-strict selection): every key matching such a rule matches `m`.
    pub fn find_loose<'a>(
        &'a self,
        m: &Match<W>,
    ) -> impl Iterator<Item = &'a Arc<Rule<T, W>>> + 'a {
        let m = *m;
        self.slots
            .iter()
            .flatten()
            .filter(move |st| {
                st.mask
                    .iter()
                    .zip(m.mask().iter())
                    .all(|(s, q)| q & !s == 0)
            })
            .flat_map(|st| st.buckets())
            .filter(move |b| covered(&b.head.value, &b.head.mask, &m))
            .flat_map(|b| b.iter())
    }

    /// The subtables in ranking order.
    pub fn subtables(&self) -> impl Iterator<Item = SubtableInfo<'_, W>> {
        self.ranked.iter().filter_map(|h| {
            let st = self.slots.get(h.slot as usize)?.as_ref()?;
            Some(SubtableInfo {
                mask: &st.mask,
                n_rules: st.n_rules,
                max_priority: h.max_priority,
                hits: st.hits.load(Ordering::Relaxed),
            })
        })
    }
}
