//! # The connection table
//!
//! ## What
//! A hash table from [`ConnKey`] to connection that poll threads read concurrently. Each
//! connection is reachable under two keys, its original-direction key and its reply key
//! (which NAT may have changed), so a packet of either direction finds it with one lookup;
//! the slot records which direction the key is.
//!
//! ## How
//! The table is split into a power-of-two number of shards, each a `hashbrown::HashTable`
//! behind its own `parking_lot::RwLock` on its own cache line. A key's 64-bit hash (foldhash,
//! seeded at random per table so that remote hosts cannot aim collisions) picks the shard
//! from bits 32.. and the bucket from the low bits. Lookups take one shard's read lock, so
//! threads only contend when they write the same shard. Insertion and removal take the
//! write locks of the (one or two) shards of a connection's two keys, always in ascending
//! shard order, so they never deadlock and both keys appear and disappear together: no
//! reader can see half a connection.
//!
//! A slot is 16 bytes (an `Arc` and a direction flag); the keys live in the connection, and
//! a probe compares against them only after hashbrown's 7-bit tag matched.
//!
//! ## Threading
//! `Table` is `Send + Sync`. Closures passed to [`Table::lookup`] run under a shard read
//! lock and must not call back into the table.

use crate::key::ConnKey;
use crate::tcp::TcpConn;
use hashbrown::HashTable;
use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering::Release};
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

/// The mutable part of a connection, behind its mutex.
#[derive(Clone, Copy, Debug)]
pub struct ConnState {
    /// Expiry time, milliseconds on the caller's clock.
    pub expires: u64,
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
    /// Set when [`Table::remove`] took the connection out (for [`crate::cache`]).
    pub departed: AtomicBool,
    /// Mutable state.
    pub st: Mutex<ConnState>,
}

