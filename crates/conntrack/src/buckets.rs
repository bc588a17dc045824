//! # One shard's slots: a bucketised open-addressing hash table
//!
//! ## What
//! [`Buckets`] holds one shard's [`Slot`]s of the connection table ([`crate::table`]), found
//! by a 64-bit hash. It exists instead of a general-purpose hash map for one reason: the
//! address of the bucket a hash starts in is `base + (hash & mask)`, which
//! [`Buckets::base_and_mask`] publishes, so that a batch can prefetch every packet's bucket
//! before looking any of them up ([`crate::table::Table::prefetch`]).
//!
//! ## How
//! A power-of-two array of 64-byte buckets, each one cache line with [`WAYS`] slots: the
//! connection pointers, a 32-bit tag per slot (bits 32.. of the hash, compared before the
//! key), the direction bits and an overflow count. A hash starts in bucket `hash & mask`;
//! an insertion takes the first free slot from there on, and adds one to the overflow count
//! of every full bucket it passes (F14's scheme). A lookup stops at the first bucket whose
//! overflow count is zero, so a miss usually reads one line. A removal takes one off the
//! counts it added; a count that reached its maximum stays there (lookups then only probe
//! further) until the next growth rebuilds the array. There are no tombstones: removals
//! leave the table as if the key had never been inserted.
//!
//! ## Invariants
//! * Every slot is reachable from its hash's home bucket through buckets with a non-zero
//!   overflow count.
//! * The array grows (doubles, every slot placed again) when an insertion would fill more
//!   than 7/8 of the slots, so a probe always ends at a free slot; it never shrinks (the
//!   tracker's connection limit bounds it).
//!
//! ## Threading
//! Single-threaded (`&mut self` to change it); [`crate::table`] puts each shard's behind
//! its own lock.

use crate::table::{Conn, Slot};
use std::sync::Arc;

/// Slots per bucket.
pub const WAYS: usize = 5;

/// One cache line: [`WAYS`] slots.
#[repr(C, align(64))]
pub struct Bucket {
    conns: [Option<Arc<Conn>>; WAYS],
    tags: [u32; WAYS],
    /// Bit `i`: slot `i` holds its connection's reply key.
    reply: u8,
    /// Insertions that passed this bucket full and went on (saturating).
    overflow: u16,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

impl Bucket {
    fn empty() -> Bucket {
        Bucket {
            conns: Default::default(),
            tags: [0; WAYS],
            reply: 0,
            overflow: 0,
        }
    }

    #[inline]
    fn free_way(&self) -> Option<usize> {
        self.conns.iter().position(Option::is_none)
    }
}

/// Where a slot is: bucket and way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    bucket: usize,
    way: usize,
}

#[inline]
fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// See the module documentation.
pub struct Buckets {
    arr: Box<[Bucket]>,
    len: usize,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets::new()
    }
}

impl Buckets {
    /// An empty table (allocates nothing until the first insertion).
    pub fn new() -> Buckets {
        Buckets {
            arr: Box::new([]),
            len: 0,
        }
    }

