//! # The connection table
//!
//! ## What
//! A hash table from [`ConnKey`] to connection that poll threads read concurrently. Each
//! connection is reachable under two keys, its original-direction key and its reply key
//! (which NAT may have changed), so a packet of either direction finds it with one lookup;
//! the slot records which direction the key is.
//!
//! ## How
//! The table is split into a power-of-two number of shards, each a [`Buckets`] (bucketised
//! open addressing, 64-byte buckets of five slots) behind its own `parking_lot::RwLock` on
//! its own cache line. A key's 64-bit hash (foldhash, seeded at random per table so that
//! remote hosts cannot aim collisions) picks the shard from bits 32.. and the home bucket
//! from the low bits. Lookups take one shard's read lock, so threads only contend when
//! they write the same shard. Insertion and removal take the write locks of the (one or
//! two) shards of a connection's two keys, always in ascending shard order, so they never
//! deadlock and both keys appear and disappear together: no reader can see half a
//! connection.
//!
//! Each shard also publishes its bucket array's address and mask outside its lock, so that
//! [`Table::prefetch`] computes a hash's home bucket without taking it: the tracker hashes
//! a whole batch's keys and prefetches their buckets before looking any of them up, and the
//! misses of a batch overlap instead of coming one after the other.
//!
//! A slot is 12.8 bytes (a pointer, a 32-bit tag and a direction bit; five in a line); the
//! keys live in the connection, and a probe compares against them only after the tag
//! (bits 32.. of the hash) matched.
//!
//! ## Threading
//! `Table` is `Send + Sync`. Closures passed to [`Table::lookup`] run under a shard read
//! lock and must not call back into the table.

use crate::buckets::{Bucket, Buckets};
use crate::key::ConnKey;
use crate::tcp::TcpConn;
use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use std::hash::BuildHasher;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::Release,
};
use std::sync::Arc;

/// Per-protocol mutable state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtoState {
    /// TCP peers.
    Tcp(TcpConn),
    /// UDP and generic protocols: 0 first packet, 1 several one way, 2 both ways.
    Other(u8),
    /// ICMP query: replied or not.
    Icmp(bool),
}

/// The mutable part of a connection, behind its mutex (its expiry is apart, in
/// [`Conn::expires`]).
#[derive(Clone, Copy, Debug)]
pub struct ConnState {
    /// Protocol state.
    pub proto: ProtoState,
    /// `ct_mark`.
    pub mark: u32,
    /// `ct_label` (two halves, so that the record needs only 8-byte alignment).
    pub label: [u64; 2],
}

impl ConnState {
    /// `ct_label`.
    #[inline]
    pub fn label(&self) -> u128 {
        (u128::from(self.label[0]) << 64) | u128::from(self.label[1])
    }

    /// Sets `ct_label`.
    #[inline]
    pub fn set_label(&mut self, v: u128) {
        self.label = [(v >> 64) as u64, v as u64];
    }
}

/// NAT applied to a connection's original direction.
pub const NAT_SRC: u8 = 1;
/// Destination NAT.
pub const NAT_DST: u8 = 2;

/// One connection.
#[derive(Debug)]
pub struct Conn {
    /// Original-direction key.
    pub key: ConnKey,
    /// Reply-direction key (the reverse of the translated original tuple).
    pub rev: ConnKey,
    /// `NAT_SRC` / `NAT_DST`.
    pub nat: u8,
    /// The helper and the related flag ([`crate::alg::ALG_FTP`], ...; 0 for most).
    pub alg: u8,
    /// Set when [`Table::remove`] took the connection out (for [`crate::cache`]).
    pub departed: AtomicBool,
    /// Expiry time, milliseconds on the caller's clock (0: made to expire). An atomic apart
    /// from the mutex, so that a settled connection's packets refresh it without the lock:
    /// see [`Conn::refresh`] for why that is sound.
    expires: AtomicU64,
    /// What a packet of a settled connection needs without the mutex: [`SETTLED`] and
    /// `ct_mark` in bits 32..; 0 while the connection is not settled. Written only under
    /// the mutex ([`Conn::publish`]), from the state it guards.
    fast: AtomicU64,
    /// Mutable state.
    pub st: Mutex<ConnState>,
}

/// [`Conn`]'s `fast` word: the connection is settled. Its protocol state no longer changes
/// with its packets (UDP or another protocol seen both ways, an answered ICMP query), its
/// label is zero, and its mark is in bits 32.. of the word. TCP connections never are:
/// each segment moves their window.
pub const SETTLED: u64 = 1;