impl Conn {
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

/// A table slot.
pub struct Slot {
    /// The connection.
    pub conn: Arc<Conn>,
    /// True if this slot is the reply key.
    pub reply: bool,
}

impl Slot {
    #[inline]
    fn key(&self) -> &ConnKey {
        self.conn.key_of(self.reply)
    }
}

#[repr(align(64))]
struct Shard(RwLock<HashTable<Slot>>);

/// Why an insertion failed: a key is already present, held by `conn`.
pub struct Taken {
    /// The connection holding the key.
    pub conn: Arc<Conn>,
    /// True if it was the new connection's reply key that was taken.
    pub rev: bool,
}

/// The sharded table.
pub struct Table {
    shards: Box<[Shard]>,
    mask: usize,
    hasher: foldhash::fast::RandomState,
}

impl Table {
    /// A table with `shards` shards (rounded up to a power of two, at least 1).
    pub fn new(shards: usize) -> Table {
        let n = shards.max(1).next_power_of_two();
        Table {
            shards: (0..n)
                .map(|_| Shard(RwLock::new(HashTable::new())))
                .collect(),
            mask: n - 1,
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Number of shards.
    pub fn n_shards(&self) -> usize {
        self.shards.len()
    }

    /// The key's hash.
    #[inline]
    pub fn hash(&self, key: &ConnKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Hashes any value with the table's seed (NAT uses it to pick ranges).
    pub fn hash_any<T: std::hash::Hash>(&self, v: &T) -> u64 {
        self.hasher.hash_one(v)
    }

    #[inline]
    fn shard_of(&self, hash: u64) -> usize {
        (hash >> 32) as usize & self.mask
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
        let shard = self.shards[self.shard_of(hash)].0.read();
        shard
            .find(hash, |s| s.key() == key)
            .map(|s| f(&s.conn, s.reply))
    }

    /// True if `key` is present.
    pub fn contains(&self, key: &ConnKey) -> bool {
        self.lookup(key, self.hash(key), |_, _| ()).is_some()
    }

    fn write2(
        &self,
        a: usize,
        b: usize,
    ) -> (
        RwLockWriteGuard<'_, HashTable<Slot>>,
        Option<RwLockWriteGuard<'_, HashTable<Slot>>>,
    ) {
        if a == b {
            (self.shards[a].0.write(), None)
        } else if a < b {
            let ga = self.shards[a].0.write();
            let gb = self.shards[b].0.write();
            (ga, Some(gb))
        } else {
            let gb = self.shards[b].0.write();
            let ga = self.shards[a].0.write();
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
        let held = gk
            .find(hk, |s| *s.key() == conn.key)
            .map(|s| (s.conn.clone(), s.reply));
        let rev_tab = gr.as_deref().unwrap_or(&*gk);
        let rev_held = rev_tab
            .find(hr, |s| *s.key() == conn.rev)
            .map(|s| (s.conn.clone(), s.reply));
        match (held, rev_held) {
            (None, None) => {}
            (Some((old, r1)), Some((old2, r2)))
                if Arc::ptr_eq(&old, &old2) && r1 != r2 && dead(&old) =>
            {
                // The same expired connection under both keys: take its slots.
                if let Some(s) = gk.find_mut(hk, |s| Arc::ptr_eq(&s.conn, &old) && s.reply == r1) {
                    *s = Slot {
                        conn: conn.clone(),
                        reply: false,
                    };
                }
                let rev_tab = match gr.as_deref_mut() {
                    Some(t) => t,
                    None => &mut *gk,
                };
                if let Some(s) = rev_tab.find_mut(hr, |s| Arc::ptr_eq(&s.conn, &old)) {
                    *s = Slot { conn, reply: true };
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
        gk.insert_unique(
            hk,
            Slot {
                conn: conn.clone(),
                reply: false,
            },
            h,
        );
        let rev_tab = match gr.as_deref_mut() {
            Some(t) => t,
            None => &mut *gk,
        };
        rev_tab.insert_unique(hr, Slot { conn, reply: true }, h);
        Ok(None)
    }

    /// Removes both keys of `conn`; false if it was not (or no longer) in the table.
    pub fn remove(&self, conn: &Arc<Conn>) -> bool {
        let hk = self.hash(&conn.key);
        let hr = self.hash(&conn.rev);
        let (sk, sr) = (self.shard_of(hk), self.shard_of(hr));
        let (mut gk, mut gr) = self.write2(sk, sr);
        let removed = match gk.find_entry(hk, |s| Arc::ptr_eq(&s.conn, conn) && !s.reply) {
            Ok(e) => {
                e.remove();
                true
            }
            Err(_) => false,
        };
        let rev_tab = match gr.as_deref_mut() {
            Some(t) => t,
            None => &mut *gk,
        };
        if let Ok(e) = rev_tab.find_entry(hr, |s| Arc::ptr_eq(&s.conn, conn) && s.reply) {
            e.remove();
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
            for slot in s.0.read().iter() {
                if !slot.reply {
                    f(&slot.conn);
                }
            }
        }
    }

    /// Slots (two per connection) in each shard.
    pub fn shard_lens(&self) -> Vec<usize> {
        self.shards.iter().map(|s| s.0.read().len()).collect()
    }

    /// Bytes the shards' tables hold allocated (buckets plus control bytes).
    pub fn table_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let t = s.0.read();
                let cap = t.capacity();
                if cap == 0 {
                    0
                } else {
                    // hashbrown keeps buckets = next_pow2(cap * 8 / 7), one control byte each
                    // plus a group's worth.
                    let buckets = (cap * 8 / 7).next_power_of_two();
                    buckets * (std::mem::size_of::<Slot>() + 1) + 16
                }
            })
            .sum()
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
        Arc::new(Conn {
            key,
            rev: key.reverse(),
            nat: 0,
            departed: AtomicBool::new(false),
            st: Mutex::new(ConnState {
                expires: 0,
                proto: ProtoState::Other(0),
                mark: 0,
                label: [0; 2],
            }),
        })
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
            let other = Arc::new(Conn {
                key: c.rev,
                rev: c.key,
                nat: 0,
                departed: AtomicBool::new(false),
                st: Mutex::new(*c.st.lock()),
            });
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
            let back = Arc::new(Conn {
                key: r,
                rev: k,
                nat: 0,
                departed: AtomicBool::new(false),
                st: Mutex::new(*new.st.lock()),
            });
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
            let half = Arc::new(Conn {
                key: r,
                rev: other_rev,
                nat: 1,
                departed: AtomicBool::new(false),
                st: Mutex::new(*new.st.lock()),
            });
            let taken = t.insert(half, t.hash(&r), |_| true).err().unwrap();
            assert!(Arc::ptr_eq(&taken.conn, &back) && !taken.rev);
            assert_eq!(t.shard_lens().iter().sum::<usize>(), 2);
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// The per-connection record stays small (docs/conntrack.md states these numbers).
    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<ConnKey>(), 42);
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        assert_eq!(std::mem::size_of::<TcpConn>(), 24);
        assert_eq!(std::mem::size_of::<Conn>(), 152);
    }
}