    /// Slots in use.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no slot is used.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the bucket array takes.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.arr)
    }

    /// The bucket array's address and its index mask (null and 0 while empty), for
    /// prefetching: the bucket of `hash` is at `base + (hash & mask)`.
    pub fn base_and_mask(&self) -> (*const Bucket, usize) {
        if self.arr.is_empty() {
            (std::ptr::null(), 0)
        } else {
            (self.arr.as_ptr(), self.arr.len() - 1)
        }
    }

    /// The position of the slot under `hash` for which `eq(conn, reply)` holds.
    #[inline]
    pub fn find_pos(&self, hash: u64, mut eq: impl FnMut(&Arc<Conn>, bool) -> bool) -> Option<Pos> {
        if self.arr.is_empty() {
            return None;
        }
        let mask = self.arr.len() - 1;
        let tag = tag_of(hash);
        let mut b = hash as usize & mask;
        for _ in 0..self.arr.len() {
            let bk = &self.arr[b];
            for w in 0..WAYS {
                if bk.tags[w] == tag {
                    if let Some(c) = &bk.conns[w] {
                        if eq(c, bk.reply & (1 << w) != 0) {
                            return Some(Pos { bucket: b, way: w });
                        }
                    }
                }
            }
            if bk.overflow == 0 {
                return None;
            }
            b = (b + 1) & mask;
        }
        None
    }

    /// Calls `f` on each connection in `hash`'s home bucket whose tag is `hash`'s (candidates
    /// for a prefetch: no key is compared).
    #[inline]
    pub fn for_each_tagged(&self, hash: u64, mut f: impl FnMut(&Arc<Conn>)) {
        if self.arr.is_empty() {
            return;
        }
        let bk = &self.arr[hash as usize & (self.arr.len() - 1)];
        let tag = tag_of(hash);
        for w in 0..WAYS {
            if bk.tags[w] == tag {
                if let Some(c) = &bk.conns[w] {
                    f(c);
                }
            }
        }
    }

    /// The connection at `p` and its direction, borrowed.
    #[inline]
    pub fn get(&self, p: Pos) -> Option<(&Arc<Conn>, bool)> {
        let bk = &self.arr[p.bucket];
        bk.conns[p.way]
            .as_ref()
            .map(|c| (c, bk.reply & (1 << p.way) != 0))
    }

    /// Replaces the slot at `p` (same hash) with `s`.
    pub fn replace(&mut self, p: Pos, s: Slot) {
        let bk = &mut self.arr[p.bucket];
        bk.conns[p.way] = Some(s.conn);
        set_reply(bk, p.way, s.reply);
    }

    /// Inserts `s` under `hash` (the caller knows its key is absent); `rehash` gives the
    /// hash of any slot, for growth.
    pub fn insert(&mut self, hash: u64, s: Slot, rehash: impl Fn(&Slot) -> u64) {
        if (self.len + 1) * 8 > self.arr.len() * WAYS * 7 {
            self.grow(&rehash);
        }
        self.place(hash, s);
        self.len += 1;
    }

    fn place(&mut self, hash: u64, s: Slot) {
        let mask = self.arr.len() - 1;
        let mut b = hash as usize & mask;
        loop {
            let bk = &mut self.arr[b];
            if let Some(w) = bk.free_way() {
                bk.conns[w] = Some(s.conn);
                bk.tags[w] = tag_of(hash);
                set_reply(bk, w, s.reply);
                return;
            }
            bk.overflow = bk.overflow.saturating_add(1);
            b = (b + 1) & mask;
        }
    }

    fn grow(&mut self, rehash: &impl Fn(&Slot) -> u64) {
        let n = (self.arr.len() * 2).max(4);
        let old = std::mem::replace(&mut self.arr, (0..n).map(|_| Bucket::empty()).collect());
        for mut bk in Vec::from(old) {
            for w in 0..WAYS {
                if let Some(conn) = bk.conns[w].take() {
                    let s = Slot {
                        conn,
                        reply: bk.reply & (1 << w) != 0,
                    };
                    let h = rehash(&s);
                    self.place(h, s);
                }
            }
        }
    }

    /// Removes the slot at `p`, which `hash` found.
    pub fn remove(&mut self, hash: u64, p: Pos) -> Option<Slot> {
        let mask = self.arr.len() - 1;
        let bk = &mut self.arr[p.bucket];
        let conn = bk.conns[p.way].take()?;
        let reply = bk.reply & (1 << p.way) != 0;
        set_reply(bk, p.way, false);
        self.len -= 1;
        let mut b = hash as usize & mask;
        while b != p.bucket {
            let o = &mut self.arr[b].overflow;
            if *o != u16::MAX {
                *o -= 1;
            }
            b = (b + 1) & mask;
        }
        Some(Slot { conn, reply })
    }

    /// Every slot.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<Conn>, bool)> {
        self.arr.iter().flat_map(|bk| {
            bk.conns
                .iter()
                .enumerate()
                .filter_map(move |(w, c)| c.as_ref().map(|c| (c, bk.reply & (1 << w) != 0)))
        })
    }
}

