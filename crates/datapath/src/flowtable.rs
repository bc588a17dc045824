//! The hash table behind each megaflow subtable: cache-line buckets the lookup can prefetch.
//!
//! A batch of packets is looked up in stages (hash every key, prefetch every bucket, then
//! probe), so the memory latency of one packet's probe overlaps the hashing of the next.
//! That needs the bucket's address before the probe, which a general-purpose map does not
//! give; this table does.
//!
//! ## Layout
//! A power-of-two array of 64-byte buckets, each holding three (hash, megaflow) slots. An
//! entry lives in its *home* bucket (high hash bits) or, when that is full, in its
//! *alternate* bucket (an entry of a full pair moves to its own other bucket to make room);
//! each bucket counts the entries of its own that spilled to their alternate, so a lookup
//! reads the home bucket and goes to the alternate only when that count is not zero. The
//! table doubles when the load passes one half, or when no entry of a full pair can move.
//! An entry that still finds no room (only possible when many keys share a hash, i.e.
//! crafted input) goes to a small overflow list that every lookup scans once it is
//! non-empty: correct, slower, bounded by what the flow limit lets in.
//!
//! The full 64-bit hash is stored, so a slot is compared with the probe's key only when
//! the hashes agree, and growing the table needs no rehashing of keys.

use crate::dpcls::Megaflow;
use std::sync::Arc;

/// Slots per bucket.
const SLOTS: usize = 3;

/// Three slots and a spill count in one cache line.
#[repr(C, align(64))]
#[derive(Default)]
struct Bucket {
    hash: [u64; SLOTS],
    flow: [Option<Arc<Megaflow>>; SLOTS],
    /// Entries whose home is this bucket that live in their alternate bucket.
    spill: u32,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

/// See the module documentation.
pub struct FlowTable {
    buckets: Vec<Bucket>,
    mask: usize,
    len: usize,
    overflow: Vec<(u64, Arc<Megaflow>)>,
}

/// Hints the CPU to load the cache line holding `p` (a no-op where there is no such hint).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and never reads memory
    // architecturally, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

const MIN_BUCKETS: usize = 4;

impl Default for FlowTable {
    fn default() -> Self {
        FlowTable::new()
    }
}

impl FlowTable {
    /// An empty table.
    pub fn new() -> FlowTable {
        FlowTable::with_buckets(MIN_BUCKETS)
    }

    fn with_buckets(n: usize) -> FlowTable {
        let mut buckets = Vec::with_capacity(n);
        buckets.resize_with(n, Bucket::default);
        FlowTable {
            buckets,
            mask: n - 1,
            len: 0,
            overflow: Vec::new(),
        }
    }

    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        (h >> 32) as usize & self.mask
    }

    #[inline(always)]
    fn alt(&self, h: u64) -> usize {
        // A second index from the low half, so keys sharing a home bucket spread out.
        ((h as u32).wrapping_mul(0x9e37_79b1).rotate_left(16) as usize ^ (h >> 32) as usize)
            & self.mask
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Prefetches the home bucket of hash `h`.
    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        if let Some(b) = self.buckets.get(self.home(h)) {
            prefetch(b as *const Bucket);
        }
    }

    /// The first entry whose stored hash is `h`. The caller compares keys, and calls
    /// [`FlowTable::find`] when this one is not the key's entry.
    #[inline(always)]
    pub fn first(&self, h: u64) -> Option<&Arc<Megaflow>> {
        self.find(h, |_| true)
    }

