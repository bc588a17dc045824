//! Sharing a classifier between one writer and many readers: snapshot publication.
//!
//! The [`Writer`] owns a [`Classifier`]. After every change (or once per batch) it publishes
//! a shallow clone of the classifier's [`View`] through an `ArcSwap`. A [`Reader`] loads the
//! current snapshot (a few nanoseconds, no lock, no reference-count traffic on the shared
//! `Arc` in the common case) and looks up in it; the snapshot stays valid, unchanged, for as
//! long as the reader holds it, whatever the writer does meanwhile.

use std::ops::Deref;
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::classifier::{Batch, Classifier};
use crate::config::{Config, Ranking};
use crate::rule::{Match, Rule, RuleId};
use crate::view::View;

/// The single writer of a shared classifier. Not `Clone`: there is exactly one.
pub struct Writer<T, const W: usize> {
    cls: Classifier<T, W>,
    shared: Arc<ArcSwap<View<T, W>>>,
}

/// A cheap, cloneable, `Send + Sync` handle for lookups in the writer's latest snapshot.
pub struct Reader<T, const W: usize> {
    shared: Arc<ArcSwap<View<T, W>>>,
}

impl<T, const W: usize> Clone for Reader<T, W> {
    fn clone(&self) -> Self {
        Reader {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// A loaded snapshot: derefs to the [`View`] it pins. Hold it for a batch of lookups, not
/// for long (a pinned snapshot keeps its rules' memory alive).
pub struct Snapshot<T, const W: usize>(Guard<Arc<View<T, W>>>);

impl<T, const W: usize> Deref for Snapshot<T, W> {
    type Target = View<T, W>;
    #[inline]
    fn deref(&self) -> &View<T, W> {
        &self.0
    }
}

impl<T, const W: usize> Reader<T, W> {
    /// The current snapshot.
    #[inline]
    pub fn load(&self) -> Snapshot<T, W> {
        Snapshot(self.shared.load())
    }

    /// The current snapshot as an owned `Arc`, to keep beyond a batch.
    pub fn load_full(&self) -> Arc<View<T, W>> {
        self.shared.load_full()
    }

    /// Looks `key` up in the current snapshot and hands the answer to `f`.
    #[inline]
    pub fn lookup_with<R>(
        &self,
        key: &[u64; W],
        wc: &mut [u64; W],
        f: impl FnOnce(Option<&Arc<Rule<T, W>>>) -> R,
    ) -> R {
        let snap = self.shared.load();
        f(snap.lookup(key, wc))
    }
}

impl<T, const W: usize> Writer<T, W> {
    /// An empty shared classifier.
    pub fn new(cfg: Config<W>) -> Self {
        let cls = Classifier::new(cfg);
        let shared = Arc::new(ArcSwap::from_pointee(cls.view.clone()));
        Writer { cls, shared }
    }

    /// A new reader handle.
    pub fn reader(&self) -> Reader<T, W> {
        Reader {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The writer's own (always current) classifier, for lookups, iteration, `find_*`.
    pub fn classifier(&self) -> &Classifier<T, W> {
        &self.cls
    }

    fn publish(&mut self) {
        self.shared.store(Arc::new(self.cls.view.clone()));
    }

    /// Adds a rule and publishes.
    pub fn insert(&mut self, m: Match<W>, priority: u32, payload: T) -> RuleId {
        let id = self.cls.insert(m, priority, payload);
        self.publish();
        id
    }

    /// Removes a rule and publishes.
    pub fn remove(&mut self, id: RuleId) -> Option<Arc<Rule<T, W>>> {
        let r = self.cls.remove(id);
        if r.is_some() {
            self.publish();
        }
        r
    }

    /// Gives rule `id` a new payload and publishes; returns the old rule.
    pub fn replace(&mut self, id: RuleId, payload: T) -> Option<Arc<Rule<T, W>>> {
        let r = self.cls.replace(id, payload);
        if r.is_some() {
            self.publish();
        }
        r
    }

    /// Makes several changes and publishes them together: readers see all of them or none.
    pub fn batch<R>(&mut self, f: impl FnOnce(&mut Batch<'_, T, W>) -> R) -> R {
        let r = self.cls.batch(f);
        self.publish();
        r
    }

    /// Re-ranks the subtables with the current hit counts and publishes.
    pub fn rerank(&mut self) {
        self.cls.rerank();
        self.publish();
    }

    /// Chooses the ranking, re-ranks and publishes.
    pub fn set_ranking(&mut self, ranking: Ranking) {
        self.cls.set_ranking(ranking);
        self.publish();
    }

    /// Switches to hit ranking, sorts by hits and publishes.
    pub fn sort_subtables_by_hits(&mut self) {
        self.set_ranking(Ranking::Hits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<X: Send + Sync>() {}

    #[test]
    fn readers_are_send_sync() {
        assert_send_sync::<Reader<u32, 20>>();
        assert_send_sync::<Writer<u32, 20>>();
        assert_send_sync::<Arc<View<String, 4>>>();
    }

    #[test]
    fn batch_publishes_once_and_readers_see_it() {
        let mut w: Writer<u32, 2> = Writer::new(Config::new());
        let r = w.reader();
        let before = r.load();
        w.batch(|b| {
            for i in 0..100u64 {
                b.insert(Match::new([i, 0], [u64::MAX, 0]), 1, i as u32);
            }
        });
        assert_eq!(before.len(), 0, "an old snapshot does not change");
        let snap = r.load();
        assert_eq!(snap.len(), 100);
        let mut wc = [0; 2];
        assert_eq!(
            snap.lookup(&[42, 7], &mut wc).map(|r| *r.payload()),
            Some(42)
        );
        assert_eq!(wc, [u64::MAX, 0]);
    }
}