#[inline]
fn set_reply(bk: &mut Bucket, way: usize, reply: bool) {
    if reply {
        bk.reply |= 1 << way;
    } else {
        bk.reply &= !(1 << way);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ConnKey;
    use crate::table::{ConnState, ProtoState};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn conn(id: u16) -> Arc<Conn> {
        let key = ConnKey {
            proto: 17,
            sport: id,
            dport: 1,
            ..ConnKey::default()
        };
        Arc::new(Conn::new(
            key,
            key.reverse(),
            0,
            ConnState {
                proto: ProtoState::Other(0),
                mark: 0,
                label: [0; 2],
            },
            0,
        ))
    }

    /// A hash with many collisions, of home buckets and of tags alike, so that probes run
    /// long and cross the end of the array.
    fn hash(id: u16) -> u64 {
        let id = u64::from(id);
        (id % 5).wrapping_mul(0x9e37) | ((id % 3) << 32)
    }

    fn rehash(s: &Slot) -> u64 {
        hash(s.conn.key.sport)
    }

    fn find(b: &Buckets, id: u16) -> Option<(&Arc<Conn>, bool)> {
        let p = b.find_pos(hash(id), |c, _| c.key.sport == id)?;
        b.get(p)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16, bool),
        Remove(u16),
        Replace(u16, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u16..80, any::<bool>()).prop_map(|(i, r)| Op::Insert(i, r)),
            2 => (0u16..80).prop_map(Op::Remove),
            1 => (0u16..80, any::<bool>()).prop_map(|(i, r)| Op::Replace(i, r)),
        ]
    }

    proptest! {
        /// Inserting, removing and replacing in any order leaves the table answering every
        /// lookup as a map of the same operations does (the same connection, the same
        /// direction, absent keys absent), through growth and long probes.
        #[test]
        fn buckets_agree_with_a_map(ops in proptest::collection::vec(op(), 1..300)) {
            let mut b = Buckets::new();
            let mut model: HashMap<u16, (Arc<Conn>, bool)> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(id, reply) => {
                        if let std::collections::hash_map::Entry::Vacant(e) = model.entry(id) {
                            let c = conn(id);
                            b.insert(hash(id), Slot { conn: c.clone(), reply }, rehash);
                            e.insert((c, reply));
                        }
                    }
                    Op::Remove(id) => {
                        let p = b.find_pos(hash(id), |c, _| c.key.sport == id);
                        let got = p.and_then(|p| b.remove(hash(id), p));
                        let want = model.remove(&id);
                        prop_assert_eq!(got.is_some(), want.is_some());
                        if let (Some(g), Some(w)) = (got, want) {
                            prop_assert!(Arc::ptr_eq(&g.conn, &w.0) && g.reply == w.1);
                        }
                    }
                    Op::Replace(id, reply) => {
                        if let Some(p) = b.find_pos(hash(id), |c, _| c.key.sport == id) {
                            let c = conn(id);
                            b.replace(p, Slot { conn: c.clone(), reply });
                            model.insert(id, (c, reply));
                        }
                    }
                }
                prop_assert_eq!(b.len(), model.len());
                prop_assert_eq!(b.iter().count(), model.len());
                for id in 0..80 {
                    let got = find(&b, id);
                    match model.get(&id) {
                        None => prop_assert!(got.is_none()),
                        Some((c, r)) => {
                            let (gc, gr) = got.expect("present in the model");
                            prop_assert!(Arc::ptr_eq(gc, c) && gr == *r);
                        }
                    }
                }
            }
            // Every slot removed: the overflow counts are back to zero, as if nothing had
            // been inserted.
            for id in 0..80 {
                if let Some(p) = b.find_pos(hash(id), |c, _| c.key.sport == id) {
                    b.remove(hash(id), p);
                }
            }
            prop_assert!(b.is_empty());
            prop_assert!(b.arr.iter().all(|bk| bk.overflow == 0 && bk.reply == 0));
        }
    }

    /// A bucket is one cache line, and the array grows before it is more than 7/8 full.
    #[test]
    fn layout_and_load() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
        let mut b = Buckets::new();
        assert_eq!(b.bytes(), 0);
        assert!(b.base_and_mask().0.is_null());
        for id in 0..1000 {
            b.insert(
                hash(id),
                Slot {
                    conn: conn(id),
                    reply: false,
                },
                rehash,
            );
            assert!(b.len() * 8 <= b.arr.len() * WAYS * 7);
        }
        let (base, mask) = b.base_and_mask();
        assert_eq!((base, mask + 1), (b.arr.as_ptr(), b.arr.len()));
        assert_eq!(b.bytes(), b.arr.len() * 64);
    }
}
