//! Rules, their ids and matches.

use core::fmt;
use std::sync::Arc;

use packet::flow::{FlowKey, FLOW_KEY_WORDS};

/// Identifies a rule in a classifier. Ids the classifier picks are never reused; a caller
/// may also choose them ([`crate::Classifier::insert_with_id`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RuleId(pub(crate) u64);

impl RuleId {
    /// The id `n`.
    pub const fn new(n: u64) -> RuleId {
        RuleId(n)
    }
    /// The id as a number (ids increase in insertion order).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A masked key: `value` has every bit that is zero in `mask` cleared.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Match<const W: usize> {
    value: [u64; W],
    mask: [u64; W],
}

impl<const W: usize> Match<W> {
    /// A match on the bits of `mask`, with `value` (bits outside `mask` are dropped).
    #[inline]
    pub fn new(value: [u64; W], mask: [u64; W]) -> Self {
        let mut v = value;
        for (a, m) in v.iter_mut().zip(mask.iter()) {
            *a &= m;
        }
        Match { value: v, mask }
    }

    /// The match that matches everything.
    pub fn catch_all() -> Self {
        Match {
            value: [0; W],
            mask: [0; W],
        }
    }

    /// The masked value.
    #[inline]
    pub fn value(&self) -> &[u64; W] {
        &self.value
    }

    /// The mask.
    #[inline]
    pub fn mask(&self) -> &[u64; W] {
        &self.mask
    }

    /// Does `key` match?
    #[inline]
    pub fn matches(&self, key: &[u64; W]) -> bool {
        key.iter()
            .zip(self.mask.iter().zip(self.value.iter()))
            .all(|(k, (m, v))| k & m == *v)
    }

    /// Is `self` at least as specific as `other` and in agreement with it (every key that
    /// matches `self` matches `other`)? This is OpenFlow's non-strict selection.
    pub fn is_covered_by(&self, other: &Match<W>) -> bool {
        covered(&self.value, &self.mask, other)
    }
}

pub(crate) fn covered<const W: usize>(value: &[u64; W], mask: &[u64; W], by: &Match<W>) -> bool {
    mask.iter()
        .zip(value.iter())
        .zip(by.mask.iter().zip(by.value.iter()))
        .all(|((m, v), (bm, bv))| bm & !m == 0 && v & bm == *bv)
}

impl Match<FLOW_KEY_WORDS> {
    /// A match on flow-key fields: `mask` has the bits to match set.
    pub fn from_flow(value: &FlowKey, mask: &FlowKey) -> Self {
        Match::new(value.to_words(), mask.to_words())
    }
}

/// A rule as stored: its id, priority, match and payload. Rules are immutable once in the
/// classifier and shared (`Arc`) between the writer and every snapshot that holds them.
pub struct Rule<T, const W: usize> {
    pub(crate) id: RuleId,
    pub(crate) priority: u32,
    pub(crate) value: [u64; W],
    pub(crate) mask: Arc<[u64; W]>,
    pub(crate) payload: T,
}

impl<T, const W: usize> Rule<T, W> {
    /// A rule built outside any classifier, to be added later with
    /// [`crate::Classifier::insert_shared`] (so the work of building it can happen before
    /// the classifier is at hand, e.g. while a bundle is still being received). `masks`
    /// keeps the last mask built: rules made one after another with the same mask share
    /// one copy, and the classifier swaps it for its subtable's own when it takes the rule
    /// while nothing else holds it.
    pub fn prebuilt(
        id: RuleId,
        priority: u32,
        m: &Match<W>,
        masks: &mut Option<Arc<[u64; W]>>,
        payload: T,
    ) -> Self {
        let mask = match masks {
            Some(a) if **a == m.mask => Arc::clone(a),
            _ => {
                let a = Arc::new(m.mask);
                *masks = Some(Arc::clone(&a));
                a
            }
        };
        Rule {
            id,
            priority,
            value: m.value,
            mask,
            payload,
        }
    }
    /// Gives a rule that is in no classifier yet its id (see [`Rule::prebuilt`]).
    pub fn set_id(&mut self, id: RuleId) {
        self.id = id;
    }
    /// The payload of a rule that is in no classifier yet (see [`Rule::prebuilt`]).
    pub fn payload_mut(&mut self) -> &mut T {
        &mut self.payload
    }
    /// The rule's mask as the `Arc` it holds (rules built with one mask cache share it).
    pub fn mask_arc(&self) -> &Arc<[u64; W]> {
        &self.mask
    }
    /// The rule's id.
    #[inline]
    pub fn id(&self) -> RuleId {
        self.id
    }
    /// The rule's priority (higher wins).
    #[inline]
    pub fn priority(&self) -> u32 {
        self.priority
    }
    /// The masked value.
    #[inline]
    pub fn value(&self) -> &[u64; W] {
        &self.value
    }
    /// The mask (shared by every rule of the subtable).
    #[inline]
    pub fn mask(&self) -> &[u64; W] {
        &self.mask
    }
    /// The match as a value.
    pub fn to_match(&self) -> Match<W> {
        Match {
            value: self.value,
            mask: *self.mask,
        }
    }
    /// The payload.
    #[inline]
    pub fn payload(&self) -> &T {
        &self.payload
    }
    /// Does `key` match this rule?
    #[inline]
    pub fn matches(&self, key: &[u64; W]) -> bool {
        key.iter()
            .zip(self.mask.iter().zip(self.value.iter()))
            .all(|(k, (m, v))| k & m == *v)
    }
}

impl<T: fmt::Debug, const W: usize> fmt::Debug for Rule<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("id", &self.id)
            .field("priority", &self.priority)
            .field("payload", &self.payload)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_masks_and_covers() {
        let m = Match::new([0xff, 0xff], [0x0f, 0]);
        assert_eq!(m.value(), &[0x0f, 0]);
        assert!(m.matches(&[0x1f, 7]));
        assert!(!m.matches(&[0x10, 7]));
        let specific = Match::new([0x0f, 3], [0xff, 0xff]);
        assert!(specific.is_covered_by(&m));
        assert!(!m.is_covered_by(&specific));
        assert!(m.is_covered_by(&Match::catch_all()));
        let disagree = Match::new([0x0e, 3], [0xff, 0xff]);
        assert!(!disagree.is_covered_by(&m));
    }
}