    /// The entry with hash `h` for which `eq` holds.
    #[inline(always)]
    pub fn find(&self, h: u64, eq: impl Fn(&Megaflow) -> bool) -> Option<&Arc<Megaflow>> {
        let home = self.buckets.get(self.home(h))?;
        for j in 0..SLOTS {
            if home.hash[j] == h {
                if let Some(f) = &home.flow[j] {
                    if eq(f) {
                        return Some(f);
                    }
                }
            }
        }
        if home.spill != 0 {
            if let Some(b) = self.buckets.get(self.alt(h)) {
                for j in 0..SLOTS {
                    if b.hash[j] == h {
                        if let Some(f) = &b.flow[j] {
                            if eq(f) {
                                return Some(f);
                            }
                        }
                    }
                }
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow
            .iter()
            .find(|(oh, f)| *oh == h && eq(f))
            .map(|(_, f)| f)
    }

    /// Replaces the entry with hash `h` for which `eq` holds by `mf`, or adds `mf`.
    pub fn upsert(&mut self, h: u64, mf: Arc<Megaflow>, eq: impl Fn(&Megaflow) -> bool) {
        let (home, alt) = (self.home(h), self.alt(h));
        for b in [home, alt] {
            if let Some(b) = self.buckets.get_mut(b) {
                for j in 0..SLOTS {
                    if b.hash[j] == h && b.flow[j].as_deref().is_some_and(&eq) {
                        b.flow[j] = Some(mf);
                        return;
                    }
                }
            }
        }
        if let Some(e) = self.overflow.iter_mut().find(|(oh, f)| *oh == h && eq(f)) {
            e.1 = mf;
            return;
        }
        if (self.len + 1) * 2 > self.buckets.len() * SLOTS {
            self.grow();
        }
        self.len += 1;
        self.place(h, mf);
    }

    /// Puts a new entry in a free slot, growing the table when both buckets are full.
    fn place(&mut self, h: u64, mf: Arc<Megaflow>) {
        loop {
            let home = self.home(h);
            for b in [home, self.alt(h)] {
                let free = self
                    .buckets
                    .get(b)
                    .and_then(|x| x.flow.iter().position(|f| f.is_none()));
                if let Some(j) = free {
                    if b != home {
                        if let Some(hb) = self.buckets.get_mut(home) {
                            hb.spill += 1;
                        }
                    }
                    if let Some(x) = self.buckets.get_mut(b) {
                        x.hash[j] = h;
                        x.flow[j] = Some(mf);
                    }
                    return;
                }
            }
            // Both full: make room by moving one of their entries to its other bucket.
            if self.displace(h) {
                continue;
            }
            // Grow only while the table is not mostly empty: a full pair of buckets in a
            // sparse table means colliding hashes, which growing does not separate.
            if self.buckets.len() * SLOTS >= 8 * self.len.max(MIN_BUCKETS) {
                self.overflow.push((h, mf));
                return;
            }
            self.grow();
        }
    }

    /// Moves one entry out of the home or alternate bucket of `h` into that entry's other
    /// bucket, if that one has a free slot. Returns true if a slot was freed.
    fn displace(&mut self, h: u64) -> bool {
        for b in [self.home(h), self.alt(h)] {
            for j in 0..SLOTS {
                let Some(x) = self.buckets.get(b) else {
                    continue;
                };
                let eh = x.hash[j];
                let (eh_home, eh_alt) = (self.home(eh), self.alt(eh));
                let other = if b == eh_home { eh_alt } else { eh_home };
                if other == b {
                    continue;
                }
                let free = self
                    .buckets
                    .get(other)
                    .and_then(|o| o.flow.iter().position(|f| f.is_none()));
                let Some(k) = free else {
                    continue;
                };
                let Some(f) = self.buckets.get_mut(b).and_then(|x| x.flow[j].take()) else {
                    continue;
                };
                if let Some(x) = self.buckets.get_mut(b) {
                    x.hash[j] = 0;
                }
                if let Some(o) = self.buckets.get_mut(other) {
                    o.hash[k] = eh;
                    o.flow[k] = Some(f);
                }
                // The entry left its home for its alternate, or came back home.
                if let Some(hb) = self.buckets.get_mut(eh_home) {
                    if other == eh_home {
                        hb.spill = hb.spill.saturating_sub(1);
                    } else {
                        hb.spill += 1;
                    }
                }
                return true;
            }
        }
        false
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, FlowTable::with_buckets(self.buckets.len() * 2));
        let overflow = old.overflow;
        // The count first: placing checks the load against it.
        self.len = old.len;
        for b in old.buckets {
            for (h, f) in b.hash.into_iter().zip(b.flow) {
                if let Some(f) = f {
                    self.place(h, f);
                }
            }
        }
        for (h, f) in overflow {
            self.place(h, f);
        }
    }

    /// Removes the entry with hash `h` for which `eq` holds. Returns true if there was one.
    pub fn remove(&mut self, h: u64, eq: impl Fn(&Megaflow) -> bool) -> bool {
        let (home, alt) = (self.home(h), self.alt(h));
        for b in [home, alt] {
            let hit = self.buckets.get(b).and_then(|x| {
                (0..SLOTS).find(|&j| x.hash[j] == h && x.flow[j].as_deref().is_some_and(&eq))
            });
            if let Some(j) = hit {
                self.clear_slot(b, j);
                self.len -= 1;
                return true;
            }
        }
        if let Some(i) = self.overflow.iter().position(|(oh, f)| *oh == h && eq(f)) {
            self.overflow.swap_remove(i);
            self.len -= 1;
            return true;
        }
        false
    }

    /// Empties slot `j` of bucket `b`, keeping the spill count of the entry's home bucket.
    fn clear_slot(&mut self, b: usize, j: usize) {
        let Some(x) = self.buckets.get_mut(b) else {
            return;
        };
        let h = x.hash[j];
        x.flow[j] = None;
        x.hash[j] = 0;
        let home = self.home(h);
        if home != b {
            if let Some(hb) = self.buckets.get_mut(home) {
                hb.spill = hb.spill.saturating_sub(1);
            }
        }
    }

    /// Keeps only the entries for which `keep` holds.
    pub fn retain(&mut self, keep: impl Fn(&Megaflow) -> bool) {
        let mut removed = 0;
        for b in 0..self.buckets.len() {
            for j in 0..SLOTS {
                let drop = self.buckets[b].flow[j].as_deref().is_some_and(|f| !keep(f));
                if drop {
                    self.clear_slot(b, j);
                    removed += 1;
                }
            }
        }
        let before = self.overflow.len();
        self.overflow.retain(|(_, f)| keep(f));
        removed += before - self.overflow.len();
        self.len -= removed;
        // Give memory back after a mass expiry.
        if self.buckets.len() > MIN_BUCKETS && self.len * SLOTS * 8 < self.buckets.len() {
            let old = std::mem::replace(self, FlowTable::with_buckets(MIN_BUCKETS));
            for b in old.buckets {
                for (h, f) in b.hash.into_iter().zip(b.flow) {
                    if let Some(f) = f {
                        self.upsert(h, f, |_| false);
                    }
                }
            }
            for (h, f) in old.overflow {
                self.upsert(h, f, |_| false);
            }
        }
    }

    /// Every entry.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Megaflow>> {
        self.buckets
            .iter()
            .flat_map(|b| b.flow.iter().flatten())
            .chain(self.overflow.iter().map(|(_, f)| f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofproto::odp::DpAction;
    use packet::flow::FlowKey;

    fn mf(id: u64) -> Arc<Megaflow> {
        let flow = FlowKey {
            in_port: id as u32,
            ..FlowKey::ZERO
        };
        let mask = FlowKey {
            in_port: u32::MAX,
            ..FlowKey::ZERO
        };
        Arc::new(Megaflow::new(
            id,
            flow,
            mask,
            vec![DpAction::Output(1)],
            vec![],
            vec![],
            1,
            0,
        ))
    }

    fn hash(id: u64) -> u64 {
        id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (id << 40)
    }

    #[test]
    fn insert_find_remove_through_growth() {
        let mut t = FlowTable::new();
        for id in 0..5000 {
            t.upsert(hash(id), mf(id), |m| m.id == id);
        }
        assert_eq!(t.len(), 5000);
        assert_eq!(t.iter().count(), 5000);
        for id in 0..5000 {
            let f = t.find(hash(id), |m| m.id == id).map(|m| m.id);
            assert_eq!(f, Some(id));
            assert_eq!(t.first(hash(id)).map(|m| m.id), Some(id));
        }
        assert!(t.find(hash(9999), |_| true).is_none());
        // Replacing keeps the count.
        t.upsert(hash(7), mf(7), |m| m.id == 7);
        assert_eq!(t.len(), 5000);
        // Remove every other entry: the rest, including any that spilled to their
        // alternate bucket, must still be found.
        for id in (0..5000).step_by(2) {
            assert!(t.remove(hash(id), |m| m.id == id));
        }
        assert!(!t.remove(hash(0), |m| m.id == 0));
        assert_eq!(t.len(), 2500);
        for id in 0..5000 {
            let f = t.find(hash(id), |m| m.id == id).is_some();
            assert_eq!(f, id % 2 == 1, "entry {id}");
        }
        assert_spill_counts(&t);
    }

    #[test]
    fn colliding_hashes_overflow_and_stay_correct() {
        // Crafted input: many keys with one hash. They cannot all fit in two buckets; the
        // table must neither loop growing nor lose any.
        let mut t = FlowTable::new();
        for id in 0..100 {
            t.upsert(42, mf(id), |m| m.id == id);
        }
        assert_eq!(t.len(), 100);
        assert!(t.buckets.len() <= 1024, "{} buckets", t.buckets.len());
        for id in 0..100 {
            assert_eq!(t.find(42, |m| m.id == id).map(|m| m.id), Some(id));
        }
        for id in 0..50 {
            assert!(t.remove(42, |m| m.id == id));
        }
        for id in 0..100 {
            assert_eq!(t.find(42, |m| m.id == id).is_some(), id >= 50);
        }
    }

    #[test]
    fn retain_drops_and_shrinks() {
        let mut t = FlowTable::new();
        for id in 0..4000 {
            t.upsert(hash(id), mf(id), |m| m.id == id);
        }
        let big = t.buckets.len();
        t.retain(|m| m.id < 10);
        assert_eq!(t.len(), 10);
        assert!(t.buckets.len() < big);
        for id in 0..4000 {
            assert_eq!(t.find(hash(id), |m| m.id == id).is_some(), id < 10);
        }
    }

    #[test]
    fn random_hashes_fill_half_the_slots_without_overflow() {
        // Moving an entry to its other bucket keeps growth for load alone: 100K entries fit
        // in the smallest power of two of buckets that keeps the load at or under a half,
        // and nothing lands in the overflow list.
        let mut t = FlowTable::new();
        let mut x = 0x1234_5678_9abc_def1u64;
        let n = 100_000u64;
        for id in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t.upsert(x, mf(id), |m| m.id == id);
        }
        assert_eq!(t.len(), n as usize);
        assert!(t.overflow.is_empty(), "{} in overflow", t.overflow.len());
        let min = (2 * n as usize).div_ceil(SLOTS).next_power_of_two();
        assert_eq!(t.buckets.len(), min);
        assert_spill_counts(&t);
    }

    /// Each bucket's spill count is the number of its entries living elsewhere.
    fn assert_spill_counts(t: &FlowTable) {
        let mut want = vec![0u32; t.buckets.len()];
        for (i, b) in t.buckets.iter().enumerate() {
            for j in 0..SLOTS {
                if b.flow[j].is_some() && t.home(b.hash[j]) != i {
                    want[t.home(b.hash[j])] += 1;
                }
            }
        }
        let got: Vec<u32> = t.buckets.iter().map(|b| b.spill).collect();
        assert_eq!(got, want);
    }
}