impl Conn {
    /// A connection in state `st` expiring at `expires`.
    #[inline]
    pub fn new(key: ConnKey, rev: ConnKey, nat: u8, st: ConnState, expires: u64) -> Conn {
        Conn::new_alg(key, rev, nat, 0, st, expires)
    }

    /// A connection with helper and related bits `alg` ([`Conn::alg`]) in state `st`
    /// expiring at `expires`.
    #[inline]
    pub fn new_alg(
        key: ConnKey,
        rev: ConnKey,
        nat: u8,
        alg: u8,
        st: ConnState,
        expires: u64,
    ) -> Conn {
        let c = Conn {
            key,
            rev,
            nat,
            alg,
            departed: AtomicBool::new(false),
            expires: AtomicU64::new(expires),
            fast: AtomicU64::new(0),
            st: Mutex::new(st),
        };
        c.publish(&st);
        c
    }

    /// Expiry time (0: made to expire).
    #[inline]
    pub fn expires(&self) -> u64 {
        self.expires.load(Relaxed)
    }

    /// Sets the expiry time. Under the connection's mutex, as every change of the state
    /// that decides it (see [`Conn::refresh`]).
    #[inline]
    pub fn set_expires(&self, at: u64) {
        self.expires.store(at, Relaxed);
    }

    /// Moves the expiry of a live connection, last seen expiring at `seen` (> the packet's
    /// clock), to `at`, without the mutex; false if it changed meanwhile (another packet
    /// refreshed it, or it was made to expire).
    ///
    /// Soundness: every other writer holds the mutex, and the only value that ends a
    /// connection is 0 (or a time already past, which lookups and [`crate::Conntrack::sweep`]
    /// treat alike). A compare-and-swap from a value the caller saw live never writes over
    /// a 0 stored since, so a connection made to expire is never revived; one refreshed by
    /// another packet keeps that packet's time, within a millisecond of this one's. Nothing
    /// else is published through this word, so relaxed ordering suffices.
    #[inline]
    pub fn refresh(&self, seen: u64, at: u64) -> bool {
        self.expires
            .compare_exchange(seen, at, Relaxed, Relaxed)
            .is_ok()
    }

    /// The `fast` word ([`SETTLED`] and the mark, or 0).
    #[inline]
    pub fn fast(&self) -> u64 {
        self.fast.load(Relaxed)
    }

    /// Recomputes the `fast` word from `st`, the connection's state: called with the mutex
    /// held after the state changed (or on a state not yet shared), so that the word always
    /// matches what the mutex guards. A reader without the lock sees either the word
    /// before a change or after it, as it would have seen the state had it taken the lock
    /// just before or just after; mark and settledness come in one load, never torn.
    #[inline]
    pub fn publish(&self, st: &ConnState) {
        // A related connection's packets are `+rel`, which the settled path does not say.
        let settled = matches!(st.proto, ProtoState::Other(2) | ProtoState::Icmp(true))
            && st.label == [0; 2]
            && self.alg & crate::alg::ALG_RELATED == 0;
        let w = if settled {
            SETTLED | u64::from(st.mark) << 32
        } else {
            0
        };
        if self.fast.load(Relaxed) != w {
            self.fast.store(w, Relaxed);
        }
    }

    /// The key stored for one direction.
    #[inline]
    pub fn key_of(&self, reply: bool) -> &ConnKey {
        if reply {
            &self.rev
        } else {
            &self.key
        }
    }
}

/// A table slot (stored in a [`Buckets`] as a pointer, a tag and a direction bit).
pub struct Slot {
    /// The connection.
    pub conn: Arc<Conn>,
    /// True if this slot is the reply key.
    pub reply: bool,
}

impl Slot {
    /// The key this slot is found under.
    #[inline]
    pub fn key(&self) -> &ConnKey {
        self.conn.key_of(self.reply)
    }
}

/// One shard: its slots behind their lock, and the address and mask of its bucket array
/// outside it, for [`Table::prefetch`] (written under the write lock, read without it: a
/// stale pair only prefetches the wrong line).
#[repr(align(64))]
struct Shard {
    slots: RwLock<Buckets>,
    base: AtomicPtr<Bucket>,
    mask: AtomicUsize,
}

impl Shard {
    fn publish(&self, b: &Buckets) {
        let (base, mask) = b.base_and_mask();
        self.base.store(base.cast_mut(), Relaxed);
        self.mask.store(mask, Relaxed);
    }
}

/// Why an insertion failed: a key is already present, held by `conn`.
pub struct Taken {
    /// The connection holding the key.
    pub conn: Arc<Conn>,
    /// True if it was the new connection's reply key that was taken.
    pub rev: bool,
}

type WriteGuard<'a> = RwLockWriteGuard<'a, Buckets>;

/// The sharded table.
pub struct Table {
    shards: Box<[Shard]>,
    mask: usize,
    hasher: foldhash::fast::RandomState,
}

/// Hints the processor to load the line at `p` (never faults, whatever `p` is).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it does not access memory architecturally and cannot
    // fault, for any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Table {
    /// A table with `shards` shards (rounded up to a power of two, at least 1).
    pub fn new(shards: usize) -> Table {
        let n = shards.max(1).next_power_of_two();
        Table {
            shards: (0..n)
                .map(|_| Shard {
                    slots: RwLock::new(Buckets::new()),
                    base: AtomicPtr::new(std::ptr::null_mut()),
                    mask: AtomicUsize::new(0),
                })
                .collect(),
            mask: n - 1,
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Number of shards.
    pub fn n_shards(&self) -> usize {
        self.shards.len()
    }

    /// The key's hash. Written out rather than `hash_one`, which the compiler keeps out of
    /// line: every tracked packet hashes its key.
    #[inline(always)]
    #[allow(clippy::manual_hash_one)]
    pub fn hash(&self, key: &ConnKey) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = self.hasher.build_hasher();
        key.hash(&mut h);
        h.finish()
    }

    /// Hashes any value with the table's seed (NAT uses it to pick ranges).
    pub fn hash_any<T: std::hash::Hash>(&self, v: &T) -> u64 {
        self.hasher.hash_one(v)
    }

    #[inline]
    fn shard_of(&self, hash: u64) -> usize {
        (hash >> 32) as usize & self.mask
    }

    /// Starts loading the shard lock and the home bucket of `hash` into the cache, without
    /// taking the lock: a batch calls it for every packet before looking any up, so that
    /// their cache misses overlap.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let sh = &self.shards[self.shard_of(hash)];
        prefetch_line(sh);
        let base = sh.base.load(Relaxed);
        if !base.is_null() {
            let i = hash as usize & sh.mask.load(Relaxed);
            prefetch_line(base.wrapping_add(i));
        }
    }

    /// The second step of a batch's prefetch, after [`Table::prefetch`] for every packet:
    /// starts loading the records of the connections in `hash`'s home bucket whose tag
    /// matches (under the shard's read lock; the bucket itself should be in the cache by
    /// now), so that the lookups that follow find the key and state they compare and lock.
    #[inline]
    pub fn prefetch_conn(&self, hash: u64) {
        let shard = self.shards[self.shard_of(hash)].slots.read();
        shard.for_each_tagged(hash, |c| {
            let p = Arc::as_ptr(c).cast::<u8>();
            prefetch_line(p);
            prefetch_line(p.wrapping_add(64));
            prefetch_line(p.wrapping_add(128));
        });
    }

    /// Runs `f` on the connection under `key` (with its direction) under the shard's read
    /// lock; `None` if absent.
    #[inline]
    pub fn lookup<R>(
        &self,
        key: &ConnKey,
        hash: u64,
        f: impl FnOnce(&Arc<Conn>, bool) -> R,
    ) -> Option<R> {
        let shard = self.shards[self.shard_of(hash)].slots.read();
        let p = shard.find_pos(hash, |c, r| c.key_of(r) == key)?;
        shard.get(p).map(|(c, r)| f(c, r))
    }

    /// True if `key` is present.
    pub fn contains(&self, key: &ConnKey) -> bool {
        self.lookup(key, self.hash(key), |_, _| ()).is_some()
    }

    fn write2(&self, a: usize, b: usize) -> (WriteGuard<'_>, Option<WriteGuard<'_>>) {
        if a == b {
            (self.shards[a].slots.write(), None)
        } else if a < b {
            let ga = self.shards[a].slots.write();
            let gb = self.shards[b].slots.write();
            (ga, Some(gb))
        } else {
            let gb = self.shards[b].slots.write();
            let ga = self.shards[a].slots.write();
            (ga, Some(gb))
        }
    }

    /// Inserts both keys of `conn` (`hk`: the hash of its original key), or neither if one
    /// is present. When both keys are those of one connection that `dead` says is expired,
    /// `conn` takes its two slots and that connection is returned (marked departed): it has
    /// left the table, as by [`Table::remove`]. `dead` runs under the shards' write locks.
    pub fn insert(
        &self,
        conn: Arc<Conn>,
        hk: u64,
        dead: impl Fn(&Conn) -> bool,
    ) -> Result<Option<Arc<Conn>>, Taken> {
        let hr = self.hash(&conn.rev);
        let (sk, sr) = (self.shard_of(hk), self.shard_of(hr));
        let (mut gk, mut gr) = self.write2(sk, sr);
        let pk = gk.find_pos(hk, |c, r| *c.key_of(r) == conn.key);
        let rev_tab = gr.as_deref().unwrap_or(&*gk);
        let pr = rev_tab.find_pos(hr, |c, r| *c.key_of(r) == conn.rev);
        let held = pk.and_then(|p| gk.get(p)).map(|(c, r)| (c.clone(), r));
        let rev_held = pr.and_then(|p| rev_tab.get(p)).map(|(c, r)| (c.clone(), r));
        match (held, rev_held) {
            (None, None) => {}
            (Some((old, r1)), Some((old2, r2)))
                if Arc::ptr_eq(&old, &old2) && r1 != r2 && dead(&old) =>
            {
                // The same expired connection under both keys: take its slots (same keys,
                // same hashes, same places).
                if let (Some(pk), Some(pr)) = (pk, pr) {
                    gk.replace(
                        pk,
                        Slot {
                            conn: conn.clone(),
                            reply: false,
                        },
                    );
                    let rev_tab = match gr.as_deref_mut() {
                        Some(t) => t,
                        None => &mut *gk,
                    };
                    rev_tab.replace(pr, Slot { conn, reply: true });
                }
                old.departed.store(true, Release);
                return Ok(Some(old));
            }
            (Some((c, _)), _) => {
                return Err(Taken {
                    conn: c,
                    rev: false,
                })
            }
            (None, Some((c, _))) => return Err(Taken { conn: c, rev: true }),
        }
        let h = |s: &Slot| self.hash(s.key());
        gk.insert(
            hk,
            Slot {
                conn: conn.clone(),
                reply: false,
            },
            h,
        );
        self.shards[sk].publish(&gk);
        match gr.as_deref_mut() {
            Some(t) => {
                t.insert(hr, Slot { conn, reply: true }, h);
                self.shards[sr].publish(t);
            }
            None => {
                gk.insert(hr, Slot { conn, reply: true }, h);
                self.shards[sk].publish(&gk);
            }
        }
        Ok(None)
    }

    /// Removes both keys of `conn`; false if it was not (or no longer) in the table.
    pub fn remove(&self, conn: &Arc<Conn>) -> bool {
        let hk = self.hash(&conn.key);
        let hr = self.hash(&conn.rev);
        let (sk, sr) = (self.shard_of(hk), self.shard_of(hr));
        let (mut gk, mut gr) = self.write2(sk, sr);
        let removed = match gk.find_pos(hk, |c, r| Arc::ptr_eq(c, conn) && !r) {
            Some(p) => gk.remove(hk, p).is_some(),
            None => false,
        };
        let rev_tab = match gr.as_deref_mut() {
            Some(t) => t,
            None => &mut *gk,
        };
        if let Some(p) = rev_tab.find_pos(hr, |c, r| Arc::ptr_eq(c, conn) && r) {
            rev_tab.remove(hr, p);
        }
        if removed {
            conn.departed.store(true, Release);
        }
        removed
    }

    /// Calls `f` on every connection of shard `i` (once, by its original-direction slot)
    /// under the shard's read lock.
    pub fn for_each_in_shard(&self, i: usize, mut f: impl FnMut(&Arc<Conn>)) {
        if let Some(s) = self.shards.get(i) {
            for (conn, reply) in s.slots.read().iter() {
                if !reply {
                    f(conn);
                }
            }
        }
    }

    /// Slots (two per connection) in each shard.
    pub fn shard_lens(&self) -> Vec<usize> {
        self.shards.iter().map(|s| s.slots.read().len()).collect()
    }

    /// Bytes the shards' bucket arrays hold allocated.
    pub fn table_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.slots.read().bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(a: u8, b: u8) -> Arc<Conn> {
        let mut key = ConnKey {
            proto: 17,
            sport: 1,
            dport: 2,
            ..ConnKey::default()
        };
        key.src[0] = a;
        key.dst[0] = b;
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

    #[test]
    fn insert_lookup_remove_both_directions() {
        for shards in [1, 2, 64] {
            let t = Table::new(shards);
            let c = conn(1, 2);
            let alive = |_: &Conn| false;
            t.insert(c.clone(), t.hash(&c.key), alive).ok().unwrap();
            let k = c.key;
            let r = c.rev;
            assert_eq!(t.lookup(&k, t.hash(&k), |_, rep| rep), Some(false));
            assert_eq!(t.lookup(&r, t.hash(&r), |_, rep| rep), Some(true));
            // The same connection again, or another whose reply key is taken: refused.
            let c2 = conn(1, 2);
            assert!(t.insert(c2.clone(), t.hash(&c2.key), alive).is_err());
            let other = Arc::new(Conn::new(c.rev, c.key, 0, *c.st.lock(), c.expires()));
            let ho = t.hash(&other.key);
            let taken = t.insert(other, ho, alive).err().unwrap();
            assert!(!taken.rev && Arc::ptr_eq(&taken.conn, &c));
            assert_eq!(t.shard_lens().iter().sum::<usize>(), 2);
            assert!(t.remove(&c));
            assert!(!t.remove(&c));
            assert!(!t.contains(&k) && !t.contains(&r));
            assert_eq!(t.shard_lens().iter().sum::<usize>(), 0);
        }
    }

    /// A connection whose keys are held by one dead connection takes its slots; a dead
    /// holder of only one of them, or a live one, refuses the insertion.
    #[test]
    fn insert_replaces_a_dead_connection_in_place() {
        for shards in [1, 2, 64] {
            let t = Table::new(shards);
            let old = conn(1, 2);
            t.insert(old.clone(), t.hash(&old.key), |_| false)
                .ok()
                .unwrap();
            let new = conn(1, 2);
            assert!(t.insert(new.clone(), t.hash(&new.key), |_| false).is_err());
            assert!(!old.departed.load(std::sync::atomic::Ordering::Acquire));
            let gone = t
                .insert(new.clone(), t.hash(&new.key), |_| true)
                .ok()
                .unwrap()
                .unwrap();
            assert!(Arc::ptr_eq(&gone, &old));
            assert!(old.departed.load(std::sync::atomic::Ordering::Acquire));
            let (k, r) = (new.key, new.rev);
            let got = |k: &ConnKey| t.lookup(k, t.hash(k), |c, rep| (c.clone(), rep)).unwrap();
            assert!(Arc::ptr_eq(&got(&k).0, &new) && !got(&k).1);
            assert!(Arc::ptr_eq(&got(&r).0, &new) && got(&r).1);
            assert_eq!(t.shard_lens().iter().sum::<usize>(), 2);
            assert!(!t.remove(&old));
            // Reversed (a `force` restart): the dead connection's reply key is the new
            // original key.
            let back = Arc::new(Conn::new(r, k, 0, *new.st.lock(), new.expires()));
            let gone = t
                .insert(back.clone(), t.hash(&r), |_| true)
                .ok()
                .unwrap()
                .unwrap();
            assert!(Arc::ptr_eq(&gone, &new));
            assert!(Arc::ptr_eq(&got(&r).0, &back) && !got(&r).1);
            assert!(Arc::ptr_eq(&got(&k).0, &back) && got(&k).1);
            // A dead holder of the original key alone: refused, as before.
            let mut other_rev = k;
            other_rev.sport = 99;
            let half = Arc::new(Conn::new(r, other_rev, 1, *new.st.lock(), new.expires()));
            let taken = t.insert(half, t.hash(&r), |_| true).err().unwrap();
            assert!(Arc::ptr_eq(&taken.conn, &back) && !taken.rev);
            assert_eq!(t.shard_lens().iter().sum::<usize>(), 2);
        }
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A connection from host `a` to host `b` (its reply key is `b` to `a`, so that
    /// connections of opposite directions hold each other's keys).
    fn conn(a: u8, b: u8) -> Arc<Conn> {
        let mut key = ConnKey {
            proto: 6,
            sport: 1,
            dport: 2,
            ..ConnKey::default()
        };
        key.src[0] = a;
        key.dst[0] = b;
        key.sport = u16::from(a);
        key.dport = u16::from(b);
        Arc::new(Conn::new(
            key,
            key.reverse(),
            0,
            ConnState {
                proto: ProtoState::Other(0),
                mark: 0,
                label: [0; 2],
            },
            1,
        ))
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, u8),
        Remove(u8, u8),
        Expire(u8, u8),
    }

    /// Two different hosts (a connection whose two keys are one is not modelled).
    fn pair() -> impl Strategy<Value = (u8, u8)> {
        (0u8..6, 1u8..6).prop_map(|(a, d)| (a, (a + d) % 6))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => pair().prop_map(|(a, b)| Op::Insert(a, b)),
            1 => pair().prop_map(|(a, b)| Op::Remove(a, b)),
            1 => pair().prop_map(|(a, b)| Op::Expire(a, b)),
        ]
    }

    /// The model: key -> (connection, reply), and which connections are expired.
    #[derive(Default)]
    struct Model {
        slots: HashMap<ConnKey, (Arc<Conn>, bool)>,
    }

    impl Model {
        fn holder(&self, k: &ConnKey) -> Option<&Arc<Conn>> {
            self.slots.get(k).map(|(c, _)| c)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Insertions (including those that take an expired connection's place), removals
        /// and expiry in any order: every key is found, with its connection and direction,
        /// exactly when the model holds it, and each refusal names the holder the model
        /// names.
        #[test]
        fn table_agrees_with_a_model(
            shards in prop_oneof![Just(1usize), Just(4)],
            ops in proptest::collection::vec(op(), 1..120),
        ) {
            let t = Table::new(shards);
            let mut m = Model::default();
            // The expiry check the tracker gives: expired when `expires` is 0.
            let dead = |c: &Conn| c.expires() == 0;
            for op in ops {
                match op {
                    Op::Insert(a, b) => {
                        let c = conn(a, b);
                        let got = t.insert(c.clone(), t.hash(&c.key), dead);
                        let hk = m.holder(&c.key).cloned();
                        let hr = m.holder(&c.rev).cloned();
                        match (hk, hr) {
                            (None, None) => {
                                prop_assert!(matches!(got, Ok(None)));
                                m.slots.insert(c.key, (c.clone(), false));
                                m.slots.insert(c.rev, (c.clone(), true));
                            }
                            (Some(o1), Some(o2))
                                if Arc::ptr_eq(&o1, &o2) && dead(&o1) =>
                            {
                                let Ok(Some(old)) = got else {
                                    return Err(TestCaseError::fail("no replacement"));
                                };
                                prop_assert!(Arc::ptr_eq(&old, &o1));
                                prop_assert!(old.departed.load(std::sync::atomic::Ordering::Acquire));
                                m.slots.insert(c.key, (c.clone(), false));
                                m.slots.insert(c.rev, (c.clone(), true));
                            }
                            (Some(o), _) => {
                                let Err(tk) = got else {
                                    return Err(TestCaseError::fail("inserted over a holder"));
                                };
                                prop_assert!(Arc::ptr_eq(&tk.conn, &o) && !tk.rev);
                            }
                            (None, Some(o)) => {
                                let Err(tk) = got else {
                                    return Err(TestCaseError::fail("inserted over a holder"));
                                };
                                prop_assert!(Arc::ptr_eq(&tk.conn, &o) && tk.rev);
                            }
                        }
                    }
                    Op::Remove(a, b) => {
                        let k = conn(a, b).key;
                        if let Some(c) = m.holder(&k).cloned() {
                            prop_assert!(t.remove(&c));
                            prop_assert!(!t.remove(&c));
                            m.slots.remove(&c.key);
                            m.slots.remove(&c.rev);
                        }
                    }
                    Op::Expire(a, b) => {
                        if let Some(c) = m.holder(&conn(a, b).key) {
                            c.set_expires(0);
                        }
                    }
                }
                prop_assert_eq!(t.shard_lens().iter().sum::<usize>(), m.slots.len());
                for a in 0..6 {
                    for b in 0..6 {
                        let k = conn(a, b).key;
                        let got = t.lookup(&k, t.hash(&k), |c, r| (c.clone(), r));
                        match (got, m.slots.get(&k)) {
                            (None, None) => {}
                            (Some((gc, gr)), Some((c, r))) => {
                                prop_assert!(Arc::ptr_eq(&gc, c) && gr == *r);
                            }
                            (g, w) => {
                                return Err(TestCaseError::fail(format!(
                                    "{k:?}: table {:?}, model {:?}",
                                    g.map(|x| x.1),
                                    w.map(|x| x.1)
                                )))
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// The per-connection record stays small (docs/conntrack.md states these numbers).
    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<ConnKey>(), 48);
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        assert_eq!(std::mem::size_of::<TcpConn>(), 24);
        assert_eq!(std::mem::size_of::<Conn>(), 176);
    }
}
